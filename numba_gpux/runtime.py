"""The Runtime contract: one device's driver binding (memory, programs, kernels,
launches), the fourth of a target's contracts beside those of ``interface.py`` (which
re-exports :class:`Runtime`).  This module is a bottom layer: it imports nothing of the
project at module level."""

from __future__ import annotations

from typing import Any

__all__ = ["Runtime", "PARAM_KINDS"]

# A target's runtime is one device's driver binding (``Device.runtime``).  The core
# (launch, memory, cache, attributes) and the facades call only what is declared
# here.  Required operations raise NotImplementedError; optional ones have a
# default, and a runtime overrides those it can do better.  Every ``queue`` argument
# is None or 0 (the device's default queue), a queue from ``new_queue()``, or an
# object carrying one as ``.gpux_queue``.

#: the kinds of the kernel's parameters (the ABI's leaves, ``abi.py``) that ``prepare``
#: is given, each as ``(kind, type)``: ``"buffer"`` (a device buffer: an array's,
#: pointer's or record's, with its type, or a debug kernel's error buffer, with None),
#: ``"i64"`` (an offset, extent or stride), ``"i8"`` (a bool), ``"scalar"`` (a number;
#: its type is the NumPy scalar type)
PARAM_KINDS = ("buffer", "i64", "i8", "scalar")


class Runtime:
    """One device's driver binding: memory, programs, kernels, launches.

    The launch path flattens a kernel's arguments into its parameters (the ABI's
    leaves) in the form the class attributes below ask for, and hands the runtime
    only that list: buffers as the handles ``alloc`` returned, ``i64``/``i8``/
    ``scalar`` leaves as numbers (or their bytes, ``packed_scalars``).
    """

    #: allocation handles are device addresses (ints): an integer device pointer is a
    #: real one, and one that points into no allocation of ours passes as it is
    buffers_are_addresses: bool = False
    #: the buffer leaf of an array, pointer or record is its handle plus its byte offset
    #: (the address of its first element; needs ``buffers_are_addresses``, and a target
    #: that defines ``__gpux_array_offset`` as 0); the offset leaf follows unchanged
    pointer_includes_offset: bool = False
    #: ``i64``, ``i8`` and ``scalar`` leaves reach ``launch`` as their little-endian
    #: bytes at the leaf's width (what clSetKernelArg takes), not as numbers
    packed_scalars: bool = False

    # -- required ---------------------------------------------------------------
    def alloc(self, nbytes: int) -> Any:
        """A new device buffer of *nbytes* bytes (its handle)."""
        raise NotImplementedError

    def free(self, handle: Any) -> None:
        """Release a buffer from ``alloc`` (never called twice for one handle)."""
        raise NotImplementedError

    def write(self, handle: Any, offset: int, host: Any, queue: Any = None) -> None:
        """Copy the contiguous NumPy array *host* to the buffer at byte *offset*; returns
        once *host* may be reused."""
        raise NotImplementedError

    def read(self, host: Any, handle: Any, offset: int, queue: Any = None) -> None:
        """Fill the contiguous NumPy array *host* from the buffer at byte *offset*, after
        the work queued before it; returns once *host* holds the data."""
        raise NotImplementedError

    def load(self, artifact: Any) -> Any:
        """The driver's program built from *artifact* (an ``interface.Artifact``); raises
        InternalCompilerError with the driver's log when the driver refuses it."""
        raise NotImplementedError

    def kernel(self, program: Any, name: str) -> Any:
        """The kernel *name* of a program from ``load``."""
        raise NotImplementedError

    def launch(self, kernel: Any, griddim: tuple, blockdim: tuple, args: list,
               shared_bytes: int, queue: Any) -> None:
        """Queue *kernel* on *griddim* blocks of *blockdim* threads (3-tuples) with the
        flat parameter values *args* and *shared_bytes* of dynamic shared memory."""
        raise NotImplementedError

    def synchronize(self, queue: Any = None) -> None:
        """Wait for the work queued so far on *queue* (the default queue: all work)."""
        raise NotImplementedError

    def idle(self) -> bool:
        """Whether all work queued so far has completed, asked without waiting; False
        where the runtime cannot tell cheaply (the default)."""
        return False

    # -- optional: launches -----------------------------------------------------
    def start(self) -> None:
        """Make the driver's context now where it is made on first use (numba.cuda's
        ``current_context()`` makes it); the errors of making it are raised here."""

    def prepare(self, kernel: Any, params: list) -> Any:
        """Once per kernel and parameter list (``PARAM_KINDS``), before its first launch:
        a launcher ``launcher(griddim, blockdim, args, shared_bytes, queue)`` doing what
        ``launch(kernel, ...)`` does, or None (launches call ``launch``)."""
        return None

    def set_heap_size(self, nbytes: int) -> None:
        """Before the first launch of a kernel that makes arrays, on a target whose device
        allocator serves them (``Target.device_malloc``): size that allocator's heap."""

    def set_shared_memory_carveout(self, kernel: Any, percent: int) -> None:
        """A hint: the share of on-chip memory *kernel* prefers as shared memory."""

    def set_cache_config(self, kernel: Any, prefer: str) -> None:
        """A hint: how *kernel* prefers on-chip memory split between cache and shared
        memory: ``"none"``, ``"shared"``, ``"cache"`` or ``"equal"`` (CUDA's
        ``cuFuncSetCacheConfig``).  Default: no such choice, nothing to do."""

    def native_handle(self, kernel: Any) -> Any:
        """The driver's own object for *kernel* (from ``kernel``), for code that calls
        the driver's API itself (a ``CUfunction``; a ``pyopencl.Kernel``).  Default:
        *kernel*."""
        return kernel

    def cooperative_groups(self, kernel: Any, block_threads: int, shared_bytes: int) -> int:
        """The most work-groups of *block_threads* work-items with *shared_bytes* of
        dynamic shared memory of *kernel* that the device is sure to run at once (the
        largest grid of a kernel that synchronizes its grid; 0 if none fits).  Default:
        1, where the driver promises no forward progress between work-groups and says
        nothing of how many it runs at once."""
        return 1

    def launch_cooperative(self, kernel: Any, griddim: tuple, blockdim: tuple, args: list,
                           shared_bytes: int, queue: Any = None) -> None:
        """``launch`` for a kernel that synchronizes its grid, whose grid is no larger
        than ``cooperative_groups`` allows: all its blocks must run at once (CUDA's
        cooperative launch).  Default: ``launch``."""
        self.launch(kernel, griddim, blockdim, args, shared_bytes, queue)

    def kernel_attributes(self, kernel: Any) -> dict:
        """What the driver reports of *kernel* (``max_threads_per_block``,
        ``shared_mem_per_block``, ``local_mem_per_thread``, ``regs_per_thread``...)."""
        return {}

    # -- optional: memory -------------------------------------------------------
    def reusable(self, handle: Any, nbytes: int) -> bool:
        """Whether *handle*, a buffer freed but not yet released (a frees' batch holds
        it: ``allocation.PendingFrees``), may back a new allocation of *nbytes* now:
        the work queued before cannot overlap the new user's (one in-order queue), and
        making a new buffer costs more than taking it.  Default: False."""
        return False

    def is_device_address(self, address: int) -> bool | None:
        """Whether the integer *address* lies in memory this device's kernels may use
        (another library's allocation, say), asked when a pointer argument points into
        no allocation of ours (``buffers_are_addresses``); None: the runtime cannot
        tell, and the address passes as it is."""
        return None

    def copy(self, dst: Any, dst_offset: int, src: Any, src_offset: int, nbytes: int,
             queue: Any = None) -> None:
        """Copy *nbytes* between two buffers of this device (default: through the host)."""
        import numpy as np

        staging = np.empty(int(nbytes), np.uint8)
        self.read(staging, src, src_offset, queue)
        self.write(dst, dst_offset, staging, queue)

    def memset(self, handle: Any, offset: int, byte: int, nbytes: int, queue: Any = None) -> None:
        """Set *nbytes* bytes of the buffer from byte *offset* to *byte*; on the default
        queue it returns once done, on another queue it is ordered there (default: a
        write of a filled host array)."""
        import numpy as np

        self.write(handle, offset, np.full(int(nbytes), int(byte) & 0xFF, np.uint8), queue)

    def host_register(self, address: int, nbytes: int, mapped: bool = False) -> tuple:
        """Page-lock the host memory [*address*, *address* + *nbytes*) for transfers
        and, with *mapped*, give kernels access to it: ``(token, buffer)``, the token
        for :meth:`host_unregister`, the buffer a handle that ``read``/``write``/
        ``memset``/launches take as one of ``alloc``'s (never given to ``free``), or
        None without *mapped*.  The memory stays the caller's.  By default nothing is
        page-locked (transfers from it work as from any host memory) and *mapped*
        raises NotImplementedError."""
        if mapped:
            raise NotImplementedError(f"{type(self).__name__} cannot map host memory "
                                      f"into the device's address space")
        return None, None

    def host_unregister(self, token: Any) -> None:
        """Undo :meth:`host_register` (its buffer is no longer used)."""

    def alloc_managed(self, nbytes: int, attach_global: bool = True) -> tuple:
        """Memory both the host and the device's kernels address (CUDA's managed
        memory): ``(handle, host address, keepalive)``, the handle as ``alloc``'s (freed
        with ``free``), *keepalive* an object to hold while the handle lives (or None).
        *attach_global* False: only the host and the default queue use it at first."""
        raise NotImplementedError(f"{type(self).__name__} has no managed (unified) memory")

    def shares_host_memory(self) -> bool:
        """Whether ``alloc_managed`` memory is the host's own (a CPU device): the host
        reads what kernels wrote there, once they are done, with no transfer."""
        return False

    def memory_info(self) -> tuple[int, int] | None:
        """(free, total) bytes of device memory as the driver reports them, or None."""
        return None

    def array_attribute(self, array: Any, name: str) -> Any:
        """A dunder attribute of a device array of this device (a driver's array
        interface, ``__cuda_array_interface__``...); AttributeError if none."""
        raise AttributeError(f"'{type(array).__name__}' object has no attribute {name!r}")

    def foreign_array(self, obj: Any) -> tuple | None:
        """(handle, byte offset, shape, strides in bytes, dtype, owner) of another
        library's device array whose memory this device's kernels can use, else None."""
        return None

    # -- optional: the device ---------------------------------------------------
    def device_attribute(self, name: str) -> int | None:
        """The driver's device attribute *name* (CUDA's ``CU_DEVICE_ATTRIBUTE_<name>``), or None."""
        return None

    def can_access_peer(self, other: "Runtime") -> bool:
        """Whether this device's kernels can read and write *other*'s buffers directly."""
        return False

    # -- optional: programs on disk (``cache=True``) ----------------------------
    def binary_identity(self) -> str | None:
        """What a built program's binary depends on (device, driver, versions), or None:
        built programs are not kept on disk."""
        return None

    def program_binary(self, program: Any) -> bytes | None:
        """The driver's binary of a program from ``load``, or None."""
        return None

    def load_binary(self, data: bytes) -> Any:
        """A program from a binary of ``program_binary`` (same ``binary_identity``)."""
        raise NotImplementedError(f"{type(self).__name__} loads no program binaries")

    # -- optional: queues and events (numba_gpux.cuda's streams) -----------------
    def _no_queues(self, what: str):
        from .errors import UnsupportedError

        return UnsupportedError(f"the runtime {type(self).__name__} has no queues/events "
                                f"({what}); streams need them")

    def new_queue(self) -> Any:
        """Another in-order queue on this device."""
        raise self._no_queues("new_queue")

    def adopt_queue(self, handle: Any) -> Any:
        """A queue of this device made by other code, from its driver handle (a
        ``CUstream`` as an int, a ``pyopencl.CommandQueue``); work on it is ordered with
        that code's, and it stays that code's to release.  By default there are none."""
        raise NotImplementedError(f"{type(self).__name__} cannot use another library's "
                                  f"queues (streams)")

    def record_event(self, queue: Any = None) -> Any:
        """A marker after the work queued so far on *queue*."""
        raise self._no_queues("record_event")

    def event_query(self, event: Any) -> bool:
        """Whether the work before *event* has completed."""
        raise self._no_queues("event_query")

    def event_synchronize(self, event: Any) -> None:
        """Wait for the work before *event*."""
        raise self._no_queues("event_synchronize")

    def event_wait(self, event: Any, queue: Any = None) -> None:
        """Work queued on *queue* after this call waits for *event*."""
        raise self._no_queues("event_wait")

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two recorded events."""
        raise self._no_queues("event_elapsed_ms")

    def release_queue(self, queue: Any) -> None:
        """*queue* (from ``new_queue``) is no longer used: its driver object may go once
        its work is done.  By default the queue goes with its last reference."""

    def release_event(self, event: Any) -> None:
        """*event* (from ``record_event``) is no longer used.  By default it goes with its
        last reference."""
