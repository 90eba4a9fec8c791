"""Definitions of the core portable intrinsics for NVPTX: indices, barrier, math.

Indices read PTX special registers through ``llvm.nvvm.read.ptx.sreg.*``
(LLVM knows their ranges, e.g. ``tid.x`` < 1024); the barrier is
``bar.sync 0`` (``__syncthreads``).  Math calls libdevice's ``__nv_*``
functions, linked by need in ``CUDATarget.finish_module``; the few
functions that are one PTX instruction use the LLVM intrinsic instead.
Written in NVPTX address spaces, which are the neutral numbering.
"""

from __future__ import annotations

from numba_gpux.language.intrinsics import MATH_APPROX, MATH_BINARY, MATH_UNARY
from numba_gpux.overlays import Deferred, registry

NVPTX = registry("nvptx")
NVPTX_SM70 = registry("nvptx.sm70")
NVPTX_SM75 = registry("nvptx.sm75")

__all__ = ["LIBDEVICE_NAMES", "LLVM_MATH"]

_ATTR = "alwaysinline nounwind"


def _index(name: str, sreg: str) -> str:
    decls = "\n".join(f"declare i32 @llvm.nvvm.read.ptx.sreg.{sreg}.{a}()" for a in "xyz")
    return f"""{decls}
define i64 @{name}(i32 %d) {_ATTR} {{
entry:
  switch i32 %d, label %x [ i32 1, label %y
                            i32 2, label %z ]
x:
  %vx = call i32 @llvm.nvvm.read.ptx.sreg.{sreg}.x()
  %rx = zext nneg i32 %vx to i64
  ret i64 %rx
y:
  %vy = call i32 @llvm.nvvm.read.ptx.sreg.{sreg}.y()
  %ry = zext nneg i32 %vy to i64
  ret i64 %ry
z:
  %vz = call i32 @llvm.nvvm.read.ptx.sreg.{sreg}.z()
  %rz = zext nneg i32 %vz to i64
  ret i64 %rz
}}"""


NVPTX.define("__gpux_thread_idx", _index("__gpux_thread_idx", "tid"))
NVPTX.define("__gpux_block_idx", _index("__gpux_block_idx", "ctaid"))
NVPTX.define("__gpux_block_dim", _index("__gpux_block_dim", "ntid"))
NVPTX.define("__gpux_grid_dim", _index("__gpux_grid_dim", "nctaid"))
# __syncthreads: bar.sync 0 (LLVM 22 spells llvm.nvvm.barrier0 this way)
NVPTX.define("__gpux_barrier", (
    "declare void @llvm.nvvm.barrier.cta.sync.aligned.all(i32) convergent nounwind\n"
    f"define void @__gpux_barrier() {_ATTR} convergent {{\n"
    "  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)\n  ret void\n}"))

_FT = {"f32": ("float", "f32", "f"), "f64": ("double", "f64", "")}

#: math functions that are a single PTX instruction: the LLVM intrinsic, which the
#: NVPTX back end lowers exactly (sqrt.rn, abs, cvt.rmi/rpi/rzi/rni, min/max, copysign)
LLVM_MATH = {"sqrt": "sqrt", "fabs": "fabs", "floor": "floor", "ceil": "ceil",
             "trunc": "trunc", "rint": "rint", "copysign": "copysign",
             "fmin": "minnum", "fmax": "maxnum"}

#: the libdevice function of every other math intrinsic, per type
LIBDEVICE_NAMES = {(fn, sfx): f"__nv_{fn}{_FT[sfx][2]}"
                   for fn in MATH_UNARY + MATH_BINARY if fn not in LLVM_MATH for sfx in _FT}


def _math(fn: str, sfx: str, nargs: int) -> str:
    llty, itag, _ = _FT[sfx]
    if fn in LLVM_MATH:
        callee = f"llvm.{LLVM_MATH[fn]}.{itag}"
    else:
        callee = LIBDEVICE_NAMES[fn, sfx]
    params = ", ".join(f"{llty} %a{i}" for i in range(nargs))
    return (f"declare {llty} @{callee}({', '.join([llty] * nargs)})\n"
            f"define {llty} @__gpux_{fn}_{sfx}({params}) {_ATTR} {{\n"
            f"  %r = call {llty} @{callee}({params})\n  ret {llty} %r\n}}")


for _fn in MATH_UNARY:
    for _sfx in _FT:
        NVPTX.define(f"__gpux_{_fn}_{_sfx}", Deferred(_math, _fn, _sfx, 1))
for _fn in MATH_BINARY:
    for _sfx in _FT:
        NVPTX.define(f"__gpux_{_fn}_{_sfx}", Deferred(_math, _fn, _sfx, 2))


def _fast_math(fn: str) -> str:
    """A fastmath kernel's float32 *fn*: libdevice's fast version (``__nv_fast_sinf``:
    ``sin.approx.f32``), as numba.cuda's fastmath; for sqrt, LLVM's with the flag
    ``afn`` (``sqrt.approx.f32``, NVVM's -prec-sqrt=0)."""
    params = "float %a, float %b" if fn == "pow" else "float %a"
    types_ = "float, float" if fn == "pow" else "float"
    callee, flags = ("llvm.sqrt.f32", " afn") if fn == "sqrt" else (f"__nv_fast_{fn}f", "")
    return (f"declare float @{callee}({types_})\n"
            f"define float @__gpux_{fn}_f32_approx({params}) {_ATTR} {{\n"
            f"  %r = call{flags} float @{callee}({params})\n  ret float %r\n}}")


for _fn in MATH_APPROX:
    if _fn != "tanh":  # (NVPTX_SM75 below)
        NVPTX.define(f"__gpux_{_fn}_f32_approx", Deferred(_fast_math, _fn))

# tanh.approx.f32 needs sm_75 and PTX ISA 7.0 (NVPTX cannot select an approximate tanh
# without them;
# older capabilities: the shared default, libdevice's tanhf), as numba.cuda's fastmath
NVPTX_SM75.define("__gpux_tanh_f32_approx", (
    "declare float @llvm.tanh.f32(float)\n"
    f"define float @__gpux_tanh_f32_approx(float %a) {_ATTR} {{\n"
    "  %r = call afn float @llvm.tanh.f32(float %a)\n  ret float %r\n}"))

# nanosleep.u32 needs sm_70 (older capabilities: the shared definition, no sleep)
NVPTX_SM70.define("__gpux_nanosleep", (
    "declare void @llvm.nvvm.nanosleep(i32)\n"
    f"define void @__gpux_nanosleep(i32 %ns) {_ATTR} {{\n"
    "  call void @llvm.nvvm.nanosleep(i32 %ns)\n  ret void\n}"))
