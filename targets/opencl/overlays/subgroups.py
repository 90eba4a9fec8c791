"""Sub-group intrinsics for SPIR-V (OpenCL cl_khr_subgroups and the khr shuffle,
ballot and non-uniform arithmetic extensions).

The OpenCL C builtins are called by Itanium-mangled name; LLVM's SPIR-V back end
turns them into SubgroupLocalInvocationId / SubgroupSize built-ins and
OpGroupNonUniform* / OpGroup* instructions.
"""

from __future__ import annotations

from numba_gpux.language.intrinsics import SG_REDUCE_OPS
from numba_gpux.overlays import Deferred, registry

from . import SPLIT_SLOTS

SPIRV = registry("spirv")

_ATTR = "alwaysinline nounwind convergent"
#: carrier suffix -> (LLVM type, Itanium code)
_T = {"i32": ("i32", "i"), "u32": ("i32", "j"), "i64": ("i64", "l"), "u64": ("i64", "m"),
      "f32": ("float", "f"), "f64": ("double", "d")}


def _mangle(fn: str, codes: str) -> str:
    return f"_Z{len(fn)}{fn}{codes}"


def _query(name: str, builtin: str) -> str:
    m = _mangle(builtin, "v")
    return (f"declare i32 @{m}() convergent\n"
            f"define i32 @{name}() {_ATTR} {{\n  %r = call i32 @{m}()\n  ret i32 %r\n}}")


# CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE
SPIRV.define("__gpux_sg_barrier", (
    "declare void @_Z17sub_group_barrierj(i32) convergent\n"
    f"define void @__gpux_sg_barrier() {_ATTR} {{\n"
    "  call void @_Z17sub_group_barrierj(i32 3)\n  ret void\n}"))
SPIRV.define("__gpux_sg_lane_id", _query("__gpux_sg_lane_id", "get_sub_group_local_id"))
SPIRV.define("__gpux_sg_size", _query("__gpux_sg_size", "get_sub_group_size"))
SPIRV.define("__gpux_sg_width", _query("__gpux_sg_width", "get_max_sub_group_size"))
SPIRV.define("__gpux_sg_id", _query("__gpux_sg_id", "get_sub_group_id"))
SPIRV.define("__gpux_sg_count", _query("__gpux_sg_count", "get_num_sub_groups"))

_LANE = _mangle("get_sub_group_local_id", "v")
_SIZE = _mangle("get_sub_group_size", "v")

# the lane whose value a relative shuffle reads, and whether it exists
_SOURCE = {
    "shuffle_up": "  %src = sub i32 %lane, %d\n  %ok = icmp sge i32 %src, 0\n",
    "shuffle_down": ("  %src = add i32 %lane, %d\n  %size = call i32 @" + _SIZE + "()\n"
                     "  %ok = icmp ult i32 %src, %size\n"),
    "shuffle_xor": ("  %src = xor i32 %lane, %d\n  %size = call i32 @" + _SIZE + "()\n"
                    "  %ok = icmp ult i32 %src, %size\n"),
}


def _shuffle(kind: str, sfx: str) -> str:
    llty, code = _T[sfx]
    name = f"__gpux_sg_{kind}_{sfx}"
    builtin = _mangle(f"sub_group_{kind}", code + "j")
    head = (f"declare {llty} @{builtin}({llty}, i32) convergent\n"
            f"declare i32 @{_LANE}() convergent\ndeclare i32 @{_SIZE}() convergent\n"
            f"define {llty} @{name}({llty} %v, i32 %d) {_ATTR} {{\n")
    if kind == "shuffle":
        return head + (f"  %r = call {llty} @{builtin}({llty} %v, i32 %d)\n"
                       f"  ret {llty} %r\n}}")
    # the khr relative shuffles leave out-of-range sources undefined: keep our own value
    return head + (f"  %lane = call i32 @{_LANE}()\n" + _SOURCE[kind] +
                   f"  %r = call {llty} @{builtin}({llty} %v, i32 %d)\n"
                   f"  %s = select i1 %ok, {llty} %r, {llty} %v\n  ret {llty} %s\n}}")


for _kind in ("shuffle", "shuffle_up", "shuffle_down", "shuffle_xor"):
    for _sfx in ("i32", "i64", "f32", "f64"):
        SPIRV.define(f"__gpux_sg_{_kind}_{_sfx}", Deferred(_shuffle, _kind, _sfx))


def _vote(name: str, builtin: str) -> str:
    m = _mangle(builtin, "i")
    return (f"declare i32 @{m}(i32) convergent\n"
            f"define i32 @{name}(i32 %p) {_ATTR} {{\n"
            f"  %r = call i32 @{m}(i32 %p)\n  %b = icmp ne i32 %r, 0\n"
            f"  %z = zext i1 %b to i32\n  ret i32 %z\n}}")


SPIRV.define("__gpux_sg_all", _vote("__gpux_sg_all", "sub_group_all"))
SPIRV.define("__gpux_sg_any", _vote("__gpux_sg_any", "sub_group_any"))
_BALLOT = _mangle("sub_group_ballot", "i")
SPIRV.define("__gpux_sg_ballot", (
    f"declare <4 x i32> @{_BALLOT}(i32) convergent\n"
    f"define i64 @__gpux_sg_ballot(i32 %p) {_ATTR} {{\n"
    f"  %m = call <4 x i32> @{_BALLOT}(i32 %p)\n"
    "  %lo = extractelement <4 x i32> %m, i32 0\n  %hi = extractelement <4 x i32> %m, i32 1\n"
    "  %lo64 = zext i32 %lo to i64\n  %hi64 = zext i32 %hi to i64\n"
    "  %hish = shl i64 %hi64, 32\n  %r = or i64 %lo64, %hish\n  ret i64 %r\n}"))


def _reduce(op: str, sfx: str) -> str:
    llty, code = _T[sfx]
    # add/min/max are core cl_khr_subgroups; the rest come from
    # cl_khr_subgroup_non_uniform_arithmetic (also valid in uniform control flow)
    fn = f"sub_group_reduce_{op}" if op in ("add", "min", "max") else \
        f"sub_group_non_uniform_reduce_{op}"
    m = _mangle(fn, code)
    return (f"declare {llty} @{m}({llty}) convergent\n"
            f"define {llty} @__gpux_sg_reduce_{op}_{sfx}({llty} %v) {_ATTR} {{\n"
            f"  %r = call {llty} @{m}({llty} %v)\n  ret {llty} %r\n}}")


for _op in SG_REDUCE_OPS:
    for _sfx in _T:
        if _op in ("and", "or", "xor") and _sfx[0] == "f":
            continue
        SPIRV.define(f"__gpux_sg_reduce_{_op}_{_sfx}", Deferred(_reduce, _op, _sfx))


# -- shuffles of sub-groups split across vectors ---------------------------------------
# A CPU driver runs a sub-group as the lanes of its vector registers; one wider than the
# vectors (a warp of 32 on a 16-lane device, as numba.cuda kernels require) runs as
# several, and its shuffles then cost a lane-by-lane permutation: Intel's CPU driver
# takes 10-25x longer for a warp-shuffle reduction than for the same exchange through
# work-group memory (a store, a sub-group barrier, a load; benchmarks/warp_shuffles.py).
# Kernels that require a width, on devices with the feature "split_subgroups", link
# these in place of the shuffles (``Target.split_subgroup_prefix``).  Sub-group s owns
# the slots from s * (its maximum size) of one work-group array per value width, as
# many slots as the largest work-group: the feature is given only to devices whose
# work-groups fit (drivers.py), so no sub-group needs another path (a uniform branch
# to the device's shuffles for sub-groups past a smaller array's end made the driver's
# code twice as slow).
SPLIT_PREFIX = "__gpux_sgsplit_"
_SG_ID = _mangle("get_sub_group_id", "v")
_SG_MAX = _mangle("get_max_sub_group_size", "v")
_SG_BARRIER = _mangle("sub_group_barrier", "j")
# the lane a shuffle reads from a lane index: as the device's shuffle takes it
_SPLIT_SOURCE = dict(_SOURCE, shuffle=("  %src = add i32 %d, 0\n  %size = call i32 @" + _SIZE +
                                       "()\n  %ok = icmp ult i32 %src, %size\n"))
#: carrier suffix -> (slot type, value to slot, slot to value)
_SLOT = {"i32": ("i32", "  %w = add i32 %v, 0\n", "  %x = add i32 %g, 0\n"),
         "i64": ("i64", "  %w = add i64 %v, 0\n", "  %x = add i64 %g, 0\n"),
         "f32": ("i32", "  %w = bitcast float %v to i32\n", "  %x = bitcast i32 %g to float\n"),
         "f64": ("i64", "  %w = bitcast double %v to i64\n", "  %x = bitcast i64 %g to double\n")}


def _split_slot(slot: str) -> str:
    """A work-group array of *slot*-typed slots, and the address of the calling lane's
    sub-group's slot ``%i`` (an index within the sub-group)."""
    return (f"@{SPLIT_PREFIX}{slot}_slots = internal addrspace(3) global "
            f"[{SPLIT_SLOTS} x {slot}] undef, align 8\n"
            f"declare i32 @{_SG_ID}() convergent\ndeclare i32 @{_SG_MAX}() convergent\n"
            f"define ptr addrspace(3) @{SPLIT_PREFIX}{slot}_slot(i32 %i) {_ATTR} {{\n"
            f"  %sg = call i32 @{_SG_ID}()\n  %w = call i32 @{_SG_MAX}()\n"
            "  %base = mul i32 %sg, %w\n  %at = add i32 %base, %i\n"
            f"  %p = getelementptr inbounds [{SPLIT_SLOTS} x {slot}], ptr addrspace(3) "
            f"@{SPLIT_PREFIX}{slot}_slots, i32 0, i32 %at\n  ret ptr addrspace(3) %p\n}}")


for _slot in ("i32", "i64"):
    SPIRV.define(f"{SPLIT_PREFIX}{_slot}_slot", Deferred(_split_slot, _slot))


def _split_shuffle(kind: str, sfx: str) -> str:
    llty = _T[sfx][0]
    slot, to_slot, from_slot = _SLOT[sfx]
    at = f"call ptr addrspace(3) @{SPLIT_PREFIX}{slot}_slot(i32"
    # out of range: the lane's own value, as the shuffles above give it
    return (f"declare i32 @{_LANE}() convergent\ndeclare i32 @{_SIZE}() convergent\n"
            f"declare ptr addrspace(3) @{SPLIT_PREFIX}{slot}_slot(i32) convergent\n"
            f"declare void @{_SG_BARRIER}(i32) convergent\n"
            f"define {llty} @{SPLIT_PREFIX}{kind}_{sfx}({llty} %v, i32 %d) {_ATTR} {{\n"
            f"  %lane = call i32 @{_LANE}()\n" + _SPLIT_SOURCE[kind] + to_slot +
            f"  %p = {at} %lane)\n  store {slot} %w, ptr addrspace(3) %p\n"
            f"  call void @{_SG_BARRIER}(i32 1)\n"
            "  %from = select i1 %ok, i32 %src, i32 %lane\n"
            f"  %q = {at} %from)\n  %g = load {slot}, ptr addrspace(3) %q\n"
            f"  call void @{_SG_BARRIER}(i32 1)\n" + from_slot +
            f"  ret {llty} %x\n}}")


for _kind in ("shuffle", "shuffle_up", "shuffle_down", "shuffle_xor"):
    for _sfx in ("i32", "i64", "f32", "f64"):
        SPIRV.define(f"{SPLIT_PREFIX}{_kind}_{_sfx}", Deferred(_split_shuffle, _kind, _sfx))
