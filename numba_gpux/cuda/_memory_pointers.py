"""numba.cuda's driver-level memory objects over numba_gpux's devices.

``MemoryPointer`` and its kinds are what numba.cuda's ``Context.memalloc``,
``memhostalloc``, ``mempin`` and ``memallocmanaged`` return (``cudadrv.driver``
exports them; ``api.Context`` makes them).  A pointer's ``device_pointer`` is an
integer device pointer in numba_gpux's sense (``memory.device_pointer``): a real
address on CUDA, an address numba_gpux gives out on OpenCL, resolved to the
buffer and offset when the memory is used (``memory.resolve_pointer``).

Reference counts follow numba.cuda's: ``own()`` and ``view()`` of memory that
numba_gpux allocated take a counted reference, and an ``AutoFreePointer`` is
freed when the count drops to zero.  Host memory (pinned, mapped, managed)
exports the buffer protocol over its host bytes, so that
``np.ndarray(buffer=mem)`` reads and writes it.
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import weakref

import numpy as np

from .. import memory as _mem
from ..errors import GpuxUserError

__all__ = ["MemoryPointer", "AutoFreePointer", "MappedMemory", "PinnedMemory", "ManagedMemory",
           "OwnedPointer", "device_memory", "host_memory", "pinned_host_memory",
           "managed_memory", "device_target", "host_bytes", "host_memory_extents",
           "is_device_memory", "device_memory_size"]


class MemoryPointer:
    """Device memory at ``device_pointer`` of ``size`` bytes in ``context``.

    *finalizer* (if any) runs when this object goes away or on :meth:`free`; the
    reference count (``refct``, 1 to begin with) is kept by :meth:`own` and
    :meth:`view` and frees nothing here (see :class:`AutoFreePointer`)."""

    __cuda_memory__ = True

    def __init__(self, context, pointer, size, owner=None, finalizer=None):
        if isinstance(pointer, ctypes.c_void_p):
            pointer = pointer.value
        self.context = context
        self.device_pointer = int(pointer or 0)
        self.handle = self.device_pointer
        self.size = int(size)
        self._cuda_memsize_ = self.size
        self.refct = 1
        self._owner = owner
        self.is_managed = finalizer is not None
        self._finalizer = weakref.finalize(self, finalizer) if finalizer is not None else None

    @property
    def owner(self):
        """The memory this is a view of (itself when it is not a view)."""
        return self if self._owner is None else self._owner

    @property
    def device_pointer_value(self):
        return self.device_pointer or None

    @property
    def device_ctypes_pointer(self) -> ctypes.c_size_t:
        return ctypes.c_size_t(self.device_pointer)

    def own(self) -> "OwnedPointer":
        """A counted reference to this memory."""
        return OwnedPointer(self)

    def free(self) -> None:
        """Run the finalizer now (the memory is released); an error when it already ran.
        Host memory the device addresses is unregistered now (after the device's work),
        as numba.cuda does, also if arrays still view it."""
        if self._finalizer is not None:
            if not self._finalizer.alive:
                raise RuntimeError("Freeing dead memory")
            self._finalizer()
        keeper = getattr(self, "_keeper", None)
        if keeper is not None:
            keeper.close()

    def view(self, start: int, stop: int | None = None):
        """The bytes [start, stop) of this memory (to the end without *stop*): a counted
        reference when numba_gpux owns the memory, else a plain pointer."""
        start = int(start)
        size = self.size - start if stop is None else int(stop) - start
        if size < 0:
            raise RuntimeError("size cannot be negative")
        if not self.device_pointer:
            if size:
                raise RuntimeError("non-empty slice into empty slice")
            part = self
        else:
            part = MemoryPointer(self.context, self.device_pointer + start, size,
                                 owner=self.owner)
        base = self.owner
        if isinstance(base, (MemoryPointer, OwnedPointer)):
            return OwnedPointer(base, part)
        return part  # the memory of another owner: a plain view

    def memset(self, byte: int, count: int | None = None, stream=0) -> None:
        """Set *count* bytes (default: all) to *byte*; synchronous without a stream."""
        count = self.size if count is None else int(count)
        rt, handle, offset, _ = device_target(self)
        rt.memset(handle, offset, byte, count, stream or None)

    def __repr__(self):
        return (f"<{type(self).__name__} 0x{self.device_pointer:x} size={self.size} "
                f"on {self.context.device.gpux_device.spec}>")


class AutoFreePointer(MemoryPointer):
    """Memory freed when its last counted reference (:meth:`own`, :meth:`view`) goes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.refct -= 1


class OwnedPointer:
    """A counted reference to *memptr* (showing *view* of it, by default all of it):
    attributes are the view's; the count drops when this object goes, and memory
    that frees itself at zero (:class:`AutoFreePointer`) is freed then."""

    __cuda_memory__ = True

    def __init__(self, memptr, view=None):
        self._mem = memptr
        self._view = memptr if view is None else view
        memptr.refct += 1
        self._drop = weakref.finalize(self, _drop_reference, memptr)
        self.device_ctypes_pointer = self._view.device_ctypes_pointer

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_mem", "_view"):
            raise AttributeError(name)
        return getattr(self._view, name)


def _drop_reference(mem) -> None:
    mem.refct -= 1
    if mem.refct == 0 and isinstance(mem, AutoFreePointer):
        fin = mem._finalizer
        if fin is not None and fin.alive:  # (else freed explicitly before)
            fin()


class _HostMemoryKeeper:
    """The owner of host memory that kernels address (mapped or managed), held by
    every allocation record, pointer and array over it: when the last goes, it waits
    for the device's work (a kernel may still use the memory), undoes the
    registration and frees the memory; ``close()`` (an explicit ``free``) waits and
    unregisters at once."""

    __slots__ = ("memory", "runtime", "unregister", "release", "closed")

    def __init__(self, memory, runtime, unregister=None, release=None):
        self.memory, self.runtime = memory, runtime
        self.unregister, self.release, self.closed = unregister, release, False

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.runtime.synchronize()
        except Exception:  # noqa: BLE001 - a failed device fails the next call, not a free
            pass
        if self.unregister is not None:
            self.unregister()

    def __del__(self):
        try:
            self.close()
            if self.release is not None:
                self.release()
        except Exception:  # noqa: BLE001 - as any free at the last reference
            pass


# -- host memory --------------------------------------------------------------------
@functools.lru_cache(maxsize=256)
def _with_bytes(cls, nbytes: int):
    """*cls* combined with a ctypes byte array of *nbytes*: instances made with
    ``from_address`` export the buffer protocol over those host bytes (Python 3.10+)."""
    return type(cls.__name__, (cls, ctypes.c_ubyte * nbytes),
                {"__module__": cls.__module__, "__qualname__": cls.__qualname__})


class _HostBytes:
    """Host memory at ``host_pointer``, exporting it as a buffer of bytes."""

    def __new__(cls, context, pointer, size, *args, **kwargs):
        address = pointer.value if isinstance(pointer, ctypes.c_void_p) else pointer
        return _with_bytes(cls, int(size)).from_address(int(address or 0))

    def _host_init(self, pointer, size, owner):
        self.host_pointer = int(pointer.value if isinstance(pointer, ctypes.c_void_p)
                                else pointer or 0)
        self.owned = owner
        self._bufptr_ = self.host_pointer
        self._buflen_ = int(size)


class PinnedMemory(_HostBytes):
    """Page-locked host memory (not addressed by kernels)."""

    def __init__(self, context, pointer, size, owner=None, finalizer=None):
        self._host_init(pointer, size, owner)
        self.context = context
        self.size = int(size)
        self.handle = self.host_pointer
        self.is_managed = finalizer is not None
        self._finalizer = weakref.finalize(self, finalizer) if finalizer is not None else None

    def own(self):
        return self

    def free(self) -> None:
        if self._finalizer is not None:
            self._finalizer()


class _HostAndDevice(_HostBytes, AutoFreePointer):
    """Memory at ``host_pointer`` that kernels address at ``device_pointer`` (the host
    address where none is given)."""

    def __init__(self, context, pointer, size, owner=None, finalizer=None,
                 device_pointer=None):
        self._host_init(pointer, size, owner)
        AutoFreePointer.__init__(self, context,
                                 self.host_pointer if device_pointer is None else device_pointer,
                                 size, finalizer=finalizer)

    def own(self):
        return _HostOwnedPointer(self)


class MappedMemory(_HostAndDevice):
    """Host memory that kernels address at ``device_pointer``."""

    def __init__(self, context, pointer, size, owner=None, finalizer=None,
                 device_pointer=None):
        super().__init__(context, pointer, size, owner, finalizer, device_pointer)
        self.handle = self.host_pointer


class ManagedMemory(_HostAndDevice):
    """Memory that the host and kernels both address (``host_pointer`` and
    ``device_pointer``; the same address on CUDA)."""


class _HostOwnedPointer(OwnedPointer):
    """A counted reference to mapped or managed memory that exports its host bytes too."""

    def __new__(cls, memptr, view=None):
        return _with_bytes(cls, int(memptr.size)).from_address(memptr.host_pointer)


def _gdev(context):
    return context.device.gpux_device


def device_memory(context, nbytes: int) -> OwnedPointer:
    """``context.memalloc``: *nbytes* of device memory, freed when the last reference
    goes (through the device's pending frees, as any allocation)."""
    alloc = _mem.Allocation(_gdev(context), int(nbytes))
    return _track(context, AutoFreePointer, alloc, _mem.device_pointer(alloc), nbytes)


def _track(context, cls, alloc, pointer, nbytes, keeper=None, **kw):
    """A *cls* pointer kept in ``context.allocations`` until freed; its finalizer drops
    the allocation *alloc* (freeing it once nothing else holds it); *keeper* is the
    :class:`_HostMemoryKeeper` of host memory (closed by an explicit ``free``)."""
    holder = [alloc]
    allocations = context.allocations
    key = []

    def release():
        holder.clear()
        allocations.pop(key[0], None)

    mem = cls(context, pointer, nbytes, finalizer=release, **kw)
    mem._keeper = keeper
    key.append(id(mem))
    allocations[key[0]] = mem
    return mem.own()


def _page_memory(nbytes: int):
    """Page-aligned host memory of *nbytes* (at least one byte) and its address."""
    pages = mmap.mmap(-1, max(int(nbytes), 1))
    return pages, np.frombuffer(pages, np.uint8).ctypes.data


def host_memory(context, nbytes: int, mapped: bool = False, portable: bool = False,
                wc: bool = False):
    """``context.memhostalloc``: page-aligned host memory registered with the device's
    runtime (``Runtime.host_register``); with *mapped*, kernels address it too.
    *portable* and *wc* are hints (registered memory is portable to every context of
    the runtime; write-combining is not requested)."""
    pages, address = _page_memory(nbytes)
    return _registered(context, pages, address, nbytes, mapped)


def pinned_host_memory(context, owner, pointer, nbytes: int, mapped: bool = False):
    """``context.mempin``: register the caller's host memory [pointer, pointer+nbytes)
    (*owner* is kept alive meanwhile); with *mapped*, kernels address it too."""
    address = int(pointer.value if isinstance(pointer, ctypes.c_void_p) else pointer)
    return _registered(context, owner, address, nbytes, mapped)


def _registered(context, owner, address: int, nbytes: int, mapped: bool):
    """Host memory [address, address+nbytes) that *owner* keeps alive, registered with
    the device's runtime: PinnedMemory, or with *mapped* MappedMemory that kernels
    address too; unregistered when the last reference goes."""
    gdev = _gdev(context)
    rt = gdev.runtime
    token, buf = rt.host_register(address, max(int(nbytes), 1), mapped=bool(mapped))

    def unregister():
        rt.host_unregister(token)

    if not mapped:
        return PinnedMemory(context, address, nbytes, owner=owner,
                            finalizer=_keep(owner, unregister))
    keeper = _HostMemoryKeeper(owner, rt, unregister)
    alloc = _mem.Allocation.borrowed(gdev, buf, max(int(nbytes), 1), keeper)
    return _track(context, MappedMemory, alloc, address, nbytes, keeper,
                  device_pointer=_mem.device_pointer(alloc))


def managed_memory(context, nbytes: int, attach_global: bool = True):
    """``context.memallocmanaged``: memory the host and kernels both address
    (``Runtime.alloc_managed``), freed when the last reference goes."""
    gdev = _gdev(context)
    rt = gdev.runtime
    handle, address, keep = rt.alloc_managed(max(int(nbytes), 1), attach_global=attach_global)
    keeper = _HostMemoryKeeper(keep, rt, release=lambda: rt.free(handle))
    alloc = _mem.Allocation.borrowed(gdev, handle, max(int(nbytes), 1), keeper)
    return _track(context, ManagedMemory, alloc, address, nbytes, keeper,
                  device_pointer=_mem.device_pointer(alloc))


def _keep(obj, fn):
    """A finalizer calling *fn* that holds *obj* until then."""
    return lambda: (fn(), obj)[0]


# -- resolving memory ---------------------------------------------------------------
def _memory_of_host_array(obj):
    """The mapped or managed memory under the host array *obj* (through its ``base``
    chain), or None."""
    seen = 0
    while obj is not None and seen < 64:
        if isinstance(obj, (MappedMemory, ManagedMemory)):
            return obj
        if isinstance(obj, _HostOwnedPointer):
            return obj._mem
        obj = getattr(obj, "base", None) if isinstance(obj, np.ndarray) else \
            getattr(obj, "obj", None) if isinstance(obj, memoryview) else None
        seen += 1
    return None


def is_device_memory(obj) -> bool:
    """numba.cuda's test: a device array, or memory marked ``__cuda_memory__``."""
    return isinstance(obj, _mem.DeviceArray) or bool(getattr(obj, "__cuda_memory__", False))


def device_target(obj):
    """(runtime, buffer handle, byte offset, bytes from there) of the device memory
    *obj*: a device array, a memory pointer (``device_pointer``) or a host array over
    mapped or managed memory."""
    if isinstance(obj, _mem.DeviceArray):
        rt = obj.device.runtime
        return rt, obj.handle, obj.offset, obj._alloc.nbytes - obj.offset
    if isinstance(obj, np.ndarray):
        mem = _memory_of_host_array(obj)
        if mem is None:
            raise TypeError("a host array that is not mapped or managed memory is not "
                            "device memory")
        start = host_memory_extents(obj)[0] - mem.host_pointer
        gdev = _gdev(mem.context)
        handle, offset = _mem.resolve_pointer(mem.device_pointer + start, gdev)
        return gdev.runtime, handle, offset, mem.size - start
    if getattr(obj, "__cuda_memory__", False) and hasattr(obj, "device_pointer"):
        gdev = _gdev(obj.context)
        handle, offset = _mem.resolve_pointer(int(obj.device_pointer), gdev)
        return gdev.runtime, handle, offset, int(obj.size)
    raise TypeError(f"{type(obj).__name__} is not device memory")


def device_memory_size(obj) -> int:
    """The bytes of device memory under *obj* (a device array: its allocation)."""
    if isinstance(obj, _mem.DeviceArray):
        return obj._alloc.nbytes
    if isinstance(obj, np.ndarray):
        return device_target(obj)[3]
    size = getattr(obj, "_cuda_memsize_", None)
    if size is None:
        raise TypeError(f"{type(obj).__name__} is not device memory")
    return int(size)


def host_memory_extents(obj) -> tuple[int, int]:
    """[start, end) addresses of the host memory *obj* spans (a NumPy array, a ctypes
    object, or another object exporting the buffer protocol)."""
    if isinstance(obj, ctypes._SimpleCData) or isinstance(obj, (ctypes.Structure, ctypes.Union,
                                                                ctypes.Array)):
        start = ctypes.addressof(obj)
        return start, start + ctypes.sizeof(obj)
    ary = obj if isinstance(obj, np.ndarray) else np.asarray(memoryview(obj))
    start = ary.__array_interface__["data"][0]
    if ary.size == 0:
        return start, start
    lo = hi = start
    for n, s in zip(ary.shape, ary.strides):
        if s >= 0:
            hi += (n - 1) * s
        else:
            lo += (n - 1) * s
    return lo, hi + ary.itemsize


def host_bytes(obj, nbytes: int) -> np.ndarray:
    """The first *nbytes* bytes of the host memory *obj* spans, as a uint8 array over
    that memory (no copy)."""
    lo, hi = host_memory_extents(obj)
    if nbytes > hi - lo:
        raise GpuxUserError(f"{nbytes} bytes do not fit in the {hi - lo} bytes of the host "
                            f"{type(obj).__name__}")
    if nbytes <= 0:
        return np.empty(0, np.uint8)
    return np.ctypeslib.as_array((ctypes.c_ubyte * int(nbytes)).from_address(lo))
