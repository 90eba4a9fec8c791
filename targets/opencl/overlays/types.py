"""float16 math for SPIR-V: OpenCL's half-precision builtins (cl_khr_fp16), which the
SPIR-V back end turns into OpenCL.std ext-insts on half.  These replace the shared
float32-based defaults of ``__gpux_<fn>_f16``."""

from __future__ import annotations

from numba_gpux.language.intrinsics import MATH_BINARY, MATH_UNARY
from numba_gpux.overlays import Deferred, registry

SPIRV = registry("spirv")


def _half(fn: str, nargs: int) -> str:
    mangled = f"_Z{len(fn)}{fn}" + "Dh" + ("S_" if nargs == 2 else "")
    params = ", ".join(f"half %a{i}" for i in range(nargs))
    return (f"declare half @{mangled}({', '.join(['half'] * nargs)})\n"
            f"define half @__gpux_{fn}_f16({params}) alwaysinline nounwind {{\n"
            f"  %r = call half @{mangled}({params})\n  ret half %r\n}}")


for _fn in MATH_UNARY:
    SPIRV.define(f"__gpux_{_fn}_f16", Deferred(_half, _fn, 1))
for _fn in MATH_BINARY:
    SPIRV.define(f"__gpux_{_fn}_f16", Deferred(_half, _fn, 2))
