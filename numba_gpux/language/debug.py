"""Device-side errors: ``raise``, ``assert`` and out-of-bounds indexing in kernels.

Numba's MinimalCallConv returns a status code from every function; a user
exception is a code >= 1 that indexes a per-function table.  Device functions
propagate their callee's code unchanged, so per-function tables would collide.
:class:`GpuxCallConv` therefore numbers user exceptions process-wide
(:data:`EXCEPTIONS`), with the source location of the raising statement.

With ``debug=True`` the kernel entry wrapper takes one hidden global buffer
(:class:`ErrorBuffer`, int32[8]: flag, code, thread x y z, block x y z).  The
first work-item whose call returns an error claims slot 0 with a
compare-and-swap and records its code and indices; the launch path reads the
buffer after the launch and raises the Python exception, naming the kernel,
the source line and the thread and block.  Without ``debug`` the wrapper
ignores the status: no buffer, no atomics, no bounds checks.

A kernel that synchronizes its grid (language/cooperative.py) takes the same hidden
buffer, :data:`GRID_SLOTS` int32 longer: the grid barrier's arrival count,
generation and spin bound follow the error slots, and a barrier that does not
complete is recorded in the error slots as the status :data:`GRID_SYNC_FAILED`
(raised as :class:`GridSyncError`), with the thread and block that gave up.
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
from llvmlite import ir
from numba.core import callconv
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import Registry

from .intrinsics import call

__all__ = ["GpuxCallConv", "EXCEPTIONS", "ErrorBuffer", "emit_error_record",
           "ERROR_SLOTS", "typing_registry", "lowering_registry", "DeviceError",
           "GRID_SLOTS", "GRID_COUNT", "GRID_GENERATION", "GRID_SPINS", "GRID_SYNC_FAILED",
           "GridSyncError", "buffer_slots"]

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.debug")

#: int32 slots of the hidden error buffer
ERROR_SLOTS = 8
#: int32 slots after those of a kernel that synchronizes its grid: the barrier's
#: arrival count, its generation, the spin bound the launch writes, one unused
GRID_SLOTS = 4
GRID_COUNT, GRID_GENERATION, GRID_SPINS = ERROR_SLOTS, ERROR_SLOTS + 1, ERROR_SLOTS + 2
#: the status a grid barrier records when it gives up waiting (no exception's code:
#: those are >= 1, and Numba's own are -1 to -3)
GRID_SYNC_FAILED = -100
I32 = ir.IntType(32)


class DeviceError(Exception):
    """A status code from a kernel that names no known exception."""


class GridSyncError(DeviceError):
    """A grid synchronization of a kernel did not complete: some block never reached
    it (it returned before, or took a branch without it), so the blocks that waited
    gave up after their bound and the kernel's results are not to be trusted."""


class _ExceptionTable:
    """Process-wide user exception ids: id -> (class, args, (function, file, line))."""

    def __init__(self):
        self._by_id: dict[int, tuple] = {}
        self._by_key: dict[tuple, int] = {}
        self._lock = threading.Lock()

    def add(self, exc, exc_args, locinfo) -> int:
        key = (exc, repr(exc_args), locinfo)
        with self._lock:
            got = self._by_key.get(key)
            if got is None:
                got = len(self._by_id) + callconv.FIRST_USEREXC
                self._by_id[got] = (exc, exc_args, locinfo)
                self._by_key[key] = got
            return got

    def get(self, code: int):
        return self._by_id.get(code)

    def __len__(self):
        return len(self._by_id)


EXCEPTIONS = _ExceptionTable()


def _current_lowering_loc():
    """The source location Numba is lowering now (bounds checks pass none)."""
    from numba.core.lowering import BaseLower

    f = sys._getframe(2)
    while f is not None:
        obj = f.f_locals.get("self")
        if isinstance(obj, BaseLower):
            return getattr(obj, "loc", None), obj.fndesc.qualname
        f = f.f_back
    return None, None


class GpuxCallConv(callconv.MinimalCallConv):
    """MinimalCallConv with process-wide exception ids and source locations."""

    def return_user_exc(self, builder, exc, exc_args=None, loc=None, func_name=None):
        if exc is not None and not issubclass(exc, BaseException):
            raise TypeError(f"exc should be None or an exception class, got {exc!r}")
        low_name = None
        if loc is None:
            loc, low_name = _current_lowering_loc()
        locinfo = None
        if loc is not None:
            fname = loc._raw_function_name() or func_name or low_name
            locinfo = (fname, loc.filename, loc.line)
        code = EXCEPTIONS.add(exc, exc_args, locinfo)
        self._return_errcode_raw(builder, callconv._const_int(code))


def emit_error_record(builder: ir.IRBuilder, buf, status) -> None:
    """In a debug kernel's wrapper: record a failing *status* in the error buffer *buf*
    (a global ``ptr addrspace(1)``).  The first failing work-item wins."""
    with builder.if_then(status.is_error, likely=False):
        code = status.code
        old = builder.cmpxchg(buf, ir.Constant(I32, 0), ir.Constant(I32, 1), "monotonic",
                              "monotonic")
        won = builder.icmp_unsigned("==", builder.extract_value(old, 0), ir.Constant(I32, 0))
        with builder.if_then(won):
            vals = [code]
            for intr in ("__gpux_thread_idx", "__gpux_block_idx"):
                for d in range(3):
                    vals.append(builder.trunc(call(builder, intr, ir.Constant(I32, d)), I32))
            for i, v in enumerate(vals, start=1):
                ptr = builder.gep(buf, [ir.Constant(I32, i)], inbounds=True, source_etype=I32)
                builder.store(v, ptr)


def _message(kernel: str, code: int, slots) -> BaseException:
    tid = tuple(int(x) for x in slots[2:5])
    bid = tuple(int(x) for x in slots[5:8])
    where = f"thread_idx={tid}, block_idx={bid}"
    if code == GRID_SYNC_FAILED:
        spins = int(slots[GRID_SPINS]) if len(slots) > GRID_SPINS else 0
        return GridSyncError(
            f"kernel {kernel!r}: a grid synchronization (this_grid().sync()) did not "
            f"complete: block {bid} waited {spins} times for blocks that never arrived "
            f"({where}); every block must reach every grid sync (no block may return "
            f"before it or skip it in a branch).  The kernel's results are not valid.  "
            f"A block that only needs longer may raise the bound with "
            f"NUMBA_GPUX_GRID_SYNC_SPINS")
    info = EXCEPTIONS.get(code)
    if info is None:
        if code == -1:
            return DeviceError(f"kernel {kernel!r} failed in {where} (a Python-level error)")
        return DeviceError(f"kernel {kernel!r} failed with status {code} in {where}")
    exc, args, loc = info
    exc = exc or DeviceError
    # numba.cuda's form first ("In function 'f', file F, line N, tid=[x, y, z]
    # ctaid=[x, y, z]: message"), so code that parses it keeps working; then the
    # kernel and the work-item in this project's words
    if loc is not None:
        func, filename, line = loc
        prefix = f"In function {func!r}, file {os.path.abspath(filename)}, line {line}, "
    else:
        prefix = ""
    prefix += f"tid={list(tid)} ctaid={list(bid)}"
    detail = f"in kernel {kernel!r}, {where}"
    args = tuple(args or ())
    if args and isinstance(args[0], str):
        args = (f"{prefix}: {args[0]} [{detail}]",) + args[1:]
    elif not args:
        args = (f"{prefix} [{detail}]",)
    else:
        args = (prefix,) + args + (detail,)
    try:
        return exc(*args)
    except Exception:
        return DeviceError(f"{exc.__name__}{args!r}")


def buffer_slots(grid_sync: bool) -> int:
    """The int32 slots of the hidden buffer of a debug kernel or of one that
    synchronizes its grid (*grid_sync*)."""
    return ERROR_SLOTS + (GRID_SLOTS if grid_sync else 0)


class ErrorBuffer:
    """The hidden per-launch buffer of a debug kernel, or of a kernel that synchronizes
    its grid (*grid_sync*), on one device.

    *array* is a device array of :func:`buffer_slots` int32 on that device, made by
    the launch path (the runtime layer above owns device memory)."""

    __slots__ = ("array", "zeros", "kernel", "grid_sync", "translate")

    def __init__(self, array, kernel_name: str, grid_sync: bool = False, translate=None):
        self.zeros = np.zeros(buffer_slots(grid_sync), np.int32)
        self.array = array
        self.kernel = kernel_name
        self.grid_sync = grid_sync
        #: None, or ``translate(exc)`` -> the exception to raise in place of *exc*
        #: (a dialect's own classes and messages: GpuxFunction.device_exception)
        self.translate = translate

    def arm(self, queue=None):
        """Clear the buffer (and give a grid barrier its spin bound); returns the handle
        to pass as the hidden argument."""
        if self.grid_sync:
            from ..config import grid_sync_spins

            self.zeros[GRID_SPINS] = grid_sync_spins()
        self.array.copy_to_device(self.zeros)
        return self.array._alloc.handle

    def check(self) -> None:
        """After a launch: raise the exception the kernel reported, if any."""
        slots = self.array.copy_to_host()
        if slots[0]:
            exc = _message(self.kernel, int(slots[1]), slots)
            raise exc if self.translate is None else self.translate(exc)


def checked_launch(shim, cfg, flat_args) -> None:
    """The launch of a debug kernel (error buffer), of one that prints or of one that
    makes arrays (its heap): waits for the kernel, flushes its output to the host's
    stdout, raises its error (or the heap's exhaustion) if any."""
    from .printing import flush_device_output

    runtime = shim.device.runtime
    if shim.errors is not None or shim.heap is not None:
        flat_args = list(flat_args)
    if shim.errors is not None:
        flat_args.append(shim.errors.arm(cfg.queue))
    if shim.heap is not None:  # a kernel that makes arrays: its heap, last (heap.py)
        flat_args.append(shim.heap.arm(cfg.griddim, cfg.queue))
    if shim.prints:
        sys.stdout.flush()  # Python's buffered output first, then the kernel's
    # a kernel that synchronizes its grid: all its blocks must run at once (the launch
    # path checked the grid against the device's limit)
    launch = runtime.launch_cooperative if shim.grid_sync else runtime.launch
    launch(shim.kernel, cfg.griddim, cfg.blockdim, flat_args, cfg.shared_bytes, cfg.queue)
    runtime.synchronize(cfg.queue)
    if shim.prints:
        flush_device_output()
    if shim.errors is not None:
        shim.errors.check()
    if shim.heap is not None:
        shim.heap.check()
