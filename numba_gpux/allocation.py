"""Allocations: one device buffer each, its size rounded to the allocation granule, freed
with the last object that holds it, at once or in batches (:class:`PendingFrees`);
the bytes live on each device.  Device arrays (``memory.py``) are views on these."""

from __future__ import annotations

import contextlib
import threading

from .limits import check_alloc

__all__ = ["ALLOC_GRANULE", "padded_size", "Allocation", "PendingFrees", "defer_frees",
           "pending_frees", "allocated_bytes"]


_live_bytes: dict = {}  # id(device) -> bytes held by live allocations


#: allocations are rounded up to this many bytes, the granularity of CUDA's allocator
ALLOC_GRANULE = 256


def padded_size(nbytes: int) -> int:
    """The bytes actually allocated for *nbytes*: a multiple of :data:`ALLOC_GRANULE`
    (at least one).  A kernel that writes a little past the end of a small array --
    a bug CUDA's allocator hides, seen in real numba.cuda code -- then stays inside its
    own allocation on every target instead of corrupting a CPU device's (the host
    process's) heap."""
    return max(-(-int(nbytes) // ALLOC_GRANULE), 1) * ALLOC_GRANULE


class Allocation:
    """One allocation; the runtime's handle is released with this object."""

    __slots__ = ("device", "handle", "nbytes", "owner", "__weakref__")

    def __init__(self, device, nbytes: int) -> None:
        self.device = device
        self.nbytes = int(nbytes)
        self.owner = None
        self.handle = None
        check_alloc(device, self.nbytes)
        pending = _pending_frees.get(id(device))
        if pending is not None and len(pending):
            self.handle = pending.take(device, padded_size(self.nbytes))
            if self.handle is not None:
                _live_bytes[id(device)] = _live_bytes.get(id(device), 0) + self.nbytes
                return
        try:
            self.handle = device.runtime.alloc(padded_size(self.nbytes))
        except Exception:
            # out of memory, perhaps because of frees still pending: make them, try again
            pending = _pending_frees.get(id(device))
            if pending is None or not len(pending) or pending.is_disabled:
                raise
            pending.clear()
            self.handle = device.runtime.alloc(padded_size(self.nbytes))
        _live_bytes[id(device)] = _live_bytes.get(id(device), 0) + self.nbytes

    @classmethod
    def borrowed(cls, device, handle, nbytes: int, owner) -> "Allocation":
        """Memory another library allocated; *owner* is kept alive and nothing is freed."""
        a = cls.__new__(cls)
        a.device, a.handle, a.nbytes, a.owner = device, handle, int(nbytes), owner
        return a

    def __del__(self):
        if self.owner is not None or self.handle is None:  # borrowed, or never allocated
            return
        try:
            pending = _pending_frees.get(id(self.device))
            if pending is None:
                _release(self.device, self.handle, self.nbytes)
            else:
                pending.add(self.device, self.handle, self.nbytes)
        except Exception:
            pass


def _release(device, handle, nbytes: int) -> None:
    _live_bytes[id(device)] -= nbytes
    device.runtime.free(handle)


class PendingFrees:
    """Frees of one device's allocations, deferred and made in batches.

    By default an allocation is freed when its last array goes away.  A device given a
    ``PendingFrees`` (:func:`defer_frees`; the numba.cuda facade gives one to each device
    it uses, as numba.cuda's ``context.deallocations``) keeps the freed buffers here and
    frees them all at once when more than ``max_count()`` are pending or their bytes pass
    ``max_bytes()`` (both asked at each free), or on :meth:`clear`.  While a
    :meth:`disable` block is open nothing is freed, so that work queued on the device
    cannot find its memory gone (numba.cuda's ``defer_cleanup``).
    """

    def __init__(self, max_count=lambda: 10, max_bytes=lambda: 1 << 62) -> None:
        self.max_count = max_count
        self.max_bytes = max_bytes
        self._items: list = []
        self._size = 0
        self._disabled = 0
        self._lock = threading.RLock()

    def add(self, device, handle, nbytes: int) -> None:
        """Take the free of *handle*; frees the batch when it is over the limits."""
        with self._lock:
            self._items.append((device, handle, int(nbytes)))
            self._size += int(nbytes)
            if len(self._items) > self.max_count() or self._size > self.max_bytes():
                self.clear()

    def take(self, device, size: int):
        """A pending buffer of *device* that its runtime lets back a new allocation of
        *size* bytes (``Runtime.reusable``), or None; never inside a :meth:`disable`
        block.  The free stays counted (its entry, without the buffer, is freed with
        the batch), so the batch's count and bytes are what numba.cuda's would be."""
        with self._lock:
            if self._disabled:
                return None
            rt = device.runtime
            for k in range(len(self._items) - 1, -1, -1):
                dev, handle, nbytes = self._items[k]
                if dev is device and handle is not None and padded_size(nbytes) == size \
                        and rt.reusable(handle, size):  # (sizes first: no driver query)
                    self._items[k] = (dev, None, nbytes)
                    return handle
        return None

    def clear(self) -> None:
        """Free every pending buffer, unless a :meth:`disable` block is open."""
        with self._lock:
            if self._disabled:
                return
            items, self._items, self._size = self._items, [], 0
        for device, handle, nbytes in items:
            try:
                if handle is None:  # taken by a new allocation (take): only the count
                    _live_bytes[id(device)] -= nbytes
                else:
                    _release(device, handle, nbytes)
            except Exception:  # noqa: BLE001 - as a free at the last reference
                pass

    @contextlib.contextmanager
    def disable(self):
        """Nothing is freed inside this block (it nests); pending frees wait for the next
        free or :meth:`clear` after it."""
        with self._lock:
            self._disabled += 1
        try:
            yield
        finally:
            with self._lock:
                self._disabled -= 1

    @property
    def is_disabled(self) -> bool:
        return self._disabled > 0

    @property
    def pending_bytes(self) -> int:
        return self._size

    def __len__(self) -> int:
        return len(self._items)


#: id(device) -> its PendingFrees, for devices whose frees are deferred
_pending_frees: dict = {}


def defer_frees(device, pending: "PendingFrees | None") -> None:
    """Defer the frees of *device*'s allocations to *pending* (None: free at once again,
    after freeing what is pending)."""
    old = _pending_frees.pop(id(device), None)
    if pending is not None:
        _pending_frees[id(device)] = pending
    if old is not None and old is not pending:
        old.clear()


def pending_frees(device) -> "PendingFrees | None":
    """The :class:`PendingFrees` of *device*, or None where frees are immediate."""
    return _pending_frees.get(id(device))


def allocated_bytes(device) -> int:
    """Bytes numba_gpux currently holds allocated on *device*."""
    return _live_bytes.get(id(device), 0)
