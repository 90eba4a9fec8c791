"""Warnings and errors of the numba.cuda facade: numba.cuda's classes, conditions and
wording (docs/migration.md)."""

import contextlib
import re
import warnings

import numpy as np
import pytest
from numba.core import config as numba_config
from numba.core.errors import (NumbaInvalidConfigWarning, NumbaPerformanceWarning,
                               TypingError)

from numba_gpux import cuda
from numba_gpux.cuda import config


@contextlib.contextmanager
def _setting(name, value, module=config):
    had = name in vars(module)
    old = getattr(module, name)
    setattr(module, name, value)
    try:
        yield
    finally:
        if had:
            setattr(module, name, old)
        else:
            delattr(module, name)


@contextlib.contextmanager
def _recorded():
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        yield got


def _of(got, cls, text):
    return [w for w in got if issubclass(w.category, cls) and text in str(w.message)]


def _empty():
    pass


# ------------------------------------------------------------------ low occupancy
def test_small_grid_warns_while_low_occupancy_warnings_are_on():
    k = cuda.jit(_empty)
    with _setting("CUDA_LOW_OCCUPANCY_WARNINGS", True), _recorded() as got:
        k[2, 32]
        k[(4, 4, 7), 1]          # 112 blocks
    # (Numba highlights warning text with terminal codes where its colour scheme is on)
    msgs = [re.sub(r"\x1b\[[0-9;]*m", "", str(w.message))
            for w in _of(got, NumbaPerformanceWarning, "low occupancy")]
    assert msgs == ["Grid size 2 will likely result in GPU under-utilization due to low "
                    "occupancy.",
                    "Grid size 112 will likely result in GPU under-utilization due to low "
                    "occupancy."]
    # at each configuration, as numba.cuda makes one per kernel[...]
    with _setting("CUDA_LOW_OCCUPANCY_WARNINGS", True), _recorded() as got:
        k[2, 32]
    assert len(_of(got, NumbaPerformanceWarning, "Grid size 2")) == 1


def test_large_grid_or_setting_off_does_not_warn():
    k = cuda.jit(_empty)
    with _setting("CUDA_LOW_OCCUPANCY_WARNINGS", True), _recorded() as got:
        k[128, 1]
        k[(16, 8), 32]
    assert not _of(got, NumbaPerformanceWarning, "occupancy")
    with _setting("CUDA_LOW_OCCUPANCY_WARNINGS", 0), _recorded() as got:
        k[1, 1]
    assert not _of(got, NumbaPerformanceWarning, "occupancy")
    with _setting("CUDA_LOW_OCCUPANCY_WARNINGS", True), \
            _setting("DISABLE_PERFORMANCE_WARNINGS", 1), _recorded() as got:
        k[1, 1]
    assert not _of(got, NumbaPerformanceWarning, "occupancy")


def test_on_by_default_and_read_from_the_environment():
    import subprocess
    import sys

    code = "from numba_gpux.cuda import config; print(config.CUDA_LOW_OCCUPANCY_WARNINGS)"
    env = {k: v for k, v in __import__("os").environ.items()
           if k != "NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["1"]
    env["NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS"] = "0"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["0"]


def test_ufunc_launch_of_a_small_grid_warns(device):
    @cuda.guvectorize(["void(float32[:], float32[:], float32[:])"], "(n),(n)->(n)")
    def scaled(a, b, out):
        for i in range(a.shape[0]):
            out[i] = a[i] * b[i]

    a = np.arange(64, dtype=np.float32)
    with _setting("CUDA_LOW_OCCUPANCY_WARNINGS", 1), _recorded() as got:
        out = scaled(a, a)
    assert _of(got, NumbaPerformanceWarning, "Grid size 1 will likely result")
    np.testing.assert_equal(out, a * a)


def test_small_grid_launch_still_runs(device):
    @cuda.jit
    def fill(out):
        out[cuda.grid(1)] = 7

    out = cuda.device_array(4, np.int32)
    with _setting("CUDA_LOW_OCCUPANCY_WARNINGS", True), _recorded():
        fill[1, 4](out)
    np.testing.assert_equal(out.copy_to_host(), 7)


# ------------------------------------------------------------------ debug and opt
def test_debug_with_opt_warns():
    for kw in ({"debug": True, "opt": True}, {"debug": True}):
        with _recorded() as got:
            cuda.jit(**kw)
        assert _of(got, NumbaInvalidConfigWarning,
                   "debug=True with opt=True is not supported by CUDA"), kw


def test_debug_without_opt_and_plain_jit_do_not_warn():
    for kw in ({"debug": True, "opt": False}, {}, {"opt": True}):
        with _recorded() as got:
            cuda.jit(**kw)
        assert not _of(got, NumbaInvalidConfigWarning, ""), kw


def test_defaults_come_from_the_configuration():
    with _setting("CUDA_DEBUGINFO_DEFAULT", True):
        with _recorded() as got:
            k = cuda.jit(_empty)               # debug by default, optimized: warns
        assert _of(got, NumbaInvalidConfigWarning, "not supported by CUDA")
        assert k.options.debug
        with _setting("OPT", numba_config._OptLevel(0)), _recorded() as got:
            k = cuda.jit(_empty)
        assert not _of(got, NumbaInvalidConfigWarning, "")
        assert k.options.debug and k.options.opt == 0
    with _setting("OPT", numba_config._OptLevel(0)), _recorded() as got:
        cuda.jit(debug=True)
    assert not _of(got, NumbaInvalidConfigWarning, "")


def test_debug_with_lineinfo_warns():
    with _recorded() as got:
        cuda.jit(debug=True, opt=False, lineinfo=True)
    assert _of(got, NumbaInvalidConfigWarning, "debug and lineinfo are mutually exclusive")


# ------------------------------------------------------------------ errors
def test_typing_error_names_the_callee_as_numba_cuda_does(device):
    @cuda.jit(device=True)
    def helper(x):
        return undefined_here(x)  # noqa: F821

    @cuda.jit
    def k():
        helper(1.5)

    with pytest.raises(TypingError) as e:
        k[1, 1]()
    text = str(e.value)
    assert "resolving callee type: type(CUDADispatcher(<function " in text
    assert "NameError: name 'undefined_here' is not defined" in text
    assert repr(helper).startswith("CUDADispatcher(<function ")


def test_lto_is_numba_cudas_error_without_nvjitlink():
    from numba_gpux.cuda.cudadrv import driver

    assert not driver._have_nvjitlink()
    with pytest.raises(RuntimeError, match="LTO requires nvjitlink"):
        cuda.jit(lto=True)(_empty)
    cuda.jit(lto=False)(_empty)   # accepted, as numba.cuda accepts it
