"""Choosing the device per launch and per scope; the two-device cases run in a child.

The cases with two devices (tests/multidevice_cases.py) use the Intel OpenCL CPU
driver and PoCL together; they run in a process of their own, as the PoCL
tests do (see gpux_testing.py), so that one driver's crash cannot take the
main test process with it.
"""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import numba_gpux as gpux

TESTS = Path(__file__).resolve().parent


@gpux.jit
def fill(out, v):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = v


def test_launch_names_its_device(opencl_device):
    out = gpux.to_device(np.zeros(8))
    for dev in (opencl_device, opencl_device.spec):
        cfg = fill[1, 8, dev]
        assert cfg.device is opencl_device and cfg.queue is None
        cfg(out, 2.5)
    np.testing.assert_array_equal(out.copy_to_host(), np.full(8, 2.5))
    assert fill[1, 8, opencl_device] is fill[1, 8, opencl_device]  # kept like k[g, b]


def test_unknown_device_in_a_launch_is_a_clear_error(opencl_device):
    with pytest.raises(gpux.DeviceNotFoundError, match="opencl:gpu:7"):
        fill[1, 8, "opencl:gpu:7"]


def test_use_device_restores_on_error(opencl_device):
    with pytest.raises(RuntimeError):
        with gpux.use_device(opencl_device):
            assert gpux.default_device() is opencl_device
            raise RuntimeError("boom")
    assert sys.modules["numba_gpux.devices"]._scoped == 0  # (the name is also a function's)


def test_two_devices_in_one_process():
    devs = gpux.devices()
    if len(devs) < 2:
        pytest.skip(f"needs two usable devices (found {[d.spec for d in devs]}); the test "
                    f"extra brings Intel's OpenCL CPU driver and PoCL")
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(TESTS / "multidevice_cases.py")], capture_output=True, text=True,
                         cwd=str(TESTS.parent), timeout=600)
    tail = "\n".join((res.stdout + res.stderr).splitlines()[-40:])
    assert res.returncode == 0, f"two-device cases failed:\n{tail}"
    m = re.search(r"(\d+) passed", res.stdout)
    assert m and int(m.group(1)) >= 6, f"two-device cases did not all run:\n{tail}"
