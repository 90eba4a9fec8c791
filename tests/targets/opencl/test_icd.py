"""The pip-installed OpenCL driver is found without environment variables, and the
system's own drivers stay visible."""

import os
import subprocess
import sys

import pytest


def test_vendor_dir_lists_system_and_environment_drivers(tmp_path, monkeypatch):
    drivers = pytest.importorskip("numba_gpux.targets.opencl.drivers")
    env_vendors = [d for d in drivers._env_vendor_dirs() if os.path.isdir(d)]
    if not env_vendors:
        pytest.skip("no OpenCL driver is installed in this Python environment")
    system = tmp_path / "system-vendors"
    system.mkdir()
    (system / "vendor-gpu.icd").write_text("/opt/vendor/libvendorocl.so\n")
    monkeypatch.setattr(drivers, "SYSTEM_VENDORS", str(system))
    monkeypatch.setattr(drivers, "_icd_done", False)
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    monkeypatch.setenv("NUMBA_GPUX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR is read again
    drivers.ensure_icd_vendors()
    out = os.environ["OCL_ICD_VENDORS"]
    assert out.startswith(str(tmp_path / "tmp"))            # under TMPDIR, not the cache
    assert not (tmp_path / "cache").exists()
    assert oct(os.stat(os.path.dirname(os.path.dirname(out))).st_mode & 0o777) == "0o700"
    libs = [open(os.path.join(out, f)).read().strip() for f in os.listdir(out)]
    assert "/opt/vendor/libvendorocl.so" in libs            # the system's driver is kept
    assert any(os.path.exists(lib) for lib in libs if lib != "/opt/vendor/libvendorocl.so")


def test_user_setting_wins(tmp_path, monkeypatch):
    drivers = pytest.importorskip("numba_gpux.targets.opencl.drivers")
    monkeypatch.setattr(drivers, "_icd_done", False)
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
    drivers.ensure_icd_vendors()
    assert os.environ["OCL_ICD_VENDORS"] == str(tmp_path)


def test_fresh_process_finds_the_cpu_driver_with_no_environment_variables(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OCL_", "NUMBA_GPUX"))}
    env["NUMBA_GPUX_CACHE_DIR"] = str(tmp_path)
    res = subprocess.run([sys.executable, "-c", "import numba_gpux as g; "
                          "print([d.spec for d in g.devices() if d.target_name == 'opencl'])"],
                         capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)
    if "[]" in res.stdout:
        pytest.skip("no SPIR-V capable OpenCL driver installed (pip install 'numba-gpux[cpu]')")
    assert "opencl:cpu:0" in res.stdout, res.stderr


def test_unwritable_cache_dir_keeps_the_devices(tmp_path):
    """Device discovery does not write under the cache directory: with an unwritable
    one, a fresh process finds the same devices (and probes them for itself)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OCL_", "NUMBA_GPUX"))}
    code = ("import numba_gpux as g; print('DEVICES', sorted(d.spec for d in g.devices()))")
    ro = tmp_path / "readonly"
    ro.mkdir()
    (ro / "numba_gpux").write_text("a file where the cache directory would be")
    runs = {}
    for label, cache in (("writable", tmp_path / "cache"), ("unwritable", ro / "numba_gpux")):
        env = dict(base, NUMBA_GPUX_CACHE_DIR=str(cache))
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, timeout=300, cwd=tmp_path)
        assert res.returncode == 0, res.stderr[-3000:]
        runs[label] = [ln for ln in res.stdout.splitlines() if ln.startswith("DEVICES")]
    assert runs["writable"] == runs["unwritable"]
    if runs["writable"] == ["DEVICES []"]:
        pytest.skip("no OpenCL driver is installed in this Python environment")
