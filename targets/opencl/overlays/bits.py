"""SPIR-V definitions of the bit intrinsics LLVM's SPIR-V back end cannot lower.

``llvm.bitreverse`` becomes OpBitReverse, which OpenCL (the Kernel capability)
does not allow without SPV_KHR_bit_instructions, and LLVM aborts on it.  Bits
are reversed one byte at a time with the multiply-and-mask trick ("Bit
Twiddling Hacks": ``((b * 0x80200802) & 0x0884422110) * 0x0101010101 >> 32``)
and the bytes reassembled in reverse order.  The classic shift-and-mask swap
sequence does not work here: LLVM's InstCombine recognizes it and turns it back
into ``llvm.bitreverse``.
"""

from __future__ import annotations

from numba_gpux.overlays import registry

SPIRV = registry("spirv")


def _brev(width: int) -> str:
    t = f"i{width}"
    lines = [f"define {t} @__gpux_brev_{t}({t} %x) alwaysinline nounwind {{"]
    src = "%x"
    if width < 64:
        lines.append(f"  %x64 = zext {t} %x to i64")
        src = "%x64"
    acc = None
    for k in range(width // 8):
        lines += [
            f"  %s{k} = lshr i64 {src}, {8 * k}",
            f"  %b{k} = and i64 %s{k}, 255",
            f"  %m{k} = mul i64 %b{k}, {0x80200802}",
            f"  %a{k} = and i64 %m{k}, {0x0884422110}",
            f"  %n{k} = mul i64 %a{k}, {0x0101010101}",
            f"  %h{k} = lshr i64 %n{k}, 32",
            f"  %r{k} = and i64 %h{k}, 255",
            f"  %p{k} = shl i64 %r{k}, {width - 8 - 8 * k}",
        ]
        if acc is None:
            acc = f"%p{k}"
        else:
            lines.append(f"  %o{k} = or i64 {acc}, %p{k}")
            acc = f"%o{k}"
    if width < 64:
        lines += [f"  %res = trunc i64 {acc} to {t}", f"  ret {t} %res", "}"]
    else:
        lines += [f"  ret i64 {acc}", "}"]
    return "\n".join(lines)


for _w in (32, 64):
    SPIRV.define(f"__gpux_brev_i{_w}", _brev(_w))
