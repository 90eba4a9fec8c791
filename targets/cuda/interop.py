"""DLPack for CUDA device arrays: export (``__dlpack__``) and import.

The structures are DLPack's unversioned ABI (``DLManagedTensor``, capsule
name ``"dltensor"``), which PyTorch, CuPy, JAX and NumPy all read and write.
Written with ctypes so nothing is compiled; the device type is a parameter
so the same code is exercised on host memory by the tests.
"""

from __future__ import annotations

import ctypes
import threading

import numpy as np

__all__ = ["KDL_CPU", "KDL_CUDA", "KDL_CUDA_HOST", "KDL_CUDA_MANAGED", "dlpack", "dlpack_device",
           "to_capsule", "capsule_view", "from_dlpack"]

KDL_CPU, KDL_CUDA, KDL_CUDA_HOST, KDL_CUDA_MANAGED = 1, 2, 3, 13


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _DELETER)]

_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_api = ctypes.pythonapi
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]

# DLPack type codes: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_KINDS = {v: k for k, v in _CODES.items()}

# exported tensors alive until their consumer (or the capsule) deletes them
_live: dict[int, tuple] = {}
_live_lock = threading.Lock()


@_DELETER
def _delete(managed):
    with _live_lock:
        _live.pop(ctypes.addressof(managed.contents), None)


@_CAPSULE_DESTRUCTOR
def _capsule_destructor(capsule):
    # a capsule nobody consumed still owns its tensor (a consumer renames it)
    if _api.PyCapsule_IsValid(capsule, b"dltensor"):
        ptr = ctypes.pythonapi.PyCapsule_GetPointer(ctypes.cast(capsule, ctypes.py_object),
                                                    b"dltensor")
        if ptr:
            _delete(ctypes.cast(ptr, ctypes.POINTER(DLManagedTensor)))


def to_capsule(pointer: int, shape, strides, dtype, device_type: int, device_id: int,
               owner) -> object:
    """A ``"dltensor"`` capsule describing memory at *pointer* (strides in bytes);
    *owner* stays alive until the consumer releases the tensor."""
    dtype = np.dtype(dtype)
    if dtype.kind not in _CODES:
        raise TypeError(f"DLPack cannot describe dtype {dtype}")
    ndim = len(shape)
    for s in strides:
        if s % dtype.itemsize:
            raise ValueError("DLPack strides must be whole elements")
    c_shape = (ctypes.c_int64 * max(ndim, 1))(*shape)
    c_strides = (ctypes.c_int64 * max(ndim, 1))(*[s // dtype.itemsize for s in strides])
    m = DLManagedTensor()
    t = m.dl_tensor
    t.data = pointer
    t.device = DLDevice(device_type, device_id)
    t.ndim = ndim
    t.dtype = DLDataType(_CODES[dtype.kind], dtype.itemsize * 8, 1)
    t.shape = ctypes.cast(c_shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(c_strides, ctypes.POINTER(ctypes.c_int64))
    t.byte_offset = 0
    m.manager_ctx = None
    m.deleter = _delete
    with _live_lock:
        _live[ctypes.addressof(m)] = (m, c_shape, c_strides, owner)
    return _api.PyCapsule_New(ctypes.addressof(m), b"dltensor", _capsule_destructor)


class _Imported:
    """Owns a consumed DLManagedTensor: calls its deleter when released."""

    def __init__(self, ptr: int, source):
        self.ptr = ptr
        self.source = source

    def __del__(self):
        m = ctypes.cast(self.ptr, ctypes.POINTER(DLManagedTensor))
        if m.contents.deleter:
            m.contents.deleter(m)


def capsule_view(capsule, accept=(KDL_CUDA, KDL_CUDA_MANAGED)):
    """Consume a ``"dltensor"`` capsule: (pointer, byte offset, shape, strides in bytes,
    dtype, owner, (device type, device id)), or None when its device is not in *accept*."""
    ptr = _api.PyCapsule_GetPointer(capsule, b"dltensor")
    m = ctypes.cast(ptr, ctypes.POINTER(DLManagedTensor)).contents
    t = m.dl_tensor
    if t.device.device_type not in accept:
        return None
    if t.dtype.lanes != 1 or t.dtype.code not in _KINDS:
        raise TypeError(f"DLPack dtype code {t.dtype.code} x{t.dtype.lanes} is not supported")
    kind = _KINDS[t.dtype.code]
    dtype = np.dtype(f"{kind}{t.dtype.bits // 8}") if kind != "b" else np.dtype(np.bool_)
    shape = tuple(t.shape[i] for i in range(t.ndim))
    if t.strides:
        strides = tuple(t.strides[i] * dtype.itemsize for i in range(t.ndim))
    else:
        acc, st = dtype.itemsize, []
        for n in reversed(shape):
            st.append(acc)
            acc *= max(n, 1)
        strides = tuple(reversed(st))
    _api.PyCapsule_SetName(capsule, b"used_dltensor")
    owner = _Imported(ptr, capsule)
    base = (t.data or 0) + t.byte_offset
    low = sum((n - 1) * s for n, s in zip(shape, strides) if n > 0 and s < 0)
    return base + low, -low, shape, strides, dtype, owner, (t.device.device_type,
                                                              t.device.device_id)


def from_dlpack(obj):
    """The runtime's foreign-array tuple for an object exposing ``__dlpack__`` on a
    CUDA device, or None."""
    dev = getattr(obj, "__dlpack_device__", None)
    if dev is None or not hasattr(obj, "__dlpack__"):
        return None
    try:
        dtype_, _id = obj.__dlpack_device__()
    except Exception:
        return None
    if int(dtype_) not in (KDL_CUDA, KDL_CUDA_MANAGED):
        return None
    # stream=1: our work runs on the legacy default stream
    got = capsule_view(obj.__dlpack__(stream=1))
    if got is None:
        return None
    return got[:6]


def dlpack_device(runtime, array):
    """``DeviceArray.__dlpack_device__`` for a CUDA device array."""
    return lambda: (KDL_CUDA, runtime.ordinal)


def dlpack(runtime, array):
    """``DeviceArray.__dlpack__`` for a CUDA device array."""

    def __dlpack__(stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("numba-gpux device arrays export DLPack without copying")
        if dl_device is not None and tuple(dl_device) != (KDL_CUDA, runtime.ordinal):
            raise BufferError(f"cannot export to DLPack device {dl_device}")
        if stream not in (None, -1):
            runtime.synchronize()  # our queued work finishes before the consumer's stream runs
        return to_capsule(int(array.handle) + array.offset, array.shape, array.strides,
                          array.dtype, KDL_CUDA, runtime.ordinal, array)

    return __dlpack__
