"""Integer and float intrinsics: ``gpux.popc``, ``clz``, ``ffs``, ``brev``, ``fma``,
``cbrt``, ``select``, and the builtin ``round()`` on floats.

``popc``, ``clz``, ``ffs`` and ``fma`` are LLVM intrinsics in the neutral IR
(``llvm.ctpop``, ``llvm.ctlz``, ``llvm.cttz``, ``llvm.fma``), which every back
end lowers; ``brev`` is the portable intrinsic ``__gpux_brev_i32/i64`` because
LLVM's SPIR-V back end cannot lower ``llvm.bitreverse`` for OpenCL (it needs the
Shader capability); ``cbrt`` is the math intrinsic ``__gpux_cbrt_f32/f64``.
``round(x)`` follows Python: halves round to even, and the one-argument form
returns an int.
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba.core import types
from numba.core.errors import TypingError
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import (
    AbstractTemplate, AttributeTemplate, Registry, bound_function, signature,
)

from .intrinsics import INTRINSICS, Intrinsic, call, math_name
from .stubs import Stub

__all__ = ["popc", "clz", "ffs", "brev", "fma", "cbrt", "select", "typing_registry",
           "lowering_registry"]

for _w in (32, 64):
    _t = ir.IntType(_w)
    INTRINSICS[f"__gpux_brev_i{_w}"] = Intrinsic(
        f"__gpux_brev_i{_w}", _t, (_t,),
        f"Reverse the order of the {_w} bits of the argument (bit 0 becomes bit {_w - 1}). "
        f"CUDA: brev.b{_w} (llvm.bitreverse); SPIR-V: shifts and masks (OpBitReverse needs "
        f"the Shader capability).")

popc = Stub("popc", "popc(x) -> type of x: the number of bits set in the integer x.")
clz = Stub("clz", "clz(x) -> type of x: the number of leading zero bits of the integer x "
                  "(its bit width for 0).")
ffs = Stub("ffs", "ffs(x) -> uint32: the 1-based position of the least significant bit set "
                  "in x, 0 when x is 0.")
brev = Stub("brev", "brev(x) -> uint32 or uint64: the bits of the integer x reversed, as a "
                    "uint32 (x of at most 32 bits, converted) or a uint64.")
fma = Stub("fma", "fma(a, b, c) -> float: a * b + c rounded once.")
cbrt = Stub("cbrt", "cbrt(x) -> float: the cube root of x.")
select = Stub("select", "select(cond, a, b): a if cond else b, without a branch (both are "
                        "evaluated).")

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.bits")
_lower = lowering_registry.lower


def _template(stub, typer):
    class T(AbstractTemplate):
        key = stub

        def generic(self, args, kws):
            if kws:
                raise TypingError(f"{stub._name}() takes no keyword arguments")
            return typer(self.context, [types.unliteral(a) for a in args])

    T.__name__ = f"Gpux_{stub._name}"
    typing_registry.register(T)
    typing_registry.register_global(stub, types.Function(T))


def _int_unary(name, ret=None, widths=(8, 16, 32, 64), unsigned=False):
    def typer(ctx, args):
        if len(args) != 1:
            raise TypingError(f"{name}(x) takes one argument")
        (x,) = args
        if isinstance(x, types.Boolean) or not isinstance(x, types.Integer):
            raise TypingError(f"{name}(x) needs an integer, not {x}")
        if x.bitwidth not in widths:
            raise TypingError(f"{name}(x) needs an integer of {', '.join(map(str, widths))} "
                              f"bits, not {x}")
        if unsigned:  # taken as (and giving) a uint32, or a uint64 if it is wider
            x = types.uint32 if x.bitwidth <= 32 else types.uint64
        return signature(ret or x, x)
    return typer


_template(popc, _int_unary("popc"))
_template(clz, _int_unary("clz"))
_template(ffs, _int_unary("ffs", types.uint32))
# numba.cuda's brev takes uint32 or uint64: any other integer converts to the unsigned
# one of its width or wider (int32 -> uint32), and the result is unsigned
_template(brev, _int_unary("brev", unsigned=True))


def _float_of(args):
    return types.float32 if all(a == types.float32 for a in args) else types.float64


def _float_nary(name, n):
    def typer(ctx, args):
        if len(args) != n:
            raise TypingError(f"{name}() takes {n} argument(s), got {len(args)}")
        for a in args:
            if not isinstance(a, (types.Integer, types.Float)) or isinstance(a, types.Boolean):
                raise TypingError(f"{name}() needs real numbers, not {a}")
        ft = _float_of(args)
        return signature(ft, *([ft] * n))
    return typer


_template(fma, _float_nary("fma", 3))
_template(cbrt, _float_nary("cbrt", 1))


def _select_typer(ctx, args):
    if len(args) != 3:
        raise TypingError("select(cond, a, b) takes three arguments")
    cond, a, b = args
    if not isinstance(cond, (types.Boolean, types.Integer)):
        raise TypingError(f"select: the condition must be a bool or an int, not {cond}")
    ty = ctx.unify_pairs(a, b)
    if ty is None or not isinstance(ty, (types.Number, types.Boolean)):
        raise TypingError(f"select: a and b must be numbers of compatible types, not {a}, {b}")
    return signature(ty, types.boolean, ty, ty)


_template(select, _select_typer)


@typing_registry.register_attr
class _IntegerMethods(AttributeTemplate):
    """``x.bit_count()`` on integers, as Python's ``int.bit_count``."""

    key = types.Integer

    @bound_function("int.bit_count")
    def resolve_bit_count(self, ty, args, kws):
        if args or kws:
            raise TypingError("int.bit_count() takes no arguments")
        return signature(types.unliteral(ty))


# ---------------------------------------------------------------- lowering
def _llvm_intrinsic(builder, name, ty, args):
    return builder.call(builder.module.declare_intrinsic(name, [ty]), args)


@_lower(popc, types.Integer)
def _popc(context, builder, sig, args):
    return builder.ctpop(args[0])


@_lower("int.bit_count", types.Integer)
def _bit_count(context, builder, sig, args):
    # Python's: the bits set in abs(x) (so (-5).bit_count() == 2)
    (x,) = args
    if sig.args[0].signed:
        neg = builder.icmp_signed("<", x, ir.Constant(x.type, 0))
        x = builder.select(neg, builder.neg(x), x)
    return builder.ctpop(x)


@_lower(clz, types.Integer)
def _clz(context, builder, sig, args):
    return builder.ctlz(args[0], ir.Constant(ir.IntType(1), 0))


@_lower(ffs, types.Integer)
def _ffs(context, builder, sig, args):
    # width - clz(x & -x): the lowest set bit's 1-based position, and 0 for 0 (clz(0)
    # is the width), without a compare and select (as NVVM's __ffs)
    (x,) = args
    low = builder.and_(x, builder.neg(x))
    lz = builder.ctlz(low, ir.Constant(ir.IntType(1), 0))
    res = builder.sub(ir.Constant(x.type, x.type.width), lz)
    i32 = ir.IntType(32)
    if x.type.width > 32:
        return builder.trunc(res, i32)
    if x.type.width < 32:
        return builder.zext(res, i32)
    return res


@_lower(brev, types.Integer)
def _brev(context, builder, sig, args):
    return call(builder, f"__gpux_brev_i{args[0].type.width}", args[0])


@_lower(fma, types.Float, types.Float, types.Float)
def _fma(context, builder, sig, args):
    return builder.fma(*args)


@_lower(cbrt, types.Float)
def _cbrt(context, builder, sig, args):
    return call(builder, math_name("cbrt", args[0].type), args[0])


@_lower(select, types.Boolean, types.Any, types.Any)
def _select(context, builder, sig, args):
    return builder.select(*args)


# round(x, ndigits) on float32 as numba.cuda and Python's round(float(x), ndigits): in
# double precision (Numba's own rounds x * 10**ndigits to float32 first, so a product
# just above a half can round down: round(float32(0.3425), 3) gave 0.342, not 0.343)
_rint64 = types.ExternalFunction("llvm.rint.f64", signature(types.float64, types.float64))


def _round_digits64(x, ndigits):
    if math.isinf(x) or math.isnan(x):
        return x
    if ndigits >= 0:
        if ndigits > 22:  # 10.0 ** ndigits in two factors, neither of which overflows
            pow1 = 10.0 ** (ndigits - 22)
            pow2 = 1e22
        else:
            pow1 = 10.0 ** ndigits
            pow2 = 1.0
        y = (x * pow1) * pow2
        if math.isinf(y):
            return x
        return (_rint64(y) / pow2) / pow1  # rint: halves to even, as Python
    pow1 = 10.0 ** (-ndigits)
    return _rint64(x / pow1) * pow1


@_lower(round, types.float32, types.Integer)
def _round_f32_digits(context, builder, sig, args):
    x, nd = args
    wide = builder.fpext(x, ir.DoubleType())
    sig64 = signature(types.float64, types.float64, sig.args[1])
    res = context.compile_internal(builder, _round_digits64, sig64, [wide, nd])
    return builder.fptrunc(res, ir.FloatType())
