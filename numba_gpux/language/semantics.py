"""Built-in operations whose meaning differs between Python and the API a kernel is
written for, chosen per compile by :class:`Semantics` (``compiler.Options.semantics``).

The portable API follows Python (and Numba's CPU target); the numba.cuda facade's
kernels ask for numba.cuda's rules.  The choice travels with the compile: the
compiler puts it in Numba's flags (``gpux_semantics``), which Numba keeps on its
configuration stack while it types and lowers, and the lowerings here read it
(:func:`current_semantics`).  It is part of ``Options`` and so of every cache key.

- ``min``/``max`` of two float32/float64 values: Python's comparison (a NaN first
  argument is the result) or IEEE 754 minNum/maxNum (the other operand, as C's
  ``fmin``/``fmax`` and libdevice's, which numba.cuda calls);
- float16 to integer: truncation (NumPy, C) or rounding to the nearest integer, ties
  to even, saturating at the integer type's range and NaN to 0 (PTX's
  ``cvt.rni``, numba.cuda's conversion);
- float32/float64 to integer out of the integer's range or NaN (``int(x)``,
  ``np.int32(x)``, a store into an integer array, ``round(x)``): the device's own
  conversion (LLVM leaves it undefined; x86 gives the lowest value, as Numba's CPU
  target) or PTX's ``cvt.rzi`` (saturating at the range, NaN to 0; 8-bit integers
  saturate at 16 bits and keep the low byte, as NVVM's code does);
- ``math.floor``/``ceil``/``trunc``: an int (Python 3, Numba) or a float of the
  argument's type (numba.cuda's typing: float32 for float32, float64 for float64 and
  for integers);
- ``print``: the conversion of floats, and what a call with more values than one
  printf takes does (language/printing.py);
- whether a float multiply and an add may fuse into one fma (``float_contract``):
  numba.cuda compiles with NVVM's default, which fuses ``a * b + c``; the portable
  API rounds each operation, as Numba's CPU target does;
- a complex zero to a complex power (``complex_zero_power``), where CPython raises:
  NumPy's value (0 for an exponent of positive real part, else NaN) or numba.cuda's
  (0 for an exponent of zero real part, else its polar formula's value);
- what ``fastmath=True`` allows (``fastmath``): every LLVM fast-math flag, as Numba's
  CPU target (the optimizer may also take values to be neither NaN nor infinite, and
  reassociate), or numba.cuda's NVVM options (approximate functions and division,
  fused multiply-adds; NaN, infinities and the order of operations kept).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass

from llvmlite import ir
from numba.core import types
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import AbstractTemplate, Registry, signature

from ..errors import GpuxUserError
from .intrinsics import call, math_name

__all__ = ["Semantics", "DEFAULT_SEMANTICS", "FASTMATH_FLAGS", "current_semantics", "typing_registry",
           "lowering_registry", "superseding_registry", "saturating_to_int"]

#: the values each choice of :class:`Semantics` takes
_CHOICES = {"float_minmax": ("python", "ieee"),
            "float16_to_int": ("truncate", "nearest"),
            "float_to_int": ("native", "saturate"),
            "floor_ceil_trunc": ("int", "float"),
            "print_float": ("%g", "%f", "%e"),
            "print_too_many": ("error", "format"),
            "float_contract": ("off", "on"),
            "complex_zero_power": ("numpy", "polar"),
            "fastmath": ("fast", "approx")}

#: the LLVM fast-math flags ``fastmath=True`` gives the code, by ``Semantics.fastmath``
FASTMATH_FLAGS = {"fast": frozenset({"fast"}),
                  "approx": frozenset({"contract", "afn", "arcp"})}


@dataclass(frozen=True)
class Semantics:
    """How built-in operations behave where Python's rules and those of the API a kernel
    is written for differ.  The default is the portable API's: Python's rules."""

    #: built-in ``min``/``max`` of two floats when one is NaN: "python" (``max(nan, 1.0)``
    #: is nan, ``max(1.0, nan)`` is 1.0) or "ieee" (minNum/maxNum: the other operand)
    float_minmax: str = "python"
    #: float16 to integer: "truncate" (toward zero) or "nearest" (ties to even,
    #: saturating at the integer's range, NaN to 0)
    float16_to_int: str = "truncate"
    #: float32/float64 to integer out of range or NaN: "native" (the device's
    #: conversion) or "saturate" (PTX's cvt.rzi: clamped to the range, NaN to 0)
    float_to_int: str = "native"
    #: what ``math.floor``/``ceil``/``trunc`` return: "int" (Python's int) or "float"
    #: (the float type of the argument; float64 for an integer argument)
    floor_ceil_trunc: str = "int"
    #: the printf conversion ``print()`` writes floats with: "%g" (34.75, 3), "%f"
    #: (34.750000, 3.000000) or "%e"
    print_float: str = "%g"
    #: a ``print()`` of more values than one printf takes: "error" (a compile error) or
    #: "format" (a warning at compile time; the kernel prints the raw format string)
    print_too_many: str = "error"
    #: "on": floating-point operations carry LLVM's ``contract`` flag, so that a back
    #: end may fuse a multiply and an add into an fma (NVPTX does; so do OpenCL C and
    #: Metal sources, through FP_CONTRACT); "off": each rounds on its own
    float_contract: str = "off"
    #: ``0j ** w`` for w not 0: "numpy" (0 where ``w.real > 0``, else nan+nanj, as
    #: NumPy 2's ``np.power``) or "polar" (numba.cuda's: 0 where ``w.real == 0``, else
    #: ``|z| ** w.real`` and the phase as for any other base: 0 for a real positive w,
    #: nan+nanj where w has an imaginary part; its formula takes a square too, where
    #: "numpy" multiplies: ``1j ** 2`` is -1+1.2246e-16j, not -1+0j)
    complex_zero_power: str = "numpy"
    #: what ``fastmath=True`` allows (:data:`FASTMATH_FLAGS`): "fast" (every LLVM
    #: fast-math flag, Numba's meaning: values may be taken as never NaN or infinite,
    #: sums reassociated) or "approx" (``contract``, ``afn``, ``arcp``: approximate
    #: math functions, division and square root, fused multiply-adds, as numba.cuda's
    #: NVVM options -ftz=1 -prec-div=0 -prec-sqrt=0 -fma=1; NaN and infinities kept)
    fastmath: str = "fast"

    def __post_init__(self):
        for name, allowed in _CHOICES.items():
            if getattr(self, name) not in allowed:
                raise GpuxUserError(f"Semantics.{name} must be one of {', '.join(allowed)}, "
                                    f"not {getattr(self, name)!r}")


DEFAULT_SEMANTICS = Semantics()


def current_semantics() -> Semantics:
    """The :class:`Semantics` of the compile under way (the default outside one)."""
    from numba.core.targetconfig import ConfigStack

    flags = ConfigStack.top_or_none()
    return getattr(flags, "gpux_semantics", None) or DEFAULT_SEMANTICS


typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.semantics")
#: installed after Numba's builtins: for the same signature the later is chosen
superseding_registry = LoweringRegistry("numba_gpux.semantics.superseding")
_F32 = ir.FloatType()


# ------------------------------------------------------------------ min / max
def _minmax(fmaxmin: str, cmpop):
    def lower(context, builder, sig, args):
        if current_semantics().float_minmax == "ieee":
            ty = sig.return_type
            a, b = (context.cast(builder, v, t, ty) for v, t in zip(args, sig.args))
            return call(builder, math_name(fmaxmin, context.get_value_type(ty)), a, b)
        from numba.cpython.builtins import do_minmax

        return do_minmax(context, builder, sig.args, args, cmpop)
    return lower


_FLOATS = (types.float32, types.float64)


def _minmax_template(fn):
    """``fn(a, b)`` of two float32/float64 values, typed here (ahead of Numba's
    ``@overload(max)``, whose lowering is its own) so that it lowers below."""

    class T(AbstractTemplate):
        key = fn

        def generic(self, args, kws):
            if not kws and len(args) == 2 and all(a in _FLOATS for a in args):
                return signature(max(args, key=lambda t: t.bitwidth), *args)
            return None

    T.__name__ = f"Float{fn.__name__.capitalize()}"
    typing_registry.register_global(fn, types.Function(T))


for _fn, _name, _op in ((max, "fmax", operator.gt), (min, "fmin", operator.lt)):
    _minmax_template(_fn)
    for _a in _FLOATS:
        for _b in (types.float32, types.float64):
            lowering_registry.lower(_fn, _a, _b)(_minmax(_name, _op))


# ------------------------------------------------ math.floor / ceil / trunc
def _rounding_template(fn):
    """``fn(x)`` typed as a float where the compile's semantics say so (ahead of
    Numba's template, which types it as an int; the lowering casts the rounded float
    to whichever type the signature has)."""

    class T(AbstractTemplate):
        key = fn

        def generic(self, args, kws):
            if kws or len(args) != 1 or current_semantics().floor_ceil_trunc != "float":
                return None
            (x,) = (types.unliteral(a) for a in args)
            if x in (types.float16, *_FLOATS):
                return signature(x, x)
            if isinstance(x, types.Integer):
                wide = types.int64 if x.signed else types.uint64
                return signature(types.float64, wide)
            return None

    T.__name__ = f"Float{fn.__name__.capitalize()}"
    typing_registry.register_global(fn, types.Function(T))


for _fn in (math.floor, math.ceil, math.trunc):
    _rounding_template(_fn)


# ------------------------------------------------------------ float16 -> integer
class _FloatToInt(AbstractTemplate):
    """``int(x)`` of a float16, float32 or float64, typed here (ahead of Numba's
    ``@overload(int)``, whose implementation is compiled on its own, without the
    kernel's semantics) so that it converts as the kernel's other conversions do
    (below)."""
    key = int

    def generic(self, args, kws):
        if not kws and len(args) == 1 and args[0] in (types.float16, *_FLOATS):
            return signature(types.intp, args[0])
        return None


typing_registry.register_global(int, types.Function(_FloatToInt))


def _float_int(context, builder, sig, args):
    return context.cast(builder, args[0], sig.args[0], sig.return_type)


for _f in (types.float16, *_FLOATS):
    lowering_registry.lower(int, _f)(_float_int)


def saturating_to_int(builder, x, llty, signed: bool, narrow16: bool = False):
    """The float (float32/float64) *x*, integral already or rounded toward zero here,
    converted to the integer type *llty* as PTX's ``cvt.rzi`` converts: clamped to
    the type's range, NaN to 0.  *narrow16*: an 8-bit type saturates at 16 bits and
    keeps the low byte (NVVM keeps 8-bit values in 16-bit registers)."""
    bits = llty.width
    wide = ir.IntType(16) if narrow16 and bits < 16 else llty
    wbits = wide.width
    if signed:
        lo, hi = -(2.0 ** (wbits - 1)), 2.0 ** (wbits - 1)
        lo_int, hi_int = -(2 ** (wbits - 1)), 2 ** (wbits - 1) - 1
    else:
        # -1 < x < 0 truncates to 0, in range
        lo, hi, lo_int, hi_int = -1.0, 2.0 ** wbits, 0, 2 ** wbits - 1
    fty = x.type
    # the powers of two bounding each range are exact in float32 and float64
    above = builder.fcmp_ordered(">=", x, ir.Constant(fty, hi))
    below = (builder.fcmp_ordered("<", x, ir.Constant(fty, lo)) if signed else
             builder.fcmp_ordered("<=", x, ir.Constant(fty, lo)))
    nan = builder.fcmp_unordered("uno", x, x)
    # the conversion is LLVM's poison where out of range, and then never chosen
    conv = builder.fptosi(x, wide) if signed else builder.fptoui(x, wide)
    res = builder.select(below, ir.Constant(wide, lo_int), conv)
    res = builder.select(above, ir.Constant(wide, hi_int), res)
    res = builder.select(nan, ir.Constant(wide, 0), res)
    return builder.trunc(res, llty) if wide is not llty else res


@lowering_registry.lower_cast(types.float16, types.Integer)
def _float16_to_int(context, builder, fromty, toty, val):
    llty = context.get_value_type(toty)
    if current_semantics().float16_to_int != "nearest":
        return builder.fptosi(val, llty) if toty.signed else builder.fptoui(val, llty)
    # every float16 value is exact in float32
    x = call(builder, math_name("rint", _F32), builder.fpext(val, _F32))
    return saturating_to_int(builder, x, llty, toty.signed)


# ------------------------------------------------- float32/float64 -> integer
def _float_to_int(context, builder, fromty, toty, val):
    llty = context.get_value_type(toty)
    if current_semantics().float_to_int == "saturate":
        return saturating_to_int(builder, val, llty, toty.signed, narrow16=True)
    return builder.fptosi(val, llty) if toty.signed else builder.fptoui(val, llty)


def _round_to_int(context, builder, sig, args):
    """``round(x)`` of a float to an integer: rounded to nearest even, then converted
    as any other float (above), not with Numba's own bare conversion."""
    fty = context.get_value_type(sig.args[0])
    # LLVM's rint, as Numba's round() calls it (every back end lowers it)
    rint = builder.module.declare_intrinsic("llvm.rint", [fty])
    r = builder.call(rint, [args[0]])
    return context.cast(builder, r, sig.args[0], sig.return_type)


for _f in _FLOATS:
    lowering_registry.lower_cast(_f, types.Integer)(_float_to_int)
    lowering_registry.lower(round, _f)(_round_to_int)


# ------------------------------------------------------------------ shifts
def defined_shift(kind: str):
    """``x << n`` and ``x >> n`` on integers with *n* at least the width (or negative,
    taken as unsigned): 0, or for ``>>`` of a negative signed value -1.  That is
    Python's value wrapped to the type and PTX's (``shl``/``shr`` clamp the amount);
    LLVM's own shifts leave it undefined (x86 takes the amount modulo the width)."""

    def lower(context, builder, sig, args):
        ty = sig.return_type
        val, amt = (context.cast(builder, v, t, ty) for v, t in zip(args, sig.args))
        llty = val.type
        width = ir.Constant(llty, llty.width)
        zero = ir.Constant(llty, 0)
        past = builder.icmp_unsigned(">=", amt, width)
        safe = builder.select(past, zero, amt)
        if kind == "shl":
            return builder.select(past, zero, builder.shl(val, safe))
        if ty.signed:
            sign = builder.ashr(val, ir.Constant(llty, llty.width - 1))
            return builder.select(past, sign, builder.ashr(val, safe))
        return builder.select(past, zero, builder.lshr(val, safe))
    return lower


for _op, _kind in ((operator.lshift, "shl"), (operator.ilshift, "shl"),
                   (operator.rshift, "shr"), (operator.irshift, "shr")):
    superseding_registry.lower(_op, types.Integer, types.Integer)(defined_shift(_kind))
