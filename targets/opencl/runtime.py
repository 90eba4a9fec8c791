"""The OpenCL runtime (pyopencl): one device's context and queues, memory, programs,
kernels, launches and events, as the runtime contract (``numba_gpux.interface.Runtime``)
asks.  Devices are found in ``drivers.py``; a kernel's launches go through
``launch.py``.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import threading
import warnings
import weakref

import numpy as np

from numba_gpux.interface import Runtime

from .launch import launcher

__all__ = ["OpenCLRuntime", "spirv_structure_problem", "quiet_build"]

#: runtimes whose context this process made: a child forked after that cannot use them
_started: weakref.WeakSet = weakref.WeakSet()


_quiet_lock = threading.Lock()


@contextlib.contextmanager
def quiet_build():
    """Around a program build: pyopencl's warning that the driver's log is not empty is
    not shown (a failed build raises with the log).  ``warnings.catch_warnings`` swaps the
    process's filters, so two threads' blocks overlapping would let one build's warning
    through and could leave the filter behind for the whole process: builds take turns."""
    import pyopencl as cl

    with _quiet_lock, warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        yield


def _complete(event) -> bool:
    """Whether the pyopencl *event* has completed (its status, read without waiting)."""
    import pyopencl as cl

    return event.command_execution_status == cl.command_execution_status.COMPLETE


def _after_fork_in_child() -> None:
    """A forked child has a copy of its parent's OpenCL objects but not the driver's
    threads, so any command on them waits forever (Intel's CPU driver): every runtime
    the parent started refuses to be used instead (``_check_fork``), and launches
    leave their fast path (``_multi``) for ``_q``, which checks."""
    for rt in list(_started):
        rt._forked = True
        rt._multi = True
        rt._pool = {}  # never released here: the release may wait for the driver too
        rt._pool_bytes = 0
    _callbacks_pending.clear()  # the parent's events: exit must not wait for them


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


class OpenCLRuntime(Runtime):
    """One device's context and default in-order queue."""

    #: clSetKernelArg takes a scalar argument's bytes
    packed_scalars = True

    def __init__(self, cl_device):
        self.cl_device = cl_device
        self._ctx = None
        self._queue = None
        self._lock = threading.Lock()
        #: the last command launched on each queue, once several are in use (see _order)
        self._last: dict = {}
        self._multi = False
        #: buffers freed while one queue was in use, by size, kept for reuse (``free``)
        self._pool: dict = {}
        self._pool_bytes = 0
        self._pool_cap: int | None = None
        #: the event of the last kernel launched since the last completed wait, else
        #: False: a wait may then be long, so it goes through numba_gpux.waiting (Ctrl-C
        #: is handled) unless that event has completed (``_settled``); else it is direct
        self.busy = False
        #: this process was forked after the runtime started (see _after_fork_in_child)
        self._forked = False

    def _init(self):
        import pyopencl as cl

        with self._lock:
            if self._ctx is None:
                self._ctx = cl.Context([self.cl_device])
                self._queue = cl.CommandQueue(self._ctx)
                _started.add(self)

    def _check_fork(self) -> None:
        if self._forked:
            from numba_gpux.errors import DriverError

            raise DriverError(
                f"OpenCL initialized before forking: this process was forked after its "
                f"parent started {self.cl_device.name.strip()!r}, and a child cannot use "
                f"its parent's OpenCL context (the driver's threads are not in the child; "
                f"its commands would wait forever). Start worker processes with the "
                f"'spawn' or 'forkserver' method, or use the device only in the children")

    def start(self) -> None:
        self.context  # noqa: B018 - made on first use

    @property
    def context(self):
        if self._ctx is None or self._forked:
            self._check_fork()
            self._init()
        return self._ctx

    @property
    def queue(self):
        if self._queue is None or self._forked:
            self._check_fork()
            self._init()
        return self._queue

    def _q(self, queue):
        if self._forked:
            self._check_fork()
        queue = getattr(queue, "gpux_queue", queue)  # a numba_gpux.cuda stream
        if queue is None or queue == 0:  # 0: numba.cuda's name for the default stream
            return self.queue
        return queue

    def _order(self, q):
        """Events *q* must wait for, giving CUDA's legacy default-stream ordering
        (numba.cuda programs rely on it): work on the default queue waits for the last
        command of every other queue, work on another queue for the default queue's.
        OpenCL itself orders nothing between queues (PoCL runs them concurrently).
        Nothing is tracked until a second queue is used (the common, fast case)."""
        if not self._multi:
            if q is self._queue or q is None:
                return None
            # first use of another queue: from now on, track the last command of each
            import pyopencl as cl

            self._multi = True
            self._last[self._queue] = cl.enqueue_marker(self._queue)
            self.release_pool()  # buffers are reused only while one queue is in use
        last = self._last
        if q is self._queue:
            evs = [e for qq, e in last.items() if qq is not q]
        else:
            e = last.get(self._queue)
            evs = [e] if e is not None else []
        return evs or None

    # -- memory ---------------------------------------------------------------
    #: the most bytes of freed buffers kept for reuse (besides an eighth of the device's
    #: memory, whichever is less)
    POOL_BYTES = 256 << 20
    #: buffers smaller than this are freed at once (they cost little to make again)
    POOL_MIN_BYTES = 64 << 10
    #: new buffers of at most this many bytes start zeroed: CPU drivers carve them out of
    #: the heap (Intel's hands out freed memory), where CUDA's fresh memory is zero in
    #: practice, and numba.cuda programs that forget to clear a lock or a counter rely
    #: on that (a spin lock on garbage never opens).  Larger ones come from fresh pages.
    ZERO_NEW_BYTES = 4096

    def alloc(self, nbytes: int):
        """A buffer of *nbytes*: one freed before, of that size, while one is kept (a
        new buffer's pages are touched for the first time by whatever writes it: 16 MiB
        of them cost several milliseconds on a CPU device, each time), else a new one."""
        import pyopencl as cl

        nbytes = int(nbytes)
        pool = self._pool
        if pool:
            kept = pool.get(nbytes)
            if kept:
                self._pool_bytes -= nbytes
                return kept.pop()
        if 0 < nbytes <= self.ZERO_NEW_BYTES:  # (copied at creation: under a microsecond)
            return cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                             hostbuf=_ZEROS[:nbytes])
        try:
            return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)
        except cl.Error:
            if not pool:
                raise
            self.release_pool()  # the driver's memory may be in the pool: give it back
            return cl.Buffer(self.context, cl.mem_flags.READ_WRITE, nbytes)

    def _keepable(self, handle) -> bool:
        """Whether the freed buffer *handle* may back a later allocation of its size: one
        queue in use (commands of one in-order queue cannot overlap a later user's), a
        size worth keeping, and memory of the driver's own (not a host array's)."""
        import pyopencl as cl

        return (not self._multi and handle.size >= self.POOL_MIN_BYTES
                and not handle.get_info(cl.mem_info.FLAGS) & cl.mem_flags.USE_HOST_PTR)

    def free(self, handle) -> None:
        """Keep the buffer for an allocation of its size (:meth:`_keepable`), else release
        it (in a forked child, neither: the parent's buffers are left alone)."""
        if self._forked:
            return
        try:
            if self._keepable(handle):
                nbytes = handle.size
                if self._pool_cap is None:
                    self._pool_cap = min(self.POOL_BYTES,
                                         int(self.cl_device.global_mem_size) // 8)
                if self._pool_bytes + nbytes <= self._pool_cap:
                    self._pool.setdefault(nbytes, []).append(handle)
                    self._pool_bytes += nbytes
                    return
            handle.release()
        except Exception:
            pass

    def reusable(self, handle, nbytes: int) -> bool:
        """A buffer :meth:`free` would keep, of exactly *nbytes*: a freed buffer whose
        release is deferred (numba.cuda's batched frees hold ten) then backs the next
        allocation of its size instead of a new buffer whose pages the driver faults in
        again."""
        if self._forked:
            return False
        try:
            # (the size first: smaller buffers are never kept, and asking the driver
            # a buffer's size costs more than the rest of a small allocation)
            return (nbytes >= self.POOL_MIN_BYTES and handle.size == nbytes
                    and self._keepable(handle))
        except Exception:
            return False

    def release_pool(self) -> None:
        """Release every buffer kept for reuse."""
        pool = self._pool
        if not pool:
            return
        kept = [b for bufs in pool.values() for b in bufs]
        pool.clear()
        self._pool_bytes = 0
        for b in kept:
            try:
                b.release()
            except Exception:
                pass

    def write(self, handle, offset: int, host: np.ndarray, queue=None) -> None:
        import pyopencl as cl

        q = self._q(queue)
        if not self.busy or self._settled(q):
            cl.enqueue_copy(q, handle, host, dst_offset=int(offset), is_blocking=True,
                            wait_for=self._order(q))
            return
        # enqueued here, waited for through wait_blocking (Ctrl-C); the event keeps *host*
        self._wait(q, cl.enqueue_copy(q, handle, host, dst_offset=int(offset),
                                      is_blocking=False, wait_for=self._order(q)))

    def read(self, host: np.ndarray, handle, offset: int, queue=None) -> None:
        import pyopencl as cl

        q = self._q(queue)
        if not self.busy or self._settled(q):
            cl.enqueue_copy(q, host, handle, src_offset=int(offset), is_blocking=True,
                            wait_for=self._order(q))
            return
        self._wait(q, cl.enqueue_copy(q, host, handle, src_offset=int(offset),
                                      is_blocking=False, wait_for=self._order(q)))

    def memset(self, handle, offset: int, byte: int, nbytes: int, queue=None) -> None:
        """clEnqueueFillBuffer of one byte; on the default queue, waited for."""
        import pyopencl as cl

        q = self._q(queue)
        settled = q is self._queue and (not self.busy or self._settled(q))
        ev = cl.enqueue_fill_buffer(q, handle, np.uint8(int(byte) & 0xFF), int(offset),
                                   int(nbytes), wait_for=self._order(q))
        if self._multi:
            self._last[q] = ev
        if q is self._queue:
            if settled:
                ev.wait()
            else:
                self._wait(q, ev)

    # -- host memory the device uses --------------------------------------------
    def shares_host_memory(self) -> bool:
        """Whether a buffer made over host memory (CL_MEM_USE_HOST_PTR) is that memory
        itself, so that kernels and the host see each other's writes without a copy or
        a map: the device says it shares the host's memory (CL_DEVICE_HOST_UNIFIED_MEMORY),
        and a check on one page confirms it both ways (asked once per runtime)."""
        got = getattr(self, "_shares_host", None)
        if got is None:
            got = self._shares_host = self._probe_shared_host_memory()
        return got

    def _probe_shared_host_memory(self) -> bool:
        import mmap

        import pyopencl as cl

        try:
            if not self.cl_device.host_unified_memory:
                return False
            page = mmap.mmap(-1, 4096)
            host = np.frombuffer(page, np.uint8)
            buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                            hostbuf=host)
            try:
                q = cl.CommandQueue(self.context)
                cl.enqueue_fill_buffer(q, buf, np.uint8(0x5A), 0, 4096).wait()
                seen_by_host = bool((host == 0x5A).all())
                host[:] = 0xA5
                back = np.empty(4096, np.uint8)
                cl.enqueue_copy(q, back, buf, is_blocking=True)
                return seen_by_host and bool((back == 0xA5).all())
            finally:
                buf.release()
                del host
        except cl.Error:
            return False

    def host_register(self, address: int, nbytes: int, mapped: bool = False) -> tuple:
        """OpenCL has no page-locking of host memory (transfers read and write it as they
        are); *mapped* gives a CL_MEM_USE_HOST_PTR buffer over the memory, on a device
        where such a buffer is the host memory itself (:meth:`shares_host_memory`); on
        another device a mapping would be a copy kept in step only by map and unmap
        calls, which numba.cuda code never makes: NotImplementedError."""
        import ctypes

        import pyopencl as cl

        if not mapped:
            return None, None
        if not self.shares_host_memory():
            raise NotImplementedError(
                f"OpenCL device {self.cl_device.name!r} does not share the host's memory "
                f"(CL_DEVICE_HOST_UNIFIED_MEMORY), so its kernels cannot use mapped host "
                f"memory; copy arrays to the device instead")
        view = (ctypes.c_ubyte * max(int(nbytes), 1)).from_address(int(address))
        buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                        hostbuf=view)
        return None, buf  # the buffer is released with its last user (pyopencl)

    def host_unregister(self, token) -> None:
        """Nothing to undo: OpenCL pins nothing, and a mapping's buffer goes with its
        last user."""

    def alloc_managed(self, nbytes: int, attach_global: bool = True) -> tuple:
        """Page-aligned host memory with a buffer over it (:meth:`host_register`): on a
        device that shares the host's memory both address the same bytes, as CUDA's
        managed memory.  *attach_global* changes nothing (one memory, no migration)."""
        import mmap

        pages = mmap.mmap(-1, max(int(nbytes), 1))
        address = np.frombuffer(pages, np.uint8).ctypes.data
        _, buf = self.host_register(address, nbytes, mapped=True)
        return buf, address, pages

    def _settled(self, q) -> bool:
        """Whether the kernels launched on *q* have completed, without waiting (one queue
        in use): the last one's event (``busy``) says so.  The direct blocking call it
        allows then costs no hand-over to a helper thread (tens of microseconds).  No
        marker is enqueued to ask: on Intel's CPU runtime a read enqueued after a marker
        that follows a kernel starts about 150 us after the kernel ends (a 4M reduce's
        read: 330 us against 175 us)."""
        if self._multi or not _complete(self.busy):
            return False
        if q is self._queue:
            self.busy = False
        return True

    def _wait(self, q, event) -> None:
        """Wait for *event* through numba_gpux.waiting (Ctrl-C raises at once; an event
        already complete is not handed over); once it has returned on the default queue
        with one queue in use, nothing is pending."""
        from numba_gpux.waiting import wait_blocking

        wait_blocking(event.wait, lambda: _complete(event))
        if q is self._queue and not self._multi:
            self.busy = False

    # -- code -----------------------------------------------------------------
    def load(self, artifact):
        """The built program of a SPIR-V artifact.  The words are checked first (Intel's
        CPU driver ends the process, exit status 15, on SPIR-V whose last instruction
        runs past the end); a build the driver refuses raises with the driver's log."""
        import pyopencl as cl

        from numba_gpux.errors import InternalCompilerError

        if artifact.binary is None:
            raise ValueError(f"OpenCL cannot load a {artifact.kind} artifact without a binary")
        problem = spirv_structure_problem(artifact.binary)
        if problem:
            raise InternalCompilerError(
                "load", f"the SPIR-V of {_kernels_of(artifact)} is malformed ({problem}); "
                        f"it was not handed to the OpenCL driver")
        with quiet_build():
            prg = None
            try:
                prg = cl.Program(self.context, artifact.binary)
                return prg.build()
            except cl.Error as e:  # the driver rejected our SPIR-V
                log = self._build_log(prg) or str(e)
                raise InternalCompilerError(
                    "load", f"the OpenCL driver ({self.cl_device.platform.name}, "
                            f"{self.cl_device.name}) could not build the program of "
                            f"{_kernels_of(artifact)}: {_error_name(e)}\n"
                            f"--- driver build log ---\n{log}\n--- end of log ---",
                    artifact.text) from None

    def _build_log(self, prg) -> str:
        """The driver's build log of *prg* for this device ('' if it has none)."""
        import pyopencl as cl

        if prg is None:
            return ""
        try:
            log = prg.get_build_info(self.cl_device, cl.program_build_info.LOG)
        except cl.Error:
            return ""
        return (log or "").strip()

    # the disk cache keeps built programs of cache=True kernels (numba_gpux/cache.py):
    # the driver's own binary, tied to the device and driver that built it
    def binary_identity(self) -> str:
        """The device, driver and pyopencl versions; for a CPU device also the host
        processor's model and features and the driver settings read from the
        environment: a CPU driver's binary is native code for the instruction set it
        chose (AVX-512 on one machine, AVX2 on another, or what
        ``CL_CONFIG_CPU_TARGET_ARCH`` asks), and virtual machines of different
        processor generations can report the same device name ("AMD EPYC"), so a
        cache directory they share must not hand one's code to the other."""
        import pyopencl as cl

        d = self.cl_device
        ident = (f"opencl|{d.platform.name}|{d.platform.version}|{d.name}|{d.vendor}|"
                 f"{d.version}|{d.driver_version}|pyopencl {cl.VERSION_TEXT}")
        if d.type & cl.device_type.CPU:
            ident += "|" + _host_cpu_identity()
        return ident

    def program_binary(self, program) -> bytes | None:
        import pyopencl as cl

        bins = program.get_info(cl.program_info.BINARIES)
        return bytes(bins[0]) if bins and bins[0] else None

    def load_binary(self, data: bytes):
        import pyopencl as cl

        with quiet_build():
            return cl.Program(self.context, [self.cl_device], [data]).build()

    def kernel(self, program, name: str):
        import pyopencl as cl

        return cl.Kernel(program, name)

    def kernel_attributes(self, kernel) -> dict:
        """What the driver reports of a built kernel (clGetKernelWorkGroupInfo): the
        largest work-group it launches with, its local (shared) memory and its
        private memory per work-item, in bytes.  OpenCL reports no register count."""
        import pyopencl as cl

        info = cl.kernel_work_group_info
        ask = lambda what: int(kernel.get_work_group_info(what, self.cl_device))  # noqa: E731
        return {"max_threads_per_block": ask(info.WORK_GROUP_SIZE),
                "shared_mem_per_block": ask(info.LOCAL_MEM_SIZE),
                "local_mem_per_thread": ask(info.PRIVATE_MEM_SIZE)}

    def cooperative_groups(self, kernel, block_threads: int, shared_bytes: int) -> int:
        """The work-groups of a kernel that synchronizes its grid the device surely runs
        at once.  OpenCL promises no forward progress between work-groups, so only
        what the device reports is counted: one work-group per compute unit, where one
        such work-group fits (the kernel's work-group size limit and local memory).
        Conservative on GPUs, which often hold several per unit; exact on CPU
        drivers, whose compute units are the threads of the driver's pool, each
        running one work-group until it ends (a work-group that waits in a grid
        barrier keeps its thread)."""
        import pyopencl as cl

        info = cl.kernel_work_group_info
        if block_threads > int(kernel.get_work_group_info(info.WORK_GROUP_SIZE, self.cl_device)):
            return 0
        local = int(kernel.get_work_group_info(info.LOCAL_MEM_SIZE, self.cl_device))
        if local + shared_bytes > int(self.cl_device.local_mem_size):
            return 0
        return int(self.cl_device.max_compute_units)

    def prepare(self, kernel, params):
        """The kernel's launcher (``launch.launcher``: sets the arguments that changed),
        also kept on the kernel so that :meth:`launch` goes through it."""
        fn = launcher(self, kernel, params)
        kernel._gpux_launch = fn
        return fn

    def launch(self, kernel, griddim, blockdim, args, shared_bytes, queue) -> None:
        kernel._gpux_launch(griddim, blockdim, args, shared_bytes, queue)

    #: CUDA device attributes (``CU_DEVICE_ATTRIBUTE_<name>``) that an OpenCL device's
    #: info answers: the pyopencl attribute, and the factor to CUDA's unit
    _CUDA_ATTRIBUTES = {
        "CLOCK_RATE": ("max_clock_frequency", 1000),  # MHz -> kHz
        "L2_CACHE_SIZE": ("global_mem_cache_size", 1),
        "ECC_ENABLED": ("error_correction_support", 1),
        "INTEGRATED": ("host_unified_memory", 1),
    }
    _UNREPORTED_AS_ZERO = frozenset(("CLOCK_RATE", "L2_CACHE_SIZE"))

    def device_attribute(self, name: str) -> int | None:
        """The CUDA device attributes an OpenCL device's info answers (the clock rate in
        kHz, the last-level cache's size, ECC, whether it shares the host's memory)."""
        got = self._CUDA_ATTRIBUTES.get(name)
        if got is None:
            return None
        try:
            value = int(getattr(self.cl_device, got[0])) * got[1]
        except Exception:  # noqa: BLE001 - a driver that does not report it
            return None
        # (a clock or cache size of 0 is one the driver does not know)
        return None if value == 0 and name in self._UNREPORTED_AS_ZERO else value

    def synchronize(self, queue=None) -> None:
        """Wait for *queue*'s work; for the default queue, for the work of every queue
        used so far (as the contract and CUDA's context-wide synchronize)."""
        import pyopencl as cl

        q = self._q(queue)
        if q is self._queue and self._multi:
            for other in [qq for qq in self._last if qq is not q]:
                if self.busy:
                    self._wait(other, cl.enqueue_marker(other))
                else:
                    other.finish()
        if self.busy and not self._settled(q):
            # a marker completes when all work enqueued before it has (in-order and
            # out-of-order queues alike)
            self._wait(q, cl.enqueue_marker(q))
        else:
            q.finish()

    def idle(self) -> bool:
        """One queue in use, and nothing launched on it or its last launch complete."""
        return not self._multi and (not self.busy or self._settled(self._queue))

    # -- queues and events ----------------------------------------------------
    def new_queue(self):
        """Another in-order queue on this device's context (profiling enabled, for events)."""
        import pyopencl as cl

        return cl.CommandQueue(self.context,
                               properties=cl.command_queue_properties.PROFILING_ENABLE)

    def adopt_queue(self, handle):
        """Another library's ``pyopencl.CommandQueue`` on this device's context.  Only
        the queue object: a raw ``cl_command_queue`` address cannot be checked, and the
        driver dereferences a wrong one (the process would crash)."""
        import pyopencl as cl

        from numba_gpux.errors import GpuxUserError

        if not isinstance(handle, cl.CommandQueue):
            raise GpuxUserError(
                f"external_stream on OpenCL takes a pyopencl.CommandQueue, not "
                f"{type(handle).__name__}: a raw queue address cannot be checked")
        if handle.context.int_ptr != self.context.int_ptr:
            raise GpuxUserError("external_stream: the queue belongs to another OpenCL "
                                "context than this device's")
        return handle

    def record_event(self, queue=None):
        """A marker after everything enqueued so far on *queue*."""
        import pyopencl as cl

        q = self._q(queue)
        ev = _Event(cl.enqueue_marker(q))
        if not q.properties & cl.command_queue_properties.PROFILING_ENABLE:
            # no device timestamps on this queue: take the host's clock on completion
            _callbacks_pending.add(ev)
            ev.event.set_callback(cl.command_execution_status.COMPLETE, ev.completed)
        return ev

    def event_query(self, event) -> bool:
        return _complete(event.event)

    def event_synchronize(self, event) -> None:
        from numba_gpux.waiting import wait_blocking

        ev = event.event
        wait_blocking(ev.wait, lambda: _complete(ev))

    def event_wait(self, event, queue=None) -> None:
        """Work enqueued on *queue* after this call waits for *event*."""
        import pyopencl as cl

        cl.enqueue_barrier(self._q(queue), wait_for=[event.event])

    def event_elapsed_ms(self, start, end) -> float:
        start.event.wait()
        end.event.wait()
        return (end.timestamp_ns() - start.timestamp_ns()) / 1e6


def _kernels_of(artifact) -> str:
    names = list(artifact.kernels or ())
    return ("kernel " if len(names) == 1 else "kernels ") + ", ".join(names) if names \
        else "a module without kernels"


def _error_name(e) -> str:
    """The OpenCL error's name and the call that returned it (pyopencl's message repeats
    the call and appends the log, which the error shows on its own)."""
    import pyopencl as cl

    what = getattr(e, "what", None)
    try:
        code = what.code()
        return f"{what.routine()} returned {cl.status_code.to_string(code, '%d')} ({code})"
    except Exception:  # noqa: BLE001 - no error record: its first line
        return str(e).splitlines()[0] if str(e) else type(e).__name__


def spirv_structure_problem(binary: bytes) -> str | None:
    """What is wrong with the word structure of the SPIR-V module *binary*, or None.

    The checks a driver's reader makes before anything else: a whole number of 32-bit
    words, the magic number, a five-word header, and instructions whose word counts
    (the high 16 bits of each first word) are non-zero and end exactly at the end of
    the module.  A few microseconds per kilobyte; what it finds would otherwise reach
    the driver, and Intel's CPU driver ends the process on a module cut short."""
    from .spirv_ids import module_words

    if len(binary) % 4:
        return f"{len(binary)} bytes is not a whole number of 32-bit words"
    words = module_words(binary)
    if words is None or len(words) < 5:
        return "no SPIR-V magic number and header"
    i, n = 5, len(words)
    while i < n:
        count = words[i] >> 16
        if count == 0:
            return f"the instruction at word {i} has a word count of 0"
        if i + count > n:
            return (f"the instruction at word {i} (opcode {words[i] & 0xFFFF}) has "
                    f"{count} words, past the end of the module ({n} words)")
        i += count
    return None


#: events whose completion callback has not run yet (see _wait_for_callbacks)
_callbacks_pending: set = set()


@atexit.register
def _wait_for_callbacks() -> None:
    """Exit waits for the completion callbacks still to run.

    pyopencl runs an event's callback on a thread of its own, which takes the GIL to
    call it; a thread that asks for the GIL while the interpreter finalizes is ended
    inside C++ code and the process aborts ("terminate called without an active
    exception", seen in about half of the runs that exit soon after a kernel whose
    event had a callback, with or without an interrupted wait).  So exit waits for
    each such event (a running kernel cannot be cancelled; an interrupted wait's
    command is waited for the same way by numba_gpux.waiting), then, for a few
    seconds at most, for the callbacks, and lets the last one return."""
    import time

    if not _callbacks_pending:
        return
    from numba_gpux.waiting import wait_for_abandoned

    wait_for_abandoned()  # first: it says what exit is waiting for
    for ev in list(_callbacks_pending):
        try:
            ev.event.wait()
        except Exception:  # noqa: BLE001 - a failed command completes too
            pass
    deadline = time.monotonic() + 5.0
    while _callbacks_pending and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(0.05)  # the last callback thread: from our function back out of pyopencl


class _Event:
    """A marker event; its time is the device's profiling clock where the queue
    has one, else the host's clock when the driver reported completion."""

    __slots__ = ("event", "_host_ns")

    def __init__(self, event):
        self.event = event
        self._host_ns = None

    def completed(self, status) -> None:
        import time

        self._host_ns = time.perf_counter_ns()
        _callbacks_pending.discard(self)

    def timestamp_ns(self) -> int:
        if self._host_ns is None:
            try:
                return int(self.event.profile.end)
            except Exception:  # no profiling info and the callback has not run yet
                import time

                for _ in range(1000):
                    if self._host_ns is not None:
                        break
                    time.sleep(0.001)
                if self._host_ns is None:
                    self._host_ns = time.perf_counter_ns()
        return self._host_ns


#: the bytes a new small buffer is made from (``OpenCLRuntime.ZERO_NEW_BYTES``)
_ZEROS = memoryview(bytes(OpenCLRuntime.ZERO_NEW_BYTES))

#: environment variables whose names start so configure an OpenCL CPU driver (Intel's
#: CL_CONFIG_CPU_TARGET_ARCH, PoCL's POCL_WORK_GROUP_METHOD, ...): all of them, as a
#: program built under one value may not suit another (one that does not matter, such
#: as POCL_DEBUG, costs a rebuild)
_CPU_DRIVER_ENV = ("CL_CONFIG_", "POCL_")


def _host_cpu_identity() -> str:
    """The host processor as code generation sees it (LLVM's name and features) and the
    CPU drivers' settings in the environment (read at each call: a driver reads them
    when the process loads it, so a change matters to the next process)."""
    env = ",".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                   if k.startswith(_CPU_DRIVER_ENV))
    return f"host {_host_cpu()} env {env}"


@functools.lru_cache(maxsize=1)
def _host_cpu() -> str:
    import llvmlite.binding as llvm

    try:
        features = llvm.get_host_cpu_features().flatten()
    except RuntimeError:  # (LLVM cannot tell on this host)
        features = ""
    return f"{llvm.get_host_cpu_name()} {features}"
