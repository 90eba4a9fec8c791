"""Arithmetic on the CUDA vector types (``float32x4 + float32x4``, ``2 * v``, ``-v``).

numba.cuda has no operators on vector types; numba-cuda-mlir has, and code written for
it uses them.  Both dialects get them here (an operation numba.cuda rejects is one its
code never contains).  The rules:

- ``+ - * / // %`` (and their in-place forms) apply element by element to two vectors
  of the same length, or to a vector and a scalar, which is broadcast to every element,
  on either side;
- the result's element type is the two element types (or element type and scalar type)
  unified as Numba unifies scalars (``float32x4 * 2`` is a ``float64x4``, as
  ``float32 * int64`` is a ``float64``); ``/`` of integers gives floats of at least
  32 bits, as in numba-cuda-mlir; a result type without a vector type (``bool``) is a
  typing error;
- ``-v`` and ``abs(v)`` keep the vector's type.

Each element is computed by Numba's own scalar operation on that element type, so
integer division and ``%`` follow Python's rules (floor, sign of the divisor) and
division by zero follows the kernel's error model, exactly as for scalars.  Nothing
here names a target: the vectors are structs of their elements, which every target
lowers.

:func:`register` is called once by :mod:`numba_gpux.cuda.vector_types` with its
vector type class and its table of types.
"""

from __future__ import annotations

import operator

from numba.core import cgutils, types
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import AbstractTemplate, Registry, signature

__all__ = ["register", "BINARY_OPERATORS", "UNARY_OPERATORS"]

#: the binary operators vectors take, element by element
BINARY_OPERATORS = (operator.add, operator.iadd, operator.sub, operator.isub,
                    operator.mul, operator.imul, operator.truediv, operator.itruediv,
                    operator.floordiv, operator.ifloordiv, operator.mod, operator.imod)
#: the unary operations vectors take (the result has the operand's type)
UNARY_OPERATORS = (operator.neg, operator.pos, abs)

#: the in-place operators' elements are computed by the plain ones (vectors are values)
_PLAIN = {operator.iadd: operator.add, operator.isub: operator.sub, operator.imul: operator.mul,
          operator.itruediv: operator.truediv, operator.ifloordiv: operator.floordiv,
          operator.imod: operator.mod}
_SCALARS = (types.Integer, types.Float, types.Boolean)

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.cuda.vector_arith")


def _result_element(context, op, a, b):
    """The element type of ``a op b`` for element (or scalar) types *a* and *b*, or None."""
    elem = context.unify_types(types.unliteral(a), types.unliteral(b))
    if elem is None:
        return None
    if op in (operator.truediv, operator.itruediv) and isinstance(elem, (types.Integer,
                                                                         types.Boolean)):
        width = max(getattr(elem, "bitwidth", 8), 32)
        elem = types.float64 if width > 32 else types.float32
    return elem


def _binary_template(op, vector_class, table):
    def generic(self, args, kws):
        if kws or len(args) != 2:
            return None
        lhs, rhs = args
        lv, rv = isinstance(lhs, vector_class), isinstance(rhs, vector_class)
        if lv and rv:
            if lhs.num_elements != rhs.num_elements:
                return None
            n, a, b = lhs.num_elements, lhs.base_type, rhs.base_type
        elif lv and isinstance(rhs, _SCALARS):
            n, a, b = lhs.num_elements, lhs.base_type, rhs
        elif rv and isinstance(lhs, _SCALARS):
            n, a, b = rhs.num_elements, lhs, rhs.base_type
        else:
            return None
        elem = _result_element(self.context, op, a, b)
        result = table.get(f"{elem}x{n}") if elem is not None else None
        if result is None:
            return None  # Numba's message: no implementation for these operand types
        return signature(result, types.unliteral(lhs), types.unliteral(rhs))

    return type(f"VectorArith_{op.__name__}", (AbstractTemplate,),
                {"key": op, "generic": generic})


def _unary_template(op, vector_class):
    def generic(self, args, kws):
        if kws or len(args) != 1 or not isinstance(args[0], vector_class):
            return None
        return signature(args[0], args[0])

    return type(f"VectorArith_{getattr(op, '__name__', 'op')}", (AbstractTemplate,),
                {"key": op, "generic": generic})


def _elements(context, builder, ty, value, n, elem, vector_class):
    """The *n* elements of *value* (a vector, or a scalar broadcast) cast to *elem*."""
    if isinstance(ty, vector_class):
        proxy = cgutils.create_struct_proxy(ty)(context, builder, value=value)
        return [context.cast(builder, getattr(proxy, a), ty.base_type, elem)
                for a in ty.attr_names]
    one = context.cast(builder, value, ty, elem)
    return [one] * n


def _build(context, builder, vty, values):
    out = cgutils.create_struct_proxy(vty)(context, builder)
    for a, v in zip(vty.attr_names, values):
        setattr(out, a, v)
    return out._getvalue()


def _binary_lowering(op, vector_class):
    def impl(context, builder, sig, args):
        vty = sig.return_type
        elem, n = vty.base_type, vty.num_elements
        lhs = _elements(context, builder, sig.args[0], args[0], n, elem, vector_class)
        rhs = _elements(context, builder, sig.args[1], args[1], n, elem, vector_class)
        scalar = context.get_function(_PLAIN.get(op, op), signature(elem, elem, elem))
        return _build(context, builder, vty, [scalar(builder, (a, b))
                                              for a, b in zip(lhs, rhs)])

    return impl


def _unary_lowering(op, vector_class):
    def impl(context, builder, sig, args):
        vty = sig.return_type
        elem = vty.base_type
        scalar = context.get_function(op, signature(elem, elem))
        values = _elements(context, builder, vty, args[0], vty.num_elements, elem,
                           vector_class)
        return _build(context, builder, vty, [scalar(builder, (v,)) for v in values])

    return impl


def register(vector_class, table: dict) -> None:
    """Give the vector types of class *vector_class* (every one of them is in *table*,
    by name: ``float32x4``) their arithmetic, in the shared context."""
    from ..context import add_registries

    for op in BINARY_OPERATORS:
        typing_registry.register_global(op, types.Function(
            _binary_template(op, vector_class, table)))
        impl = _binary_lowering(op, vector_class)
        for sig in ((vector_class, vector_class), (vector_class, types.Number),
                    (types.Number, vector_class), (vector_class, types.Boolean),
                    (types.Boolean, vector_class)):
            lowering_registry.lower(op, *sig)(impl)
    for op in UNARY_OPERATORS:
        typing_registry.register_global(op, types.Function(_unary_template(op, vector_class)))
        lowering_registry.lower(op, vector_class)(_unary_lowering(op, vector_class))
    add_registries(typing_registry, lowering_registry)
