"""numba.cuda's debug-info settings in ``numba_gpux.cuda.config``: ``CUDA_DEBUG_POLY``
(variables of several types as DWARF 5 variant parts) is off, and true to the debug
info numba_gpux emits, which holds no variant part."""

from __future__ import annotations

import importlib

from numba_gpux import cuda


def test_debug_poly_settings_are_off_under_both_paths():
    assert cuda.config.CUDA_DEBUG_POLY is False
    assert cuda.config.CUDA_DEBUG_POLY_USE_TYPED_CONST is False
    core_config = importlib.import_module("numba_gpux.cuda.core.config")
    assert core_config.CUDA_DEBUG_POLY is False
    assert "CUDA_DEBUG_POLY" in cuda.config.__all__


def test_a_variable_of_several_types_has_no_variant_part(device):
    @cuda.jit("void(int32, float64[::1])", debug=True, opt=False)
    def poly(x, out):
        v = x
        v = 2.5
        v = True
        out[0] = v

    ir = "\n".join(poly.inspect_llvm().values())
    assert "DICompileUnit" in ir  # debug info is there
    assert "DW_TAG_variant_part" not in ir
