"""NumPy ufuncs and array operators with float16 operands, as NumPy computes them.

Numba's ufunc typing (``numba.np.numpy_support.ufunc_find_matching_loop``) skips
every NumPy loop with a float16 (``'e'``) input, and its table of scalar loops
(``numba.np.ufunc_db``) has none: on float16 arrays it picks a float32 loop where
NumPy's promotion may give float64 (``float16 + int64``), and a float16 scalar
operand fails to lower (``unsupported type for input operand: float16``).  Numba's
CPU target has no float16 at all.  The kernel language therefore types these
calls itself, ahead of Numba's templates, and only when an operand is float16:

- **Typing**: the loop is the one NumPy resolves (``ufunc.resolve_dtypes``; its own
  search of the loops before NumPy 1.24) for
  the operands' dtypes, an integer or boolean literal counting as a Python scalar
  (NEP 50: ``h * 2`` stays float16).  Layout, dimensions and explicit outputs
  follow Numba's ``Numpy_rules_ufunc``.  A Python float constant is typed float64
  by Numba, so ``h + 1.5`` is float64 here (``h + np.float16(1.5)`` is float16).
- **Lowering**: NumPy's float16 loops convert to float32, compute, and round the
  result to float16; so do these, with Numba's float32 scalar loop from the target
  context's ``get_ufunc_info``.  Loops without float16 (``dd->d`` for
  ``float16 + int64``) are Numba's own scalar loops, chosen as NumPy chooses them.
  Numba's elementwise driver (``npyimpl.numpy_ufunc_kernel``) broadcasts and
  allocates the result through the device runtime, as for every other dtype.

The implementation key is the kernel language's own (:class:`HalfLoop`), so that
lowering runs these loops and not Numba's, and resolves the loop again from the call's
signature.  A pass after typing (:class:`SeparateHalfLoops`) keeps each such operation
a loop of its own: Numba's array-expression rewrite would fuse it with its neighbours
into one element function typed by the scalar rules.

Numba's own tables and the CPU target are left as they are: these registries exist
in the kernel language's shared (target-neutral) context only.  A device without
float16 meets the ``fp16`` feature check on the generated IR, as scalar float16
arithmetic does.
"""

from __future__ import annotations

import numpy as np
from numba.core import errors, types
from numba.core.imputils import Registry as LoweringRegistry, force_error_model
from numba.core.typing import npydecl
from numba.core.typing.templates import AbstractTemplate, Registry
from numba.np import npyimpl, ufunc_db
from numba.np.numpy_support import _ufunc_loop_sig, as_dtype, from_dtype, \
    resolve_output_type

__all__ = ["typing_registry", "lowering_registry", "resolve_loop"]

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.half_ufuncs")

#: the loop letters a float16 operand can lead to: NumPy's loops for these ufuncs are
#: homogeneous in float16, float32 or float64, with a boolean result for comparisons
_LETTERS = frozenset("efd?")


class HalfLoop(tuple):
    """The implementation key of a ufunc's loops with a float16 operand: (ufunc,
    whether it is an in-place operator writing its first operand).  The lowering
    resolves the loop again from the call's signature, which keeps the literal
    operands typing saw (:func:`resolve_loop` gives the same answer)."""

    __slots__ = ()

    def __new__(cls, ufunc, inplace: bool = False):
        return super().__new__(cls, (ufunc, inplace))

    def __repr__(self):
        return f"HalfLoop({self[0].__name__}{', in place' if self[1] else ''})"


def _is_half(t) -> bool:
    if isinstance(t, types.ArrayCompatible):
        t = t.dtype
    return t == types.float16


def _operand_dtype(t):
    """What NumPy's resolution takes for one input: a dtype, or the Python class of a
    literal (a weak scalar, NEP 50); None where NumPy has no dtype for it."""
    if isinstance(t, types.ArrayCompatible):
        t = t.dtype
    if isinstance(t, types.BooleanLiteral):
        return bool
    if isinstance(t, types.IntegerLiteral):
        return int
    try:
        return as_dtype(types.unliteral(t))
    except errors.NumbaNotImplementedError:  # no NumPy dtype (a record, a string ...)
        return None


def _scalar_loop(loop: str) -> str:
    """The scalar loop of Numba's table that computes *loop*: float16 computes as
    float32 (as NumPy's float16 loops do), rounded to float16 after."""
    return loop.replace("e", "f")


#: NumPy's kind categories for legacy (value-based) promotion: bool < int < float < complex
_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _numpy_loop(ufunc, dts, arrays) -> tuple:
    """The dtypes of NumPy's loop for *ufunc* on operands of the dtypes *dts* (``int``:
    a Python int, a weak scalar; *arrays*: which operands are arrays), inputs then
    outputs.  NumPy 1.24 and newer say (``ufunc.resolve_dtypes``).  Before, NumPy
    searches the ufunc's loops for the first that every operand casts to safely, where a
    scalar beside arrays counts only by its kind (bool, int, float, complex) when that
    is not above the arrays' kinds: its value, unknown here, would fit (as Numba's CPU
    typing does on those versions)."""
    resolve = getattr(ufunc, "resolve_dtypes", None)
    if resolve is not None:
        return resolve((*dts, *([None] * ufunc.nout)))
    top = max((_CATEGORY.get(d.kind, 3) for d, a in zip(dts, arrays) if a and d is not int),
              default=-1)
    weak = [1 if d is int else _CATEGORY.get(d.kind, 3) if not a and
            _CATEGORY.get(d.kind, 3) <= top else None for d, a in zip(dts, arrays)]
    for sig in ufunc.types:
        ins, outs = sig.split("->")
        if all(_CATEGORY.get(np.dtype(c).kind, 9) >= w if w is not None else np.can_cast(d, c)
               for d, w, c in zip(dts, weak, ins)):
            return tuple(np.dtype(c) for c in ins + outs)
    raise TypeError(f"no loop of {ufunc.__name__} for {dts}")


def resolve_loop(ufunc, input_types) -> str | None:
    """NumPy's loop (``"ee->e"``) for *ufunc* on Numba *input_types* with a float16
    among them, or None if NumPy has none that this module computes."""
    dts = [_operand_dtype(t) for t in input_types]
    if any(d is None for d in dts):
        return None
    try:
        loop = _numpy_loop(ufunc, dts, [isinstance(t, types.Array) for t in input_types])
    except (TypeError, ValueError):  # no loop (e.g. float16 & int8): Numba's error
        return None
    ins = "".join(d.char for d in loop[:ufunc.nin])
    outs = "".join(d.char for d in loop[ufunc.nin:])
    sig = f"{ins}->{outs}"
    if not set(ins + outs) <= _LETTERS:
        return None
    if _scalar_loop(sig) not in ufunc_db.get_ufunc_info(ufunc):
        return None
    return sig


def _letter_type(c: str):
    return from_dtype(np.dtype(c))


class _HalfUfunc(npydecl.Numpy_rules_ufunc):
    """A ufunc called with a float16 operand (array or scalar)."""

    prefer_literal = True  # an integer literal is a weak scalar: see resolve_loop

    def generic(self, args, kws):
        if kws:
            return None
        args = [a.type if isinstance(a, types.Optional) else a for a in args]
        ufunc = self.ufunc
        if not any(_is_half(a) for a in args[:ufunc.nin]):
            return None
        base, explicit, ndims, layout = self._handle_inputs(ufunc, args, kws)
        loop = resolve_loop(ufunc, args[:ufunc.nin])
        if loop is None:
            return None
        outs = list(explicit)
        implicit = ufunc.nout - len(explicit)
        if implicit > 0:
            ret = [_letter_type(c) for c in loop.split("->")[1]][-implicit:]
            if ndims > 0:
                ret = [resolve_output_type(self.context, args, types.Array(
                    dtype=r, ndim=ndims, layout=layout)) for r in ret]
            outs += ret
        return _ufunc_loop_sig(outs, args)

    def get_impl_key(self, sig):
        return HalfLoop(self.ufunc)


class _HalfOperator(_HalfUfunc):
    """An array operator (``a + b``, ``-a``) with a float16 operand and an array."""

    _op_map = {**npydecl.NumpyRulesArrayOperator._op_map,
               **npydecl.NumpyRulesUnaryArrayOperator._op_map}

    @property
    def ufunc(self):
        return getattr(np, self._op_map[self.key])

    def generic(self, args, kws):
        if not any(isinstance(a, types.ArrayCompatible) for a in args):
            return None  # scalars: the builtin operators
        try:
            return super().generic(args, kws)
        except errors.TypingError:
            return None  # as Numba's operator templates: let another template try


class _HalfInplace(_HalfOperator):
    """``a += b`` (and the like) on a float16 array or with a float16 operand: the
    loop NumPy resolves for the operands, its result cast to ``a``'s dtype (as
    Numba's in-place operators, which allow any cast)."""

    _op_map = npydecl.NumpyRulesInplaceArrayOperator._op_map

    def generic(self, args, kws):
        if kws or len(args) != 2 or not isinstance(args[0], types.ArrayCompatible):
            return None
        sig = super().generic((*args, args[0]), kws)
        return None if sig is None else sig.replace(args=sig.args[:2])

    def get_impl_key(self, sig):
        return HalfLoop(self.ufunc, True)


class _HalfKernel(npyimpl._Kernel):
    """One element of a resolved loop: inputs cast to the loop's types, a float16
    computed as float32 by Numba's scalar loop and rounded to float16, the result
    cast to the output's type."""

    def __init__(self, context, builder, outer_sig, ufunc, loop):
        super().__init__(context, builder, outer_sig)
        ins, outs = loop.split("->")
        self.loop_in = [_letter_type(c) for c in ins]
        self.loop_out = _letter_type(outs)
        scalar = _scalar_loop(loop)
        self.fn = context.get_ufunc_info(ufunc)[scalar]
        s_ins, s_outs = scalar.split("->")
        self.compute_sig = _ufunc_loop_sig([_letter_type(s_outs)],
                                           [_letter_type(c) for c in s_ins])

    def generate(self, *args):
        csig = self.compute_sig
        vals = [self.cast(self.cast(v, outer, lt), lt, ct)
                for v, outer, lt, ct in zip(args, self.outer_sig.args, self.loop_in,
                                            csig.args)]
        with force_error_model(self.context, "numpy"):
            res = self.fn(self.context, self.builder, csig, vals)
        res = self.context.data_model_manager[csig.return_type].from_return(
            self.builder, res)
        res = self.cast(res, csig.return_type, self.loop_out)
        return self.cast(res, self.loop_out, self.outer_sig.return_type)


def _lower_loop(ufunc, inplace=False):
    def impl(context, builder, sig, args):
        loop = resolve_loop(ufunc, sig.args[:ufunc.nin])

        def kernel_class(context, builder, outer_sig):
            return _HalfKernel(context, builder, outer_sig, ufunc, loop)

        # Numba's driver takes no float16 scalar operand and makes no float16 scalar
        # result: a float16 scalar goes in as float32 (exact; the kernel casts it back),
        # literals as their plain type, and a call on scalars only is one element
        arg_tys, vals = [], []
        for ty, v in zip(sig.args, args):
            plain = types.unliteral(ty)
            if plain == types.float16:
                plain = types.float32
            if plain != ty and not isinstance(ty, types.ArrayCompatible):
                v = context.cast(builder, v, ty, plain)
            arg_tys.append(plain)
            vals.append(v)
        if not any(isinstance(t, types.ArrayCompatible) for t in arg_tys):
            outer = _ufunc_loop_sig([sig.return_type], arg_tys)
            return kernel_class(context, builder, outer).generate(*vals)
        if inplace:  # the first operand is the explicit output, as Numba's in-place loops
            arg_tys.append(arg_tys[0])
            vals.append(vals[0])
        return npyimpl.numpy_ufunc_kernel(
            context, builder, sig.replace(args=tuple(arg_tys)), vals, ufunc, kernel_class)

    return impl


def _register():
    covered = []
    for ufunc in ufunc_db.get_ufuncs():
        if not isinstance(ufunc, np.ufunc) or ufunc.nout != 1:
            continue
        table = ufunc_db.get_ufunc_info(ufunc)
        loops = [lp for lp in ufunc.types if set(lp) - {"-", ">"} <= _LETTERS
                 and _scalar_loop(lp) in table]
        if not any("e" in lp for lp in loops):
            continue
        covered.append(ufunc)
        impl = _lower_loop(ufunc)
        anys = (types.Any,) * ufunc.nin
        lowering_registry.lower(HalfLoop(ufunc), *anys)(impl)
        lowering_registry.lower(HalfLoop(ufunc), *anys, types.Array)(impl)
        if ufunc.nin == 2:
            lowering_registry.lower(HalfLoop(ufunc, True), *anys)(
                _lower_loop(ufunc, inplace=True))
        if ufunc in npydecl.supported_ufuncs:
            typing_registry.register_global(ufunc, types.Function(
                type(f"HalfUfunc_{ufunc.__name__}", (_HalfUfunc,), {"key": ufunc})))
    for op, name in _HalfOperator._op_map.items():
        if getattr(np, name) in covered:
            typing_registry.register_global(op, types.Function(
                type(f"HalfOperator_{name}", (_HalfOperator,), {"key": op})))
    for op, name in _HalfInplace._op_map.items():
        if getattr(np, name) in covered:
            typing_registry.register_global(op, types.Function(
                type(f"HalfInplace_{name}", (_HalfInplace,), {"key": op})))


_register()


# ------------------------------------------------------- one loop per operation
class _Resolved(AbstractTemplate):
    """The type of a call to one resolved loop (see :class:`SeparateHalfLoops`)."""

    sig = None

    def generic(self, args, kws):
        return self.sig if not kws and tuple(args) == self.sig.args else None


_resolved_types: dict = {}


def _resolved_type(typingctx, loop, sig):
    """The Function type of a call to *loop* with signature *sig* (one per pair)."""
    fnty = _resolved_types.get((loop, sig))
    if fnty is None:
        tmpl = type(f"Resolved_{loop[0].__name__}", (_Resolved,), {"key": loop, "sig": sig})
        fnty = types.Function(tmpl)
        fnty.get_call_type(typingctx, sig.args, {})  # records the implementation key
        _resolved_types[(loop, sig)] = fnty
    return fnty


def _loop_of(typingctx, typemap, calltypes, expr):
    """The :class:`HalfLoop` that typing chose for *expr*, or None."""
    sig = calltypes.get(expr)
    if sig is None:
        return None
    if expr.op in ("binop", "unary"):
        fnty = typingctx.resolve_value_type(expr.fn)
    elif expr.op == "call" and not expr.kws and expr.vararg is None:
        fnty = typemap.get(expr.func.name)
    else:
        return None
    if not isinstance(fnty, types.Function):
        return None
    try:
        key = fnty.get_impl_key(sig)
    except KeyError:
        return None
    return key if isinstance(key, HalfLoop) else None


def _separate(state) -> bool:
    from numba.core import ir

    typemap, calltypes, func_ir = state.typemap, state.calltypes, state.func_ir
    changed = False
    for block in func_ir.blocks.values():
        body = []
        for inst in block.body:
            expr = inst.value if isinstance(inst, ir.Assign) else None
            if not isinstance(expr, ir.Expr) or (
                    loop := _loop_of(state.typingctx, typemap, calltypes, expr)) is None:
                body.append(inst)
                continue
            sig = calltypes[expr]
            args = [expr.lhs, expr.rhs] if expr.op == "binop" else \
                [expr.value] if expr.op == "unary" else list(expr.args)
            fnty = _resolved_type(state.typingctx, loop, sig)
            fn = block.scope.redefine(f"$half_{loop[0].__name__}", expr.loc)
            typemap[fn.name] = fnty
            glbl = ir.Global(f"half_{loop[0].__name__}", loop, expr.loc)
            body.append(ir.Assign(glbl, fn, expr.loc))
            func_ir._definitions[fn.name] = [glbl]
            call = ir.Expr.call(fn, args, (), expr.loc)
            calltypes.pop(expr)
            calltypes[call] = sig
            inst.value = call
            defs = func_ir._definitions[inst.target.name]
            defs[:] = [call if d is expr else d for d in defs]
            body.append(inst)
            changed = True
        block.body = body
    return changed


def _separate_half_loops_pass():
    from numba.core.compiler_machinery import FunctionPass, register_pass

    @register_pass(mutates_CFG=False, analysis_only=False)
    class SeparateHalfLoops(FunctionPass):
        """After typing: each operation on float16 arrays becomes a call of its own
        resolved loop.  Numba's array-expression rewrite would otherwise fuse it with
        its neighbours into one loop whose element function is typed by the scalar
        rules (not NumPy's loops) and takes no float16 scalar operand."""

        _name = "gpux_separate_half_loops"

        def __init__(self):
            FunctionPass.__init__(self)

        def run_pass(self, state):
            if not any(_is_half(t) for t in state.typemap.values()):
                return False
            return _separate(state)

    return SeparateHalfLoops


SeparateHalfLoops = _separate_half_loops_pass()
