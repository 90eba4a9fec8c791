"""numba-cuda-mlir's ``cuda.shared.array``: shapes known only at run time, too.

numba.cuda (and so :mod:`numba_gpux.cuda`) takes a shared array's shape only as a
constant; a variable is a typing error.  numba-cuda-mlir also takes a shape computed at
run time (``cuda.shared.array(n, dtype=float32)`` with ``n`` read from an array), and
the array is carved out of the launch's dynamic shared memory (``kernel[grid, block,
stream, shared_bytes]``): each such array starts where the previous one ended (aligned
for its element type), in the order the work-item declares them, also after control
flow; a ``shape=0`` array is the rest of the dynamic memory after those (successive
``shape=0`` arrays alias, as documented).  The launch must give enough bytes for all
of them; nothing checks that.

This module is that ``shared`` namespace for :mod:`numba_gpux.cuda.mlir_dialect`.  A
constant shape is exactly the facade's static array; a run-time shape and ``shape=0``
are views of ``__gpux_dynamic_shared()`` at a running byte offset, kept per function in
a private variable (as numba-cuda-mlir keeps it): a device function's run-time-shaped
arrays start at offset 0 of the dynamic memory again, unless it is inlined into its
caller's IR.  Target-neutral: the portable dynamic-shared-memory intrinsics only.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.core.errors import TypingError
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import AbstractTemplate, Registry, signature

from ..context import add_registries
from ..language import memory as _memory
from ..language.intrinsics import call
from ..language.stubs import Namespace, Stub

__all__ = ["shared", "shared_array"]

I64 = ir.IntType(64)

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.cuda.mlir_shared")


shared_array = Stub("shared.array", "shared.array(shape, dtype, alignment=None, alignas=None): "
                    "an array in shared memory; shape constant (a static array, as "
                    "numba.cuda's) or known only at run time (carved out of the launch's "
                    "dynamic shared memory, numba-cuda-mlir's form); shape=0: the rest of the "
                    "dynamic shared memory.")
shared = Namespace("shared", "Shared memory (numba-cuda-mlir's forms).",
                    {"array": shared_array})
typing_registry.register_global(shared, types.Module(shared))

_FACADE_TYPER = _memory._array_typer("shared.array", True)


def _is_literal(shape) -> bool:
    """Whether *shape* is a constant shape (an int or a non-empty tuple of them)."""
    return isinstance(shape, types.IntegerLiteral) or (
        isinstance(shape, types.BaseTuple) and len(shape) > 0
        and all(isinstance(s, types.IntegerLiteral) for s in shape))


def _runtime_shape(shape):
    """The number of dimensions of a shape given by integer values (at least one of
    them not a constant), or None."""
    if isinstance(shape, types.Integer):
        return 1
    if isinstance(shape, types.BaseTuple) and 1 <= len(shape) <= 3 and \
            all(isinstance(s, types.Integer) for s in shape):
        return len(shape)
    return None


def _given(t) -> bool:
    return t is not None and not isinstance(t, (types.NoneType, types.Omitted))


class _SharedArray(AbstractTemplate):
    key = shared_array
    prefer_literal = True

    def generic(self, args, kws):
        shape, dtype, alignment, alignas = _memory._bind(
            "shared.array", args, kws, ["shape", "dtype"], ["alignment", "alignas"])
        if _given(alignment) and _given(alignas):
            raise TypingError("shared.array: give alignment= (numba.cuda's name) or alignas= "
                              "(numba-cuda-mlir's), not both")
        align = alignas if _given(alignas) else alignment
        if _is_literal(shape):
            ret = _FACADE_TYPER((shape, dtype) + ((align,) if align is not None else ()),
                                {}).return_type
        else:
            ndim = _runtime_shape(shape)
            if ndim is None:
                raise TypingError(f"shared.array: shape must be an int or a tuple of 1 to 3 "
                                  f"ints (constants, or values known at run time), not {shape}")
            _memory._alignment_of("shared.array", align)
            ret = types.Array(_memory._dtype_of("shared.array", dtype), ndim, "C")
        omitted = [types.Omitted(None) if a is None else a for a in (alignment, alignas)]
        return signature(ret, shape, dtype, *omitted).replace(
            pysig=_memory._pysig("shape", "dtype", optional=("alignment", "alignas")))


typing_registry.register(_SharedArray)
typing_registry.register_global(shared_array, types.Function(_SharedArray))

#: the private variable holding a function's running offset into dynamic shared memory
_OFFSET = "gpux.dynamic_shared.offset"


def _offset_slot(builder):
    fn = builder.function
    slot = getattr(fn, "_gpux_dynamic_shared_offset", None)
    if slot is None:
        with builder.goto_entry_block():
            slot = builder.alloca(I64, name=_OFFSET)
            builder.store(ir.Constant(I64, 0), slot)
        fn._gpux_dynamic_shared_offset = slot
    return slot


def _align_up(builder, value, align: int):
    mask = ir.Constant(I64, align - 1)
    return builder.and_(builder.add(value, mask), ir.Constant(I64, ~(align - 1)))


def _dims(context, builder, shape_ty, shape_val) -> list:
    if isinstance(shape_ty, types.BaseTuple):
        items = [builder.extract_value(shape_val, i) for i in range(len(shape_ty))]
        tys = list(shape_ty)
    else:
        items, tys = [shape_val], [shape_ty]
    return [context.cast(builder, v, t, types.intp) for v, t in zip(items, tys)]


def _alignment(sig) -> tuple:
    """(type, index) of the alignment argument given (``alignas=`` or ``alignment=``)."""
    return (sig.args[3], 3) if _given(sig.args[3]) else (sig.args[2], 2)


def _carved(context, builder, sig, args):
    aryty = sig.return_type
    elty = context.get_data_type(aryty.dtype)
    itemsize = context.get_abi_sizeof(elty)
    # packed one after another, each aligned for its elements (or as asked)
    align = max(context.get_abi_alignment(elty),
                _memory._alignment_of("shared.array", _alignment(sig)[0]) or 1)
    slot = _offset_slot(builder)
    start = _align_up(builder, builder.load(slot), align)
    base = call(builder, "__gpux_dynamic_shared")
    data = builder.gep(base, [start], source_etype=ir.IntType(8))
    size = ir.Constant(I64, itemsize)
    if _is_literal(sig.args[0]):  # shape=0: the rest, after the run-time-shaped arrays
        total = call(builder, "__gpux_dynamic_shared_bytes")
        rest = builder.select(builder.icmp_unsigned(">", total, start),
                              builder.sub(total, start), ir.Constant(I64, 0))
        dims = [builder.udiv(rest, size)]
    else:
        dims = _dims(context, builder, sig.args[0], args[0])
        zero = ir.Constant(I64, 0)
        dims = [builder.select(builder.icmp_signed("<", d, zero), zero, d) for d in dims]
        nbytes = size
        for d in dims:
            nbytes = builder.mul(nbytes, d)
        builder.store(builder.add(start, nbytes), slot)
    strides, acc = [], size
    for d in reversed(dims):
        strides.append(acc)
        acc = builder.mul(acc, d)
    return _memory._make_array(context, builder, aryty, data, dims, list(reversed(strides)))


@lowering_registry.lower(shared_array, types.Any, types.Any, types.Any, types.Any)
def _shared_array(context, builder, sig, args):
    if _is_literal(sig.args[0]) and _memory._shape_from_sig(sig) != (0,):
        align, at = _alignment(sig)  # the facade's array, with one alignment argument
        facade = signature(sig.return_type, sig.args[0], sig.args[1], align)
        return context.get_function(_memory.shared.array, facade)(
            builder, (args[0], args[1], args[at]))
    return _carved(context, builder, sig, args)


add_registries(typing_registry, lowering_registry)
