"""Source definitions of the portable intrinsics for Metal (``registry("metal.src")``).

Math uses ``metal::`` functions (the launcher compiles with fast math off, so
they keep their precise bounds); functions the Metal library lacks (expm1,
log1p, cbrt, hypot) are small helpers.  erf, erfc, tgamma and lgamma are not
defined: a kernel that uses them fails validation naming the function.
Atomics are 32-bit (MSL has none on 64-bit types); print() and the system-scope
fence are not defined (no printf, no fence that reaches the host mid-kernel).
"""

from __future__ import annotations

from numba_gpux.targets.cfamily import ATOMIC_LOOP_RULES, SourceDef
from numba_gpux.language.atomics import ATOMIC_INTRINSICS
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
                "simd_shuffle({0}, (ushort){1})", pure=False, llvm_attrs=_SG))
            continue
        SRC.define(f"__gpux_sg_{_kind}_{_sfx}", SourceDef(
            f"{_h}({{0}}, {{1}}, _gpux_lane, _gpux_sgsize)",
            helper=(f"static inline {_st} {_h}({_st} v, uint d, uint _gpux_l, uint _gpux_n) "
                    f"{{ {_st} r = {_fn}(v, (ushort)d); return ({_OK[_kind]}) ? r : v; }}"),
            implicit=("_gpux_lane", "_gpux_sgsize"), pure=False, llvm_attrs=_SG))
SRC.define("__gpux_sg_barrier", SourceDef(
    "simdgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup)", pure=False,
    llvm_attrs=_SG))
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

# -- barriers with a predicate: the items count into a threadgroup word the first item
# clears (three barriers, as the OpenCL C route: targets/opencl_c/target.py) -------------------
_BARRIER_COUNT = """static inline uint _gpux_barrier_count(bool p, threadgroup atomic_uint* c, uint3 tid) {
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
  if (tid[0] == 0 && tid[1] == 0 && tid[2] == 0) atomic_store_explicit(c, 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (p) atomic_fetch_add_explicit(c, 1u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return atomic_load_explicit(c, memory_order_relaxed);
}"""
_BP = "&_gpux_bpred, _gpux_tid"
for _op, _expr in (("count", f"_gpux_barrier_count({{0}} != 0u, {_BP})"),
                   ("and", f"((uint)(_gpux_barrier_count({{0}} == 0u, {_BP}) == 0u))"),
                   ("or", f"((uint)(_gpux_barrier_count({{0}} != 0u, {_BP}) != 0u))")):
    SRC.define(f"__gpux_barrier_{_op}", SourceDef(
        _expr, helper=_BARRIER_COUNT, locals=("threadgroup atomic_uint _gpux_bpred;",),
        implicit=("_gpux_tid",), pure=False, llvm_attrs=("convergent", "nounwind")))

for _w in (32, 64):
    SRC.define(f"__gpux_brev_i{_w}", SourceDef("metal::reverse_bits({0})", llvm_attrs=_N))

# -- dynamic shared memory: a threadgroup buffer at [[threadgroup(0)]] sized with
# setThreadgroupMemoryLength, its size in bytes at [[buffer(30)]] (launch.py) ----------------
_DSMEM = ("_gpux_dsmem", "_gpux_dsmem_bytes")
SRC.define("__gpux_dynamic_shared", SourceDef("_gpux_dsmem", implicit=_DSMEM, result_space=3,
                                              llvm_attrs=_N))
SRC.define("__gpux_dynamic_shared_bytes", SourceDef("_gpux_dsmem_bytes", implicit=_DSMEM,
                                                    llvm_attrs=_N))

# -- atomics: 32-bit only (MSL has no 64-bit atomic read-modify-write); relaxed order.
# Integer operations are atomic_fetch_*_explicit on atomic_int/atomic_uint; float
# arithmetic and min/max (with the portable NaN rules) and CUDA's wrapping inc/dec are
# compare-and-swap loops on the bits, one helper per address space ({s0}).
_NATIVE = {"add": "atomic_fetch_add_explicit", "sub": "atomic_fetch_sub_explicit",
           "and": "atomic_fetch_and_explicit", "or": "atomic_fetch_or_explicit",
           "xor": "atomic_fetch_xor_explicit", "min": "atomic_fetch_min_explicit",
           "max": "atomic_fetch_max_explicit", "exch": "atomic_exchange_explicit"}
# the shared rules, with inc/dec's literals unsigned (Metal's loop is on uint only)
_LOOP = {**ATOMIC_LOOP_RULES,
         "inc": ("true", "(o >= v) ? 0u : o + 1u"), "dec": ("true", "(o == 0u || o > v) ? v : o - 1u")}
_RELAXED = "memory_order_relaxed"
_CAS = f"""static inline uint _gpux_atomic_cas_{{s0}}({{q0}} uchar* p_, uint e, uint n) {{
  {{q0}} atomic_uint* p = ({{q0}} atomic_uint*)p_;
  uint seen = e;
  while (!atomic_compare_exchange_weak_explicit(p, &seen, n, {_RELAXED}, {_RELAXED})) {{
    if (seen != e) return seen;
    seen = e;
  }}
  return e;
}}"""
_ASPACES = (1, 3)


def _atomic_def(name: str, op: str, sfx: str):
    if sfx[1:] != "32":
        return None
    kw = dict(pure=False, ptr_spaces=_ASPACES, llvm_attrs=_N)
    t = "float" if sfx == "f32" else "uint"
    frm, to = ("as_type<float>", "as_type<uint>") if sfx == "f32" else ("", "")
    if op == "cas":
        return SourceDef(f"{frm}(_gpux_atomic_cas_{{s0}}({{0}}, {to}({{1}}), {to}({{2}})))",
                         helper=_CAS, **kw)
    if op == "exch" and sfx == "f32":
        return SourceDef(f"as_type<float>(atomic_exchange_explicit(({{q0}} atomic_uint*){{0}}, "
                         f"as_type<uint>({{1}}), {_RELAXED}))", **kw)
    if sfx != "f32" and op in _NATIVE:
        at, st = ("atomic_int", "int") if sfx == "i32" else ("atomic_uint", "uint")
        return SourceDef(f"((uint){_NATIVE[op]}(({{q0}} {at}*){{0}}, ({st}){{1}}, {_RELAXED}))", **kw)
    store, new = _LOOP[op]
    h = f"_gpux_{name[len('__gpux_'):]}_{{s0}}"
    helper = (f"static inline {t} {h}({{q0}} uchar* p_, {t} v) {{\n"
              f"  {{q0}} atomic_uint* p = ({{q0}} atomic_uint*)p_;\n"
              f"  uint old = atomic_load_explicit(p, {_RELAXED});\n"
              f"  while (1) {{\n"
              f"    {t} o = {frm}(old);\n"
              f"    if (!({store})) return o;\n"
              f"    if (atomic_compare_exchange_weak_explicit(p, &old, {to}(({t})({new})), "
              f"{_RELAXED}, {_RELAXED})) return o;\n"
              f"  }}\n}}")
    return SourceDef(f"{h}({{0}}, {{1}})", helper=helper, **kw)


for _name, (_op, _sfx) in ATOMIC_INTRINSICS.items():
    _d = _atomic_def(_name, _op, _sfx)
    if _d is not None:
        SRC.define(_name, _d)
