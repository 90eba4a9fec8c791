"""``reduce``: multi-pass tree reduction in global memory, sub-groups' reductions, or
contiguous chunks.

Three variants (the hook ``algorithms.reduce_variant``; autotuning may choose).
"chunks", the CPU default, for any operator: each work-group folds one contiguous
chunk of the array, its work-items every block-size-th element of it (with a
work-group of one sub-group, each step of the group is one contiguous vector load),
and one work-item folds the work-items' values: two launches and no barrier.  With
a built-in operator the host folds those values instead (NumPy's ufunc, a few
hundred of them): one launch.
"subgroup", for the operators a sub-group reduces (add, multiply, min, max) on
devices with sub-groups: each work-item folds a strided sequence, its
sub-group combines the lanes, one partial per sub-group, and one work-item folds
the partials: two launches and no barrier.  "tree":

Pass structure (one launch per pass, until one value is left): each
work-item folds the elements ``gid, gid + G, gid + 2G, ...`` (``G`` = work-items
in the grid), stores its partial in a scratch buffer, and the work-group
folds its partials pairwise in a tree with a barrier between levels; each
work-group writes one value.  The operator must therefore be associative and
commutative (as for ``np.add.reduce`` on floats, the grouping differs from a
left-to-right loop).  Along an axis, each work-item folds one line in order.
"""

from __future__ import annotations

import math

import numpy as np

from .. import language as gl
from .. import waiting
from ..autotuning import bucket
from ..errors import GpuxUserError
from ..limits import INDEX_RANGE
from . import _tuning
from ._common import (
    as_device, cdiv, device_of, empty, finish, host_readable, jit, kernel_cache, resolve_op,
    scalar,
)
from .elementwise import astype

__all__ = ["reduce"]


def _make_partial(op):
    grid_dim, block_dim, block_idx, thread_idx = gl.grid_dim, gl.block_dim, gl.block_idx, gl.thread_idx
    barrier = gl.barrier

    @jit
    def reduce_partial(x, n, part, out, init, use_init):
        tid = thread_idx.x
        bs = block_dim.x
        b = block_idx.x
        base = b * bs
        gid = base + tid
        g = grid_dim.x * bs
        if gid < n:
            acc = x[gid]
            i = gid + g
            while i < n:
                acc = op(acc, x[i])
                i += g
            part[gid] = acc
        barrier()
        # the valid partials of this group are a prefix of length m
        m = n - base
        if m > bs:
            m = bs
        s = 1
        while s < m:
            s *= 2
        s //= 2
        while s > 0:
            if tid < s and tid + s < m:
                part[gid] = op(part[gid], part[gid + s])
            barrier()
            m = s
            s //= 2
        if tid == 0:
            r = part[base]
            if use_init:
                r = op(init, r)
            out[b] = r

    return reduce_partial


def _make_axis(op):
    grid, gridsize = gl.grid, gl.gridsize

    @jit
    def reduce_axis(x, out, init, use_init):
        # x: (outer, length, inner) -> out: (outer, inner), each line folded in order.
        # Work-item (j, o) folds column j of x[o], then of x[o + the grid's height], ...
        # The indices come from the grid, not from a division: Numba's integer division
        # checks its divisor and rounds toward minus infinity, branches that cost the
        # driver's vectorized loop a third of its speed (Intel's CPU driver)
        j, o = grid(2)
        step = gridsize(2)[1]
        if j < x.shape[2]:
            while o < x.shape[0]:
                acc = x[o, 0, j]
                for t in range(1, x.shape[1]):
                    acc = op(acc, x[o, t, j])
                if use_init:
                    acc = op(init, acc)
                out[o, j] = acc
                o += step

    return reduce_axis


def _make_axis_tiles(op, slots):
    from ..language.memory import local

    block_idx, block_dim, grid_dim, thread_idx = (gl.block_idx, gl.block_dim, gl.grid_dim,
                                                  gl.thread_idx)

    @jit
    def reduce_axis_tiles(x, out, per, init, use_init):
        # x: (outer, length, inner) -> out: (outer, chunks, inner) (init folded in
        # first where use_init: the whole reduce in one chunk).  Work-group (b, c)
        # of `lanes` work-items covers the lanes * slots contiguous columns from
        # b * lanes * slots: lane s folds columns s, s + lanes, ... (one slot each, kept
        # in registers) of x[o, c * per:(c + 1) * per] in order, then the same of
        # x[o + the grid's depth], ...  Each step of a work-group reads lanes * slots
        # contiguous elements of a row: one vector load a slot where lanes is a CPU
        # driver's vector width (a row segment long enough for its prefetcher), one
        # coalesced column per work-item where slots is 1 (GPUs).  The indices come from
        # the grid, not from a division (Numba's checks its divisor: branches that cost
        # a CPU driver's vectorized loop a third of its speed)
        lanes = block_dim.x
        j0 = block_idx.x * lanes * slots + thread_idx.x
        c = block_idx.y
        o = block_idx.z
        inner = x.shape[2]
        t0 = c * per
        t1 = min(t0 + per, x.shape[1])
        a = local.array(slots, x.dtype)
        if c < out.shape[1]:
            while o < x.shape[0]:
                if j0 + (slots - 1) * lanes < inner:
                    for m in range(slots):
                        a[m] = x[o, t0, j0 + m * lanes]
                    for t in range(t0 + 1, t1):
                        for m in range(slots):
                            a[m] = op(a[m], x[o, t, j0 + m * lanes])
                    for m in range(slots):
                        if use_init:
                            a[m] = op(init, a[m])
                        out[o, c, j0 + m * lanes] = a[m]
                else:  # the last tile of a row: the slots past its end do nothing
                    # (each slot's column folded alone: a count of slots per lane, or a
                    # test of each slot in the loop, made the scalar code Intel's CPU
                    # driver runs for a work-group's last lanes fold in another order)
                    for m in range(slots):
                        j = j0 + m * lanes
                        if j < inner:
                            acc = x[o, t0, j]
                            for t in range(t0 + 1, t1):
                                acc = op(acc, x[o, t, j])
                            if use_init:
                                acc = op(init, acc)
                            out[o, c, j] = acc
                o += grid_dim.z

    return reduce_axis_tiles


def _make_axis_lanes(op):
    grid, gridsize = gl.grid, gl.gridsize

    @jit
    def reduce_axis_lanes(x, part):
        # x: (lines, length) -> part: (lines, w), w <= length.  Lane s of line r folds
        # x[r, s], x[r, s + w], ... : consecutive lanes read consecutive elements; then
        # the same for line r + the grid's height, ...  Every lane steps length // w
        # times (one trip count for the whole group: a CPU driver's vectorized loop
        # needs no per-lane mask), then the lanes below length % w take one more
        s, r = grid(2)
        step = gridsize(2)[1]
        w = part.shape[1]
        length = x.shape[1]
        full = length // w
        if s < w:
            while r < x.shape[0]:
                acc = x[r, s]
                for k in range(1, full):
                    acc = op(acc, x[r, s + k * w])
                t = full * w + s
                if t < length:
                    acc = op(acc, x[r, t])
                part[r, s] = acc
                r += step

    return reduce_axis_lanes


def _make_axis_flat(op, slots, lanes):
    from ..language.memory import local

    block_idx, grid_dim, thread_idx = gl.block_idx, gl.grid_dim, gl.thread_idx
    step = slots * lanes

    @jit
    def reduce_axis_flat(x, part, per):
        # x: (outer, length * inner), rows of a few columns seen as flat memory ->
        # part: (outer, chunks, slots * lanes).  Work-group c, one vector of lanes on a
        # CPU driver, walks x[o, c * per:(c + 1) * per] (the last chunk: to the row's
        # end) as contiguous memory, slots * lanes elements a step; lane s's slot m
        # folds, in order, element m * lanes + s of each step, all of one column
        # ((m * lanes + s) % inner: per and the step are multiples of inner).  Every
        # chunk holds at least one step, so every slot starts from an element
        s = thread_idx.x
        c = block_idx.x
        o = block_idx.y
        start = c * per
        end = x.shape[1] if c == part.shape[1] - 1 else start + per
        a = local.array(slots, x.dtype)
        while o < x.shape[0]:
            for m in range(slots):
                a[m] = x[o, start + m * lanes + s]
            base = start + step
            while base + step <= end:
                for m in range(slots):
                    a[m] = op(a[m], x[o, base + m * lanes + s])
                base += step
            for m in range(slots):
                t = base + m * lanes + s
                if t < end:
                    a[m] = op(a[m], x[o, t])
            for m in range(slots):
                part[o, c, m * lanes + s] = a[m]
            o += grid_dim.y

    return reduce_axis_flat


_partial = kernel_cache(_make_partial)
_axis = kernel_cache(_make_axis)
_axis_tiles = kernel_cache(_make_axis_tiles)
_axis_lanes = kernel_cache(_make_axis_lanes)
_axis_flat = kernel_cache(_make_axis_flat)


def _make_sg_partial(op, sg_op):
    from ..language.subgroups import subgroup

    grid, gridsize, block_idx = gl.grid, gl.gridsize, gl.block_idx

    @jit
    def reduce_sg_partial(x, n, ident, part, meta, check_nan, nan):
        # each work-item folds gid, gid + G, ... (consecutive work-items read consecutive
        # elements); its sub-group combines the lanes' values; lane 0 writes one partial.
        # With check_nan (float min and max) a lane's NaN makes the partial NaN (*nan*),
        # as np.maximum does: a sub-group's own min and max need not propagate it
        gid = grid(1)
        g = gridsize(1)
        acc = ident
        i = gid
        while i < n:
            acc = op(acc, x[i])
            i += g
        r = subgroup.reduce(acc, sg_op)
        if check_nan:
            if subgroup.any(acc != acc):
                r = nan
        if subgroup.lane_id() == 0:
            part[block_idx.x * subgroup.count() + subgroup.id()] = r
        if gid == 0:  # how many partials each work-group wrote
            meta[0] = subgroup.count()

    return reduce_sg_partial


def _make_sg_tail(op):
    @jit
    def reduce_sg_tail(part, meta, groups, out, init, use_init):
        # one work-item folds the sub-groups' partials in order
        m = meta[0] * groups
        acc = part[0]
        for j in range(1, m):
            acc = op(acc, part[j])
        if use_init:
            acc = op(init, acc)
        out[0] = acc

    return reduce_sg_tail


def _make_chunk_partial(op):
    from ..language.memory import local

    block_dim, block_idx, thread_idx = gl.block_dim, gl.block_idx, gl.thread_idx
    trips = _CHUNK_BLOCK_TRIPS

    @jit
    def reduce_chunk_partial(x, n, per, part):
        # work-group b folds the contiguous chunk x[b * per:(b + 1) * per] (never empty);
        # its work-item t the elements t, t + bs, ... of it, first in four independent
        # accumulators over a trip count the whole group shares, then the rest one at a
        # time.  No work-item leaves early and every load is in bounds, so a CPU driver's
        # vectorized loop needs no per-lane masks.  The accumulators hold x's dtype, the
        # dtype reduce accumulates in (an int32 sum in Numba's int64 would take twice
        # the vector lanes).  The four accumulators fold blocks of `trips` steps each
        # into fresh ones, then the block into themselves: a float sum's rounding error
        # grows with a block's length plus the number of blocks, not with the chunk's
        # length (a 2**30-element sum on a CPU is some 500,000 elements a work-item).
        # Work-item t writes its value to part[b * bs + t] when it had an element (the
        # tail knows which did)
        b = block_idx.x
        t = thread_idx.x
        bs = block_dim.x
        start = b * per
        end = min(start + per, n)
        i = start + t
        step = 4 * bs
        full = (end - start) // step
        a = local.array(4, x.dtype)
        c = local.array(4, x.dtype)
        if full > 0:
            a[0] = x[i]
            a[1] = x[i + bs]
            a[2] = x[i + 2 * bs]
            a[3] = x[i + 3 * bs]
            k = min(trips, full)
            for _ in range(1, k):  # the first block, into a itself
                i += step
                a[0] = op(a[0], x[i])
                a[1] = op(a[1], x[i + bs])
                a[2] = op(a[2], x[i + 2 * bs])
                a[3] = op(a[3], x[i + 3 * bs])
            while k < full:  # each further block into c, then c into a
                i += step
                c[0] = x[i]
                c[1] = x[i + bs]
                c[2] = x[i + 2 * bs]
                c[3] = x[i + 3 * bs]
                stop = min(k + trips, full)
                for _ in range(k + 1, stop):
                    i += step
                    c[0] = op(c[0], x[i])
                    c[1] = op(c[1], x[i + bs])
                    c[2] = op(c[2], x[i + 2 * bs])
                    c[3] = op(c[3], x[i + 3 * bs])
                a[0] = op(a[0], c[0])
                a[1] = op(a[1], c[1])
                a[2] = op(a[2], c[2])
                a[3] = op(a[3], c[3])
                k = stop
            i += step
            a[0] = op(a[0], a[1])
            a[2] = op(a[2], a[3])
            a[0] = op(a[0], a[2])
        else:
            a[0] = x[min(i, end - 1)]  # (a work-item past the end holds a value it drops)
            i += bs
        while i < end:
            a[0] = op(a[0], x[i])
            i += bs
        if start + t < end:
            part[b * bs + t] = a[0]

    return reduce_chunk_partial


def _make_chunk_tail(op):
    @jit
    def reduce_chunk_tail(part, n, per, groups, out, init, use_init):
        # one work-item folds, in order, the partials of the work-items that had an
        # element: work-item t of group b did where b * per + t < min(n, (b + 1) * per)
        bs = part.size // groups
        acc = part[0]
        for b in range(groups):
            m = min(min(n, (b + 1) * per) - b * per, bs)
            s = 1 if b == 0 else 0
            for t in range(s, m):
                acc = op(acc, part[b * bs + t])
        if use_init:
            acc = op(init, acc)
        out[0] = acc

    return reduce_chunk_tail


_chunk_partial = kernel_cache(_make_chunk_partial)
_chunk_tail = kernel_cache(_make_chunk_tail)
_sg_partial = kernel_cache(_make_sg_partial)
_sg_tail = kernel_cache(_make_sg_tail)

#: the sub-group reduction of each operator that has one (for float min and max the
#: partial kernel makes a sub-group's result NaN where a lane holds one, as NumPy does)
_SG_OPS = {"add": "add", "multiply": "mul", "minimum": "min", "maximum": "max"}


def _sg_op(op, dt, dev):
    """The sub-group reduction of *op* for *dt* on *dev*, or None (the tree runs)."""
    name = _SG_OPS.get(op.name) if op.ufunc is not None else None  # (a built-in operator)
    if name is None or op.identity(dt) is None or dt.kind not in "iuf" or dt.itemsize < 4:
        return None
    if not dev.target.has("subgroups") or (dt.itemsize == 8 and not dev.target.has("fp64")
                                          and dt.kind == "f"):
        return None
    return name


#: a chunk of the "chunks" reduce starts at a multiple of this many elements
_CHUNK_ALIGN = 64
#: steps of four elements a work-item of the "chunks" reduce folds into fresh
#: accumulators before adding them to its running ones
_CHUNK_BLOCK_TRIPS = 64

_REDUCE_HOOKS = ("algorithms.reduce_variant", "algorithms.block_size",
                 "algorithms.items_per_thread", "algorithms.reduce_groups")


def _reduce_all(x, op, init, dev):
    """The fold of all of *x*, a NumPy scalar."""
    if x.ndim != 1:
        x = (x if x.is_c_contiguous else x.copy()).reshape(x.size)
    # a built-in operator's reduce is work of bounded length: when the device had nothing
    # else to do, the read of its result waits for it directly (waiting.short)
    with waiting.short(op.ufunc is not None and dev.runtime.idle()):
        got = _tuning.tuned("algorithms.reduce", _REDUCE_HOOKS, dev, x.dtype, x.size,
                            lambda key: _reduce_passes(x, op, init, dev, key),
                            extra=(op.name,))
        return got if isinstance(got, np.generic) else got.copy_to_host()[0]


def _reduce_passes(x, op, init, dev, key):
    """Launch the passes of the variant the hooks choose: the device array of one element
    holding the result, or the result itself (a NumPy scalar) where the host folded."""
    dt = x.dtype
    n = x.size
    use_init = init is not None
    init_v = scalar(init if use_init else 0, dt, "init")
    bs = _tuning.block_size(dev, dt, key)
    cap = _tuning.reduce_groups(dev, dt, key)
    variant = _tuning.reduce_variant(dev, dt, key)
    if variant == "chunks" and dt.itemsize >= 4:
        # contiguous chunks, then one work-item or the host folds the work-items' values;
        # no barrier, any operator (narrower types take the tree, whose pairwise folds
        # keep a float16 sum as close to NumPy's as before; four running float16 sums
        # are not)
        groups = cap or 4 * int(dev.limits.get("compute_units", 1) or 1)
        per = max(cdiv(cdiv(n, groups), _CHUNK_ALIGN) * _CHUNK_ALIGN, 4 * bs)
        groups = cdiv(n, per)
        # the host folds the partials of a built-in operator, read in place where the
        # device's memory is the host's; a custom one is folded by one work-item
        shared = host_readable(dev, groups * bs if op.ufunc is not None else 1, dt)
        part = shared[0] if shared is not None and op.ufunc is not None else \
            empty(groups * bs, dt, dev)
        _chunk_partial(op.fn)[groups, bs](x, n, per, part)
        if op.ufunc is not None:
            # the work-items that had an element: all of every chunk but the last (a
            # chunk holds at least 4 * bs elements), the first n - start of the last
            count = (groups - 1) * bs + min(n - (groups - 1) * per, bs)
            if shared is None:
                vals = part.copy_to_host()[:count]
            else:
                dev.runtime.synchronize()
                vals = shared[1][:count]
            if use_init:
                vals = np.concatenate((np.array([init_v], dt), vals))
            return op.ufunc.reduce(vals, dtype=dt)
        out = empty(1, dt, dev) if shared is None else shared[0]
        _chunk_tail(op.fn)[1, 1](part, n, per, groups, out, init_v, use_init)
        if shared is None:
            return out
        dev.runtime.synchronize()
        return shared[1][0]
    ipt = _tuning.items_per_thread(dev, dt, key)  # (the other variants' strided folds)
    sg_op = _sg_op(op, dt, dev)
    if sg_op is not None and variant == "subgroup":
        # two launches, no barrier: sub-groups' partials, then one work-item folds them
        blocks = max(1, cdiv(cdiv(n, ipt), bs))
        if cap:
            blocks = min(blocks, cap)
        part = empty(blocks * bs, dt, dev)
        meta = empty(1, np.int32, dev)
        out = empty(1, dt, dev)
        ident = op.identity(dt)
        check_nan = dt.kind == "f" and sg_op in ("min", "max")
        nan = dt.type(np.nan) if dt.kind == "f" else ident
        _sg_partial(op.fn, sg_op)[blocks, bs](x, n, ident, part, meta, check_nan, nan)
        _sg_tail(op.fn)[1, 1](part, meta, blocks, out, init_v, use_init)
        return out
    k = _partial(op.fn)
    while True:
        blocks = max(1, cdiv(cdiv(n, ipt), bs))
        if cap:
            blocks = min(blocks, cap)
        part = empty(blocks * bs, dt, dev)
        out = empty(blocks, dt, dev)
        k[blocks, bs](x, n, part, out, init_v, use_init and blocks == 1)
        if blocks == 1:
            return out
        x, n = out, blocks


def reduce(x, op="add", init=None, axis=None, dtype=None, device=None):
    """Fold *x* with the binary operator *op*.

    *op* is ``"add"`` (default), ``"mul"``, ``"min"``, ``"max"``, a NumPy ufunc of
    those, or a device function ``op(a, b)`` that is associative and
    commutative.  *init*, if given, is folded in once (``op(init, result)``);
    an empty reduction returns *init*, else the operator's identity, else
    raises.  Values are accumulated in *dtype* (default: ``x.dtype``; NumPy's
    ``sum`` widens small integers, pass ``dtype=np.int64`` for that).
    With *axis* ``None`` the result is a NumPy scalar; with an *axis* it is an
    array (a device array when *x* is one).
    """
    o = resolve_op(op)
    dev = device_of(device, x)
    d, host = as_device(x, dev, "reduce: x")
    if dtype is not None and np.dtype(dtype) != d.dtype:
        d = astype(d, dtype)
    dt = d.dtype
    if dt.kind == "b":
        raise GpuxUserError("reduce: x is a bool array; reduce it as integers: dtype=np.int64 "
                            "counts the True values with 'add', and dtype=np.uint8 with "
                            "'max' or 'min' gives any() or all()")
    if axis is None:
        if d.size == 0:
            if init is not None:
                return scalar(init, dt, "init")
            ident = o.identity(dt)
            if ident is None:
                raise GpuxUserError(f"reduce: an empty array with operator {o.name} and no "
                                    f"init has no result; give init=")
            return ident
        return _reduce_all(d, o, init, dev)
    if d.ndim == 0:
        raise GpuxUserError("reduce: axis given for a 0-d array")
    ax = int(axis)
    if not -d.ndim <= ax < d.ndim:
        raise GpuxUserError(f"reduce: axis {axis} is out of range for a {d.ndim}-d array")
    ax %= d.ndim
    shape = d.shape
    outer = int(np.prod(shape[:ax])) if ax else 1
    length = shape[ax]
    inner = int(np.prod(shape[ax + 1:])) if ax + 1 < d.ndim else 1
    out_shape = shape[:ax] + shape[ax + 1:]
    if length == 0:
        fill = init if init is not None else o.identity(dt)
        if fill is None:
            raise GpuxUserError(f"reduce: axis {ax} has length 0 and operator {o.name} has no "
                                f"identity; give init=")
        res = np.full(out_shape, fill, dtype=dt)
        if host:
            return res
        from ..memory import to_device

        return to_device(res, device=dev)
    res = empty(out_shape, dt, dev)
    if res.size:
        src = (d if d.is_c_contiguous else d.copy()).reshape(outer, length, inner)
        init_v = scalar(init if init is not None else 0, dt, "init")
        _tuning.tuned("algorithms.reduce_axis", _AXIS_HOOKS, dev, dt, src.size,
                      lambda key: _reduce_axis(src, res.reshape(outer, inner), o, init_v,
                                               init is not None, dev, key),
                      extra=(o.name, "lines" if inner == 1 else "columns",
                             bucket(outer * inner)))
    return finish(res, host)


_AXIS_HOOKS = ("algorithms.block_size", "algorithms.axis_lanes", "algorithms.axis_lines",
               "algorithms.axis_work_items", "algorithms.axis_slots",
               "algorithms.axis_flat_width")


def _reduce_axis(src, out, o, init_v, use_init, dev, key):
    """Fold *src* (outer, length, inner) along its middle axis into *out* (outer, inner),
    in order within each of the pieces the hooks choose: a line (inner == 1) is folded by
    ``algorithms.axis_lanes`` lanes, each every lanes-th element, then the lanes'
    values in order; columns (inner > 1) are cut along the axis into chunks, enough for
    ``algorithms.axis_work_items`` work-items, each chunk's columns folded (by
    work-groups of block-size columns, ``algorithms.axis_slots`` of them per work-item),
    then the chunks' values in order; rows of at most ``algorithms.axis_flat_width`` columns are
    walked as flat memory in chunks, each lane's slots holding one column apiece, then
    the slots' values in order (one fold, the same for all three)."""
    outer, length, inner = src.shape
    dt = src.dtype
    fold = _axis(o.fn)
    bs = _tuning.block_size(dev, dt, key)
    gx, gy, gz = dev.limits.get("max_grid_dims") or (INDEX_RANGE,) * 3  # blocks per dimension
    if inner == 1:
        top = dev.max_threads_per_block
        w = min(_tuning.axis_lanes(dev, dt, key), length, top)
        if w > 1:
            lines = max(1, min(_tuning.axis_lines(dev, dt, key), top // w))
            part = empty((outer, w), dt, dev)
            _axis_lanes(o.fn)[(1, min(cdiv(outer, lines), gy)), (w, lines)](
                src.reshape(outer, length), part)
            src, length = part.reshape(outer, w, 1), w
    else:
        want = _tuning.axis_work_items(dev, dt, key)
        slots = inner // math.gcd(inner, _FLAT_LANES)
        if (inner <= _tuning.axis_flat_width(dev, dt, key) and slots <= _FLAT_MAX_SLOTS
                and length * inner >= slots * _FLAT_LANES):
            # rows of a few columns: work-groups of one vector walk contiguous chunks
            row, step = length * inner, slots * _FLAT_LANES
            chunks = max(1, min(cdiv(want, _FLAT_LANES * outer), row // step, gx))
            per = cdiv(cdiv(row, chunks), step) * step
            chunks = max(1, row // per)  # (the last chunk also takes what is left)
            part = empty((outer, chunks, step), dt, dev)
            _axis_flat(o.fn, slots, _FLAT_LANES)[(chunks, min(outer, gy)), (_FLAT_LANES, 1)](
                src.reshape(outer, row), part, per)
            # slot q of a chunk holds column q % inner (a step is a multiple of inner): as
            # rows of inner columns, the chunks' slots are what the fold below folds
            length = chunks * step // inner
            src = part.reshape(outer, length, inner)
        else:
            chunks = max(1, min(cdiv(want, outer * inner), length // _MIN_AXIS_CHUNK, gy))
            # a work-group covers bs columns of each row it folds, each of its
            # work-items `cols` of them
            cols = min(_tuning.axis_slots(dev, dt, key), bs)
            if chunks > 1 or cols > 1:
                per = cdiv(length, chunks)
                chunks = cdiv(length, per)  # every chunk holds at least one element
                lanes = bs // cols
                tiles = (cdiv(inner, lanes * cols), chunks, min(outer, gz))
                if chunks == 1:  # the tiles are the whole reduce
                    _axis_tiles(o.fn, cols)[tiles, (lanes, 1, 1)](
                        src, out.reshape(outer, 1, inner), length, init_v, use_init)
                    return
                part = empty((outer, chunks, inner), dt, dev)
                _axis_tiles(o.fn, cols)[tiles, (lanes, 1, 1)](src, part, per, init_v, False)
                src, length = part, chunks
    # columns along the grid's width, lines along its height (one work-item per line
    # where each has one column)
    bx, by = (bs, 1) if src.shape[2] > 1 else (1, bs)
    fold[(cdiv(src.shape[2], bx), min(cdiv(outer, by), gy)), (bx, by)](
        src, out, init_v, use_init)


#: the fewest elements of the reduced axis a chunk of a strided reduce holds
_MIN_AXIS_CHUNK = 16
#: the lanes of a work-group of the flat kernel for rows of a few columns (one 16-lane
#: vector: 64 or 128 contiguous bytes a slot), and the most slots (columns a lane
#: keeps apart: inner / gcd(inner, lanes)) it is compiled for
_FLAT_LANES = 16
_FLAT_MAX_SLOTS = 8
