"""``numba_gpux.cuda.cudadrv.devicearray``: numba.cuda's device-array module.

``DeviceNDArrayBase`` is :class:`numba_gpux.DeviceArray`; the arrays the facade makes
are ``DeviceNDArray``, its subclass with numba.cuda's transpose: ``a.T`` of a 2-D
array is a new C-contiguous array holding the transpose (written by a kernel), not a
view as NumPy's (and numba_gpux's) is.  Views of a ``DeviceNDArray`` are ones too.
"""

from __future__ import annotations

import numpy as np

from ... import memory as _mem
from .._arrays import DeviceNDArray, DeviceNDArrayBase, as_facade, errmsg_contiguous_buffer
from .._arrays import _check_compatible, _core, _sentry_contiguous
from .._memory_api import ManagedNDArray, MappedNDArray, as_cuda_array, to_device
from .._records import DeviceRecord, from_record_like

__all__ = ["DeviceNDArray", "DeviceNDArrayBase", "is_cuda_ndarray", "verify_cuda_ndarray_interface",
           "require_cuda_ndarray", "auto_device", "as_facade", "from_array_like", "array_core",
           "is_contiguous", "sentry_contiguous", "check_array_compatibility",
           "errmsg_contiguous_buffer", "MappedNDArray", "ManagedNDArray", "DeviceRecord",
           "from_record_like"]



def is_cuda_ndarray(obj) -> bool:
    """True for device arrays (numba_gpux's, or objects marked ``__cuda_ndarray__``)."""
    return isinstance(obj, _mem.DeviceArray) or getattr(obj, "__cuda_ndarray__", False)


def verify_cuda_ndarray_interface(obj) -> None:
    """Raise if *obj* lacks what a device array has (shape, strides, dtype, size)."""
    for attr in ("shape", "strides", "dtype", "size"):
        if not hasattr(obj, attr):
            raise AttributeError(f"device array is missing {attr!r}")


def require_cuda_ndarray(obj) -> None:
    if not is_cuda_ndarray(obj):
        raise ValueError("require an cuda ndarray object")


def from_array_like(ary, stream=0, gpu_data=None) -> DeviceNDArray:
    """An uninitialized device array shaped like *ary* (its order too), or, with
    *gpu_data* (memory from ``context.memalloc`` or another memory pointer), one over
    that memory with *ary*'s shape and strides."""
    if gpu_data is None:
        out = as_facade(_mem.device_array_like(ary))
        if stream:
            out.stream = stream
        return out
    return DeviceNDArray(ary.shape, ary.strides, ary.dtype, stream=stream, gpu_data=gpu_data)


def auto_device(obj, stream=0, copy=True, user_explicit=False):
    """(device array, whether a copy was made): *obj* itself when it already is one;
    for a host record (``np.void``, ``np.record``) a ``DeviceRecord``.

    As in numba.cuda, a host array whose data is not one contiguous buffer (an
    interleaved view such as ``x[::2]``; broadcast dimensions aside) is a
    ValueError here; ``cuda.to_device`` copies such views."""
    if isinstance(obj, _mem.DeviceArray):
        return obj, False
    if isinstance(obj, MappedNDArray):  # memory the device addresses: used in place
        try:
            return obj.device_view(), False
        except TypeError:  # arithmetic on one: ordinary host memory
            pass
    elif getattr(obj, "__cuda_array_interface__", None) is not None:
        return as_cuda_array(obj), False
    if isinstance(obj, np.void) and obj.dtype.names is not None:  # a record
        return to_device(obj, stream=stream, copy=copy), True  # (a DeviceRecord)
    if not isinstance(obj, np.ndarray):
        obj = np.asarray(obj)
    sentry_contiguous(obj)
    return to_device(obj, stream=stream, copy=copy), True


def array_core(ary):
    """The part of *ary* that is not broadcast (strides 0 reduced to length 1)."""
    return _core(ary)


def is_contiguous(ary) -> bool:
    """True when *ary* is C-contiguous, ignoring broadcast (stride 0) and length-1
    dimensions (numba.cuda's test: F-contiguous arrays are not)."""
    expect = ary.dtype.itemsize
    for n, s in zip(reversed(ary.shape), reversed(ary.strides)):
        if n > 1 and s != 0:
            if s != expect:
                return False
            expect *= n
    return True


def sentry_contiguous(ary) -> None:
    """A ValueError unless *ary*'s data, broadcast dimensions aside, is one C- or
    F-contiguous range."""
    _sentry_contiguous(ary)


def check_array_compatibility(ary1, ary2) -> None:
    """Raise unless the two arrays have the same dtype, shape and (core) strides."""
    _check_compatible(array_core(ary1), array_core(ary2))
