"""numba.cuda's bfloat16 (``cuda.bf16``, ``cuda.types.bfloat16``) run on the device: every
conversion in every rounding mode, arithmetic, comparisons and math against exact host
arithmetic (Python's fractions and integers) and ml_dtypes, NaN, infinities, signed
zeros, subnormals, saturation and ties; print; arrays of ml_dtypes.bfloat16; and PTX
that ptxas accepts."""

from __future__ import annotations

import math
import subprocess
from fractions import Fraction

import numpy as np
import pytest

from gpux_testing import round_to_table
from numba_gpux import cuda
from numba_gpux.cuda import bf16
from numba_gpux.cuda.bf16 import bfloat16

#: math.exp2 where Python has it (3.11 on); bf16.hexp2, whose values it gives, before
_EXP2 = getattr(math, "exp2", bf16.hexp2)

ml_dtypes = pytest.importorskip("ml_dtypes")

MODES = ("rn", "rz", "rd", "ru")
ALL_BITS = np.arange(0x10000, dtype=np.uint32).astype(np.uint16)
#: the positive finite bfloat16 values in order (index = bits), and 2**128 where the
#: next one would be: the value a round to nearest compares with past the largest
_POSITIVE = [float(v) for v in ALL_BITS[:0x7F80].view(ml_dtypes.bfloat16)] + [2.0 ** 128]


def round_exact(x, mode: str) -> int:
    """The bfloat16 bits CUDA's conversion gives for the exact number x (an int, a float
    or a Fraction) in mode: correctly rounded, canonical NaN, infinities kept."""
    if isinstance(x, float):
        if math.isnan(x):
            return 0x7FFF
        if math.isinf(x):
            return 0x7F80 if x > 0 else 0xFF80
        negative = math.copysign(1.0, x) < 0
    else:
        negative = x < 0
    mag = abs(Fraction(x))
    if negative:
        mode = {"rd": "ru", "ru": "rd"}.get(mode, mode)  # the magnitude rounds the other way
    return round_to_table(_POSITIVE, mag, mode) | (0x8000 if negative else 0)


def as_floats(bits) -> np.ndarray:
    with np.errstate(invalid="ignore"):  # NaN converts as NaN
        return np.asarray(bits, np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)


def special_bits() -> np.ndarray:
    """Zeros, the smallest and largest subnormal and normal, one, infinities, NaNs."""
    pos = [0x0000, 0x0001, 0x007F, 0x0080, 0x3F80, 0x3F81, 0x4049, 0x7F7F, 0x7F80, 0x7FC0]
    return np.array(pos + [p | 0x8000 for p in pos], np.uint16)


def random_bits(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 0x10000, n, dtype=np.uint32).astype(np.uint16)


# ----------------------------------------------------------------- to bfloat16
def test_float32_to_bfloat16_in_every_mode(device):
    @cuda.jit
    def convert(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[0, i] = bf16.bfloat16_as_uint16(bf16.float32_to_bfloat16_rn(x[i]))
            out[1, i] = bf16.bfloat16_as_uint16(bf16.float32_to_bfloat16_rz(x[i]))
            out[2, i] = bf16.bfloat16_as_uint16(bf16.float32_to_bfloat16_rd(x[i]))
            out[3, i] = bf16.bfloat16_as_uint16(bf16.float32_to_bfloat16_ru(x[i]))
            out[4, i] = bf16.bfloat16_as_uint16(bf16.float2bfloat16(x[i]))
            out[5, i] = bf16.bfloat16_as_uint16(bfloat16(x[i]))  # the implicit conversion

    rng = np.random.default_rng(1)
    b = ALL_BITS.astype(np.uint32) << 16
    edges = np.concatenate([
        b[::61], b[::61] | 0x8000, b[::61] | 0x7FFF, b[::61] | 0x8001,  # ties, either side
        (b[::61] | 0x18000) & 0xFFFFFFFF,  # ties above an odd value
        [0x7F7F8000, 0x7F7F7FFF, 0x7F7FFFFF, 0xFF7F8000, 0x7FFFFFFF, 0xFFC00001, 0x00000001,
         0x80000001, 0x007FFFFF, 0x0000FFFF, 0x00008000, 0x00018000],
        rng.integers(0, 2 ** 32, 1200, dtype=np.uint64)]).astype(np.uint32)
    x = edges.view(np.float32)
    out = np.zeros((6, x.size), np.uint16)
    convert[(x.size + 127) // 128, 128](x, out)
    for k, mode in enumerate(MODES):
        want = [round_exact(float(v), mode) for v in x]
        assert out[k].tolist() == want, mode
    assert np.array_equal(out[4], out[0]) and np.array_equal(out[5], out[0])
    finite = np.isfinite(x)
    assert np.array_equal(out[0][finite], x[finite].astype(ml_dtypes.bfloat16).view(np.uint16))


@pytest.mark.needs("fp64")
def test_float64_to_bfloat16_rounds_once(device):
    @cuda.jit
    def convert(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[0, i] = bf16.bfloat16_as_uint16(bf16.float64_to_bfloat16(x[i]))
            out[1, i] = bf16.bfloat16_as_uint16(bfloat16(x[i]))

    rng = np.random.default_rng(2)
    base = as_floats(random_bits(400, 3))
    base = base[np.isfinite(base) & (np.abs(base) < 1e38) & (np.abs(base) > 1e-37)]
    ulp = np.abs(base) * 2.0 ** -8
    # just above and below a tie by far less than float32 resolves: through float32
    # these would round to the tie, then to even
    x = np.concatenate([base + ulp / 2 * (1 + 2.0 ** -40), base + ulp / 2 * (1 - 2.0 ** -40),
                        base + ulp / 2, rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300),
                        [1e300, -1e300, 1e-300, -1e-300, np.inf, -np.inf, np.nan, 0.0, -0.0,
                         3.3961e38, 3.3962e38, float(2 ** 128 - 2 ** 119)]])
    out = np.zeros((2, x.size), np.uint16)
    convert[(x.size + 127) // 128, 128](x, out)
    want = [round_exact(float(v), "rn") for v in x]
    assert out[0].tolist() == want
    assert out[1].tolist() == want


INT_FAMILIES = (("int16", np.int16), ("uint16", np.uint16), ("int32", np.int32),
                ("uint32", np.uint32), ("int64", np.int64), ("uint64", np.uint64))


def _int_samples(dtype, rng) -> np.ndarray:
    info = np.iinfo(dtype)
    bits = info.bits
    picks = [info.min, info.max, 0, 1, 255, 256, 257, 384, 385, 789, -789, 65535, 65536 + 256,
             2 ** 24 + 1, 2 ** 31 - 1, -(2 ** 31), 2 ** 63 - 1, 2 ** 62 + 2 ** 54, 2 ** 64 - 1]
    picks = [p for p in picks if info.min <= p <= info.max]
    # values of every magnitude, with ties (a 1 right after the kept 8 bits) and sticky bits
    for shift in range(0, bits - 9):
        for mant in (0x100, 0x101, 0x180, 0x181, 0x1FF, 0x17F):
            v = mant << shift
            if v <= info.max:
                picks.append(v)
                if v + 1 <= info.max:
                    picks.append(v + 1)
                if info.min < 0:
                    picks.append(-v)
    picks += [int(v) for v in rng.integers(info.min, info.max, 100, dtype=dtype, endpoint=True)]
    return np.array(picks, dtype)


def test_integers_to_bfloat16_in_every_mode(device):
    @cuda.jit
    def convert(i16, u16, i32, u32, i64, u64, out):
        i = cuda.grid(1)
        if i < i16.size:
            out[0, 0, i] = bf16.bfloat16_as_uint16(bf16.int16_to_bfloat16_rn(i16[i]))
            out[0, 1, i] = bf16.bfloat16_as_uint16(bf16.int16_to_bfloat16_rz(i16[i]))
            out[0, 2, i] = bf16.bfloat16_as_uint16(bf16.int16_to_bfloat16_rd(i16[i]))
            out[0, 3, i] = bf16.bfloat16_as_uint16(bf16.int16_to_bfloat16_ru(i16[i]))
            out[0, 4, i] = bf16.bfloat16_as_uint16(bfloat16(i16[i]))
            out[1, 0, i] = bf16.bfloat16_as_uint16(bf16.uint16_to_bfloat16_rn(u16[i]))
            out[1, 1, i] = bf16.bfloat16_as_uint16(bf16.uint16_to_bfloat16_rz(u16[i]))
            out[1, 2, i] = bf16.bfloat16_as_uint16(bf16.uint16_to_bfloat16_rd(u16[i]))
            out[1, 3, i] = bf16.bfloat16_as_uint16(bf16.uint16_to_bfloat16_ru(u16[i]))
            out[1, 4, i] = bf16.bfloat16_as_uint16(bfloat16(u16[i]))
            out[2, 0, i] = bf16.bfloat16_as_uint16(bf16.int32_to_bfloat16_rn(i32[i]))
            out[2, 1, i] = bf16.bfloat16_as_uint16(bf16.int32_to_bfloat16_rz(i32[i]))
            out[2, 2, i] = bf16.bfloat16_as_uint16(bf16.int32_to_bfloat16_rd(i32[i]))
            out[2, 3, i] = bf16.bfloat16_as_uint16(bf16.int32_to_bfloat16_ru(i32[i]))
            out[2, 4, i] = bf16.bfloat16_as_uint16(bfloat16(i32[i]))
            out[3, 0, i] = bf16.bfloat16_as_uint16(bf16.uint32_to_bfloat16_rn(u32[i]))
            out[3, 1, i] = bf16.bfloat16_as_uint16(bf16.uint32_to_bfloat16_rz(u32[i]))
            out[3, 2, i] = bf16.bfloat16_as_uint16(bf16.uint32_to_bfloat16_rd(u32[i]))
            out[3, 3, i] = bf16.bfloat16_as_uint16(bf16.uint32_to_bfloat16_ru(u32[i]))
            out[3, 4, i] = bf16.bfloat16_as_uint16(bfloat16(u32[i]))
            out[4, 0, i] = bf16.bfloat16_as_uint16(bf16.int64_to_bfloat16_rn(i64[i]))
            out[4, 1, i] = bf16.bfloat16_as_uint16(bf16.int64_to_bfloat16_rz(i64[i]))
            out[4, 2, i] = bf16.bfloat16_as_uint16(bf16.int64_to_bfloat16_rd(i64[i]))
            out[4, 3, i] = bf16.bfloat16_as_uint16(bf16.int64_to_bfloat16_ru(i64[i]))
            out[4, 4, i] = bf16.bfloat16_as_uint16(bfloat16(i64[i]))
            out[5, 0, i] = bf16.bfloat16_as_uint16(bf16.uint64_to_bfloat16_rn(u64[i]))
            out[5, 1, i] = bf16.bfloat16_as_uint16(bf16.uint64_to_bfloat16_rz(u64[i]))
            out[5, 2, i] = bf16.bfloat16_as_uint16(bf16.uint64_to_bfloat16_rd(u64[i]))
            out[5, 3, i] = bf16.bfloat16_as_uint16(bf16.uint64_to_bfloat16_ru(u64[i]))
            out[5, 4, i] = bf16.bfloat16_as_uint16(bfloat16(u64[i]))

    rng = np.random.default_rng(4)
    samples = [_int_samples(dt, rng) for _, dt in INT_FAMILIES]
    n = min(len(s) for s in samples)
    samples = [s[:n] for s in samples]
    out = np.zeros((6, 5, n), np.uint16)
    convert[(n + 127) // 128, 128](*samples, out)
    for f, ((name, _), values) in enumerate(zip(INT_FAMILIES, samples)):
        for k, mode in enumerate(MODES + ("rn",)):
            want = [round_exact(int(v), mode) for v in values]
            assert out[f, k].tolist() == want, (name, mode)


# ----------------------------------------------------------------- from bfloat16
TO_INT_TYPES = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)


def _to_int_reference(values: np.ndarray, dtype, mode: str) -> np.ndarray:
    info = np.iinfo(dtype)
    rounder = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}[mode]
    with np.errstate(invalid="ignore"):
        r = rounder(values)
        high, low = r >= float(info.max), r <= float(info.min)  # (the limits as floats)
    out = np.zeros(values.size, dtype)  # NaN gives 0
    out[high], out[low] = info.max, info.min
    inside = ~(np.isnan(r) | high | low)
    out[inside] = r[inside].astype(dtype)
    return out


def test_bfloat16_to_integers_of_every_value_in_every_mode(device):
    @cuda.jit
    def convert(bits, i8, u8, i16, u16, i32, u32, i64, u64):
        i = cuda.grid(1)
        if i < bits.size:
            h = bf16.uint16_as_bfloat16(bits[i])
            i8[0, i] = bf16.bfloat16_to_int8_rz(h)
            i8[1, i] = h  # implicit: toward zero, saturated
            u8[0, i] = bf16.bfloat16_to_uint8_rz(h)
            u8[1, i] = h
            i16[0, i] = bf16.bfloat16_to_int16_rn(h)
            i16[1, i] = bf16.bfloat16_to_int16_rz(h)
            i16[2, i] = bf16.bfloat16_to_int16_rd(h)
            i16[3, i] = bf16.bfloat16_to_int16_ru(h)
            i16[4, i] = h
            u16[0, i] = bf16.bfloat16_to_uint16_rn(h)
            u16[1, i] = bf16.bfloat16_to_uint16_rz(h)
            u16[2, i] = bf16.bfloat16_to_uint16_rd(h)
            u16[3, i] = bf16.bfloat16_to_uint16_ru(h)
            u16[4, i] = h
            i32[0, i] = bf16.bfloat16_to_int32_rn(h)
            i32[1, i] = bf16.bfloat16_to_int32_rz(h)
            i32[2, i] = bf16.bfloat16_to_int32_rd(h)
            i32[3, i] = bf16.bfloat16_to_int32_ru(h)
            i32[4, i] = h
            u32[0, i] = bf16.bfloat16_to_uint32_rn(h)
            u32[1, i] = bf16.bfloat16_to_uint32_rz(h)
            u32[2, i] = bf16.bfloat16_to_uint32_rd(h)
            u32[3, i] = bf16.bfloat16_to_uint32_ru(h)
            u32[4, i] = h
            i64[0, i] = bf16.bfloat16_to_int64_rn(h)
            i64[1, i] = bf16.bfloat16_to_int64_rz(h)
            i64[2, i] = bf16.bfloat16_to_int64_rd(h)
            i64[3, i] = bf16.bfloat16_to_int64_ru(h)
            i64[4, i] = h
            u64[0, i] = bf16.bfloat16_to_uint64_rn(h)
            u64[1, i] = bf16.bfloat16_to_uint64_rz(h)
            u64[2, i] = bf16.bfloat16_to_uint64_rd(h)
            u64[3, i] = bf16.bfloat16_to_uint64_ru(h)
            u64[4, i] = h

    outs = [np.zeros((2 if t(0).itemsize == 1 else 5, ALL_BITS.size), t) for t in TO_INT_TYPES]
    convert[ALL_BITS.size // 256, 256](ALL_BITS, *outs)
    values = as_floats(ALL_BITS)
    for t, out in zip(TO_INT_TYPES, outs):
        modes = ("rz", "rz") if t(0).itemsize == 1 else MODES + ("rz",)
        for k, mode in enumerate(modes):
            want = _to_int_reference(values, t, mode)
            bad = np.nonzero(out[k] != want)[0]
            assert bad.size == 0, (t.__name__, mode, [(hex(ALL_BITS[j]), out[k][j], want[j])
                                                      for j in bad[:5]])


@pytest.mark.needs("fp64")
def test_to_float_and_bit_casts_are_exact(device):
    @cuda.jit
    def convert(bits, f32, f64, i16, u16):
        i = cuda.grid(1)
        if i < bits.size:
            h = bf16.int16_as_bfloat16(np.int16(bits[i]))
            f32[0, i] = bf16.bfloat16_to_float32(h)
            f32[1, i] = h
            f64[i] = h
            i16[i] = bf16.bfloat16_as_int16(h)
            u16[i] = bf16.bfloat16_as_uint16(bf16.uint16_as_bfloat16(bits[i]))

    f32 = np.zeros((2, ALL_BITS.size), np.float32)
    f64 = np.zeros(ALL_BITS.size, np.float64)
    i16, u16 = np.zeros(ALL_BITS.size, np.int16), np.zeros(ALL_BITS.size, np.uint16)
    convert[ALL_BITS.size // 256, 256](ALL_BITS, f32, f64, i16, u16)
    want = ALL_BITS.view(ml_dtypes.bfloat16).astype(np.float32)
    assert np.array_equal(f32[0].view(np.uint32), want.view(np.uint32))  # NaN payloads too
    assert np.array_equal(f32[1].view(np.uint32), want.view(np.uint32))
    assert np.array_equal(f64, as_floats(ALL_BITS), equal_nan=True)
    assert np.array_equal(i16, ALL_BITS.view(np.int16))
    assert np.array_equal(u16, ALL_BITS)


# ----------------------------------------------------------------- arithmetic
def _pairs(n: int, seed: int):
    a, b = random_bits(n, seed), random_bits(n, seed + 1)
    s = special_bits()
    sa, sb = np.repeat(s, s.size), np.tile(s, s.size)
    # operands of near magnitudes too (random pairs rarely cancel or tie)
    near = random_bits(n // 4, seed + 2)
    near_b = (near.astype(np.int32) + np.random.default_rng(seed).integers(-3, 4, near.size)) & 0xFFFF
    return (np.concatenate([a, sa, near]).astype(np.uint16),
            np.concatenate([b, sb, near_b]).astype(np.uint16))


def _ref_binary(op, a_bits, b_bits) -> list:
    out = []
    for x, y in zip(as_floats(a_bits), as_floats(b_bits)):
        with np.errstate(all="ignore"):
            exact = None
            if np.isfinite(x) and np.isfinite(y) and not (op == "div" and y == 0):
                fx, fy = Fraction(float(x)), Fraction(float(y))
                exact = {"add": fx + fy, "sub": fx - fy, "mul": fx * fy,
                         "div": fx / fy if y else None}[op]
            if exact is not None and exact != 0:
                out.append(round_exact(exact, "rn"))
            else:  # zeros (their sign), infinities and NaN: IEEE's rules, as float64 has them
                r = {"add": x + y, "sub": x - y, "mul": x * y, "div": np.float64(x) / y}[op]
                out.append(round_exact(float(r), "rn"))
    return out


def test_arithmetic_is_correctly_rounded(device):
    @cuda.jit
    def arith(a_bits, b_bits, out, ops):
        i = cuda.grid(1)
        if i < a_bits.size:
            a = bf16.uint16_as_bfloat16(a_bits[i])
            b = bf16.uint16_as_bfloat16(b_bits[i])
            out[0, i] = bf16.bfloat16_as_uint16(bf16.hadd(a, b))
            out[1, i] = bf16.bfloat16_as_uint16(bf16.hsub(a, b))
            out[2, i] = bf16.bfloat16_as_uint16(bf16.hmul(a, b))
            out[3, i] = bf16.bfloat16_as_uint16(bf16.hdiv(a, b))
            out[4, i] = bf16.bfloat16_as_uint16(bf16.hadd_rn(a, b))
            out[5, i] = bf16.bfloat16_as_uint16(bf16.hsub_rn(a, b))
            out[6, i] = bf16.bfloat16_as_uint16(bf16.hmul_rn(a, b))
            ops[0, i] = bf16.bfloat16_as_uint16(a + b)
            ops[1, i] = bf16.bfloat16_as_uint16(a - b)
            ops[2, i] = bf16.bfloat16_as_uint16(a * b)
            ops[3, i] = bf16.bfloat16_as_uint16(a / b)
            c = a
            c += b
            ops[4, i] = bf16.bfloat16_as_uint16(c)

    a, b = _pairs(1500, 10)
    out = np.zeros((7, a.size), np.uint16)
    ops = np.zeros((5, a.size), np.uint16)
    arith[(a.size + 127) // 128, 128](a, b, out, ops)
    for k, op in enumerate(("add", "sub", "mul", "div")):
        want = np.array(_ref_binary(op, a, b), np.uint16)
        nan = np.isnan(as_floats(want))
        assert np.array_equal(out[k][~nan], want[~nan]), op
        assert np.isnan(as_floats(out[k][nan])).all(), op
        assert np.array_equal(ops[k], out[k]), op  # the operators are the intrinsics
    assert np.array_equal(out[4:7], out[0:3])
    assert np.array_equal(ops[4], out[0])


def test_fma_rounds_once(device):
    @cuda.jit
    def fma(a_bits, b_bits, c_bits, out):
        i = cuda.grid(1)
        if i < a_bits.size:
            a = bf16.uint16_as_bfloat16(a_bits[i])
            b = bf16.uint16_as_bfloat16(b_bits[i])
            c = bf16.uint16_as_bfloat16(c_bits[i])
            out[0, i] = bf16.bfloat16_as_uint16(bf16.hfma(a, b, c))
            out[1, i] = bf16.bfloat16_as_uint16(bf16.hfma_sat(a, b, c))
            out[2, i] = bf16.bfloat16_as_uint16(bf16.hfma_relu(a, b, c))

    rng = np.random.default_rng(20)
    a, b = _pairs(1200, 21)
    n = a.size
    c = random_bits(n, 22)
    # an addend that nearly cancels the product (the exact sum needs more than float32),
    # and huge products whose float32 product overflows while the sum does not
    with np.errstate(all="ignore"):
        prod = (as_floats(a) * as_floats(b)).astype(ml_dtypes.bfloat16).view(np.uint16)
    c[: n // 3] = prod[: n // 3] ^ 0x8000
    big = np.array([0x7F00, 0x7F40, 0x7F7F, 0x5F80], np.uint16)
    a[-8:], b[-8:] = np.tile(big[:2], 4), np.tile(big[1:3], 4)
    c[-8:] = [0xFF7F, 0xFF00, 0x7F7F, 0x0001, 0x8001, 0xFF7F, 0x0000, 0xFF40]
    # products below float32's normal range (results subnormal, or zero with the
    # product's sign) and past its largest value (the sum back in range)
    def bits_of(v):
        return np.asarray(v, np.float64).astype(ml_dtypes.bfloat16).view(np.uint16)

    m = 300
    sign = rng.choice([-1.0, 1.0], (4, m))
    tiny_a = bits_of(sign[0] * 2.0 ** rng.uniform(-75, -55, m))
    tiny_b = bits_of(sign[1] * 2.0 ** rng.uniform(-80, -60, m))
    tiny_c = random_bits(m, 23) & 0x807F  # subnormals and zeros of either sign
    big_a = bits_of(sign[2] * 2.0 ** rng.uniform(63, 70, m))
    big_b = bits_of(2.0 ** rng.uniform(63, 70, m))
    big_c = bits_of(-sign[2] * 2.0 ** rng.uniform(120, 128 - 2.0 ** -9, m))
    big_c[::7] = random_bits(big_c[::7].size, 24)
    a, b, c = (np.concatenate(v).astype(np.uint16) for v in
               ((a, tiny_a, big_a), (b, tiny_b, big_b), (c, tiny_c, big_c)))
    n = a.size
    out = np.zeros((3, n), np.uint16)
    fma[(n + 127) // 128, 128](a, b, c, out)
    want = []
    for x, y, z in zip(as_floats(a), as_floats(b), as_floats(c)):
        if np.isfinite(x) and np.isfinite(y) and np.isfinite(z):
            exact = Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z))
            if exact != 0:
                want.append(round_exact(exact, "rn"))
                continue
        with np.errstate(all="ignore"):
            want.append(round_exact(float(np.float64(x) * y + z), "rn"))
    want = np.array(want, np.uint16)
    got = as_floats(out[0])
    wantf = as_floats(want)
    nan = np.isnan(wantf)
    assert np.array_equal(out[0][~nan], want[~nan])
    assert np.isnan(got[nan]).all()
    # saturated: clamped to [0, 1], NaN giving +0; relu: negative to +0, NaN canonical
    sat = np.where(np.isnan(wantf), 0.0, np.clip(wantf, 0.0, 1.0))
    assert np.array_equal(as_floats(out[1]), sat)
    assert not np.signbit(as_floats(out[1])).any()
    relu = np.where(wantf < 0, 0.0, wantf)
    assert np.array_equal(as_floats(out[2])[~nan], relu[~nan])
    assert (out[2][nan] == 0x7FFF).all()


def test_saturating_negation_and_absolute_value(device):
    @cuda.jit
    def ops(a_bits, b_bits, out):
        i = cuda.grid(1)
        if i < a_bits.size:
            a = bf16.uint16_as_bfloat16(a_bits[i])
            b = bf16.uint16_as_bfloat16(b_bits[i])
            out[0, i] = bf16.bfloat16_as_uint16(bf16.hadd_sat(a, b))
            out[1, i] = bf16.bfloat16_as_uint16(bf16.hsub_sat(a, b))
            out[2, i] = bf16.bfloat16_as_uint16(bf16.hmul_sat(a, b))
            out[3, i] = bf16.bfloat16_as_uint16(bf16.hneg(a))
            out[4, i] = bf16.bfloat16_as_uint16(-a)
            out[5, i] = bf16.bfloat16_as_uint16(bf16.habs(a))
            out[6, i] = bf16.bfloat16_as_uint16(abs(a))

    a, b = _pairs(600, 30)
    out = np.zeros((7, a.size), np.uint16)
    ops[(a.size + 127) // 128, 128](a, b, out)
    for k, op in enumerate(("add", "sub", "mul")):
        r = as_floats(_ref_binary(op, a, b))
        want = np.where(np.isnan(r), 0.0, np.clip(r, 0.0, 1.0))
        got = as_floats(out[k])
        assert np.array_equal(got, want) and not np.signbit(got).any(), op
    assert np.array_equal(out[3], a ^ 0x8000) and np.array_equal(out[4], out[3])
    nan = np.isnan(as_floats(a))
    assert np.array_equal(out[5][~nan], a[~nan] & 0x7FFF) and (out[5][nan] == 0x7FFF).all()
    assert np.array_equal(out[6], out[5])


# ----------------------------------------------------------------- comparisons
_CMP = {
    "heq": lambda x, y: x == y, "hne": lambda x, y: x < y or x > y,
    "hge": lambda x, y: x >= y, "hgt": lambda x, y: x > y,
    "hle": lambda x, y: x <= y, "hlt": lambda x, y: x < y,
    "hequ": lambda x, y: not (x < y or x > y), "hneu": lambda x, y: x != y,
    "hgeu": lambda x, y: not x < y, "hgtu": lambda x, y: not x <= y,
    "hleu": lambda x, y: not x > y, "hltu": lambda x, y: not x >= y,
}


def test_comparisons_min_max_and_classification(device):
    @cuda.jit
    def compare(a_bits, b_bits, cmp, ops, mm, cls):
        i = cuda.grid(1)
        if i < a_bits.size:
            a = bf16.uint16_as_bfloat16(a_bits[i])
            b = bf16.uint16_as_bfloat16(b_bits[i])
            cmp[0, i] = bf16.heq(a, b)
            cmp[1, i] = bf16.hne(a, b)
            cmp[2, i] = bf16.hge(a, b)
            cmp[3, i] = bf16.hgt(a, b)
            cmp[4, i] = bf16.hle(a, b)
            cmp[5, i] = bf16.hlt(a, b)
            cmp[6, i] = bf16.hequ(a, b)
            cmp[7, i] = bf16.hneu(a, b)
            cmp[8, i] = bf16.hgeu(a, b)
            cmp[9, i] = bf16.hgtu(a, b)
            cmp[10, i] = bf16.hleu(a, b)
            cmp[11, i] = bf16.hltu(a, b)
            ops[0, i] = a == b
            ops[1, i] = a != b
            ops[2, i] = a >= b
            ops[3, i] = a > b
            ops[4, i] = a <= b
            ops[5, i] = a < b
            mm[0, i] = bf16.bfloat16_as_uint16(bf16.hmax(a, b))
            mm[1, i] = bf16.bfloat16_as_uint16(bf16.hmin(a, b))
            mm[2, i] = bf16.bfloat16_as_uint16(bf16.hmax_nan(a, b))
            mm[3, i] = bf16.bfloat16_as_uint16(bf16.hmin_nan(a, b))
            cls[0, i] = bf16.hisnan(a)
            cls[1, i] = bf16.hisinf(a)

    s = special_bits()
    a, b = np.repeat(s, s.size), np.tile(s, s.size)
    a = np.concatenate([a, random_bits(200, 40)])
    b = np.concatenate([b, random_bits(200, 41)])
    cmp = np.zeros((12, a.size), np.bool_)
    ops = np.zeros((6, a.size), np.bool_)
    mm = np.zeros((4, a.size), np.uint16)
    cls = np.zeros((2, a.size), np.int32)
    compare[(a.size + 127) // 128, 128](a, b, cmp, ops, mm, cls)
    fa, fb = as_floats(a), as_floats(b)
    for k, name in enumerate(_CMP):
        want = [_CMP[name](x, y) for x, y in zip(fa, fb)]
        assert cmp[k].tolist() == want, name
    python_ops = ("heq", "hneu", "hge", "hgt", "hle", "hlt")  # == and != as Python has them
    for k, name in enumerate(python_ops):
        assert ops[k].tolist() == cmp[list(_CMP).index(name)].tolist(), name
    for j, (x, y) in enumerate(zip(a, b)):
        fx, fy = fa[j], fb[j]
        if np.isnan(fx) or np.isnan(fy):
            both = np.isnan(fx) and np.isnan(fy)
            other = 0x7FFF if both else int(b[j] if np.isnan(fx) else a[j])
            assert mm[:, j].tolist() == [other, other, 0x7FFF, 0x7FFF], (hex(x), hex(y))
            continue
        if fx == fy:  # equal values: max prefers +0, min -0
            hi, lo = (x, y) if x <= y else (y, x)
            assert mm[:, j].tolist() == [hi, lo, mm[2, j], mm[3, j]], (hex(x), hex(y))
            assert as_floats(mm[2:, j]).tolist() == [fx, fx]
        else:
            hi, lo = (x, y) if fx > fy else (y, x)
            assert mm[:, j].tolist() == [hi, lo, hi, lo], (hex(x), hex(y))
    assert cls[0].tolist() == np.isnan(fa).tolist()
    assert cls[1].tolist() == [int(np.sign(v)) if np.isinf(v) else 0 for v in fa]


# ----------------------------------------------------------------- math
def test_math_functions(device):
    @cuda.jit
    def fns(bits, exact, approx, mathmod):
        i = cuda.grid(1)
        if i < bits.size:
            h = bf16.uint16_as_bfloat16(bits[i])
            exact[0, i] = bf16.bfloat16_as_uint16(bf16.htrunc(h))
            exact[1, i] = bf16.bfloat16_as_uint16(bf16.hceil(h))
            exact[2, i] = bf16.bfloat16_as_uint16(bf16.hfloor(h))
            exact[3, i] = bf16.bfloat16_as_uint16(bf16.hrint(h))
            exact[4, i] = bf16.bfloat16_as_uint16(bf16.hsqrt(h))
            approx[0, i] = bf16.bfloat16_as_uint16(bf16.hrsqrt(h))
            approx[1, i] = bf16.bfloat16_as_uint16(bf16.hrcp(h))
            approx[2, i] = bf16.bfloat16_as_uint16(bf16.hlog(h))
            approx[3, i] = bf16.bfloat16_as_uint16(bf16.hlog2(h))
            approx[4, i] = bf16.bfloat16_as_uint16(bf16.hlog10(h))
            approx[5, i] = bf16.bfloat16_as_uint16(bf16.hcos(h))
            approx[6, i] = bf16.bfloat16_as_uint16(bf16.hsin(h))
            approx[7, i] = bf16.bfloat16_as_uint16(bf16.hexp(h))
            approx[8, i] = bf16.bfloat16_as_uint16(bf16.hexp2(h))
            approx[9, i] = bf16.bfloat16_as_uint16(bf16.hexp10(h))
            approx[10, i] = bf16.bfloat16_as_uint16(bf16.htanh(h))
            approx[11, i] = bf16.bfloat16_as_uint16(bf16.htanh_approx(h))
            mathmod[0, i] = bf16.bfloat16_as_uint16(math.trunc(h))
            mathmod[1, i] = bf16.bfloat16_as_uint16(math.ceil(h))
            mathmod[2, i] = bf16.bfloat16_as_uint16(math.floor(h))
            mathmod[3, i] = bf16.bfloat16_as_uint16(math.sqrt(h))
            mathmod[4, i] = bf16.bfloat16_as_uint16(math.log(h))
            mathmod[5, i] = bf16.bfloat16_as_uint16(math.log10(h))
            mathmod[6, i] = bf16.bfloat16_as_uint16(math.cos(h))
            mathmod[7, i] = bf16.bfloat16_as_uint16(math.sin(h))
            mathmod[8, i] = bf16.bfloat16_as_uint16(math.tanh(h))
            mathmod[9, i] = bf16.bfloat16_as_uint16(math.exp(h))
            mathmod[10, i] = bf16.bfloat16_as_uint16(_EXP2(h))

    bits = ALL_BITS
    exact = np.zeros((5, bits.size), np.uint16)
    approx = np.zeros((12, bits.size), np.uint16)
    mathmod = np.zeros((11, bits.size), np.uint16)
    fns[bits.size // 256, 256](bits, exact, approx, mathmod)
    x = as_floats(bits)
    with np.errstate(all="ignore"):
        for k, fn in enumerate((np.trunc, np.ceil, np.floor, np.rint, np.sqrt)):
            want = fn(x).astype(ml_dtypes.bfloat16).view(np.uint16)  # exact, or rounded once
            nan = np.isnan(fn(x))
            assert np.array_equal(exact[k][~nan], want[~nan]), fn.__name__
            assert (exact[k][nan] == 0x7FFF).all(), fn.__name__
        refs = (lambda v: 1 / np.sqrt(v), lambda v: 1 / v, np.log, np.log2, np.log10, np.cos,
                np.sin, np.exp, np.exp2, lambda v: 10.0 ** v, np.tanh, np.tanh)
        # arguments where float32 math is accurate (large cos/sin arguments are not: CUDA's
        # are float32 functions as well), compared within one bfloat16 step
        ok = np.abs(x) < 1e4
        for k, fn in enumerate(refs):
            want = as_floats(fn(x).astype(ml_dtypes.bfloat16).view(np.uint16))
            got = as_floats(approx[k])
            both_nan = np.isnan(want) & np.isnan(got)
            close = np.isclose(got, want, rtol=2.0 ** -7, atol=1e-30) | both_nan
            assert close[ok].all(), (k, x[ok][~close[ok]][:5], got[ok][~close[ok]][:5])
    functions = (bf16.htrunc, bf16.hceil, bf16.hfloor, bf16.hsqrt, bf16.hlog, bf16.hlog10,
                 bf16.hcos, bf16.hsin, bf16.htanh, bf16.hexp, bf16.hexp2)
    rows = {fn: row for row, fn in enumerate((bf16.htrunc, bf16.hceil, bf16.hfloor, None,
                                              bf16.hsqrt))}
    for k, fn in enumerate(functions):  # math.* on a bfloat16 is the intrinsic
        same = exact[rows[fn]] if fn in rows else approx[
            [bf16.hrsqrt, bf16.hrcp, bf16.hlog, bf16.hlog2, bf16.hlog10, bf16.hcos, bf16.hsin,
             bf16.hexp, bf16.hexp2, bf16.hexp10, bf16.htanh].index(fn)]
        assert np.array_equal(mathmod[k], same), fn.__name__


# ----------------------------------------------------------------- the rest
@pytest.mark.needs("fp64")
def test_upstream_style_kernel_and_implicit_conversions(device):
    @cuda.jit
    def kernel(out_f, out_i, out_b, x):
        a = bfloat16(1.25)
        b = bfloat16(x)
        out_f[0] = a * b          # a bfloat16 product, stored as float32
        out_f[1] = bf16.bfloat16_to_float32(a) * bf16.bfloat16_to_float32(b)
        out_f[2] = bfloat16(3.14)
        out_i[0] = b              # toward zero
        out_i[1] = -b
        out_i[2] = bfloat16(1e30)  # saturated
        out_b[0] = bfloat16(0.0) == bfloat16(-0.0)
        out_b[1] = bf16.hisnan(bfloat16(math.nan))

    out_f = np.zeros(3, np.float32)
    out_i = np.zeros(3, np.int16)
    out_b = np.zeros(2, np.bool_)
    kernel[1, 1](out_f, out_i, out_b, 1.3)
    b = float(np.float64(1.3).astype(ml_dtypes.bfloat16))
    assert out_f[1] == 1.25 * b
    assert out_f[0] == float(np.float64(1.25 * b).astype(ml_dtypes.bfloat16)) != out_f[1]
    assert out_f[2] == float(np.float64(3.14).astype(ml_dtypes.bfloat16)) == 3.140625
    assert out_i.tolist() == [1, -1, 32767]
    assert out_b.tolist() == [True, True]


def test_arrays_of_ml_dtypes_bfloat16(device):
    from numba_gpux.cuda._bf16_core import register_ml_dtypes

    assert register_ml_dtypes()

    @cuda.jit
    def axpy(a, x, y, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = a[0] * x[i] + y[i]

    rng = np.random.default_rng(50)
    x = rng.standard_normal(300).astype(ml_dtypes.bfloat16)
    y = rng.standard_normal(300).astype(ml_dtypes.bfloat16)
    a = np.array([1.5], ml_dtypes.bfloat16)
    d_out = cuda.device_array(300, dtype=ml_dtypes.bfloat16)
    axpy[3, 128](cuda.to_device(a), cuda.to_device(x), cuda.to_device(y), d_out)
    got = d_out.copy_to_host()
    assert got.dtype == np.dtype(ml_dtypes.bfloat16)
    # the product rounded to bfloat16, then the sum rounded (two bfloat16 operations)
    prod = (a.astype(np.float64) * x.astype(np.float64)).astype(ml_dtypes.bfloat16)
    want = (prod.astype(np.float64) + y.astype(np.float64)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(got.view(np.uint16), want.view(np.uint16))


def test_signature_strings_name_bfloat16(device):
    from numba_gpux.cuda._bf16_core import register_ml_dtypes

    assert register_ml_dtypes()

    @cuda.jit("void(bfloat16[::1], float32[::1])")
    def widen(h, out):
        i = cuda.grid(1)
        if i < h.size:
            out[i] = h[i] * h[i]

    @cuda.jit("bfloat16(bfloat16, int32)", device=True)
    def twice(h, k):
        return h * bfloat16(k)

    @cuda.jit(["void(bfloat16[::1])"])
    def double(h):
        h[cuda.grid(1)] = twice(h[cuda.grid(1)], 2)

    h = np.array([1.5, -3.0, 0.1], ml_dtypes.bfloat16)
    out = np.zeros(3, np.float32)
    widen[1, 32](h, out)
    assert out.tolist() == (h.astype(np.float64) ** 2).astype(ml_dtypes.bfloat16).astype(
        np.float32).tolist()
    d_h = cuda.to_device(h)
    double[1, 3](d_h)
    assert d_h.copy_to_host().tolist() == (h.astype(np.float64) * 2).tolist()


def test_shared_and_local_arrays_and_the_ml_dtypes_constructor(device):
    from numba_gpux.cuda._bf16_core import register_ml_dtypes

    assert register_ml_dtypes()

    @cuda.jit
    def staged(out):
        s = cuda.shared.array(8, bfloat16)
        loc = cuda.local.array(2, bfloat16)
        i = cuda.threadIdx.x
        s[i] = bfloat16(i) * ml_dtypes.bfloat16(1.5)
        cuda.syncthreads()
        loc[0] = s[7 - i]
        loc[1] = loc[0] + s[i]
        out[i] = loc[1]

    out = np.zeros(8, np.float32)
    staged[1, 8](out)
    assert out.tolist() == [10.5] * 8


@pytest.mark.feature("print")
def test_print_as_numba_cuda(device, capfd):
    @cuda.jit
    def show():
        a = cuda.bfloat16(0.9375)
        print(a, a, -a, cuda.bfloat16(1e30))

    show[1, 1]()
    cuda.synchronize()
    big = float(np.float64(1e30).astype(ml_dtypes.bfloat16))
    assert capfd.readouterr().out.splitlines() == [f"0.937500 0.937500 -0.937500 {big:f}"]


def test_supported_on_every_device(device):
    """cuda.bf16 runs everywhere (float32 arithmetic, integer rounding), so the facade
    says bfloat16 is supported on every device, whatever its capability."""
    dev = cuda.get_current_device()
    assert cuda.is_bfloat16_supported() is True and dev.supports_bfloat16 is True


def test_ptx_of_every_function_is_accepted_by_ptxas(ptxas, tmp_path):
    import numba_gpux

    @cuda.jit
    def every(bits, out):
        i = cuda.grid(1)
        h = bf16.uint16_as_bfloat16(bits[i])
        g = bf16.uint16_as_bfloat16(bits[i + 1])
        acc = bf16.hfma_relu(h, g, bf16.hfma_sat(h, g, bf16.hfma(h, g, h)))
        acc = bf16.hadd_sat(acc, bf16.hsub_sat(h, bf16.hmul_sat(h, g)))
        acc = bf16.hmax(acc, bf16.hmin_nan(bf16.hmax_nan(h, g), bf16.hmin(h, g)))
        acc = bf16.hdiv(acc, bf16.hsqrt(bf16.hexp10(bf16.hlog2(bf16.htanh(h)))))
        acc = acc + bf16.float64_to_bfloat16(bf16.bfloat16_to_uint64_ru(g) * 1.0)
        acc = acc * bf16.int64_to_bfloat16_rd(bf16.bfloat16_to_int64_rn(h))
        acc = acc - bf16.uint32_to_bfloat16_rz(bf16.bfloat16_to_uint32_rd(acc))
        out[i] = bf16.bfloat16_as_int16(acc) + bf16.hisinf(acc) + bf16.hequ(acc, g) \
            + bf16.bfloat16_to_int8_rz(acc)
        print(acc)

    res = numba_gpux.compile(every, "void(uint16[::1], int32[::1])", target="cuda")
    assert ".entry" in res.text
    path = tmp_path / "bf16.ptx"
    path.write_text(res.text)
    # numba.cuda's compile_ptx reads bfloat16 in a signature string too
    ptx, _ = cuda.compile_ptx(lambda h, g: bf16.hfma(h, g, h), "bfloat16(bfloat16, bfloat16)",
                              device=True)
    (tmp_path / "device.ptx").write_text(ptx)
    assert subprocess.run([ptxas, "--gpu-name", "sm_80", "-c", str(tmp_path / "device.ptx"),
                           "-o", str(tmp_path / "device.o")], capture_output=True,
                          timeout=300).returncode == 0
    done = subprocess.run([ptxas, "--gpu-name", "sm_80", str(path), "-o",
                           str(tmp_path / "bf16.cubin")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr


def test_kernels_using_bf16_have_a_cache_key(device, tmp_path, monkeypatch):
    from numba_gpux import cache
    # the functions themselves (not reached through the module), so the key looks into them
    from numba_gpux.cuda.bf16 import bfloat16_as_uint16, hadd, hfma

    monkeypatch.chdir(tmp_path)

    @cuda.jit(cache=True)
    def cached(out, x):
        out[0] = bfloat16_as_uint16(hadd(hfma(bfloat16(x[0]), bfloat16(x[1]), x[2]), 0.0))

    before = dict(cache.stats)
    out = np.zeros(1, np.uint16)
    cached[1, 1](out, np.array([1.5, 2.0, 0.25], np.float32))
    assert out[0] == 0x4050  # 3.25
    # the kernel is keyed before typing (nothing it reads is opaque to the key)
    assert cache.stats["uncacheable"] == before["uncacheable"]
    assert cache.stats["index_misses"] + cache.stats["index_hits"] > \
        before["index_misses"] + before["index_hits"]
