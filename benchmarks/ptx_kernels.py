"""The PTX-quality benchmark's kernels, written once in numba.cuda's spelling.

Every kernel here is plain numba.cuda source: ``cuda.grid``, ``cuda.threadIdx``,
``cuda.shared.array``, ``cuda.atomic.add``, ``cuda.syncthreads``, ``math`` ...
The module binds ``cuda`` to :mod:`numba_gpux.cuda`; ``ptx_quality.py`` compiles
each kernel twice in the same run: with ``numba_gpux.cuda.compile_ptx`` (these
globals) and with ``numba.cuda.compile_ptx`` (the same code object with ``cuda``,
``xoroshiro128p_*`` and the device functions re-bound to numba.cuda's).

The set covers what ``tests/conformance/*.py`` and ``tests/targets/cuda/kernels.py``
exercise: indices, integer/float/complex arithmetic, math in float32 and
float64, loops, strided (non-contiguous) arrays, shared memory with barrier
reductions, local and constant arrays, atomics on global and shared memory,
warp shuffles and votes, bit intrinsics, random numbers, print and device
functions.

``KERNELS`` is a list of ``(group, function, [signatures])`` or ``(group, function,
[signatures], options)`` (compile options given to both sides, e.g. ``fastmath``); a
signature is a string, or a callable taking the ``cuda`` module and returning one (for
record types).
"""

from __future__ import annotations

import cmath
import math

import numpy as np

from numba_gpux import cuda
from numba_gpux.cuda.random import (
    xoroshiro128p_normal_float32, xoroshiro128p_normal_float64, xoroshiro128p_uniform_float32,
    xoroshiro128p_uniform_float64,
)

__all__ = ["KERNELS", "DEVICE_FUNCTIONS", "RANDOM_NAMES", "cases"]

TPB = 64
WARP = 32
TABLE = np.arange(40, dtype=np.float64).reshape(5, 8) * 0.5
LUT = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.int32)


# ------------------------------------------------------------------ indices, arithmetic

def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def add_2d(a, b, out):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = a[i, j] + b[i, j]


def scale_3d(a, s, out):
    i, j, k = cuda.grid(3)
    if i < out.shape[0] and j < out.shape[1] and k < out.shape[2]:
        out[i, j, k] = a[i, j, k] * s


def explicit_indices(x, out):
    # threadIdx/blockIdx/blockDim/gridDim spelled out, 2-D
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    i = cuda.blockIdx.x * cuda.blockDim.x + tx
    j = cuda.blockIdx.y * cuda.blockDim.y + ty
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = x[i, j] * (cuda.gridDim.x + cuda.gridDim.y)


def int_ops(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        x, y = a[i], b[i]
        out[i, 0] = x + y
        out[i, 1] = x * y
        out[i, 2] = x // y if y != 0 else 0
        out[i, 3] = x % y if y != 0 else 0
        out[i, 4] = x ^ y
        out[i, 5] = (x << 3) | (y >> 1)
        out[i, 6] = max(x, y)


def float_arith(a, b, out):
    i = cuda.grid(1)
    if i < a.size:
        x, y = a[i], b[i]
        out[i, 0] = x / y
        out[i, 1] = x % y
        out[i, 2] = x // y
        out[i, 3] = min(x, y) - abs(y)
        out[i, 4] = x ** 2 + y ** 3


def complex_mul(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] * b[i] + 1j


def complex_math(z, w, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        a, b = z[i], w[i]
        out[i, 0] = a * b - a / b
        out[i, 1] = cmath.exp(a)
        out[i, 2] = cmath.sqrt(a)
        out[i, 3] = abs(b)


def tuple_and_bool(t, flag, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = t[0] * i + t[1] if flag else -1.0


def half_arith(a, b, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        x, y = a[i], b[i]
        out[i, 0] = x + y
        out[i, 1] = x * y - x
        out[i, 2] = -x


def records(r, out):
    i = cuda.grid(1)
    if i < r.size:
        out[i] = r[i].a * r[i].b


RECORD = np.dtype([("a", np.float64), ("b", np.int32)], align=True)


# ------------------------------------------------------------------ math

def math_unary(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i, 0] = math.sin(v)
        out[i, 1] = math.cos(v)
        out[i, 2] = math.tan(v)
        out[i, 3] = math.exp(v)
        out[i, 4] = math.log(abs(v) + 1)
        out[i, 5] = math.sqrt(abs(v))
        out[i, 6] = math.tanh(v)
        out[i, 7] = math.erf(v)
        out[i, 8] = math.floor(v)
        out[i, 9] = math.atan2(v, 2.0)


def math_special(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        out[i, 0] = math.pow(abs(v), 1.5)
        out[i, 1] = math.hypot(v, 3.0)
        out[i, 2] = math.lgamma(abs(v) + 1)
        out[i, 3] = math.gamma(abs(v) + 1)
        out[i, 4] = math.fmod(v, 1.25)
        out[i, 5] = math.expm1(v)
        out[i, 6] = math.log1p(abs(v))
        out[i, 7] = math.asinh(v)
        out[i, 8] = math.copysign(2.0, v)
        out[i, 9] = math.erfc(v)


def math_single(x, out):
    # one function per kernel: the cost of a single libdevice call
    i = cuda.grid(1)
    if i < x.size:
        out[i] = math.sin(x[i])


def math_exp(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = math.exp(x[i]) * 0.5


def rounding(x, r0, r1, r2):
    i = cuda.grid(1)
    if i < x.size:
        r0[i] = round(x[i])
        r1[i] = round(x[i], 1)
        r2[i] = math.trunc(x[i]) + math.ceil(x[i])


def float_intrinsics(a, b, c, f, r):
    i = cuda.grid(1)
    if i < a.size:
        f[i] = cuda.fma(a[i], b[i], c[i])
        r[i] = cuda.cbrt(a[i])


# ------------------------------------------------------------------ bits, select

def bit_counts(x, pc, lz, fs):
    i = cuda.grid(1)
    if i < x.size:
        pc[i] = cuda.popc(x[i])
        lz[i] = cuda.clz(x[i])
        fs[i] = cuda.ffs(x[i])


def bit_reverse(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = cuda.brev(x[i])


def selects(cond, a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = cuda.selp(cond[i], a[i], b[i])


# ------------------------------------------------------------------ loops, strided arrays

def grid_stride_copy(src, dst):
    start = cuda.grid(1)
    step = cuda.gridsize(1)
    for i in range(start, dst.size, step):
        dst[i] = src[i]


def grid_stride_saxpy(a, x, y, out):
    for i in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[i] = a * x[i] + y[i]


def strided_sum_rows(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j]
        out[i] = s


def matmul_naive(a, b, c):
    i, j = cuda.grid(2)
    if i < c.shape[0] and j < c.shape[1]:
        s = 0.0
        for k in range(a.shape[1]):
            s += a[i, k] * b[k, j]
        c[i, j] = s


def while_loop(x, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        n = 0
        while v > 1 and n < 100:   # Collatz steps, capped
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            n += 1
        out[i] = n


# ------------------------------------------------------------------ device functions

@cuda.jit(device=True)
def clamp(v, lo, hi):
    return min(max(v, lo), hi)


@cuda.jit(device=True)
def poly(v):
    return (v * 0.5 + 1.0) * v - 2.0


def device_calls(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = clamp(poly(x[i]), -1.0, 1.0)


# ------------------------------------------------------------------ shared memory, barriers

def block_reverse(x, out):
    i = cuda.grid(1)
    t = cuda.threadIdx.x
    n = cuda.blockDim.x
    v = x[i]
    cuda.syncthreads()
    out[cuda.blockIdx.x * n + (n - 1 - t)] = v


def shared_reverse(x, out):
    t = cuda.threadIdx.x
    sm = cuda.shared.array(TPB, x.dtype)
    sm[t] = x[t]
    cuda.syncthreads()
    out[t] = sm[TPB - 1 - t]


def shared_2d_3d(out2, out3):
    t = cuda.threadIdx.x
    a = cuda.shared.array((4, 16), np.float32)
    b = cuda.shared.array((2, 3, 4), np.int64)
    if t < 64:
        a[t // 16, t % 16] = t * 0.5
    if t < 24:
        b[t // 12, (t // 4) % 3, t % 4] = t * 3
    cuda.syncthreads()
    if t < 64:
        out2[t // 16, t % 16] = a[3 - t // 16, 15 - t % 16]
    if t < 24:
        out3[t // 12, (t // 4) % 3, t % 4] = b[1 - t // 12, 2 - (t // 4) % 3, 3 - t % 4]


@cuda.jit(device=True)
def block_sum(v):
    sm = cuda.shared.array(TPB, np.float64)
    t = cuda.threadIdx.x
    sm[t] = v
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            sm[t] += sm[t + s]
        cuda.syncthreads()
        s //= 2
    r = sm[0]
    cuda.syncthreads()
    return r


def shared_reduction(x, out):
    i = cuda.grid(1)
    first = block_sum(x[i])
    second = block_sum(x[i] * 2)
    if cuda.threadIdx.x == 0:
        out[cuda.blockIdx.x, 0] = first
        out[cuda.blockIdx.x, 1] = second


def tree_reduce_f32(x, out):
    sm = cuda.shared.array(TPB, np.float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    sm[t] = x[i] if i < x.size else 0
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if t < s:
            sm[t] += sm[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        cuda.atomic.add(out, 0, sm[0])


def shared_tile_transpose(a, out):
    tile = cuda.shared.array((16, 17), np.float32)
    x = cuda.blockIdx.x * 16 + cuda.threadIdx.x
    y = cuda.blockIdx.y * 16 + cuda.threadIdx.y
    if y < a.shape[0] and x < a.shape[1]:
        tile[cuda.threadIdx.y, cuda.threadIdx.x] = a[y, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * 16 + cuda.threadIdx.x
    y = cuda.blockIdx.x * 16 + cuda.threadIdx.y
    if y < out.shape[0] and x < out.shape[1]:
        out[y, x] = tile[cuda.threadIdx.x, cuda.threadIdx.y]


def dynamic_reverse(x, out):
    t = cuda.threadIdx.x
    sm = cuda.shared.array(0, np.float64)
    n = min(sm.size, x.size)
    if t < n:
        sm[t] = x[t]
    cuda.syncthreads()
    if t < n:
        out[t] = sm[n - 1 - t]


def shared_dtypes(out8, outb, outu64):
    t = cuda.threadIdx.x
    a = cuda.shared.array(TPB, np.uint8)
    b = cuda.shared.array(TPB, np.bool_)
    c = cuda.shared.array(TPB, np.uint64)
    a[t] = t * 7
    b[t] = t % 3 == 0
    c[t] = np.uint64(1) << np.uint64(t + 30)
    cuda.syncthreads()
    out8[t] = a[TPB - 1 - t]
    outb[t] = b[TPB - 1 - t]
    outu64[t] = c[TPB - 1 - t]


def local_arrays(x, out):
    i = cuda.grid(1)
    if i < x.size:
        a = cuda.local.array(8, np.int64)
        m = cuda.local.array((2, 3), np.float32)
        for k in range(8):
            a[k] = x[i] * k
        for r in range(2):
            for c in range(3):
                m[r, c] = r * 10 + c + x[i]
        s = 0
        for k in range(8):
            s += a[k]
        out[i] = s + m[1, 2]


def const_arrays(out, out2):
    i = cuda.grid(1)
    t = cuda.const.array_like(TABLE)
    lut = cuda.const.array_like(LUT)
    if i < out.size:
        out[i] = t[i % 5, i % 8] + lut[i % 8]
        out2[i] = lut[(i + 1) % 8]


def sync_predicates(x, out):
    t = cuda.threadIdx.x
    b = cuda.blockIdx.x
    v = x[cuda.grid(1)]
    c = cuda.syncthreads_count(v)      # numba.cuda's predicates are int32
    a = cuda.syncthreads_and(v)
    o = cuda.syncthreads_or(v)
    if t == 0:
        out[b, 0] = c
        out[b, 1] = a
        out[b, 2] = o


def fences(flag, data, out):
    t = cuda.threadIdx.x
    if t == 0:
        data[0] = 42
        cuda.threadfence_block()
        data[1] = 43
        cuda.threadfence()
        data[2] = 44
        cuda.threadfence_system()
        flag[0] = 1
    cuda.syncthreads()
    out[t] = flag[0] * (data[0] + data[1] + data[2])


# ------------------------------------------------------------------ atomics

def atomic_add_global(ary, idx, vals, old):
    i = cuda.grid(1)
    if i < vals.size:
        old[i] = cuda.atomic.add(ary, idx[i], vals[i])


def atomic_add_shared(ary, idx, vals, old):
    t = cuda.threadIdx.x
    sm = cuda.shared.array(TPB, ary.dtype)
    if t < ary.size:
        sm[t] = ary[t]
    cuda.syncthreads()
    if t < vals.size:
        old[t] = cuda.atomic.add(sm, idx[t], vals[t])
    cuda.syncthreads()
    if t < ary.size:
        ary[t] = sm[t]


def atomic_minmax_global(ary, idx, vals, old):
    i = cuda.grid(1)
    if i < vals.size:
        old[i, 0] = cuda.atomic.min(ary, idx[i], vals[i])
        old[i, 1] = cuda.atomic.max(ary, idx[i] + 1, vals[i])


def atomic_nan_minmax(ary, vals, old):
    old[0] = cuda.atomic.nanmin(ary, 0, vals[0])
    old[1] = cuda.atomic.nanmax(ary, 1, vals[1])


def atomic_bitwise(ary, vals, old):
    i = cuda.grid(1)
    if i < vals.size:
        old[i, 0] = cuda.atomic.and_(ary, 0, vals[i])
        old[i, 1] = cuda.atomic.or_(ary, 1, vals[i])
        old[i, 2] = cuda.atomic.xor(ary, 2, vals[i])
        old[i, 3] = cuda.atomic.exch(ary, 3, vals[i])
        old[i, 4] = cuda.atomic.sub(ary, 4, vals[i])


def atomic_inc_dec(ary, vals, old):
    i = cuda.grid(1)
    if i < vals.size:
        old[i, 0] = cuda.atomic.inc(ary, 0, vals[i])
        old[i, 1] = cuda.atomic.dec(ary, 1, vals[i])


def atomic_cas(ary, expected, new, old):
    i = cuda.grid(1)
    if i < ary.size:
        old[i] = cuda.atomic.cas(ary, i, expected[i], new[i])


def atomic_add_2d(ary, vals):
    i, j = cuda.grid(2)
    if i < vals.shape[0] and j < vals.shape[1]:
        cuda.atomic.add(ary, (i % 2, j % 3), vals[i, j])


def histogram(x, bins):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(bins, x[i] % bins.size, 1)


# ------------------------------------------------------------------ warps

def warp_shuffles(v, out):
    i = cuda.grid(1)
    lane = cuda.laneid
    x = v[i]
    out[i, 0] = cuda.shfl_sync(0xFFFFFFFF, x, 0)
    out[i, 1] = cuda.shfl_sync(0xFFFFFFFF, x, WARP - 1 - lane)
    out[i, 2] = cuda.shfl_up_sync(0xFFFFFFFF, x, 1)
    out[i, 3] = cuda.shfl_down_sync(0xFFFFFFFF, x, 2)
    out[i, 4] = cuda.shfl_xor_sync(0xFFFFFFFF, x, 1)


def warp_sum(v, out):
    i = cuda.grid(1)
    x = v[i]
    off = 16
    while off > 0:
        x += cuda.shfl_down_sync(0xFFFFFFFF, x, off)
        off //= 2
    if cuda.laneid == 0:
        out[i // WARP] = x


def warp_votes(v, out):
    i = cuda.grid(1)
    m = cuda.activemask()
    out[i, 0] = cuda.all_sync(m, v[i] > 0)
    out[i, 1] = cuda.any_sync(m, v[i] == 7)
    out[i, 2] = cuda.ballot_sync(m, v[i] % 3 == 0)
    out[i, 3] = cuda.eq_sync(m, v[i] > 5)


def warp_match(v, out):
    i = cuda.grid(1)
    out[i, 0] = cuda.match_any_sync(0xFFFFFFFF, v[i])
    out[i, 1] = cuda.match_all_sync(0xFFFFFFFF, v[i])[0]


def warp_sync(v, out):
    i = cuda.grid(1)
    out[i] = v[i] + 1
    cuda.syncwarp(0xFFFFFFFF)
    out[i] += cuda.shfl_xor_sync(0xFFFFFFFF, out[i], 1)


# ------------------------------------------------------------------ random, print

def rand_uniform(states, out):
    i = cuda.grid(1)
    if i < states.size:
        for j in range(out.shape[1]):
            out[i, j] = xoroshiro128p_uniform_float32(states, i)


def rand_uniform64(states, out):
    i = cuda.grid(1)
    if i < states.size:
        for j in range(out.shape[1]):
            out[i, j] = xoroshiro128p_uniform_float64(states, i)


def rand_normal(states, out):
    i = cuda.grid(1)
    if i < states.size:
        out[i, 0] = xoroshiro128p_normal_float32(states, i)
        out[i, 1] = xoroshiro128p_normal_float64(states, i)


def print_values(a, n):
    i = cuda.grid(1)
    if i < n:
        print("item", i, a[i])


def _states(cuda_mod):
    """``void(xoroshiro128p records[::1], ...)``: the record type from the module's own
    ``random`` (numba.cuda and numba_gpux spell the same dtype)."""
    from numba import from_dtype
    from numba.core import types

    rec = from_dtype(np.dtype([("s0", np.uint64), ("s1", np.uint64)], align=True))
    return types.Array(rec, 1, "C")


def _rand_sig(out_dtype):
    def sig(cuda_mod):
        from numba.core import types

        return (_states(cuda_mod), types.Array(out_dtype, 2, "C"))
    return sig


def _records_sig(cuda_mod):
    from numba import from_dtype
    from numba.core import types

    return (types.Array(from_dtype(RECORD), 1, "C"), types.float64[::1])


F32, F64 = "float32", "float64"
INTS = ("int32", "uint32", "int64", "uint64")
ALL = INTS + (F32, F64)


def _v(ty):
    return f"{ty}[::1]"


KERNELS = [
    ("indices", saxpy, [f"void({t}, {t}[::1], {t}[::1], {t}[::1])" for t in (F32, F64)]),
    ("indices", add_2d, ["void(float32[:, ::1], float32[:, ::1], float32[:, ::1])",
                         "void(int64[:, :], int64[:, :], int64[:, :])"]),
    ("indices", scale_3d, ["void(float32[:, :, ::1], float32, float32[:, :, ::1])"]),
    ("indices", explicit_indices, ["void(float32[:, ::1], float32[:, ::1])"]),
    ("arith", int_ops, [f"void({t}[::1], {t}[::1], {t}[:, ::1])" for t in ("int32", "int64")]),
    ("arith", float_arith, [f"void({t}[::1], {t}[::1], {t}[:, ::1])" for t in (F32, F64)]),
    ("arith", complex_mul, ["void(complex64[::1], complex64[::1], complex64[::1])"]),
    ("arith", complex_math, ["void(complex128[::1], complex128[::1], complex128[:, ::1])"]),
    ("arith", tuple_and_bool, ["void(UniTuple(float64, 2), boolean, float64[::1])"]),
    ("arith", half_arith, ["void(float16[::1], float16[::1], float16[:, ::1])"]),
    ("arith", records, [_records_sig]),
    ("math", math_unary, [f"void({t}[::1], {t}[:, ::1])" for t in (F32, F64)]),
    ("math", math_special, [f"void({t}[::1], {t}[:, ::1])" for t in (F32, F64)]),
    ("math", math_single, [f"void({t}[::1], {t}[::1])" for t in (F32, F64)]),
    ("math", math_exp, [f"void({t}[::1], {t}[::1])" for t in (F32, F64)]),
    ("math", rounding, [f"void({t}[::1], int64[::1], {t}[::1], {t}[::1])" for t in (F32, F64)]),
    ("math", float_intrinsics, [f"void({t}[::1], {t}[::1], {t}[::1], {t}[::1], {t}[::1])"
                                for t in (F32, F64)]),
    ("bits", bit_counts, [f"void({t}[::1], {t}[::1], {t}[::1], uint32[::1])" for t in INTS]),
    ("bits", bit_reverse, [f"void({t}[::1], {t}[::1])" for t in INTS]),
    ("bits", selects, [f"void(boolean[::1], {t}[::1], {t}[::1], {t}[::1])"
                       for t in ("int32", "uint64", F32)]),
    ("loops", grid_stride_copy, [f"void({t}[::1], {t}[::1])" for t in (F32, F64)]
     + ["void(float64[:], float64[:])"]),
    ("loops", grid_stride_saxpy, ["void(float32, float32[::1], float32[::1], float32[::1])"]),
    ("loops", strided_sum_rows, ["void(float64[:, :], float64[::1])",
                                 "void(float32[:, ::1], float32[::1])"]),
    ("loops", matmul_naive, ["void(float32[:, ::1], float32[:, ::1], float32[:, ::1])",
                             "void(float64[:, :], float64[:, :], float64[:, :])"]),
    ("loops", while_loop, ["void(int64[::1], int32[::1])"]),
    ("device", device_calls, [f"void({t}[::1], {t}[::1])" for t in (F32, F64)]),
    ("shared", block_reverse, ["void(float32[::1], float32[::1])"]),
    ("shared", shared_reverse, [f"void({t}[::1], {t}[::1])" for t in (F32, "int32", F64)]),
    ("shared", shared_2d_3d, ["void(float32[:, ::1], int64[:, :, ::1])"]),
    ("shared", shared_reduction, ["void(float64[::1], float64[:, ::1])"]),
    ("shared", tree_reduce_f32, ["void(float32[::1], float32[::1])"]),
    ("shared", shared_tile_transpose, ["void(float32[:, ::1], float32[:, ::1])"]),
    ("shared", dynamic_reverse, ["void(float64[::1], float64[::1])"]),
    ("shared", shared_dtypes, ["void(uint8[::1], boolean[::1], uint64[::1])"]),
    ("memory", local_arrays, ["void(int64[::1], float64[::1])"]),
    ("memory", const_arrays, ["void(float64[::1], int32[::1])"]),
    ("sync", sync_predicates, ["void(int32[::1], int32[:, ::1])"]),
    ("sync", fences, ["void(int32[::1], int32[::1], int32[::1])"]),
    ("atomics", atomic_add_global, [f"void({t}[::1], int64[::1], {t}[::1], {t}[::1])"
                                    for t in ALL]),
    ("atomics", atomic_add_shared, [f"void({t}[::1], int64[::1], {t}[::1], {t}[::1])"
                                    for t in ALL]),
    ("atomics", atomic_minmax_global, [f"void({t}[::1], int64[::1], {t}[::1], {t}[:, ::1])"
                                       for t in ALL]),
    ("atomics", atomic_nan_minmax, [f"void({t}[::1], {t}[::1], {t}[::1])" for t in (F32, F64)]),
    ("atomics", atomic_bitwise, [f"void({t}[::1], {t}[::1], {t}[:, ::1])" for t in INTS]),
    ("atomics", atomic_inc_dec, [f"void({t}[::1], {t}[::1], {t}[:, ::1])"
                                 for t in ("uint32", "uint64")]),
    ("atomics", atomic_cas, [f"void({t}[::1], {t}[::1], {t}[::1], {t}[::1])"
                             for t in ("int32", "uint32", "int64", "uint64")]),
    ("atomics", atomic_add_2d, ["void(float64[:, ::1], float64[:, ::1])",
                                "void(int32[:, ::1], int32[:, ::1])"]),
    ("atomics", histogram, ["void(int32[::1], uint32[::1])"]),
    ("warps", warp_shuffles, [f"void({t}[::1], {t}[:, ::1])" for t in ("int32", "int64", F32, F64)]),
    ("warps", warp_sum, [f"void({t}[::1], {t}[::1])" for t in (F32, "int32")]),
    ("warps", warp_votes, ["void(int32[::1], uint32[:, ::1])"]),
    ("warps", warp_match, ["void(int32[::1], uint32[:, ::1])"]),
    ("warps", warp_sync, ["void(int32[::1], int32[::1])"]),
    ("random", rand_uniform, [_rand_sig(__import__("numba").float32)]),
    ("random", rand_uniform64, [_rand_sig(__import__("numba").float64)]),
    ("random", rand_normal, [_rand_sig(__import__("numba").float64)]),
    ("print", print_values, ["void(float32[::1], int64)"]),
    # fastmath: approximate math, division and square root, denormals flushed
    ("fastmath", math_unary, [f"void({F32}[::1], {F32}[:, ::1])"], {"fastmath": True}),
    ("fastmath", math_special, [f"void({F32}[::1], {F32}[:, ::1])"], {"fastmath": True}),
    ("fastmath", float_arith, [f"void({F32}[::1], {F32}[::1], {F32}[:, ::1])"],
     {"fastmath": True}),
    ("fastmath", matmul_naive, ["void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"],
     {"fastmath": True}),
]

#: module-level device functions (re-wrapped with numba.cuda's ``jit`` for the reference)
DEVICE_FUNCTIONS = ("clamp", "poly", "block_sum")
#: names from ``cuda.random`` the kernels use as globals
RANDOM_NAMES = ("xoroshiro128p_uniform_float32", "xoroshiro128p_uniform_float64",
                "xoroshiro128p_normal_float32", "xoroshiro128p_normal_float64")


def _sig_text(sig) -> str:
    if isinstance(sig, str):
        return sig
    return "void(" + ", ".join(str(t) for t in sig) + ")"


def cases(filter_text: str = ""):
    """``(id, group, function, signature, options)`` for every kernel and signature; a
    signature that depends on the module is returned as the callable."""
    out = []
    for group, fn, sigs, *opts in KERNELS:
        for sig in sigs:
            sig_for_id = sig if isinstance(sig, str) else _sig_text(sig(cuda))
            ident = f"{group}.{fn.__name__}[{sig_for_id}]"
            if filter_text in ident:
                out.append((ident, group, fn, sig, opts[0] if opts else {}))
    return out
