"""Devices are probed before they are trusted (numba_gpux.probe).

A failing device is produced for real: each OpenCL driver installed here can be
made to fail by an environment variable of its own, in a child process --
PoCL's ``POCL_EXTRA_BUILD_FLAGS`` with an option it rejects makes every program
build fail (what PoCL 3.0 does on a CPU its LLVM does not know), and the Intel
CPU runtime's ``CL_CONFIG_CPU_TARGET_ARCH`` with an unknown architecture makes
its context fail.  Each child gets a fresh temporary directory (``TMPDIR``, where
probe records live) and cache directory, so nothing remembered from this
process's probes is reused.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import numba_gpux as gpux
from gpux_testing import is_pocl
from numba_gpux.devices import _parse_spec, _spec_matches, unusable_devices

ROOT = Path(__file__).resolve().parent.parent
BAD_POCL = {"POCL_EXTRA_BUILD_FLAGS": "-mcpu=gpux-no-such-cpu"}
BAD_INTEL = {"CL_CONFIG_CPU_TARGET_ARCH": "gpux-no-such-cpu"}

REPORT = """
import json, numba_gpux as g
from numba_gpux import probe
from numba_gpux.devices import unusable_devices
try:
    default = g.default_device().spec
except g.DeviceNotFoundError as e:
    default = "none: " + str(e)
print("REPORT", json.dumps({
    "usable": [d.spec for d in g.devices()],
    "unusable": {d.spec: d.unusable_reason for d in unusable_devices()},
    "platforms": {d.spec: d.platform for d in g.devices() + unusable_devices()},
    "default": default, "probes": probe.stats["probes"]}))
"""


def _env(cache, **extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NUMBA_GPUX", "POCL_", "CL_CONFIG_"))}
    tmp = Path(cache).parent / "tmp"
    tmp.mkdir(exist_ok=True)
    env.update(NUMBA_GPUX_CACHE_DIR=str(cache), TMPDIR=str(tmp), **extra)
    return env


def _run(args, cache, timeout=300, **extra):
    res = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                         env=_env(cache, **extra), cwd=str(ROOT), timeout=timeout)
    return res


def _report(cache, **extra) -> dict:
    res = _run(["-c", REPORT], cache, **extra)
    assert res.returncode == 0, res.stderr[-3000:]
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("REPORT ")][-1]
    return json.loads(line[len("REPORT "):])


def _specs(pred):
    return [d.spec for d in gpux.devices() + unusable_devices() if pred(d)]


def _pocl_specs():
    specs = _specs(is_pocl)
    if not specs:
        pytest.skip("no PoCL device here (pocl-binary-distribution, in the cpu and test extras)")
    return specs


def _intel_specs():
    specs = _specs(lambda d: d.platform.startswith("Intel(R) OpenCL"))
    if not specs:
        pytest.skip("no Intel OpenCL CPU runtime here (pip install 'numba-gpux[cpu]')")
    return specs


def test_spec_matching_counts_kind_or_target_indices():
    usable = gpux.devices()
    if not usable:
        pytest.skip("no usable device")
    d = usable[0]
    assert _spec_matches(_parse_spec(d.spec), d)
    assert _spec_matches(_parse_spec(d.target_name), d)
    assert _spec_matches(_parse_spec(f"{d.target_name}:{d.index}"), d)
    assert not _spec_matches(_parse_spec(f"{d.target_name}:{d.kind}:{d.kind_index + 1}"), d)
    assert not _spec_matches(_parse_spec(f"{d.target_name}x"), d)


def test_a_device_whose_programs_fail_to_build_is_left_out(tmp_path):
    pocl = _pocl_specs()
    rep = _report(tmp_path / "cache", **BAD_POCL)
    for spec in pocl:
        assert spec not in rep["usable"]
        assert "-mcpu=gpux-no-such-cpu" in rep["unusable"][spec]  # the driver's own message
        assert "--- IR ---" not in rep["unusable"][spec]
    assert not rep["default"].startswith(tuple(pocl))
    # the other devices are unaffected, and the same environment without the bad
    # setting lists PoCL again: a failure is not remembered
    others = [s for s in rep["usable"]]
    good = _report(tmp_path / "cache")
    assert set(pocl) <= set(good["usable"]) and set(others) <= set(good["usable"])
    assert good["unusable"] == {}


def test_every_device_unusable_means_no_default_with_the_reasons(tmp_path):
    pocl, intel = _pocl_specs(), _intel_specs()
    rep = _report(tmp_path / "cache", **BAD_POCL, **BAD_INTEL)
    for spec in pocl + intel:
        assert spec in rep["unusable"] and spec not in rep["usable"]
    assert "DEVICE_NOT_AVAILABLE" in rep["unusable"][intel[0]]
    if not rep["usable"]:
        assert rep["default"].startswith("none: ")
        assert f"Unusable: {intel[0]}" in rep["default"]
        assert "-mcpu=gpux-no-such-cpu" in rep["default"]


def test_info_shows_unusable_devices_with_the_drivers_message(tmp_path):
    pocl = _pocl_specs()
    res = _run(["-m", "numba_gpux", "info"], tmp_path / "cache", **BAD_POCL)
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout
    usable_part, _, unusable_part = out.partition("Unusable devices")
    assert unusable_part, out
    assert pocl[0] in unusable_part and "-mcpu=gpux-no-such-cpu" in unusable_part
    devices_part = usable_part.split("Devices (best first):", 1)[1]
    assert pocl[0] not in devices_part


def test_tests_skip_on_an_unusable_device_with_its_reason(tmp_path):
    _pocl_specs()
    res = _run(["-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                str(ROOT / "tests" / "test_pocl_process.py")], tmp_path / "cache", **BAD_POCL)
    assert res.returncode == 0, res.stdout[-3000:]
    assert "1 skipped" in res.stdout
    assert "is unusable on this machine" in res.stdout and "-mcpu=gpux-no-such-cpu" in res.stdout


def test_a_success_is_remembered_per_driver_and_device(tmp_path):
    """... in the user's temporary directory, not in the cache directory."""
    first = _report(tmp_path / "cache")
    if not first["usable"]:
        pytest.skip("no usable device")
    assert first["probes"] == len(first["usable"])
    record = list((tmp_path / "tmp").glob("numba-gpux-*/probes-v*.json"))
    assert len(record) == 1 and len(json.loads(record[0].read_text())) == len(first["usable"])
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("probe*"))
    second = _report(tmp_path / "cache")
    assert second["usable"] == first["usable"] and second["probes"] == 0


def test_visible_devices_narrow_the_list(tmp_path):
    every = _report(tmp_path / "cache")["usable"]
    if not every:
        pytest.skip("no usable device")
    one = every[-1]
    rep = _report(tmp_path / "cache", NUMBA_GPUX_VISIBLE_DEVICES=one)
    assert rep["usable"] == [one] and rep["default"] == one
    target = one.split(":")[0]
    rep = _report(tmp_path / "cache", NUMBA_GPUX_VISIBLE_DEVICES=f" {target} ,nosuch:9")
    assert rep["usable"] == [s for s in every if s.split(":")[0] == target]
    rep = _report(tmp_path / "cache", NUMBA_GPUX_VISIBLE_DEVICES="nosuch")
    assert rep["usable"] == [] and rep["default"].startswith("none: ")


def test_a_target_whose_discovery_raises_is_named(monkeypatch):
    """An error in a target's device discovery leaves its devices out, and is named
    where no device is found (not silently 'nothing found')."""
    import importlib

    devs = importlib.import_module("numba_gpux.devices")

    class Broken:
        name = "broken"
        priority = 0

        def discover(self):
            raise SyntaxError("unterminated string literal (overlays/core.py, line 99)")

    real = devs.targets()
    monkeypatch.setattr(devs, "targets", lambda: {**real, "broken": Broken()})
    try:
        devs.devices(refresh=True)
        assert "broken" in devs.discovery_errors
        msg = devs._no_device_message("broken:0")
        assert "Target 'broken' failed to look for devices: SyntaxError: unterminated" in msg
    finally:
        monkeypatch.undo()
        devs.discovery_errors.pop("broken", None)
        devs.devices(refresh=True)
