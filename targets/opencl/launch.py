"""An OpenCL kernel's launches: set the arguments that changed, enqueue the kernel."""

from __future__ import annotations

import threading

import numpy as np

__all__ = ["_launcher"]


_PACK = {("i", 1): "b", ("i", 2): "h", ("i", 4): "i", ("i", 8): "q",
         ("u", 1): "B", ("u", 2): "H", ("u", 4): "I", ("u", 8): "Q",
         ("f", 2): "e", ("f", 4): "f", ("f", 8): "d", ("b", 1): "?"}


class _Unset:
    """The previous value of an argument not set yet: unequal to everything."""

    def __eq__(self, other):
        return False

    def __ne__(self, other):
        return True

    __hash__ = object.__hash__


_UNSET = _Unset()
_launchers: dict = {}


def _launcher(rt, kernel, params, dynamic):
    """A launch function for one kernel: ``launch(griddim, blockdim, flat_args,
    shared_bytes, queue)``.

    An OpenCL kernel object keeps its argument values between enqueues, so only
    the arguments that differ from the previous launch of this kernel object are
    set again (the rest of a launch is one ``clEnqueueNDRangeKernel``).  Buffers
    are compared by identity (the last ones are held, so an identity is never
    reused); integers by identity, then value; floats by identity, then value
    unless zero (0.0 and -0.0 are equal but differ as arguments) -- anything
    else is set.  The global size is
    computed once per (griddim, blockdim) pair of objects.  A lock per kernel
    keeps its arguments and the enqueue together across threads.  The queue
    handling is :meth:`OpenCLRuntime._order`'s (nothing tracked until a second
    queue is used).
    """
    import struct

    import pyopencl as cl

    n = len(params)
    kinds, packers = [], []
    for kind, t in params:
        if kind == "buffer":
            kinds.append("b")
            packers.append(None)
            continue
        dt = np.dtype(np.int64 if kind == "i64" else np.int8 if kind == "i8" else t)
        kinds.append("f" if dt.kind == "f" else "i")
        packers.append(struct.Struct("<" + _PACK[dt.kind, dt.itemsize]).pack)
    make = _launchers.get((tuple(kinds), dynamic))
    if make is None:
        make = _launchers[tuple(kinds), dynamic] = _generate(kinds, dynamic)
    return make(kernel, rt, rt.queue, threading.Lock(), cl.enqueue_nd_range_kernel,
                kernel.set_arg, packers, cl.LocalMemory, struct.Struct("<q").pack, _UNSET)


def _generate(kinds, dynamic):
    n = len(kinds)
    locked = bool(n) or dynamic  # a kernel without arguments has no state to guard
    src = ["def make(kernel, rt, dq, lock, enqueue, set_arg, packers, LocalMemory, pack_q, "
           "UNSET):",
           "    c = (None, None, None)",  # (griddim, blockdim, global size): one atomic store
           "    acquire, release = lock.acquire, lock.release",
           "    lsb = -1"]
    src += [f"    l{i} = UNSET" for i in range(n)]
    src += [f"    p{i} = packers[{i}]" for i, k in enumerate(kinds) if k != "b"]
    src += ["    def launch(griddim, blockdim, args, shared_bytes, queue):",
            f"        nonlocal {', '.join(['c', 'lsb'] + [f'l{i}' for i in range(n)])}"]
    if n:
        src.append(f"        {', '.join(f'a{i}' for i in range(n))}, = args")
    src += ["        g = c",
            "        if g[0] is not griddim or g[1] is not blockdim:",
            "            g = c = (griddim, blockdim, (griddim[0] * blockdim[0], "
            "griddim[1] * blockdim[1], griddim[2] * blockdim[2]))",
            "        if queue is None and not rt._multi:",
            "            q = dq",
            "            w = track = None",
            "        else:",
            "            q = rt._q(queue)",
            "            track = rt._multi or q is not dq",
            "            w = rt._order(q) if track else None"]
    ind = "        "
    if locked:
        src += ["        acquire()", "        try:"]
        ind = "            "
    for i, k in enumerate(kinds):
        a, l_ = f"a{i}", f"l{i}"
        if k == "b":
            src += [f"{ind}if {a} is not {l_}:", f"{ind}    set_arg({i}, {a})"]
        elif k == "i":
            src += [f"{ind}if {a} is not {l_} and {a} != {l_}:",
                    f"{ind}    set_arg({i}, p{i}({a}))"]
        else:
            src += [f"{ind}if {a} is not {l_} and ({a} != {l_} or not {a}):",
                    f"{ind}    set_arg({i}, p{i}({a}))"]
        src.append(f"{ind}    {l_} = {a}")
    if dynamic:
        # a zero-sized __local argument is invalid; the kernel sees shared_bytes
        src += [f"{ind}if shared_bytes != lsb:",
                f"{ind}    set_arg({n}, LocalMemory(max(int(shared_bytes), 16)))",
                f"{ind}    set_arg({n + 1}, pack_q(int(shared_bytes)))",
                f"{ind}    lsb = shared_bytes"]
    src += [f"{ind}ev = enqueue(q, kernel, g[2], blockdim, None, w)",
            f"{ind}rt.busy = True",
            f"{ind}if track:",
            f"{ind}    rt._last[q] = ev"]
    if locked:
        src += ["        finally:", "            release()"]
    src.append("    return launch")
    env: dict = {}
    exec("\n".join(src), env)  # noqa: S102 - generated from parameter kinds only
    return env["make"]
