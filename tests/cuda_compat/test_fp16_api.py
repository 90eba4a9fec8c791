"""numba.cuda's ``cuda.fp16`` names from CUDA's ``cuda_fp16.h`` run on the device: the
``__``-prefixed aliases, saturating and relu arithmetic, NaN-propagating max/min,
unordered comparisons, classification, every conversion in every rounding mode and bit
casts, against exact host arithmetic (Python's fractions and integers) and NumPy's
float16, with NaN, signed zeros, infinities, subnormals, overflow, ties and saturation
at the integer limits."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from numba.core import types

from gpux_testing import round_to_table
from numba_gpux import cuda
from numba_gpux.cuda import fp16


MODES = ("rn", "rz", "rd", "ru")
ALL_BITS = np.arange(0x10000, dtype=np.uint32).astype(np.uint16)
#: the positive finite halves in order (index = bits), and 2**16 where the next one
#: would be: the value a round to nearest compares with past the largest
_POSITIVE = [float(v) for v in ALL_BITS[:0x7C00].view(np.float16)] + [2.0 ** 16]
CANONICAL_NAN = 0x7FFF


def round_exact(x, mode: str) -> int:
    """The half bits CUDA's conversion gives for the exact number x in mode."""
    if isinstance(x, float):
        if math.isnan(x):
            return CANONICAL_NAN
        if math.isinf(x):
            return 0x7C00 if x > 0 else 0xFC00
        negative = math.copysign(1.0, x) < 0
    else:
        negative = x < 0
    if negative:
        mode = {"rd": "ru", "ru": "rd"}.get(mode, mode)
    return round_to_table(_POSITIVE, abs(Fraction(x)), mode) | (0x8000 if negative else 0)


def halves(bits) -> np.ndarray:
    return np.asarray(bits, np.uint16).view(np.float16)


def _launch(kernel, n, *args):
    kernel[(n + 127) // 128, 128](*args)


# ----------------------------------------------------------------- float -> half
@pytest.mark.needs("fp16")
def test_float32_to_half_in_every_mode(device):
    @cuda.jit
    def convert(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[0, i] = fp16.__half_as_ushort(fp16.__float2half_rn(x[i]))
            out[1, i] = fp16.__half_as_ushort(fp16.__float2half_rz(x[i]))
            out[2, i] = fp16.__half_as_ushort(fp16.__float2half_rd(x[i]))
            out[3, i] = fp16.__half_as_ushort(fp16.__float2half_ru(x[i]))
            out[4, i] = fp16.__half_as_ushort(fp16.__float2half(x[i]))

    rng = np.random.default_rng(1)
    pos = np.array(_POSITIVE[:-1][::7] + _POSITIVE[0x7B00:-1], np.float64)
    mids = (pos[:-1] + pos[1:]) / 2  # ties (exact in float32: 12 bits)
    f32 = np.concatenate([pos, mids]).astype(np.float32)
    near = np.concatenate([f32, np.nextafter(f32, np.float32(np.inf)),
                           np.nextafter(f32, np.float32(-np.inf))])
    x = np.concatenate([
        near, -near, rng.standard_normal(800).astype(np.float32) * np.float32(2.0) ** rng.integers(-30, 17, 800).astype(np.float32),
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 65504.0, 65519.996, 65520.0,
                  65536.0, -65519.996, -65520.0, 1e30, -1e30, 2.0 ** -25, -(2.0 ** -25),
                  2.0 ** -25 * 1.0000001, 3 * 2.0 ** -25, 2.0 ** -26, -(2.0 ** -26),
                  2.0 ** -24, 2.0 ** -14, 2.0 ** -14 - 2.0 ** -25], np.float32),
        np.array([1, 0x80000001, 0x007FFFFF, 0x807FFFFF], np.uint32).view(np.float32)])
    x = x.astype(np.float32)
    out = np.zeros((5, x.size), np.uint16)
    _launch(convert, x.size, x, out)
    for k, mode in enumerate(MODES):
        want = [round_exact(float(v), mode) for v in x]
        bad = [(float(v), hex(g), hex(w)) for v, g, w in zip(x, out[k], want) if g != w]
        assert not bad, (mode, bad[:10])
    assert np.array_equal(out[4], out[0])
    finite = ~np.isnan(x)
    with np.errstate(over="ignore"):
        assert np.array_equal(out[0][finite], x[finite].astype(np.float16).view(np.uint16))


@pytest.mark.needs("fp16")
@pytest.mark.needs("fp64")
def test_double_to_half_rounds_once(device):
    @cuda.jit
    def convert(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = fp16.__half_as_ushort(fp16.__double2half(x[i]))

    pos = np.array(_POSITIVE[:-1][::13], np.float64)
    mids = (pos[:-1] + pos[1:]) / 2
    # just off a tie by less than float32 resolves: through float32 they would tie
    x = np.concatenate([mids * (1 + 2.0 ** -40), mids * (1 - 2.0 ** -40), mids,
                        -mids * (1 + 2.0 ** -40),
                        [1e300, -1e300, 1e-300, -1e-300, np.inf, -np.inf, np.nan, 0.0, -0.0,
                         65519.99999999, 65520.0, 2.0 ** -25 * (1 + 2.0 ** -45)]])
    out = np.zeros(x.size, np.uint16)
    _launch(convert, x.size, x, out)
    assert out.tolist() == [round_exact(float(v), "rn") for v in x]


INT_TYPES = (("short", np.int16), ("ushort", np.uint16), ("int", np.int32),
             ("uint", np.uint32), ("ll", np.int64), ("ull", np.uint64))


def _int_inputs(dtype) -> np.ndarray:
    info = np.iinfo(dtype)
    vals = set(range(0, 70000, 37)) | {2049, 2051, 2053, 4097, 4098, 4099, 4100, 4102,
                                       65503, 65504, 65505, 65519, 65520, 65521, 65535,
                                       65536, 2 ** 24 + 1, 2 ** 31 - 1, 2 ** 32 - 1,
                                       2 ** 63 - 1, 2 ** 64 - 1}
    vals |= {-v for v in list(vals)} | {-(2 ** 15), -(2 ** 31), -(2 ** 63)}
    return np.array(sorted(v for v in vals if info.min <= v <= info.max), dtype)


@pytest.mark.needs("fp16")
def test_integers_to_half_in_every_mode(device):
    @cuda.jit
    def convert(s, us, i, ui, ll, ull, out):
        k = cuda.grid(1)
        if k < s.size:
            out[0, k] = fp16.__half_as_ushort(fp16.__short2half_rn(s[k]))
            out[1, k] = fp16.__half_as_ushort(fp16.__short2half_rz(s[k]))
            out[2, k] = fp16.__half_as_ushort(fp16.__short2half_rd(s[k]))
            out[3, k] = fp16.__half_as_ushort(fp16.__short2half_ru(s[k]))
        if k < us.size:
            out[4, k] = fp16.__half_as_ushort(fp16.__ushort2half_rn(us[k]))
            out[5, k] = fp16.__half_as_ushort(fp16.__ushort2half_rz(us[k]))
            out[6, k] = fp16.__half_as_ushort(fp16.__ushort2half_rd(us[k]))
            out[7, k] = fp16.__half_as_ushort(fp16.__ushort2half_ru(us[k]))
        if k < i.size:
            out[8, k] = fp16.__half_as_ushort(fp16.__int2half_rn(i[k]))
            out[9, k] = fp16.__half_as_ushort(fp16.__int2half_rz(i[k]))
            out[10, k] = fp16.__half_as_ushort(fp16.__int2half_rd(i[k]))
            out[11, k] = fp16.__half_as_ushort(fp16.__int2half_ru(i[k]))
        if k < ui.size:
            out[12, k] = fp16.__half_as_ushort(fp16.__uint2half_rn(ui[k]))
            out[13, k] = fp16.__half_as_ushort(fp16.__uint2half_rz(ui[k]))
            out[14, k] = fp16.__half_as_ushort(fp16.__uint2half_rd(ui[k]))
            out[15, k] = fp16.__half_as_ushort(fp16.__uint2half_ru(ui[k]))
        if k < ll.size:
            out[16, k] = fp16.__half_as_ushort(fp16.__ll2half_rn(ll[k]))
            out[17, k] = fp16.__half_as_ushort(fp16.__ll2half_rz(ll[k]))
            out[18, k] = fp16.__half_as_ushort(fp16.__ll2half_rd(ll[k]))
            out[19, k] = fp16.__half_as_ushort(fp16.__ll2half_ru(ll[k]))
        if k < ull.size:
            out[20, k] = fp16.__half_as_ushort(fp16.__ull2half_rn(ull[k]))
            out[21, k] = fp16.__half_as_ushort(fp16.__ull2half_rz(ull[k]))
            out[22, k] = fp16.__half_as_ushort(fp16.__ull2half_rd(ull[k]))
            out[23, k] = fp16.__half_as_ushort(fp16.__ull2half_ru(ull[k]))

    ins = [_int_inputs(t) for _, t in INT_TYPES]
    n = max(a.size for a in ins)
    out = np.zeros((24, n), np.uint16)
    _launch(convert, n, *ins, out)
    for t, ((cname, _), a) in enumerate(zip(INT_TYPES, ins)):
        for k, mode in enumerate(MODES):
            got = out[4 * t + k, :a.size].tolist()
            want = [round_exact(int(v), mode) for v in a]
            bad = [(int(v), hex(g), hex(w)) for v, g, w in zip(a, got, want) if g != w]
            assert not bad, (cname, mode, bad[:10])


# ----------------------------------------------------------------- half -> ...
def _to_int_model(h: float, mode: str, dtype) -> int:
    info = np.iinfo(dtype)
    if math.isnan(h):
        return -(2 ** 63) if dtype == np.int64 else 2 ** 63 if dtype == np.uint64 else 0
    if math.isinf(h):
        return info.max if h > 0 else info.min
    v = Fraction(h)
    r = {"rn": round, "rz": math.trunc, "rd": math.floor, "ru": math.ceil}[mode](v)
    return min(max(r, info.min), info.max)


@pytest.mark.needs("fp16")
def test_half_to_integers_in_every_mode_saturate(device):
    @cuda.jit
    def convert(h, s, u):
        k = cuda.grid(1)
        if k < h.size:
            x = h[k]
            s[0, k] = fp16.__half2short_rn(x)
            s[1, k] = fp16.__half2short_rz(x)
            s[2, k] = fp16.__half2short_rd(x)
            s[3, k] = fp16.__half2short_ru(x)
            s[4, k] = fp16.__half2int_rn(x)
            s[5, k] = fp16.__half2int_rz(x)
            s[6, k] = fp16.__half2int_rd(x)
            s[7, k] = fp16.__half2int_ru(x)
            s[8, k] = fp16.__half2ll_rn(x)
            s[9, k] = fp16.__half2ll_rz(x)
            s[10, k] = fp16.__half2ll_rd(x)
            s[11, k] = fp16.__half2ll_ru(x)
            s[12, k] = fp16.__half2char_rz(x)
            u[0, k] = fp16.__half2ushort_rn(x)
            u[1, k] = fp16.__half2ushort_rz(x)
            u[2, k] = fp16.__half2ushort_rd(x)
            u[3, k] = fp16.__half2ushort_ru(x)
            u[4, k] = fp16.__half2uint_rn(x)
            u[5, k] = fp16.__half2uint_rz(x)
            u[6, k] = fp16.__half2uint_rd(x)
            u[7, k] = fp16.__half2uint_ru(x)
            u[8, k] = fp16.__half2ull_rn(x)
            u[9, k] = fp16.__half2ull_rz(x)
            u[10, k] = fp16.__half2ull_rd(x)
            u[11, k] = fp16.__half2ull_ru(x)
            u[12, k] = fp16.__half2uchar_rz(x)

    h = halves(ALL_BITS)  # every half: NaNs, infinities, zeros, subnormals, ties
    s = np.zeros((13, h.size), np.int64)
    u = np.zeros((13, h.size), np.uint64)
    _launch(convert, h.size, h, s, u)
    vals = [float(v) for v in h]
    signed = [(t, m) for t in (np.int16, np.int32, np.int64) for m in MODES] + [(np.int8, "rz")]
    unsigned = [(t, m) for t in (np.uint16, np.uint32, np.uint64) for m in MODES] + [
        (np.uint8, "rz")]
    for out, cases in ((s, signed), (u, unsigned)):
        for k, (t, mode) in enumerate(cases):
            want = [_to_int_model(v, mode, t) for v in vals]
            got = [int(g) for g in out[k]]
            bad = [(v, g, w) for v, g, w in zip(vals, got, want) if g != w]
            assert not bad, (t.__name__, mode, bad[:10])


@pytest.mark.needs("fp16")
def test_half_to_float_and_bit_casts(device):
    @cuda.jit
    def convert(bits, f, us, ss, back_u, back_s):
        k = cuda.grid(1)
        if k < bits.size:
            h = fp16.__ushort_as_half(bits[k])
            f[k] = fp16.__half2float(h)
            us[k] = fp16.__half_as_ushort(h)
            ss[k] = fp16.__half_as_short(h)
            back_u[k] = fp16.__ushort_as_half(us[k])
            back_s[k] = fp16.__short_as_half(ss[k])

    n = ALL_BITS.size
    f = np.zeros(n, np.float32)
    us, ss = np.zeros(n, np.uint16), np.zeros(n, np.int16)
    back_u, back_s = np.zeros(n, np.float16), np.zeros(n, np.float16)
    _launch(convert, n, ALL_BITS, f, us, ss, back_u, back_s)
    assert np.array_equal(us, ALL_BITS)
    assert np.array_equal(ss, ALL_BITS.view(np.int16))
    assert np.array_equal(back_u.view(np.uint16), ALL_BITS)  # NaN payloads kept
    assert np.array_equal(back_s.view(np.uint16), ALL_BITS)
    want = halves(ALL_BITS).astype(np.float32)
    nan = np.isnan(want)
    assert np.array_equal(f[~nan].view(np.uint32), want[~nan].view(np.uint32))
    assert np.isnan(f[nan]).all()


# ----------------------------------------------------------------- arithmetic
SPECIAL = np.array([0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3800,
                    0x3BFF, 0x3C01, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0xFE00, 0x4000,
                    0xC000, 0x3555], np.uint16)


def _pairs():
    rng = np.random.default_rng(5)
    a, b = np.meshgrid(SPECIAL, SPECIAL)
    ra = rng.integers(0, 0x10000, 3000, dtype=np.uint32).astype(np.uint16)
    rb = rng.integers(0, 0x10000, 3000, dtype=np.uint32).astype(np.uint16)
    # values in and around [0, 1], where saturation decides
    near = (rng.uniform(-0.5, 1.5, (2, 1500))).astype(np.float16).view(np.uint16)
    return (np.concatenate([a.ravel(), ra, near[0]]),
            np.concatenate([b.ravel(), rb, near[1]]))


def _sat_model(v: np.float16) -> np.float16:
    if np.isnan(v) or v <= 0:
        return np.float16(0.0)
    return np.float16(1.0) if v > 1 else v


def _same(got, want):
    """Equal bit for bit, or both NaN."""
    g, w = np.asarray(got, np.float16), np.asarray(want, np.float16)
    nan = np.isnan(w)
    return np.array_equal(np.isnan(g), nan) and np.array_equal(
        g[~nan].view(np.uint16), w[~nan].view(np.uint16))


@pytest.mark.needs("fp16")
def test_aliases_rn_and_saturating_arithmetic(device):
    @cuda.jit
    def arith(a, b, out):
        i = cuda.grid(1)
        if i < a.size:
            x, y = a[i], b[i]
            out[0, i] = fp16.__hadd(x, y)
            out[1, i] = fp16.__hsub(x, y)
            out[2, i] = fp16.__hmul(x, y)
            out[3, i] = fp16.__hdiv(x, y)
            out[4, i] = fp16.__hadd_rn(x, y)
            out[5, i] = fp16.__hsub_rn(x, y)
            out[6, i] = fp16.__hmul_rn(x, y)
            out[7, i] = fp16.__hadd_sat(x, y)
            out[8, i] = fp16.__hsub_sat(x, y)
            out[9, i] = fp16.__hmul_sat(x, y)
            out[10, i] = fp16.__hneg(x)
            out[11, i] = fp16.__habs(x)

    a, b = (halves(v) for v in _pairs())
    out = np.zeros((12, a.size), np.float16)
    _launch(arith, a.size, a, b, out)
    with np.errstate(all="ignore"):
        add, sub, mul, div = a + b, a - b, a * b, a / b
    for k, want in enumerate((add, sub, mul, div, add, sub, mul)):
        assert _same(out[k], want), k
    for k, want in ((7, add), (8, sub), (9, mul)):
        assert _same(out[k], [_sat_model(v) for v in want]), k
        assert not np.signbit(out[k]).any()
    assert _same(out[10], -a)
    assert _same(out[11], np.abs(a))


def _fma_model(x, y, z) -> int:
    x, y, z = float(x), float(y), float(z)
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        return round_exact(x * y + z, "rn")  # IEEE's infinities and NaN
    exact = Fraction(x) * Fraction(y) + Fraction(z)
    if exact == 0:
        prod_neg = (math.copysign(1, x) * math.copysign(1, y)) < 0
        return 0x8000 if prod_neg and math.copysign(1, z) < 0 else 0
    return round_exact(exact, "rn")


@pytest.mark.needs("fp16")
def test_fma_rounds_once_with_sat_and_relu(device):
    @cuda.jit
    def fma(a, b, c, out):
        i = cuda.grid(1)
        if i < a.size:
            out[0, i] = fp16.__half_as_ushort(fp16.__hfma(a[i], b[i], c[i]))
            out[1, i] = fp16.__half_as_ushort(fp16.hfma(a[i], b[i], c[i]))
            out[2, i] = fp16.__half_as_ushort(fp16.__hfma_sat(a[i], b[i], c[i]))
            out[3, i] = fp16.__half_as_ushort(fp16.__hfma_relu(a[i], b[i], c[i]))

    a, b = _pairs()
    rng = np.random.default_rng(6)
    c = rng.integers(0, 0x10000, a.size, dtype=np.uint32).astype(np.uint16)
    with np.errstate(all="ignore"):
        prod = (halves(a).astype(np.float64) * halves(b)).astype(np.float16).view(np.uint16)
    c[: a.size // 3] = prod[: a.size // 3] ^ 0x8000  # nearly cancelling addends
    # products exactly on a tie of halves with an addend far below float32's
    # resolution there: through a float32 sum they would round to the tie's even side
    ties = [(1.5, 683 * 2.0 ** -10, 2.0 ** -24), (1.5, 683 * 2.0 ** -10, -(2.0 ** -24)),
            (1.75, 293 * 2.0 ** -9, -(2.0 ** -24)), (1.75, 293 * 2.0 ** -9, 2.0 ** -24),
            (-1.75, 293 * 2.0 ** -9, 2.0 ** -24), (2.0 ** -12, 2.0 ** -13, 0.0),
            (-(2.0 ** -12), 2.0 ** -13, -0.0), (0.0, -1.0, 0.0), (256.0, 256.0, -1.0)]
    ta, tb, tc = (np.array(v, np.float16).view(np.uint16) for v in zip(*ties))
    a, b, c = (np.concatenate(v) for v in ((a, ta), (b, tb), (c, tc)))
    out = np.zeros((4, a.size), np.uint16)
    _launch(fma, a.size, halves(a), halves(b), halves(c), out)
    want = [_fma_model(x, y, z) for x, y, z in zip(halves(a), halves(b), halves(c))]
    wh = halves(want)
    assert _same(halves(out[0]), wh)
    assert np.array_equal(out[1], out[0])
    assert _same(halves(out[2]), [_sat_model(v) for v in wh])
    relu = [CANONICAL_NAN if np.isnan(v) else 0 if v < 0 else int(w)
            for v, w in zip(wh, want)]
    assert out[3].tolist() == relu


@pytest.mark.needs("fp16")
def test_a_contracted_multiply_add_of_halves_rounds_once(device):
    """``a * b + c`` on halves in a facade kernel is one fused multiply-add, as NVVM
    contracts it: rounded once (ties a float32 sum would misround included), a NaN
    CUDA's canonical one, the same bits as ``fp16.hfma`` (on OpenCL through float32
    arithmetic, where the driver's own half fma is a slow software routine)."""
    @cuda.jit
    def muladd(a, b, c, out):
        i = cuda.grid(1)
        if i < a.size:
            out[0, i] = fp16.__half_as_ushort(a[i] * b[i] + c[i])
            out[1, i] = fp16.__half_as_ushort(fp16.hfma(a[i], b[i], c[i]))

    a, b = _pairs()
    c = np.random.default_rng(8).integers(0, 0x10000, a.size, dtype=np.uint32).astype(np.uint16)
    ties = [(1.5, 683 * 2.0 ** -10, 2.0 ** -24), (1.75, 293 * 2.0 ** -9, -(2.0 ** -24)),
            (-1.75, 293 * 2.0 ** -9, 2.0 ** -24), (256.0, 256.0, -1.0)]
    ta, tb, tc = (np.array(v, np.float16).view(np.uint16) for v in zip(*ties))
    a, b, c = (np.concatenate(v) for v in ((a, ta), (b, tb), (c, tc)))
    out = np.zeros((2, a.size), np.uint16)
    _launch(muladd, a.size, halves(a), halves(b), halves(c), out)
    want = halves([_fma_model(x, y, z) for x, y, z in zip(halves(a), halves(b), halves(c))])
    assert _same(halves(out[0]), want)
    assert np.array_equal(out[0], out[1])
    assert (out[0][np.isnan(want)] == CANONICAL_NAN).all()


# ----------------------------------------------------------------- comparisons
@pytest.mark.needs("fp16")
def test_max_min_nan_unordered_comparisons_and_classification(device):
    @cuda.jit
    def cmp(a, b, h, flags, ints):
        i = cuda.grid(1)
        if i < a.size:
            x, y = a[i], b[i]
            h[0, i] = fp16.__half_as_ushort(fp16.__hmax_nan(x, y))
            h[1, i] = fp16.__half_as_ushort(fp16.__hmin_nan(x, y))
            h[2, i] = fp16.__half_as_ushort(fp16.__hmax(x, y))
            h[3, i] = fp16.__half_as_ushort(fp16.__hmin(x, y))
            flags[0, i] = fp16.__hequ(x, y)
            flags[1, i] = fp16.__hneu(x, y)
            flags[2, i] = fp16.__hgeu(x, y)
            flags[3, i] = fp16.__hgtu(x, y)
            flags[4, i] = fp16.__hleu(x, y)
            flags[5, i] = fp16.__hltu(x, y)
            flags[6, i] = fp16.__heq(x, y)
            flags[7, i] = fp16.__hne(x, y)
            flags[8, i] = fp16.__hge(x, y)
            flags[9, i] = fp16.__hgt(x, y)
            flags[10, i] = fp16.__hle(x, y)
            flags[11, i] = fp16.__hlt(x, y)
            flags[12, i] = fp16.__hisnan(x)
            flags[13, i] = fp16.hne(x, y)
            ints[i] = fp16.__hisinf(x)

    ab, bb = _pairs()
    a, b = halves(ab), halves(bb)
    n = a.size
    h = np.zeros((4, n), np.uint16)
    flags = np.zeros((14, n), np.bool_)
    ints = np.zeros(n, np.int32)
    _launch(cmp, n, a, b, h, flags, ints)
    an, bn = np.isnan(a), np.isnan(b)
    either = an | bn
    with np.errstate(invalid="ignore"):
        lt, gt, eq = a < b, a > b, a == b
    for k, want in enumerate((eq | either, ~eq, ~lt, ~(lt | eq), ~gt, ~(gt | eq),
                              eq, lt | gt, gt | eq, gt, lt | eq, lt, an, lt | gt)):
        assert np.array_equal(flags[k], want), k
    assert np.array_equal(ints, np.where(a == np.inf, 1, np.where(a == -np.inf, -1, 0)))

    def pick(x, y, xb, yb, larger):
        if x == y:  # equal (zeros of either sign): +0 is the larger
            return min(xb, yb) if larger else max(xb, yb)
        return xb if (x > y) == larger else yb

    for k, larger in ((0, True), (1, False)):
        want = [CANONICAL_NAN if e else pick(x, y, xb, yb, larger)
                for x, y, xb, yb, e in zip(a, b, ab, bb, either)]
        assert h[k].tolist() == want, k
    for k, larger in ((2, True), (3, False)):
        want = [CANONICAL_NAN if xn and yn else yb if xn else xb if yn
                else pick(x, y, xb, yb, larger)
                for x, y, xb, yb, xn, yn in zip(a, b, ab, bb, an, bn)]
        assert h[k].tolist() == want, k


@pytest.mark.needs("fp16")
def test_htanh_and_the_half_type(device):
    @cuda.jit
    def k(x, out, made):
        i = cuda.grid(1)
        if i < x.size:
            out[0, i] = fp16.htanh(x[i])
            out[1, i] = fp16.htanh_approx(x[i])
            made[i] = fp16.__half(np.float32(x[i]) * np.float32(0.5))

    x = halves(np.concatenate([ALL_BITS[::97], SPECIAL]))
    out = np.zeros((2, x.size), np.float16)
    made = np.zeros(x.size, np.float16)
    _launch(k, x.size, x, out, made)
    want = np.tanh(x.astype(np.float64))
    nan = np.isnan(x)
    assert np.isnan(out[:, nan]).all()
    ulp = np.spacing(np.abs(want[~nan]).astype(np.float16)).astype(np.float64)
    for r in out:
        assert (np.abs(r[~nan].astype(np.float64) - want[~nan]) <= ulp).all()
        # signed zeros kept, the infinities give +-1
        assert np.array_equal(np.signbit(r[~nan]), np.signbit(x[~nan]))
    assert fp16.__half is types.float16  # numba.cuda's: the Numba type
    with np.errstate(invalid="ignore"):
        assert _same(made, (x.astype(np.float32) * np.float32(0.5)).astype(np.float16))


def test_every_numba_cuda_fp16_name_is_there():
    # numba-cuda 0.30's numba.cuda.fp16.__all__, less its registries and atomicAdd
    want = {"__half", "__double2half", "__float2half", "__half2float", "__half2char_rz",
            "__half2uchar_rz", "__short_as_half", "__ushort_as_half", "__half_as_short",
            "__half_as_ushort", "htanh", "htanh_approx", "__hisinf", "__hisnan",
            "__hmax_nan", "__hmin_nan", "__hfma_relu", "__hfma_sat"}
    for m in MODES:
        want.add(f"__float2half_{m}")
        for c, _ in INT_TYPES:
            want |= {f"__{c}2half_{m}", f"__half2{c}_{m}"}
    for op in ("add", "sub", "mul"):
        want |= {f"__h{op}_rn", f"__h{op}_sat"}
    for base in ("habs", "hadd", "hdiv", "heq", "hfma", "hge", "hgt", "hle", "hlt", "hmax",
                 "hmin", "hmul", "hne", "hneg", "hsub"):
        want |= {base, f"__{base}"}
    for c in ("eq", "ne", "ge", "gt", "le", "lt"):
        want.add(f"__h{c}u")
    missing = sorted(n for n in want if not hasattr(fp16, n))
    assert not missing
    assert not want - set(fp16.__all__)


@pytest.mark.needs("fp16")
def test_atomic_add_on_a_half_pointer(device):
    """``fp16.atomicAdd(ptr, val)``: concurrent adds to neighbouring halves (both halves of
    one 32-bit word, and the next word) each count once and return distinct old values;
    the result is rounded to nearest even."""
    sig = "void(CPointer(float16), CPointer(float16), CPointer(float16), CPointer(float16), " \
          "float16[:], float16)"

    @cuda.jit(sig)
    def add(p0, p1, p2, p3, olds, v):
        i = cuda.grid(1)
        if i < olds.size:
            k = i % 4
            if k == 0:
                olds[i] = fp16.atomicAdd(p0, v)
            elif k == 1:
                olds[i] = fp16.atomicAdd(p1, v)
            elif k == 2:
                olds[i] = fp16.atomicAdd(p2, v)
            else:
                olds[i] = fp16.atomicAdd(p3, v)

    n = 4 * 300
    d = cuda.to_device(np.array([0.0, 0.0, 0.0, 0.0, 7.0], np.float16))
    base = d.gpu_data.device_pointer
    olds = cuda.device_array(n, np.float16)
    add[(n + 127) // 128, 128](base, base + 2, base + 4, base + 6, olds, np.float16(1.0))
    np.testing.assert_array_equal(d.copy_to_host(), [300, 300, 300, 300, 7])
    o = olds.copy_to_host()
    for k in range(4):
        assert sorted(o[k::4].tolist()) == list(range(300))
    # 2048 + 1 is a tie of halves: to even, 2048 (2049 + 1 = 2050 exactly)
    h = cuda.to_device(np.array([2048.0, 2050.0], np.float16))
    one = cuda.device_array(4, np.float16)
    ptr = h.gpu_data.device_pointer
    add[1, 4](ptr, ptr + 2, ptr, ptr + 2, one, np.float16(1.0))
    np.testing.assert_array_equal(h.copy_to_host(), [2048, 2052])
