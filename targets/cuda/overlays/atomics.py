"""NVPTX definitions of the atomics that are a single PTX instruction here
(``atom.add.f32/f64``, ``atom.inc/dec.u32``) but not on every back end.

``atomicrmw fadd`` on f64 needs sm_60; LLVM expands it (and u64 inc/dec, which
PTX lacks) into a compare-and-swap loop where the instruction is missing.
"""

from __future__ import annotations

from . import NVPTX

_ORD = 'syncscope("device") monotonic'

for _sfx, _t in (("f32", "float"), ("f64", "double")):
    NVPTX.define(f"__gpux_atomic_fadd_{_sfx}", (
        f"define {_t} @__gpux_atomic_fadd_{_sfx}(ptr %p, {_t} %v) alwaysinline nounwind {{\n"
        f"  %r = atomicrmw fadd ptr %p, {_t} %v {_ORD}\n  ret {_t} %r\n}}"))

for _w in (32, 64):
    for _op, _rmw in (("inc", "uinc_wrap"), ("dec", "udec_wrap")):
        NVPTX.define(f"__gpux_atomic_{_op}_u{_w}", (
            f"define i{_w} @__gpux_atomic_{_op}_u{_w}(ptr %p, i{_w} %v) alwaysinline nounwind {{\n"
            f"  %r = atomicrmw {_rmw} ptr %p, i{_w} %v {_ORD}\n  ret i{_w} %r\n}}"))
