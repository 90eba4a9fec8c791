"""Kernels (with signatures) whose PTX the CUDA tests check and the PTX
benchmark measures.  ``collect()`` adds every ``CONFORMANCE_KERNELS`` list of
(kernel, signature) that a ``tests/conformance/`` module exposes."""

from __future__ import annotations

import importlib.util
import math
import os
import sys

import numba_gpux as gpux

__all__ = ["KERNELS", "collect"]


@gpux.jit
def saxpy(a, x, y, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@gpux.jit
def add_2d(a, b, out):
    i, j = gpux.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = a[i, j] + b[i, j]


@gpux.jit
def scale_3d(a, s, out):
    i, j, k = gpux.grid(3)
    if i < out.shape[0] and j < out.shape[1] and k < out.shape[2]:
        out[i, j, k] = a[i, j, k] * s


@gpux.jit
def grid_stride_copy(src, dst):
    start = gpux.grid(1)
    step = gpux.gridsize(1)
    for i in range(start, dst.size, step):
        dst[i] = src[i]


@gpux.jit
def math_unary(x, out):  # compiled for float32 and float64
    i = gpux.grid(1)
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


@gpux.jit
def math_special(x, out):
    i = gpux.grid(1)
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


@gpux.jit(device=True)
def _clamp(v, lo, hi):
    return min(max(v, lo), hi)


@gpux.jit(device=True)
def _poly(v):
    return (v * 0.5 + 1.0) * v - 2.0


@gpux.jit
def device_calls(x, out):
    i = gpux.grid(1)
    if i < x.size:
        out[i] = _clamp(_poly(x[i]), -1.0, 1.0)


@gpux.jit
def block_reverse(x, out):
    # a barrier between reads and writes of global memory within one block
    i = gpux.grid(1)
    t = gpux.thread_idx.x
    n = gpux.block_dim.x
    v = x[i]
    gpux.barrier()
    out[gpux.block_idx.x * n + (n - 1 - t)] = v


@gpux.jit
def int_ops(a, b, out):
    i = gpux.grid(1)
    if i < a.size:
        x, y = a[i], b[i]
        out[i, 0] = x + y
        out[i, 1] = x * y
        out[i, 2] = x // y if y != 0 else 0
        out[i, 3] = x % y if y != 0 else 0
        out[i, 4] = x ^ y
        out[i, 5] = (x << 3) | (y >> 1)
        out[i, 6] = max(x, y)


@gpux.jit
def strided_sum_rows(a, out):
    i = gpux.grid(1)
    if i < a.shape[0]:
        s = 0.0
        for j in range(a.shape[1]):
            s += a[i, j]
        out[i] = s


@gpux.jit
def complex_mul(a, b, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a[i] * b[i] + 1j


@gpux.jit
def tuple_and_bool(t, flag, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = t[0] * i + t[1] if flag else -1.0


@gpux.jit
def any_in_row(d, out):
    # a flag set in a loop of a run-time trip count: the loop vectorizer's or of <4 x i1>
    # vectors, which InstCombine tests as an i4 (legalize_bits.bool_vector_bits on OpenCL)
    i = gpux.grid(1)
    found = False
    for j in range(d.shape[1]):
        if d[i, j] != 0:
            found = True
    out[i] = found


KERNELS = [
    (saxpy, "void(float32, float32[::1], float32[::1], float32[::1])"),
    (saxpy, "void(float64, float64[::1], float64[::1], float64[::1])"),
    (add_2d, "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])"),
    (add_2d, "void(int64[:, :], int64[:, :], int64[:, :])"),
    (scale_3d, "void(float32[:, :, ::1], float32, float32[:, :, ::1])"),
    (grid_stride_copy, "void(float64[::1], float64[::1])"),
    (math_unary, "void(float32[::1], float32[:, ::1])"),
    (math_unary, "void(float64[::1], float64[:, ::1])"),
    (math_special, "void(float64[::1], float64[:, ::1])"),
    (math_special, "void(float32[::1], float32[:, ::1])"),
    (device_calls, "void(float32[::1], float32[::1])"),
    (block_reverse, "void(float32[::1], float32[::1])"),
    (int_ops, "void(int32[::1], int32[::1], int32[:, ::1])"),
    (int_ops, "void(int64[::1], int64[::1], int64[:, ::1])"),
    (strided_sum_rows, "void(float64[:, :], float64[::1])"),
    (complex_mul, "void(complex64[::1], complex64[::1], complex64[::1])"),
    (tuple_and_bool, "void(UniTuple(float64, 2), boolean, float64[::1])"),
    (any_in_row, "void(int8[:, ::1], int8[::1])"),
]

_HERE = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE_DIR = os.path.normpath(os.path.join(_HERE, "..", "..", "conformance"))


def _conformance_modules():
    if not os.path.isdir(CONFORMANCE_DIR):
        return []
    mods = []
    for fn in sorted(os.listdir(CONFORMANCE_DIR)):
        if not (fn.endswith(".py") and fn.startswith("test_")):
            continue
        path = os.path.join(CONFORMANCE_DIR, fn)
        with open(path, encoding="utf-8") as f:
            if "CONFORMANCE_KERNELS" not in f.read():
                continue
        name = f"tests.conformance.{fn[:-3]}"
        mod = sys.modules.get(name) or sys.modules.get(f"conformance.{fn[:-3]}")
        if mod is None:
            spec = importlib.util.spec_from_file_location(f"_gpux_conformance_{fn[:-3]}", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        mods.append((fn[:-3], mod))
    return mods


def collect() -> list[tuple[str, object, str]]:
    """(id, kernel, signature) for every kernel here and in the conformance modules."""
    out = []
    for k, sig in KERNELS:
        out.append((f"cuda.{k.__name__}[{sig}]", k, sig))
    for modname, mod in _conformance_modules():
        for k, sig in getattr(mod, "CONFORMANCE_KERNELS", ()):
            out.append((f"{modname}.{k.__name__}[{sig}]", k, sig))
    return out
