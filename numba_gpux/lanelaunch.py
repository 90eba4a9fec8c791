"""Launches with the grid's first two dimensions exchanged, for kernels whose memory
accesses run along dimension 1 (``lanes.py`` says which, and how the code changes).

A shim (``launch.Shim``) of such a kernel launches through :func:`exchange_launches`:
a launch whose blocks have 4 or more threads along dimension 1 runs the exchanged
code with the grid and the block exchanged (``LaunchFacts.lanes``), any other the code
as written; each is built when a launch first needs it.  Whether a device's kernels
are exchanged is the tuning hook ``launch.lanes_follow_memory`` (on by default for
CPU devices, whose drivers put dimension 0's work-items in neighbouring vector
lanes), read when a kernel's launch code is built.
"""

from __future__ import annotations

from . import hooks as _hooks
from .lanes import lanes_prefer_second_dim

__all__ = ["LANES_FOLLOW_MEMORY", "wants_exchange", "hook", "exchangeable",
           "exchange_launches"]

LANES_FOLLOW_MEMORY = _hooks.declare(
    "launch.lanes_follow_memory", bool,
    "Whether a kernel whose memory accesses run along grid dimension 1 (i, j = grid(2) "
    "into a[i, j]) launches, where its blocks have 4 or more threads along dimension 1, "
    "with dimensions 0 and 1 exchanged, so that the device's neighbouring lanes read "
    "neighbouring addresses (lanes.py).  Read when the kernel's launch code is built.")
# CPU drivers vectorize a work-group along dimension 0 (benchmarks/lanes.py: a 2-D axpy
# written i, j = grid(2) 2.5-3.4x faster exchanged).  GPUs: not measured, so off
_hooks.implement("launch.lanes_follow_memory", fn=lambda q: False, default=True)
_hooks.implement("launch.lanes_follow_memory", device_kind="cpu", fn=lambda q: True,
                 default=True)

#: the fewest threads per block along dimension 1 for which a launch is exchanged
MIN_LANES = 4


def _stated_text(dispatcher, argtypes: tuple, facts) -> str:
    """The kernel's neutral IR stating the launch's *facts* (an array's innermost stride
    as a constant, where the launch knows it)."""
    sym, text = dispatcher.kernel_ir(argtypes)
    return dispatcher._with_facts(sym, text, argtypes, facts._replace(lanes=False)) \
        if facts.strides else text


def wants_exchange(dispatcher, argtypes: tuple, device, art=None, facts=None) -> bool:
    """Whether launches of *dispatcher*'s code for *argtypes* on *device* may be
    exchanged: its accesses run along dimension 1 and it depends on no sub-group
    (``lanes.lanes_prefer_second_dim``), and the hook says so.  The launch path asks
    only for kernels it does not launch through its checked path (debug, print, arrays
    made in kernels, grid synchronization: those keep their dimensions).  *art*: code
    found on disk, whose info answers without typing (code kept by an older version:
    no); *facts*: the launch's (``LaunchFacts``: the innermost strides it states make
    addresses affine)."""
    prefer = art.info.get("lanes_prefer_second_dim") if art is not None else None
    if prefer is None:
        if art is not None:
            return False
        prefer = lanes_prefer_second_dim(dispatcher.kernel_ir(argtypes)[1] if facts is None
                                         else _stated_text(dispatcher, argtypes, facts))
    return bool(prefer) and hook(device)


def hook(device) -> bool:
    """The hook ``launch.lanes_follow_memory`` for *device*."""
    return bool(_hooks.tuning(LANES_FOLLOW_MEMORY.name, device))


def _limits(device) -> tuple:
    lim = device.limits
    return (lim.get("max_block_dims") or (1 << 31,) * 3,
            lim.get("max_grid_dims") or (1 << 31,) * 3)


def exchangeable(device, griddim, blockdim, limits=None) -> bool:
    """Whether a launch of *griddim* blocks of *blockdim* (3-tuples) is exchanged: 4 or
    more threads per block along dimension 1, and the device takes the exchanged
    grid and block (*limits*: ``_limits(device)``, computed if not given)."""
    bmax, gmax = limits or _limits(device)
    return (MIN_LANES <= blockdim[1] <= bmax[0] and blockdim[0] <= bmax[1]
            and griddim[1] <= gmax[0] and griddim[0] <= gmax[1])


def exchange_launches(shim, build_other) -> None:
    """*shim* launches the exchanged code where :func:`exchangeable` says so, its own
    code elsewhere; ``build_other()`` builds the shim of the code it lacks (exchanged
    where *shim*'s is not, or the other way round) when a launch first needs it."""
    device = shim.device
    limits = _limits(device)
    own = shim.launch
    launchers = {bool(shim.facts.lanes): own}
    kept = []

    def launch(griddim, blockdim, args, shared_bytes, queue):
        ex = exchangeable(device, griddim, blockdim, limits)
        fn = launchers.get(ex)
        if fn is None:
            other = build_other()
            kept.append(other)  # (its program lives as long as this shim)
            fn = launchers[ex] = other.launch
        if ex:
            gx, gy, gz = griddim
            bx, by, bz = blockdim
            return fn((gy, gx, gz), (by, bx, bz), args, shared_bytes, queue)
        return fn(griddim, blockdim, args, shared_bytes, queue)

    shim.launch = launch
