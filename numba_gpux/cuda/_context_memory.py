"""The memory side of the facade's contexts (``api.Context``): pending frees,
``memory_manager`` and the driver-level memory calls.

Without an External Memory Management plug-in, ``context.memory_manager`` is the
facade's own :class:`MemoryManager` and the calls use numba-gpux's allocator.  With a
plug-in installed when the context is made (``cuda.set_memory_manager``, see
``_emm``), or assigned to ``context.memory_manager``, the context initializes it
before its first use (and again after ``reset``) and hands it each call, as
numba.cuda's contexts do.
"""

from __future__ import annotations

from collections import namedtuple

from .. import memory as _mem

__all__ = ["MemoryInfo", "Deallocations", "deallocations_of", "MemoryManager",
           "ContextMemory", "set_plugin_class"]

MemoryInfo = namedtuple("MemoryInfo", ["free", "total"])


class Deallocations(_mem.PendingFrees):
    """``context.deallocations``: as numba.cuda, device memory freed by the program is
    kept pending and freed in batches, when more than ``config.CUDA_DEALLOCS_COUNT``
    frees are pending or their bytes pass ``config.CUDA_DEALLOCS_RATIO`` of the
    device's memory (both read at each free), or on ``clear()``; nothing is freed
    inside ``cuda.defer_cleanup()``."""

    def __init__(self, total_bytes: int):
        from . import config as _config

        self.memory_capacity = int(total_bytes)
        super().__init__(lambda: _config.CUDA_DEALLOCS_COUNT,
                         lambda: int(self.memory_capacity * _config.CUDA_DEALLOCS_RATIO))

    @property
    def _max_pending_bytes(self) -> int:
        return self.max_bytes()


def deallocations_of(gdev) -> Deallocations:
    """The pending frees of *gdev*, given to it on first use through the facade."""
    got = _mem.pending_frees(gdev)
    if not isinstance(got, Deallocations):
        info = gdev.runtime.memory_info()
        total = info[1] if info is not None else int(gdev.limits.get("global_mem_bytes", 0))
        got = Deallocations(total)
        _mem.defer_frees(gdev, got)
    return got


class MemoryManager:
    """``context.memory_manager`` without a plug-in: the questions numba.cuda's memory
    manager answers, about the facade's own memory."""

    interface_version = 1

    def __init__(self, context):
        self._context = context

    @property
    def deallocations(self) -> Deallocations:
        return self._context.deallocations

    def get_memory_info(self) -> MemoryInfo:
        return self._context.get_memory_info()

    def defer_cleanup(self):
        return self._context.defer_cleanup()

    def reset(self) -> None:
        self._context.reset()

    def initialize(self) -> None:
        pass


#: the EMM plug-in class of contexts made from now on (None: the facade's own)
_plugin_class = None
#: whether any context has had a plug-in (device arrays ask their context only then)
plugins_in_use = False


def set_plugin_class(cls) -> None:
    global _plugin_class
    _plugin_class = cls


class ContextMemory:
    """What a context does with memory (``api.Context`` derives from it): set up with
    :meth:`_init_memory`; ``device`` is the context's facade device."""

    def _init_memory(self) -> None:
        self.memory_manager = MemoryManager(self) if _plugin_class is None \
            else _plugin_class(context=self)
        self._prepared = False
        #: the driver-level memory of this context still referenced (numba.cuda's
        #: ``allocations``): each pointer until its last reference goes
        self.allocations: dict = {}

    @property
    def deallocations(self) -> Deallocations:
        """The frees pending on this context's device (numba.cuda's deallocation queue)."""
        return deallocations_of(self.device.gpux_device)

    @property
    def memory_manager(self):
        """numba.cuda's ``context.memory_manager``: :class:`MemoryManager`, or the EMM
        plug-in instance (one may be assigned)."""
        return self._memory_manager

    @memory_manager.setter
    def memory_manager(self, mm) -> None:
        global plugins_in_use
        self._memory_manager = mm
        if not isinstance(mm, MemoryManager):
            plugins_in_use = True

    @property
    def plugin(self):
        """The EMM plug-in ``memory_manager`` is (also one assigned to it), else None."""
        mm = self.memory_manager
        return None if isinstance(mm, MemoryManager) else mm

    def prepare(self) -> None:
        """Initialize the memory manager before the context's first use (numba.cuda's
        ``prepare_for_use``); again after :meth:`_unprepare`."""
        if not self._prepared:
            self.device.gpux_device.runtime.start()  # the driver's context, as numba.cuda's
            self._prepared = True
            if self.plugin is not None:
                self.plugin.initialize()

    def _unprepare(self) -> None:
        """``reset``: an EMM plug-in is reset, and initialized again before next use."""
        if self.plugin is not None:
            self.plugin.reset()
        self._prepared = False

    def _plugin_method(self, name: str):
        """The plug-in's method *name* (the plug-in initialized first), or None."""
        mm = self.plugin
        if mm is None or not hasattr(mm, name):
            return None
        self.prepare()
        return getattr(mm, name)

    def defer_cleanup(self):
        """A block in which no device memory is freed (numba.cuda's ``defer_cleanup``)."""
        if (call := self._plugin_method("defer_cleanup")) is not None:
            return call()
        return self.deallocations.disable()

    # -- driver-level memory (numba.cuda's Context methods) -------------------------
    def memalloc(self, bytesize: int):
        """*bytesize* bytes of device memory: a counted pointer (``MemoryPointer``)."""
        from . import _memory_pointers as _mp

        if (call := self._plugin_method("memalloc")) is not None:
            return call(bytesize)
        return _mp.device_memory(self, bytesize)

    def memhostalloc(self, bytesize: int, mapped: bool = False, portable: bool = False,
                     wc: bool = False):
        """*bytesize* bytes of page-locked host memory (a ``PinnedMemory``), with *mapped*
        also addressed by kernels (a ``MappedMemory``); both export the buffer protocol.
        Where the device cannot address host memory, *mapped* raises NotImplementedError."""
        from . import _memory_pointers as _mp

        if (call := self._plugin_method("memhostalloc")) is not None:
            return call(bytesize, mapped, portable, wc)
        return _mp.host_memory(self, bytesize, mapped=mapped, portable=portable, wc=wc)

    def mempin(self, owner, pointer, size: int, mapped: bool = False):
        """Register the host memory [pointer, pointer + size), which *owner* holds, with
        the device (page-locked; with *mapped*, addressed by kernels too)."""
        from . import _memory_pointers as _mp

        if (call := self._plugin_method("mempin")) is not None:
            return call(owner, pointer, size, mapped)
        return _mp.pinned_host_memory(self, owner, pointer, size, mapped=mapped)

    def memallocmanaged(self, bytesize: int, attach_global: bool = True):
        """*bytesize* bytes that the host and kernels both address (a ``ManagedMemory``);
        NotImplementedError where the device has no such memory."""
        from . import _memory_pointers as _mp

        if (call := self._plugin_method("memallocmanaged")) is not None:
            return call(bytesize, attach_global)
        return _mp.managed_memory(self, bytesize, attach_global=attach_global)

    def get_memory_info(self) -> MemoryInfo:
        """(free, total) bytes: the memory manager's answer (an EMM plug-in's where one
        is installed), else :meth:`_own_memory_info`."""
        if (call := self._plugin_method("get_memory_info")) is not None:
            return call()
        return self._own_memory_info()

    def _own_memory_info(self) -> MemoryInfo:
        """(free, total) bytes of the device.  Where the driver does not report free
        memory, free is the total less what numba_gpux itself holds allocated on it."""
        gdev = self.device.gpux_device
        total = int(gdev.limits.get("global_mem_bytes", 0))
        info = gdev.runtime.memory_info()
        if info is not None:
            return MemoryInfo(*info)
        used = _mem.allocated_bytes(gdev)
        return MemoryInfo(max(total - used, 0), total)
