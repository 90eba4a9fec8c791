"""Target discovery (entry points) and device selection."""

from __future__ import annotations

import contextlib
import os
import pathlib
import sys
import threading
from dataclasses import dataclass, field
from importlib import metadata
from typing import Iterator

from . import config
from ._version import __version__
from .errors import DeviceNotFoundError, GpuxUserError
from .interface import Runtime, Target

__all__ = ["Device", "devices", "default_device", "select_device", "current_device",
           "use_device", "lookup_device", "targets", "get_target_entry", "resolve_target", "rescan",
           "register_target", "unusable_devices", "set_prober"]

ENTRY_POINT_GROUP = "numba_gpux.targets"
_KIND_ORDER = {"gpu": 0, "accelerator": 1, "cpu": 2}


@dataclass(eq=False)
class Device:
    """One device of one target.

    ``runtime`` is the target's driver binding for this device; shared code
    uses only what the contract ``interface.Runtime`` declares.
    """

    target_name: str
    index: int
    name: str
    kind: str
    vendor: str
    runtime: Runtime = field(repr=False)
    limits: dict = field(default_factory=dict, repr=False)
    target_features: frozenset = field(default_factory=frozenset, repr=False)
    platform: str = ""
    kind_index: int = 0
    _target: object = field(default=None, repr=False)
    #: why the device cannot be used (its probe failed: the driver's message), else None
    unusable_reason: str | None = field(default=None, repr=False)

    @property
    def spec(self) -> str:
        """``target:kind:index``, accepted by :func:`select_device` and ``NUMBA_GPUX_DEVICE``."""
        return f"{self.target_name}:{self.kind}:{self.kind_index}"

    @property
    def target(self) -> Target:
        """The Target description for code running on this device."""
        if self._target is None:
            self._target = get_target_entry(self.target_name).make_target(self)
        return self._target

    @property
    def max_threads_per_block(self) -> int:
        return int(self.limits.get("max_threads_per_block", 1024))

    def __repr__(self) -> str:
        return f"<Device {self.spec} {self.name!r} ({self.vendor})>"

    def __str__(self) -> str:
        return f"{self.spec}: {self.name}"

    def __reduce__(self):
        # a device pickles as its spec: the unpickling process finds its own device of
        # that spec (its driver objects belong to this process)
        return lookup_device, (self.spec,)


_lock = threading.RLock()
_entries: dict | None = None
_devices: list | None = None
_selected: Device | None = None
#: per thread, the devices of the open ``use_device`` scopes (innermost last)
_local = threading.local()
#: how many ``use_device`` scopes are open in all threads (0: the launch path reads
#: ``_selected`` without looking at the thread's scopes)
_scoped = 0
_unusable: list = []
#: target name -> why its device discovery failed (an exception in the target's code),
#: named where no device is found and by ``python -m numba_gpux info``
discovery_errors: dict = {}
#: ``prober(device) -> None | reason``: builds and runs a trivial kernel on a device
#: before it is listed (set by numba_gpux.probe, a layer above this one)
_prober = None
_probing = threading.local()


def set_prober(fn) -> None:
    """Install the function that checks a device before it is listed (None: trust all)."""
    global _prober, _devices
    with _lock:
        _prober = fn
        _devices = None


#: numba-gpux's own distribution name: its targets are the built-in ones
_DIST = "numba-gpux"
#: built-in targets loaded by name before the full scan (``get_target_entry``)
_builtin: dict = {}
#: numba-gpux's own entry points of ENTRY_POINT_GROUP, read once (finding the
#: distribution searches sys.path: a few milliseconds, which a second target's
#: first use would otherwise pay again)
_own_eps: list | None = None


def _load_entry(ep):
    try:
        return ep.load()()
    except Exception as e:  # a broken plug-in must not break the others
        import warnings

        warnings.warn(f"numba_gpux: target {ep.name!r} failed to load: {e}")
        return None


def _builtin_entry(name: str):
    """The built-in target *name*, read from numba-gpux's own entry points only.

    Scanning every installed distribution's entry points costs several
    milliseconds of a first compile; a built-in target named in
    ``compile(..., target="cuda")`` or a device spec does not need it.
    """
    global _own_eps
    entry = _builtin.get(name)
    if entry is None:
        if _own_eps is None:
            try:
                eps = _own_distribution().entry_points
            except metadata.PackageNotFoundError:  # run from a source tree, not installed
                eps = ()
            _own_eps = [ep for ep in eps if ep.group == ENTRY_POINT_GROUP]
        for ep in _own_eps:
            if ep.name == name:
                entry = _load_entry(ep)
                if entry is not None:
                    _builtin[name] = entry
                break
    return entry


def _own_distribution() -> metadata.Distribution:
    """numba-gpux's installed distribution, the one of the running version.

    Its ``.dist-info`` directory is looked for by name in each ``sys.path`` entry in
    order (a file test each); ``metadata.distribution`` finds the same one but lists
    and parses the ``sys.path`` directories before it, the current one first: about
    1 ms from a small directory, 20 ms from one of 40,000 files (a data directory),
    in a first compile.
    Where the name is not found (an egg, another layout), that full search.
    """
    own = f"{_DIST.replace('-', '_')}-{__version__}.dist-info"
    for entry in sys.path:
        path = os.path.join(entry or os.curdir, own)
        if os.path.isfile(os.path.join(path, "METADATA")):
            return metadata.PathDistribution(pathlib.Path(path))
    return metadata.distribution(_DIST)


def _is_builtin(ep) -> bool:
    return getattr(ep.dist, "name", None) == _DIST


def targets() -> dict:
    """Registered targets by name (loading each entry point once).

    A built-in target's name cannot be taken by another distribution: such an
    entry point is skipped with a warning, so that which target a name means
    does not depend on the order distributions are found in (between two other
    distributions that use one name, the first found keeps it, also with a warning).
    """
    global _entries
    if _entries is None:
        with _lock:
            if _entries is None:
                found = {}
                eps = sorted(metadata.entry_points(group=ENTRY_POINT_GROUP),
                             key=lambda ep: not _is_builtin(ep))  # built-ins first
                for ep in eps:
                    builtin = _is_builtin(ep)
                    if ep.name in found:
                        import warnings

                        warnings.warn(f"numba_gpux: target {ep.name!r} of "
                                      f"{getattr(ep.dist, 'name', '?')} is ignored: the name "
                                      f"is taken by a target found before it (built-in "
                                      f"targets come first)")
                        continue
                    entry = _builtin.get(ep.name) if builtin else None
                    entry = entry or _load_entry(ep)
                    if entry is not None:
                        found[entry.name] = entry
                _entries = found
    return _entries


def rescan() -> dict:
    """Forget the targets and devices found so far and look again (after a target
    package was installed, or put on ``sys.path``, while the process runs).
    The selected default device is kept."""
    global _entries, _devices, _own_eps
    import importlib

    importlib.invalidate_caches()
    with _lock:
        _entries = None
        _devices = None
        _builtin.clear()
        _own_eps = None
    return targets()


def register_target(entry) -> None:
    """Register a target entry by hand (an entry point does the same on install)."""
    global _devices
    with _lock:
        targets()[entry.name] = entry
        _devices = None


def get_target_entry(name: str):
    if _entries is None:
        entry = _builtin_entry(name)
        if entry is not None:
            return entry
    try:
        return targets()[name]
    except KeyError:
        raise GpuxUserError(
            f"unknown target {name!r}; installed targets: {', '.join(sorted(targets())) or 'none'}"
        ) from None


def resolve_target(target, **kw):
    """A Target description from a name, a Device or a Target."""
    from .interface import Target

    if isinstance(target, Target):
        return target
    if isinstance(target, Device):
        return target.target
    if isinstance(target, str):
        return get_target_entry(target).make_target(None, **kw)
    raise GpuxUserError(f"target must be a name, a Device or a Target, not {target!r}")


def _parse_spec(spec: str):
    """``target[:kind][:index]`` -> (target, kind or None, index or None)."""
    parts = [p for p in spec.strip().lower().split(":") if p != ""]
    if not parts:
        raise GpuxUserError("empty device spec; use e.g. 'opencl:cpu:0' or 'cuda:0'")
    tname, rest = parts[0], parts[1:]
    kind = idx = None
    if rest and not rest[0].isdigit():
        kind, rest = rest[0], rest[1:]
    if rest:
        if not rest[0].isdigit() or len(rest) > 1:
            raise GpuxUserError(f"bad device spec {spec!r}; use target[:kind][:index]")
        idx = int(rest[0])
    return tname, kind, idx


def _spec_matches(parsed, d: Device) -> bool:
    """Whether *d* is the device (or one of the devices) a parsed spec names: the index
    counts devices of that kind when a kind is given, else devices of the target."""
    tname, kind, idx = parsed
    if d.target_name != tname or (kind is not None and d.kind != kind):
        return False
    return idx is None or idx == (d.kind_index if kind is not None else d.index)


def _visible(found: list) -> list:
    """The devices ``NUMBA_GPUX_VISIBLE_DEVICES`` leaves visible (all when unset)."""
    specs = config.visible_devices()
    if specs is None:
        return found
    parsed = []
    for spec in specs:
        try:
            parsed.append(_parse_spec(spec))
        except GpuxUserError:
            import warnings

            warnings.warn(f"numba_gpux: NUMBA_GPUX_VISIBLE_DEVICES: ignoring the bad device "
                          f"spec {spec!r} (use target[:kind][:index], comma-separated)")
    return [dp for dp in found if any(_spec_matches(p, dp[0]) for p in parsed)]


def _probe(found: list) -> tuple[list, list]:
    """(usable, unusable) devices: each is probed once (see numba_gpux.probe)."""
    if _prober is None:
        return found, []
    usable, unusable = [], []
    _probing.active = True
    try:
        for d in found:
            try:
                reason = _prober(d)
            except Exception as e:  # the probe itself failed: the device is not trusted
                reason = f"{type(e).__name__}: {e}"
            d.unusable_reason = reason
            (usable if reason is None else unusable).append(d)
    finally:
        _probing.active = False
    return usable, unusable


#: every device found in this process, by what identifies it (see devices())
_known: dict = {}


def _identity(d: Device) -> tuple:
    return (d.target_name, d.kind, d.kind_index, d.name, d.vendor, d.platform)


def _keeps_contract(target: str, d: Device) -> bool:
    """Whether *d*'s runtime implements the runtime contract (``interface.Runtime``);
    a device whose runtime does not is left out, with a warning naming its target."""
    if isinstance(d.runtime, Runtime):
        return True
    import warnings

    warnings.warn(f"numba_gpux: target {target!r} lists device {d.name!r} with a runtime of "
                  f"type {type(d.runtime).__name__}, which does not subclass "
                  f"numba_gpux.interface.Runtime; the device is left out")
    return False


def devices(refresh: bool = False) -> list[Device]:
    """Every usable device of every installed target, best first (GPUs before CPUs).

    ``NUMBA_GPUX_VISIBLE_DEVICES`` (comma-separated device specs) narrows the list;
    a device whose probe fails (it cannot build or run a trivial kernel) is left out
    and listed by :func:`unusable_devices` instead.
    """
    global _devices, _unusable
    if getattr(_probing, "active", False):  # asked from inside a probe: nothing is trusted yet
        return []
    if _devices is None or refresh:
        with _lock:
            found: list = []
            for name, entry in targets().items():
                try:
                    devs = list(entry.discover())
                    discovery_errors.pop(name, None)
                except Exception as e:  # discovery must not raise: no devices, and why
                    discovery_errors[name] = f"{type(e).__name__}: {e}"
                    devs = []
                found.extend((d, entry.priority) for d in devs if _keeps_contract(name, d))
            found = _visible(found)
            # a device found again (after rescan) is the object found before: arrays,
            # compiled code and the selected default device stay valid on it
            found = [(_known.setdefault(_identity(d), d), p) for d, p in found]
            found.sort(key=lambda dp: (_KIND_ORDER.get(dp[0].kind, 3), -dp[1], dp[0].index))
            usable, unusable = _probe([d for d, _ in found])
            _unusable = unusable
            _devices = usable
    return list(_devices)


def unusable_devices() -> list[Device]:
    """Devices a driver lists but that failed their probe; ``d.unusable_reason`` says why."""
    devices()
    return list(_unusable)


def _no_device_message(spec: str | None) -> str:
    names = ", ".join(sorted(targets())) or "none"
    what = f"matching {spec!r} " if spec else ""
    bad = [d for d in unusable_devices()
           if spec is None or _spec_matches(_parse_spec(spec), d)]
    unusable = "".join(f"Unusable: {d.spec} ({d.name}): {d.unusable_reason}\n" for d in bad)
    unusable += "".join(f"Target {n!r} failed to look for devices: {why}\n"
                        for n, why in sorted(discovery_errors.items()))
    return (
        f"no usable GPU device {what}was found.\n"
        f"Looked for devices of the installed targets ({names}).\n"
        f"Found: {', '.join(d.spec for d in devices()) or 'nothing'}.\n"
        f"{unusable}"
        f"To run on this machine's CPU through OpenCL, install the SPIR-V capable CPU driver:\n"
        f"    pip install 'numba-gpux[cpu]'   (pyopencl, intel-opencl-rt, intel-cmplr-lib-rt)\n"
        f"`python -m numba_gpux info` lists what was found."
    )


def _match(spec: str) -> Device:
    parsed = _parse_spec(spec)
    tname, kind, idx = parsed
    if tname not in targets():
        raise DeviceNotFoundError(
            f"unknown target {tname!r} in device spec {spec!r}; installed: "
            f"{', '.join(sorted(targets())) or 'none'}")
    cands = [d for d in devices() if _spec_matches(parsed, d)]
    if not cands:
        raise DeviceNotFoundError(_no_device_message(spec))
    cands.sort(key=lambda d: d.kind_index if kind is not None else d.index)
    return cands[0]


def lookup_device(spec) -> Device:
    """The device *spec* names (a Device, ``'opencl:cpu:0'``, ``'cuda:0'``), selecting nothing."""
    return spec if isinstance(spec, Device) else _match(str(spec))


def select_device(spec) -> Device:
    """Make *spec* (a Device, ``'opencl:cpu:0'``, ``'cuda:0'``, ``'opencl'``) the default device."""
    global _selected
    dev = lookup_device(spec)
    _selected = dev
    return dev


@contextlib.contextmanager
def use_device(spec) -> Iterator[Device]:
    """``with use_device('opencl:cpu:0') as dev:`` -- in this thread, until the block
    ends, kernels launch and arrays are allocated on *spec* (a Device or a spec);
    other threads keep their own current device.  Scopes nest."""
    global _scoped
    dev = lookup_device(spec)
    stack = _local.__dict__.setdefault("stack", [])
    stack.append(dev)
    with _lock:
        _scoped += 1
    try:
        yield dev
    finally:
        stack.pop()
        with _lock:
            _scoped -= 1


def default_device() -> Device:
    """The device kernels run on when none is given: the innermost :func:`use_device`
    of this thread, else the selected one, else ``NUMBA_GPUX_DEVICE``, else the
    best device found."""
    global _selected
    if _scoped:
        stack = _local.__dict__.get("stack")
        if stack:
            return stack[-1]
    if _selected is not None:
        return _selected
    with _lock:
        if _selected is None:
            spec = config.device_spec()
            if spec:
                _selected = _match(spec)
            else:
                devs = devices()
                if not devs:
                    raise DeviceNotFoundError(_no_device_message(None))
                _selected = devs[0]
    return _selected


current_device = default_device
