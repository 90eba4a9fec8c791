"""float16, complex64/complex128 with cmath, and record (structured) arrays on every
device, checked against NumPy."""

from __future__ import annotations

import cmath
import math

import numpy as np
import pytest

import numba_gpux as gpux

N = 64


@gpux.jit
def half_arith(a, b, s, out):
    i = gpux.grid(1)
    if i < out.shape[0]:
        x = a[i]
        y = b[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x / y
        out[i, 4] = -x
        out[i, 5] = x * s
        out[i, 6] = max(x, y)
        out[i, 7] = x if x < y else y


@gpux.jit
def half_math(a, b, out):
    i = gpux.grid(1)
    if i < out.shape[0]:
        x = a[i]
        out[i, 0] = math.sin(x)
        out[i, 1] = math.cos(x)
        out[i, 2] = math.exp(x)
        out[i, 3] = math.log(x)
        out[i, 4] = math.sqrt(x)
        out[i, 5] = math.tanh(x)
        out[i, 6] = math.atan2(x, b[i])
        out[i, 7] = math.pow(x, b[i])
        out[i, 8] = math.floor(x)
        out[i, 9] = math.fabs(-x)


@gpux.jit
def complex_ops(z, w, c, out):
    i = gpux.grid(1)
    if i < out.shape[0]:
        a = z[i]
        b = w[i]
        out[i, 0] = a + b * c
        out[i, 1] = a * b - a / b
        out[i, 2] = cmath.exp(a)
        out[i, 3] = cmath.log(a)
        out[i, 4] = cmath.sqrt(a)
        out[i, 5] = abs(a)
        out[i, 6] = cmath.phase(a)
        out[i, 7] = cmath.rect(abs(b), cmath.phase(a))
        out[i, 8] = cmath.sin(a) + cmath.cos(b)
        out[i, 9] = a ** b
        out[i, 10] = a.conjugate() + a.real - a.imag
        out[i, 11] = cmath.tanh(a)


@gpux.jit
def complex_polar(z, out):
    i = gpux.grid(1)
    if i < z.shape[0]:
        r, phi = cmath.polar(z[i])
        out[i, 0] = r
        out[i, 1] = phi


PARTICLE = np.dtype([("x", np.float32), ("count", np.int32), ("v", np.float64),
                     ("flag", np.bool_)], align=True)
PACKED = np.dtype([("a", np.int16), ("b", np.float64), ("c", np.uint8)])  # unaligned b
ALIGNED = np.dtype([("a", np.int16), ("b", np.float64), ("c", np.uint8)], align=True)


@gpux.jit
def record_update(p, dt, out):
    i = gpux.grid(1)
    if i < p.shape[0]:
        p[i].x = p[i].x + dt * p[i].v
        p[i]["count"] += 1
        if p[i].flag:
            p[i].v = -p[i].v
        out[i] = p[i].x + p[i].count


@gpux.jit
def record_copy(src, dst):
    i = gpux.grid(1)
    if i < src.shape[0]:
        dst[i].a = src[i].a * 2
        dst[i].b = src[i].b + src[i].c
        dst[i].c = src[i].c


CONFORMANCE_KERNELS = [
    (half_arith, "void(float16[::1], float16[::1], float16, float16[:, ::1])"),
    (half_math, "void(float16[::1], float16[::1], float16[:, ::1])"),
    (complex_ops, "void(complex64[::1], complex64[::1], complex64, complex64[:, ::1])"),
    (complex_ops, "void(complex128[::1], complex128[::1], complex128, complex128[:, ::1])"),
    (complex_polar, "void(complex128[::1], float64[:, ::1])"),
]


@pytest.mark.needs("fp16")
def test_float16_arithmetic(device, rng):
    a = rng.uniform(-4, 4, N).astype(np.float16)
    b = rng.uniform(0.5, 4, N).astype(np.float16)
    s = np.float16(1.5)
    out = gpux.to_device(np.zeros((N, 8), np.float16))
    half_arith[1, N](gpux.to_device(a), gpux.to_device(b), s, out)
    exp = np.stack([a + b, a - b, a * b, a / b, -a, a * s, np.maximum(a, b),
                    np.minimum(a, b)], 1)
    # IEEE half: correctly rounded, so exactly NumPy's float16 results
    np.testing.assert_array_equal(out.copy_to_host(), exp)


@pytest.mark.needs("fp16")
def test_float_of_a_float16_stays_float16(device):
    """float(x) keeps a float's type (Numba's rule, numba.cuda's for float16 too)."""
    @gpux.jit
    def k(out, a):
        out[0] = float(a[0]) * float(a[1])
        out[1] = float(a[0]) * a[1] + float(a[1])

    from numba.core import types

    from numba_gpux.context import target_context

    typing = target_context().typing_context
    fnty = typing.resolve_value_type(float)
    assert fnty.get_call_type(typing, (types.float16,), {}).return_type == types.float16
    a = np.array([1.5, 2.25], np.float16)
    out = gpux.to_device(np.zeros(2, np.float16))
    k[1, 1](out, gpux.to_device(a))
    np.testing.assert_array_equal(out.copy_to_host(), [a[0] * a[1], a[0] * a[1] + a[1]])


@pytest.mark.needs("fp16")
def test_float16_math(device, rng):
    a = rng.uniform(0.1, 3, N).astype(np.float16)
    b = rng.uniform(0.5, 2, N).astype(np.float16)
    out = gpux.to_device(np.zeros((N, 10), np.float16))
    half_math[1, N](gpux.to_device(a), gpux.to_device(b), out)
    A, B = a.astype(np.float64), b.astype(np.float64)
    exp = np.stack([np.sin(A), np.cos(A), np.exp(A), np.log(A), np.sqrt(A), np.tanh(A),
                    np.arctan2(A, B), A ** B, np.floor(A), A], 1)
    got = out.copy_to_host().astype(np.float64)
    assert out.dtype == np.float16
    # a few half ulps (2**-10 relative)
    np.testing.assert_allclose(got, exp, rtol=3e-3, atol=1e-3)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128], ids=["complex64", "complex128"])
def test_complex(device, dtype, rng):
    z = (rng.uniform(-2, 2, N) + 1j * rng.uniform(-2, 2, N)).astype(dtype)
    w = (rng.uniform(0.5, 2, N) + 1j * rng.uniform(-1, 1, N)).astype(dtype)
    c = dtype(0.5 - 0.25j)
    out = gpux.to_device(np.zeros((N, 12), dtype))
    complex_ops[1, N](gpux.to_device(z), gpux.to_device(w), c, out)
    Z, W = z.astype(np.complex128), w.astype(np.complex128)
    exp = np.stack([Z + W * c, Z * W - Z / W, np.exp(Z), np.log(Z), np.sqrt(Z), np.abs(Z),
                    np.angle(Z), np.abs(W) * np.exp(1j * np.angle(Z)), np.sin(Z) + np.cos(W),
                    Z ** W, np.conj(Z) + Z.real - Z.imag, np.tanh(Z)], 1)
    tol = 2e-5 if dtype is np.complex64 else 1e-12
    np.testing.assert_allclose(out.copy_to_host(), exp, rtol=tol, atol=tol)


def test_complex_polar(device, rng):
    z = rng.uniform(-3, 3, N) + 1j * rng.uniform(-3, 3, N)
    out = gpux.to_device(np.zeros((N, 2)))
    complex_polar[1, N](gpux.to_device(z), out)
    np.testing.assert_allclose(out.copy_to_host(), np.stack([np.abs(z), np.angle(z)], 1),
                               rtol=1e-12)


def test_record_fields(device, rng):
    p = np.zeros(N, PARTICLE)
    p["x"] = rng.uniform(-1, 1, N)
    p["count"] = rng.integers(0, 10, N)
    p["v"] = rng.uniform(-1, 1, N)
    p["flag"] = rng.integers(0, 2, N).astype(bool)
    d = gpux.to_device(p)
    out = gpux.to_device(np.zeros(N, np.float64))
    record_update[1, N](d, np.float32(0.5), out)
    got = d.copy_to_host()
    x = (p["x"] + np.float32(0.5) * p["v"]).astype(np.float32)
    np.testing.assert_allclose(got["x"], x, rtol=1e-6)
    np.testing.assert_array_equal(got["count"], p["count"] + 1)
    np.testing.assert_array_equal(got["v"], np.where(p["flag"], -p["v"], p["v"]))
    np.testing.assert_allclose(out.copy_to_host(), x + p["count"] + 1, rtol=1e-6)


def test_record_strided(device, rng):
    src = np.zeros(2 * N, ALIGNED)
    src["a"] = rng.integers(-100, 100, 2 * N)
    src["b"] = rng.uniform(-1, 1, 2 * N)
    src["c"] = rng.integers(0, 255, 2 * N)
    view = src[::2]  # a strided view of records
    dst = gpux.to_device(np.zeros(N, ALIGNED))
    record_copy[1, N](gpux.to_device(view), dst)
    got = dst.copy_to_host()
    np.testing.assert_array_equal(got["a"], view["a"] * 2)
    np.testing.assert_allclose(got["b"], view["b"] + view["c"])
    np.testing.assert_array_equal(got["c"], view["c"])


def test_record_unaligned_field_is_a_clear_error(device):
    from numba.core.errors import NumbaError

    a = gpux.to_device(np.zeros(4, PACKED))
    with pytest.raises(NumbaError, match="not aligned"):
        record_copy[1, 4](a, gpux.to_device(np.zeros(4, PACKED)))
