"""Arrays of a shape known when the kernel is compiled go to private memory.

``np.zeros(64)``, ``np.empty((4, 4), np.float32)``, ``np.ones(8)``, ``np.full(3, x)``
with constant shapes need no heap: before typing, :class:`PrivateArrays` rewrites each
such call into one of an intrinsic that makes the array in the work-item's private
memory (an ``alloca``, as ``local.array``), filled as NumPy fills it, with no MemInfo:
nothing to count and nothing to free.

Only where that is the same program: a call outside every loop of its function (a
call in a loop makes a new array each time round, and an array of one round may live
on into the next, which one ``alloca`` cannot be), in a function that returns nothing
(the array must not outlive the function's frame), and of at most
:data:`MAX_ELEMENTS` elements (private memory is small; larger arrays come from the
heap).  Everything else goes to the device heap (language/heap.py).
"""

from __future__ import annotations

import numpy as np
from numba.core import ir, types
from numba.core.compiler_machinery import FunctionPass, register_pass
from numba.core.extending import intrinsic

__all__ = ["PrivateArrays", "MAX_ELEMENTS", "is_private_constructor"]

#: the most elements an array made in private memory has
MAX_ELEMENTS = 1024

_KINDS = ("empty", "zeros", "ones", "full")
_made: dict = {}


def is_private_constructor(fnty) -> bool:
    """Whether a typed callee is one of the intrinsics this module makes."""
    key = getattr(fnty, "typing_key", None)
    return getattr(key, "_gpux_private_array", False)


def _constructor(kind: str, shape: tuple):
    """The intrinsic making a private array of *shape*, filled as ``np.<kind>`` fills it:
    ``f(dtype)``, or ``f(fill, dtype)`` for ``full`` (dtype None: the fill's type)."""
    got = _made.get((kind, shape))
    if got is not None:
        return got
    from numba.core.typing.npydecl import parse_dtype

    def array_type(dtype, fill=None):
        if isinstance(dtype, (types.NoneType, types.Omitted)) or dtype is None:
            dt = types.unliteral(fill) if fill is not None else types.float64
        else:
            dt = parse_dtype(dtype)
        if dt is None:
            return None
        return types.Array(dt, len(shape), "C")

    def codegen(context, builder, sig, args):
        from llvmlite import ir as llir
        from numba.core import cgutils

        from .memory import _c_strides, _make_array

        aryty = sig.return_type
        elty = context.get_data_type(aryty.dtype)
        count = int(np.prod(shape, dtype=np.int64))
        data = cgutils.alloca_once(builder, llir.ArrayType(elty, count),
                                   name="gpux.private")
        itemsize = context.get_abi_sizeof(elty)
        intp = context.get_value_type(types.intp)
        ary = _make_array(context, builder, aryty, data,
                          [llir.Constant(intp, s) for s in shape],
                          [llir.Constant(intp, s) for s in _c_strides(shape, itemsize)])
        if kind != "empty":
            if kind == "full":
                value = context.cast(builder, args[0], sig.args[0], aryty.dtype)
            else:
                value = context.get_constant(aryty.dtype, 0 if kind == "zeros" else 1)
            value = context.get_value_as_data(builder, aryty.dtype, value)
            first = builder.gep(data, [llir.Constant(intp, 0), llir.Constant(intp, 0)])
            with cgutils.for_range(builder, llir.Constant(intp, count)) as loop:
                builder.store(value, builder.gep(first, [loop.index]))
        return ary

    if kind == "full":
        @intrinsic
        def make(typingctx, fill, dtype):
            aryty = array_type(dtype, fill)
            return None if aryty is None else (aryty(fill, dtype), codegen)
    else:
        @intrinsic
        def make(typingctx, dtype):
            aryty = array_type(dtype)
            return None if aryty is None else (aryty(dtype), codegen)
    make._gpux_private_array = True
    _made[(kind, shape)] = make
    return make


def _constant(func_ir, var):
    """The Python value of *var* if it is a constant (or a global), else None."""
    from numba.core.ir_utils import get_definition, guard

    d = guard(get_definition, func_ir, var)
    if isinstance(d, (ir.Const, ir.Global, ir.FreeVar)):
        return d.value
    return None


def _shape(func_ir, var) -> tuple | None:
    """A constant shape (an int or a tuple of ints) as a tuple, else None."""
    from numba.core.ir_utils import get_definition, guard

    value = _constant(func_ir, var)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    if isinstance(value, tuple):
        items = value
    else:
        d = guard(get_definition, func_ir, var)
        if not (isinstance(d, ir.Expr) and d.op == "build_tuple"):
            return None
        items = tuple(_constant(func_ir, v) for v in d.items)
    if not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in items):
        return None
    return tuple(int(v) for v in items)


def _returns_nothing(func_ir) -> bool:
    from numba.core.ir_utils import get_definition, guard

    for block in func_ir.blocks.values():
        term = block.terminator
        if isinstance(term, ir.Return):
            d = guard(get_definition, func_ir, term.value)
            if isinstance(d, ir.Expr) and d.op == "cast":
                d = guard(get_definition, func_ir, d.value)
            if not (isinstance(d, ir.Const) and d.value is None):
                return False
    return True


def _in_loops(func_ir) -> set:
    from numba.core.analysis import compute_cfg_from_blocks

    cfg = compute_cfg_from_blocks(func_ir.blocks)
    inside: set = set()
    for loop in cfg.loops().values():
        inside |= set(loop.body)
    return inside


@register_pass(mutates_CFG=False, analysis_only=False)
class PrivateArrays(FunctionPass):
    """Before typing: ``np.empty/zeros/ones/full`` of a constant shape, outside loops, in a
    function that returns nothing, make the array in private memory (module docstring)."""

    _name = "gpux_private_arrays"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        from numba.core.ir_utils import find_callname, guard

        func_ir = state.func_ir
        if func_ir.func_id.modname.partition(".")[0] == "numba":
            return False
        sites = []
        for label, block in func_ir.blocks.items():
            for inst in block.body:
                if isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr) \
                        and inst.value.op == "call":
                    found = guard(find_callname, func_ir, inst.value)
                    if found and found[1] == "numpy" and found[0] in _KINDS:
                        sites.append((label, block, inst))
        if not sites or not _returns_nothing(func_ir):
            return False
        loops = _in_loops(func_ir)
        changed = False
        known = len(_made)
        for label, block, inst in sites:
            if label not in loops and self._rewrite(func_ir, block, inst):
                changed = True
        if len(_made) != known:  # new intrinsics: typing learns them from its registry
            state.typingctx.refresh()
        return changed

    def _rewrite(self, func_ir, block, inst) -> bool:
        from numba.core.ir_utils import find_callname, guard

        expr = inst.value
        kind = guard(find_callname, func_ir, expr)[0]
        kws = dict(expr.kws)
        args = list(expr.args)
        names = ["shape", "fill_value", "dtype"] if kind == "full" else ["shape", "dtype"]
        if len(args) > len(names) or set(kws) - set(names) or expr.vararg is not None:
            return False
        bound = dict(zip(names, args))
        for k, v in kws.items():
            if k in bound:
                return False
            bound[k] = v
        if "shape" not in bound or (kind == "full" and "fill_value" not in bound):
            return False
        shape = _shape(func_ir, bound["shape"])
        if shape is None or any(s < 0 for s in shape) or \
                int(np.prod(shape, dtype=np.int64)) > MAX_ELEMENTS:
            return False
        make = _constructor(kind, shape)
        scope, loc = block.scope, inst.loc
        fn = ir.Var(scope, scope.redefine("$gpux_private", loc).name, loc)
        at = block.body.index(inst)
        new = [ir.Assign(ir.Global(f"gpux_private_{kind}", make, loc), fn, loc)]
        dtype = bound.get("dtype")
        if dtype is None:
            dtype = ir.Var(scope, scope.redefine("$gpux_dtype", loc).name, loc)
            new.append(ir.Assign(ir.Const(None, loc), dtype, loc))
        call_args = ([bound["fill_value"]] if kind == "full" else []) + [dtype]
        new.append(ir.Assign(ir.Expr.call(fn, call_args, (), loc), inst.target, loc))
        block.body[at:at + 1] = new
        return True
