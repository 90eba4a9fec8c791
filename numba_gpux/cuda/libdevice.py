"""``numba_gpux.cuda.libdevice``: numba.cuda's libdevice functions, on every target.

Each name of numba.cuda's ``libdevice`` module (NVIDIA's libdevice, ``__nv_*``)
is a kernel-side function with libdevice's signature: arguments are converted
to libdevice's types, and outputs that libdevice writes through pointers are
returned in a tuple after the result, as numba.cuda does (``sincos(x) ->
(sin, cos)``, ``frexp(x) -> (mantissa, exponent)``).

Most are lowered to numba_gpux's portable math intrinsics (``__gpux_sin_f64``
...), to plain LLVM operations (conversions, bit casts, integer arithmetic)
or to small device functions written with them, so they work on every
target.  The few without a portable definition (Bessel functions, inverse
error functions, directed-rounding arithmetic, ...) call libdevice itself:
the CUDA target links it, and on any other target compiling such a kernel
fails with a ValidationError naming the ``__nv_`` function.
``unportable()`` lists them.
"""

from __future__ import annotations

import math
import sys

from llvmlite import ir
from numba.core import cgutils, types
from numba.core.extending import intrinsic
from numba.core.typing import signature

from ..dispatcher import jit as _gpux_jit
from ..language.intrinsics import call as _call
from ..language.semantics import saturating_to_int as _saturating

#: every libdevice function: name:return:arguments, codes f float32, d float64, i int32,
#: q int64, h int16, v void; "*" marks an output (returned in a tuple, as numba.cuda does)
SIGNATURES = """
abs:i:i acos:d:d acosf:f:f acosh:d:d acoshf:f:f asin:d:d asinf:f:f asinh:d:d asinhf:f:f
atan:d:d atan2:d:dd atan2f:f:ff atanf:f:f atanh:d:d atanhf:f:f brev:i:i brevll:q:q
byte_perm:i:iii cbrt:d:d cbrtf:f:f ceil:d:d ceilf:f:f clz:i:i clzll:i:q copysign:d:dd
copysignf:f:ff cos:d:d cosf:f:f cosh:d:d coshf:f:f cospi:d:d cospif:f:f dadd_rd:d:dd
dadd_rn:d:dd dadd_ru:d:dd dadd_rz:d:dd ddiv_rd:d:dd ddiv_rn:d:dd ddiv_ru:d:dd ddiv_rz:d:dd
dmul_rd:d:dd dmul_rn:d:dd dmul_ru:d:dd dmul_rz:d:dd double2float_rd:f:d double2float_rn:f:d
double2float_ru:f:d double2float_rz:f:d double2hiint:i:d double2int_rd:i:d double2int_rn:i:d
double2int_ru:i:d double2int_rz:i:d double2ll_rd:q:d double2ll_rn:q:d double2ll_ru:q:d
double2ll_rz:q:d double2loint:i:d double2uint_rd:i:d double2uint_rn:i:d double2uint_ru:i:d
double2uint_rz:i:d double2ull_rd:q:d double2ull_rn:q:d double2ull_ru:q:d double2ull_rz:q:d
double_as_longlong:q:d drcp_rd:d:d drcp_rn:d:d drcp_ru:d:d drcp_rz:d:d dsqrt_rd:d:d
dsqrt_rn:d:d dsqrt_ru:d:d dsqrt_rz:d:d erf:d:d erfc:d:d erfcf:f:f erfcinv:d:d erfcinvf:f:f
erfcx:d:d erfcxf:f:f erff:f:f erfinv:d:d erfinvf:f:f exp:d:d exp10:d:d exp10f:f:f exp2:d:d
exp2f:f:f expf:f:f expm1:d:d expm1f:f:f fabs:d:d fabsf:f:f fadd_rd:f:ff fadd_rn:f:ff
fadd_ru:f:ff fadd_rz:f:ff fast_cosf:f:f fast_exp10f:f:f fast_expf:f:f fast_fdividef:f:ff
fast_log10f:f:f fast_log2f:f:f fast_logf:f:f fast_powf:f:ff fast_sincosf:v:ff*f*
fast_sinf:f:f fast_tanf:f:f fdim:d:dd fdimf:f:ff fdiv_rd:f:ff fdiv_rn:f:ff fdiv_ru:f:ff
fdiv_rz:f:ff ffs:i:i ffsll:i:q finitef:i:f float2half_rn:h:f float2int_rd:i:f
float2int_rn:i:f float2int_ru:i:f float2int_rz:i:f float2ll_rd:q:f float2ll_rn:q:f
float2ll_ru:q:f float2ll_rz:q:f float2uint_rd:i:f float2uint_rn:i:f float2uint_ru:i:f
float2uint_rz:i:f float2ull_rd:q:f float2ull_rn:q:f float2ull_ru:q:f float2ull_rz:q:f
float_as_int:i:f floor:d:d floorf:f:f fma:d:ddd fma_rd:d:ddd fma_rn:d:ddd fma_ru:d:ddd
fma_rz:d:ddd fmaf:f:fff fmaf_rd:f:fff fmaf_rn:f:fff fmaf_ru:f:fff fmaf_rz:f:fff fmax:d:dd
fmaxf:f:ff fmin:d:dd fminf:f:ff fmod:d:dd fmodf:f:ff fmul_rd:f:ff fmul_rn:f:ff fmul_ru:f:ff
fmul_rz:f:ff frcp_rd:f:f frcp_rn:f:f frcp_ru:f:f frcp_rz:f:f frexp:d:di* frexpf:f:fi*
frsqrt_rn:f:f fsqrt_rd:f:f fsqrt_rn:f:f fsqrt_ru:f:f fsqrt_rz:f:f fsub_rd:f:ff fsub_rn:f:ff
fsub_ru:f:ff fsub_rz:f:ff hadd:i:ii half2float:f:h hiloint2double:d:ii hypot:d:dd
hypotf:f:ff ilogb:i:d ilogbf:i:f int2double_rn:d:i int2float_rd:f:i int2float_rn:f:i
int2float_ru:f:i int2float_rz:f:i int_as_float:f:i isfinited:i:d isinfd:i:d isinff:i:f
isnand:i:d isnanf:i:f j0:d:d j0f:f:f j1:d:d j1f:f:f jn:d:id jnf:f:if ldexp:d:di ldexpf:f:fi
lgamma:d:d lgammaf:f:f ll2double_rd:d:q ll2double_rn:d:q ll2double_ru:d:q ll2double_rz:d:q
ll2float_rd:f:q ll2float_rn:f:q ll2float_ru:f:q ll2float_rz:f:q llabs:q:q llmax:q:qq
llmin:q:qq llrint:q:d llrintf:q:f llround:q:d llroundf:q:f log:d:d log10:d:d log10f:f:f
log1p:d:d log1pf:f:f log2:d:d log2f:f:f logb:d:d logbf:f:f logf:f:f longlong_as_double:d:q
max:i:ii min:i:ii modf:d:dd* modff:f:ff* mul24:i:ii mul64hi:q:qq mulhi:i:ii nearbyint:d:d
nearbyintf:f:f nextafter:d:dd nextafterf:f:ff normcdf:d:d normcdff:f:f normcdfinv:d:d
normcdfinvf:f:f popc:i:i popcll:i:q pow:d:dd powf:f:ff powi:d:di powif:f:fi rcbrt:d:d
rcbrtf:f:f remainder:d:dd remainderf:f:ff remquo:d:ddi* remquof:f:ffi* rhadd:i:ii rint:d:d
rintf:f:f round:d:d roundf:f:f rsqrt:d:d rsqrtf:f:f sad:i:iii saturatef:f:f scalbn:d:di
scalbnf:f:fi signbitd:i:d signbitf:i:f sin:d:d sincos:v:dd*d* sincosf:v:ff*f*
sincospi:v:dd*d* sincospif:v:ff*f* sinf:f:f sinh:d:d sinhf:f:f sinpi:d:d sinpif:f:f sqrt:d:d
sqrtf:f:f tan:d:d tanf:f:f tanh:d:d tanhf:f:f tgamma:d:d tgammaf:f:f trunc:d:d truncf:f:f
uhadd:i:ii uint2double_rn:d:i uint2float_rd:f:i uint2float_rn:f:i uint2float_ru:f:i
uint2float_rz:f:i ull2double_rd:d:q ull2double_rn:d:q ull2double_ru:d:q ull2double_rz:d:q
ull2float_rd:f:q ull2float_rn:f:q ull2float_ru:f:q ull2float_rz:f:q ullmax:q:qq ullmin:q:qq
umax:i:ii umin:i:ii umul24:i:ii umul64hi:q:qq umulhi:i:ii urhadd:i:ii usad:i:iii y0:d:d
y0f:f:f y1:d:d y1f:f:f yn:d:id ynf:f:if
"""

__all__ = ["unportable"]  # extended below with every libdevice function name

_TY = {"f": types.float32, "d": types.float64, "i": types.int32, "q": types.int64,
       "h": types.int16}
_LL = {"f": ir.FloatType(), "d": ir.DoubleType(), "i": ir.IntType(32), "q": ir.IntType(64),
       "h": ir.IntType(16)}
_I1, _I32, _I64 = ir.IntType(1), ir.IntType(32), ir.IntType(64)


def _parse(text: str) -> dict:
    table = {}
    for item in text.split():
        name, ret, args = item.split(":")
        codes, i = [], 0
        while i < len(args):
            out = i + 1 < len(args) and args[i + 1] == "*"
            codes.append((args[i], out))
            i += 2 if out else 1
        table[name] = (ret, codes)
    return table


def _result_type(ret: str, codes) -> types.Type:
    rts = [_TY[c] for c, out in codes if out]
    if ret != "v":
        rts.insert(0, _TY[ret])
    return types.Tuple(rts) if len(rts) > 1 else rts[0]


# ------------------------------------------------------------ IR building blocks
def _c(b, v, like):
    """A constant of *like*'s type."""
    return ir.Constant(like.type, v)


def _m(base):
    """The portable math intrinsic *base* on the arguments' float type."""
    def emit(b, a):
        sfx = "f32" if isinstance(a[0].type, ir.FloatType) else "f64"
        return _call(b, f"__gpux_{base}_{sfx}", *a)
    return emit


def _sel(b, cond, x, y):
    return b.select(cond, x, y)


def _round_half_away(b, x):
    t = _m("trunc")(b, [x])
    up = b.fadd(t, _m("copysign")(b, [_c(b, 1.0, x), x]))
    far = b.fcmp_ordered(">=", _m("fabs")(b, [b.fsub(x, t)]), _c(b, 0.5, x))
    return _sel(b, far, up, t)


_ROUND = {"rz": lambda b, x: x, "rd": lambda b, x: _m("floor")(b, [x]),
          "ru": lambda b, x: _m("ceil")(b, [x]), "rn": lambda b, x: _m("rint")(b, [x])}


def _to_int(signed, width, mode):
    # as PTX's cvt.r*i: saturating at the integer's range, NaN to 0
    def emit(b, a):
        return _saturating(b, _ROUND[mode](b, a[0]), ir.IntType(width), signed)
    return emit


def _to_float(signed, code):
    return lambda b, a: (b.sitofp if signed else b.uitofp)(a[0], _LL[code])


def _bits(b, x):
    return b.bitcast(x, ir.IntType(x.type.width if isinstance(x.type, ir.IntType)
                                  else (32 if isinstance(x.type, ir.FloatType) else 64)))


def _class(pred):
    def emit(b, a):
        x = a[0]
        fabs = _m("fabs")(b, [x])
        inf = _c(b, float("inf"), x)
        bit = {"nan": lambda: b.fcmp_unordered("uno", x, x),
               "inf": lambda: b.fcmp_ordered("==", fabs, inf),
               "finite": lambda: b.fcmp_ordered("<", fabs, inf),
               "sign": lambda: b.icmp_signed("<", _bits(b, x), _c(b, 0, _bits(b, x)))}[pred]()
        return b.zext(bit, _I32)
    return emit


def _minmax(op, signed):
    def emit(b, a):
        x, y = a
        cmp = b.icmp_signed(op, x, y) if signed else b.icmp_unsigned(op, x, y)
        return _sel(b, cmp, x, y)
    return emit


def _iabs(b, a):
    x = a[0]
    return _sel(b, b.icmp_signed("<", x, _c(b, 0, x)), b.neg(x), x)


def _count(kind):
    def emit(b, a):
        x = a[0]
        r = b.ctpop(x) if kind == "popc" else b.ctlz(x, ir.Constant(_I1, 0))
        return b.trunc(r, _I32) if r.type.width > 32 else r
    return emit


def _ffs(b, a):
    x = a[0]
    tz = b.cttz(x, ir.Constant(_I1, 0))
    r = _sel(b, b.icmp_unsigned("==", x, _c(b, 0, x)), _c(b, 0, x), b.add(tz, _c(b, 1, x)))
    return b.trunc(r, _I32) if r.type.width > 32 else r


def _brev(b, a):
    return _call(b, f"__gpux_brev_i{a[0].type.width}", a[0])


def _mulhi(signed):
    def emit(b, a):
        ext = b.sext if signed else b.zext
        x, y = (ext(v, _I64) for v in a)
        p = b.mul(x, y)
        return b.trunc(b.ashr(p, _c(b, 32, p)) if signed else b.lshr(p, _c(b, 32, p)), _I32)
    return emit


def _umul64hi_ir(b, x, y):
    # schoolbook on 22-bit digits with the carries propagated column by column: a
    # form the optimizer does not fold into a 128-bit multiply (SPIR-V has none)
    mask, w = _c(b, (1 << 22) - 1, x), _c(b, 22, x)
    xs = [b.and_(x, mask), b.and_(b.lshr(x, w), mask), b.lshr(x, _c(b, 44, x))]
    ys = [b.and_(y, mask), b.and_(b.lshr(y, w), mask), b.lshr(y, _c(b, 44, y))]
    digits, carry = [], _c(b, 0, x)
    for col in range(5):
        d = carry
        for i in range(3):
            if 0 <= col - i < 3:
                d = b.add(d, b.mul(xs[i], ys[col - i]))
        if col < 4:
            digits.append(b.and_(d, mask))
            carry = b.lshr(d, w)
    # value = r0 + r1 2^22 + r2 2^44 + r3 2^66 + d 2^88; bits 64.. of it:
    high = b.add(b.lshr(digits[2], _c(b, 20, x)), b.shl(digits[3], _c(b, 2, x)))
    return b.add(high, b.shl(d, _c(b, 24, x)))


def _mul64hi(signed):
    def emit(b, a):
        x, y = a
        hi = _umul64hi_ir(b, x, y)
        if signed:
            zero = _c(b, 0, x)
            hi = b.sub(hi, _sel(b, b.icmp_signed("<", x, zero), y, zero))
            hi = b.sub(hi, _sel(b, b.icmp_signed("<", y, zero), x, zero))
        return hi
    return emit


def _mul24(signed):
    def emit(b, a):
        if signed:
            x, y = (b.ashr(b.shl(v, _c(b, 8, v)), _c(b, 8, v)) for v in a)
        else:
            x, y = (b.and_(v, _c(b, 0xFFFFFF, v)) for v in a)
        return b.mul(x, y)
    return emit


def _halving(signed, rounded):
    def emit(b, a):
        x, y = ((b.sext if signed else b.zext)(v, _I64) for v in a)
        s = b.add(x, y)
        if rounded:
            s = b.add(s, ir.Constant(_I64, 1))
        s = b.ashr(s, ir.Constant(_I64, 1)) if signed else b.lshr(s, ir.Constant(_I64, 1))
        return b.trunc(s, _I32)
    return emit


def _sad(signed):
    def emit(b, a):
        x, y, z = a
        gt = b.icmp_signed(">", x, y) if signed else b.icmp_unsigned(">", x, y)
        return b.add(z, _sel(b, gt, b.sub(x, y), b.sub(y, x)))
    return emit


def _byte_perm(b, a):
    x, y, s = a
    both = b.or_(b.shl(b.zext(y, _I64), ir.Constant(_I64, 32)), b.zext(x, _I64))
    res = ir.Constant(_I32, 0)
    for k in range(4):
        sel = b.and_(b.lshr(s, ir.Constant(_I32, 4 * k)), ir.Constant(_I32, 7))
        shift = b.zext(b.mul(sel, ir.Constant(_I32, 8)), _I64)
        byte = b.trunc(b.and_(b.lshr(both, shift), ir.Constant(_I64, 0xFF)), _I32)
        res = b.or_(res, b.shl(byte, ir.Constant(_I32, 8 * k)))
    return res


def _fdim(b, a):
    x, y = a
    return _sel(b, b.fcmp_ordered("<=", x, y), _c(b, 0.0, x), b.fsub(x, y))


def _saturate(b, a):
    x = a[0]
    pos = _sel(b, b.fcmp_ordered(">", x, _c(b, 0.0, x)), x, _c(b, 0.0, x))
    return _sel(b, b.fcmp_ordered("<", pos, _c(b, 1.0, x)), pos, _c(b, 1.0, x))


def _pi_times(b, x):
    return b.fmul(_c(b, math.pi, x), x)


def _modf(b, a):
    x = a[0]
    whole = _m("trunc")(b, [x])
    frac = b.fsub(x, whole)
    isinf = b.fcmp_ordered("==", _m("fabs")(b, [x]), _c(b, float("inf"), x))
    frac = _sel(b, isinf, _m("copysign")(b, [_c(b, 0.0, x), x]), frac)
    return [frac, whole]


def _scale(b, a):
    """x * 2**n in three exact steps of at most a third of the range each."""
    x, n = a
    double = isinstance(x.type, ir.DoubleType)
    lim, bias, mant = (2200, 1023, 52) if double else (330, 127, 23)
    ity = _I64 if double else _I32
    n = _sel(b, b.icmp_signed(">", n, _c(b, lim, n)), _c(b, lim, n), n)
    n = _sel(b, b.icmp_signed("<", n, _c(b, -lim, n)), _c(b, -lim, n), n)
    part = b.sdiv(n, _c(b, 3, n))
    for step in (part, part, b.sub(n, b.mul(part, _c(b, 2, n)))):
        e = b.shl(b.sext(b.add(step, _c(b, bias, step)), ity) if ity is _I64
                  else b.add(step, _c(b, bias, step)), ir.Constant(ity, mant))
        x = b.fmul(x, b.bitcast(e, x.type))
    return x


def _half(to_half):
    def emit(b, a):
        if to_half:
            return b.bitcast(b.fptrunc(a[0], ir.HalfType()), ir.IntType(16))
        return b.fpext(b.bitcast(a[0], ir.HalfType()), ir.FloatType())
    return emit


def _hiloint(b, a):
    hi, lo = (b.zext(v, _I64) for v in a)
    return b.bitcast(b.or_(b.shl(hi, ir.Constant(_I64, 32)), lo), ir.DoubleType())


_IR: dict = {}

_UNARY = ("acos", "acosh", "asin", "asinh", "atan", "atanh", "cbrt", "ceil", "cos", "cosh",
          "erf", "erfc", "exp", "exp2", "expm1", "fabs", "floor", "lgamma", "log", "log10",
          "log1p", "log2", "rint", "sin", "sinh", "sqrt", "tan", "tanh", "tgamma", "trunc")
_BINARY = ("atan2", "copysign", "fmod", "hypot", "pow", "fmax", "fmin")
for _n in _UNARY + _BINARY:
    _IR[_n] = _IR[_n + "f"] = _m(_n)
for _n in ("cos", "sin", "tan", "exp", "log", "log2", "log10", "pow"):
    _IR[f"fast_{_n}f"] = _m(_n)
for _n, _f in {
    "nearbyint": _m("rint"),
    "exp10": lambda b, a: _m("pow")(b, [_c(b, 10.0, a[0]), a[0]]),
    "rsqrt": lambda b, a: b.fdiv(_c(b, 1.0, a[0]), _m("sqrt")(b, a)),
    "rcbrt": lambda b, a: b.fdiv(_c(b, 1.0, a[0]), _m("cbrt")(b, a)),
    "cospi": lambda b, a: _m("cos")(b, [_pi_times(b, a[0])]),
    "sinpi": lambda b, a: _m("sin")(b, [_pi_times(b, a[0])]),
    "normcdf": lambda b, a: b.fmul(_c(b, 0.5, a[0]), _m("erfc")(
        b, [b.fmul(a[0], _c(b, -math.sqrt(0.5), a[0]))])),
    "fdim": _fdim, "round": lambda b, a: _round_half_away(b, a[0]),
    "powi": lambda b, a: _m("pow")(b, [a[0], b.sitofp(a[1], a[0].type)]),
    "sincos": lambda b, a: [_m("sin")(b, a), _m("cos")(b, a)],
    "sincospi": lambda b, a: [_m("sin")(b, [_pi_times(b, a[0])]),
                              _m("cos")(b, [_pi_times(b, a[0])])],
    "modf": _modf, "ldexp": _scale, "scalbn": _scale,
    "fma": lambda b, a: b.fma(*a), "fma_rn": lambda b, a: b.fma(*a),
    "isinf": _class("inf"), "isnan": _class("nan"),
}.items():
    _IR[_n] = _IR[_n + "f"] = _f
_IR["powif"] = _IR["powi"]
_IR["fmaf_rn"] = _IR["fma_rn"]
for _n, _f in {
    "fast_exp10f": _IR["exp10"], "fast_fdividef": lambda b, a: b.fdiv(*a),
    "fast_sincosf": _IR["sincos"], "saturatef": _saturate,
    "isinfd": _class("inf"), "isnand": _class("nan"), "isfinited": _class("finite"),
    "finitef": _class("finite"), "signbitd": _class("sign"), "signbitf": _class("sign"),
    "llrint": lambda b, a: _saturating(b, _m("rint")(b, a), _I64, True),
    "llround": lambda b, a: _saturating(b, _round_half_away(b, a[0]), _I64, True),
    "float_as_int": lambda b, a: b.bitcast(a[0], _I32),
    "int_as_float": lambda b, a: b.bitcast(a[0], ir.FloatType()),
    "double_as_longlong": lambda b, a: b.bitcast(a[0], _I64),
    "longlong_as_double": lambda b, a: b.bitcast(a[0], ir.DoubleType()),
    "double2hiint": lambda b, a: b.trunc(b.lshr(b.bitcast(a[0], _I64), ir.Constant(_I64, 32)),
                                         _I32),
    "double2loint": lambda b, a: b.trunc(b.bitcast(a[0], _I64), _I32),
    "hiloint2double": _hiloint, "double2float_rn": lambda b, a: b.fptrunc(a[0], ir.FloatType()),
    "float2half_rn": _half(True), "half2float": _half(False),
    "abs": _iabs, "llabs": _iabs,
    "max": _minmax(">", True), "min": _minmax("<", True), "llmax": _minmax(">", True),
    "llmin": _minmax("<", True), "umax": _minmax(">", False), "umin": _minmax("<", False),
    "ullmax": _minmax(">", False), "ullmin": _minmax("<", False),
    "popc": _count("popc"), "popcll": _count("popc"),
    "clz": _count("clz"), "clzll": _count("clz"),
    "ffs": _ffs, "ffsll": _ffs, "brev": _brev, "brevll": _brev,
    "mulhi": _mulhi(True), "umulhi": _mulhi(False),
    "mul64hi": _mul64hi(True), "umul64hi": _mul64hi(False),
    "mul24": _mul24(True), "umul24": _mul24(False),
    "hadd": _halving(True, False), "rhadd": _halving(True, True),
    "uhadd": _halving(False, False), "urhadd": _halving(False, True),
    "sad": _sad(True), "usad": _sad(False), "byte_perm": _byte_perm,
}.items():
    _IR[_n] = _f
for _p, _ops in (("d", "d"), ("f", "f")):
    _IR[f"{_p}add_rn"] = lambda b, a: b.fadd(*a)
    _IR[f"{_p}mul_rn"] = lambda b, a: b.fmul(*a)
    _IR[f"{_p}div_rn"] = lambda b, a: b.fdiv(*a)
    _IR[f"{_p}rcp_rn"] = lambda b, a: b.fdiv(_c(b, 1.0, a[0]), a[0])
    _IR[f"{_p}sqrt_rn"] = _m("sqrt")
_IR["fsub_rn"] = lambda b, a: b.fsub(*a)
_IR["frsqrt_rn"] = _IR["rsqrt"]
for _src in ("double", "float"):
    for _dst, _signed, _w in (("int", True, 32), ("uint", False, 32), ("ll", True, 64),
                              ("ull", False, 64)):
        for _mode in ("rz", "rd", "ru", "rn"):
            _IR[f"{_src}2{_dst}_{_mode}"] = _to_int(_signed, _w, _mode)
for _src, _signed in (("int", True), ("uint", False), ("ll", True), ("ull", False)):
    _IR[f"{_src}2double_rn"] = _to_float(_signed, "d")
    _IR[f"{_src}2float_rn"] = _to_float(_signed, "f")


# ------------------------------------------------------------ the kernel-side functions
def _nv_call(context, builder, name, ret, codes, args):
    """Call libdevice's ``__nv_<name>`` (outputs through stack slots)."""
    argtys, callargs, slots = [], [], []
    it = iter(args)
    for code, out in codes:
        if out:
            slot = cgutils.alloca_once(builder, _LL[code])
            slots.append(slot)
            argtys.append(slot.type)
            callargs.append(slot)
        else:
            argtys.append(_LL[code])
            callargs.append(next(it))
    fnty = ir.FunctionType(ir.VoidType() if ret == "v" else _LL[ret], argtys)
    sym = f"__nv_{name}"
    fn = builder.module.globals.get(sym) or ir.Function(builder.module, fnty, sym)
    res = builder.call(fn, callargs)
    outs = [builder.load(s) for s in slots]
    return outs if ret == "v" else [res, *outs]


# intrinsic() needs a fixed number of parameters: one typer shape per arity
_ARITY = {
    1: lambda typed: lambda typingctx, a: typed((a,)),
    2: lambda typed: lambda typingctx, a, b: typed((a, b)),
    3: lambda typed: lambda typingctx, a, b, c: typed((a, b, c)),
}


def _make(name: str, ret: str, codes) -> object:
    ins = [_TY[c] for c, out in codes if not out]
    retty = _result_type(ret, codes)
    emit = _IR.get(name)

    def codegen(context, builder, sig, args):
        vals = emit(builder, list(args)) if emit is not None else \
            _nv_call(context, builder, name, ret, codes, args)
        if isinstance(retty, types.BaseTuple):
            return context.make_tuple(builder, retty, list(vals))
        return vals[0] if isinstance(vals, list) else vals

    def typed(args):
        return signature(retty, *ins), codegen

    typer = _ARITY[len(ins)](typed)
    typer.__name__ = name
    typer.__qualname__ = f"libdevice.{name}"
    fn = intrinsic(typer)
    argdoc = ", ".join(str(t) for t in ins)
    fn.__doc__ = (f"libdevice's __nv_{name}: ({argdoc}) -> {retty}; "
                  f"{'portable' if emit is not None else 'CUDA target only'}.")
    return fn


TABLE = _parse(SIGNATURES)
_module = sys.modules[__name__]
for _name, (_ret, _codes) in TABLE.items():
    setattr(_module, _name, _make(_name, _ret, _codes))
    __all__.append(_name)


def unportable() -> list[str]:
    """The libdevice functions that work on the CUDA target only (they call ``__nv_*``)."""
    return sorted(n for n in TABLE if n not in _IR and n not in _DEVICE)


# ------------------------------------------------------------ device functions
def _device(fn):
    return _gpux_jit(device=True, inline=True)(fn)


_f64, _f32, _i32, _i64 = types.float64, types.float32, types.int32, types.int64


@_device
def _frexp64(x):
    x = _f64(x)
    if x == 0.0 or not math.isfinite(x):
        return x, _i32(0)
    bits = double_as_longlong(x)  # noqa: F821 - defined from the table above
    shift = _i32(0)
    if (bits >> 52) & 0x7FF == 0:
        bits = double_as_longlong(x * 18014398509481984.0)  # noqa: F821 - 2**54
        shift = _i32(54)
    e = _i32((bits >> 52) & 0x7FF) - _i32(1022) - shift
    mant = (bits & ~(_i64(0x7FF) << 52)) | (_i64(1022) << 52)
    return longlong_as_double(mant), e  # noqa: F821


@_device
def _frexp32(x):
    x = _f32(x)
    if x == 0.0 or not math.isfinite(x):
        return x, _i32(0)
    bits = float_as_int(x)  # noqa: F821
    shift = _i32(0)
    if (bits >> 23) & 0xFF == 0:
        bits = float_as_int(x * _f32(33554432.0))  # noqa: F821 - 2**25
        shift = _i32(25)
    e = _i32((bits >> 23) & 0xFF) - _i32(126) - shift
    mant = (bits & ~(_i32(0xFF) << 23)) | (_i32(126) << 23)
    return int_as_float(_i32(mant)), e  # noqa: F821


@_device
def _ilogb64(x):
    x = _f64(x)
    if x == 0.0:
        return _i32(-2147483648)
    if math.isnan(x):
        return _i32(-2147483648)
    if math.isinf(x):
        return _i32(2147483647)
    return _frexp64(x)[1] - _i32(1)


@_device
def _ilogb32(x):
    x = _f32(x)
    if x == 0.0:
        return _i32(-2147483648)
    if math.isnan(x):
        return _i32(-2147483648)
    if math.isinf(x):
        return _i32(2147483647)
    return _frexp32(x)[1] - _i32(1)


@_device
def _logb64(x):
    x = _f64(x)
    if x == 0.0:
        return _f64(-math.inf)
    if not math.isfinite(x):
        return x * x
    return _f64(_frexp64(x)[1] - 1)


@_device
def _logb32(x):
    x = _f32(x)
    if x == 0.0:
        return _f32(-math.inf)
    if not math.isfinite(x):
        return x * x
    return _f32(_frexp32(x)[1] - 1)


@_device
def _nextafter64(x, y):
    x = _f64(x)
    y = _f64(y)
    if math.isnan(x) or math.isnan(y):
        return x + y
    if x == y:
        return y
    if x == 0.0:
        return longlong_as_double(_i64(1)) if y > 0.0 else -longlong_as_double(_i64(1))  # noqa
    bits = double_as_longlong(x)  # noqa: F821
    if (x < y) == (x > 0.0):
        bits += _i64(1)
    else:
        bits -= _i64(1)
    return longlong_as_double(bits)  # noqa: F821


@_device
def _nextafter32(x, y):
    x = _f32(x)
    y = _f32(y)
    if math.isnan(x) or math.isnan(y):
        return x + y
    if x == y:
        return y
    if x == 0.0:
        return int_as_float(_i32(1)) if y > 0.0 else -int_as_float(_i32(1))  # noqa: F821
    bits = float_as_int(x)  # noqa: F821
    if (x < y) == (x > 0.0):
        bits += _i32(1)
    else:
        bits -= _i32(1)
    return int_as_float(bits)  # noqa: F821


_DEVICE = {"frexp": _frexp64, "frexpf": _frexp32, "ilogb": _ilogb64, "ilogbf": _ilogb32,
           "logb": _logb64, "logbf": _logb32, "nextafter": _nextafter64,
           "nextafterf": _nextafter32}
for _name, _fn in _DEVICE.items():
    setattr(_module, _name, _fn)
del _name, _ret, _codes, _fn, _n, _f, _p, _ops, _src, _dst, _signed, _w, _mode
