"""The PoCL-parameterized tests, in a process of their own (see gpux_testing.py)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import numba_gpux as gpux
from gpux_testing import POCL_HERE_ENV, is_pocl, pocl_here

TESTS = Path(__file__).resolve().parent


def test_pocl_devices_in_their_own_process():
    if pocl_here():
        pytest.skip("this is the PoCL process itself")
    if not any(is_pocl(d) for d in gpux.devices()):
        from numba_gpux.devices import unusable_devices

        bad = [d for d in unusable_devices() if is_pocl(d)]
        if bad:  # listed by the driver, but it cannot build or run a trivial kernel here
            pytest.skip(f"the PoCL device {bad[0].spec} is unusable on this machine: "
                        f"{bad[0].unusable_reason}")
        pytest.skip("no PoCL device (pocl-binary-distribution, in the cpu and test extras)")
    env = dict(os.environ, **{POCL_HERE_ENV: "1"})
    res = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(TESTS / "conformance"), str(TESTS / "cuda_compat"),
         str(TESTS / "targets" / "opencl_c")],
        capture_output=True, text=True, env=env, cwd=str(TESTS.parent), timeout=1800)
    tail = "\n".join((res.stdout + res.stderr).splitlines()[-40:])
    assert res.returncode == 0, f"tests on PoCL failed:\n{tail}"
    m = re.search(r"(\d+) passed", res.stdout)
    assert m and int(m.group(1)) > 0, f"no test ran on PoCL:\n{tail}"
    print(res.stdout.splitlines()[-1])
