"""Every package in the source tree is listed in setup.cfg, so `pip install .` ships it."""

import configparser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_installed():
    cfg_path = ROOT / "setup.cfg"
    if not cfg_path.exists():
        pytest.skip("not running from a source checkout")
    cfg = configparser.ConfigParser()
    cfg.read(cfg_path)
    listed = {p.strip() for p in cfg["options"]["packages"].split() if p.strip()}
    found = set()
    for init in (ROOT / "numba_gpux").rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT)
        found.add(".".join(rel.parts))
    for init in (ROOT / "targets").rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT / "targets")
        found.add(".".join(("numba_gpux", "targets") + rel.parts))
    assert found - listed == set(), f"packages missing from setup.cfg: {sorted(found - listed)}"
    assert listed - found == set(), f"setup.cfg lists packages that do not exist: {sorted(listed - found)}"


def test_targets_are_registered_as_entry_points():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    eps = cfg["options.entry_points"]["numba_gpux.targets"]
    for name in ("opencl", "cuda", "metal"):
        assert f"{name} = numba_gpux.targets.{name}:target_entry" in eps


def test_cuda_extra_brings_the_driver_bindings_and_libdevice():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    reqs = [r.strip() for r in cfg["options.extras_require"]["cuda"].splitlines() if r.strip()]
    names = {r.split(";")[0].split(">")[0].split("=")[0].strip() for r in reqs}
    # cuda-python drives the GPU; nvidia-cuda-nvcc-cu12 ships nvvm/libdevice/libdevice.10.bc
    assert {"cuda-python", "nvidia-cuda-nvcc-cu12"} <= names


def test_libdevice_is_found_in_nvidia_wheel_layouts(tmp_path, monkeypatch):
    import shutil
    import sys

    from numba_gpux.targets.cuda import libdevice

    real = libdevice.find_libdevice()
    if real is None:
        pytest.skip("no libdevice here (pip install nvidia-cuda-nvcc-cu12)")
    # the layouts of NVIDIA's wheels: nvidia/cuda_nvcc/nvvm (CUDA 12), nvidia/cu13/nvvm
    for wheel_dir in ("cuda_nvcc", "cu13"):
        site = tmp_path / wheel_dir
        dest = site / "nvidia" / wheel_dir / "nvvm" / "libdevice"
        dest.mkdir(parents=True)
        shutil.copy(real, dest / "libdevice.10.bc")
        monkeypatch.setattr(sys, "path", [str(site)])
        monkeypatch.delenv("CUDA_HOME", raising=False)
        monkeypatch.delenv("CUDA_PATH", raising=False)
        assert libdevice._candidate_dirs()[0] == str(dest)
        assert libdevice.find_libdevice() == str(dest / "libdevice.10.bc")
