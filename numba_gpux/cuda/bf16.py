"""``numba_gpux.cuda.bf16``: numba.cuda's bfloat16 type and functions, on every target.

``bfloat16`` (also ``numba_gpux.cuda.bfloat16`` and ``numba_gpux.cuda.types.bfloat16``)
is a Numba type whose values kernels build with ``bfloat16(x)`` from a number (rounded
to nearest even), compute with (``+ - * /``, unary ``-``, ``abs``, comparisons, and
``math.trunc/ceil/floor/sqrt/log/log10/cos/sin/tanh/exp/exp2``, each giving a
bfloat16), convert (``float32(h)`` is exact, ``int16(h)`` rounds toward zero) and store
in arrays of bfloat16, float or integer elements.  The functions below are CUDA's
``cuda_bf16.h`` intrinsics under numba.cuda's names (``hadd``...; the conversions both
as CUDA names them, ``float2bfloat16_rz``, and as numba.cuda's NumPy-style aliases,
``float32_to_bfloat16_rz``), with CUDA's results: arithmetic correctly rounded to
nearest even, saturation to [0, 1] with NaN giving 0, every conversion in the rounding
mode its suffix names, conversions to integers saturated with NaN giving 0, and the
canonical NaN ``0x7FFF`` where a result is NaN.  Math functions are computed in float32
and rounded once, as CUDA's are.

Every target runs them: the storage is 16 bits, the arithmetic float32, the rounding
integer operations (:mod:`._bf16_core`).  numba.cuda code asks
``cuda.is_bfloat16_supported()`` (compute capability 8.0) before using them.
"""

from __future__ import annotations

import math
import operator

import numpy as np
from numba.core import types

from ..context import TARGET_NAME
from ..language.templates import exact_template
from ._bf16_core import (RD, RN, RU, RZ, CANONICAL_NAN, TO_INT, bf16_bits, bf16_from_bits,
                         bfloat16, f32_bits, f32_from_bits, from_f32, from_f64, from_signed,
                         from_unsigned, is_nan, lowering_registry, round_integral, to_f32,
                         typing_registry)
from ._bf16_core import _device

_F0, _F1, _HALF, _TWO = np.float32(0.0), np.float32(1.0), np.float32(0.5), np.float32(2.0)
_INF = np.float32(np.inf)


@_device
def _f(a):
    """Any number -> the float32 value of it as a bfloat16 (numbers convert as
    numba.cuda's implicit conversion does: to nearest even)."""
    return to_f32(bfloat16(a))


@_device
def _rn(x):
    return from_f32(x, RN)


# ------------------------------------------------------------------ arithmetic
@_device
def hadd(a, b):
    return _rn(_f(a) + _f(b))


@_device
def hsub(a, b):
    return _rn(_f(a) - _f(b))


@_device
def hmul(a, b):
    return _rn(_f(a) * _f(b))


@_device
def hdiv(a, b):
    return _rn(_f(a) / _f(b))


# the _rn forms differ from the plain ones in CUDA only in that the compiler may not
# fuse them into an fma; these are never fused
hadd_rn, hsub_rn, hmul_rn = hadd, hsub, hmul


@_device
def _sat(h):
    """[0, 1] clamp of a bfloat16, NaN giving +0 (CUDA's .sat)."""
    f = to_f32(h)
    if not f > _F0:
        return from_f32(_F0, RN)
    if f > _F1:
        return from_f32(_F1, RN)
    return h


@_device
def hadd_sat(a, b):
    return _sat(hadd(a, b))


@_device
def hsub_sat(a, b):
    return _sat(hsub(a, b))


@_device
def hmul_sat(a, b):
    return _sat(hmul(a, b))


@_device
def _fma_odd(x, y, z):
    """x * y + z for float32 values of bfloat16s whose product is finite, rounded to
    odd in float32: the product of two 8-bit significands is exact, the sum's rounding
    error is recovered exactly (Knuth's two-sum), and an inexact sum gets an odd last
    bit, so that rounding it to bfloat16 once more rounds the exact value once."""
    p = x * y
    s = p + z
    if s - s != _F0:  # infinite or NaN
        return s
    back = s - p
    err = (p - (s - back)) + (z - back)
    if err != _F0:
        u = np.int64(f32_bits(s))
        if (u & 1) == 0:
            if (err > _F0) == (s > _F0):
                u += 1  # the exact value is further from zero
            else:
                u -= 1
        return f32_from_bits(u)
    return s


@_device
def _round_scaled(v, k):
    """The bfloat16 nearest (ties to even) to v * 2**-k, for a float32 *v* rounded to
    odd (a normal number or zero) and an integer *k*: the exponent is shifted before
    rounding, so the result is rounded once where it lands, subnormal or overflowing."""
    b = np.int64(f32_bits(v))
    if k == 0 or (b & 0x7FFFFFFF) == 0:
        return from_f32(v, RN)
    sign = (b >> 16) & 0x8000
    exponent = ((b >> 23) & 0xFF) - k
    significand = (b & 0x7FFFFF) | 0x800000
    if exponent >= 255:
        return bf16_from_bits(sign | 0x7F80)
    if exponent >= 1:  # a normal bfloat16, or the carry of its rounding
        head, rest = (exponent << 7) | (significand >> 16) & 0x7F, significand & 0xFFFF
        if rest > 0x8000 or (rest == 0x8000 and (head & 1) == 1):
            head += 1
        return bf16_from_bits(sign | head)
    shift = 17 - exponent  # subnormal: steps of 2**-133
    if shift > 25:
        return bf16_from_bits(sign)
    head, rest, half = significand >> shift, significand & ((1 << shift) - 1), 1 << (shift - 1)
    if rest > half or (rest == half and (head & 1) == 1):
        head += 1
    return bf16_from_bits(sign | head)


_TINY = np.float32(2.0 ** -100)
_SMALL = np.float32(2.0 ** -80)
_UP = np.float32(2.0 ** 94)
_DOWN = np.float32(2.0 ** -64)


@_device
def _fma(a, b, c):
    """a * b + c rounded once to bfloat16 (CUDA's fma.rn.bf16)."""
    x, y, z = _f(a), _f(b), _f(c)
    if not (abs(x) < _INF and abs(y) < _INF):
        return _rn(x * y + z)  # IEEE's infinities and NaN
    if not abs(z) < _INF:
        return _rn(z)  # a finite product, however large, leaves z
    p = abs(x * y)
    if p == _INF:
        # the exact product is finite but past float32: scale it down by 2**128 (each
        # factor is at least 1, so exactly), with an addend too small to scale exactly
        # replaced by one of its sign below the product's last bit (it only breaks ties)
        if abs(z) >= np.float32(256.0):
            z = z * _DOWN * _DOWN
        elif z != _F0:
            z = _TINY if z > _F0 else -_TINY
        return _round_scaled(_fma_odd(x * _DOWN, y * _DOWN, z), -128)
    if p < _TINY and x != _F0 and y != _F0:
        if abs(z) >= _SMALL:
            return bfloat16(c)  # the product is far below half a step of z
        # a product that float32 may not hold exactly: scale it up by 2**188 (each
        # factor is below 2**33 here), round to odd there, round to bfloat16 back here
        return _round_scaled(_fma_odd(x * _UP, y * _UP, z * _UP * _UP), 188)
    return _rn(_fma_odd(x, y, z))


@_device
def hfma(a, b, c):
    return _fma(a, b, c)


@_device
def hfma_sat(a, b, c):
    return _sat(_fma(a, b, c))


@_device
def hfma_relu(a, b, c):
    r = _fma(a, b, c)
    if is_nan(r):
        return bf16_from_bits(CANONICAL_NAN)
    if to_f32(r) < _F0:
        return from_f32(_F0, RN)
    return r


@_device
def hneg(a):
    return bf16_from_bits(np.int64(bf16_bits(bfloat16(a))) ^ 0x8000)


@_device
def habs(a):
    m = np.int64(bf16_bits(bfloat16(a))) & 0x7FFF
    if m > 0x7F80:
        m = CANONICAL_NAN
    return bf16_from_bits(m)


# ------------------------------------------------------------------ comparisons
@_device
def heq(a, b):
    return _f(a) == _f(b)


@_device
def hne(a, b):  # ordered: False where either is NaN
    x, y = _f(a), _f(b)
    return x < y or x > y


@_device
def hge(a, b):
    return _f(a) >= _f(b)


@_device
def hgt(a, b):
    return _f(a) > _f(b)


@_device
def hle(a, b):
    return _f(a) <= _f(b)


@_device
def hlt(a, b):
    return _f(a) < _f(b)


@_device
def hequ(a, b):  # unordered: True where either is NaN
    x, y = _f(a), _f(b)
    return not (x < y or x > y)


@_device
def hneu(a, b):
    return not (_f(a) == _f(b))


@_device
def hgeu(a, b):
    return not (_f(a) < _f(b))


@_device
def hgtu(a, b):
    return not (_f(a) <= _f(b))


@_device
def hleu(a, b):
    return not (_f(a) > _f(b))


@_device
def hltu(a, b):
    return not (_f(a) >= _f(b))


@_device
def hisnan(a):
    return is_nan(bfloat16(a))


@_device
def hisinf(a):
    bits = np.int64(bf16_bits(bfloat16(a)))
    if bits == 0x7F80:
        return np.int32(1)
    if bits == 0xFF80:
        return np.int32(-1)
    return np.int32(0)


@_device
def hmax(a, b):
    """The larger; a NaN operand gives the other, two give the canonical NaN; +0 is
    larger than -0."""
    x, y = bfloat16(a), bfloat16(b)
    if is_nan(x):
        return bf16_from_bits(CANONICAL_NAN) if is_nan(y) else y
    if is_nan(y):
        return x
    fx, fy = to_f32(x), to_f32(y)
    if fx == fy:  # equal: the one without the sign bit, if any
        return x if bf16_bits(x) < bf16_bits(y) else y
    return x if fx > fy else y


@_device
def hmin(a, b):
    x, y = bfloat16(a), bfloat16(b)
    if is_nan(x):
        return bf16_from_bits(CANONICAL_NAN) if is_nan(y) else y
    if is_nan(y):
        return x
    fx, fy = to_f32(x), to_f32(y)
    if fx == fy:
        return x if bf16_bits(x) > bf16_bits(y) else y
    return x if fx < fy else y


@_device
def hmax_nan(a, b):
    x, y = bfloat16(a), bfloat16(b)
    if is_nan(x) or is_nan(y):
        return bf16_from_bits(CANONICAL_NAN)
    return x if to_f32(x) >= to_f32(y) else y


@_device
def hmin_nan(a, b):
    x, y = bfloat16(a), bfloat16(b)
    if is_nan(x) or is_nan(y):
        return bf16_from_bits(CANONICAL_NAN)
    return x if to_f32(x) <= to_f32(y) else y


# ------------------------------------------------------------------ math
@_device
def _integral(a, mode):
    f = _f(a)
    r = round_integral(f, mode)
    if r == _F0 and (np.int64(f32_bits(f)) >> 31) != 0:
        r = -_F0  # a zero result keeps the operand's sign
    return _rn(r)


@_device
def htrunc(a):
    return _integral(a, RZ)


@_device
def hceil(a):
    return _integral(a, RU)


@_device
def hfloor(a):
    return _integral(a, RD)


@_device
def hrint(a):
    return _integral(a, RN)


@_device
def hsqrt(a):
    return _rn(math.sqrt(_f(a)))


@_device
def hrsqrt(a):
    return _rn(_F1 / math.sqrt(_f(a)))


@_device
def hrcp(a):
    return _rn(_F1 / _f(a))


@_device
def hlog(a):
    return _rn(math.log(_f(a)))


@_device
def hlog2(a):
    return _rn(math.log2(_f(a)))


@_device
def hlog10(a):
    return _rn(math.log10(_f(a)))


@_device
def hcos(a):
    return _rn(math.cos(_f(a)))


@_device
def hsin(a):
    return _rn(math.sin(_f(a)))


@_device
def htanh(a):
    return _rn(math.tanh(_f(a)))


htanh_approx = htanh


@_device
def hexp(a):
    return _rn(math.exp(_f(a)))


@_device
def hexp2(a):
    return _rn(math.pow(_TWO, _f(a)))


@_device
def hexp10(a):
    return _rn(math.pow(np.float32(10.0), _f(a)))


# ------------------------------------------------------------------ conversions
@_device
def bfloat162float(a):
    return to_f32(bfloat16(a))


@_device
def float2bfloat16(x):
    return from_f32(np.float32(x), RN)


@_device
def double2bfloat16(x):
    return from_f64(np.float64(x), RN)


def _from_float(mode):
    def convert(x):
        return from_f32(np.float32(x), mode)
    return _device(convert)


float2bfloat16_rn = _from_float(RN)
float2bfloat16_rz = _from_float(RZ)
float2bfloat16_rd = _from_float(RD)
float2bfloat16_ru = _from_float(RU)


def _from_int(nbtype, mode):
    """C's ``<int type>2bfloat16_<mode>``: the argument converts to the C type first."""
    cast = getattr(np, str(nbtype))
    impl = from_signed if nbtype.signed else from_unsigned

    def convert(i):
        return impl(cast(i), mode)
    return _device(convert)


def _to_int(nbtype, mode):
    impl = TO_INT[nbtype]

    def convert(a):
        return impl(bfloat16(a), mode)
    return _device(convert)


bfloat162char_rz = _to_int(types.int8, RZ)
bfloat162uchar_rz = _to_int(types.uint8, RZ)

_MODES = {"rn": RN, "rz": RZ, "rd": RD, "ru": RU}
#: CUDA's C name of each integer type, and numba.cuda's NumPy-style name
_FAMILIES = (("short", types.int16), ("ushort", types.uint16), ("int", types.int32),
             ("uint", types.uint32), ("ll", types.int64), ("ull", types.uint64))

for _cname, _ty in _FAMILIES:
    for _suffix, _mode in _MODES.items():
        globals()[f"{_cname}2bfloat16_{_suffix}"] = _from_int(_ty, _mode)
        globals()[f"bfloat162{_cname}_{_suffix}"] = _to_int(_ty, _mode)


@_device
def bfloat16_as_short(a):
    return np.int16(bf16_bits(bfloat16(a)))


@_device
def bfloat16_as_ushort(a):
    return bf16_bits(bfloat16(a))


@_device
def short_as_bfloat16(i):
    return bf16_from_bits(np.int16(i))


@_device
def ushort_as_bfloat16(i):
    return bf16_from_bits(np.uint16(i))


# numba.cuda's NumPy-style names of the conversions
float32_to_bfloat16 = float2bfloat16
float64_to_bfloat16 = double2bfloat16
bfloat16_to_float32 = bfloat162float
bfloat16_to_int8_rz = bfloat162char_rz
bfloat16_to_uint8_rz = bfloat162uchar_rz
for _suffix in _MODES:
    globals()[f"float32_to_bfloat16_{_suffix}"] = globals()[f"float2bfloat16_{_suffix}"]
    for _cname, _ty in _FAMILIES:
        globals()[f"{_ty}_to_bfloat16_{_suffix}"] = globals()[f"{_cname}2bfloat16_{_suffix}"]
        globals()[f"bfloat16_to_{_ty}_{_suffix}"] = globals()[f"bfloat162{_cname}_{_suffix}"]
bfloat16_as_int16 = bfloat16_as_short
bfloat16_as_uint16 = bfloat16_as_ushort
int16_as_bfloat16 = short_as_bfloat16
uint16_as_bfloat16 = ushort_as_bfloat16


# ------------------------------------------------------- operators and math on bfloat16
def _bind(key, nargs, impl, result=bfloat16):
    """``key(a, ...)`` on bfloat16 arguments (all of them) is *impl*: a template tried
    before Numba's own (which would convert to float32), and its lowering."""

    # (its target in the metadata: more specific than Numba's generic templates, so
    # tried first whatever the order the registries were installed in)
    exact_template(typing_registry, key, nargs, bfloat16, result, "Bfloat16",
                   metadata={"target": TARGET_NAME})

    # a call of the device function, which compiles with the kernel language's
    # semantics (IEEE division by zero, for one), not compile_internal's Python ones
    caller = (lambda a: impl(a)) if nargs == 1 else (lambda a, b: impl(a, b))

    def lower(context, builder, sig, args):
        return context.compile_internal(builder, caller, sig, args)

    lowering_registry.lower(key, *([bfloat16] * nargs))(lower)


for _op, _fn in ((operator.add, hadd), (operator.sub, hsub), (operator.mul, hmul),
                 (operator.truediv, hdiv), (operator.iadd, hadd), (operator.isub, hsub),
                 (operator.imul, hmul), (operator.itruediv, hdiv)):
    _bind(_op, 2, _fn)
for _op, _fn in ((operator.eq, heq), (operator.ne, hneu), (operator.lt, hlt),
                 (operator.le, hle), (operator.gt, hgt), (operator.ge, hge)):
    _bind(_op, 2, _fn, types.boolean)
_bind(operator.neg, 1, hneg)
_bind(abs, 1, habs)
_bind(operator.pos, 1, _device(lambda a: a))
for _fn, _impl in ((math.trunc, htrunc), (math.ceil, hceil), (math.floor, hfloor),
                   (math.sqrt, hsqrt), (math.log, hlog), (math.log10, hlog10),
                   (math.cos, hcos), (math.sin, hsin), (math.tanh, htanh),
                   (math.exp, hexp), (getattr(math, "exp2", None), hexp2)):
    if _fn is not None:  # (math.exp2 is new in Python 3.11)
        _bind(_fn, 1, _impl)

#: numba.cuda's names for the registries its bindings live in
target_registry = lowering_registry

__all__ = ["bfloat16", "typing_registry", "target_registry"]
__all__ += [n for n, v in sorted(globals().items())
            if not n.startswith("_") and hasattr(v, "py_func")
            and n not in ("from_f32", "from_f64", "from_signed", "from_unsigned", "to_f32",
                          "is_nan", "round_integral")]
