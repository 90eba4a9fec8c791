"""SPIR-V definitions of the bit intrinsics LLVM's SPIR-V back end cannot lower.

``llvm.bitreverse`` becomes OpBitReverse, which OpenCL (the Kernel capability)
does not allow without SPV_KHR_bit_instructions, and LLVM aborts on it; bits
are reversed here with the classic swap-halves sequence instead.
"""

from __future__ import annotations

from numba_gpux.overlays import registry

SPIRV = registry("spirv")

_MASKS = {
    32: [(1, 0x55555555), (2, 0x33333333), (4, 0x0F0F0F0F), (8, 0x00FF00FF), (16, 0x0000FFFF)],
    64: [(1, 0x5555555555555555), (2, 0x3333333333333333), (4, 0x0F0F0F0F0F0F0F0F),
         (8, 0x00FF00FF00FF00FF), (16, 0x0000FFFF0000FFFF), (32, 0x00000000FFFFFFFF)],
}


def _brev(width: int) -> str:
    t = f"i{width}"
    lines = [f"define {t} @__gpux_brev_{t}({t} %x0) alwaysinline nounwind {{"]
    cur = "%x0"
    for k, (sh, mask) in enumerate(_MASKS[width]):
        m = mask if mask < 2 ** (width - 1) else mask - 2 ** width
        lines += [
            f"  %a{k} = lshr {t} {cur}, {sh}",
            f"  %b{k} = and {t} %a{k}, {m}",
            f"  %c{k} = and {t} {cur}, {m}",
            f"  %d{k} = shl {t} %c{k}, {sh}",
            f"  %x{k + 1} = or {t} %b{k}, %d{k}",
        ]
        cur = f"%x{k + 1}"
    lines += [f"  ret {t} {cur}", "}"]
    return "\n".join(lines)


for _w in (32, 64):
    SPIRV.define(f"__gpux_brev_i{_w}", _brev(_w))
