"""An OpenCL kernel's launches: set the arguments that changed, enqueue the kernel.

The launch path hands the runtime the kernel's flat parameters, scalars already
packed into their bytes (``OpenCLRuntime.packed_scalars``), buffers as pyopencl
buffers.  An OpenCL kernel object keeps its argument values between enqueues, so
a launch sets only those that differ from the previous launch of the same kernel
object; with the same arguments a launch is one ``clEnqueueNDRangeKernel``.
"""

from __future__ import annotations

import threading
from itertools import compress
from operator import is_not

__all__ = ["launcher"]


class _Unset:
    """The previous value of an argument not set yet: unequal to everything."""

    def __eq__(self, other):
        return False

    def __ne__(self, other):
        return True

    __hash__ = object.__hash__


_UNSET = _Unset()


def launcher(rt, kernel, params):
    """``launch(griddim, blockdim, args, shared_bytes, queue)`` for one kernel object
    of the runtime *rt* with the flat parameters *params* (``interface.PARAM_KINDS``).

    The values of the previous launch are kept (so a buffer cannot be freed and its
    handle reused while it is compared); the whole list is compared in one step
    (identity first, element by element, in C), and only where it differs are the
    arguments compared one by one and the changed ones set.  Packed scalars compare
    by their bytes (0.0 and -0.0 differ, a NaN equals itself), buffers by identity
    (an equality test of two pyopencl buffers calls into Python).  A kernel whose
    code takes dynamic shared memory has two more parameters
    (``OpenCLTarget.finish_module``): a ``__local`` buffer and its size in bytes,
    set when the size changes.  The global size is computed once per (griddim,
    blockdim) pair of objects.  A lock per kernel keeps its arguments and the
    enqueue together across threads (a kernel without parameters needs none).  The
    queue handling is :meth:`OpenCLRuntime._order`'s: nothing is tracked until a
    second queue is used.
    """
    import pyopencl as cl

    enqueue = cl.enqueue_nd_range_kernel
    set_arg = kernel.set_arg
    # a packed scalar's bytes straight to clSetKernelArg: pyopencl's own typed invokers
    # do so (``_set_arg_buf``); its general ``set_arg`` first tries the value as a
    # memory object and a sampler, which costs about 10 us a scalar (a loop index
    # passed at each launch made every launch that much slower)
    set_bytes = getattr(kernel, "_set_arg_buf", None) or set_arg
    local_memory = cl.LocalMemory
    nparams = len(params)
    dynamic = kernel.num_args == nparams + 2
    buffers = tuple(kind == "buffer" for kind, _ in params)
    positions = range(nparams)
    last: list = [_UNSET] * nparams
    lock = threading.Lock()
    dq = rt.queue
    order, resolve = rt._order, rt._q
    sizes = (None, None, None)  # (griddim, blockdim, global size): one atomic store
    shared_set = -1

    def launch(griddim, blockdim, args, shared_bytes, queue) -> None:
        nonlocal sizes, shared_set
        s = sizes
        if s[0] is not griddim or s[1] is not blockdim:
            s = sizes = (griddim, blockdim, (griddim[0] * blockdim[0],
                                             griddim[1] * blockdim[1],
                                             griddim[2] * blockdim[2]))
        if queue is None and not rt._multi:
            q, wait, track = dq, None, False
        else:
            q = resolve(queue)
            track = rt._multi or q is not dq
            wait = order(q) if track else None
        if nparams or dynamic:
            with lock:
                # the parameters whose object changed, found without a Python-level
                # step per parameter (a kernel of ten arrays has forty); none at all, the
                # common case, is one list comparison (identity first, then value)
                for i in (compress(positions, map(is_not, args, last)) if args != last
                          else ()):
                    a = args[i]
                    if buffers[i]:
                        set_arg(i, a)
                        last[i] = a
                    elif a != last[i]:
                        set_bytes(i, a)
                        last[i] = a
                if dynamic and shared_bytes != shared_set:
                    # a zero-sized __local argument is invalid; the kernel sees shared_bytes
                    set_arg(nparams, local_memory(max(int(shared_bytes), 16)))
                    set_bytes(nparams + 1, int(shared_bytes).to_bytes(8, "little"))
                    shared_set = shared_bytes
                ev = enqueue(q, kernel, s[2], blockdim, None, wait)
        else:
            ev = enqueue(q, kernel, s[2], blockdim, None, wait)
        rt.busy = ev  # (OpenCLRuntime._settled asks it whether the queue's work is done)
        if track:
            rt._last[q] = ev

    return launch
