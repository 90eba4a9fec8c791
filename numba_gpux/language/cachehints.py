"""Loads and stores with a cache hint: ``gpux.cache_hints.ldcs(array, i)`` and co.

The hints are PTX's cache operators, which numba.cuda exposes under these names:
loads ``ldca`` (cache at all levels), ``ldcg`` (cache globally, not in L1),
``ldcs`` (streaming: likely read once), ``ldlu`` (last use), ``ldcv`` (do not
cache: fetch again); stores ``stcg``, ``stcs``, ``stwb`` (write back), ``stwt``
(write through).  Each takes an array of integers or floats (or a pointer to
one) and an index (an int, or a tuple of one int per dimension); a store also
takes the value, converted to the element type.

A hint never changes a result.  Each access is the portable intrinsic
``__gpux_ld_<hint>_b<bits>`` / ``__gpux_st_<hint>_b<bits>`` on the element's bits;
its shared definition is a plain load or store, which a target whose memory
instructions take the hint overrides in its overlay registry.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.core.errors import TypingError
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import AbstractTemplate, Registry, signature

from .intrinsics import (
    CACHE_HINT_WIDTHS as WIDTHS, CACHE_HINTS as _WHAT, LOAD_HINTS, STORE_HINTS, call,
    element_pointer, load_name, store_name,
)
from .stubs import Stub

__all__ = [f"ld{h}" for h in LOAD_HINTS] + [f"st{h}" for h in STORE_HINTS] + [
    "typing_registry", "lowering_registry"]

_PTR = ir.PointerType()

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.cachehints")


def _index_type(name, ary, idx):
    """The index's type for *ary*, as numba.cuda words its errors."""
    idx = types.unliteral(idx)
    if isinstance(ary, types.CPointer):
        if isinstance(idx, types.Integer):
            return types.intp
        raise TypingError(f"{name}: {idx} is not a valid index (a pointer takes one integer)")
    if isinstance(idx, types.Integer):
        if ary.ndim != 1:
            raise TypingError(f"{name}: Expected {ary.ndim} indices, got a scalar")
        return types.intp
    if isinstance(idx, types.BaseTuple):
        if len(idx) != ary.ndim:
            raise TypingError(f"{name}: Expected {ary.ndim} indices, got {len(idx)}")
        bad = [t for t in idx if not isinstance(t, types.Integer)]
        if bad:
            raise TypingError(f"{name}: {bad[0]} is not a valid index")
        return types.UniTuple(types.intp, ary.ndim)
    raise TypingError(f"{name}: {idx} is not a valid index")


def _element_type(name, ary):
    if not isinstance(ary, (types.Array, types.CPointer)):
        raise TypingError(f"{name}: the first argument must be an array or a pointer, not {ary}")
    dt = ary.dtype
    if isinstance(dt, types.Boolean) or not isinstance(dt, (types.Integer, types.Float)) \
            or dt.bitwidth not in WIDTHS:
        raise TypingError(f"{name} requires array of integer or float type, not {dt}")
    return dt


def _template(stub, store: bool):
    name = stub._name

    class T(AbstractTemplate):
        key = stub

        def generic(self, args, kws):
            want = 3 if store else 2
            if kws or len(args) != want:
                raise TypingError(f"{name}(array, index{', value' if store else ''}) takes "
                                  f"{want} positional arguments")
            ary = args[0]
            dt = _element_type(name, ary)
            idx = _index_type(name, ary, args[1])
            if store:
                if isinstance(ary, types.Array) and not ary.mutable:
                    raise TypingError(f"{name}: the array is read-only")
                return signature(types.none, ary, idx, dt)
            return signature(dt, ary, idx)

    T.__name__ = f"CacheHint_{name}"
    typing_registry.register(T)
    typing_registry.register_global(stub, types.Function(T))


def _pointer(context, builder, aryty, ary, idxty, idx):
    if isinstance(aryty, types.CPointer):
        return builder.gep(ary, [context.cast(builder, idx, idxty, types.intp)])
    return element_pointer(context, builder, aryty, ary, idxty, idx,
                           boundscheck=context.enable_boundscheck)


def _lower_load(hint):
    def impl(context, builder, sig, args):
        aryty, idxty = sig.args
        ptr = _pointer(context, builder, aryty, args[0], idxty, args[1])
        llty = context.get_value_type(aryty.dtype)
        bits = call(builder, load_name(hint, aryty.dtype.bitwidth), builder.bitcast(ptr, _PTR))
        return builder.bitcast(bits, llty) if isinstance(aryty.dtype, types.Float) else bits
    return impl


def _lower_store(hint):
    def impl(context, builder, sig, args):
        aryty, idxty, valty = sig.args
        ptr = _pointer(context, builder, aryty, args[0], idxty, args[1])
        w = aryty.dtype.bitwidth
        val = context.cast(builder, args[2], valty, aryty.dtype)
        if isinstance(aryty.dtype, types.Float):
            val = builder.bitcast(val, ir.IntType(w))
        call(builder, store_name(hint, w), builder.bitcast(ptr, _PTR), val)
        return context.get_dummy_value()
    return impl


def _make(prefix, hint, store):
    stub = Stub(f"{prefix}{hint}", f"{prefix}{hint}(array, index{', value' if store else ''}): "
                f"{'store' if store else 'load'} one element, {_WHAT[hint]}.")
    _template(stub, store)
    for arr in (types.Array, types.CPointer):
        if store:
            lowering_registry.lower(stub, arr, types.Any, types.Any)(_lower_store(hint))
        else:
            lowering_registry.lower(stub, arr, types.Any)(_lower_load(hint))
    return stub


ldca, ldcg, ldcs, ldlu, ldcv = (_make("ld", h, False) for h in LOAD_HINTS)
stcg, stcs, stwb, stwt = (_make("st", h, True) for h in STORE_HINTS)
