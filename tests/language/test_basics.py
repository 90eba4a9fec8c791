"""The kernel language of the foundation, on every available device, against NumPy:
scalars of every integer/float width and bool, arrays of 1-3 dims in any layout,
arithmetic, comparisons, control flow, tuples, min/max/abs, nested device
functions and the math module (float32 stays float32)."""

import math

import numpy as np
import pytest

import numba_gpux as gpux

#: the quick subset that .ci/run also runs on the other CPythons
pytestmark = pytest.mark.quick

INT_TYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOAT_TYPES = [np.float32, np.float64]


@gpux.jit
def scale_add(a, s, out):
    i = gpux.grid(1)
    if i < a.size:
        out[i] = a[i] * s + s


@pytest.mark.parametrize("dtype", INT_TYPES + FLOAT_TYPES, ids=lambda t: np.dtype(t).name)
def test_scalars_and_arrays_of_every_width(device, dtype):
    a = (np.arange(37) % 11).astype(dtype)
    out = np.zeros_like(a)
    s = dtype(3)
    scale_add[2, 32](gpux.to_device(a), s, d := gpux.to_device(out))
    np.testing.assert_array_equal(d.copy_to_host(), (a * s + s).astype(dtype))


@gpux.jit
def bool_kernel(flags, flip, out):
    i = gpux.grid(1)
    if i < flags.size:
        v = flags[i]
        if flip:
            v = not v
        out[i] = v and (i % 2 == 0)


def test_bool_scalars_and_arrays(device):
    flags = np.array([True, False, True, True, False, False, True], dtype=np.bool_)
    for flip in (False, True):
        out = gpux.device_array(flags.size, np.bool_)
        bool_kernel[1, 8](gpux.to_device(flags), flip, out)
        want = (~flags if flip else flags) & (np.arange(flags.size) % 2 == 0)
        np.testing.assert_array_equal(out.copy_to_host(), want)


@gpux.jit
def arith(a, b, out):
    i = gpux.grid(1)
    if i < a.size:
        x = a[i]
        y = b[i]
        out[i, 0] = x + y
        out[i, 1] = x - y
        out[i, 2] = x * y
        out[i, 3] = x // y
        out[i, 4] = x % y
        out[i, 5] = (x << 2) ^ (y | 1) & 0xFF
        out[i, 6] = x ** 2
        out[i, 7] = -x
        out[i, 8] = min(x, y)
        out[i, 9] = max(x, y)
        out[i, 10] = abs(x - y)
        out[i, 11] = 1 if (x < y) else (2 if x == y else 3)


def test_integer_arithmetic_and_comparisons(device, rng):
    a = rng.integers(-50, 50, 64).astype(np.int64)
    b = rng.integers(1, 20, 64).astype(np.int64) * rng.choice([-1, 1], 64)
    out = gpux.device_array((64, 12), np.int64)
    arith[1, 64](gpux.to_device(a), gpux.to_device(b), out)
    want = np.stack([a + b, a - b, a * b, a // b, a % b, (a << 2) ^ (b | 1) & 0xFF, a ** 2, -a,
                     np.minimum(a, b), np.maximum(a, b), np.abs(a - b),
                     np.where(a < b, 1, np.where(a == b, 2, 3))], axis=1)
    np.testing.assert_array_equal(out.copy_to_host(), want)


@gpux.jit
def farith(a, b, out):
    i = gpux.grid(1)
    if i < a.size:
        x = a[i]
        y = b[i]
        out[i, 0] = x / y
        out[i, 1] = x ** y
        out[i, 2] = x % y
        out[i, 3] = x // y
        out[i, 4] = min(x, y, 0.5)
        out[i, 5] = abs(x) - abs(y)


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda t: np.dtype(t).name)
def test_float_arithmetic(device, rng, dtype):
    a = rng.uniform(0.1, 3, 50).astype(dtype)
    b = rng.uniform(0.1, 3, 50).astype(dtype)
    out = gpux.device_array((50, 6), dtype)
    farith[1, 64](gpux.to_device(a), gpux.to_device(b), out)
    want = np.stack([a / b, a ** b, np.fmod(a, b) if False else a % b, a // b,
                     np.minimum(np.minimum(a, b), dtype(0.5)), np.abs(a) - np.abs(b)], axis=1)
    rtol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=rtol, atol=rtol)


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
        for k in range(10, 0, -3):
            acc -= k
        out[i] = acc


def test_for_while_break_continue(device):
    out = gpux.device_array(50, np.int64)
    loops[1, 64](7, out)
    want = []
    for i in range(50):
        acc = sum(range(i))
        j = 0
        while j < 7:
            if j == 3:
                j += 1
                continue
            if acc > 1000:
                break
            acc += 1
            j += 1
        acc -= sum(range(10, 0, -3))
        want.append(acc)
    np.testing.assert_array_equal(out.copy_to_host(), want)


@gpux.jit(device=True)
def divmod_pair(a, b):
    return a // b, a % b


@gpux.jit(device=True)
def level2(x):
    q, r = divmod_pair(x, 7)
    return q * 100 + r


@gpux.jit(device=True)
def level3(x):
    return level2(x) + level2(x + 1)


@gpux.jit
def nested_calls(a, pair, out):
    i = gpux.grid(1)
    if i < a.size:
        lo, hi = pair
        t = (a[i], lo)
        out[i] = level3(t[0]) + min(max(a[i], lo), hi)


def test_tuples_and_nested_device_functions(device):
    a = np.arange(40, dtype=np.int64)
    out = gpux.device_array(40, np.int64)
    nested_calls[1, 64](gpux.to_device(a), (5, 30), out)

    def l2(x):
        return (x // 7) * 100 + x % 7

    want = [l2(x) + l2(x + 1) + min(max(x, 5), 30) for x in a]
    np.testing.assert_array_equal(out.copy_to_host(), want)


UNARY = ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
         "atanh", "exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "fabs", "erf",
         "erfc", "lgamma", "gamma"]


def _unary_kernel(name):
    fn = getattr(math, name)

    @gpux.jit
    def k(a, out):
        i = gpux.grid(1)
        if i < a.size:
            out[i] = fn(a[i])

    return k


UNARY_KERNELS = {n: _unary_kernel(n) for n in UNARY}


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("name", UNARY)
def test_math_unary(device, name, dtype):
    a = np.linspace(0.05, 0.95, 19).astype(dtype)
    out = gpux.device_array(a.size, dtype)
    UNARY_KERNELS[name][1, 32](gpux.to_device(a), out)
    fn = getattr(math, name)
    want = np.array([fn(float(x)) for x in a])
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=rtol, atol=rtol)


@gpux.jit
def math_misc(a, b, out, ints):
    i = gpux.grid(1)
    if i < a.size:
        out[i, 0] = math.pow(a[i], b[i])
        out[i, 1] = math.atan2(a[i], b[i])
        out[i, 2] = math.hypot(a[i], b[i])
        out[i, 3] = math.copysign(a[i], -b[i])
        out[i, 4] = math.fmod(a[i] * 7, b[i])
        out[i, 5] = math.radians(a[i]) + math.degrees(b[i])
        ints[i, 0] = math.floor(a[i] * 10)
        ints[i, 1] = math.ceil(a[i] * 10)
        ints[i, 2] = math.trunc(-a[i] * 10)
        ints[i, 3] = math.isnan(a[i]) + 2 * math.isinf(b[i]) + 4 * math.isfinite(a[i])


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=lambda t: np.dtype(t).name)
def test_math_binary_and_conversions(device, dtype, rng):
    a = rng.uniform(0.1, 2, 30).astype(dtype)
    b = rng.uniform(0.1, 2, 30).astype(dtype)
    out = gpux.device_array((30, 6), dtype)
    ints = gpux.device_array((30, 4), np.int64)
    math_misc[1, 32](gpux.to_device(a), gpux.to_device(b), out, ints)
    af, bf = a.astype(np.float64), b.astype(np.float64)
    want = np.stack([af ** bf, np.arctan2(af, bf), np.hypot(af, bf), np.copysign(af, -bf),
                     np.fmod(af * 7, bf), np.radians(af) + np.degrees(bf)], axis=1)
    rtol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=rtol, atol=rtol)
    a10 = (a * dtype(10)).astype(np.float64)
    wi = np.stack([np.floor(a10), np.ceil(a10), np.trunc(-a10), np.full(30, 4)], axis=1)
    np.testing.assert_array_equal(ints.copy_to_host(), wi)


def test_math_on_integers_promotes_to_float64(device):
    @gpux.jit
    def k(a, out):
        i = gpux.grid(1)
        if i < a.size:
            out[i] = math.sqrt(a[i]) + math.exp(0)

    a = np.arange(10, dtype=np.int32)
    out = gpux.device_array(10, np.float64)
    k[1, 16](gpux.to_device(a), out)
    np.testing.assert_allclose(out.copy_to_host(), np.sqrt(a) + 1.0)


def test_literal_unroll_over_a_heterogeneous_tuple(device):
    from numba import literal_unroll

    consts = (1, 2.5, np.float32(0.25), True)

    @gpux.jit
    def total(out):
        acc = 0.0
        for c in literal_unroll(consts):
            acc += c
        out[0] = acc

    out = gpux.to_device(np.zeros(1))
    total[1, 1](out)
    assert out.copy_to_host()[0] == 4.75


@pytest.mark.needs("fp64")
def test_enum_members_of_every_value_kind_as_arguments(device):
    """Enum members are passed as their values' leaves: an int, a float, a tuple of
    floats (the ``Planet`` of Python's enum docs); == and != compare members."""
    import enum

    class Planet(enum.Enum):
        EARTH = (5.976e24, 6.37814e6)
        MARS = (6.421e23, 3.3972e6)

    class Color(enum.Enum):
        red = 1
        green = 2

    class Shape(enum.IntEnum):
        circle = 2

    @gpux.jit
    def compare(a, b, out):
        out[0] = a == b
        out[1] = a != b

    @gpux.jit
    def radius(p, out):
        out[0] = p.value[1]

    for a, b in [(Planet.EARTH, Planet.EARTH), (Planet.EARTH, Planet.MARS),
                 (Color.red, Color.green), (Color.green, Color.green),
                 (Shape.circle, Shape.circle)]:
        out = gpux.to_device(np.zeros(2, np.bool_))
        compare[1, 1](a, b, out)
        assert out.copy_to_host().tolist() == [a == b, a != b]
    out = gpux.to_device(np.zeros(1, np.float32))
    radius[1, 1](Planet.MARS, out)
    assert out.copy_to_host()[0] == np.float32(3.3972e6)
