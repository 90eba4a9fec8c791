"""The "lookback" variant of ``scan``: a single-pass scan with decoupled look-back
(Merrill and Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back", 2016).

One launch reads each element once and writes each result once (a second, tiny launch
first zeroes the status words, as CUB's does).  Each work-group scans one *tile* of
``block size x items per work-item`` consecutive elements:

1. Its first work-item takes the tile's number from an atomic counter (``status[0]``),
   so tiles are numbered in the order their work-groups started.
2. The work-group loads the tile into shared memory (consecutive work-items read
   consecutive elements), each work-item scans its ``ipt`` consecutive elements, and the
   work-group scans its work-items' totals (Hillis-Steele in shared memory).
3. The first work-item publishes the tile's aggregate (status 1), then the work-group
   looks back over the tiles before it, a window of 32 at a time from the nearest:
   work-item k waits while tile ``jb - k``'s status is 0 (nothing published) and
   fetches its value, and the first work-item folds the window in order, an aggregate
   (status 1) and on, until an inclusive prefix (status 2).  It then publishes the
   tile's inclusive prefix (status 2).  Tile 0 publishes its inclusive prefix at once.
4. Every work-item applies the tile's exclusive prefix and its own, and the tile is
   written out (an exclusive scan shifts within the tile: no second launch).

Elements are combined in their order (the look-back folds ``op(earlier, later)``), so
the operator need only be associative.

Why it is correct:

- *Progress.*  A work-group waits only on tiles with smaller numbers, and a tile's
  number is taken when its work-group has started running; a started work-group runs
  to its end (CUDA; OpenCL CPU drivers run each work-group to its end on one thread),
  and it publishes its aggregate before it waits on anyone, so every wait ends: no
  assumption about how many work-groups are resident, nor about the order in which
  the hardware starts them.
- *Memory ordering, 32-bit values* (int32, uint32, float32): the value's bits and its
  status travel together in one 64-bit word (status high, value low), written with
  one atomic exchange and read with one atomic compare-and-swap that never changes
  it (``cas(status, i, 0, 0)``: an atomic read; the language has no plain atomic
  load).  A reader sees a whole word or none (a zero word is "nothing published"),
  so nothing else needs ordering: no fence, no second load.
- *Memory ordering, other values*: the value (``aggs[t]`` or ``incs[t]``, a plain
  store) is written before a device-scope sequentially consistent fence
  (``fence_device``: PTX ``membar.gl``, SPIR-V ``OpMemoryBarrier`` at Device scope),
  and the status (int32) after it with an atomic exchange (relaxed, device scope).
  The reader reads the status atomically as above, fences at device scope, and only
  then reads the value (integers and floats with ``ldcg``: past L1, as CUB does).  A fence before an atomic write that an atomic read
  observes, followed by a fence, is the release/acquire pattern of both memory models
  (PTX: a fence.sc followed by a strong write is a release pattern, a strong read
  followed by a fence.sc an acquire pattern, and the value's write happens before its
  read; OpenCL/SPIR-V and C11: fence synchronization), so the reader sees the value
  the status announces.  A status only grows (0, 1, 2) and aggregates and inclusive
  prefixes live in separate arrays, so a value is never rewritten after its status
  is published.  The compiler cannot hoist the status read out of the wait loop
  (it is an atomic) nor the value read above the fence.
- *Within the work-group*, barriers order the shared-memory steps; the first
  work-item's look-back result reaches the others through shared memory and a barrier.
"""

from __future__ import annotations

import numpy as np

from .. import language as gl
from ..language.atomics import atomic
from ..language.cachehints import ldcg
from ..language.memory import fence_device, local, nanosleep, shared
from . import _tuning
from ._common import cdiv, empty, jit, kernel_cache, scalar

__all__ = ["scan_lookback", "lookback_tile"]

#: nanoseconds a waiting work-item sleeps between polls of a status (a hint: CUDA
#: sm_70+ sleeps, other targets return at once)
_BACKOFF_NS = 64
#: predecessors whose statuses a work-group reads at once in its look-back
_WINDOW = 32


def _make_status(packed):
    """The device functions that publish a tile's value with its status and fetch a
    predecessor's: packed with the status in one 64-bit word (*packed*: the 32-bit
    scalar type), else with separate value arrays and fences, the value read past L1
    (*packed* "cg", integers and floats: ``ldcg``, as CUB reads them) or plainly
    (*packed* None: other types)."""
    i32 = np.int32
    if packed == "cg":
        @jit(device=True)
        def load(a, j):
            return ldcg(a, j)
    else:
        @jit(device=True)
        def load(a, j):
            return a[j]
    if packed is None or packed == "cg":
        @jit(device=True)
        def publish(status, aggs, incs, t, f, v):
            if f == 1:
                aggs[t] = v
            else:
                incs[t] = v
            fence_device()                   # the value before the status
            atomic.exch(status, t + 1, f)

        @jit(device=True)
        def fetch(status, aggs, incs, j):
            f = atomic.cas(status, j + 1, 0, 0)
            while f == 0:
                nanosleep(_BACKOFF_NS)
                f = atomic.cas(status, j + 1, 0, 0)
            fence_device()                   # the status before the value
            if f == 2:
                v = load(incs, j)
            else:
                v = load(aggs, j)
            return f, v

        return publish, fetch

    vt = packed

    @jit(device=True)
    def publish_packed(status, aggs, incs, t, f, v):
        word = local.array(1, np.int64)
        word.view(vt)[0] = v                 # the value's bits low, the status high
        word.view(i32)[1] = f
        atomic.exch(status, t + 1, word[0])

    @jit(device=True)
    def fetch_packed(status, aggs, incs, j):
        got = atomic.cas(status, j + 1, 0, 0)
        while got == 0:
            nanosleep(_BACKOFF_NS)
            got = atomic.cas(status, j + 1, 0, 0)
        word = local.array(1, np.int64)
        word[0] = got
        return word.view(i32)[1], word.view(vt)[0]

    return publish_packed, fetch_packed


def _make_lookback(op, packed):
    thread_idx, block_dim, barrier = gl.thread_idx, gl.block_dim, gl.barrier
    i32 = np.int32
    window = _WINDOW
    publish, fetch = _make_status(packed)

    @jit
    def scan_lookback(x, out, n, ipt, status, aggs, incs, init, use_init, exclusive):
        # dynamic shared memory: the tile (bs x ipt elements, element i at i + i // 32:
        # the work-items' strided reads of their own elements hit distinct banks),
        # then the work-items' totals (bs): sized at launch, so the hooks' values never
        # recompile anything
        dyn = shared.array(0, x.dtype)
        pre = shared.array(1, x.dtype)
        tix = shared.array(1, i32)
        wval = shared.array(window, x.dtype)
        wflag = shared.array(window, i32)
        ctl = shared.array(1, i32)
        bs = block_dim.x
        tile = bs * ipt
        tot = tile + (tile >> 5) + 1  # where the totals start (after the padded tile)
        w = window
        if w > bs:
            w = bs
        tid = thread_idx.x
        if tid == 0:
            tix[0] = atomic.add(status, 0, 1)
        barrier()
        t = tix[0]
        base = t * tile
        m = n - base
        if m > tile:
            m = tile
        for k in range(ipt):
            i = k * bs + tid
            if i < m:
                dyn[i + (i >> 5)] = x[base + i]
        barrier()
        # each work-item scans its ipt consecutive elements in place
        s = tid * ipt
        e = s + ipt
        if e > m:
            e = m
        if s < e:
            acc = dyn[s + (s >> 5)]
            for j in range(s + 1, e):
                acc = op(acc, dyn[j + (j >> 5)])
                dyn[j + (j >> 5)] = acc
            dyn[tot + tid] = acc
        barrier()
        # inclusive Hillis-Steele scan of the nt valid work-items' totals
        nt = (m + ipt - 1) // ipt
        off = 1
        while off < bs:
            v = dyn[tot + tid]
            if tid >= off and tid < nt:
                v = op(dyn[tot + tid - off], v)
            barrier()
            if tid < nt:
                dyn[tot + tid] = v
            barrier()
            off *= 2
        agg = dyn[tot + nt - 1]
        if tid == 0:
            if t == 0:
                incl = agg
                if use_init:
                    incl = op(init, agg)
                publish(status, aggs, incs, 0, 2, incl)
                pre[0] = init
            else:
                publish(status, aggs, incs, t, 1, agg)
        if t > 0:  # (the same for the whole work-group)
            # look back over windows of w predecessors, nearest first: work-item k
            # waits for tile jb - k's status and fetches its value; the first work-item
            # folds them in order until an inclusive prefix
            excl = init
            jb = t - 1
            going = True
            while going:
                if tid < w:
                    j = jb - tid
                    if j >= 0:
                        f, v = fetch(status, aggs, incs, j)
                        wval[tid] = v
                        wflag[tid] = f
                    else:
                        wflag[tid] = 3  # (no such tile: never folded, tile 0 stops the walk)
                barrier()
                if tid == 0:
                    ctl[0] = 0
                    for k in range(w):
                        f = wflag[k]
                        if f == 3:
                            break
                        if jb == t - 1 and k == 0:
                            excl = wval[0]
                        else:
                            excl = op(wval[k], excl)
                        if f == 2:
                            ctl[0] = 1
                            break
                barrier()
                going = ctl[0] == 0
                jb -= w
            if tid == 0:
                publish(status, aggs, incs, t, 2, op(excl, agg))
                pre[0] = excl
        barrier()
        if s < e:
            # p: everything before this work-item's first element (hasp: if anything)
            hasp = t > 0 or use_init
            p = pre[0]
            if tid > 0:
                if hasp:
                    p = op(p, dyn[tot + tid - 1])
                else:
                    p = dyn[tot + tid - 1]
                hasp = True
            if exclusive:
                for j in range(e - 1, s, -1):
                    dyn[j + (j >> 5)] = op(p, dyn[(j - 1) + ((j - 1) >> 5)])
                dyn[s + (s >> 5)] = p
            elif hasp:
                for j in range(s, e):
                    dyn[j + (j >> 5)] = op(p, dyn[j + (j >> 5)])
        barrier()
        for k in range(ipt):
            i = k * bs + tid
            if i < m:
                out[base + i] = dyn[i + (i >> 5)]

    return scan_lookback


@jit
def _zero(status, n):
    i = gl.grid(1)
    if i < n:
        status[i] = 0


_lookback = kernel_cache(_make_lookback)


def _packed(dt):
    """How a tile's value travels with its status (:func:`_make_status`): the scalar type
    of 32-bit integers and floats (packed in one 64-bit word), "cg" for the other
    integers and floats, None for the rest."""
    if dt.kind in "iuf":
        return dt.type if dt.itemsize == 4 else "cg"
    return None


def _dynamic_bytes(bs, ipt, dt) -> int:
    """Dynamic shared memory of a work-group: the tile (padded) and its work-items'
    totals."""
    tile = bs * ipt
    return (tile + (tile >> 5) + 1 + bs) * dt.itemsize


def _shared_bytes(bs, ipt, dt) -> int:
    """All the shared memory of a work-group: the dynamic part, the look-back window's
    values and statuses, a few words."""
    return _dynamic_bytes(bs, ipt, dt) + (_WINDOW + 1) * dt.itemsize + (_WINDOW + 2) * 4 + 64


def lookback_tile(dev, dt, key=None) -> tuple:
    """(block size, items per work-item) of the look-back scan for *dev* and dtype *dt*:
    the hooks' values, items halved until a tile and its work-group's totals fit the
    device's shared memory."""
    dt = np.dtype(dt)
    bs = _tuning.block_size(dev, dt, key)
    ipt = _tuning.items_per_thread(dev, dt, key)
    limit = int(dev.limits.get("max_shared_bytes") or 48 * 1024)
    while ipt > 1 and _shared_bytes(bs, ipt, dt) > limit:
        ipt //= 2
    while bs > 1 and _shared_bytes(bs, ipt, dt) > limit:
        bs //= 2
    return bs, ipt


def scan_lookback(d, op, init, exclusive, dev, key):
    """Inclusive (or exclusive, *init* first) scan of the contiguous 1-D device array *d*
    (at least one element) in one pass: see the module's docstring."""
    dt = d.dtype
    n = d.size
    bs, ipt = lookback_tile(dev, dt, key)
    tiles = cdiv(n, bs * ipt)
    out = empty(n, dt, dev)
    packed = _packed(dt)
    if not isinstance(packed, type):
        # [0]: the tile counter; [1 + t]: tile t's status, its values in aggs and incs
        status = empty(tiles + 1, np.int32, dev)
        aggs = empty(tiles, dt, dev)
        incs = empty(tiles, dt, dev)
    else:
        # [1 + t]: tile t's status (high 32 bits) and value (low 32 bits)
        status = empty(tiles + 1, np.int64, dev)
        aggs = incs = empty(1, dt, dev)
    zb = min(256, dev.max_threads_per_block)
    _zero[cdiv(tiles + 1, zb), zb](status, tiles + 1)
    use_init = init is not None
    init_v = scalar(init if use_init else 0, dt, "init")
    _lookback(op.fn, packed)[tiles, bs, None, _dynamic_bytes(bs, ipt, dt)](
        d, out, n, ipt, status, aggs, incs, init_v, use_init, bool(exclusive))
    return out
