"""``numba_gpux.cuda.cudadrv.driver``: numba.cuda's driver names, over numba_gpux's devices.

``driver`` answers the questions libraries ask of it (is a device there, how
many); ``Device``, ``Context``, ``Stream`` and ``Event`` are the facade's.
The memory-manager plug-in interface (``set_memory_manager``), IPC and
linking are CUDA-driver features numba_gpux does not have: using them raises
:class:`numba_gpux.UnsupportedError`.
"""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedError
from .. import api as _api
from .error import CudaDriverError, CudaSupportError

__all__ = ["driver", "Driver", "Device", "Context", "Stream", "Event", "MemoryInfo",
           "CudaAPIError", "CudaDriverError", "CudaSupportError", "LinkerError",
           "DeadMemoryError", "BaseCUDAMemoryManager", "HostOnlyCUDAMemoryManager",
           "GetIpcHandleMixin", "NumbaCUDAMemoryManager", "set_memory_manager",
           "host_to_device", "device_to_host", "device_to_device", "device_memset",
           "is_device_memory", "event_elapsed_time", "USE_NV_BINDING", "SUPPORTS_IPC"]

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

    def get_active_context(self):
        return _api.current_context()

    def __repr__(self):
        return "<numba_gpux driver facade>"


driver = Driver()


def _have_nvjitlink() -> bool:
    """False: numba_gpux links no foreign code, so nvJitLink is never used."""
    return False


def _raise_driver_not_found():
    """Raise :class:`CudaSupportError` saying no device was found (libraries such as
    STUMPY call this numba.cuda helper on machines without a GPU)."""
    raise CudaSupportError("no device that can run kernels was found by numba_gpux (no CUDA "
                           "driver, and no other target's device); `python -m numba_gpux "
                           "info` lists what was looked for")


def _unsupported(what):
    raise UnsupportedError(f"{what} is a CUDA driver feature numba_gpux does not have "
                           f"(see docs/migration.md)")


class BaseCUDAMemoryManager:
    """numba.cuda's External Memory Management plug-in base.  numba_gpux's runtimes
    allocate memory themselves; registering a plug-in raises UnsupportedError."""

    def __init__(self, *args, **kwargs):
        self.context = kwargs.get("context")

    interface_version = 1


class HostOnlyCUDAMemoryManager(BaseCUDAMemoryManager):
    pass


class GetIpcHandleMixin:
    def get_ipc_handle(self, memory):
        _unsupported("IPC handles")


class NumbaCUDAMemoryManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    pass


def set_memory_manager(mm_plugin) -> None:
    _unsupported("cuda.set_memory_manager (External Memory Management plug-ins)")


def is_device_memory(obj) -> bool:
    from ... import memory as _mem

    return isinstance(obj, _mem.DeviceArray)


def _flat(dev):
    return dev.reshape(dev.size) if dev.ndim != 1 else dev


def host_to_device(dst, src, size, stream=0) -> None:
    """Copy the first *size* bytes of host *src* into device array *dst*."""
    raw = np.frombuffer(np.ascontiguousarray(src).tobytes()[:size], np.uint8)
    dst.device.runtime.write(dst.handle, dst.offset, raw, stream or None)


def device_to_host(dst, src, size, stream=0) -> None:
    """Copy the first *size* bytes of device array *src* into host *dst*."""
    raw = np.empty(size, np.uint8)
    src.device.runtime.read(raw, src.handle, src.offset, stream or None)
    view = np.ascontiguousarray(dst).reshape(-1).view(np.uint8)
    if not np.shares_memory(view, dst):
        raise ValueError("device_to_host needs a contiguous host array")
    view[:size] = raw


def device_to_device(dst, src, size, stream=0) -> None:
    raw = np.empty(size, np.uint8)
    device_to_host(raw, src, size, stream)
    host_to_device(dst, raw, size, stream)


def device_memset(dst, val, size, stream=0) -> None:
    """Set the first *size* bytes of device array *dst* to the byte *val*."""
    host_to_device(dst, np.full(size, val, np.uint8), size, stream)
