"""``cuda.cudadrv.nvrtc``: the compute capabilities numba-gpux's CUDA target writes PTX
for, chosen as numba.cuda chooses among NVRTC's; the NVRTC version where the library
is installed; and ``core.callconv.CUDACallConv``, the convention of Numba-ABI
functions."""

from __future__ import annotations

import importlib

import pytest
from numba.core import callconv

from numba_gpux import cuda
from numba_gpux.cuda.cudadrv import nvrtc
from numba_gpux.cuda.cudadrv.error import CCSupportError, NvrtcSupportError
from numba_gpux.errors import UnsupportedError


def test_supported_capabilities_are_those_ptx_is_written_for():
    ccs = nvrtc.get_supported_ccs()
    assert ccs == sorted(ccs) and len(ccs) > 10
    assert nvrtc.get_lowest_supported_cc() == ccs[0] == (5, 0)
    assert {(7, 5), (8, 0), (9, 0)} <= set(ccs)
    for cc in ccs:  # each one is a target compile_ptx writes
        ptx, _ = cuda.compile_ptx(lambda: None, (), cc=cc)
        assert f".target sm_{cc[0]}{cc[1]}" in ptx


@pytest.mark.parametrize("cc, want", [
    ((8, 0), (8, 0)),     # supported: itself
    ((8, 4), (8, 0)),     # between two: the older
    ((99, 9), None),      # newer than all: the newest
])
def test_find_closest_arch_picks_from_below(cc, want):
    want = want or nvrtc.get_supported_ccs()[-1]
    assert nvrtc.find_closest_arch(cc) == want


def test_a_capability_older_than_all_is_refused():
    with pytest.raises(CCSupportError, match="3.0 is not supported"):
        nvrtc.find_closest_arch((3, 0))


def test_arch_option_names_the_closest_capability():
    assert nvrtc.get_arch_option(8, 4) == "compute_80"
    assert nvrtc.get_arch_option(9, 0, "a") == "compute_90a"


def test_ptx_for_the_current_device_targets_its_closest_arch(device):
    cc = nvrtc.find_closest_arch(cuda.get_current_device().compute_capability)
    ptx, _ = cuda.compile_ptx_for_current_device(lambda x, y: x + y,
                                                 (cuda.float32, cuda.float32), device=True)
    assert f".target sm_{cc[0]}{cc[1]}" in ptx


def test_nvrtc_version_is_the_installed_librarys():
    try:
        from cuda.bindings import nvrtc as bindings
        err, major, minor = bindings.nvrtcVersion()
    except Exception:  # no NVRTC here: the facade says so with numba.cuda's error
        with pytest.raises(NvrtcSupportError):
            nvrtc._get_nvrtc_version()
        return
    assert nvrtc._get_nvrtc_version() == (major, minor)


def test_compiling_cuda_c_is_unsupported():
    with pytest.raises(UnsupportedError, match="CUDA C"):
        nvrtc.compile("__device__ int f() { return 1; }", "f.cu", (8, 0))


def test_callconv_module_names_the_numba_abi_convention():
    from numba_gpux.context import target_context

    mod = importlib.import_module("numba_gpux.cuda.core.callconv")
    assert issubclass(mod.CUDACallConv, callconv.MinimalCallConv)
    assert mod.MinimalCallConv is callconv.MinimalCallConv
    # the convention the compiler gives Numba-ABI functions
    assert isinstance(target_context().call_conv, mod.CUDACallConv)
