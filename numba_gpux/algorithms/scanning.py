"""``scan``: inclusive and exclusive prefix scans, in three variants (the hook
``algorithms.scan_variant`` chooses; autotuning may choose for a device).

"lookback" (CUDA GPUs): one pass with decoupled look-back, in scan_lookback.py.

"chunked" (CPU devices): work-items (32 per core on CPU devices, so that a busy core
takes fewer) fold contiguous chunks; the chunks' totals are scanned; each work-item
scans its chunk from its prefix, writing the inclusive or the exclusive scan.

"blocked" (other GPUs), in three kinds of launch:

1. Block scan: each work-item scans ``ipt`` consecutive elements in order,
   the work-group scans its work-items' totals (Hillis-Steele in a global
   scratch buffer, a barrier between steps) and adds each work-item's
   prefix; each work-group's total goes to a per-block buffer.
2. The per-block totals are scanned by the same function (recursively).
3. Each element adds its block's prefix (and ``init``); an exclusive scan
   then shifts by one.

Elements are combined in their order, so the operator need only be associative.
"""

from __future__ import annotations

import numpy as np

from .. import language as gl
from ..errors import GpuxUserError
from . import _tuning
from ._common import as_device, cdiv, device_of, empty, finish, jit, kernel_cache, resolve_op, scalar
from .elementwise import astype
from .scan_lookback import scan_lookback

__all__ = ["scan"]


def _make_block_scan(op):
    block_dim, block_idx, thread_idx = gl.block_dim, gl.block_idx, gl.thread_idx
    barrier = gl.barrier

    @jit
    def scan_block(x, out, n, ipt, tsum, bsum):
        tid = thread_idx.x
        bs = block_dim.x
        b = block_idx.x
        gid = b * bs + tid
        start = gid * ipt
        has = start < n
        if has:
            end = start + ipt
            if end > n:
                end = n
            acc = x[start]
            out[start] = acc
            for j in range(start + 1, end):
                acc = op(acc, x[j])
                out[j] = acc
            tsum[gid] = acc
        barrier()
        # inclusive Hillis-Steele scan of the work-items' totals
        off = 1
        while off < bs:
            v = tsum[gid]
            if has and tid >= off:
                v = tsum[gid - off]
            barrier()
            if has and tid >= off:
                tsum[gid] = op(v, tsum[gid])
            barrier()
            off *= 2
        if has and tid > 0:
            p = tsum[gid - 1]
            end = start + ipt
            if end > n:
                end = n
            for j in range(start, end):
                out[j] = op(p, out[j])
        # the block total: from its last valid work-item
        last = (n - b * bs * ipt + ipt - 1) // ipt - 1
        if last > bs - 1:
            last = bs - 1
        if tid == last:
            bsum[b] = tsum[gid]

    return scan_block


def _make_add_prefix(op):
    grid = gl.grid

    @jit
    def scan_add(out, n, tile, bincl, init, use_init):
        i = grid(1)
        if i < n:
            b = i // tile
            v = out[i]
            if b > 0:
                v = op(bincl[b - 1], v)
            if use_init:
                v = op(init, v)
            out[i] = v

    return scan_add


@jit
def _shift(incl, out, n, init):
    i = gl.grid(1)
    if i < n:
        if i == 0:
            out[i] = init
        else:
            out[i] = incl[i - 1]


def _make_chunk_fold(op):
    grid = gl.grid

    @jit
    def scan_chunk_fold(x, n, chunk, part):
        # the loops index with unsigned integers: a signed index makes every access
        # check for a negative index (Python's wraparound), which keeps CPU drivers
        # from vectorizing the loop (five times slower on Intel's OpenCL CPU driver)
        t = grid(1)
        start = t * chunk
        if start < n:
            end = start + chunk
            if end > n:
                end = n
            acc = x[np.uint64(start)]
            for j in range(np.uint64(start + 1), np.uint64(end)):
                acc = op(acc, x[j])
            part[t] = acc

    return scan_chunk_fold


def _make_chunk_scan(op):
    grid = gl.grid
    one, two, three, four = np.uint64(1), np.uint64(2), np.uint64(3), np.uint64(4)

    @jit
    def scan_chunk(x, out, n, chunk, pincl, init, use_init, exclusive):
        # pincl[t - 1]: everything before this chunk (init folded in); an exclusive
        # scan writes each element's prefix before folding the element in.  Four
        # elements a step, loaded before any is stored: the driver cannot tell that
        # out does not overlap x, so one element a step keeps each load behind the
        # store before it (4M int32 on Intel's OpenCL CPU driver: 0.77 ms a launch
        # against 1.34)
        t = grid(1)
        start = t * chunk
        if start < n:
            end = start + chunk
            if end > n:
                end = n
            s = np.uint64(start)
            e = np.uint64(end)
            if exclusive:
                acc = init
                if t > 0:
                    acc = pincl[t - 1]
                j = s
            else:
                acc = x[s]
                if t > 0:
                    acc = op(pincl[t - 1], acc)
                elif use_init:
                    acc = op(init, acc)
                out[s] = acc
                j = s + one
            e4 = j + (e - j) // four * four
            if exclusive:
                while j < e4:
                    a0 = x[j]
                    a1 = x[j + one]
                    a2 = x[j + two]
                    a3 = x[j + three]
                    out[j] = acc
                    acc = op(acc, a0)
                    out[j + one] = acc
                    acc = op(acc, a1)
                    out[j + two] = acc
                    acc = op(acc, a2)
                    out[j + three] = acc
                    acc = op(acc, a3)
                    j += four
                while j < e:
                    a0 = x[j]
                    out[j] = acc
                    acc = op(acc, a0)
                    j += one
            else:
                while j < e4:
                    a0 = x[j]
                    a1 = x[j + one]
                    a2 = x[j + two]
                    a3 = x[j + three]
                    acc = op(acc, a0)
                    out[j] = acc
                    acc = op(acc, a1)
                    out[j + one] = acc
                    acc = op(acc, a2)
                    out[j + two] = acc
                    acc = op(acc, a3)
                    out[j + three] = acc
                    j += four
                while j < e:
                    acc = op(acc, x[j])
                    out[j] = acc
                    j += one

    return scan_chunk


_block = kernel_cache(_make_block_scan)
_add = kernel_cache(_make_add_prefix)
_chunk_fold = kernel_cache(_make_chunk_fold)
_chunk_scan = kernel_cache(_make_chunk_scan)


_SCAN_HOOKS = ("algorithms.scan_variant", "algorithms.scan_chunks", "algorithms.block_size",
               "algorithms.items_per_thread")
#: the fewest elements a chunk of the chunked scan has (fewer chunks for small scans)
_MIN_CHUNK = 1024


def _inclusive(d, op, init, dev, key):
    """Inclusive scan of the 1-D device array *d* (with *init* folded in first, if given),
    with the hooks' values for the problem *key*: the variant they name."""
    if _tuning.scan_variant(dev, d.dtype, key) == "chunked":
        return _inclusive_chunked(d, op, init, dev, key)
    # "blocked" (its block totals are scanned the same way whatever the hook says)
    dt = d.dtype
    n = d.size
    out = empty(n, dt, dev)
    bs = _tuning.block_size(dev, dt, key)
    ipt = _tuning.items_per_thread(dev, dt, key)
    tile = bs * ipt
    blocks = max(1, cdiv(n, tile))
    tsum = empty(blocks * bs, dt, dev)
    bsum = empty(blocks, dt, dev)
    _block(op.fn)[blocks, bs](d, out, n, ipt, tsum, bsum)
    use_init = init is not None
    if blocks > 1 or use_init:
        bincl = _inclusive(bsum, op, None, dev, key) if blocks > 1 else bsum
        init_v = scalar(init if use_init else 0, dt, "init")
        _add(op.fn)[max(1, cdiv(n, bs)), bs](out, n, tile, bincl, init_v, use_init)
    return out


def _inclusive_chunked(d, op, init, dev, key, exclusive=False):
    """The chunked scan: each of a few work-items folds a contiguous chunk, the chunks'
    totals are scanned, and each work-item scans its chunk again from its prefix; three
    launches without a barrier, each reading memory in order (the shape CPU devices
    run well: a work-item per core or so, no work-group synchronization).  *exclusive*:
    the last launch writes the exclusive scan (each element's prefix, *init* first)."""
    dt = d.dtype
    n = d.size
    out = empty(n, dt, dev)
    chunks = max(1, min(_tuning.scan_chunks(dev, dt, key), cdiv(n, _MIN_CHUNK)))
    chunk = cdiv(n, chunks)
    chunks = cdiv(n, chunk)
    use_init = init is not None
    init_v = scalar(init if use_init else 0, dt, "init")
    if chunks == 1:
        pincl = empty(1, dt, dev)
    else:
        part = empty(chunks, dt, dev)
        _chunk_fold(op.fn)[chunks, 1](d, n, chunk, part)
        pincl = _inclusive_chunked(part, op, init, dev, key)
    _chunk_scan(op.fn)[chunks, 1](d, out, n, chunk, pincl, init_v, use_init, exclusive)
    return out


def scan(x, op="add", exclusive: bool = False, init=None, dtype=None, device=None):
    """Prefix scan of the 1-D array *x* with the associative operator *op*.

    Inclusive (default): ``out[i] = x[0] op x[1] op ... op x[i]``, like
    ``np.cumsum``; with *init*, ``init`` is folded in first.  Exclusive:
    ``out[0] = init`` and ``out[i] = init op x[0] op ... op x[i-1]``; *init*
    defaults to the operator's identity (a custom operator needs one).  *op*
    is as for :func:`reduce`.  The result has *dtype* (default ``x.dtype``;
    ``np.cumsum`` widens small integers, pass ``dtype=np.int64`` for that)
    and is a NumPy array for NumPy input, a device array for device input.
    """
    o = resolve_op(op)
    dev = device_of(device, x)
    d, host = as_device(x, dev, "scan: x")
    if d.ndim != 1:
        raise GpuxUserError(f"scan: x must be 1-D, not {d.ndim}-D (ravel it first)")
    if dtype is not None and np.dtype(dtype) != d.dtype:
        d = astype(d, dtype)
    dt = d.dtype
    n = d.size
    if exclusive and init is None:
        init = o.identity(dt)
        if init is None:
            raise GpuxUserError(f"scan: an exclusive scan with operator {o.name} needs init=")
    if n == 0:
        return finish(empty(0, dt, dev), host)
    if not d.is_c_contiguous:
        d = d.copy()
    kind = "algorithms.scan_exclusive" if exclusive else "algorithms.scan"
    return finish(_tuning.tuned(kind, _SCAN_HOOKS, dev, dt, n,
                                lambda key: _scan(d, o, init, exclusive, dev, key),
                                extra=(o.name,)), host)


def _scan(d, o, init, exclusive, dev, key):
    if _tuning.scan_variant(dev, d.dtype, key) == "lookback":
        return scan_lookback(d, o, init, exclusive, dev, key)
    if not exclusive:
        return _inclusive(d, o, init, dev, key)
    if _tuning.scan_variant(dev, d.dtype, key) == "chunked":
        return _inclusive_chunked(d, o, init, dev, key, exclusive=True)
    n = d.size
    dt = d.dtype
    if n == 1:
        incl = d
    else:
        incl = _inclusive(d[:n - 1], o, init, dev, key)
    out = empty(n, dt, dev)
    bs = _tuning.block_size(dev, dt, key)
    _shift[max(1, cdiv(n, bs)), bs](incl, out, n, scalar(init, dt, "init"))
    return out
