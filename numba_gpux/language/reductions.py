"""Whole-array minimum and maximum in kernels: ``np.min``/``np.max`` (and ``amin``,
``amax``, the array methods), ``np.nanmin``/``np.nanmax``, ``np.ptp`` and
``np.count_nonzero``.

Numba's own versions read each element through ``take`` on a zero-dimensional
view, which returns a new array and needs an allocator that kernels do not have.
These walk the array's elements (``a.flat``: any layout, any number of
dimensions) and return a scalar, with NumPy's results: a NaN anywhere makes
``min``/``max`` NaN, the ``nan`` versions skip NaNs (NaN if nothing else is
left), complex numbers compare by real part then imaginary part, and an empty
array raises ``ValueError``.  Only the whole-array form is provided (no
``axis``, ``out``, ``initial`` or ``where``): those return arrays.  The methods
``a.min(...)``, ``a.argmax(axis=k)``, ``a.cumsum(...)`` called with arguments are
the NumPy functions of the array (``np.argmax(a, axis=k)``), so that their kernel
overloads apply.

``argmin``/``argmax`` likewise (the flat index of the first extreme, or of the
first NaN).  The rest of the whole-array reductions (``sum``, ``prod``, ``mean``,
``var``, ``std``, ``all``, ``any``, ``nansum``, ``nanmean`` ...) are Numba's,
which allocate nothing.  :func:`register` installs the overloads for a target
name; the shared context calls it as it is built.
"""

from __future__ import annotations

import functools
import inspect
import math

import numpy as np
from numba.core import types
from numba.core.extending import overload, register_jitable
from numba.core.imputils import Registry
from numba.core.typing.templates import AttributeTemplate, bound_function, signature

__all__ = ["register", "array_method", "lowering_registry", "METHODS"]

_EMPTY = "zero-size array to reduction operation {} which has no identity"


def _kind(a):
    """'f' (real floating point), 'c' (complex), 'i' (integer or boolean), or None
    for arrays these overloads do not take (and for anything that is not an array)."""
    if not isinstance(a, types.Array):
        return None
    dt = a.dtype
    if isinstance(dt, types.Float):
        return "f"
    if isinstance(dt, types.Complex):
        return "c"
    if isinstance(dt, (types.Integer, types.Boolean)):
        return "i"
    return None


def _no_options(*extra) -> bool:
    """Whether the optional arguments a call passed are all left out."""
    return all(x is None or isinstance(x, (types.NoneType, types.Omitted)) for x in extra)


@register_jitable
def _complex_greater(v, m):
    return v.real > m.real or (v.real == m.real and v.imag > m.imag)


@register_jitable
def _complex_less(v, m):
    return v.real < m.real or (v.real == m.real and v.imag < m.imag)


@register_jitable
def _real_greater(v, m):
    return v > m


@register_jitable
def _real_less(v, m):
    return v < m


@register_jitable
def _never_nan(v):
    return False


@register_jitable
def _real_nan(v):
    return math.isnan(v)


@register_jitable
def _complex_nan(v):
    return math.isnan(v.real) or math.isnan(v.imag)


def _order(kind: str, greater: bool):
    """(is-NaN test, beats test) for elements of *kind*: complex numbers are ordered by
    real part, then imaginary part, and a NaN in either part is NaN."""
    isnan = {"i": _never_nan, "f": _real_nan, "c": _complex_nan}[kind]
    if kind == "c":
        return isnan, _complex_greater if greater else _complex_less
    return isnan, _real_greater if greater else _real_less


def _extreme(kind: str, greater: bool, skip_nan: bool, what: str):
    """The implementation of min/max (``greater``: max) over an array of *kind*."""
    msg = _EMPTY.format(what)
    isnan, beats = _order(kind, greater)

    if skip_nan:
        def impl(a):
            if a.size == 0:
                raise ValueError(msg)
            m = a.flat[0]
            for v in a.flat:  # the first number, then numbers only
                if isnan(v):
                    continue
                if isnan(m) or beats(v, m):
                    m = v
            return m
    else:
        def impl(a):
            if a.size == 0:
                raise ValueError(msg)
            m = a.flat[0]
            for v in a.flat:
                if isnan(v):
                    return v
                if beats(v, m):
                    m = v
            return m
    return impl


def _arg_extreme(kind: str, greater: bool):
    """The implementation of argmin/argmax: the flat (C-order) index of the first
    extreme element, or of the first NaN."""
    msg = f"attempt to get {'argmax' if greater else 'argmin'} of an empty sequence"
    isnan, beats = _order(kind, greater)

    def impl(a):
        if a.size == 0:
            raise ValueError(msg)
        m = a.flat[0]
        k = 0
        i = 0
        for v in a.flat:
            if isnan(v):
                return i
            if beats(v, m):
                m = v
                k = i
            i += 1
        return k
    return impl


@functools.lru_cache(maxsize=None)
def _arg_body(kind: str, greater: bool):
    return register_jitable(_arg_extreme(kind, greater))


@functools.lru_cache(maxsize=None)
def _body(kind: str, greater: bool, skip_nan: bool, what: str):
    """The min/max loop as a function that kernels and overloads can call."""
    return register_jitable(_extreme(kind, greater, skip_nan, what))


def register(target: str) -> None:
    """Install the overloads for the Numba target named *target* (once per process)."""
    if target in _registered:
        return
    _registered.add(target)
    # every loop made now, so that each is a registered global before a context refresh
    for kind in "fic":
        for greater in (False, True):
            _arg_body(kind, greater)
            for skip_nan in (False, True):
                _body(kind, greater, skip_nan, "maximum" if greater else "minimum")

    def extreme(greater: bool, skip_nan: bool):
        what = "maximum" if greater else "minimum"

        def typer(a, axis=None, out=None, keepdims=None, initial=None, where=None):
            kind = _kind(a)
            if kind is None or not _no_options(axis, out, keepdims, initial, where):
                return None
            body = _body(kind, greater, skip_nan, what)

            def impl(a, axis=None, out=None, keepdims=None, initial=None, where=None):
                return body(a)
            return impl
        return typer

    for fn in (np.max, np.amax):
        overload(fn, target=target)(extreme(True, False))
    for fn in (np.min, np.amin):
        overload(fn, target=target)(extreme(False, False))
    overload(np.nanmax, target=target)(extreme(True, True))
    overload(np.nanmin, target=target)(extreme(False, True))

    def arg_extreme(greater: bool):
        def typer(a, axis=None, out=None, keepdims=False):
            kind = _kind(a)
            kept = getattr(keepdims, "literal_value", keepdims)
            if kind is None or not _no_options(axis, out) or \
                    not (kept is False or isinstance(keepdims, types.Omitted)):
                return None
            body = _arg_body(kind, greater)

            def impl(a, axis=None, out=None, keepdims=False):
                return body(a)
            return impl
        return typer

    overload(np.argmax, target=target)(arg_extreme(True))
    overload(np.argmin, target=target)(arg_extreme(False))

    @overload(np.ptp, target=target)
    def _ptp(a, axis=None, out=None, keepdims=None):
        kind = _kind(a)
        # NumPy's ptp subtracts, which booleans do not do
        if kind is None or isinstance(a.dtype, types.Boolean) or \
                not _no_options(axis, out, keepdims):
            return None
        hi = _body(kind, True, False, "maximum")
        lo = _body(kind, False, False, "minimum")

        def impl(a, axis=None, out=None, keepdims=None):
            return hi(a) - lo(a)
        return impl

    @overload(np.count_nonzero, target=target)
    def _count_nonzero(a, axis=None, keepdims=False):
        kept = getattr(keepdims, "literal_value", keepdims)
        if not isinstance(a, types.Array) or not _no_options(axis) or \
                not (kept is False or isinstance(keepdims, types.Omitted)):
            return None

        def impl(a, axis=None, keepdims=False):
            n = 0
            for v in a.flat:
                if v:
                    n += 1
            return n
        return impl


_registered: set = set()


# --------------------------------------------------------------------------- methods
# a.min(), a.max(), a.argmin(), a.argmax().  Numba types these with overload_method
# templates keyed by the array type, and their lowering is found by that key alone,
# whichever target registered it: a second overload_method for this target would
# share the key with Numba's, and one of the two lowerings would serve both.  These
# have keys of their own; the typing context consults them before Numba's templates.

_METHODS = {"min": (False, False), "max": (True, False),
            "argmin": (False, True), "argmax": (True, True)}


#: methods that, called with arguments (``axis=`` ...), are the NumPy function of the
#: array, typed and lowered as that function: its kernel overloads then apply
#: (language/arrayaxis.py: Numba's methods word their axis checks with f-strings and
#: check transposes with sets).  ``cumsum`` is always the function.
_AS_FUNCTION = {"min": np.min, "max": np.max, "argmin": np.argmin, "argmax": np.argmax,
                "cumsum": np.cumsum}

#: the array methods :func:`array_method` types
METHODS = frozenset(_METHODS) | frozenset(_AS_FUNCTION)


def _method_body(attr: str, ary):
    greater, arg = _METHODS[attr]
    kind = _kind(ary)
    if kind is None:
        return None
    if arg:
        return _arg_body(kind, greater)
    return _body(kind, greater, False, "maximum" if greater else "minimum")


def _function_signature(context, attr, ary, args, kws):
    """``ary.attr(*args, **kws)`` typed as ``np.attr(ary, *args, **kws)``: the function's
    signature without the array, with its Python signature for the keywords."""
    fnty = context.resolve_value_type(_AS_FUNCTION[attr])
    sig = context.resolve_function_type(fnty, (ary, *args), kws)
    if sig is None:
        return None
    out = signature(sig.return_type, *sig.args[1:])
    if sig.pysig is not None:
        out = out.replace(pysig=inspect.Signature(list(sig.pysig.parameters.values())[1:]))
    return out


def _method_signature(context, attr, ary, args, kws):
    if args or kws or attr not in _METHODS:
        return _function_signature(context, attr, ary, args, kws)
    body = _method_body(attr, ary)
    sig = context.resolve_function_type(context.resolve_value_type(body), (ary,), {})
    return None if sig is None else signature(sig.return_type)


class _ArrayMethods(AttributeTemplate):
    key = types.Array

    @bound_function("numba_gpux.array.min")
    def resolve_min(self, ary, args, kws):
        return _method_signature(self.context, "min", ary, args, kws)

    @bound_function("numba_gpux.array.max")
    def resolve_max(self, ary, args, kws):
        return _method_signature(self.context, "max", ary, args, kws)

    @bound_function("numba_gpux.array.argmin")
    def resolve_argmin(self, ary, args, kws):
        return _method_signature(self.context, "argmin", ary, args, kws)

    @bound_function("numba_gpux.array.argmax")
    def resolve_argmax(self, ary, args, kws):
        return _method_signature(self.context, "argmax", ary, args, kws)

    @bound_function("numba_gpux.array.cumsum")
    def resolve_cumsum(self, ary, args, kws):
        return _method_signature(self.context, "cumsum", ary, args, kws)


def array_method(context, typ, attr):
    """The type of ``typ.attr`` for the methods above, or None (Numba's templates then)."""
    if attr not in METHODS or not isinstance(typ, types.Array) or _kind(typ) is None:
        return None
    return _ArrayMethods(context).resolve(typ, attr)


lowering_registry = Registry("numba_gpux.language.reductions")


def _lower_method(attr):
    def lower(context, builder, sig, args):
        tyctx = context.typing_context
        fnty = tyctx.resolve_value_type(_method_body(attr, sig.args[0]))
        fsig = tyctx.resolve_function_type(fnty, sig.args, {})
        call = context.get_function(fnty, fsig)
        context.add_linking_libs(getattr(call, "libs", ()))
        return call(builder, args)
    return lower


def _lower_function(attr):
    def lower(context, builder, sig, args):
        tyctx = context.typing_context
        fnty = tyctx.resolve_value_type(_AS_FUNCTION[attr])
        fsig = tyctx.resolve_function_type(fnty, sig.args, {})
        return context.get_function(fnty, fsig)(builder, args)
    return lower


for _attr in _METHODS:
    lowering_registry.lower(f"numba_gpux.array.{_attr}", types.Array)(_lower_method(_attr))
for _attr in _AS_FUNCTION:
    lowering_registry.lower(f"numba_gpux.array.{_attr}", types.Array,
                            types.VarArg(types.Any))(_lower_function(_attr))
