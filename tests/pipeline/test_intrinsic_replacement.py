"""LLVM intrinsics the SPIR-V back end cannot lower never reach it (it would abort the
process): the optimizer's own bit-reversal idiom is replaced and inlined."""

import numpy as np

import numba_gpux as gpux


@gpux.jit
def shift_mask_reverse(x, out):
    i = gpux.grid(1)
    if i < x.size:
        v = x[i]
        v = ((v >> 1) & 0x55555555) | ((v & 0x55555555) << 1)
        v = ((v >> 2) & 0x33333333) | ((v & 0x33333333) << 2)
        v = ((v >> 4) & 0x0F0F0F0F) | ((v & 0x0F0F0F0F) << 4)
        v = ((v >> 8) & 0x00FF00FF) | ((v & 0x00FF00FF) << 8)
        v = (v >> 16) | (v << 16)
        out[i] = v


def test_bitreverse_idiom_compiles_without_the_intrinsic():
    art = gpux.compile(shift_mask_reverse, "void(uint32[::1], uint32[::1])", target="opencl")
    assert "llvm.bitreverse" not in art.llvm_ir and "__gpux_" not in art.llvm_ir
    assert art.llvm_ir.count("define ") == 1


def test_bitreverse_idiom_runs(opencl_device):
    x = np.array([0, 1, 6, 255, 1 << 20, 0x7FFFFFFF, 0xDEADBEEF], np.uint32)
    out = gpux.device_array(x.size, np.uint32)
    shift_mask_reverse[1, 8](gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), [int(f"{v:032b}"[::-1], 2) for v in x])
