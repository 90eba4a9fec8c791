"""Launch arguments that change between launches of the same kernel reach it.

A runtime may keep a kernel's arguments between launches and set only those
that changed (OpenCL does, issue 7): scalars (signed zeros and NaN included),
arrays swapped or re-allocated, views of one buffer at other offsets, launch
dimensions, dynamic shared memory sizes and launches from several threads.
"""

import math
import threading

import numpy as np
import pytest

import numba_gpux as gpux

#: the quick subset that .ci/run also runs on the other CPythons
pytestmark = pytest.mark.quick

N = 16


@gpux.jit
def scalars(out, a, b, k):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = math.copysign(1.0, a) * (b + k) + i


@gpux.jit
def scale(x, y, f):
    i = gpux.grid(1)
    if i < y.size:
        y[i] = x[i] * f


@gpux.jit
def bump(x):
    i = gpux.grid(1)
    if i < x.size:
        x[i] += 1


@gpux.jit
def dims(out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = gpux.gridsize(1)


@gpux.jit
def shared_size(out):
    f = gpux.shared.array(0, np.float32)
    if gpux.grid(1) == 0:
        out[0] = f.size


def test_changed_scalars_reach_the_kernel(device):
    out = gpux.to_device(np.zeros(N, np.float32))
    cfg = scalars[1, N]
    idx = np.arange(N, dtype=np.float32)
    cases = [(1.0, 2.0, 3), (1.0, 2.0, 3), (0.0, 2.0, 3), (-0.0, 2.0, 3), (-0.0, 2.0, 3),
             (0.0, 2.0, 3), (1.0, 5.0, 3), (1.0, 5.0, -7), (np.float32(-2), np.float32(0.5), 3),
             (float("nan"), 1.0, 1), (-1.0, 1.0, 1), (1.0, 1.0, 1)]
    for a, b, k in cases:
        cfg(out, a, b, k)
        want = math.copysign(1.0, a) * (np.float32(b) + k) + idx
        np.testing.assert_array_equal(out.copy_to_host(), want.astype(np.float32),
                                      err_msg=f"a={a!r} b={b!r} k={k!r}")


def test_swapped_arrays_and_views(device):
    x = gpux.to_device(np.arange(2 * N, dtype=np.float32))
    y = gpux.to_device(np.zeros(2 * N, np.float32))
    cfg = scale[1, 2 * N]
    cfg(x, y, np.float32(2))
    np.testing.assert_array_equal(y.copy_to_host(), np.arange(2 * N) * 2)
    cfg(y, x, np.float32(0.5))                      # swapped
    np.testing.assert_array_equal(x.copy_to_host(), np.arange(2 * N))
    cfg(x, y, np.float32(3))                        # back
    np.testing.assert_array_equal(y.copy_to_host(), np.arange(2 * N) * 3)
    lo, hi = x[:N], x[N:]                           # one buffer, other offsets
    out = gpux.to_device(np.zeros(N, np.float32))
    for src, base in ((lo, 0), (hi, N), (lo, 0), (x[::2], None)):
        scale[1, N](src, out, np.float32(1))
        want = np.arange(0, 2 * N, 2) if base is None else np.arange(base, base + N)
        np.testing.assert_array_equal(out.copy_to_host(), want)


def test_new_allocations_after_frees(device):
    cfg = bump[1, N]
    for k in range(20):
        d = gpux.to_device(np.full(N, k, np.int64))
        cfg(d)
        np.testing.assert_array_equal(d.copy_to_host(), np.full(N, k + 1))
        del d


def test_launch_dimensions_change(device):
    out = gpux.to_device(np.zeros(4 * N, np.int64))
    for blocks in (1, 2, 1, 4, 4, 2):
        dims[blocks, N](out)
        got = out.copy_to_host()
        assert (got[:blocks * N] == blocks * N).all(), (blocks, got)


@pytest.mark.feature("shared_dynamic")
def test_dynamic_shared_size_changes(device):
    out = gpux.to_device(np.zeros(1, np.int64))
    for nbytes in (16, 64, 64, 16, 128):
        shared_size[1, N, None, nbytes](out)
        assert out.copy_to_host()[0] == nbytes // 4


def test_launches_from_several_threads(device):
    nthreads, rounds = 4, 50
    arrays = [gpux.to_device(np.zeros(N, np.int64)) for _ in range(nthreads)]
    errors = []

    def work(d):
        try:
            for _ in range(rounds):
                bump[1, N](d)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(d,)) for d in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    gpux.synchronize()
    for d in arrays:
        np.testing.assert_array_equal(d.copy_to_host(), np.full(N, rounds))
    for d in arrays:  # afterwards, from one thread: each launch sees its own array
        bump[1, N](d)
        np.testing.assert_array_equal(d.copy_to_host(), np.full(N, rounds + 1))
