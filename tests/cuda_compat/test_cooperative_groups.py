"""numba.cuda's cooperative groups through the facade: ``cuda.cg.this_grid()``,
``g.sync()``, ``cuda.cg.this_thread_block()``, ``overload.cooperative`` and
``overload.max_cooperative_grid_blocks(blockdim)``, on every device."""

from __future__ import annotations

import numpy as np
import pytest
from numba import int32

import numba_gpux as gpux
from numba_gpux import cuda


def staircase(M):
    # each thread fills its column one row at a time from the row before, read in
    # the column of its mirror thread (another block's): a missing grid sync shows
    col = cuda.grid(1)
    grid = cuda.cg.this_grid()
    for row in range(1, M.shape[0]):
        M[row, col] = M[row - 1, M.shape[1] - 1 - col] + 1
        grid.sync()


def block_sum(x, out):
    # this_thread_block().sync() is syncthreads(): a shared reduction over the block
    sm = cuda.shared.array(64, np.int32)
    t = cuda.threadIdx.x
    sm[t] = x[cuda.grid(1)]
    block = cuda.cg.this_thread_block()
    block.sync()
    if t == 0:
        s = 0
        for k in range(64):
            s += sm[k]
        out[cuda.blockIdx.x] = s


def test_grid_sync_kernel_is_cooperative_and_runs_at_its_limit(device):
    sig = (int32[:, ::1],)
    kernel = cuda.jit(sig)(staircase)
    overload = kernel.overloads[sig]
    assert overload.cooperative
    per_1d = overload.max_cooperative_grid_blocks(32)
    assert per_1d >= 1
    assert overload.max_cooperative_grid_blocks((8, 4)) == per_1d
    assert overload.max_cooperative_grid_blocks((2, 4, 4)) == per_1d
    blocks = min(per_1d, 64)
    M = np.zeros((20, 32 * blocks), np.int32)
    kernel[blocks, 32](M)
    np.testing.assert_array_equal(M, np.tile(np.arange(20, dtype=np.int32)[:, None],
                                             (1, 32 * blocks)))


def test_kernels_without_grid_sync_are_not_cooperative(device):
    kernel = cuda.jit("void(int32[::1], int32[::1])")(block_sum)
    x = np.arange(128, dtype=np.int32)
    out = np.zeros(2, np.int32)
    with pytest.warns(gpux.NumpyArgumentWarning):
        kernel[2, 64](x, out)
    np.testing.assert_array_equal(out, x.reshape(2, 64).sum(1))
    assert [o.cooperative for o in kernel.overloads.values()] == [False]


def test_a_grid_larger_than_the_device_runs_at_once_is_refused(device):
    sig = (int32[:, ::1],)
    kernel = cuda.jit(sig)(staircase)
    limit = kernel.overloads[sig].max_cooperative_grid_blocks(32)
    M = cuda.to_device(np.zeros((4, 32 * (limit + 1)), np.int32))
    with pytest.raises(gpux.LaunchError, match="all its blocks must run at once"):
        kernel[limit + 1, 32](M)


@cuda.jit(device=True)
def _bump_and_wait(group, a, i):
    a[i] += 1
    group.sync()


def test_the_grid_group_passes_to_device_functions(device):
    @cuda.jit
    def kernel(a, b):
        g = cuda.cg.this_grid()
        i = cuda.grid(1)
        _bump_and_wait(g, a, i)
        b[i] = a[(i + cuda.blockDim.x) % a.size]

    sig = (int32[::1], int32[::1])
    kernel.compile(sig)
    blocks = min(2, kernel.overloads[sig].max_cooperative_grid_blocks(8))
    a = cuda.to_device(np.zeros(8 * blocks, np.int32))
    b = cuda.device_array(8 * blocks, np.int32)
    kernel[blocks, 8](a, b)
    assert (b.copy_to_host() == 1).all()
    assert all(o.cooperative for o in kernel.overloads.values())


def test_taking_the_grid_group_makes_a_kernel_cooperative(device):
    # as in numba.cuda: this_grid() alone marks the kernel (it then takes the hidden
    # buffer and the cooperative limit), and the kernel runs past it
    @cuda.jit
    def takes_group(A):
        cuda.cg.this_grid()
        A[0] = 1.0

    A = cuda.to_device(np.full(1, np.nan))
    takes_group[1, 1](A)
    assert A.copy_to_host()[0] == 1.0
    assert [o.cooperative for o in takes_group.overloads.values()] == [True]
