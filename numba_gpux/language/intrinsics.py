"""The portable intrinsics: the contract between the shared lowering and targets.

The shared lowering emits calls to the functions below, in the neutral IR
(generic pointers are ``ptr``; ``i64`` indices).  Every target provides a
definition of each one it supports in its overlay registry; a kernel that
uses an intrinsic its target does not define fails validation with the name
of the intrinsic and the target.

Each entry's ``doc`` states what a target must implement.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

__all__ = ["Intrinsic", "INTRINSICS", "call", "declare", "MATH_UNARY", "MATH_BINARY",
           "MATH_APPROX", "math_name"]

I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID = ir.VoidType()


@dataclass(frozen=True)
class Intrinsic:
    name: str
    ret: ir.Type
    args: tuple
    doc: str
    #: where the intrinsic exists, for the error on a target that lacks it (e.g.
    #: "cuda.intrin.elect_sync needs CUDA sm_90 or newer"); "": every target should
    requires: str = ""


INTRINSICS: dict[str, Intrinsic] = {}


def _add(name, ret, args, doc, requires=""):
    INTRINSICS[name] = Intrinsic(name, ret, tuple(args), doc, requires)


_add("__gpux_thread_idx", I64, [I32],
     "Index of the work-item within its work-group along dimension d (0, 1, 2); "
     "OpenCL get_local_id, CUDA threadIdx.")
_add("__gpux_block_idx", I64, [I32],
     "Index of the work-group within the grid along dimension d; OpenCL get_group_id, CUDA blockIdx.")
_add("__gpux_block_dim", I64, [I32],
     "Work-group size along dimension d; OpenCL get_local_size, CUDA blockDim.")
_add("__gpux_grid_dim", I64, [I32],
     "Number of work-groups along dimension d; OpenCL get_num_groups, CUDA gridDim.")
_add("__gpux_global_idx", I64, [I32],
     "Index of the work-item within the grid along dimension d: block_idx * block_dim + "
     "thread_idx, launched without an offset; OpenCL get_global_id.  Shared default: that "
     "product and sum.  A target with a built-in for it defines it: a driver's vectorizer may "
     "know the built-in as consecutive across the work-items of a group, and not the sum.")
_add("__gpux_wide_global_idx", I64, [I32],
     "The global index as block_idx * block_dim + thread_idx, whatever the target defines "
     "__gpux_global_idx as: the code of a launch of 2**32 work-items or more along a "
     "dimension calls it instead (abi.LaunchFacts.wide), where a driver computes its "
     "built-in in 32 bits.  Shared definition only.")
_add("__gpux_array_offset", I64, [I64],
     "The byte offset of an array argument's data from the buffer pointer the kernel "
     "received, given the byte offset the launcher passed beside it (abi.py).  Shared "
     "default: the argument.  A target whose launcher folds the offset into the pointer "
     "(CUDA) returns 0.")
_add("__gpux_barrier", VOID, [],
     "Work-group execution barrier that also orders work-group (shared) and global "
     "memory; every work-item of the group must reach it.")

#: math functions lowered to __gpux_<name>_<f32|f64>; a target defines each
#: with the device's own implementation (libdevice, OpenCL builtins, metal::)
MATH_UNARY = (
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "exp", "exp2", "expm1", "log", "log2", "log10",
    "log1p", "sqrt", "fabs", "floor", "ceil", "trunc", "erf", "erfc", "tgamma",
    "lgamma", "cbrt", "rint",
)
MATH_BINARY = ("pow", "atan2", "hypot", "fmod", "copysign", "fmin", "fmax")

_FT = {"f32": ir.FloatType(), "f64": ir.DoubleType()}
for _fn in MATH_UNARY:
    for _sfx, _t in _FT.items():
        _add(f"__gpux_{_fn}_{_sfx}", _t, [_t], f"C99 {_fn} on {_sfx}, correctly rounded to the target's documented ulp bound.")
for _fn in MATH_BINARY:
    for _sfx, _t in _FT.items():
        _add(f"__gpux_{_fn}_{_sfx}", _t, [_t, _t], f"C99 {_fn} on {_sfx}.")


#: float32 math that a ``fastmath`` call may compute approximately: such a call of
#: ``__gpux_<fn>_f32`` (fast-math flags ``fast`` or ``afn``) calls
#: ``__gpux_<fn>_f32_approx`` instead (``helpers.portable_math``)
MATH_APPROX = ("sin", "cos", "tan", "exp", "log", "log2", "log10", "pow", "sqrt", "tanh")

for _fn in MATH_APPROX:
    _add(f"__gpux_{_fn}_f32_approx", _FT["f32"], [_FT["f32"]] * (2 if _fn == "pow" else 1),
         f"{_fn} on f32 in a fastmath kernel: may be approximate (the target's fast version, "
         f"e.g. CUDA's __nv_fast_{_fn}f); shared default: __gpux_{_fn}_f32.")


def _approx_default(fn: str) -> str:
    params = "float %a, float %b" if fn == "pow" else "float %a"
    types_ = "float, float" if fn == "pow" else "float"
    return (f"declare float @__gpux_{fn}_f32({types_})\n"
            f"define float @__gpux_{fn}_f32_approx({params}) alwaysinline nounwind {{\n"
            f"  %r = call float @__gpux_{fn}_f32({params})\n  ret float %r\n}}")


def _shared_defaults() -> None:
    """Definitions every target gets unless it overrides them (the "shared" registry)."""
    from ..overlays import SHARED, Deferred, registry

    for fn in MATH_APPROX:
        registry(SHARED).define(f"__gpux_{fn}_f32_approx", Deferred(_approx_default, fn))

    registry(SHARED).define(
        "__gpux_sg_width",
        "declare i32 @__gpux_sg_size()\n"
        "define i32 @__gpux_sg_width() alwaysinline nounwind {\n"
        "  %r = call i32 @__gpux_sg_size()\n  ret i32 %r\n}")
    # every index bound lies below 2**31 (interface.IndexLimits), so the product and the
    # sum are non-negative and cannot overflow, whatever the target's own bounds
    for name in ("__gpux_global_idx", "__gpux_wide_global_idx"):
        registry(SHARED).define(
            name,
            "declare i64 @__gpux_thread_idx(i32)\n"
            "declare i64 @__gpux_block_idx(i32)\n"
            "declare i64 @__gpux_block_dim(i32)\n"
            f"define i64 @{name}(i32 %d) alwaysinline nounwind {{\n"
            "  %b = call noundef range(i64 0, 2147483647) i64 @__gpux_block_idx(i32 %d)\n"
            "  %n = call noundef range(i64 1, 2147483648) i64 @__gpux_block_dim(i32 %d)\n"
            "  %t = call noundef range(i64 0, 2147483647) i64 @__gpux_thread_idx(i32 %d)\n"
            "  %p = mul nuw nsw i64 %b, %n\n"
            "  %r = add nuw nsw i64 %p, %t\n"
            "  ret i64 %r\n}")
    registry(SHARED).define(
        "__gpux_array_offset",
        "define i64 @__gpux_array_offset(i64 %off) alwaysinline nounwind {\n  ret i64 %off\n}")


_shared_defaults()


# ------------------------------------------------- cache-hinted loads and stores
# (typed and lowered by language/cachehints.py; defined here with the other shared
# defaults, which the targets' fingerprints hash before any kernel is compiled)
LOAD_HINTS = ("ca", "cg", "cs", "lu", "cv")
STORE_HINTS = ("cg", "cs", "wb", "wt")
CACHE_HINT_WIDTHS = (8, 16, 32, 64)
#: PTX's cache operators, as the intrinsics' documentation words them
CACHE_HINTS = {"ca": "cached at all levels", "cg": "cached in L2, not L1",
               "cs": "streaming (likely accessed once)", "lu": "last use",
               "cv": "not cached (fetched again)", "wb": "written back",
               "wt": "written through to memory"}


def load_name(hint: str, bits: int) -> str:
    return f"__gpux_ld_{hint}_b{bits}"


def store_name(hint: str, bits: int) -> str:
    return f"__gpux_st_{hint}_b{bits}"


def _cache_hint_intrinsics() -> None:
    from ..overlays import SHARED, registry

    shared = registry(SHARED)
    ptr = ir.PointerType()
    for w in CACHE_HINT_WIDTHS:
        t = ir.IntType(w)
        for h in LOAD_HINTS:
            _add(load_name(h, w), t, [ptr],
                 f"Load {w} bits from the pointer, {CACHE_HINTS[h]}.  Shared default: a plain "
                 f"load.  CUDA: ld.global.{h}.b{w}.")
            shared.define(load_name(h, w), (
                f"define i{w} @{load_name(h, w)}(ptr %p) alwaysinline nounwind {{\n"
                f"  %v = load i{w}, ptr %p, align {w // 8}\n  ret i{w} %v\n}}"))
        for h in STORE_HINTS:
            _add(store_name(h, w), VOID, [ptr, t],
                 f"Store {w} bits to the pointer, {CACHE_HINTS[h]}.  Shared default: a plain "
                 f"store.  CUDA: st.global.{h}.b{w}.")
            shared.define(store_name(h, w), (
                f"define void @{store_name(h, w)}(ptr %p, i{w} %v) alwaysinline nounwind {{\n"
                f"  store i{w} %v, ptr %p, align {w // 8}\n  ret void\n}}"))


_cache_hint_intrinsics()


def element_pointer(context, builder, aryty, ary, idxty, idx, boundscheck=False):
    """The address of ``ary[idx]`` (an int index, or a tuple of one per dimension; negative
    indices count from the end), for the intrinsics that take an array and an index."""
    from numba.core import cgutils, types

    if isinstance(idxty, types.BaseTuple):
        indices = cgutils.unpack_tuple(builder, idx, len(idxty))
        indices = [context.cast(builder, i, t, types.intp) for i, t in zip(indices, idxty)]
    else:
        indices = [context.cast(builder, idx, idxty, types.intp)]
    lary = context.make_array(aryty)(context, builder, ary)
    return cgutils.get_item_pointer(context, builder, aryty, lary, indices, wraparound=True,
                                    boundscheck=boundscheck)


def math_name(fn: str, llty: ir.Type) -> str:
    return f"__gpux_{fn}_{'f32' if isinstance(llty, ir.FloatType) else 'f64'}"


#: sub-group queries that every work-item answers alone (not convergent)
_SG_QUERIES = frozenset(("__gpux_sg_lane_id", "__gpux_sg_size", "__gpux_sg_id",
                         "__gpux_sg_count", "__gpux_sg_width"))


def convergent(name: str) -> bool:
    """Whether the intrinsic *name* is a collective operation of its work-group or
    sub-group (barriers, shuffles, votes, reductions): its declaration says
    ``convergent``, so that no optimization makes a call of it depend on more
    conditions than the program gave it (SimplifyCFG would otherwise copy a barrier
    into both sides of a branch on a flag tested before and after it, which then
    reads as a divergent barrier: converge.py)."""
    return name.startswith("__gpux_barrier") or (
        name.startswith("__gpux_sg_") and name not in _SG_QUERIES)


def declare(module: ir.Module, name: str) -> ir.Function:
    """Declare the intrinsic *name* in *module* (idempotent)."""
    spec = INTRINSICS[name]
    fnty = ir.FunctionType(spec.ret, spec.args)
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, fnty, name)
        if convergent(name):
            fn.attributes.add("convergent")
    return fn


def call(builder: ir.IRBuilder, name: str, *args):
    """Emit a call to the portable intrinsic *name*."""
    return builder.call(declare(builder.module, name), list(args))


# ------------------------------------------------- sub-groups, types, printing, debug
# (lowered by language/{subgroups,types,printing}.py)
I1 = ir.IntType(1)
F16 = ir.HalfType()
_SG_SHUFFLE_T = {"i32": I32, "i64": I64, "f32": ir.FloatType(), "f64": ir.DoubleType()}
_SG_REDUCE_T = {"i32": I32, "u32": I32, "i64": I64, "u64": I64,
                "f32": ir.FloatType(), "f64": ir.DoubleType()}
#: sub-group reductions; the bitwise ones exist for integer suffixes only
SG_REDUCE_OPS = ("add", "mul", "min", "max", "and", "or", "xor")
SG_SHUFFLE_KINDS = ("shuffle", "shuffle_up", "shuffle_down", "shuffle_xor")

_add("__gpux_sg_barrier", VOID, [],
     "Sub-group (warp) execution barrier that also orders work-group and global memory "
     "among the sub-group's work-items; OpenCL sub_group_barrier, CUDA __syncwarp().")
_add("__gpux_sg_lane_id", I32, [],
     "Index of the work-item within its sub-group (warp), 0 <= lane < size; OpenCL "
     "get_sub_group_local_id, CUDA %laneid.")
_add("__gpux_sg_size", I32, [],
     "Number of work-items in the caller's sub-group (never assume 32); OpenCL "
     "get_sub_group_size, CUDA warpSize (or fewer in a partial last warp).")
_add("__gpux_sg_width", I32, [],
     "The sub-group width the kernel runs with: the size of its full sub-groups, also "
     "in a partial one (numba.cuda's warpsize); OpenCL get_max_sub_group_size, CUDA "
     "warpSize.  Shared default: __gpux_sg_size.")
_add("__gpux_sg_id", I32, [],
     "Index of the caller's sub-group within its work-group; OpenCL get_sub_group_id, CUDA "
     "linear thread index / warpSize.")
_add("__gpux_sg_count", I32, [],
     "Number of sub-groups in the work-group; OpenCL get_num_sub_groups, CUDA "
     "ceil(threads per block / warpSize).")
for _sfx, _t in _SG_SHUFFLE_T.items():
    _add(f"__gpux_sg_shuffle_{_sfx}", _t, [_t, I32],
         "The value held by lane `lane` of the caller's sub-group (lane must be in [0, size)); "
         "every lane of the sub-group must call it.  OpenCL sub_group_shuffle, CUDA shfl.sync.idx.")
    _add(f"__gpux_sg_shuffle_up_{_sfx}", _t, [_t, I32],
         "The value of lane (lane_id - delta); lanes with lane_id < delta get their own value. "
         "OpenCL sub_group_shuffle_up + select, CUDA shfl.sync.up.")
    _add(f"__gpux_sg_shuffle_down_{_sfx}", _t, [_t, I32],
         "The value of lane (lane_id + delta); lanes whose source lies outside the sub-group get "
         "their own value.  OpenCL sub_group_shuffle_down + select, CUDA shfl.sync.down.")
    _add(f"__gpux_sg_shuffle_xor_{_sfx}", _t, [_t, I32],
         "The value of lane (lane_id ^ mask); a source outside the sub-group gives the caller's "
         "own value.  OpenCL sub_group_shuffle_xor + select, CUDA shfl.sync.bfly.")
_add("__gpux_sg_all", I32, [I32],
     "1 if the predicate (non-zero) holds on every active lane of the sub-group, else 0; "
     "OpenCL sub_group_all, CUDA vote.sync.all.")
_add("__gpux_sg_any", I32, [I32],
     "1 if the predicate holds on any active lane of the sub-group, else 0; OpenCL "
     "sub_group_any, CUDA vote.sync.any.")
_add("__gpux_sg_ballot", I64, [I32],
     "Bit i set when the predicate holds on lane i (lanes 0..63; wider sub-groups lose the "
     "upper lanes); OpenCL sub_group_ballot (low 64 bits), CUDA vote.sync.ballot (zero-extended).")
# the masked forms: a 32-bit member mask first (CUDA's *_sync operations); the shared
# defaults run the unmasked operation (every lane takes part), a target whose
# instructions take a member mask passes it on
for _sfx, _t in _SG_SHUFFLE_T.items():
    for _kind in SG_SHUFFLE_KINDS:
        _add(f"__gpux_sg_{_kind}_masked_{_sfx}", _t, [I32, _t, I32],
             f"__gpux_sg_{_kind}_{_sfx} among the lanes of the member mask (first argument), "
             f"each of which must call it.  Shared default: the unmasked operation.  CUDA: "
             f"shfl.sync with that mask.")
for _vote in ("all", "any", "ballot"):
    _add(f"__gpux_sg_{_vote}_masked", I64 if _vote == "ballot" else I32, [I32, I32],
         f"__gpux_sg_{_vote} among the lanes of the member mask (first argument).  Shared "
         f"default: the unmasked vote.  CUDA: vote.sync with that mask.")
for _sfx, _t in (("i32", I32), ("i64", I64)):
    _add(f"__gpux_sg_match_any_{_sfx}", I64, [_t],
         "Bit i set where lane i (lanes 0..63) of the sub-group holds the caller's value "
         "(compared bitwise); every active lane must call it.  Shared default: one shuffle "
         "and one ballot per distinct value among the active lanes.  CUDA match.any.sync.")
    _add(f"__gpux_sg_match_all_{_sfx}", I32, [_t],
         "1 if every active lane of the sub-group holds the caller's value (bitwise), else 0. "
         "Shared default: a shuffle from the first active lane and a vote.  CUDA "
         "match.all.sync.")
    _add(f"__gpux_sg_match_any_masked_{_sfx}", I64, [I32, _t],
         f"__gpux_sg_match_any_{_sfx} among the lanes of the member mask.  Shared default: "
         f"the unmasked operation.")
    _add(f"__gpux_sg_match_all_masked_{_sfx}", I32, [I32, _t],
         f"__gpux_sg_match_all_{_sfx} among the lanes of the member mask.  Shared default: "
         f"the unmasked operation.")
_add("__gpux_sg_barrier_masked", VOID, [I32],
     "__gpux_sg_barrier among the lanes of the member mask.  Shared default: the whole "
     "sub-group.  CUDA: bar.warp.sync with that mask.")


_SG_ATTRS = "alwaysinline nounwind convergent"


def _forward(masked: str, base: str, ret: str, params: list[str]) -> str:
    """IR text defining *masked* (``i32 %mask`` then *params*) as a call of *base* with
    *params*: the mask is dropped."""
    args = ", ".join(f"{t} %a{k}" for k, t in enumerate(params))
    call = f"call {ret} @{base}({args})"
    body = f"  {call}\n  ret void\n" if ret == "void" else f"  %r = {call}\n  ret {ret} %r\n"
    return (f"declare {ret} @{base}({', '.join(params)}) convergent\n"
            f"define {ret} @{masked}(i32 %mask{', ' if params else ''}{args}) {_SG_ATTRS} "
            f"{{\n{body}}}")


def _shared_masked_defaults() -> None:
    """The masked sub-group forms run the unmasked ones unless a target overrides them;
    match_any/match_all are built from shuffles and ballots."""
    from ..overlays import SHARED, registry

    shared = registry(SHARED)
    forms = [(f"__gpux_sg_{kind}_masked_{sfx}", f"__gpux_sg_{kind}_{sfx}", str(t), [str(t), "i32"])
             for sfx, t in _SG_SHUFFLE_T.items() for kind in SG_SHUFFLE_KINDS]
    forms += [(f"__gpux_sg_{vote}_masked", f"__gpux_sg_{vote}",
               "i64" if vote == "ballot" else "i32", ["i32"]) for vote in ("all", "any", "ballot")]
    forms += [(f"__gpux_sg_match_{kind}_masked_{sfx}", f"__gpux_sg_match_{kind}_{sfx}", ret, [sfx])
              for sfx in ("i32", "i64") for kind, ret in (("any", "i64"), ("all", "i32"))]
    forms.append(("__gpux_sg_barrier_masked", "__gpux_sg_barrier", "void", []))
    for masked, base, ret, params in forms:
        shared.define(masked, _forward(masked, base, ret, params))
    for sfx in ("i32", "i64"):
        shared.define(f"__gpux_sg_match_any_{sfx}", _match_any_default(sfx))
        shared.define(f"__gpux_sg_match_all_{sfx}", _match_all_default(sfx))


def _match_any_default(sfx: str) -> str:
    """match_any from shuffles and ballots: the first lane not yet matched broadcasts its
    value, the lanes holding it vote; as many rounds as distinct values (every round
    takes at least its leader, so the loop ends; its condition is uniform)."""
    t = sfx
    return (
        f"declare {t} @__gpux_sg_shuffle_{sfx}({t}, i32) convergent\n"
        "declare i64 @__gpux_sg_ballot(i32) convergent\n"
        "declare i64 @llvm.cttz.i64(i64, i1)\n"
        f"define i64 @__gpux_sg_match_any_{sfx}({t} %v) {_SG_ATTRS} {{\n"
        "entry:\n  %active = call i64 @__gpux_sg_ballot(i32 1)\n  br label %round\n"
        "round:\n"
        "  %left = phi i64 [ %active, %entry ], [ %left2, %round ]\n"
        "  %res = phi i64 [ 0, %entry ], [ %res2, %round ]\n"
        "  %lead64 = call i64 @llvm.cttz.i64(i64 %left, i1 true)\n"
        "  %lead = trunc i64 %lead64 to i32\n"
        f"  %lv = call {t} @__gpux_sg_shuffle_{sfx}({t} %v, i32 %lead)\n"
        f"  %same = icmp eq {t} %v, %lv\n  %samez = zext i1 %same to i32\n"
        "  %b = call i64 @__gpux_sg_ballot(i32 %samez)\n"
        "  %res2 = select i1 %same, i64 %b, i64 %res\n"
        "  %nb = xor i64 %b, -1\n  %left2 = and i64 %left, %nb\n"
        "  %more = icmp ne i64 %left2, 0\n  br i1 %more, label %round, label %done\n"
        "done:\n  ret i64 %res2\n}")


def _match_all_default(sfx: str) -> str:
    """match_all: the first active lane's value, compared on every lane, and a vote."""
    t = sfx
    return (
        f"declare {t} @__gpux_sg_shuffle_{sfx}({t}, i32) convergent\n"
        "declare i64 @__gpux_sg_ballot(i32) convergent\n"
        "declare i32 @__gpux_sg_all(i32) convergent\n"
        "declare i64 @llvm.cttz.i64(i64, i1)\n"
        f"define i32 @__gpux_sg_match_all_{sfx}({t} %v) {_SG_ATTRS} {{\n"
        "  %active = call i64 @__gpux_sg_ballot(i32 1)\n"
        "  %lead64 = call i64 @llvm.cttz.i64(i64 %active, i1 true)\n"
        "  %lead = trunc i64 %lead64 to i32\n"
        f"  %lv = call {t} @__gpux_sg_shuffle_{sfx}({t} %v, i32 %lead)\n"
        f"  %same = icmp eq {t} %v, %lv\n  %samez = zext i1 %same to i32\n"
        "  %r = call i32 @__gpux_sg_all(i32 %samez)\n  ret i32 %r\n}")


_shared_masked_defaults()
for _op in SG_REDUCE_OPS:
    for _sfx, _t in _SG_REDUCE_T.items():
        if _op in ("and", "or", "xor") and _sfx[0] == "f":
            continue
        _add(f"__gpux_sg_reduce_{_op}_{_sfx}", _t, [_t],
             f"The {_op} of the value over every lane of the sub-group, returned to every lane "
             f"({_sfx[0] == 'u' and 'unsigned' or 'signed'} for integers); OpenCL "
             f"sub_group_(non_uniform_)reduce_{_op}, CUDA a shfl.sync.bfly butterfly.")

for _fn in MATH_UNARY:
    _add(f"__gpux_{_fn}_f16", F16, [F16],
         f"C99 {_fn} on float16.  The shared registry computes it through __gpux_{_fn}_f32; a "
         f"target with half-precision math (OpenCL cl_khr_fp16) overrides it.")
for _fn in MATH_BINARY:
    _add(f"__gpux_{_fn}_f16", F16, [F16, F16],
         f"C99 {_fn} on float16, computed through float32 unless the target overrides it.")

#: print(): one intrinsic per argument list, named __gpux_printf_<codes>, each code
#: 'l' (an i64) or 'd' (a double), at most PRINTF_MAX_ARGS values (CUDA's vprintf
#: limit, as numba.cuda's).  The variants are entered in INTRINSICS when first used (``printf_name``), and targets define
#: them as a family (``OverlayRegistry.define_family(PRINTF_PREFIX, ...)``), so that
#: neither is built at import (import time stays low).
PRINTF_MAX_ARGS = 32
PRINTF_PREFIX = "__gpux_printf_"


def printf_codes(name: str) -> str | None:
    """The argument codes of a printf intrinsic name, or None if *name* is not one."""
    if not name.startswith(PRINTF_PREFIX):
        return None
    codes = name[len(PRINTF_PREFIX):]
    if len(codes) > PRINTF_MAX_ARGS or codes.strip("ld"):
        return None
    return codes


def printf_name(codes: str) -> str:
    """The portable printf intrinsic for argument codes such as ``"ld"``."""
    name = PRINTF_PREFIX + codes
    if name not in INTRINSICS:
        if printf_codes(name) is None:
            raise ValueError(f"printf argument codes must be at most {PRINTF_MAX_ARGS} of "
                             f"'l' and 'd', not {codes!r}")
        _add(name, I32, [ir.PointerType(addrspace=4)] + [I64 if c == "l" else ir.DoubleType()
                                                        for c in codes],
             "C printf with a format string in the constant address space (neutral 4) and the "
             "given i64 ('l') / double ('d') values; output reaches the host's stdout after the "
             "launch completes.  OpenCL printf (OpenCL.std ext-inst), CUDA vprintf.")
    return name


#: inline PTX (``numba_gpux.cuda.inline_ptx``): one intrinsic per assembly text and
#: operand list, named ``__gpux_ptx_<hex of "constraints\0text">``, so that the name
#: carries everything its definition needs (the CUDA target defines the family from
#: the name alone; no other target defines it).  The constraints are LLVM's: outputs
#: (``=r``) first, then inputs (``r``), then inputs tied to an output (``0``); the
#: letters ``h r l f d`` are i16, i32, i64, float and double.  The intrinsic takes the
#: inputs and returns the outputs (none: void; one: its value; more: a literal struct).
PTX_PREFIX = "__gpux_ptx_"
PTX_OPERAND_TYPES = {"h": ir.IntType(16), "r": I32, "l": I64, "f": ir.FloatType(),
                     "d": ir.DoubleType()}


def ptx_signature(constraints: str) -> tuple[ir.Type, list[ir.Type]]:
    """(return type, argument types) of the inline-PTX intrinsic with *constraints*."""
    outs, ins = [], []
    for c in constraints.split(",") if constraints else ():
        if c.startswith("="):
            outs.append(PTX_OPERAND_TYPES[c[1:]])
        elif c.isdigit():
            ins.append(outs[int(c)])
        else:
            ins.append(PTX_OPERAND_TYPES[c])
    ret = VOID if not outs else outs[0] if len(outs) == 1 else ir.LiteralStructType(outs)
    return ret, ins


def ptx_parts(name: str) -> tuple[str, str] | None:
    """(constraints, PTX text) of an inline-PTX intrinsic name, or None if *name* is not one."""
    if not name.startswith(PTX_PREFIX):
        return None
    try:
        constraints, _, text = bytes.fromhex(name[len(PTX_PREFIX):]).decode().partition("\0")
        ptx_signature(constraints)
    except (ValueError, KeyError, IndexError):
        return None
    return constraints, text


def ptx_name(constraints: str, text: str) -> str:
    """The inline-PTX intrinsic for *constraints* (LLVM's, see PTX_PREFIX) and *text*
    (LLVM inline-assembly text: operands ``$N``, a literal ``$`` written ``$$``)."""
    name = PTX_PREFIX + f"{constraints}\0{text}".encode().hex()
    if name not in INTRINSICS:
        ret, args = ptx_signature(constraints)
        _add(name, ret, args,
             "Inline PTX: the assembly text the name carries, with the operands its "
             "constraints give; a side effect on memory.  CUDA only.",
             requires="cuda.inline_ptx writes PTX, which only the CUDA target runs")
    return name
