"""Helpers shared by the test modules (importable: pytest puts tests/ on sys.path).

PoCL runs in its own process.  PoCL 3.0 (pip's pocl-binary-distribution) and Intel's
OpenCL CPU runtime share a process when both are tested in one pytest run, and one
full-suite run crashed inside the Intel runtime's program build right after PoCL
tests (not reproduced since; PoCL showed local-memory bugs of its own: wrong
barrier-predicate counts across concurrent work-groups, a segfault with a local
array passed to a function).  So the main run tests every other device, and
tests/test_pocl_process.py runs the PoCL-parameterized tests in a child process
with ``GPUX_TESTS_POCL_HERE=1``; a failure there fails the suite as usual.
"""

from __future__ import annotations

import contextlib
import os
import sys

#: the checkout's root (the package's folder is its child), for child processes' PYTHONPATH
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def alias_env(device=None, **extra) -> dict:
    """The environment for a child Python that runs numba.cuda code through
    ``python -m numba_gpux.alias``: this one's, without the simulator switch or an
    alias set up by a parent, with this checkout importable and *device* selected."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_ENABLE_CUDASIM", "NUMBA_GPUX_ALIAS")}
    env["PYTHONPATH"] = ROOT
    if device is not None:
        env["NUMBA_GPUX_DEVICE"] = device.spec
    env.update(extra)
    return env


POCL_PLATFORM = "Portable Computing Language"
POCL_HERE_ENV = "GPUX_TESTS_POCL_HERE"


def run_twice_cached(source: str, tmp_path, device) -> list[dict]:
    """The program *source* run twice on *device*, each time in a fresh process, both
    keeping compiled code in one disk cache under *tmp_path*: the JSON object each run
    printed last (a run that fails fails the test, with its stderr)."""
    import json
    import subprocess

    (tmp_path / "prog.py").write_text(source)
    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(tmp_path / "cache"),
               NUMBA_CACHE_DIR=str(tmp_path / "nbcache"), PYTHONDONTWRITEBYTECODE="1",
               NUMBA_GPUX_CACHE_KEY_FILE=str(tmp_path / "keys" / "cache.key"),
               NUMBA_GPUX_DEVICE=device.spec)
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, str(tmp_path / "prog.py")], capture_output=True,
                           text=True, env=env, timeout=300, cwd=str(tmp_path))
        assert p.returncode == 0, p.stderr[-3000:]
        runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
    return runs


def pocl_here() -> bool:
    """Whether this process is the one that tests PoCL devices."""
    return os.environ.get(POCL_HERE_ENV) == "1"


def is_pocl(device) -> bool:
    return POCL_PLATFORM in (getattr(device, "platform", "") or "")


def testable_here(device) -> bool:
    """PoCL devices only in the PoCL process, the others only outside it."""
    return is_pocl(device) == pocl_here()


@contextlib.contextmanager
def selected(device):
    """*device* is the default device inside the block; the previous choice after it."""
    devmod = sys.modules["numba_gpux.devices"]
    prev = devmod._selected
    devmod.select_device(device)
    try:
        yield device
    finally:
        devmod._selected = prev


def round_to_table(positive: list, x, mode: str) -> int:
    """The bits of the value of a 16-bit float format that ``x >= 0`` (a Fraction)
    rounds to in *mode* ("rn" to nearest even, "rz"/"rd" down, "ru" up), given the
    format's finite non-negative values in bit order, *positive*, with one value after
    them (the infinity's bits' place: half a step past the largest finite value or
    more rounds there in rn and ru)."""
    import bisect
    from fractions import Fraction

    top = len(positive) - 1
    i = bisect.bisect_right(positive, x) - 1  # the largest value <= x
    if i == top:
        return top - 1 if mode in ("rz", "rd") else top
    if positive[i] == x or mode in ("rz", "rd"):
        return i
    if mode == "ru":
        return i + 1
    below, above = x - Fraction(positive[i]), Fraction(positive[i + 1]) - x
    if below != above:
        return i if below < above else i + 1
    return i if i % 2 == 0 else i + 1
