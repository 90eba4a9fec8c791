"""Addresses for OpenCL buffers, so that ``__cuda_array_interface__`` works on OpenCL.

OpenCL names memory by buffer objects, not addresses; numba.cuda programs pass arrays
between libraries and kernels as ``__cuda_array_interface__`` pointers.  Each buffer
that is asked for one gets an address range of numba_gpux's own, from 2**63 up:
above every user-space address of the host and every CUDA (unified) device address,
so that no real pointer is ever read as one of these, nor one of these as a real
pointer of another buffer.  The runtime turns such an address back into its buffer
and byte offset when an array interface comes back to it (``foreign_array``).  The
addresses mean nothing to the driver or to other libraries.
"""

from __future__ import annotations

import bisect
import threading

__all__ = ["AddressBook", "BASE"]

#: the first address handed out (above the canonical user half of any 64-bit host)
BASE = 1 << 63
#: every range starts on this boundary and is followed by a gap of at least one
#: boundary, so that an address just past an array's end belongs to no buffer
_ALIGN = 1 << 16


class AddressBook:
    """Address ranges of one runtime's buffers (thread-safe)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._next = BASE
        self._starts: list[int] = []    # sorted range starts
        self._ranges: dict = {}         # start -> (size, buffer)
        self._by_handle: dict = {}      # the driver's cl_mem value -> start

    def address(self, buffer) -> int:
        """The address of *buffer*'s first byte (given on first use)."""
        key = buffer.int_ptr
        with self._lock:
            start = self._by_handle.get(key)
            if start is not None and self._ranges[start][1] is buffer:
                return start
            if start is not None:  # the driver reused a released buffer's handle
                self._drop(key)
            size = max(int(buffer.size), 1)
            start = self._next
            self._next += -(-size // _ALIGN) * _ALIGN + _ALIGN
            self._ranges[start] = (size, buffer)
            self._by_handle[key] = start
            bisect.insort(self._starts, start)
            return start

    def find(self, address: int):
        """(buffer, byte offset) of the buffer whose range holds *address*, or None."""
        with self._lock:
            k = bisect.bisect_right(self._starts, address) - 1
            if k < 0:
                return None
            start = self._starts[k]
            size, buffer = self._ranges[start]
            if address >= start + size:
                return None
            return buffer, address - start

    def forget(self, buffer) -> None:
        """*buffer* is released: its range holds nothing from now on."""
        with self._lock:
            start = self._by_handle.get(buffer.int_ptr)
            if start is not None and self._ranges[start][1] is buffer:
                self._drop(buffer.int_ptr)

    def _drop(self, key) -> None:
        start = self._by_handle.pop(key)
        del self._ranges[start]
        self._starts.remove(start)
