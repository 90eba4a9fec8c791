"""Devices are probed before they are trusted.

A driver can list a device that cannot build or run any program (PoCL 3.0 from
PyPI on a CPU its LLVM does not know fails every build with "unknown target CPU
'generic'").  Such a device must not be listed, chosen by default or handed
to tests, so before a device is listed it compiles, through its own target's
pipeline, a trivial kernel, builds it, runs it and reads its result back.
What fails is left out of :func:`numba_gpux.devices` with the driver's message
(:func:`numba_gpux.devices.unusable_devices`, ``python -m numba_gpux info``).

A success is remembered on disk per driver version and device (and numba-gpux,
Numba and llvmlite version), so later processes do not probe again.  The record
lives in this user's private temporary directory (``config.user_temp_dir``), not
in the cache directory, and is an optimisation only: where it cannot be read or
written every process probes for itself.  A failure is not remembered: it may
come from the environment (a variable, a file), which the user can fix without
touching the driver.

The probe is registered with :mod:`numba_gpux.devices` (a lower layer) as a
callback; it uses only the shared compile and launch path, no target's name.
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np

from . import config
from .devices import set_prober

__all__ = ["probe_device", "probe_key", "run_probe", "stats", "PROBE_VERSION"]

#: bump when the probe kernel or what it checks changes (old records are ignored)
PROBE_VERSION = 1
_EXPECTED = 42
#: probes run in this process (a remembered success runs none)
stats = {"probes": 0}


def _probe_kernel(out):
    out[0] = 42


class _On:
    """A launch queue that pins the launch to one device and its default queue
    (the queue protocol of ``launch.py``)."""

    gpux_queue = None

    def __init__(self, device):
        self.gpux_device = device


def _versions() -> str:
    # numba-gpux's own version from its module (importlib.metadata's look-up of it
    # searched sys.path again for each probed device)
    import llvmlite
    import numba

    from ._version import __version__

    return f"{__version__}|{numba.__version__}|{llvmlite.__version__}"


def probe_key(device) -> str:
    """What a remembered probe result belongs to: the device, its driver's version and
    the versions of numba-gpux, Numba and llvmlite."""
    lim = device.limits
    parts = (PROBE_VERSION, device.target_name, device.platform, device.vendor, device.name,
             device.kind, device.index, str(lim.get("driver_version", "")),
             str(lim.get("opencl_version", "")), _versions())
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:32]


def _record_path() -> str | None:
    base = config.user_temp_dir()
    return os.path.join(base, f"probes-v{PROBE_VERSION}.json") if base else None


def _read_record() -> dict:
    path = _record_path()
    if path is None:
        return {}
    try:
        with open(path) as f:
            rec = json.load(f)
        return rec if isinstance(rec, dict) else {}
    except (OSError, ValueError):
        return {}


def _remember(key: str, device) -> None:
    """Add a success to the record; an unwritable directory costs a probe per process."""
    path = _record_path()
    if path is None:
        return
    rec = _read_record()
    rec[key] = device.spec
    tmp = f"{path}.{os.getpid()}"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w") as f:
            json.dump(rec, f)
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _reason(e: BaseException) -> str:
    """The driver's message of *e*, without the IR and the report request an internal
    error carries (the probe kernel is ours, not the user's)."""
    msg = str(e).split("\n--- IR ---", 1)[0].strip()
    lines = [ln.rstrip() for ln in msg.splitlines() if ln.strip()]
    return f"{type(e).__name__}: {' | '.join(lines) or type(e).__name__}"


def run_probe(device) -> str | None:
    """Compile, build and run the probe kernel on *device*: None if it wrote its
    result, else what went wrong (the driver's or compiler's message)."""
    from .dispatcher import GpuxFunction
    from .memory import device_array

    stats["probes"] += 1
    try:
        kernel = GpuxFunction(_probe_kernel)
        out = device_array(1, np.int32, device=device)
        kernel[1, 1, _On(device)](out)
        got = int(out.copy_to_host()[0])
    except Exception as e:  # whatever the driver or compiler raised is the reason
        return _reason(e)
    if got != _EXPECTED:
        return f"the probe kernel ran but wrote {got}, not {_EXPECTED}"
    return None


def probe_device(device) -> str | None:
    """None if *device* is usable (remembered, or probed now), else the reason it is not."""
    key = probe_key(device)
    if key in _read_record():
        return None
    reason = run_probe(device)
    if reason is None:
        _remember(key, device)
    return reason


set_prober(probe_device)
