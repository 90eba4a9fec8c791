"""Source definitions of the portable intrinsics for Metal (``registry("metal.src")``).

Math uses ``metal::`` functions (the launcher compiles with fast math off, so
they keep their precise bounds); functions the Metal library lacks (expm1,
log1p, cbrt, hypot) are small helpers.  erf, erfc, tgamma and lgamma are not
defined: a kernel that uses them fails validation naming the function.
"""

from __future__ import annotations

from numba_gpux.cemit import SourceDef
from numba_gpux.language.intrinsics import MATH_BINARY, MATH_UNARY
from numba_gpux.overlays import registry

__all__ = ["SRC"]

SRC = registry("metal.src")
_N = ("nounwind",)

for _name, _var in (("thread_idx", "_gpux_tid"), ("block_idx", "_gpux_bid"),
                    ("block_dim", "_gpux_bdim"), ("grid_dim", "_gpux_gdim")):
    SRC.define(f"__gpux_{_name}", SourceDef(f"((ulong){_var}[{{0}}])", implicit=(_var,), llvm_attrs=_N))
SRC.define("__gpux_barrier", SourceDef(
    "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup)", pure=False,
    llvm_attrs=("convergent", "nounwind")))
SRC.define("__gpux_fence_block", SourceDef(
    "atomic_thread_fence(mem_flags::mem_device | mem_flags::mem_threadgroup, memory_order_seq_cst)",
    pure=False, llvm_attrs=_N))
SRC.define("__gpux_fence_device", SourceDef(
    "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device)",
    pure=False, llvm_attrs=_N))

_HELPERS = {
    "expm1": ("float _gpux_expm1(float x) { float u = metal::exp(x); if (u == 1.0f) return x; "
              "float m = u - 1.0f; if (m == -1.0f) return -1.0f; return m * x / metal::log(u); }"),
    "log1p": ("float _gpux_log1p(float x) { float u = 1.0f + x; if (u == 1.0f) return x; "
              "return metal::log(u) * x / (u - 1.0f); }"),
    "cbrt": ("float _gpux_cbrt(float x) { if (x == 0.0f || metal::isinf(x) || metal::isnan(x)) "
             "return x; float a = metal::fabs(x); float y = metal::pow(a, 1.0f / 3.0f); "
             "y = y - (y * y * y - a) / (3.0f * y * y); return metal::copysign(y, x); }"),
    "hypot": ("float _gpux_hypot(float x, float y) { float a = metal::fabs(x), b = metal::fabs(y); "
              "if (metal::isinf(a) || metal::isinf(b)) return INFINITY; float m = metal::max(a, b); "
              "if (m == 0.0f) return 0.0f; float r = metal::min(a, b) / m; "
              "return m * metal::sqrt(1.0f + r * r); }"),
}
_MISSING = {"erf", "erfc", "tgamma", "lgamma"}

for _fn in MATH_UNARY + MATH_BINARY:
    if _fn in _MISSING:
        continue
    _args = "{0}" if _fn in MATH_UNARY else "{0}, {1}"
    if _fn in _HELPERS:
        SRC.define(f"__gpux_{_fn}_f32", SourceDef(f"_gpux_{_fn}({_args})",
                                                  helper="static inline " + _HELPERS[_fn], llvm_attrs=_N))
    else:
        SRC.define(f"__gpux_{_fn}_f32", SourceDef(f"metal::{_fn}({_args})", llvm_attrs=_N))

# -- SIMD-groups (Metal's sub-groups) ----------------------------------------------------------
_SG = ("convergent", "nounwind")
for _name, _var in (("lane_id", "_gpux_lane"), ("size", "_gpux_sgsize"), ("id", "_gpux_sgid"),
                    ("count", "_gpux_sgcount")):
    SRC.define(f"__gpux_sg_{_name}", SourceDef(f"((uint){_var})", implicit=(_var,), pure=False,
                                               llvm_attrs=_SG))
_T = {"i32": ("uint", "int"), "u32": ("uint", "uint"), "f32": ("float", "float")}
_OK = {"shuffle_up": "_gpux_l >= d", "shuffle_down": "_gpux_l + d < _gpux_n",
       "shuffle_xor": "(_gpux_l ^ d) < _gpux_n"}
for _kind, _fn in (("shuffle", "simd_shuffle"), ("shuffle_up", "simd_shuffle_up"),
                   ("shuffle_down", "simd_shuffle_down"), ("shuffle_xor", "simd_shuffle_xor")):
    for _sfx in ("i32", "f32"):
        _st = _T[_sfx][0]
        _h = f"_gpux_sg_{_kind}_{_sfx}"
        if _kind == "shuffle":
            SRC.define(f"__gpux_sg_{_kind}_{_sfx}", SourceDef(
                f"simd_shuffle({{0}}, (ushort){{1}})", pure=False, llvm_attrs=_SG))
            continue
        SRC.define(f"__gpux_sg_{_kind}_{_sfx}", SourceDef(
            f"{_h}({{0}}, {{1}}, _gpux_lane, _gpux_sgsize)",
            helper=(f"static inline {_st} {_h}({_st} v, uint d, uint _gpux_l, uint _gpux_n) "
                    f"{{ {_st} r = {_fn}(v, (ushort)d); return ({_OK[_kind]}) ? r : v; }}"),
            implicit=("_gpux_lane", "_gpux_sgsize"), pure=False, llvm_attrs=_SG))
SRC.define("__gpux_sg_all", SourceDef("((uint)simd_all({0} != 0u))", pure=False, llvm_attrs=_SG))
SRC.define("__gpux_sg_any", SourceDef("((uint)simd_any({0} != 0u))", pure=False, llvm_attrs=_SG))
SRC.define("__gpux_sg_ballot", SourceDef(
    "((ulong)(simd_vote::vote_t)simd_ballot({0} != 0u))", pure=False, llvm_attrs=_SG))
for _op, _fn in (("add", "simd_sum"), ("mul", "simd_product"), ("min", "simd_min"),
                 ("max", "simd_max"), ("and", "simd_and"), ("or", "simd_or"), ("xor", "simd_xor")):
    for _sfx, (_st, _sg) in _T.items():
        if _op in ("and", "or", "xor") and _sfx[0] == "f":
            continue
        SRC.define(f"__gpux_sg_reduce_{_op}_{_sfx}", SourceDef(
            f"(({_st}){_fn}(({_sg}){{0}}))", pure=False, llvm_attrs=_SG))
