"""NumPy values in kernels where Numba's CPU typing stops short of what GPU code writes.

- ``complex64(re, im)`` and ``complex128(re, im)``: the two-argument constructors of
  the Numba (or NumPy) complex types, as ``complex(re, im)`` is for Python's.  Numba
  types a number class called with one argument only.
- A dtype known at compile time (``np.dtype(...)`` captured from a global or closure
  variable, or an array's ``.dtype``) answers its static attributes (``itemsize``,
  ``alignment``, ``names``, ``num``, ``isnative``...) as constants: the value NumPy
  gives on the host.  Numba itself answers only ``type`` and ``kind``.
- ``ary.ravel()`` of a C-contiguous array is a one-dimensional view of the same
  memory (no copy); Numba's implementation returns it from a helper function, which
  code without a runtime allocator cannot.  A ravel that must copy (an array of
  layout ``A`` or ``F``) is Numba's ``flatten``, which allocates through the device
  runtime (language/heap.py).

Target-neutral: every value here is a constant, a view of memory the kernel has, or
(a copying ravel) an array of the device runtime.
"""

from __future__ import annotations

import operator

import numpy as np
from numba.core import cgutils, types
from numba.core.imputils import Registry as LoweringRegistry, impl_ret_borrowed
from numba.core.typing.templates import AbstractTemplate, AttributeTemplate, Registry, signature

__all__ = ["typing_registry", "lowering_registry", "superseding_registry",
           "DTYPE_ATTRIBUTES"]

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.numpy_extras")
#: implementations that replace Numba's builtin ones (the context installs this
#: registry after Numba's, so that for the same signature these are chosen)
superseding_registry = LoweringRegistry("numba_gpux.numpy_extras.superseding")

_NUMBERS = (types.Integer, types.Float, types.Boolean)


# ------------------------------------------------------------ complex64(re, im)
def _complex_ctor(cls_type):
    class ComplexFromParts(AbstractTemplate):
        key = types.NumberClass(cls_type)

        def generic(self, args, kws):
            if kws or len(args) != 2 or not all(isinstance(a, _NUMBERS) for a in args):
                return None
            return signature(cls_type, *(types.unliteral(a) for a in args))

    ComplexFromParts.__name__ = f"ComplexFromParts_{cls_type}"
    return ComplexFromParts


for _c in (types.complex64, types.complex128):
    typing_registry.register(_complex_ctor(_c))


@lowering_registry.lower(types.NumberClass, types.Number, types.Number)
@lowering_registry.lower(types.NumberClass, types.Boolean, types.Number)
@lowering_registry.lower(types.NumberClass, types.Number, types.Boolean)
@lowering_registry.lower(types.NumberClass, types.Boolean, types.Boolean)
def _complex_from_parts(context, builder, sig, args):
    cty = sig.return_type
    part = cty.underlying_float
    out = context.make_complex(builder, cty)
    out.real = context.cast(builder, args[0], sig.args[0], part)
    out.imag = context.cast(builder, args[1], sig.args[1], part)
    return out._getvalue()


# ------------------------------------------------------------ dtype attributes
#: the attributes of a NumPy dtype a kernel may read: each is the value NumPy gives
DTYPE_ATTRIBUTES = ("itemsize", "alignment", "num", "isbuiltin", "hasobject",
                    "isalignedstruct", "isnative", "char", "name", "str", "byteorder",
                    "names", "shape", "ndim", "base")


def _numpy_dtype(nbtype):
    from numba.np.numpy_support import as_dtype

    try:
        return as_dtype(nbtype)
    except Exception:  # a Numba type NumPy has no dtype for
        return None


def _literal_type(value):
    """The Numba type standing for the constant *value*, or None if it has none."""
    if value is None:
        return types.none
    if isinstance(value, (bool, np.bool_)):
        return types.BooleanLiteral(bool(value))
    if isinstance(value, (int, np.integer)):
        return types.IntegerLiteral(int(value))
    if isinstance(value, str):
        return types.StringLiteral(value)
    if isinstance(value, tuple):
        items = [_literal_type(v) for v in value]
        return None if any(t is None for t in items) else types.Tuple(items)
    return None


def _dtype_value(nbtype, attr):
    """(has it, value) of the dtype attribute *attr* of the dtype of *nbtype*."""
    npdt = _numpy_dtype(nbtype)
    if npdt is None or attr not in DTYPE_ATTRIBUTES:
        return False, None
    return True, getattr(npdt, attr)


@typing_registry.register_attr
class _DTypeAttributes(AttributeTemplate):
    key = types.DType

    def generic_resolve(self, ty, attr):
        has, value = _dtype_value(ty.dtype, attr)
        if not has:
            return None
        if attr == "base":
            from numba.np.numpy_support import from_dtype

            try:
                return types.DType(from_dtype(value))
            except Exception:
                return None
        return _literal_type(value)


def _constant(context, builder, ty, value):
    if isinstance(ty, types.BaseTuple):
        items = [_constant(context, builder, t, v) for t, v in zip(ty.types, value)]
        return context.make_tuple(builder, ty, items)
    if isinstance(ty, (types.IntegerLiteral, types.BooleanLiteral)):
        return context.get_constant(types.unliteral(ty), ty.literal_value)
    return context.get_dummy_value()  # None, string literals, dtypes: only in the types


@lowering_registry.lower_getattr_generic(types.DType)
def _dtype_attribute(context, builder, ty, value, attr):
    has, found = _dtype_value(ty.dtype, attr)
    resty = _literal_type(found) if attr != "base" else None
    if resty is None:
        return context.get_dummy_value()
    return _constant(context, builder, resty, found)


@lowering_registry.lower_cast(types.NumberClass, types.DType)
def _number_class_as_dtype(context, builder, fromty, toty, value):
    # np.int64 read from the module where the typing made it the dtype (Numba's
    # RewriteArrayOfConsts writes np.array([x], dtype=t) so): both are types only,
    # no value; Numba's CPU target lowers no module attribute and casts nothing
    return context.get_dummy_value()


# ------------------------------------------------------------ ravel
@superseding_registry.lower("array.ravel", types.Array)
def _ravel_view(context, builder, sig, args):
    (aryty,), (value,) = sig.args, args
    if aryty.layout != "C":
        # not known to be C-contiguous: a copy in C order, as NumPy's, made by Numba
        from numba.np.arrayobj import array_ravel

        return array_ravel(context, builder, sig, args)
    src = context.make_array(aryty)(context, builder, value)
    resty = sig.return_type
    out = context.make_array(resty)(context, builder)
    intp = context.get_value_type(types.intp)
    nitems = src.nitems
    context.populate_array(
        out, data=src.data,
        shape=cgutils.pack_array(builder, [nitems], ty=intp),
        strides=cgutils.pack_array(builder, [src.itemsize], ty=intp),
        itemsize=src.itemsize, meminfo=src.meminfo, parent=src.parent)
    # a view shares the array's memory: one more reference to it where the runtime counts
    return impl_ret_borrowed(context, builder, resty, out._getvalue())


# ------------------------------------------------------------ float32 division, fastmath
@superseding_registry.lower(operator.truediv, types.float32, types.float32)
@superseding_registry.lower(operator.itruediv, types.float32, types.float32)
def _float32_division(context, builder, sig, args):
    """With ``fastmath``, float32 division is the fast division, with no check for a zero
    divisor (so never a ZeroDivisionError, also with ``debug=True``), as numba.cuda's
    fast ``__fdividef``; else Numba's, which checks where the error model says.  (The
    numba.cuda facade's kernels carry the ``contract`` flag alone without fastmath:
    that fuses multiply-adds and keeps the checked division.)"""
    flags = getattr(context.fastmath, "flags", ())  # (Numba's FastMathOptions; () without)
    if "fast" in flags or "arcp" in flags:
        return builder.fdiv(*args, flags=sorted(flags))
    from numba.cpython.numbers import real_div_impl

    return real_div_impl(context, builder, sig, args)
