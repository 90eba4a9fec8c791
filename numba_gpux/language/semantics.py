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
- ``print``: the conversion of floats, and what a call with more values than one
  printf takes does (language/printing.py);
- whether a float multiply and an add may fuse into one fma (``float_contract``):
  numba.cuda compiles with NVVM's default, which fuses ``a * b + c``; the portable
  API rounds each operation, as Numba's CPU target does;
- a complex zero to a complex power (``complex_zero_power``), where CPython raises:
  NumPy's value (0 for an exponent of positive real part, else NaN) or numba.cuda's
  (0 for an exponent of zero real part, else its polar formula's value).
"""

from __future__ import annotations

import operator
from dataclasses import dataclass

from llvmlite import ir
from numba.core import types
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import AbstractTemplate, Registry, signature

from ..errors import GpuxUserError
from .intrinsics import call, math_name

__all__ = ["Semantics", "DEFAULT_SEMANTICS", "current_semantics", "typing_registry",
           "lowering_registry"]

#: the values each choice of :class:`Semantics` takes
_CHOICES = {"float_minmax": ("python", "ieee"),
            "float16_to_int": ("truncate", "nearest"),
            "print_float": ("%g", "%f", "%e"),
            "print_too_many": ("error", "format"),
            "float_contract": ("off", "on"),
            "complex_zero_power": ("numpy", "polar")}


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
    #: nan+nanj where w has an imaginary part)
    complex_zero_power: str = "numpy"

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


# ------------------------------------------------------------ float16 -> integer
class _HalfToInt(AbstractTemplate):
    """``int(x)`` of a float16, typed here (ahead of Numba's ``@overload(int)``, whose
    implementation is compiled on its own, without the kernel's semantics) so that it
    converts as the kernel's other conversions do (below)."""
    key = int

    def generic(self, args, kws):
        if not kws and len(args) == 1 and args[0] == types.float16:
            return signature(types.intp, types.float16)
        return None


typing_registry.register_global(int, types.Function(_HalfToInt))


@lowering_registry.lower(int, types.float16)
def _half_int(context, builder, sig, args):
    return context.cast(builder, args[0], sig.args[0], sig.return_type)


@lowering_registry.lower_cast(types.float16, types.Integer)
def _float16_to_int(context, builder, fromty, toty, val):
    llty = context.get_value_type(toty)
    if current_semantics().float16_to_int != "nearest":
        return builder.fptosi(val, llty) if toty.signed else builder.fptoui(val, llty)
    bits = toty.bitwidth
    # every float16 value is exact in float32, and so are the powers of two bounding
    # each integer range
    x = call(builder, math_name("rint", _F32), builder.fpext(val, _F32))
    if toty.signed:
        lo, hi = -(2.0 ** (bits - 1)), 2.0 ** (bits - 1)
        lo_int, hi_int = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
    else:
        lo, hi, lo_int, hi_int = 0.0, 2.0 ** bits, 0, 2 ** bits - 1
    above = builder.fcmp_ordered(">=", x, ir.Constant(_F32, hi))
    below = builder.fcmp_ordered("<", x, ir.Constant(_F32, lo))
    nan = builder.fcmp_unordered("uno", x, x)
    outside = builder.or_(builder.or_(above, below), nan)
    safe = builder.select(outside, ir.Constant(_F32, 0.0), x)
    conv = builder.fptosi(safe, llty) if toty.signed else builder.fptoui(safe, llty)
    res = builder.select(below, ir.Constant(llty, lo_int), conv)
    return builder.select(above, ir.Constant(llty, hi_int), res)
