"""numba.cuda's External Memory Management (EMM) plug-in interface.

A plug-in is a class deriving from :class:`BaseCUDAMemoryManager` (usually through
:class:`HostOnlyCUDAMemoryManager`, which keeps the facade's own host allocations)
that :func:`set_memory_manager` installs: each context made afterwards gets an
instance (``context.memory_manager``, built with ``context=``), initializes it before
its first use (and again after ``reset``), and hands it what numba.cuda hands it:
``memalloc`` (also for every device array the facade makes), ``memhostalloc``,
``mempin``, ``memallocmanaged``, ``get_memory_info``, ``reset``, ``defer_cleanup``
and ``get_ipc_handle``.  ``interface_version`` must be 1.

Device arrays over a plug-in's memory need a device whose kernels take plain
addresses (CUDA): there the array borrows the address ``memalloc`` returned and
keeps the returned pointer object alive, so its finalizer runs when the last array
on it goes.  An OpenCL device's buffers are not addresses, so there a device array
cannot be made from a plug-in's memory: a ``NotImplementedError`` naming the target.
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod

from .. import memory as _mem
from ..errors import UnsupportedError
from . import _arrays
from . import _context_memory as _cm
from . import _memory_pointers as _mp
from . import api as _api

__all__ = ["BaseCUDAMemoryManager", "HostOnlyCUDAMemoryManager", "GetIpcHandleMixin",
           "NumbaCUDAMemoryManager", "set_memory_manager", "plugin_allocation"]

_SUPPORTED_EMM_INTERFACE_VERSION = 1


class BaseCUDAMemoryManager(metaclass=ABCMeta):
    """The interface an EMM plug-in implements (numba.cuda's, version 1)."""

    def __init__(self, *args, **kwargs):
        if "context" not in kwargs:
            raise RuntimeError("Memory manager requires a context")
        self.context = kwargs.pop("context")

    @abstractmethod
    def memalloc(self, size):
        """*size* bytes of device memory: a memory pointer (``MemoryPointer``) that
        owns it."""

    @abstractmethod
    def memhostalloc(self, size, mapped, portable, wc):
        """*size* bytes of page-locked host memory (mapped into the device with *mapped*)."""

    @abstractmethod
    def mempin(self, owner, pointer, size, mapped):
        """Page-lock the host memory [pointer, pointer + size) that *owner* holds."""

    @abstractmethod
    def initialize(self):
        """Called before the context's first use (and again after ``reset``)."""

    @abstractmethod
    def get_ipc_handle(self, memory):
        """An IPC handle for *memory*."""

    @abstractmethod
    def get_memory_info(self):
        """``MemoryInfo(free, total)`` in bytes."""

    @abstractmethod
    def reset(self):
        """Free every allocation of the context (``context.reset()``)."""

    @abstractmethod
    def defer_cleanup(self):
        """A context manager in which no memory is freed."""

    @property
    @abstractmethod
    def interface_version(self):
        """The EMM interface version the plug-in implements: 1."""


class HostOnlyCUDAMemoryManager(BaseCUDAMemoryManager):
    """A base for plug-ins that manage device memory only: host memory (pinned,
    mapped, pinned-in-place, managed) is the facade's own, as the context allocates
    it without a plug-in, and ``reset``/``defer_cleanup`` act on the context's pending
    frees."""

    def _context(self):
        if self.context is None:
            raise RuntimeError("this memory manager has no context")
        return self.context

    def memhostalloc(self, size, mapped=False, portable=False, wc=False):
        return _mp.host_memory(self._context(), size, mapped=mapped, portable=portable, wc=wc)

    def mempin(self, owner, pointer, size, mapped=False):
        return _mp.pinned_host_memory(self._context(), owner, pointer, size, mapped=mapped)

    def memallocmanaged(self, size, attach_global=True):
        return _mp.managed_memory(self._context(), size, attach_global=attach_global)

    @property
    def deallocations(self):
        return self._context().deallocations

    def reset(self):
        self.deallocations.clear()

    def defer_cleanup(self):
        return self.deallocations.disable()


class GetIpcHandleMixin:
    """numba.cuda's ``get_ipc_handle`` through the CUDA driver's IPC, which numba-gpux
    does not have."""

    def get_ipc_handle(self, memory):
        raise UnsupportedError("IPC handles are a CUDA driver feature numba_gpux does not "
                               "have (see docs/migration.md)")


class NumbaCUDAMemoryManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    """The facade's own memory management as a plug-in (numba.cuda's default one):
    device memory from numba-gpux's allocator."""

    def initialize(self):
        pass

    def memalloc(self, size):
        return _mp.device_memory(self._context(), size)

    def get_memory_info(self):
        return self._context()._own_memory_info()

    @property
    def interface_version(self):
        return _SUPPORTED_EMM_INTERFACE_VERSION


def set_memory_manager(mm_plugin) -> None:
    """Use the EMM plug-in class *mm_plugin* for the contexts made from now on; a
    RuntimeError (numba.cuda's) when its ``interface_version`` is not 1."""
    dummy = mm_plugin(context=None)
    iv = dummy.interface_version
    if iv != _SUPPORTED_EMM_INTERFACE_VERSION:
        raise RuntimeError(f"EMM Plugin interface has version {iv} - version "
                           f"{_SUPPORTED_EMM_INTERFACE_VERSION} required")
    _cm.set_plugin_class(None if mm_plugin is NumbaCUDAMemoryManager else mm_plugin)


def plugin_allocation(dev, nbytes: int):
    """An allocation of *nbytes* on the numba_gpux device *dev* from the EMM plug-in of
    its context, or None when that context has none."""
    ctx = _api.context_of_gpux_device(dev)
    mm = ctx.plugin
    if mm is None:
        return None
    ctx.prepare()
    mem = mm.memalloc(int(nbytes))
    ptr = int(mem.device_pointer_value or 0) if hasattr(mem, "device_pointer_value") \
        else int(mem.device_pointer)
    alloc, offset = _mem.allocation_at(ptr, dev) if ptr else (None, 0)
    if alloc is not None:  # the facade's own memory, handed back by the plug-in: borrowed,
        # so that the plug-in's pointer object (and its finalizer) lives with the array
        return _mem.Allocation.borrowed(dev, alloc.handle, alloc.nbytes, mem), offset, mem
    if not dev.runtime.buffers_are_addresses:
        raise NotImplementedError(
            f"{type(mm).__name__}.memalloc: device arrays cannot be made over an External "
            f"Memory Management plug-in's memory on {dev.spec} (its buffers are not "
            f"addresses); use the default memory manager on this device")
    return _mem.Allocation.borrowed(dev, ptr, int(nbytes), mem), 0, mem


def _new_allocation(dev, nbytes):
    """``_arrays._new_allocation``: the plug-in's memory where *dev*'s context has one."""
    if _cm.plugins_in_use:
        got = plugin_allocation(dev, nbytes)
        if got is not None:
            return got[0], got[1]
    return _mem.Allocation(dev, nbytes), 0


_arrays._new_allocation = _new_allocation
