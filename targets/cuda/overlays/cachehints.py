"""NVPTX definitions of the cache-hinted loads and stores (``__gpux_ld_*``, ``__gpux_st_*``).

Each is one ``ld.global.<hint>.b<bits>`` / ``st.global.<hint>.b<bits>`` instruction,
written as inline PTX (LLVM has no intrinsic for PTX's cache operators) on the
pointer cast to the global space.  A load is marked as reading memory only, so the
optimizer may move or merge it like a plain load; ``ld.cv`` (fetch again) and the
stores are side effects it keeps in order.  8-bit values travel in 16-bit registers,
as PTX allows for ``.b8``.
"""

from __future__ import annotations

from numba_gpux.language.intrinsics import (
    CACHE_HINT_WIDTHS as WIDTHS, LOAD_HINTS, STORE_HINTS, load_name, store_name,
)
from numba_gpux.overlays import registry

NVPTX = registry("nvptx")

_REG = {8: ("h", 16), 16: ("h", 16), 32: ("r", 32), 64: ("l", 64)}


def _load(hint: str, w: int) -> str:
    c, rw = _REG[w]
    kind = "asm sideeffect" if hint == "cv" else "asm"
    attrs = "" if hint == "cv" else " memory(read)"
    body = ["  %g = addrspacecast ptr %p to ptr addrspace(1)",
            f'  %r = call i{rw} {kind} "ld.global.{hint}.b{w} $0, [$1];", "={c},l"'
            f"(ptr addrspace(1) %g) nounwind{attrs}"]
    if rw != w:
        body.append(f"  %v = trunc i{rw} %r to i{w}")
    ret = "%v" if rw != w else "%r"
    return (f"define i{w} @{load_name(hint, w)}(ptr %p) alwaysinline nounwind {{\n"
            + "\n".join(body) + f"\n  ret i{w} {ret}\n}}")


def _store(hint: str, w: int) -> str:
    c, rw = _REG[w]
    body = ["  %g = addrspacecast ptr %p to ptr addrspace(1)"]
    val = "%v"
    if rw != w:
        body.append(f"  %x = zext i{w} %v to i{rw}")
        val = "%x"
    body.append(f'  call void asm sideeffect "st.global.{hint}.b{w} [$0], $1;", "l,{c},~{{memory}}"'
                f"(ptr addrspace(1) %g, i{rw} {val}) nounwind")
    return (f"define void @{store_name(hint, w)}(ptr %p, i{w} %v) alwaysinline nounwind {{\n"
            + "\n".join(body) + "\n  ret void\n}")


for _w in WIDTHS:
    for _h in LOAD_HINTS:
        NVPTX.define(load_name(_h, _w), _load(_h, _w))
    for _h in STORE_HINTS:
        NVPTX.define(store_name(_h, _w), _store(_h, _w))
