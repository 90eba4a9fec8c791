"""numba.cuda's documentation examples (numba-cuda 0.30.4,
numba/cuda/tests/doc_examples), run with only the import changed to
``from numba_gpux import cuda``, on every available device."""

import math

import numpy as np
import pytest

from numba_gpux import cuda

from numba_gpux.cuda.intrinsics import Unavailable


def needs(*objs):
    """Skip while one of the facade names is still a placeholder."""
    for obj in objs:
        if isinstance(obj, Unavailable):
            pytest.skip(f"{obj._name} is not supported by numba_gpux yet")


def test_ex_vecadd(device):
    @cuda.jit
    def f(a, b, c):
        # like threadIdx.x + (blockIdx.x * blockDim.x)
        tid = cuda.grid(1)
        size = len(c)
        if tid < size:
            c[tid] = a[tid] + b[tid]

    np.random.seed(1)
    N = 100000
    a = cuda.to_device(np.random.random(N))
    b = cuda.to_device(np.random.random(N))
    c = cuda.device_array_like(a)
    f.forall(len(a))(a, b, c)
    np.testing.assert_equal(c.copy_to_host(), a.copy_to_host() + b.copy_to_host())
    c = cuda.device_array_like(a)
    nthreads = 256
    nblocks = (len(a) // nthreads) + 1
    f[nblocks, nthreads](a, b, c)
    np.testing.assert_equal(c.copy_to_host(), a.copy_to_host() + b.copy_to_host())


def test_ex_matmul(device):
    @cuda.jit
    def matmul(A, B, C):
        """Perform square matrix multiplication of C = A * B."""
        i, j = cuda.grid(2)
        if i < C.shape[0] and j < C.shape[1]:
            tmp = 0.0
            for k in range(A.shape[1]):
                tmp += A[i, k] * B[k, j]
            C[i, j] = tmp

    x_h = np.arange(16).reshape([4, 4])
    y_h = np.ones([4, 4])
    z_h = np.zeros([4, 4])
    x_d = cuda.to_device(x_h)
    y_d = cuda.to_device(y_h)
    z_d = cuda.to_device(z_h)
    threadsperblock = (16, 16)
    blockspergrid_x = math.ceil(z_h.shape[0] / threadsperblock[0])
    blockspergrid_y = math.ceil(z_h.shape[1] / threadsperblock[1])
    blockspergrid = (blockspergrid_x, blockspergrid_y)
    matmul[blockspergrid, threadsperblock](x_d, y_d, z_d)
    z_h = z_d.copy_to_host()
    np.testing.assert_equal(z_h, x_h @ y_h)


def test_ex_fast_matmul(device):
    needs(cuda.shared)
    from numba_gpux.cuda import float32

    TPB = 16

    @cuda.jit
    def fast_matmul(A, B, C):
        sA = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
        sB = cuda.shared.array(shape=(TPB, TPB), dtype=float32)
        x, y = cuda.grid(2)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        bpg = cuda.gridDim.x  # blocks per grid
        tmp = float32(0.0)
        for i in range(bpg):
            sA[ty, tx] = 0
            sB[ty, tx] = 0
            if y < A.shape[0] and (tx + i * TPB) < A.shape[1]:
                sA[ty, tx] = A[y, tx + i * TPB]
            if x < B.shape[1] and (ty + i * TPB) < B.shape[0]:
                sB[ty, tx] = B[ty + i * TPB, x]
            cuda.syncthreads()
            for j in range(TPB):
                tmp += sA[ty, j] * sB[j, tx]
            cuda.syncthreads()
        if y < C.shape[0] and x < C.shape[1]:
            C[y, x] = tmp

    for xs, ys, zs in (((4, 4), (4, 4), (4, 4)), ((5, 23), (23, 7), (5, 7))):
        x_h = np.arange(int(np.prod(xs))).reshape(xs)
        y_h = np.ones(ys)
        z_h = np.zeros(zs)
        x_d, y_d, z_d = cuda.to_device(x_h), cuda.to_device(y_h), cuda.to_device(z_h)
        threadsperblock = (TPB, TPB)
        grid_y_max = max(x_h.shape[0], y_h.shape[0])
        grid_x_max = max(x_h.shape[1], y_h.shape[1])
        blockspergrid = (math.ceil(grid_x_max / TPB), math.ceil(grid_y_max / TPB))
        fast_matmul[blockspergrid, threadsperblock](x_d, y_d, z_d)
        z_h = z_d.copy_to_host()
        assert np.all(z_h == x_h @ y_h)


def test_ex_reduction(device):
    needs(cuda.shared)
    from numba_gpux.cuda.types import int32

    a = cuda.to_device(np.arange(1024))
    nelem = len(a)
    # the doc example uses one block of 1024 threads; fewer where the device allows fewer
    nelem = min(nelem, cuda.get_current_device().MAX_THREADS_PER_BLOCK)

    @cuda.jit
    def array_sum(data):
        tid = cuda.threadIdx.x
        size = len(data)
        if tid < size:
            i = cuda.grid(1)
            shr = cuda.shared.array(nelem, int32)
            shr[tid] = data[i]
            cuda.syncthreads()
            s = 1
            while s < cuda.blockDim.x:
                if tid % (2 * s) == 0:
                    shr[tid] += shr[tid + s]
                s *= 2
                cuda.syncthreads()
            if tid == 0:
                data[tid] = shr[tid]

    array_sum[1, nelem](a)
    np.testing.assert_equal(a[0], sum(np.arange(nelem)))


def test_ex_3d_grid_random(device):
    from numba_gpux.cuda.random import (
        create_xoroshiro128p_states,
        xoroshiro128p_uniform_float32,
    )
    needs(xoroshiro128p_uniform_float32)

    @cuda.jit
    def random_3d(arr, rng_states):
        startx, starty, startz = cuda.grid(3)
        stridex, stridey, stridez = cuda.gridsize(3)
        tid = (startz * stridey * stridex) + (starty * stridex) + startx
        for i in range(startz, arr.shape[0], stridez):
            for j in range(starty, arr.shape[1], stridey):
                for k in range(startx, arr.shape[2], stridex):
                    arr[i, j, k] = xoroshiro128p_uniform_float32(rng_states, tid)

    # the documentation's 701x900x719 array (1.8 GB) shrunk for a test
    X, Y, Z = 71, 90, 72
    bx, by, bz = 4, 4, 4
    gx, gy, gz = 4, 4, 4
    nthreads = bx * by * bz * gx * gy * gz
    rng_states = create_xoroshiro128p_states(nthreads, seed=1)
    arr = cuda.device_array((X, Y, Z), dtype=np.float32)
    random_3d[(gx, gy, gz), (bx, by, bz)](arr, rng_states)
    host_arr = arr.copy_to_host()
    assert 0.49 < np.mean(host_arr) < 0.51
    assert np.all(host_arr <= 1.0) and np.all(host_arr >= 0.0)


def test_ex_montecarlo(device):
    import numba
    from numba_gpux.cuda.random import (
        create_xoroshiro128p_states,
        xoroshiro128p_uniform_float32,
    )
    needs(xoroshiro128p_uniform_float32)

    nsamps = 1000000

    @cuda.jit
    def mc_integrator_kernel(out, rng_states, lower_lim, upper_lim):
        size = len(out)
        gid = cuda.grid(1)
        if gid < size:
            samp = xoroshiro128p_uniform_float32(rng_states, gid)
            samp = samp * (upper_lim - lower_lim) + lower_lim
            y = func(samp)
            out[gid] = y

    @cuda.reduce
    def sum_reduce(a, b):
        return a + b

    def mc_integrate(lower_lim, upper_lim, nsamps):
        out = cuda.to_device(np.zeros(nsamps, dtype="float32"))
        rng_states = create_xoroshiro128p_states(nsamps, seed=42)
        mc_integrator_kernel.forall(nsamps)(out, rng_states, lower_lim, upper_lim)
        factor = (upper_lim - lower_lim) / (nsamps - 1)
        return sum_reduce(out) * factor

    @numba.jit
    def func(x):
        return 1.0 / x

    np.testing.assert_allclose(mc_integrate(1, 2, nsamps), 0.69315, atol=0.001)
    np.testing.assert_allclose(mc_integrate(2, 3, nsamps), 0.4055, atol=0.001)
