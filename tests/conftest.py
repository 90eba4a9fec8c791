"""Shared fixtures: devices by target, skipping with a reason where hardware is absent."""

from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

# the numba.cuda facade's low-occupancy warning is off in tests (and the processes they
# start), as numba-cuda's own test cases turn it off: their small grids are deliberate;
# tests of the warning turn it on themselves
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
# autotuning is off in tests (and the processes they start), so that a test's large
# algorithm calls run the package's defaults rather than spending seconds measuring
# candidates; tests of autotuning turn it on themselves and choose by an injected cost
os.environ.setdefault("NUMBA_GPUX_AUTOTUNE", "0")

import numba_gpux as gpux  # noqa: E402


def _load_skiplist():
    import importlib.util
    import os

    spec = importlib.util.spec_from_file_location(
        "gpux_conformance_skiplist",
        os.path.join(os.path.dirname(__file__), "conformance", "skiplist.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


skiplist = _load_skiplist()


def pytest_configure(config):
    config.addinivalue_line("markers", "feature(*names): conformance features a test exercises "
                                       "(tests/conformance/skiplist.py)")
    config.addinivalue_line("markers", "needs(*features): device capabilities a test needs "
                                       "(Device.target_features)")


def pytest_collection_modifyitems(config, items):
    """In the PoCL process (gpux_testing.py) keep only tests parameterized with a PoCL device."""
    from gpux_testing import is_pocl, pocl_here

    if not pocl_here():
        return
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        (keep if any(is_pocl(v) for v in params.values()) else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.fixture(autouse=True)
def _feature_skips(request):
    """Skip, with the reason, a test whose device's target lists one of its features in
    the skip list, or whose device lacks a capability it needs."""
    if "device" not in request.fixturenames:
        yield
        return
    dev = request.getfixturevalue("device")
    if dev is not None:
        feats = [a for m in request.node.iter_markers("feature") for a in m.args]
        reason = skiplist.reason_for(dev.target_name, feats)
        if reason is not None:
            pytest.skip(reason)
        for m in request.node.iter_markers("needs"):
            for need in m.args:
                if not dev.target.has(need):
                    pytest.skip(f"{dev.spec} lacks the device feature {need!r}")
    yield


def _devices_of(target: str):
    return [d for d in gpux.devices() if d.target_name == target]


def all_devices():
    """Every available device this process tests (see gpux_testing.py: PoCL devices are
    tested in a child process of their own), for parameterizing conformance tests."""
    from gpux_testing import testable_here

    return [d for d in gpux.devices() if testable_here(d)]


def unusable_reason() -> str:
    """The devices of this process that failed their probe, with the driver's message
    (numba_gpux.probe), for skip reasons; '' when none did."""
    from gpux_testing import testable_here
    from numba_gpux.devices import unusable_devices

    bad = [d for d in unusable_devices() if testable_here(d)]
    return "; ".join(f"{d.spec} is unusable: {d.unusable_reason}" for d in bad)


def device_params():
    devs = all_devices()
    if not devs:
        bad = unusable_reason()
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=bad or "no GPU-capable device found (install numba-gpux[cpu] for the "
                          "OpenCL CPU driver)"))]
    return [pytest.param(d, id=d.spec) for d in devs]


@pytest.fixture(params=device_params())
def device(request):
    """Each available device in turn, selected as the default."""
    from gpux_testing import selected

    with selected(request.param) as dev:
        yield dev


@pytest.fixture
def opencl_device():
    devs = _devices_of("opencl")
    if not devs:
        pytest.skip(unusable_reason() or "no SPIR-V capable OpenCL device "
                                         "(pip install 'numba-gpux[cpu]')")
    from gpux_testing import selected

    with selected(devs[0]) as dev:
        yield dev


@pytest.fixture
def cuda_device():
    devs = _devices_of("cuda")
    if not devs:
        pytest.skip("no NVIDIA GPU with cuda-python available")
    from gpux_testing import selected

    with selected(devs[0]) as dev:
        yield dev


@pytest.fixture
def ptxas():
    from numba_gpux.targets.cuda import toolkit

    path = toolkit.find_ptxas()  # PATH, CUDA_HOME, /usr/local/cuda or NVIDIA's pip wheels
    if path is None:
        pytest.skip("ptxas is not installed (a CUDA toolkit, or pip install nvidia-cuda-nvcc-cu12)")
    return path


@pytest.fixture
def spirv_val():
    path = shutil.which("spirv-val")
    if path is None:
        pytest.skip("spirv-val is not installed (Debian package spirv-tools)")
    return path


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
