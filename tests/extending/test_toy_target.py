"""A target from outside the package, registered through the entry-point group."""

from __future__ import annotations

import importlib
import math
import pathlib
import shutil
import sys

import numpy as np
import pytest

import numba_gpux as gpux
devmod = importlib.import_module("numba_gpux.devices")

FIXTURE = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "toy_target" / "toy_target"


def _install_toy(tmp_path, monkeypatch):
    """The toy package plus its dist-info on a temporary sys.path entry, as pip would
    leave it, then a rescan."""
    shutil.copytree(FIXTURE, tmp_path / "toy_target")
    dist = tmp_path / "toy_target-0.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy_target\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[numba_gpux.targets]\ntoy = toy_target:target_entry\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    devmod.rescan()


def _uninstall_toy(monkeypatch):
    monkeypatch.undo()
    for name in [m for m in sys.modules if m == "toy_target" or m.startswith("toy_target.")]:
        del sys.modules[name]
    devmod.rescan()


@pytest.fixture
def toy_installed(tmp_path, opencl_device, monkeypatch):
    prev = devmod._selected
    _install_toy(tmp_path, monkeypatch)
    yield
    _uninstall_toy(monkeypatch)
    devmod._selected = prev


def test_toy_target_is_found_and_runs_kernels(toy_installed, opencl_device):
    assert "toy" in devmod.targets()
    toys = [d for d in gpux.devices() if d.target_name == "toy"]
    assert toys, "the toy target found no device"
    toy = toys[0]
    assert toy.spec.startswith("toy:")
    assert type(toy.target).__name__ == "ToyTarget"
    assert toy.target.fingerprint != opencl_device.target.fingerprint

    @gpux.jit
    def k(x, out, out2):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = math.exp(x[i])
            out2[i] = math.sin(x[i])

    x = np.array([-20.0, -11.0, -1.0, 0.0, 1.5], np.float32)
    results = {}
    for dev in (opencl_device, toy):
        gpux.select_device(dev)
        d = gpux.to_device(x)
        o = gpux.device_array(x.shape, x.dtype)
        o2 = gpux.device_array(x.shape, x.dtype)
        k[1, 8](d, o, o2)
        results[dev.target_name] = (o.copy_to_host(), o2.copy_to_host())
    np.testing.assert_allclose(results["opencl"][0], np.exp(x), rtol=1e-6)
    np.testing.assert_allclose(results["opencl"][1], np.sin(x), rtol=1e-6)
    # the toy overlay: exp flushes to zero below -10; the SPIR-V family gives sin
    np.testing.assert_allclose(results["toy"][0], np.where(x < -10, 0, np.exp(x)), rtol=1e-6)
    assert results["toy"][0][0] == 0.0 and results["opencl"][0][0] > 0.0
    np.testing.assert_allclose(results["toy"][1], np.sin(x), rtol=1e-6)
    art = gpux.compile(k.py_func, "void(float32[::1], float32[::1], float32[::1])", target="toy")
    assert art.kind == "spirv" and art.binary[:4] == b"\x03\x02\x23\x07"


def test_select_toy_by_spec(toy_installed):
    dev = gpux.select_device("toy")
    assert dev.target_name == "toy"
    from numba_gpux import algorithms

    x = np.arange(50, dtype=np.float32)[::-1].copy()
    np.testing.assert_array_equal(algorithms.sort(x), np.sort(x))


def test_rescan_keeps_the_devices_found_before_and_facade_ids_follow(opencl_device):
    from numba_gpux import cuda

    before = {d.spec: d for d in gpux.devices()}
    gpux.select_device(opencl_device)
    facade_before = cuda.get_current_device()
    devmod.rescan()
    after = gpux.devices()
    # a device found again is the same object: arrays and the selected device stay valid
    for d in after:
        if d.spec in before:
            assert d is before[d.spec]
    assert opencl_device in after
    here = cuda.get_current_device()
    assert here is facade_before and cuda.gpus[here.id].gpux_device is opencl_device
    x = gpux.to_device(np.arange(4, dtype=np.float32))
    assert x.copy_to_host().tolist() == [0, 1, 2, 3]


def test_facade_device_ids_follow_a_target_added_and_removed(tmp_path, opencl_device,
                                                            monkeypatch):
    from numba_gpux import cuda

    gpux.select_device(opencl_device)
    try:
        _install_toy(tmp_path, monkeypatch)
        with_toy = len(cuda.gpus)
        here = cuda.get_current_device()
        assert cuda.gpus[here.id].gpux_device is opencl_device
    finally:
        _uninstall_toy(monkeypatch)
    assert len(cuda.gpus) < with_toy  # the toy devices are gone again
    here = cuda.get_current_device()  # its place in the list, as the list is now
    assert cuda.gpus[here.id].gpux_device is opencl_device
