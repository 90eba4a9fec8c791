"""``numba_gpux.cuda.cudadrv.driver``: numba.cuda's driver names, over numba_gpux's devices.

``driver`` answers the questions libraries ask of it (is a device there, how
many); ``Device``, ``Context``, ``Stream`` and ``Event`` are the facade's.
The driver-level memory API (``Context.memalloc`` and its kind, ``MemoryPointer``,
the copies and ``device_memset`` below) works on every device whose runtime can
do it (``numba_gpux.interface.Runtime``'s optional memory methods; see
``_memory_pointers``).  A compiled kernel's loaded ``Function`` and its ``FuncAttr`` are ``compiled``'s.
The External Memory Management plug-in interface
(``set_memory_manager`` and its classes) is ``_emm``'s.  IPC and linking are
CUDA-driver features numba_gpux does not have: using them raises
:class:`numba_gpux.UnsupportedError`.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ... import memory as _mem
from ...errors import GpuxUserError
from .. import _memory_pointers as _mp
from .._emm import (BaseCUDAMemoryManager, GetIpcHandleMixin, HostOnlyCUDAMemoryManager,
                    NumbaCUDAMemoryManager, set_memory_manager)
from .. import api as _api
from ..compiled import FuncAttr, Function
from .._memory_pointers import (AutoFreePointer, ManagedMemory, MappedMemory, MemoryPointer,
                                OwnedPointer, PinnedMemory)
from .error import CudaDriverError, CudaSupportError

__all__ = ["driver", "Driver", "Device", "Context", "Stream", "Event", "MemoryInfo",
           "CudaAPIError", "CudaDriverError", "CudaSupportError", "LinkerError",
           "DeadMemoryError", "BaseCUDAMemoryManager", "HostOnlyCUDAMemoryManager",
           "GetIpcHandleMixin", "NumbaCUDAMemoryManager", "set_memory_manager",
           "host_to_device", "device_to_host", "device_to_device", "device_memset",
           "is_device_memory", "event_elapsed_time", "USE_NV_BINDING", "SUPPORTS_IPC",
           "MemoryPointer", "AutoFreePointer", "MappedMemory", "PinnedMemory", "ManagedMemory",
           "OwnedPointer", "require_device_memory", "host_memory_extents", "host_memory_size",
           "host_pointer", "device_pointer", "device_ctypes_pointer", "device_extents",
           "device_memory_size", "Function", "FuncAttr"]

Device, Context, Stream, Event, MemoryInfo = (_api.Device, _api.Context, _api.Stream,
                                              _api.Event, _api.MemoryInfo)
event_elapsed_time = _api.event_elapsed_time
USE_NV_BINDING = True
SUPPORTS_IPC = False


class CudaAPIError(CudaDriverError):
    """A driver call failed with error *code*."""

    def __init__(self, code, msg):
        self.code = code
        self.msg = msg
        super().__init__(code, msg)

    def __str__(self):
        return f"[{self.code}] {self.msg}"


class LinkerError(RuntimeError):
    pass


class DeadMemoryError(RuntimeError):
    pass


class Driver:
    """numba.cuda's driver object: here, a view of numba_gpux's device list."""

    @property
    def is_available(self) -> bool:
        return _api.is_available()

    def get_device_count(self) -> int:
        return len(_api.gpus)

    def get_device(self, devnum: int = 0) -> "Device":
        return _api.gpus[devnum]

    def list_devices(self) -> list:
        return _api.list_devices()

    def get_version(self) -> tuple:
        """The CUDA driver version where cuda-python reports one, else (0, 0)."""
        return _api.driver_version()

    def reset(self) -> None:
        _api.get_current_device().reset()

    def get_active_context(self) -> "_api.ActiveContext":
        """The context active on this thread (``context_handle`` None without one)."""
        return _api.ActiveContext()

    def pop_active_context(self):
        """Make the active context inactive on this thread; it, or None without one."""
        st = _api._context_stack()
        return st.pop() if st else None

    def cuInit(self, flags: int = 0) -> None:
        """numba.cuda's first driver call, made by the facade on its first use of a
        device, as numba.cuda makes it: here it finds numba_gpux's devices (each
        target's runtime starts its own driver: the CUDA driver, an OpenCL ICD).  A
        CudaAPIError from it (from a replacement of it) makes that use, and every later
        one, a CudaSupportError "Error at driver init: <message> (<code>)", which
        ``cuda.cuda_error()`` then reports."""
        from ...devices import devices

        devices()

    @property
    def is_initialized(self) -> bool:
        """Whether the facade has called :meth:`cuInit` (on its first use of a device)."""
        return _api._initialized

    @property
    def initialization_error(self) -> str | None:
        """``"<message> (<code>)"`` of a failed :meth:`cuInit`, else None."""
        return _api._init_error

    def ensure_initialized(self) -> None:
        """Call :meth:`cuInit` now if the facade has not (a CudaSupportError if it failed)."""
        _api._ensure_initialized()

    def cuMemGetInfo(self) -> tuple:
        """(free, total) bytes of the current device (numba.cuda's driver call; on every
        target, as ``context.get_memory_info()``)."""
        return tuple(_api.current_context().get_memory_info())

    def __getattr__(self, name):
        # other driver calls (``cuDevicePrimaryCtxRetain``...) are cuda-python's, with
        # numba.cuda's convention: the values without the status, CudaAPIError on failure
        if not (name.startswith("cu") and name[2:3].isupper()):  # cuInit, cuMemAlloc...
            raise AttributeError(name)
        fn = getattr(_binding(), name, None)
        if fn is None:
            raise AttributeError(f"the CUDA driver has no function {name!r}")

        def call(*args):
            err, *rest = fn(*args)
            if int(err) != 0:
                raise CudaAPIError(err, f"Call to {name} results in {err!r}")
            return None if not rest else rest[0] if len(rest) == 1 else tuple(rest)

        return call

    def __repr__(self):
        return "<numba_gpux driver facade>"


driver = Driver()
_api.register_driver(driver, CudaAPIError)


def _binding():
    """cuda-python's driver module (``cuda.bindings.driver``); CudaSupportError without it."""
    try:
        from cuda.bindings import driver as binding
    except ImportError:
        raise CudaSupportError("the CUDA driver's bindings (cuda-python) are not installed") \
            from None
    return binding


def __getattr__(name):
    if name == "binding":  # numba.cuda's name for cuda-python's driver module
        return _binding()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _have_nvjitlink() -> bool:
    """False: numba_gpux compiles Python kernels to PTX, never to LTO-IR, so code asking
    for ``lto=True`` because nvJitLink is present would fail (nvJitLink, where installed,
    links the code given to ``link=`` and ``declare_device``)."""
    return False


def _raise_driver_not_found():
    """Raise :class:`CudaSupportError` saying no device was found (libraries such as
    STUMPY call this numba.cuda helper on machines without a GPU)."""
    raise CudaSupportError("no device that can run kernels was found by numba_gpux (no CUDA "
                           "driver, and no other target's device); `python -m numba_gpux "
                           "info` lists what was looked for")


is_device_memory = _mp.is_device_memory
host_memory_extents = _mp.host_memory_extents
device_memory_size = _mp.device_memory_size


def require_device_memory(obj) -> None:
    """A TypeError unless *obj* is device memory (:func:`is_device_memory`)."""
    if not is_device_memory(obj):
        raise TypeError("Not a CUDA memory object.")


def host_memory_size(obj) -> int:
    """The bytes of host memory *obj* spans (a NumPy array, a ctypes object...)."""
    start, end = host_memory_extents(obj)
    return end - start


def host_pointer(obj) -> int:
    """The address of the host memory of *obj* (its lowest byte)."""
    return host_memory_extents(obj)[0]


def device_pointer(obj) -> int:
    """The integer device pointer of the device memory *obj*."""
    return device_ctypes_pointer(obj).value or 0


def device_ctypes_pointer(obj):
    """The device pointer of *obj* (a device array or memory pointer) as ctypes sees it."""
    require_device_memory(obj)
    if isinstance(obj, _mem.DeviceArray):
        return ctypes.c_size_t(_mem.device_pointer(obj._alloc) + obj.offset)
    return obj.device_ctypes_pointer


def device_extents(obj) -> tuple[int, int]:
    """[start, end) device addresses of the memory *obj*."""
    start = device_pointer(obj)
    return start, start + device_memory_size(obj)


def _stream(stream):
    return stream or None


def _fits(what, size, room):
    if size > room:
        raise GpuxUserError(f"{what}: {size} bytes do not fit in the {room} bytes of device "
                            f"memory there")


def host_to_device(dst, src, size, stream=0) -> None:
    """Copy the first *size* bytes of the host memory *src* (an array, a ctypes object,
    pinned or mapped memory) into the device memory *dst* (a device array or memory
    pointer); without a stream it returns once *src* may be reused."""
    rt, handle, offset, room = _mp.device_target(dst)
    _fits("host_to_device", size, room)
    if size:
        rt.write(handle, offset, np.array(_mp.host_bytes(src, size)), _stream(stream))


def device_to_host(dst, src, size, stream=0) -> None:
    """Copy the first *size* bytes of the device memory *src* into the host memory *dst*."""
    rt, handle, offset, room = _mp.device_target(src)
    _fits("device_to_host", size, room)
    if size:
        out = _mp.host_bytes(dst, size)
        staging = np.empty(size, np.uint8)
        rt.read(staging, handle, offset, _stream(stream))
        out[...] = staging


def device_to_device(dst, src, size, stream=0) -> None:
    """Copy *size* bytes between two device memories (of one device: on the device)."""
    drt, dh, doff, droom = _mp.device_target(dst)
    srt, sh, soff, sroom = _mp.device_target(src)
    _fits("device_to_device", size, min(droom, sroom))
    if not size:
        return
    if drt is srt:
        drt.copy(dh, doff, sh, soff, size, _stream(stream))
        if not stream:
            drt.synchronize(None)
    else:
        staging = np.empty(size, np.uint8)
        srt.read(staging, sh, soff, _stream(stream))
        drt.write(dh, doff, staging, _stream(stream))


def device_memset(dst, val, size, stream=0) -> None:
    """Set the first *size* bytes of the device memory *dst* (a device array, memory
    pointer, or a host array over mapped or managed memory) to the byte *val*; without
    a stream it returns once done."""
    rt, handle, offset, room = _mp.device_target(dst)
    _fits("device_memset", size, room)
    if size:
        rt.memset(handle, offset, val, size, _stream(stream))
