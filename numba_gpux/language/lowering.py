"""Lowering of the kernel language to portable ``__gpux_*`` intrinsic calls."""

from __future__ import annotations

import cmath
import math

import numpy as np
from llvmlite import ir
from numba.core import types, cgutils
from numba.core.imputils import Registry

from . import stubs
from .intrinsics import call, math_name
from .semantics import defined_shift

__all__ = ["registry", "superseding_registry"]

registry = Registry("numba_gpux.language")
#: installed after Numba's builtins (context.py): chosen for the same keys
superseding_registry = Registry("numba_gpux.language.superseding")
lower = registry.lower
lower_getattr = registry.lower_getattr
lower_constant = registry.lower_constant

I32 = ir.IntType(32)


def _dim(builder, name, d):
    return call(builder, name, ir.Constant(I32, d))


def _global_id(builder, d):
    # the portable global index, which a target may define by a built-in (OpenCL's
    # get_global_id: the Intel CPU driver vectorizes x[2 * i] and the dimension
    # consecutive in memory only through it, but computes it in 32 bits, so a launch
    # wider than that runs code with the sum instead: abi.LaunchFacts.wide)
    return _dim(builder, "__gpux_global_idx", d)


_NO_WRAP = ("nuw", "nsw")


def _global_size(builder, d):
    return builder.mul(_dim(builder, "__gpux_block_dim", d), _dim(builder, "__gpux_grid_dim", d),
                       flags=_NO_WRAP)


def _tuple_or_scalar(context, builder, sig, values):
    if len(values) == 1:
        return values[0]
    return context.make_tuple(builder, sig.return_type, values)


@lower(stubs.grid, types.IntegerLiteral)
def grid_impl(context, builder, sig, args):
    n = sig.args[0].literal_value
    return _tuple_or_scalar(context, builder, sig, [_global_id(builder, d) for d in range(n)])


@lower(stubs.gridsize, types.IntegerLiteral)
def gridsize_impl(context, builder, sig, args):
    n = sig.args[0].literal_value
    return _tuple_or_scalar(context, builder, sig, [_global_size(builder, d) for d in range(n)])


@lower(stubs.barrier)
def barrier_impl(context, builder, sig, args):
    call(builder, "__gpux_barrier")
    return context.get_dummy_value()


def _register_dim3(stub):
    for d, attr in enumerate("xyz"):
        def impl(context, builder, typ, value, _d=d):
            return _dim(builder, stub._intrinsic, _d)

        lower_getattr(types.Module(stub), attr)(impl)


for _stub in (stubs.thread_idx, stubs.block_idx, stubs.block_dim, stubs.grid_dim):
    _register_dim3(_stub)


# --------------------------------------------------------------------- math
#: Python function -> portable intrinsic base name
MATH_FUNCS = {
    math.sin: "sin", math.cos: "cos", math.tan: "tan", math.asin: "asin",
    math.acos: "acos", math.atan: "atan", math.sinh: "sinh", math.cosh: "cosh",
    math.tanh: "tanh", math.asinh: "asinh", math.acosh: "acosh", math.atanh: "atanh",
    math.exp: "exp", math.expm1: "expm1", math.log: "log", math.log2: "log2",
    math.log10: "log10", math.log1p: "log1p", math.sqrt: "sqrt", math.fabs: "fabs",
    math.floor: "floor", math.ceil: "ceil", math.trunc: "trunc", math.erf: "erf",
    math.erfc: "erfc", math.gamma: "tgamma", math.lgamma: "lgamma",
    math.pow: "pow", math.atan2: "atan2", math.hypot: "hypot", math.fmod: "fmod",
    math.copysign: "copysign",
}
if hasattr(math, "exp2"):
    MATH_FUNCS[math.exp2] = "exp2"
if hasattr(math, "cbrt"):
    MATH_FUNCS[math.cbrt] = "cbrt"


def _compute_type(sig):
    return types.float32 if all(a == types.float32 for a in sig.args) else types.float64


def _make_math_impl(base):
    def impl(context, builder, sig, args):
        ft = _compute_type(sig)
        fargs = [context.cast(builder, v, t, ft) for v, t in zip(args, sig.args)]
        res = call(builder, math_name(base, context.get_value_type(ft)), *fargs)
        return context.cast(builder, res, ft, sig.return_type)

    return impl


for _fn, _base in MATH_FUNCS.items():
    _impl = _make_math_impl(_base)
    n = 2 if _base in ("pow", "atan2", "hypot", "fmod", "copysign") else 1
    lower(_fn, *([types.Number] * n))(_impl)


def _np_cbrt(context, builder, sig, args):
    # C's cbrt (the device's): NumPy's np.cbrt.  Numba's loop computes
    # np.power(x, 1/3) with the sign apart, which on a device without its CPU's
    # rewrite of that power into cbrt makes -0.0 into +0.0
    (x,) = args
    return call(builder, math_name("cbrt", x.type), x)


#: NumPy ufunc -> {loop signature: lowering} that the kernel language's targets use
#: instead of Numba's (context.get_ufunc_info)
UFUNC_LOOPS = {np.cbrt: {"f->f": _np_cbrt, "d->d": _np_cbrt},
               # shifts by the width or more as the operators (NumPy's values too)
               np.left_shift: {f"{c}{c}->{c}": defined_shift("shl") for c in "bBhHiIlLqQ"},
               np.right_shift: {f"{c}{c}->{c}": defined_shift("shr") for c in "bBhHiIlLqQ"}}


# IEEE formats by LLVM type: (width, mantissa bits)
_FORMATS = {"half": (16, 10), "float": (32, 23), "double": (64, 52)}


def float_class(context, builder, x, test: str):
    """``isnan``/``isinf``/``isfinite`` (*test*) of the float *x*: float compares, or,
    where the compile's fast-math flags let LLVM take values to be neither NaN nor
    infinite (``fastmath=True`` in the portable API: Numba's pass puts the flags on
    every ``fcmp`` and on calls such as ``fabs``, and LLVM folds ``x != x`` to false),
    integer compares of ``|x|``'s bits with infinity's, which no flag folds: a value
    read from memory is still told apart (numba.cuda's tests, libdevice's
    ``__nv_isnanf``, carry no flags either)."""
    flags = set(getattr(context.fastmath, "flags", ()) or ())
    if not flags & {"fast", "nnan", "ninf"}:
        if test == "isnan":
            return builder.fcmp_unordered("uno", x, x)
        fabs = builder.call(builder.module.declare_intrinsic("llvm.fabs", [x.type]), [x])
        return builder.fcmp_ordered("==" if test == "isinf" else "<", fabs,
                                    ir.Constant(x.type, float("inf")))
    width, mbits = _FORMATS[str(x.type)]
    ity = ir.IntType(width)
    mag = builder.and_(builder.bitcast(x, ity), ir.Constant(ity, (1 << (width - 1)) - 1))
    inf = ir.Constant(ity, ((1 << (width - 1 - mbits)) - 1) << mbits)
    op = {"isnan": ">", "isinf": "==", "isfinite": "<"}[test]
    return builder.icmp_unsigned(op, mag, inf)


def _classify(test: str):
    def lower(context, builder, sig, args):
        return float_class(context, builder, args[0], test)
    return lower


def _classify_complex(test: str):
    # a complex number is NaN or infinite where a part is; finite where both are
    def lower(context, builder, sig, args):
        z = context.make_complex(builder, sig.args[0], value=args[0])
        re, im = (float_class(context, builder, v, test) for v in (z.real, z.imag))
        return builder.and_(re, im) if test == "isfinite" else builder.or_(re, im)
    return lower


for _test in ("isnan", "isinf", "isfinite"):
    _real, _cplx = _classify(_test), _classify_complex(_test)
    lower(getattr(math, _test), types.Float)(_real)
    superseding_registry.lower(getattr(cmath, _test), types.Complex)(_cplx)
    UFUNC_LOOPS[getattr(np, _test)] = {"f->?": _real, "d->?": _real, "F->?": _cplx, "D->?": _cplx}


@lower(math.isnan, types.Integer)
@lower(math.isinf, types.Integer)
def int_isnan_impl(context, builder, sig, args):
    return cgutils.false_bit


@lower(math.isfinite, types.Integer)
def int_isfinite_impl(context, builder, sig, args):
    return cgutils.true_bit


# frexp and ldexp on the bits of the IEEE format, in the shared lowering (every
# target's floats are IEEE binary32/binary64): (mantissa bits, exponent bias)
_IEEE = {"float": (23, 127), "double": (52, 1023)}


def _ieee(x):
    mbits, bias = _IEEE[str(x.type)]
    width = 1 + (8 if mbits == 23 else 11) + mbits
    return mbits, bias, ir.IntType(width)


def _pow2(ty, n):
    return ir.Constant(ty, math.ldexp(1.0, n))


@lower(math.frexp, types.Float)
def frexp_impl(context, builder, sig, args):
    """(m, e) with x == m * 2**e, 0.5 <= |m| < 1; x itself and 0 for 0, inf and nan."""
    (x,) = args
    mbits, bias, ity = _ieee(x)
    emask = ir.Constant(ity, (1 << (ity.width - 1 - mbits)) - 1)
    shift = ir.Constant(ity, mbits)
    # subnormals: scale into the normal range first and take the scale off the exponent
    scale = 64 if mbits == 52 else 32
    # the classification is written with float compares on |x|: written on the bits,
    # LLVM turns it into llvm.is.fpclass, which the source (C) back ends do not write
    fabs = builder.call(builder.module.declare_intrinsic("llvm.fabs", [x.type]), [x])
    zero_exp = builder.fcmp_ordered("<", fabs, ir.Constant(x.type, math.ldexp(1.0, 1 - bias)))
    xs = builder.select(zero_exp, builder.fmul(x, _pow2(x.type, scale)), x)
    bits = builder.bitcast(xs, ity)
    biased = builder.and_(builder.lshr(bits, shift), emask)
    exp = builder.sub(builder.trunc(biased, I32) if ity.width > 32 else biased,
                      ir.Constant(I32, bias - 1))
    exp = builder.select(zero_exp, builder.sub(exp, ir.Constant(I32, scale)), exp)
    mant = builder.or_(builder.and_(bits, ir.Constant(ity, ~((emask.constant) << mbits)
                                                      & ((1 << ity.width) - 1))),
                       ir.Constant(ity, (bias - 1) << mbits))
    mant = builder.bitcast(mant, x.type)
    # 0, inf and nan: |x| is 0 or inf, or unordered
    special = builder.or_(
        builder.fcmp_unordered("==", fabs, ir.Constant(x.type, 0.0)),
        builder.fcmp_ordered("==", fabs, ir.Constant(x.type, float("inf"))))
    mant = builder.select(special, x, mant)
    exp = builder.select(special, ir.Constant(I32, 0), exp)
    ety = sig.return_type[1]
    exp = context.cast(builder, exp, types.int32, ety)
    return context.make_tuple(builder, sig.return_type, [mant, exp])


@lower(math.ldexp, types.Float, types.Integer)
def ldexp_impl(context, builder, sig, args):
    """x * 2**n, rounded once (scaled in steps so no step overflows or double-rounds)."""
    x, n = args
    n = context.cast(builder, n, sig.args[1], types.int32)
    mbits, bias, ity = _ieee(x)
    emax, emin, prec = bias, 1 - bias, mbits + 1
    big = ir.Constant(I32, emax)
    small = ir.Constant(I32, emin + prec)
    y = x
    for _ in range(2):
        c = builder.icmp_signed(">", n, ir.Constant(I32, emax))
        y = builder.select(c, builder.fmul(y, _pow2(x.type, emax)), y)
        n = builder.select(c, builder.sub(n, big), n)
    n = builder.select(builder.icmp_signed(">", n, big), big, n)
    for _ in range(2):
        c = builder.icmp_signed("<", n, ir.Constant(I32, emin))
        y = builder.select(c, builder.fmul(y, _pow2(x.type, emin + prec)), y)
        n = builder.select(c, builder.sub(n, small), n)
    n = builder.select(builder.icmp_signed("<", n, ir.Constant(I32, emin)),
                       ir.Constant(I32, emin), n)
    e = builder.add(n, ir.Constant(I32, bias))
    e = builder.zext(e, ity) if ity.width > 32 else e
    scale = builder.bitcast(builder.shl(e, ir.Constant(ity, mbits)), x.type)
    return builder.fmul(y, scale)


def _copysign(builder, mag, sign):
    return call(builder, math_name("copysign", mag.type), mag, sign)


@lower(math.modf, types.Float)
def modf_impl(context, builder, sig, args):
    """(x - trunc(x), trunc(x)), the fraction with x's sign; (+-0.0, x) for infinities."""
    (x,) = args
    whole = call(builder, math_name("trunc", x.type), x)
    frac = builder.fsub(x, whole)
    fabs = builder.call(builder.module.declare_intrinsic("llvm.fabs", [x.type]), [x])
    inf = builder.fcmp_ordered("==", fabs, ir.Constant(x.type, float("inf")))
    frac = builder.select(inf, ir.Constant(x.type, 0.0), frac)
    frac = _copysign(builder, frac, x)
    return context.make_tuple(builder, sig.return_type, [frac, whole])


@lower(math.nextafter, types.Float, types.Float)
def nextafter_impl(context, builder, sig, args):
    """The next float after x towards y, on the bits (y when equal, NaN for NaNs)."""
    x, y = args
    _, _, ity = _ieee(x)
    bits = builder.bitcast(x, ity)
    away = builder.icmp_unsigned("==", builder.fcmp_ordered("<", x, y),
                                 builder.fcmp_ordered(">", x, ir.Constant(x.type, 0.0)))
    one = ir.Constant(ity, 1)
    step = builder.bitcast(builder.select(away, builder.add(bits, one), builder.sub(bits, one)),
                           x.type)
    tiny = _copysign(builder, builder.bitcast(one, x.type), y)   # smallest subnormal
    res = builder.select(builder.fcmp_ordered("==", x, ir.Constant(x.type, 0.0)), tiny, step)
    res = builder.select(builder.fcmp_ordered("==", x, y), y, res)
    nan = builder.fcmp_unordered("uno", x, y)
    return builder.select(nan, builder.fadd(x, y), res)


def _remainder_impl(ft):
    one, two, half, nan = ft(1.0), ft(2.0), ft(0.5), ft("nan")

    def remainder(x, y):
        # IEEE 754 remainder through fmod (CPython's method): x - n*y, n nearest to x/y,
        # ties to even; NaN for y == 0 or infinite x, x for infinite y
        if math.isnan(x) or math.isnan(y):
            return x + y
        if math.isinf(x) or y == 0:
            return nan
        if math.isinf(y):
            return x
        absx = abs(x)
        absy = abs(y)
        m = math.fmod(absx, absy)
        c = absy - m
        if m < c:
            r = m
        elif m > c:
            r = -c
        else:
            r = m - two * math.fmod(half * (absx - m), absy)
        return math.copysign(one, x) * r

    return remainder


def _gcd_impl(context, builder, sig, args):
    # Numba's own (Stein's algorithm, integer operations only); its math module's
    # other implementations are not installed here, the kernel language's are
    from numba.cpython.mathimpl import gcd_impl

    return gcd_impl(context, builder, sig, args)


lower(math.gcd, types.Integer, types.Integer)(_gcd_impl)


@lower(math.remainder, types.Float, types.Float)
def remainder_impl(context, builder, sig, args):
    import numpy as np

    ft = np.float32 if sig.return_type == types.float32 else np.float64
    return context.compile_internal(builder, _remainder_impl(ft), sig, args)


@lower(math.radians, types.Float)
def radians_impl(context, builder, sig, args):
    return builder.fmul(args[0], ir.Constant(args[0].type, math.pi / 180.0))


@lower(math.degrees, types.Float)
def degrees_impl(context, builder, sig, args):
    return builder.fmul(args[0], ir.Constant(args[0].type, 180.0 / math.pi))


def _register_function_constant():
    # A device function named in a kernel is a compile-time constant: its
    # value is never used at run time (calls are resolved statically); its data
    # model is registered with the other data models (language/types).
    from .functions import GpuxFunctionType

    @lower_constant(GpuxFunctionType)
    def device_function_constant(context, builder, ty, pyval):
        return context.get_dummy_value()


_register_function_constant()


# -- range() loops ------------------------------------------------------------------
# A signed range() iterates as Python's, but ends by comparing the next value with the
# stop instead of counting down the number of values left (Numba's own iteration, which
# divides for that count first).  The iterator's ``count`` is a flag: 1 while ``iter``
# holds a value still to yield.  After yielding ``v`` there is a next value when
# ``v + step`` is before the stop, asked as ``v`` before ``stop - step`` (a loop-invariant
# limit; where that subtraction would overflow, no ``v`` is before it).  The step is
# added as a signed addition that does not wrap (``nsw``): its value after the last one
# may overflow, but is never used.
#
# A loop then ends as ``while i < n`` ends, which a CPU driver that vectorizes across
# work-items runs several times faster when the loop holds a branch (a grid-stride loop
# with an atomic update under an ``if``: 2.7x on Intel's driver), and ``x[i]`` in
# ``for i in range(start, n, stride)`` with a start and stride that are not negative (a
# grid index and the grid's size) is an induction the optimizer can bound: no wrap-around
# of negative indices, consecutive work-items load consecutive elements, and a constant
# range (``range(16)``) still has a trip count the optimizer unrolls by.

def _before_stop(builder, value, stop, forward):
    """Whether *value* is before *stop*, going up where *forward* (the step is positive)
    and down where not."""
    ahead = builder.icmp_signed("<", value, stop)
    behind = builder.icmp_signed(">", value, stop)
    return builder.select(forward, ahead, behind)


def _range_getiter(state_type, iter_type):
    from numba.core.imputils import impl_ret_untracked
    from numba.cpython.rangeobj import make_range_iterator

    proxy = make_range_iterator(iter_type)
    state_proxy = cgutils.create_struct_proxy(state_type)

    @superseding_registry.lower("getiter", state_type)
    def range_getiter(context, builder, sig, args):
        state = state_proxy(context, builder, value=args[0])
        start, stop, step = state.start, state.stop, state.step
        zero = ir.Constant(step.type, 0)
        with cgutils.if_unlikely(builder, builder.icmp_signed("==", step, zero)):
            context.call_conv.return_user_exc(builder, ValueError,
                                              ("range() arg 3 must not be zero",))
        it = proxy(context, builder)
        it.iter = cgutils.alloca_once_value(builder, start)
        more = _before_stop(builder, start, stop, builder.icmp_signed(">", step, zero))
        it.count = cgutils.alloca_once_value(builder, builder.zext(more, step.type))
        it.stop = stop
        it.step = step
        return impl_ret_untracked(context, builder, iter_type, it._getvalue())


def _range_iternext(iter_type):
    from numba.core.imputils import RefType, iternext_impl
    from numba.cpython.rangeobj import make_range_iterator

    proxy = make_range_iterator(iter_type)

    @superseding_registry.lower("iternext", iter_type)
    @iternext_impl(RefType.BORROWED)
    def range_iternext(context, builder, sig, args, result):
        it = proxy(context, builder, value=args[0])
        flag = builder.load(it.count)
        ty = flag.type
        # with Numba's own getiter, the count of values left: more than none
        more = builder.icmp_signed(">", flag, ir.Constant(ty, 0))
        result.set_valid(more)
        with builder.if_then(more):
            value = builder.load(it.iter)
            result.yield_(value)
            step, stop = it.step, it.stop
            forward = builder.icmp_signed(">", step, ir.Constant(ty, 0))
            # v + step before the stop is v before stop - step, where that subtraction
            # does not overflow; where it would (stop < MIN + step going up, stop > MAX
            # + step going down), v + step is past the stop, as v is past MIN (or MAX)
            top = ir.Constant(ty, (1 << (ty.width - 1)) - 1)
            bottom = ir.Constant(ty, -(1 << (ty.width - 1)))
            edge = builder.select(forward, bottom, top)
            inside = builder.select(forward,
                                    builder.icmp_signed(">=", stop, builder.add(bottom, step)),
                                    builder.icmp_signed("<=", stop, builder.add(top, step)))
            limit = builder.select(inside, builder.sub(stop, step), edge)
            further = _before_stop(builder, value, limit, forward)
            following = builder.add(value, step, flags=["nsw"])
            builder.store(builder.zext(further, ty), it.count)
            builder.store(following, it.iter)


for _s, _t in ((types.range_state32_type, types.range_iter32_type),
               (types.range_state64_type, types.range_iter64_type)):
    _range_getiter(_s, _t)
    _range_iternext(_t)
