"""NVPTX definitions of the bit intrinsics: ``brev.b32/b64`` through ``llvm.bitreverse``."""

from __future__ import annotations

from numba_gpux.overlays import registry

NVPTX = registry("nvptx")

for _w in (32, 64):
    NVPTX.define(f"__gpux_brev_i{_w}", (
        f"declare i{_w} @llvm.bitreverse.i{_w}(i{_w})\n"
        f"define i{_w} @__gpux_brev_i{_w}(i{_w} %x) alwaysinline nounwind {{\n"
        f"  %r = call i{_w} @llvm.bitreverse.i{_w}(i{_w} %x)\n  ret i{_w} %r\n}}"))
