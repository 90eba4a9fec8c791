"""SPIR-V definitions of the atomics LLVM's SPIR-V back end cannot lower.

``atomicrmw fadd`` needs SPV_EXT_shader_atomic_float_add and
``atomicrmw uinc_wrap/udec_wrap`` cannot be legalized (LLVM aborts on both), so
float add and integer inc/dec are compare-and-swap loops on the integer bits,
relaxed, at device scope like every other atomic (``syncscope("device")``).
Pointers are generic (addrspace 4): they may point to global or local memory.
"""

from __future__ import annotations

from numba_gpux.overlays import registry

SPIRV = registry("spirv")

_ORD = 'syncscope("device") monotonic'
_PTR = "ptr addrspace(4)"


def _cas_loop(name: str, t: str, it: str, body: list[str]) -> str:
    """``body`` computes %new (type t) from %old (type t) and %v."""
    conv_in = f"  %old = bitcast {it} %oldi to {t}" if t != it else "  %old = add {t} %oldi, 0".format(t=t)
    conv_out = f"  %newi = bitcast {t} %new to {it}" if t != it else f"  %newi = add {it} %new, 0"
    ret = f"  %r = bitcast {it} %seen to {t}\n  ret {t} %r" if t != it else f"  ret {t} %seen"
    return "\n".join([
        f"define {t} @{name}({_PTR} %p, {t} %v) alwaysinline nounwind {{",
        "entry:",
        f"  %first = load atomic {it}, {_PTR} %p {_ORD}, align {int(it[1:]) // 8}",
        "  br label %loop",
        "loop:",
        f"  %oldi = phi {it} [ %first, %entry ], [ %seen, %loop ]",
        conv_in,
        *body,
        conv_out,
        f"  %pair = cmpxchg {_PTR} %p, {it} %oldi, {it} %newi {_ORD} monotonic",
        f"  %seen = extractvalue {{ {it}, i1 }} %pair, 0",
        f"  %ok = extractvalue {{ {it}, i1 }} %pair, 1",
        "  br i1 %ok, label %done, label %loop",
        "done:",
        f"  %seen.final = phi {it} [ %oldi, %loop ]",
        ret.replace("%seen", "%seen.final"),
        "}",
    ])


for _sfx, _t, _it in (("f32", "float", "i32"), ("f64", "double", "i64")):
    SPIRV.define(f"__gpux_atomic_fadd_{_sfx}", _cas_loop(
        f"__gpux_atomic_fadd_{_sfx}", _t, _it, [f"  %new = fadd {_t} %old, %v"]))

for _w in (32, 64):
    _t = f"i{_w}"
    SPIRV.define(f"__gpux_atomic_inc_u{_w}", _cas_loop(f"__gpux_atomic_inc_u{_w}", _t, _t, [
        f"  %lt = icmp ult {_t} %old, %v",
        f"  %inc = add {_t} %old, 1",
        f"  %new = select i1 %lt, {_t} %inc, {_t} 0",
    ]))
    SPIRV.define(f"__gpux_atomic_dec_u{_w}", _cas_loop(f"__gpux_atomic_dec_u{_w}", _t, _t, [
        f"  %dec = add {_t} %old, -1",
        f"  %lt = icmp ult {_t} %dec, %v",
        f"  %new = select i1 %lt, {_t} %dec, {_t} %v",
    ]))
