"""print() for NVPTX: the CUDA runtime's ``vprintf(format, argument buffer)``.

The values are stored in a local buffer, each in an 8-byte slot (all portable
printf values are i64 or double), which is the layout vprintf reads."""

from __future__ import annotations

from numba_gpux.language.intrinsics import PRINTF_PREFIX, printf_codes
from numba_gpux.overlays import registry

NVPTX = registry("nvptx")


def _define(name: str) -> str | None:
    codes = printf_codes(name)
    if codes is None:
        return None
    tys = ["i64" if c == "l" else "double" for c in codes]
    params = "".join(f", {t} %a{i}" for i, t in enumerate(tys))
    body = "  %f = addrspacecast ptr addrspace(4) %fmt to ptr\n"
    if tys:
        st = "{" + ", ".join(tys) + "}"
        body += f"  %buf = alloca {st}, align 8\n"
        for i, t in enumerate(tys):
            body += (f"  %p{i} = getelementptr inbounds {st}, ptr %buf, i32 0, i32 {i}\n"
                     f"  store {t} %a{i}, ptr %p{i}, align 8\n")
        arg = "ptr %buf"
    else:
        arg = "ptr null"
    return ("declare i32 @vprintf(ptr, ptr)\n"
            f"define i32 @__gpux_printf_{codes}(ptr addrspace(4) %fmt{params}) "
            f"alwaysinline nounwind {{\n{body}"
            f"  %r = call i32 @vprintf(ptr %f, {arg})\n  ret i32 %r\n}}")


NVPTX.define_family(PRINTF_PREFIX, _define)
