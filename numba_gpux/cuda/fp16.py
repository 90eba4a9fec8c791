"""``numba_gpux.cuda.fp16``: numba.cuda's half-precision functions, as device
functions of the portable kernel language on ``float16`` values.  Math that
the device has no half-precision instruction for is computed through float32
(see the float16 section of docs/language-advanced.md)."""

from __future__ import annotations

import math

import numpy as np

from ..dispatcher import jit as _jit

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
    return _h(np.float32(a) * np.float32(b) + np.float32(c))


@_device
def _negative_zero_or_less(a):
    # (a is -0.0 or below: 1 / -0.0 is -inf)
    return np.float32(1.0) / np.float32(a) < 0


@_device
def hmax(a, b):
    # CUDA's __hmax: a NaN operand gives the other one, and +0.0 is above -0.0
    if a != a:
        return b
    if b != b or a > b:
        return a
    if b > a:
        return b
    return b if _negative_zero_or_less(a) else a


@_device
def hmin(a, b):
    # CUDA's __hmin: a NaN operand gives the other one, and -0.0 is below +0.0
    if a != a:
        return b
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
    return a != b


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
