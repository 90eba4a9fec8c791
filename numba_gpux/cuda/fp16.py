"""``numba_gpux.cuda.fp16``: numba.cuda's half-precision functions, as device
functions of the portable kernel language on ``float16`` values: the short names
(``hadd``, ``hmax``, ``hsqrt``, ...) and CUDA's ``cuda_fp16.h`` names that numba.cuda
binds (``__hadd``, ``__hadd_sat``, ``__hfma_relu``, ``__hmax_nan``, ``__hequ``,
``__hisinf``, ``__float2half_rz``, ``__half2int_rd``, ``__half_as_ushort``, ...,
``__half``, ``atomicAdd``), with CUDA's documented results:

- arithmetic rounded to nearest even, ``hfma`` rounded once; ``_sat`` forms clamped to
  [0, 1] with NaN giving +0; ``__hfma_relu`` clamps a negative result to 0;
- ``hmax``/``hmin`` prefer a number to a NaN, ``__hmax_nan``/``__hmin_nan`` give NaN,
  both put +0 above -0; ``heq``... are ordered (False on a NaN), ``__hequ``...
  unordered (True on a NaN); ``__hisinf`` is -1, 1 or 0;
- conversions to half in the rounding mode of their suffix, correctly rounded from the
  exact float, double or integer; conversions to integers rounded in their mode,
  saturated to the integer's range, NaN giving 0 (``0x8000000000000000`` for the
  64-bit ones); a NaN that a conversion, ``hmax``/``hmin``, ``__hmax_nan`` or
  ``__hfma_relu`` makes is the canonical ``0x7FFF`` (:mod:`._fp16_core`).

Math that the device has no half-precision instruction for is computed through float32
and rounded once (see the float16 section of docs/language-advanced.md); ``htanh_approx``
is ``htanh``.  ``atomicAdd(ptr, val)`` takes a ``CPointer(float16)``, as numba.cuda's,
and is a compare-and-swap loop on the 32-bit word holding the half."""

from __future__ import annotations

import math

import numpy as np

from ..dispatcher import jit as _jit
from numba.core import types

from . import _fp16_core as _core
from ._fp16_core import RD, RN, RU, RZ

_h_bits, _half_bits, _NAN = _core.half_from_bits, _core.half_bits, _core.CANONICAL_NAN
_fma, _sat, _canonical = _core.fma, _core.sat, _core.canonical
_from_f32, _from_f64 = _core.from_f32, _core.from_f64

__all__ = [
    "hadd", "hsub", "hmul", "hdiv", "hneg", "habs", "hfma", "hmax", "hmin",
    "heq", "hne", "hgt", "hge", "hlt", "hle",
    "hsqrt", "hrsqrt", "hrcp", "hsin", "hcos", "hexp", "hexp2", "hexp10",
    "hlog", "hlog2", "hlog10", "hceil", "hfloor", "htrunc", "hrint",
]

_device = _jit(device=True, inline=True)
_h = np.float16


@_device
def hadd(a, b):
    return _h(a + b)


@_device
def hsub(a, b):
    return _h(a - b)


@_device
def hmul(a, b):
    return _h(a * b)


@_device
def hdiv(a, b):
    return _h(a / b)


@_device
def hneg(a):
    return _h(-a)


@_device
def habs(a):
    return _h(abs(a))


@_device
def hfma(a, b, c):
    # rounded once (a float32 sum rounded again to half could be a double rounding)
    return _fma(a, b, c)


@_device
def _negative_zero_or_less(a):
    # (a is -0.0 or below: 1 / -0.0 is -inf)
    return np.float32(1.0) / np.float32(a) < 0


@_device
def hmax(a, b):
    # CUDA's __hmax: a NaN operand gives the other one (two the canonical NaN), and
    # +0.0 is above -0.0
    if a != a:
        return _canonical(b)
    if b != b or a > b:
        return a
    if b > a:
        return b
    return b if _negative_zero_or_less(a) else a


@_device
def hmin(a, b):
    # CUDA's __hmin: a NaN operand gives the other one (two the canonical NaN), and
    # -0.0 is below +0.0
    if a != a:
        return _canonical(b)
    if b != b or a < b:
        return a
    if b < a:
        return b
    return a if _negative_zero_or_less(a) else b


@_device
def heq(a, b):
    return a == b


@_device
def hne(a, b):
    # ordered, as CUDA's __hne: False where either is NaN
    return a < b or a > b


@_device
def hgt(a, b):
    return a > b


@_device
def hge(a, b):
    return a >= b


@_device
def hlt(a, b):
    return a < b


@_device
def hle(a, b):
    return a <= b


@_device
def hsqrt(a):
    return _h(math.sqrt(np.float32(a)))


@_device
def hrsqrt(a):
    return _h(1.0 / math.sqrt(np.float32(a)))


@_device
def hrcp(a):
    return _h(np.float32(1.0) / np.float32(a))


@_device
def hsin(a):
    return _h(math.sin(np.float32(a)))


@_device
def hcos(a):
    return _h(math.cos(np.float32(a)))


@_device
def hexp(a):
    return _h(math.exp(np.float32(a)))


@_device
def hexp2(a):
    return _h(math.pow(np.float32(2.0), np.float32(a)))


@_device
def hexp10(a):
    return _h(math.pow(np.float32(10.0), np.float32(a)))


@_device
def hlog(a):
    return _h(math.log(np.float32(a)))


@_device
def hlog2(a):
    return _h(math.log2(np.float32(a)))


@_device
def hlog10(a):
    return _h(math.log10(np.float32(a)))


@_device
def hceil(a):
    return _h(math.ceil(np.float32(a)))


@_device
def hfloor(a):
    return _h(math.floor(np.float32(a)))


@_device
def htrunc(a):
    return _h(math.trunc(np.float32(a)))


@_device
def hrint(a):
    return _h(np.rint(np.float32(a)))


@_device
def htanh(a):
    return _h(math.tanh(np.float32(a)))


htanh_approx = htanh  # (CUDA's may be less accurate; this one is as htanh)


# ------------------------------------------------------- cuda_fp16.h's __ names
@_device
def __hadd_sat(a, b):
    return _sat(hadd(a, b))


@_device
def __hsub_sat(a, b):
    return _sat(hsub(a, b))


@_device
def __hmul_sat(a, b):
    return _sat(hmul(a, b))


@_device
def __hfma_sat(a, b, c):
    return _sat(_fma(a, b, c))


@_device
def __hfma_relu(a, b, c):
    r = _fma(a, b, c)
    if r != r:
        return _h_bits(_NAN)
    if np.float32(r) < np.float32(0.0):
        return _h(0.0)
    return r


@_device
def __hmax_nan(a, b):
    # a NaN operand gives the canonical NaN; +0.0 is above -0.0
    if a != a or b != b:
        return _h_bits(_NAN)
    return hmax(a, b)


@_device
def __hmin_nan(a, b):
    if a != a or b != b:
        return _h_bits(_NAN)
    return hmin(a, b)


@_device
def __hisnan(a):
    return a != a


@_device
def __hisinf(a):
    bits = np.int64(_half_bits(_h(a)))
    if bits == 0x7C00:
        return np.int32(1)
    if bits == 0xFC00:
        return np.int32(-1)
    return np.int32(0)


# unordered comparisons: True where either is NaN
@_device
def __hequ(a, b):
    return not (a < b or a > b)


@_device
def __hneu(a, b):
    return not (a == b)


@_device
def __hgeu(a, b):
    return not (a < b)


@_device
def __hgtu(a, b):
    return not (a <= b)


@_device
def __hleu(a, b):
    return not (a > b)


@_device
def __hltu(a, b):
    return not (a >= b)


# the _rn forms differ from the plain ones in CUDA only in that the compiler may not
# fuse them into an fma; a float16 operation here is never fused
__hadd_rn, __hsub_rn, __hmul_rn = hadd, hsub, hmul
(__habs, __hadd, __hdiv, __heq, __hfma, __hge, __hgt, __hle, __hlt, __hmax, __hmin,
 __hmul, __hne, __hneg, __hsub) = (habs, hadd, hdiv, heq, hfma, hge, hgt, hle, hlt, hmax,
                                   hmin, hmul, hne, hneg, hsub)

# ------------------------------------------------------------------ conversions
#: numba.cuda's ``__half``: the float16 type (``__half(x)`` converts as ``float16(x)``)
__half = types.float16


@_device
def __half2float(a):
    return np.float32(a)


@_device
def __float2half(x):
    return _from_f32(np.float32(x), RN)


@_device
def __double2half(x):
    return _from_f64(np.float64(x), RN)


def _from_float(mode):
    def convert(x):
        return _from_f32(np.float32(x), mode)
    return _device(convert)


def _from_int(nbtype, mode):
    """C's ``__<int type>2half_<mode>``: the argument converts to the C type first;
    below 2**24 it is exact in float32, and above it every mode overflows alike."""
    cast = getattr(np, str(nbtype))

    def convert(i):
        return _from_f32(np.float32(cast(i)), mode)
    return _device(convert)


def _to_int(nbtype, mode):
    impl = _core.TO_INT[nbtype]

    def convert(a):
        return impl(_h(a), mode)
    return _device(convert)


_MODES = {"rn": RN, "rz": RZ, "rd": RD, "ru": RU}
#: CUDA's C name of each integer type
_FAMILIES = (("short", types.int16), ("ushort", types.uint16), ("int", types.int32),
             ("uint", types.uint32), ("ll", types.int64), ("ull", types.uint64))
for _suffix, _mode in _MODES.items():
    globals()[f"__float2half_{_suffix}"] = _from_float(_mode)
    for _cname, _ty in _FAMILIES:
        globals()[f"__{_cname}2half_{_suffix}"] = _from_int(_ty, _mode)
        globals()[f"__half2{_cname}_{_suffix}"] = _to_int(_ty, _mode)
__half2char_rz = _to_int(types.int8, RZ)
__half2uchar_rz = _to_int(types.uint8, RZ)


@_device
def __half_as_short(a):
    return np.int16(_half_bits(_h(a)))


@_device
def __half_as_ushort(a):
    return _half_bits(_h(a))


@_device
def __short_as_half(i):
    return _h_bits(np.int16(i))


@_device
def __ushort_as_half(i):
    return _h_bits(np.uint16(i))


__all__ += ["htanh", "htanh_approx", "__half"]
__all__ += [n for n, v in sorted(globals().items())
            if n.startswith("__") and not n.endswith("__") and hasattr(v, "py_func")]


@_device
def atomicAdd(address, val):
    """CUDA's ``atomicAdd(__half *address, __half val)``: ``*address += val`` (rounded
    to nearest even), atomically, for a ``CPointer(float16)``; returns the old value."""
    return _core.atomic_add_ptr(address, val)


__all__ += ["atomicAdd"]
