"""Definitions of the portable intrinsics for SPIR-V (OpenCL environment).

They call OpenCL C builtins by their Itanium-mangled names, which LLVM's
SPIR-V back end turns into SPIR-V built-in variables, OpExtInst of the
OpenCL.std set, and OpControlBarrier.  Written in SPIR-V address spaces.
"""

from __future__ import annotations

from numba_gpux.language.intrinsics import MATH_BINARY, MATH_UNARY
from numba_gpux.overlays import Deferred, registry

SPIRV = registry("spirv")

_ATTR = "alwaysinline nounwind"


def _index(name: str, builtin: str) -> str:
    mangled = f"_Z{len(builtin)}{builtin}j"
    return (f"declare i64 @{mangled}(i32)\n"
            f"define i64 @{name}(i32 %d) {_ATTR} {{\n"
            f"  %r = call i64 @{mangled}(i32 %d)\n  ret i64 %r\n}}")


SPIRV.define("__gpux_thread_idx", _index("__gpux_thread_idx", "get_local_id"))
SPIRV.define("__gpux_block_idx", _index("__gpux_block_idx", "get_group_id"))
SPIRV.define("__gpux_block_dim", _index("__gpux_block_dim", "get_local_size"))
SPIRV.define("__gpux_grid_dim", _index("__gpux_grid_dim", "get_num_groups"))
# launches pass no global offset (launch.py), so get_global_id is the shared default's sum
SPIRV.define("__gpux_global_idx", _index("__gpux_global_idx", "get_global_id"))
# CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE
SPIRV.define("__gpux_barrier", (
    "declare void @_Z7barrierj(i32) convergent\n"
    f"define void @__gpux_barrier() {_ATTR} convergent {{\n"
    "  call void @_Z7barrierj(i32 3)\n  ret void\n}"))

_FT = {"f32": ("float", "f"), "f64": ("double", "d")}


def _math(fn: str, sfx: str, nargs: int) -> str:
    llty, code = _FT[sfx]
    mangled = f"_Z{len(fn)}{fn}{code * nargs}"
    params = ", ".join(f"{llty} %a{i}" for i in range(nargs))
    args = ", ".join(f"{llty} %a{i}" for i in range(nargs))
    return (f"declare {llty} @{mangled}({', '.join([llty] * nargs)})\n"
            f"define {llty} @__gpux_{fn}_{sfx}({params}) {_ATTR} {{\n"
            f"  %r = call {llty} @{mangled}({args})\n  ret {llty} %r\n}}")


for _fn in MATH_UNARY:
    for _sfx in _FT:
        SPIRV.define(f"__gpux_{_fn}_{_sfx}", Deferred(_math, _fn, _sfx, 1))
for _fn in MATH_BINARY:
    for _sfx in _FT:
        SPIRV.define(f"__gpux_{_fn}_{_sfx}", Deferred(_math, _fn, _sfx, 2))


# LLVM intrinsics the SPIR-V back end aborts on, which the optimizer may create by
# itself (see compiler._replace_intrinsics and the target's ``replace_intrinsics``).
def _bitreverse(bits: int) -> str:
    t = f"i{bits}"
    lines = [f"define {t} @__gpux_llvm_bitreverse_{t}({t} %x) {_ATTR} {{", "entry:"]
    cur = "%x"
    masks = [(1, 0x5555555555555555), (2, 0x3333333333333333), (4, 0x0F0F0F0F0F0F0F0F),
             (8, 0x00FF00FF00FF00FF), (16, 0x0000FFFF0000FFFF), (32, 0x00000000FFFFFFFF)]
    k = 0
    for shift, mask in masks:
        if shift >= bits:
            break
        m = mask & ((1 << bits) - 1)
        lines += [f"  %a{k} = lshr {t} {cur}, {shift}", f"  %b{k} = and {t} %a{k}, {m}",
                  f"  %c{k} = and {t} {cur}, {m}", f"  %d{k} = shl {t} %c{k}, {shift}",
                  f"  %e{k} = or {t} %b{k}, %d{k}"]
        cur = f"%e{k}"
        k += 1
    lines += [f"  ret {t} {cur}", "}"]
    return "\n".join(lines)


def _sadd_overflow(bits: int) -> str:
    t = f"i{bits}"
    return (f"define {{ {t}, i1 }} @__gpux_llvm_sadd_with_overflow_{t}({t} %a, {t} %b) {_ATTR} {{\n"
            f"  %s = add {t} %a, %b\n"
            f"  %x1 = xor {t} %s, %a\n  %x2 = xor {t} %s, %b\n  %x = and {t} %x1, %x2\n"
            f"  %o = icmp slt {t} %x, 0\n"
            f"  %r0 = insertvalue {{ {t}, i1 }} undef, {t} %s, 0\n"
            f"  %r = insertvalue {{ {t}, i1 }} %r0, i1 %o, 1\n  ret {{ {t}, i1 }} %r\n}}")


def _mul_overflow(signed: bool, bits: int) -> str:
    """``llvm.smul/umul.with.overflow.i<bits>`` without the SPIR-V instruction that the
    back end writes for it (OpSMulExtended/OpUMulExtended): the Intel CPU driver (2026.2)
    fails to link a program that has it ("Invalid record"), and Numba's lowering of every
    allocation of an array of more than one dimension multiplies its shape with it.
    Narrower types multiply in 64 bits and compare the product with its truncation; 64
    bits divides the wrapped product by one factor (a factor of 0 never overflows, and -1
    only with the smallest value, whose division by -1 is the one that is undefined)."""
    t = f"i{bits}"
    op = "smul" if signed else "umul"
    head = (f"define {{ {t}, i1 }} @__gpux_llvm_{op}_with_overflow_{t}({t} %a, {t} %b) "
            f"{_ATTR} {{\n")
    if bits < 64:
        ext = "sext" if signed else "zext"
        body = (f"  %wa = {ext} {t} %a to i64\n  %wb = {ext} {t} %b to i64\n"
                f"  %w = mul i64 %wa, %wb\n  %p = trunc i64 %w to {t}\n"
                f"  %back = {ext} {t} %p to i64\n  %o = icmp ne i64 %back, %w\n")
    elif signed:
        body = (f"  %p = mul {t} %a, %b\n  %z = icmp eq {t} %a, 0\n"
                f"  %m1 = icmp eq {t} %a, -1\n  %skip = or i1 %z, %m1\n"
                f"  %d = select i1 %skip, {t} 1, {t} %a\n  %q = sdiv {t} %p, %d\n"
                f"  %ne = icmp ne {t} %q, %b\n"
                f"  %bmin = icmp eq {t} %b, {-(1 << (bits - 1))}\n"
                f"  %o1 = select i1 %m1, i1 %bmin, i1 %ne\n"
                f"  %o = select i1 %z, i1 false, i1 %o1\n")
    else:
        body = (f"  %p = mul {t} %a, %b\n  %z = icmp eq {t} %a, 0\n"
                f"  %d = select i1 %z, {t} 1, {t} %a\n  %q = udiv {t} %p, %d\n"
                f"  %ne = icmp ne {t} %q, %b\n  %o = select i1 %z, i1 false, i1 %ne\n")
    return (head + body + f"  %r0 = insertvalue {{ {t}, i1 }} undef, {t} %p, 0\n"
            f"  %r = insertvalue {{ {t}, i1 }} %r0, i1 %o, 1\n  ret {{ {t}, i1 }} %r\n}}")


def _minmax(op: str, bits: int) -> str:
    """``llvm.<op>.i<bits>`` as a compare and a select.  The Intel CPU driver (2026.2)
    reads the SPIR-V ``s_max``/``u_min``... built-ins it becomes as varying across the
    work-items: a loop whose trip count InstCombine wrote with ``llvm.smax`` (the tiled
    matrix product's ``range(n // 16)``) became a divergent loop around its barriers, 2.5x
    slower; as a compare and a select the count is uniform again."""
    t = f"i{bits}"
    pred = {"smax": "sgt", "smin": "slt", "umax": "ugt", "umin": "ult"}[op]
    return (f"define {t} @__gpux_llvm_{op}_{t}({t} %a, {t} %b) {_ATTR} {{\n"
            f"  %c = icmp {pred} {t} %a, %b\n  %r = select i1 %c, {t} %a, {t} %b\n"
            f"  ret {t} %r\n}}")


for _bits in (8, 16, 32, 64):
    for _op in ("smax", "smin", "umax", "umin"):
        SPIRV.define(f"__gpux_llvm_{_op}_i{_bits}", _minmax(_op, _bits))
    SPIRV.define(f"__gpux_llvm_bitreverse_i{_bits}", _bitreverse(_bits))
    SPIRV.define(f"__gpux_llvm_sadd_with_overflow_i{_bits}", _sadd_overflow(_bits))
    SPIRV.define(f"__gpux_llvm_smul_with_overflow_i{_bits}", Deferred(_mul_overflow, True, _bits))
    SPIRV.define(f"__gpux_llvm_umul_with_overflow_i{_bits}", Deferred(_mul_overflow, False, _bits))
# a float16 fused multiply-add (a facade kernel's contracted ``a * x + y`` on halves,
# legalize_fma.fuse_contracted): Intel's OpenCL CPU driver computes ``llvm.fma.f16`` in
# a software routine, 10x slower than a multiply and an add.  Rounded once all the
# same: the product of two halves is exact in float32, the sum's rounding error comes
# back exactly (two-sum), and an inexact sum gets an odd last bit, so that rounding it
# to half rounds the exact value once; a NaN is CUDA's canonical one (as fma.rn.f16).
SPIRV.define("__gpux_llvm_fma_f16", f"""define half @__gpux_llvm_fma_f16(half %a, half %b, half %c) {_ATTR} {{
entry:
  %x = fpext half %a to float
  %y = fpext half %b to float
  %z = fpext half %c to float
  %p = fmul float %x, %y
  %s = fadd float %p, %z
  %back = fsub float %s, %p
  %ps = fsub float %s, %back
  %e1 = fsub float %p, %ps
  %e2 = fsub float %z, %back
  %err = fadd float %e1, %e2
  %u = bitcast float %s to i32
  %low = and i32 %u, 1
  %even = icmp eq i32 %low, 0
  %inexact = fcmp one float %err, 0.0
  %fix = and i1 %even, %inexact
  %errpos = fcmp ogt float %err, 0.0
  %spos = fcmp ogt float %s, 0.0
  %away = icmp eq i1 %errpos, %spos
  %up = add i32 %u, 1
  %down = sub i32 %u, 1
  %odd = select i1 %away, i32 %up, i32 %down
  %v = select i1 %fix, i32 %odd, i32 %u
  %sv = bitcast i32 %v to float
  %h = fptrunc float %sv to half
  %nan = fcmp uno half %h, %h
  %r = select i1 %nan, half 0xH7FFF, half %h
  ret half %r
}}""")
# InstCombine reverses the bits of a bool (``(int(a) | int(b)) - g`` on booleans gives
# llvm.bitreverse.i1): the identity
SPIRV.define("__gpux_llvm_bitreverse_i1", _bitreverse(1))
