"""Sub-groups (CUDA warps, OpenCL sub-groups): ``gpux.subgroup.<op>``.

Typing and lowering to the ``__gpux_sg_*`` intrinsics (see ``intrinsics.py``
for what a target must provide).  Nothing here assumes a sub-group width:
kernels read it with ``subgroup.size()``.

Values of any integer, float or bool type can be shuffled (they travel as
i32/i64/f32/f64 and are converted back); reductions take ``op`` as a string
literal: ``"add"``, ``"mul"``, ``"min"``, ``"max"``, and for integers also
``"and"``, ``"or"``, ``"xor"``.

Shuffles, votes, matches and ``barrier`` take an optional last argument, a
32-bit member mask (CUDA's ``*_sync`` spelling): the lanes that take part, each
of which must make the call.  A target whose instructions take a member mask
(CUDA) passes it on; the others run the operation on the whole sub-group, as
without a mask.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import AbstractTemplate, Registry, signature

from .intrinsics import SG_REDUCE_OPS, SG_SHUFFLE_KINDS, call
from .stubs import Namespace, Stub

__all__ = ["subgroup", "typing_registry", "lowering_registry"]

I32 = ir.IntType(32)
I64 = ir.IntType(64)


def _stub(name, doc):
    return Stub(f"subgroup.{name}", doc)


subgroup = Namespace("subgroup", "Sub-group (warp) intrinsics; never assume a width of 32.", {
    "lane_id": _stub("lane_id", "lane_id() -> int32: index of this work-item in its sub-group."),
    "size": _stub("size", "size() -> int32: number of work-items in this sub-group."),
    "id": _stub("id", "id() -> int32: index of this sub-group within the work-group."),
    "count": _stub("count", "count() -> int32: number of sub-groups in the work-group."),
    "shuffle": _stub("shuffle", "shuffle(value, lane[, members]): the value held by `lane`."),
    "shuffle_up": _stub("shuffle_up", "shuffle_up(value, delta[, members]): the value of "
                                      "lane_id - delta (own value where that is below 0)."),
    "shuffle_down": _stub("shuffle_down", "shuffle_down(value, delta[, members]): the value of "
                                          "lane_id + delta (own value where that is outside the "
                                          "sub-group)."),
    "shuffle_xor": _stub("shuffle_xor", "shuffle_xor(value, mask[, members]): the value of "
                                        "lane_id ^ mask."),
    "all": _stub("all", "all(pred[, members]) -> bool: pred holds on every lane."),
    "any": _stub("any", "any(pred[, members]) -> bool: pred holds on some lane."),
    "ballot": _stub("ballot", "ballot(pred[, members]) -> uint64: bit i set where pred holds on "
                              "lane i (lanes 0-63)."),
    "match_any": _stub("match_any", "match_any(value[, members]) -> uint64: bit i set where "
                                    "lane i (lanes 0-63) holds the same value (bitwise)."),
    "match_all": _stub("match_all", "match_all(value[, members]) -> bool: every active lane "
                                    "holds the same value (bitwise)."),
    "barrier": _stub("barrier", "barrier([members]): the sub-group's work-items wait for each "
                                "other; orders work-group and global memory among them."),
    "reduce": _stub("reduce", "reduce(value, op) -> value's type: op ('add', 'mul', 'min', "
                              "'max', 'and', 'or', 'xor') over every lane of the sub-group."),
})

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.subgroups")
_lower = lowering_registry.lower

typing_registry.register_global(subgroup, types.Module(subgroup))

_VALUE = (types.Integer, types.Float, types.Boolean)


def _template(stub, resolver):
    class T(AbstractTemplate):
        key = stub
        prefer_literal = True

        def generic(self, args, kws):
            if kws:
                return None
            return resolver(*args)

    T.__name__ = f"Subgroup_{stub._name.split('.')[-1]}"
    typing_registry.register(T)
    typing_registry.register_global(stub, types.Function(T))
    return T


def _nullary(ret):
    return lambda *args: signature(ret) if not args else None


def _members(args, n):
    """The argument types with an optional member mask after the first *n*: the mask's
    type (uint32) in a list, [] without one, None when it is not an integer."""
    if len(args) == n:
        return []
    if len(args) == n + 1 and isinstance(args[n], types.Integer):
        return [types.uint32]
    return None


def _shuffle_sig(*args):
    mask = _members(args, 2)
    if mask is None:
        return None
    val, lane = args[:2]
    val = types.unliteral(val)
    if isinstance(val, _VALUE) and isinstance(lane, types.Integer):
        return signature(val, val, types.int32, *mask)
    return None


def _one_value_sig(ret, as_bool):
    """(value[, members]) -> *ret*; the value is taken as a bool (votes) or as it is
    (matches)."""
    def resolve(*args):
        mask = _members(args, 1)
        if mask is not None and isinstance(types.unliteral(args[0]), _VALUE):
            return signature(ret, types.boolean if as_bool else types.unliteral(args[0]), *mask)
        return None
    return resolve


def _barrier_sig(*args):
    mask = _members(args, 0)
    return None if mask is None else signature(types.none, *mask)


def _reduce_sig(*args):
    if len(args) != 2:
        return None
    val, op = args
    val = types.unliteral(val)
    if not isinstance(op, types.StringLiteral) or not isinstance(val, (types.Integer, types.Float)):
        return None
    if op.literal_value not in SG_REDUCE_OPS:
        raise types.errors.TypingError(
            f"subgroup.reduce: op must be one of {', '.join(map(repr, SG_REDUCE_OPS))}, "
            f"not {op.literal_value!r}")
    if isinstance(val, types.Float) and op.literal_value in ("and", "or", "xor"):
        raise types.errors.TypingError(
            f"subgroup.reduce: {op.literal_value!r} needs integers, not {val}")
    if isinstance(val, types.Float) and val.bitwidth < 32:
        val = types.float32
    return signature(val, val, op)


for _name, _ret in (("lane_id", types.int32), ("size", types.int32), ("id", types.int32),
                    ("count", types.int32)):
    _template(getattr(subgroup, _name), _nullary(_ret))
for _name in SG_SHUFFLE_KINDS:
    _template(getattr(subgroup, _name), _shuffle_sig)
_template(subgroup.all, _one_value_sig(types.boolean, True))
_template(subgroup.any, _one_value_sig(types.boolean, True))
_template(subgroup.ballot, _one_value_sig(types.uint64, True))
_template(subgroup.match_any, _one_value_sig(types.uint64, False))
_template(subgroup.match_all, _one_value_sig(types.boolean, False))
_template(subgroup.reduce, _reduce_sig)
_template(subgroup.barrier, _barrier_sig)


# ------------------------------------------------------------------ lowering

def _nullary_impl(intrinsic, least):
    # the value is at least *least* (a lane or a sub-group index is not negative, a
    # width or a count is positive), stated for the optimizer: Python's ``%`` of a lane
    # by the width, ``(lane_id() + 1) % size()``, then needs no sign fix-up and no test
    # of a zero divisor (3-6x faster on Intel's OpenCL CPU driver)
    def impl(context, builder, sig, args):
        v = call(builder, intrinsic)
        builder.assume(builder.icmp_signed(">=", v, ir.Constant(v.type, least)))
        return v
    return impl


for _name, _intr, _least in (("lane_id", "__gpux_sg_lane_id", 0), ("size", "__gpux_sg_size", 1),
                             ("id", "__gpux_sg_id", 0), ("count", "__gpux_sg_count", 1)):
    _lower(getattr(subgroup, _name))(_nullary_impl(_intr, _least))


def _call_form(context, builder, sig, args, n, name, masked, *operands):
    """``name(operands)``, or ``masked(mask, operands)`` when the call has a member mask
    after its first *n* arguments (cast to uint32)."""
    if len(args) <= n:
        return call(builder, name, *operands)
    mask = context.cast(builder, args[n], sig.args[n], types.uint32)
    return call(builder, masked, mask, *operands)


def _as_result(builder, sig, res):
    """An i32 0/1 result as the bool the signature returns; other results as they are."""
    if sig.return_type == types.boolean:
        return builder.icmp_unsigned("!=", res, ir.Constant(I32, 0))
    return res


@_lower(subgroup.barrier)
@_lower(subgroup.barrier, types.Any)
def _barrier_impl(context, builder, sig, args):
    _call_form(context, builder, sig, args, 0, "__gpux_sg_barrier", "__gpux_sg_barrier_masked")
    return context.get_dummy_value()


def _to_carrier(builder, ty, v):
    """(carrier suffix, carrier value) for a value of Numba type *ty*."""
    if isinstance(ty, types.Boolean):
        return "i32", builder.zext(v, I32)
    if isinstance(ty, types.Integer):
        if ty.bitwidth == 64:
            return "i64", v
        ext = builder.sext if ty.signed else builder.zext
        return "i32", ext(v, I32) if ty.bitwidth < 32 else v
    if ty.bitwidth == 16:  # float16 travels as its bits
        return "i32", builder.zext(builder.bitcast(v, ir.IntType(16)), I32)
    return ("f32" if ty.bitwidth == 32 else "f64"), v


def _from_carrier(builder, ty, v, llty):
    if isinstance(ty, types.Boolean):
        return builder.icmp_unsigned("!=", v, ir.Constant(I32, 0))
    if isinstance(ty, types.Float) and ty.bitwidth == 16:
        return builder.bitcast(builder.trunc(v, ir.IntType(16)), llty)
    if v.type != llty:
        return builder.trunc(v, llty)
    return v


def _shuffle_impl(kind):
    def impl(context, builder, sig, args):
        ty = sig.args[0]
        val, lane = args[:2]
        lane = context.cast(builder, lane, sig.args[1], types.int32)
        sfx, carrier = _to_carrier(builder, ty, val)
        res = _call_form(context, builder, sig, args, 2, f"__gpux_sg_{kind}_{sfx}",
                         f"__gpux_sg_{kind}_masked_{sfx}", carrier, lane)
        return _from_carrier(builder, ty, res, context.get_value_type(ty))
    return impl


for _kind in SG_SHUFFLE_KINDS:
    _lower(getattr(subgroup, _kind), types.Any, types.Any)(_shuffle_impl(_kind))
    _lower(getattr(subgroup, _kind), types.Any, types.Any, types.Any)(_shuffle_impl(_kind))


def _vote_impl(intrinsic):
    def impl(context, builder, sig, args):
        pred = builder.zext(context.cast(builder, args[0], sig.args[0], types.boolean), I32)
        res = _call_form(context, builder, sig, args, 1, intrinsic, f"{intrinsic}_masked", pred)
        return _as_result(builder, sig, res)
    return impl


for _vote in ("all", "any", "ballot"):
    _lower(getattr(subgroup, _vote), types.Any)(_vote_impl(f"__gpux_sg_{_vote}"))
    _lower(getattr(subgroup, _vote), types.Any, types.Any)(_vote_impl(f"__gpux_sg_{_vote}"))


def _match_impl(kind):
    def impl(context, builder, sig, args):
        ty = sig.args[0]
        sfx, carrier = _to_carrier(builder, ty, args[0])
        if sfx[0] == "f":  # floats match bitwise
            sfx = "i" + sfx[1:]
            carrier = builder.bitcast(carrier, ir.IntType(int(sfx[1:])))
        res = _call_form(context, builder, sig, args, 1, f"__gpux_sg_match_{kind}_{sfx}",
                         f"__gpux_sg_match_{kind}_masked_{sfx}", carrier)
        return _as_result(builder, sig, res)
    return impl


for _kind in ("any", "all"):
    _stub_obj = getattr(subgroup, f"match_{_kind}")
    _lower(_stub_obj, types.Any)(_match_impl(_kind))
    _lower(_stub_obj, types.Any, types.Any)(_match_impl(_kind))


@_lower(subgroup.reduce, types.Any, types.StringLiteral)
def _reduce_impl(context, builder, sig, args):
    ty = sig.args[0]
    op = sig.args[1].literal_value
    val = args[0]
    if isinstance(ty, types.Integer):
        width = 64 if ty.bitwidth == 64 else 32
        sfx = f"{'i' if ty.signed else 'u'}{width}"
        if ty.bitwidth < 32:
            val = (builder.sext if ty.signed else builder.zext)(val, I32)
        res = call(builder, f"__gpux_sg_reduce_{op}_{sfx}", val)
        return builder.trunc(res, context.get_value_type(ty)) if ty.bitwidth < 32 else res
    sfx = "f32" if ty.bitwidth == 32 else "f64"
    return call(builder, f"__gpux_sg_reduce_{op}_{sfx}", val)
