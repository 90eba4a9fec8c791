"""Barriers that work-items which have returned no longer hold back, as CUDA's threads.

``if i >= n: return`` before a barrier, a barrier inside a branch only some
work-items take, a grid sync in such a branch: on CUDA the threads that returned
no longer count at the barrier.  On targets whose barriers wait for every work-item
the compiler rewrites such kernels (numba_gpux/converge.py); without it Intel's
OpenCL CPU driver skipped the rest of the kernel for the whole work-group, without
an error.  Each kernel here is checked against NumPy on every device."""

from __future__ import annotations

import numpy as np
import pytest

from numba.core import types

import numba_gpux as gpux

TPB = 64


@gpux.jit
def pair_sums(x, out):
    # the last block reaches past the data: its work-items past the end return
    sm = gpux.shared.array(TPB, np.float32)
    i = gpux.grid(1)
    t = gpux.thread_idx.x
    if i >= x.size:
        return
    sm[t] = x[i]
    gpux.barrier()
    if t + 1 < gpux.block_dim.x and i + 1 < x.size:
        out[i] = sm[t] + sm[t + 1]
    else:
        out[i] = sm[t]


def _pair_sums_want(x, block):
    want = x.copy()
    for i in range(x.size):
        if (i % block) + 1 < block and i + 1 < x.size:
            want[i] = x[i] + x[i + 1]
    return want


@pytest.mark.feature("barrier")
@pytest.mark.parametrize("n", [1, 63, 64, 100, 129, 1000])
def test_work_items_that_returned_do_not_hold_back_a_barrier(device, rng, n):
    x = rng.random(n).astype(np.float32)
    out = gpux.to_device(np.zeros(n, np.float32))
    pair_sums[(n + TPB - 1) // TPB, TPB](gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), _pair_sums_want(x, TPB))


@gpux.jit
def block_totals(x, out, rounds):
    # a loop of barriers after the early return: each round the first work-item adds
    # up what the block's live work-items wrote
    sm = gpux.shared.array(TPB, np.int64)
    i = gpux.grid(1)
    t = gpux.thread_idx.x
    b = gpux.block_idx.x
    if i >= x.size:
        return
    live = min(gpux.block_dim.x, x.size - b * gpux.block_dim.x)
    for r in range(rounds):
        sm[t] = x[i] * (r + 1)
        gpux.barrier()
        if t == 0:
            s = 0
            for k in range(live):
                s += sm[k]
            out[b, r] = s
        gpux.barrier()


@pytest.mark.feature("barrier")
def test_a_loop_of_barriers_after_an_early_return(device, rng):
    n, rounds = 150, 5
    x = rng.integers(-100, 100, n)
    blocks = (n + TPB - 1) // TPB
    out = gpux.to_device(np.zeros((blocks, rounds), np.int64))
    block_totals[blocks, TPB](gpux.to_device(x), out, rounds)
    sums = np.add.reduceat(x, np.arange(0, n, TPB))
    np.testing.assert_array_equal(out.copy_to_host(), sums[:, None] * np.arange(1, rounds + 1))


@gpux.jit
def sync_then_return(x, out):
    # a barrier the whole group meets first, then the return, then two more barriers
    sm = gpux.shared.array(TPB, np.float32)
    t = gpux.thread_idx.x
    i = gpux.grid(1)
    sm[t] = x[i] if i < x.size else 0.0
    gpux.barrier()
    if i >= x.size:
        return
    v = sm[(t + 1) % TPB]
    gpux.barrier()
    sm[t] = v * 2
    gpux.barrier()
    out[i] = sm[t] + 1


@pytest.mark.feature("barrier")
def test_a_return_between_barriers(device, rng):
    x = rng.random(100).astype(np.float32)
    out = gpux.to_device(np.zeros(100, np.float32))
    sync_then_return[2, TPB](gpux.to_device(x), out)
    padded = np.zeros(2 * TPB, np.float32)
    padded[:100] = x
    want = np.roll(padded.reshape(2, TPB), -1, axis=1).ravel()[:100] * 2 + 1
    np.testing.assert_array_equal(out.copy_to_host(), want)


@gpux.jit
def marked_then_synced(flags, out):
    # only the marked work-items meet the barrier; the others fall through and return
    i = gpux.grid(1)
    if i >= flags.size:
        return
    if flags[i]:
        out[i] = i
        gpux.barrier()
        out[i] += 1000


@pytest.mark.feature("barrier")
@pytest.mark.parametrize("block", [8, 32, 64])
def test_a_barrier_that_only_some_work_items_reach(device, block):
    flags = np.zeros(100, np.int32)
    flags[[0, 3, 6, 9, 20, 41, 99]] = 1
    out = gpux.to_device(np.full(100, -1.0))
    marked_then_synced[(100 + block - 1) // block, block](gpux.to_device(flags), out)
    want = np.where(flags == 1, np.arange(100) + 1000.0, -1.0)
    np.testing.assert_array_equal(out.copy_to_host(), want)


@gpux.jit
def label_runs(keys, labels):
    # each run of equal keys is labelled with its first index: the first work-item of a
    # run writes its index, synchronizes the grid, then fills the run; the others return
    i = gpux.grid(1)
    n = keys.size
    if i >= n:
        return
    if i == 0 or keys[i] != keys[i - 1]:
        labels[i] = i
        gpux.this_grid().sync()
        j = i + 1
        while j < n and labels[j] < 0:
            labels[j] = i
            j += 1


@pytest.mark.feature("grid_sync")
def test_a_grid_sync_in_a_branch_that_only_some_work_items_take(device):
    keys = np.repeat(np.arange(9), [3, 1, 7, 2, 5, 1, 1, 4, 6])
    n = keys.size
    sig = (types.int64[::1], types.int64[::1])
    # the smallest blocks (so the most of them) the device runs all at once
    fits = [b for b in (8, 16, 32, 64)
            if label_runs.max_cooperative_grid_blocks(b, signature=sig) >= (n + b - 1) // b]
    if not fits:
        pytest.skip(f"{device.spec} cannot run {n} work-items in blocks all at once")
    block = fits[0]
    blocks = (n + block - 1) // block
    labels = gpux.to_device(np.full(n, -1, np.int64))
    label_runs[blocks, block](gpux.to_device(keys), labels)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    np.testing.assert_array_equal(labels.copy_to_host(),
                                  np.repeat(starts, np.diff(np.r_[starts, n])))


@gpux.jit
def halves(x, out):
    # the two halves of a block meet different barriers (one each), then one common
    # barrier: as on CUDA, where a block's barriers count threads wherever they are
    # called, each round waits for every work-item still running
    sm = gpux.shared.array(TPB, np.float32)
    t = gpux.thread_idx.x
    i = gpux.grid(1)
    if i >= x.size:
        return
    if t < TPB // 2:
        sm[t] = x[i]
        gpux.barrier()
        v = sm[t ^ 1] if (i ^ 1) < x.size else sm[t]
    else:
        sm[t] = -x[i]
        gpux.barrier()
        v = sm[t ^ 1] * 2 if (i ^ 1) < x.size else sm[t] * 2
    gpux.barrier()
    sm[t] = v
    gpux.barrier()
    out[i] = sm[t ^ (TPB // 2)] if (i ^ (TPB // 2)) < x.size else v


def _halves_want(x):
    n, h = x.size, TPB // 2
    mine = np.arange(n)
    t = mine % TPB
    partner = np.where((mine ^ 1) < n, mine ^ 1, mine)
    v = np.where(t < h, x[partner], -2 * x[partner]).astype(np.float32)
    other = mine ^ h
    return np.where(other < n, v[np.minimum(other, n - 1)], v)


@pytest.mark.feature("barrier")
@pytest.mark.parametrize("n", [64, 100, 129, 1000])
def test_work_items_of_one_group_at_different_barriers(device, rng, n):
    x = rng.random(n).astype(np.float32)
    out = gpux.to_device(np.zeros(n, np.float32))
    halves[(n + TPB - 1) // TPB, TPB](gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), _halves_want(x))


# The kernels with barriers that reduce a predicate are marked "barrier", not
# "barrier_pred": rewritten, they count the predicates with work-group atomics in the
# dispatch, not with the target's own reduction (which PoCL gets wrong, skiplist.py).


@gpux.jit
def predicates_after_return(x, out):
    # barriers with a predicate count the work-items that have not returned only
    i = gpux.grid(1)
    if i >= x.size:
        return
    out[i, 0] = gpux.barrier_count(x[i] > 0)
    out[i, 1] = gpux.barrier_and(x[i] > -5)
    out[i, 2] = gpux.barrier_or(x[i] > 8)


def _per_block(x, block, *fns):
    want = np.zeros((x.size, len(fns)), np.int32)
    for s in range(0, x.size, block):
        for k, fn in enumerate(fns):
            want[s:s + block, k] = fn(x[s:s + block])
    return want


@pytest.mark.feature("barrier")
@pytest.mark.parametrize("n", [1, 63, 64, 100, 129, 1000])
def test_predicate_barriers_count_only_work_items_that_have_not_returned(device, rng, n):
    x = rng.integers(-6, 10, n).astype(np.int32)
    x[-1] = 9  # the or is true in the last block, the and false in some block
    x[0] = -6
    out = gpux.to_device(np.full((n, 3), -1, np.int32))
    predicates_after_return[(n + TPB - 1) // TPB, TPB](gpux.to_device(x), out)
    want = _per_block(x, TPB, lambda v: (v > 0).sum(), lambda v: (v > -5).all(),
                      lambda v: (v > 8).any())
    np.testing.assert_array_equal(out.copy_to_host(), want)


@gpux.jit
def counted_then_returned(x, out):
    # a predicate barrier that the whole group meets first (in the kernel's entry
    # block), then the return, then a plain barrier
    sm = gpux.shared.array(TPB, np.int32)
    t = gpux.thread_idx.x
    i = gpux.grid(1)
    c = gpux.barrier_count(t % 3 == 0)
    if i >= x.size:
        return
    sm[t] = x[i]
    gpux.barrier()
    out[i] = sm[t] * 1000 + c


@pytest.mark.feature("barrier")
def test_a_predicate_barrier_before_the_return(device, rng):
    x = rng.integers(0, 100, 100).astype(np.int32)
    out = gpux.to_device(np.zeros(100, np.int32))
    counted_then_returned[2, TPB](gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), x * 1000 + (TPB + 2) // 3)


@gpux.jit
def halvings(x, steps):
    # each work-item halves its value until the block's values are all at most 1:
    # the loop's condition is the group's, decided by a barrier with a predicate
    i = gpux.grid(1)
    if i >= x.size:
        return
    v = x[i]
    k = 0
    while gpux.barrier_or(v > 1):
        if v > 1:
            v //= 2
        k += 1
    steps[i] = k


@pytest.mark.feature("barrier")
def test_a_loop_on_a_predicate_barrier_after_an_early_return(device, rng):
    n = 150
    x = rng.integers(1, 5000, n)
    steps = gpux.to_device(np.zeros(n, np.int64))
    halvings[(n + TPB - 1) // TPB, TPB](gpux.to_device(x), steps)
    # the block's count of halvings is that of its largest value
    want = np.zeros(n, np.int64)
    for s in range(0, n, TPB):
        want[s:s + TPB] = int(x[s:s + TPB].max()).bit_length() - 1
    np.testing.assert_array_equal(steps.copy_to_host(), want)


@pytest.mark.feature("barrier")
def test_the_rewrite_keeps_line_information(device, rng):
    """A rewritten kernel compiled with line information (its calls need a location in
    a function that has debug information) runs and gives the same answer."""
    k = gpux.jit(lineinfo=True)(pair_sums.py_func)
    x = rng.random(100).astype(np.float32)
    out = gpux.to_device(np.zeros(100, np.float32))
    k[2, TPB](gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), _pair_sums_want(x, TPB))
