"""Launches with the grid's first two dimensions exchanged, for kernels whose memory
accesses run along dimension 1 (``lanes.py`` says which, and how the code changes),
and launches whose warps run in lockstep where the blocks are rows of whole warps
(``stages._warp_lockstep``): the code a launch runs, chosen launch by launch.

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
from .stages import lockstep_kind, shares_without_subgroups, warp_ops_width, warp_width

__all__ = ["LANES_FOLLOW_MEMORY", "wants_exchange", "hook", "exchangeable",
           "whole_warp_rows", "flat_block", "warp_ops", "lockstep", "indexed_code",
           "launch_variants"]

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


def whole_warp_rows(blockdim, width: int) -> bool:
    """Whether blocks of *blockdim* (a 3-tuple) are rows of whole warps of *width*
    threads: ``blockDim.x`` a multiple of it, or blocks one row high."""
    return blockdim[0] % width == 0 or blockdim[1] * blockdim[2] == 1


def flat_block(device, blockdim, width: int | None, limits=None) -> tuple:
    """*blockdim* (a 3-tuple) where a launch of a kernel with warp operations of *width*
    lanes (:func:`warp_ops`) runs its blocks as one row (``LaunchFacts.block``): they
    are not rows of whole warps, and the device takes the row; else ()."""
    if not width or whole_warp_rows(blockdim, width):
        return ()
    bmax = (limits or _limits(device))[0]
    return tuple(blockdim) if blockdim[0] * blockdim[1] * blockdim[2] <= bmax[0] else ()


def warp_ops(dispatcher, argtypes: tuple, device, art=None) -> int | None:
    """The warp width of *dispatcher*'s code for *argtypes* on *device* where it uses
    warp operations whose warps a block's shape changes (``stages.warp_ops_width``),
    else None.  *art*: code found on disk, whose info answers without typing."""
    if art is not None:
        return art.info.get("warp_ops")
    return warp_ops_width(dispatcher.kernel_ir(argtypes)[1], dispatcher.options, device.target)


def lockstep(dispatcher, argtypes: tuple, device, art=None) -> str | None:
    """How the warps of *dispatcher*'s code for *argtypes* run in lockstep on *device*
    (``stages.lockstep_kind``): None, "always", "blocks" (every launch; other blocks
    than rows of whole warps as one row) or "rows" (only where the launch's blocks are
    rows of whole warps).  *art*: code found on disk, whose info answers without
    typing (code kept by an older version: None)."""
    if art is not None:
        return art.info.get("warp_lockstep")
    target, text = device.target, dispatcher.kernel_ir(argtypes)[1]
    if not (warp_width(dispatcher.options, target) and shares_without_subgroups(text)):
        return None
    # (asked of the IR in the target's address spaces, as the compile asks it)
    return lockstep_kind(target.map_ir(text), dispatcher.options, target)


def indexed_code(dispatcher, argtypes: tuple, device, cfg, facts, exchange: bool = True,
                 rows: bool = True):
    """The code of *dispatcher* for *argtypes* that the disk cache's index holds
    (``cache=True``) for a launch of *cfg* on *device*, and the facts it was compiled
    with: the code for *facts*, else the variant the launch's blocks run (warps in
    lockstep where *rows*, exchanged where *exchange*), else (None, *facts*)."""
    from .cache import count_lookup, index_looked_up, index_lookup

    target = device.target
    tries = [facts] if cfg is None else \
        [facts, *_variants_to_try(dispatcher, device, cfg, facts, exchange, rows)]
    looked = [index_looked_up(dispatcher, argtypes, target, f) for f in tries]
    if len(tries) == 1 or looked[0] is None:  # one to try, or none indexed: counted there
        return index_lookup(dispatcher, argtypes, target, facts), facts
    art = None
    for f in tries:  # (counted once below: one launch, one hit or miss)
        art = index_lookup(dispatcher, argtypes, target, f, count=False)
        if art is not None:
            facts = f
            break
    if not any(looked):
        count_lookup(dispatcher, argtypes, art is not None)
    return art, facts


def _variants_to_try(dispatcher, device, cfg, facts, exchange: bool, rows: bool):
    """The facts of the code a launch of *cfg* runs, other than *facts*, where kept."""
    width = warp_width(dispatcher.options, device.target) if rows else None
    if width and not facts.warp_rows and whole_warp_rows(cfg.blockdim, width):
        yield facts._replace(warp_rows=True, lanes=False)
    block = flat_block(device, cfg.blockdim, width)  # (warp operations, or lanes in step)
    if block and facts.block != block:
        yield facts._replace(block=block, lanes=False, warp_rows=False)
        yield facts._replace(block=block, lanes=False, warp_rows=True)
    if exchange and not facts.lanes and exchangeable(device, cfg.griddim, cfg.blockdim) \
            and hook(device):
        yield facts._replace(lanes=True)


def launch_variants(shim, lanes: bool, width: int | None, build,
                    ops: int | None = None) -> None:
    """*shim* launches, launch by launch, the code its blocks need: with the warps of
    *width* in lockstep (``LaunchFacts.warp_rows``) where *width* is given and the
    blocks are rows of whole warps (:func:`whole_warp_rows`: the warps are CUDA's
    then, so that code stays as written), else exchanged where *lanes* and
    :func:`exchangeable` say so, else as written; a kernel with warp operations of
    *ops* lanes runs blocks that are not rows of whole warps as one row
    (:func:`flat_block`), and so does a kernel whose lanes pass values in step
    (``stages.lockstep_kind`` "blocks": *ops* is *width*), its warps in lockstep in
    the row.  ``build(lanes, warp_rows, block)`` builds the shim of a variant *shim*
    is not when a launch first needs it."""
    device = shim.device
    limits = _limits(device)
    launchers = {(bool(shim.facts.lanes), bool(shim.facts.warp_rows), shim.facts.block):
                 shim.launch}
    kept = []

    def launch(griddim, blockdim, args, shared_bytes, queue):
        rows = width is not None and whole_warp_rows(blockdim, width)
        block = flat_block(device, blockdim, ops, limits) if ops else ()
        rows = rows or bool(block and width)  # (lanes in step: in the row, too)
        ex = lanes and not rows and exchangeable(device, griddim, blockdim, limits)
        fn = launchers.get((ex, rows, block))
        if fn is None:
            other = build(ex, rows, block)
            kept.append(other)  # (its program lives as long as this shim)
            fn = launchers[(ex, rows, block)] = other.launch
        if block:
            return fn(griddim, (block[0] * block[1] * block[2], 1, 1), args, shared_bytes,
                      queue)
        if ex:
            gx, gy, gz = griddim
            bx, by, bz = blockdim
            return fn((gy, gx, gz), (by, bx, bz), args, shared_bytes, queue)
        return fn(griddim, blockdim, args, shared_bytes, queue)

    shim.launch = launch
