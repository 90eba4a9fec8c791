"""print() for SPIR-V: OpenCL C printf (format in the constant address space, 2),
which LLVM's SPIR-V back end turns into the OpenCL.std printf ext-inst.  The
mangled name (``printf(constant char*, ...)``) demangles to ``printf``."""

from __future__ import annotations

from numba_gpux.language.intrinsics import PRINTF_PREFIX, printf_codes
from numba_gpux.overlays import registry

from ..printf_guard import PRINTF

SPIRV = registry("spirv")


def _define(name: str) -> str | None:
    codes = printf_codes(name)
    if codes is None:
        return None
    params = "".join(f", {'i64' if c == 'l' else 'double'} %a{i}" for i, c in enumerate(codes))
    return (f"declare i32 @{PRINTF}(ptr addrspace(2), ...)\n"
            f"define i32 @__gpux_printf_{codes}(ptr addrspace(2) %fmt{params}) "
            f"alwaysinline nounwind {{\n"
            f"  %r = call i32 (ptr addrspace(2), ...) @{PRINTF}(ptr addrspace(2) %fmt{params})\n"
            f"  ret i32 %r\n}}")


SPIRV.define_family(PRINTF_PREFIX, _define)
