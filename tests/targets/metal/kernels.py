"""Kernels whose MSL is generated and checked on every machine (plus the conformance
suite's CONFORMANCE_KERNELS, collected by test_msl.py)."""

import math

import numpy as np

import numba_gpux as gpux
from numba import float32, uint32


@gpux.jit
def saxpy(a, x, y, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a * x[i] + math.sin(y[i])


@gpux.jit
def matmul(a, b, c):
    i, j = gpux.grid(2)
    if i < c.shape[0] and j < c.shape[1]:
        s = 0.0
        for k in range(a.shape[1]):
            s += a[i, k] * b[k, j]
        c[i, j] = s


@gpux.jit
def loops(n, out):
    i = gpux.grid(1)
    if i < out.size:
        acc = 0
        for k in range(i):
            acc += k
        j = 0
        while j < n:
            if j == 3:
                j += 1
                continue
            if acc > 1000:
                break
            acc += 1
            j += 1
        out[i] = acc


@gpux.jit
def block_reverse(x, out):
    tmp = gpux.shared.array(64, float32)
    t = gpux.thread_idx.x
    i = gpux.grid(1)
    tmp[t] = x[i]
    gpux.barrier()
    out[i] = tmp[gpux.block_dim.x - 1 - t]


@gpux.jit
def math_f32(x, out):
    i = gpux.grid(1)
    if i < x.size:
        v = x[i]
        out[i] = (math.exp(v) + math.log1p(v) + math.expm1(v) + gpux.cbrt(v) + math.hypot(v, 2.0)
                  + math.atan2(v, 3.0) + math.fmod(v, 0.7) + math.floor(v) + abs(v) + v ** 2.5)


@gpux.jit
def atomics_f32(a, f, u):
    i = gpux.grid(1)  # noqa: F841 - the kernel reads its index, as written for Metal
    s = gpux.shared.array(4, float32)
    gpux.atomic.add(a, 0, 1)
    gpux.atomic.max(f, 0, f[1])
    gpux.atomic.cas(f, 2, float32(0), float32(1))
    gpux.atomic.add(s, 0, float32(1))
    gpux.atomic.inc(u, 0, u[1])


@gpux.jit
def predicates_dynamic_shared(x, out):
    buf = gpux.shared.array(0, float32)
    t = gpux.thread_idx.x
    buf[t] = x[gpux.grid(1)]
    n = gpux.barrier_count(buf[t] > 1)
    r = gpux.brev(uint32(t)) >> uint32(31)
    out[gpux.grid(1)] = float32(n) + buf[gpux.block_dim.x - 1 - t] + float32(r)


@gpux.jit(debug=True)
def checked_index(x, out):
    i = gpux.grid(1)
    out[i] = x[i] * float32(2)


@gpux.jit
def heap_scratch(out, n):
    tmp = np.zeros(n, float32)       # a run-time size: from the device heap
    for i in range(n):
        tmp[i] = float32(i) * float32(0.5)
    out[gpux.grid(1)] = tmp.sum() + np.sqrt(tmp).max()


@gpux.jit
def heap_churn(out, rounds):
    acc = float32(0)
    for r in range(rounds):
        t = np.full((rounds, r + 1), float32(r))   # a 2-D shape: its product is checked
        acc += t[r % rounds, r]
    out[gpux.grid(1)] = acc


KERNELS = [
    (saxpy, "void(float32, float32[::1], float32[::1], float32[::1])"),
    (matmul, "void(float32[:,:], float32[:,:], float32[:,:])"),
    (loops, "void(int64, int64[::1])"),
    (block_reverse, "void(float32[::1], float32[::1])"),
    (math_f32, "void(float32[::1], float32[::1])"),
    (atomics_f32, "void(int32[::1], float32[::1], uint32[::1])"),
    (predicates_dynamic_shared, "void(float32[::1], float32[::1])"),
    (checked_index, "void(float32[::1], float32[::1])"),
    (heap_scratch, "void(float32[::1], int64)"),
    (heap_churn, "void(float32[::1], int64)"),
]
