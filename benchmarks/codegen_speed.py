"""Speed of generated kernels next to the same kernels written by hand in OpenCL C.

Fourteen kernels, each written once as a numba-gpux kernel and once by hand in
OpenCL C, run on the same OpenCL device (Intel's OpenCL CPU driver here) in
the same process, on the same device-resident buffers, with the same global
and local sizes:

* ``saxpy``: ``out[i] = a * x[i] + y[i]``, float32;
* ``stencil``: 2-D 5-point stencil on a float64 grid (interior points);
* ``matmul``: tiled matrix product, float32, 16x16 tiles in shared memory;
* ``reduce``: tree reduction of float64 in shared memory, one partial sum
  per work-group;
* ``histogram``: 256-bin histogram of int32 values, per-group bins in shared
  memory updated with atomics, then global atomics;
* ``scan``: inclusive prefix sum of int32 within each work-group
  (Hillis-Steele in shared memory);
* ``transpose``: float32 matrix transpose through a padded shared-memory tile;
* ``math``: elementwise ``exp(-x*x) * sin(3x) + sqrt(|x| + 1)``, float32;

and six written the way CUDA users write them, each against the same indexing in
OpenCL C: ``stencil_ij`` (the stencil with ``i, j = grid(2)`` into ``[i, j]``: the
first index, which varies fastest across work-items, is the row), ``grid3d``
(``i, j, k = grid(3)`` into ``[i, j, k]``), ``strided`` (a ``[::2]`` view),
``transposed`` (the ``.T`` view of a C-ordered matrix), ``mixed_idx`` (an int32
index next to the int64 grid index) and ``sliding_row`` (the row kernel of
``sliding_dot.py``: float64, ten arguments, branches on ``i == 0`` and ``j == 0``,
``abs(j - i) > excl``, a conditional store; one launch over 20,000 work-items, where
a launch's fixed cost is a good part of its time).  Numba wraps negative indices
around (``T[j + m - 1]`` with ``j + m - 1 < 0`` reads from the end), which its C twin,
written as C programmers write it, does not: our code knows ``m >= 0`` when it is
launched so (``Target.int_argument_facts``; docs/performance.md).

Ours is launched through our API (``k[grid, block](*device_arrays)``), the
hand-written one through pyopencl (``knl(queue, gsize, lsize, *buffers)``)
on the same queue; each launch is followed by ``queue.finish()`` and timed
alone.  The two alternate launch by launch (so that load from other work on
the machine falls on both alike); every result is checked against the other
and against NumPy.  The ratio is hand-written time / our time (medians):
1.0 is the hand-written speed, below 1 is slower.  For the elementwise
kernels and the stencil, numba's ``@njit(parallel=True)`` on host arrays of
the same data runs in the same rounds and is shown as a third column.  The
elementwise kernels also run as a user launches n elements without choosing a
block size, ``k.forall(n)(...)`` (its block size is the device's tuning hook
``launch.forall_block_size``: the largest work-group on a CPU device), in the
same rounds.

Goals: geometric mean of the ratios at least 0.9, no kernel below 0.75, the
CUDA-style kernels each within 1.1x of their twin's time, and
the elementwise kernels within 1.25x of numba's parallel CPU code (launched by
``forall``; the report also says whether the table's fixed 256-wide launch is).

Usage: python benchmarks/codegen_speed.py [--reps 15] [--scale 1.0] [--only saxpy,math]
         [--out FILE]

``--reps`` is the number of timed launches of each (about a minute with the
default, under a minute); ``--scale`` multiplies the problem sizes (1.0: the sizes above).
"""

from __future__ import annotations

import argparse
import math as _math
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_import import machine, write_result  # noqa: E402

RESULTS = os.path.join(HERE, "results")
GOALS = {"geomean_min": 0.9, "kernel_min": 0.75, "numba_parallel_max": 1.25,
         "cuda_style_max": 1.1}
#: kernels written as CUDA users write them (first grid index the row, 3-D grids, views,
#: mixed index widths): each at most cuda_style_max times its OpenCL C twin's time
CUDA_STYLE = ("stencil_ij", "grid3d", "strided", "transposed", "mixed_idx", "sliding_row")
#: the elementwise kernels: also launched by ``kernel.forall(n)`` and compared with numba
ELEMENTWISE = ("saxpy", "math")

__all__ = ["main", "measure"]


# ------------------------------------------------------------------ the kernels
def _kernels():
    """The numba-gpux kernels, built on first use (importing numba_gpux is not free)."""
    import numba_gpux as gpux
    from numba import float32, float64, int32

    @gpux.jit
    def saxpy(a, x, y, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]

    @gpux.jit
    def stencil(a, out):
        x, y = gpux.grid(2)
        n, m = a.shape
        if 0 < y < n - 1 and 0 < x < m - 1:
            out[y, x] = 0.25 * (a[y - 1, x] + a[y + 1, x] + a[y, x - 1] + a[y, x + 1]) - a[y, x]

    T = 16

    @gpux.jit
    def matmul(a, b, c):
        ta = gpux.shared.array((T, T), float32)
        tb = gpux.shared.array((T, T), float32)
        tx = gpux.thread_idx.x
        ty = gpux.thread_idx.y
        col = gpux.block_idx.x * T + tx
        row = gpux.block_idx.y * T + ty
        n = a.shape[1]
        acc = float32(0.0)
        for t in range(n // T):
            ta[ty, tx] = a[row, t * T + tx]
            tb[ty, tx] = b[t * T + ty, col]
            gpux.barrier()
            for k in range(T):
                acc += ta[ty, k] * tb[k, tx]
            gpux.barrier()
        c[row, col] = acc

    B = 256

    @gpux.jit
    def reduce(x, partial):
        sh = gpux.shared.array(B, float64)
        tid = gpux.thread_idx.x
        i = gpux.grid(1)
        sh[tid] = x[i] if i < x.size else 0.0
        gpux.barrier()
        s = B // 2
        while s > 0:
            if tid < s:
                sh[tid] += sh[tid + s]
            gpux.barrier()
            s //= 2
        if tid == 0:
            partial[gpux.block_idx.x] = sh[0]

    BINS = 256

    @gpux.jit
    def histogram(x, bins):
        h = gpux.shared.array(BINS, int32)
        tid = gpux.thread_idx.x
        h[tid] = 0
        gpux.barrier()
        i = gpux.grid(1)
        if i < x.size:
            gpux.atomic.add(h, x[i], 1)
        gpux.barrier()
        gpux.atomic.add(bins, tid, h[tid])

    @gpux.jit
    def scan(x, out):
        sh = gpux.shared.array(B, int32)
        tid = gpux.thread_idx.x
        i = gpux.grid(1)
        sh[tid] = x[i]
        gpux.barrier()
        off = 1
        while off < B:
            v = sh[tid - off] if tid >= off else 0
            gpux.barrier()
            sh[tid] += v
            gpux.barrier()
            off *= 2
        out[i] = sh[tid]

    T1 = T + 1  # a padded row: no bank conflicts on GPUs

    @gpux.jit
    def transpose(a, out):
        tile = gpux.shared.array((T, T1), float32)
        tx = gpux.thread_idx.x
        ty = gpux.thread_idx.y
        x = gpux.block_idx.x * T + tx
        y = gpux.block_idx.y * T + ty
        tile[ty, tx] = a[y, x]
        gpux.barrier()
        x2 = gpux.block_idx.y * T + tx
        y2 = gpux.block_idx.x * T + ty
        out[y2, x2] = tile[tx, ty]

    @gpux.jit
    def mathk(x, out):
        i = gpux.grid(1)
        if i < out.size:
            v = x[i]
            # float32 constants: a float64 literal would make the arithmetic float64
            out[i] = _math.exp(-v * v) * _math.sin(float32(3.0) * v) + _math.sqrt(abs(v) + float32(1.0))

    # written the way CUDA users write them: the first grid index is the row
    @gpux.jit
    def stencil_ij(a, out):
        i, j = gpux.grid(2)
        n, m = a.shape
        if 0 < i < n - 1 and 0 < j < m - 1:
            out[i, j] = 0.25 * (a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1]) - a[i, j]

    @gpux.jit
    def grid3d(a, out):
        i, j, k = gpux.grid(3)
        if i < out.shape[0] and j < out.shape[1] and k < out.shape[2]:
            out[i, j, k] = a[i, j, k] * float32(2.0) + float32(1.0)

    @gpux.jit
    def strided(x, out):  # x: every other element of a longer array (a view)
        i = gpux.grid(1)
        if i < out.size:
            out[i] = x[i] * float32(2.0) + float32(1.0)

    @gpux.jit
    def transposed(at, out):  # at: the transpose of a C-ordered matrix (a view)
        i, j = gpux.grid(2)
        if i < out.shape[0] and j < out.shape[1]:
            out[i, j] = at[i, j] + float32(1.0)

    @gpux.jit
    def mixed_idx(x, w, out):  # an int64 grid index next to an int32 one
        i = gpux.grid(1)
        if i < out.size:
            j = int32(i & 1023)
            out[i] = x[i] * w[j] + w[int32(1023) - j]

    from sliding_dot import row_kernel

    sliding_row = gpux.jit(row_kernel)  # sliding_dot.py's row kernel

    return dict(saxpy=saxpy, stencil=stencil, matmul=matmul, reduce=reduce,
                histogram=histogram, scan=scan, transpose=transpose, math=mathk,
                stencil_ij=stencil_ij, grid3d=grid3d, strided=strided,
                transposed=transposed, mixed_idx=mixed_idx, sliding_row=sliding_row)


OPENCL_C = r"""
__kernel void saxpy(float a, __global const float *x, __global const float *y,
                    __global float *out, long n) {
    size_t i = get_global_id(0);
    if (i < n) out[i] = a * x[i] + y[i];
}

__kernel void stencil(__global const double *a, __global double *out, long n, long m) {
    size_t x = get_global_id(0), y = get_global_id(1);
    if (y > 0 && y < n - 1 && x > 0 && x < m - 1)
        out[y * m + x] = 0.25 * (a[(y - 1) * m + x] + a[(y + 1) * m + x]
                                 + a[y * m + x - 1] + a[y * m + x + 1]) - a[y * m + x];
}

#define T 16
__kernel void matmul(__global const float *a, __global const float *b, __global float *c,
                     long n) {
    __local float ta[T][T], tb[T][T];
    size_t tx = get_local_id(0), ty = get_local_id(1);
    size_t col = get_group_id(0) * T + tx, row = get_group_id(1) * T + ty;
    float acc = 0.0f;
    for (long t = 0; t < n / T; t++) {
        ta[ty][tx] = a[row * n + t * T + tx];
        tb[ty][tx] = b[(t * T + ty) * n + col];
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        for (int k = 0; k < T; k++) acc += ta[ty][k] * tb[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
    c[row * n + col] = acc;
}

#define B 256
__kernel void reduce(__global const double *x, __global double *partial, long n) {
    __local double sh[B];
    size_t tid = get_local_id(0), i = get_global_id(0);
    sh[tid] = i < n ? x[i] : 0.0;
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    for (int s = B / 2; s > 0; s /= 2) {
        if (tid < s) sh[tid] += sh[tid + s];
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
    if (tid == 0) partial[get_group_id(0)] = sh[0];
}

__kernel void histogram(__global const int *x, __global int *bins, long n) {
    __local int h[256];
    size_t tid = get_local_id(0), i = get_global_id(0);
    h[tid] = 0;
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    if (i < n) atomic_add(&h[x[i]], 1);
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    atomic_add(&bins[tid], h[tid]);
}

__kernel void scan(__global const int *x, __global int *out) {
    __local int sh[B];
    size_t tid = get_local_id(0), i = get_global_id(0);
    sh[tid] = x[i];
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    for (size_t off = 1; off < B; off *= 2) {
        int v = tid >= off ? sh[tid - off] : 0;
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
        sh[tid] += v;
        barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    }
    out[i] = sh[tid];
}

__kernel void transpose(__global const float *a, __global float *out, long n) {
    __local float tile[T][T + 1];
    size_t tx = get_local_id(0), ty = get_local_id(1);
    size_t x = get_group_id(0) * T + tx, y = get_group_id(1) * T + ty;
    tile[ty][tx] = a[y * n + x];
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    size_t x2 = get_group_id(1) * T + tx, y2 = get_group_id(0) * T + ty;
    out[y2 * n + x2] = tile[tx][ty];
}

__kernel void stencil_ij(__global const double *a, __global double *out, long n, long m) {
    long i = get_global_id(0), j = get_global_id(1);
    if (0 < i && i < n - 1 && 0 < j && j < m - 1)
        out[i * m + j] = 0.25 * (a[(i - 1) * m + j] + a[(i + 1) * m + j]
                                 + a[i * m + j - 1] + a[i * m + j + 1]) - a[i * m + j];
}

__kernel void grid3d(__global const float *a, __global float *out, long n0, long n1, long n2) {
    long i = get_global_id(0), j = get_global_id(1), k = get_global_id(2);
    if (i < n0 && j < n1 && k < n2)
        out[(i * n1 + j) * n2 + k] = a[(i * n1 + j) * n2 + k] * 2.0f + 1.0f;
}

__kernel void strided(__global const float *x, __global float *out, long n) {
    long i = get_global_id(0);
    if (i < n) out[i] = x[2 * i] * 2.0f + 1.0f;
}

__kernel void transposed(__global const float *a, __global float *out, long n, long m) {
    long i = get_global_id(0), j = get_global_id(1);
    if (i < n && j < m) out[i * m + j] = a[j * n + i] + 1.0f;
}

__kernel void mixed_idx(__global const float *x, __global const float *w, __global float *out,
                        long n) {
    long i = get_global_id(0);
    if (i < n) {
        int j = (int)(i & 1023);
        out[i] = x[i] * w[j] + w[1023 - j];
    }
}

/* T is a macro above: the series is ts */
__kernel void sliding_row(__global const double *ts, __global const double *mu,
                          __global const double *sig, __global const double *qt0,
                          __global const double *qt_prev, __global double *qt, long i, long m,
                          long excl, __global double *P, long n) {
#pragma OPENCL FP_CONTRACT OFF
    long j = get_global_id(0);
    if (j >= n) return;
    double q;
    if (i == 0) q = qt0[j];
    else if (j == 0) q = qt0[i];
    else q = qt_prev[j - 1] - ts[i - 1] * ts[j - 1] + ts[i + m - 1] * ts[j + m - 1];
    qt[j] = q;
    long dj = j - i;
    if ((dj < 0 ? -dj : dj) > excl) {
        double d = fmax(2.0 * m * (1.0 - (q - m * mu[i] * mu[j]) / (m * sig[i] * sig[j])), 0.0);
        if (d < P[j]) P[j] = d;
    }
}

__kernel void mathk(__global const float *x, __global float *out, long n) {
    size_t i = get_global_id(0);
    if (i < n) {
        float v = x[i];
        out[i] = exp(-v * v) * sin(3.0f * v) + sqrt(fabs(v) + 1.0f);
    }
}
"""


def _numba_parallel():
    """numba's parallel CPU versions of the elementwise kernels and the stencil."""
    from numba import njit, prange

    @njit(parallel=True)
    def saxpy(a, x, y, out):
        for i in prange(out.size):
            out[i] = a * x[i] + y[i]

    @njit(parallel=True)
    def stencil(a, out):
        n, m = a.shape
        for y in prange(1, n - 1):
            for x in range(1, m - 1):
                out[y, x] = 0.25 * (a[y - 1, x] + a[y + 1, x] + a[y, x - 1] + a[y, x + 1]) - a[y, x]

    @njit(parallel=True)
    def mathk(x, out):
        for i in prange(out.size):
            v = x[i]
            out[i] = np.exp(-v * v) * np.sin(np.float32(3.0) * v) + np.sqrt(abs(v) + np.float32(1.0))

    return {"saxpy": saxpy, "stencil": stencil, "math": mathk}


# ------------------------------------------------------------------ cases
class Case:
    """One kernel: its data, both launches, the check."""

    def __init__(self, name, ours, ours_cfg, ours_args, ref_name, gsize, lsize, ref_args,
                 outputs, check, reset=None, numba=None):
        self.name, self.ours, self.ours_cfg, self.ours_args = name, ours, ours_cfg, ours_args
        self.ref_name, self.gsize, self.lsize, self.ref_args = ref_name, gsize, lsize, ref_args
        self.outputs, self.check, self.reset, self.numba = outputs, check, reset, numba


def _cases(scale: float, rng):
    import numba_gpux as gpux

    ks = _kernels()
    dev = lambda a: gpux.to_device(np.ascontiguousarray(a))  # noqa: E731
    i64 = np.int64
    cases = []

    def side(k):  # a power of two near sqrt(k * 4M)
        return max(64, 1 << int(round(_math.log2(_math.sqrt(k * scale * (1 << 22))))))

    # saxpy
    n = max(1 << 12, int((1 << 22) * scale)) // 256 * 256
    x, y = rng.standard_normal(n, dtype=np.float32), rng.standard_normal(n, dtype=np.float32)
    dx, dy, d1, d2 = dev(x), dev(y), dev(np.zeros_like(x)), dev(np.zeros_like(x))
    a = np.float32(2.5)
    hx, hy, hout = x.copy(), y.copy(), np.zeros_like(x)
    cases.append(Case(
        "saxpy", ks["saxpy"], (n // 256, 256), (a, dx, dy, d1), "saxpy", (n,), (256,),
        (a, dx, dy, d2, i64(n)), (d1, d2),
        lambda o, r: np.allclose(o, a * x + y, rtol=1e-5, atol=1e-6) and np.allclose(o, r, rtol=1e-5, atol=1e-6),
        numba=("saxpy", (a, hx, hy, hout), hout, lambda h: np.allclose(h, a * x + y, rtol=1e-5, atol=1e-6))))

    # stencil
    s = side(1.0) // 2 * 2
    g = rng.standard_normal((s, s))
    dg, d1, d2 = dev(g), dev(np.zeros_like(g)), dev(np.zeros_like(g))
    want = np.zeros_like(g)
    want[1:-1, 1:-1] = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:]) - g[1:-1, 1:-1]
    hout = np.zeros_like(g)
    cases.append(Case(
        "stencil", ks["stencil"], ((s // 32, s // 8), (32, 8)), (dg, d1), "stencil", (s, s),
        (32, 8), (dg, d2, i64(s), i64(s)), (d1, d2),
        lambda o, r: np.allclose(o, want) and np.allclose(o, r, rtol=1e-14, atol=1e-14),
        numba=("stencil", (g, hout), hout, lambda h: np.allclose(h, want))))

    # matmul
    m = max(64, side(1 / 16) // 16 * 16)
    A = rng.standard_normal((m, m), dtype=np.float32)
    Bm = rng.standard_normal((m, m), dtype=np.float32)
    dA, dB, d1, d2 = dev(A), dev(Bm), dev(np.zeros_like(A)), dev(np.zeros_like(A))
    C = A.astype(np.float64) @ Bm.astype(np.float64)
    cases.append(Case(
        "matmul", ks["matmul"], ((m // 16, m // 16), (16, 16)), (dA, dB, d1), "matmul", (m, m),
        (16, 16), (dA, dB, d2, i64(m)), (d1, d2),
        lambda o, r: np.allclose(o, C, rtol=1e-3, atol=1e-2) and np.allclose(o, r, rtol=1e-4,
                                                                            atol=1e-3)))

    # reduction
    n = max(1 << 12, int((1 << 22) * scale)) // 256 * 256
    v = rng.standard_normal(n)
    dv, d1, d2 = dev(v), dev(np.zeros(n // 256)), dev(np.zeros(n // 256))
    want_r = v.reshape(-1, 256).sum(axis=1)
    cases.append(Case(
        "reduce", ks["reduce"], (n // 256, 256), (dv, d1), "reduce", (n,), (256,),
        (dv, d2, i64(n)), (d1, d2),
        lambda o, r: np.allclose(o, want_r) and np.allclose(o, r, rtol=1e-12, atol=1e-12)))

    # histogram
    hv = rng.integers(0, 256, n, dtype=np.int32)
    dh, d1, d2 = dev(hv), dev(np.zeros(256, np.int32)), dev(np.zeros(256, np.int32))
    want_h = np.bincount(hv, minlength=256).astype(np.int32)
    zero = np.zeros(256, np.int32)
    cases.append(Case(
        "histogram", ks["histogram"], (n // 256, 256), (dh, d1), "histogram", (n,), (256,),
        (dh, d2, i64(n)), (d1, d2),
        lambda o, r: np.array_equal(o, want_h) and np.array_equal(r, want_h),
        reset=lambda d1=d1, d2=d2: (d1.copy_to_device(zero), d2.copy_to_device(zero))))

    # scan
    sv = rng.integers(-100, 100, n, dtype=np.int32)
    ds, d1, d2 = dev(sv), dev(np.zeros(n, np.int32)), dev(np.zeros(n, np.int32))
    want_s = np.cumsum(sv.reshape(-1, 256), axis=1, dtype=np.int32).ravel()
    cases.append(Case(
        "scan", ks["scan"], (n // 256, 256), (ds, d1), "scan", (n,), (256,), (ds, d2), (d1, d2),
        lambda o, r: np.array_equal(o, want_s) and np.array_equal(r, want_s)))

    # transpose
    t = side(1.0) // 16 * 16
    M = rng.standard_normal((t, t), dtype=np.float32)
    dM, d1, d2 = dev(M), dev(np.zeros_like(M)), dev(np.zeros_like(M))
    cases.append(Case(
        "transpose", ks["transpose"], ((t // 16, t // 16), (16, 16)), (dM, d1), "transpose",
        (t, t), (16, 16), (dM, d2, i64(t)), (d1, d2),
        lambda o, r: np.array_equal(o, M.T) and np.array_equal(r, M.T)))

    # math
    n = max(1 << 12, int((1 << 22) * scale)) // 256 * 256
    mx = rng.standard_normal(n, dtype=np.float32) * 3
    dmx, d1, d2 = dev(mx), dev(np.zeros_like(mx)), dev(np.zeros_like(mx))
    x64 = mx.astype(np.float64)
    want_m = np.exp(-x64 * x64) * np.sin(3 * x64) + np.sqrt(np.abs(x64) + 1)
    hmx, hout = mx.copy(), np.zeros_like(mx)
    cases.append(Case(
        "math", ks["math"], (n // 256, 256), (dmx, d1), "mathk", (n,), (256,),
        (dmx, d2, i64(n)), (d1, d2),
        lambda o, r: np.allclose(o, want_m, rtol=1e-5, atol=1e-5) and np.allclose(o, r, rtol=1e-5,
                                                                                 atol=1e-5),
        numba=("math", (hmx, hout), hout, lambda h: np.allclose(h, want_m, rtol=1e-5, atol=1e-5))))
    # the same kinds of kernel, written the way CUDA users write them
    s = side(1.0) // 16 * 16
    g = rng.standard_normal((s, s))
    dg, d1, d2 = dev(g), dev(np.zeros_like(g)), dev(np.zeros_like(g))
    want_ij = np.zeros_like(g)
    want_ij[1:-1, 1:-1] = 0.25 * (g[:-2, 1:-1] + g[2:, 1:-1] + g[1:-1, :-2] + g[1:-1, 2:]) \
        - g[1:-1, 1:-1]
    cases.append(Case(
        "stencil_ij", ks["stencil_ij"], ((s // 16, s // 16), (16, 16)), (dg, d1), "stencil_ij",
        (s, s), (16, 16), (dg, d2, i64(s), i64(s)), (d1, d2),
        lambda o, r, w=want_ij: np.allclose(o, w) and np.allclose(o, r, rtol=1e-14, atol=1e-14)))

    n2, n1 = 256, 128
    n0 = max(8, int((1 << 22) * scale) // (n1 * n2)) // 8 * 8
    a3 = rng.standard_normal((n0, n1, n2), dtype=np.float32)
    da3, d1, d2 = dev(a3), dev(np.zeros_like(a3)), dev(np.zeros_like(a3))
    cases.append(Case(
        "grid3d", ks["grid3d"], ((n0 // 8, n1 // 8, n2 // 4), (8, 8, 4)), (da3, d1), "grid3d",
        (n0, n1, n2), (8, 8, 4), (da3, d2, i64(n0), i64(n1), i64(n2)), (d1, d2),
        lambda o, r, a3=a3: np.allclose(o, a3 * 2 + 1) and np.array_equal(o, r)))

    n = max(1 << 12, int((1 << 22) * scale)) // 256 * 256
    xf = rng.standard_normal(2 * n, dtype=np.float32)
    dxf, d1, d2 = dev(xf), dev(np.zeros(n, np.float32)), dev(np.zeros(n, np.float32))
    cases.append(Case(
        "strided", ks["strided"], (n // 256, 256), (dxf[::2], d1), "strided", (n,), (256,),
        (dxf, d2, i64(n)), (d1, d2),
        lambda o, r, xf=xf: np.allclose(o, xf[::2] * 2 + 1) and np.array_equal(o, r)))

    m = side(1.0) // 16 * 16
    At = rng.standard_normal((m, m), dtype=np.float32)
    dAt, d1, d2 = dev(At), dev(np.zeros_like(At)), dev(np.zeros_like(At))
    cases.append(Case(
        "transposed", ks["transposed"], ((m // 16, m // 16), (16, 16)), (dAt.T, d1),
        "transposed", (m, m), (16, 16), (dAt, d2, i64(m), i64(m)), (d1, d2),
        lambda o, r, At=At: np.allclose(o, At.T + 1) and np.array_equal(o, r)))

    xm = rng.standard_normal(n, dtype=np.float32)
    wm = rng.standard_normal(1024, dtype=np.float32)
    dxm, dwm, d1, d2 = dev(xm), dev(wm), dev(np.zeros_like(xm)), dev(np.zeros_like(xm))
    jm = np.arange(n) & 1023
    cases.append(Case(
        "mixed_idx", ks["mixed_idx"], (n // 256, 256), (dxm, dwm, d1), "mixed_idx", (n,), (256,),
        (dxm, dwm, d2, i64(n)), (d1, d2),
        lambda o, r, w=xm * wm[jm] + wm[1023 - jm]: np.allclose(o, w, rtol=1e-5, atol=1e-6)
        and np.allclose(o, r, rtol=1e-6, atol=1e-6)))

    cases.append(_sliding_row_case(ks["sliding_row"], scale, rng, dev))
    return cases


def _sliding_row_case(kernel, scale, rng, dev):
    """sliding_dot.py's row kernel at one row ``i`` (a third of the way along, so that
    both sides of the exclusion zone are in the launch), launched as that script
    launches it: blocks of 256 over the row's windows."""
    n, m = max(1000, int(20000 * scale)), 100
    nw, excl = n - m + 1, m // 4
    T = np.cumsum(rng.standard_normal(n))
    c = np.concatenate(([0.0], np.cumsum(T)))
    c2 = np.concatenate(([0.0], np.cumsum(T * T)))
    mu = (c[m:] - c[:-m]) / m
    sig = np.sqrt(np.maximum((c2[m:] - c2[:-m]) / m - mu * mu, 0.0))
    i = nw // 3
    qt0 = np.correlate(T, T[:m], mode="valid")
    qt_prev = np.correlate(T, T[i - 1:i - 1 + m], mode="valid")  # row i - 1 of QT
    P0 = np.full(nw, np.inf)
    # row i by its recurrence, and the profile after it
    want_q = np.empty(nw)
    want_q[0] = qt0[i]
    want_q[1:] = qt_prev[:-1] - T[i - 1] * T[:nw - 1] + T[i + m - 1] * T[m:m + nw - 1]
    d = np.maximum(2.0 * m * (1.0 - (want_q - m * mu[i] * mu) / (m * sig[i] * sig)), 0.0)
    want_p = np.where(np.abs(np.arange(nw) - i) > excl, np.minimum(d, P0), P0)
    dT, dmu, dsig, dq0, dqp = dev(T), dev(mu), dev(sig), dev(qt0), dev(qt_prev)
    q1, q2, p1, p2 = dev(np.zeros(nw)), dev(np.zeros(nw)), dev(P0), dev(P0)
    blocks = (nw + 255) // 256
    i64 = np.int64

    def check(o, r):
        return (np.allclose(o[0], want_q, rtol=1e-9) and np.allclose(o[1], want_p, rtol=1e-6)
                and np.allclose(o[0], r[0], rtol=1e-12) and np.allclose(o[1], r[1], rtol=1e-9))

    def reset():
        p1.copy_to_device(P0)
        p2.copy_to_device(P0)

    return Case(
        "sliding_row", kernel, (blocks, 256), (dT, dmu, dsig, dq0, dqp, q1, i, m, excl, p1),
        "sliding_row", (blocks * 256,), (256,),
        (dT, dmu, dsig, dq0, dqp, q2, i64(i), i64(m), i64(excl), p2, i64(nw)),
        (_Pair(q1, p1), _Pair(q2, p2)), check, reset=reset)


class _Pair:
    """Two device arrays read back as one output (a kernel that writes two)."""

    def __init__(self, a, b):
        self.a, self.b = a, b

    def copy_to_host(self):
        return self.a.copy_to_host(), self.b.copy_to_host()


def _host_args(args):
    import numba_gpux as gpux

    return [a.handle if isinstance(a, gpux.DeviceArray) else a for a in args]


def measure(reps: int = 15, scale: float = 1.0, only=None, seed: int = 0) -> dict:
    """Time every case; the result dict that is printed and written as JSON."""
    import pyopencl as cl

    import numba_gpux as gpux

    rng = np.random.default_rng(seed)
    device = gpux.default_device()
    rt = device.runtime
    queue = rt.queue
    prg = cl.Program(rt.context, OPENCL_C).build()
    cases = [c for c in _cases(scale, rng) if not only or c.name in only]
    numba_fns = _numba_parallel() if any(c.numba for c in cases) else {}
    T = time.perf_counter
    out = {"reps": reps, "scale": scale, "seed": seed, "device": str(device), "kernels": {}}
    for c in cases:
        knl = getattr(prg, c.ref_name)
        ref_args = _host_args(c.ref_args)
        knl.set_scalar_arg_dtypes([None if isinstance(a, cl.Buffer) else type(a) for a in ref_args])
        launch_ours = c.ours[c.ours_cfg]

        def ours():
            launch_ours(*c.ours_args)
            queue.finish()

        def ref():
            knl(queue, c.gsize, c.lsize, *ref_args)
            queue.finish()

        nb = None
        if c.numba:
            fn = numba_fns[c.numba[0]]
            nb_args = c.numba[1]
            nb = lambda: fn(*nb_args)  # noqa: E731
        fa = None
        if c.name in ELEMENTWISE:  # as a user launches n elements: kernel.forall(n)
            launch_forall = c.ours.forall(c.ours_cfg[0] * c.ours_cfg[1])

            def fa():
                launch_forall(*c.ours_args)
                queue.finish()
        t0 = T()
        ours()  # compile and load
        compile_s = T() - t0
        ref()
        if nb:
            nb()  # compile
        if fa:
            fa()
        if c.reset:
            c.reset()
        ours()
        ref()
        o, r = (d.copy_to_host() for d in c.outputs)
        ok = bool(c.check(o, r))
        nb_ok = None
        if nb:
            nb()
            nb_ok = bool(c.numba[3](c.numba[2]))
        times = {"ours": [], "opencl_c": []}
        if nb:
            times["numba_parallel"] = []
        if fa:
            times["ours_forall"] = []
        for _ in range(reps):
            for name, f in (("ours", ours), ("opencl_c", ref), ("numba_parallel", nb),
                            ("ours_forall", fa)):
                if f is None:
                    continue
                t0 = T()
                f()
                times[name].append(T() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        mins = {k: min(v) for k, v in times.items()}
        rec = {"ok": ok, "compile_s": compile_s, "times_s": times, "median_s": med, "min_s": mins,
               "ratio": med["opencl_c"] / med["ours"],
               # the least disturbed launches: on a shared machine a second view
               "ratio_of_minima": mins["opencl_c"] / mins["ours"]}
        if nb:
            rec["numba_ok"] = nb_ok
            rec["numba_ratio"] = med["numba_parallel"] / med["ours"]
        if fa:
            rec["forall_block_size"] = launch_forall.blockdim[0]
            if nb:
                rec["numba_ratio_forall"] = med["numba_parallel"] / med["ours_forall"]
        out["kernels"][c.name] = rec
        print(f"  {c.name:10s} ours {med['ours'] * 1e3:8.3f} ms  OpenCL C "
              f"{med['opencl_c'] * 1e3:8.3f} ms  ratio {rec['ratio']:.2f} "
              f"(of minima {rec['ratio_of_minima']:.2f})"
              + (f"  numba parallel {med['numba_parallel'] * 1e3:8.3f} ms" if nb else "")
              + (f"  ours by forall {med['ours_forall'] * 1e3:8.3f} ms" if fa else "")
              + ("" if ok else "  RESULT MISMATCH"), flush=True)
    ratios = [k["ratio"] for k in out["kernels"].values()]
    geo = _math.exp(sum(map(_math.log, ratios)) / len(ratios)) if ratios else float("nan")
    elementwise = [out["kernels"][n] for n in ELEMENTWISE if n in out["kernels"]]
    out["geomean"] = geo
    mins = [k["ratio_of_minima"] for k in out["kernels"].values()]
    out["geomean_of_minima"] = (_math.exp(sum(map(_math.log, mins)) / len(mins)) if mins
                                else float("nan"))
    out["goal"] = {
        **GOALS,
        "geomean_met": geo >= GOALS["geomean_min"],
        "kernel_min_met": all(r >= GOALS["kernel_min"] for r in ratios),
        # ours / numba parallel time <= 1.25, i.e. numba_ratio >= 1/1.25; ours launched
        # as a user launches n elements, kernel.forall(n) (its block size is the device's
        # tuning hook launch.forall_block_size)
        "numba_parallel_met": all(k["numba_ratio_forall"] >= 1 / GOALS["numba_parallel_max"]
                                  for k in elementwise),
        "numba_parallel_met_same_launch": all(
            k["numba_ratio"] >= 1 / GOALS["numba_parallel_max"] for k in elementwise),
        "cuda_style_met": all(out["kernels"][n]["ratio"] >= 1 / GOALS["cuda_style_max"]
                              for n in CUDA_STYLE if n in out["kernels"]),
        "all_results_ok": all(k["ok"] for k in out["kernels"].values()),
    }
    return out


def report(res: dict) -> str:
    lines = ["| kernel | numba-gpux (ms) | hand-written OpenCL C (ms) | ratio (C / ours) "
             "| ratio of minima | numba parallel (ms) | numba-gpux by forall (ms) | results |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, k in res["kernels"].items():
        med = k["median_s"]
        nb = f"{med['numba_parallel'] * 1e3:.2f}" if "numba_parallel" in med else "-"
        fa = (f"{med['ours_forall'] * 1e3:.2f} (block {k['forall_block_size']})"
              if "ours_forall" in med else "-")
        lines.append(f"| {name} | {med['ours'] * 1e3:.2f} | {med['opencl_c'] * 1e3:.2f} | "
                     f"{k['ratio']:.2f} | {k['ratio_of_minima']:.2f} | {nb} | {fa} | "
                     f"{'ok' if k['ok'] else 'MISMATCH'} |")
    g = res["goal"]
    lines.append("")
    lines.append(f"geomean {res['geomean']:.2f}, of minima {res['geomean_of_minima']:.2f} (goal >= {g['geomean_min']}: "
                 f"{'met' if g['geomean_met'] else 'NOT met'}); every kernel >= {g['kernel_min']}: "
                 f"{'met' if g['kernel_min_met'] else 'NOT met'}; elementwise within "
                 f"{g['numba_parallel_max']}x of numba parallel, launched by forall: "
                 f"{'met' if g['numba_parallel_met'] else 'NOT met'} (with the table's "
                 f"launch: {'met' if g['numba_parallel_met_same_launch'] else 'NOT met'}); "
                 f"CUDA-style kernels within {g['cuda_style_max']}x of OpenCL C: "
                 f"{'met' if g['cuda_style_met'] else 'NOT met'}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=15, help="timed launches of each kernel")
    p.add_argument("--scale", type=float, default=1.0, help="problem size factor")
    p.add_argument("--only", default="", help="comma-separated kernel names")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=os.path.join(RESULTS, "codegen_speed.json"))
    a = p.parse_args(argv)
    only = {s for s in a.only.split(",") if s} or None
    res = measure(a.reps, a.scale, only, a.seed)
    res["machine"] = machine()
    print(report(res))
    if a.out:
        write_result(a.out, res)
    return 0 if res["goal"]["all_results_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
