"""Typing of the kernel language, installed only into the shared GPU typing context."""

from __future__ import annotations

import math

from numba.core import types
from numba.core.typing.templates import (
    AbstractTemplate, AttributeTemplate, ConcreteTemplate, Registry, signature,
)

from . import stubs

__all__ = ["registry"]

registry = Registry()
register = registry.register
register_attr = registry.register_attr
register_global = registry.register_global

INDEX = types.int64


class _GridLike(AbstractTemplate):
    prefer_literal = True

    def generic(self, args, kws):
        if kws or len(args) != 1:
            return None
        (n,) = args
        if isinstance(n, types.IntegerLiteral) and n.literal_value in (1, 2, 3):
            v = n.literal_value
            ret = INDEX if v == 1 else types.UniTuple(INDEX, v)
            return signature(ret, n)
        if isinstance(n, types.Integer) and not isinstance(n, types.IntegerLiteral):
            # the reason shows in Numba's error (numba.cuda raises the same class)
            from numba.core.errors import RequireLiteralValue

            raise RequireLiteralValue(f"{self.key._name}(ndim): ndim must be the constant "
                                      f"1, 2 or 3, not a variable of type {n}")
        return None


@register
class Grid(_GridLike):
    key = stubs.grid


@register
class GridSize(_GridLike):
    key = stubs.gridsize


register_global(stubs.grid, types.Function(Grid))
register_global(stubs.gridsize, types.Function(GridSize))


@register
class Barrier(ConcreteTemplate):
    key = stubs.barrier
    cases = [signature(types.none)]


register_global(stubs.barrier, types.Function(Barrier))


def _dim3_template(stub):
    class Dim3Attrs(AttributeTemplate):
        key = types.Module(stub)

        def resolve_x(self, mod):
            return INDEX

        resolve_y = resolve_z = resolve_x

    Dim3Attrs.__name__ = f"Dim3Attrs_{stub._name}"
    return Dim3Attrs


for _stub in (stubs.thread_idx, stubs.block_idx, stubs.block_dim, stubs.grid_dim):
    register_attr(_dim3_template(_stub))
    register_global(_stub, types.Module(_stub))


# math functions Numba's mathdecl does not type for us
@register
class MathFmod(ConcreteTemplate):
    key = math.fmod
    cases = [signature(types.float32, types.float32, types.float32),
             signature(types.float64, types.float64, types.float64),
             signature(types.float64, types.int64, types.int64)]


register_global(math.fmod, types.Function(MathFmod))


@register
class MathCbrt(ConcreteTemplate):
    key = getattr(math, "cbrt", None)
    cases = [signature(types.float32, types.float32),
             signature(types.float64, types.float64),
             signature(types.float64, types.int64)]


if MathCbrt.key is not None:
    register_global(math.cbrt, types.Function(MathCbrt))


# ------------------------------------------------ math functions Numba does not type
def _float_result(args):
    """float32 when every argument is float32, else float64 (ints promote, as in math)."""
    args = [types.unliteral(a) for a in args]
    if not all(isinstance(a, (types.Integer, types.Float)) and not isinstance(a, types.Boolean)
               for a in args):
        return None
    return types.float32 if all(a == types.float32 for a in args) else types.float64


@register
class MathRemainder(AbstractTemplate):
    """``math.remainder(x, y)``: IEEE 754 remainder (NaN where Python raises)."""

    key = math.remainder

    def generic(self, args, kws):
        if kws or len(args) != 2:
            return None
        ft = _float_result(args)
        return None if ft is None else signature(ft, ft, ft)


@register
class MathModf(AbstractTemplate):
    """``math.modf(x)``: (fractional part, integral part), both floats with x's sign."""

    key = math.modf

    def generic(self, args, kws):
        if kws or len(args) != 1:
            return None
        ft = _float_result(args)
        return None if ft is None else signature(types.UniTuple(ft, 2), ft)


register_global(math.remainder, types.Function(MathRemainder))
register_global(math.modf, types.Function(MathModf))
