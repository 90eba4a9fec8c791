"""Tuning hooks: declared knobs looked up on the host, behind an inference barrier.

A hook is a named question with a declared result type ("how many threads per
block for a reduction of float32 on this device?").  Library authors
:func:`declare` it once and :func:`implement` it per target (and optionally per
device kind, such as ``"cpu"`` or ``"gpu"``); :func:`tuning` answers it on the
host, at run time, for one target or device and one dtype.

Compiled code never sees a hook.  A hook's value reaches a kernel only as an
ordinary argument or as a compile-time constant that the caller makes part of
the kernel explicitly (for example a closure constant of a kernel built per
value).  So declaring, implementing, replacing or importing hook
implementations changes no compiled kernel, no target fingerprint and no cache
key: it costs zero recompilations.

Example::

    from numba_gpux import hooks

    BLOCK = hooks.declare("mylib.block_size", int, "threads per block for mylib.op")

    @hooks.implement("mylib.block_size")                  # the default
    def _(q):
        return 256

    @hooks.implement("mylib.block_size", target="opencl", device_kind="cpu")
    def _(q):
        return 64 if q.dtype.itemsize >= 8 else 128

    bs = gpux.tuning("mylib.block_size", device, np.float32)

Three levels answer a hook, in this order: an implementation a library or user
registers (:func:`implement`), a result of autotuning for the device at hand
(``autotuning.py``: recorded here with :func:`record_tuned`, for the query's
dtype and problem key), and the defaults the declaring package registers
(``implement(..., default=True)``).  A hook may declare a search space
(``declare(..., space=...)``): the values autotuning tries.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import operator
import threading
import typing
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from . import config
from .devices import Device, default_device
from .errors import GpuxUserError
from .interface import Target

__all__ = ["Hook", "HookError", "TuningQuery", "declare", "implement", "tuning", "get_hook",
           "declared", "DEFAULT", "record_tuned", "recorded", "forget_tuned", "trial", "tuned_value",
           "ANY_KEY"]

#: the target name that means "any target" in :func:`implement`
DEFAULT = "default"


class HookError(GpuxUserError):
    """A hook was misused: unknown name, bad implementation, or a result of the wrong type."""


@dataclass(frozen=True)
class TuningQuery:
    """What an implementation is asked about: passed as its only argument.

    ``device`` is None when :func:`tuning` was given a target name or a
    Target rather than a device; ``kind`` is then None too.  ``key`` is the
    problem key the caller gave (for example ``("mylib.op", 2**22)``: the
    operation and its element count rounded to a power of two), None if none:
    tuning results are kept per key.
    """

    hook: str
    target: str
    kind: str | None
    device: Any
    dtype: np.dtype | None
    key: Any = None

    def limit(self, key: str, default=None):
        """A device limit (``max_threads_per_block``, ``compute_units``, ...) or *default*."""
        if self.device is None:
            return default
        return self.device.limits.get(key, default)


@dataclass
class Hook:
    """A declared hook: its name, declared result type, doc and implementations."""

    name: str
    result_type: Any
    doc: str = ""
    #: (target or DEFAULT, device kind or None) -> implementation a library or user registered
    impls: dict = field(default_factory=dict, repr=False)
    #: the same, for the declaring package's defaults (``implement(..., default=True)``)
    defaults: dict = field(default_factory=dict, repr=False)
    #: the values autotuning tries: a sequence, or ``space(query)`` returning one; None: not tuned
    space: Any = field(default=None, repr=False)

    def check(self, value, where: str):
        """*value* converted to the declared type, or a HookError saying what is wrong."""
        try:
            return _convert(value, self.result_type)
        except (TypeError, ValueError) as e:
            raise HookError(
                f"hook {self.name!r}: the implementation {where} returned {value!r}, "
                f"which is not a {_type_name(self.result_type)} ({e})") from None

    def registered(self, target: str, kind: str | None) -> tuple[Callable, str] | None:
        """The most specific implementation a library or user registered (target+kind,
        target, default+kind, default), or None."""
        return _most_specific(self.impls, target, kind)

    def lookup(self, target: str, kind: str | None) -> tuple[Callable, str]:
        """The most specific implementation: a registered one, else the package's default."""
        got = _most_specific(self.impls, target, kind) or _most_specific(self.defaults, target, kind)
        if got is not None:
            return got
        have = ", ".join(sorted({_describe(k) for k in (*self.impls, *self.defaults)})) or "none"
        raise HookError(f"hook {self.name!r} has no implementation for target {target!r}"
                        f"{f' (device kind {kind!r})' if kind else ''} and no default; "
                        f"implementations: {have}")

    def candidates(self, query: TuningQuery) -> tuple:
        """The values autotuning tries for *query*, checked against the declared type and
        without repeats; () when the hook declares no search space."""
        space = self.space
        if space is None:
            return ()
        values = space(query) if callable(space) else space
        out: list = []
        for v in values:
            v = self.check(v, "search space")
            if v not in out:
                out.append(v)
        return tuple(out)


def _most_specific(table: dict, target: str, kind: str | None):
    """The most specific of *table*'s implementations for *target* and *kind*, with
    where it was registered (``(fn, "target:kind")``), or None."""
    got = _find(table, target, kind)
    return None if got is None else (got[0], _describe(got[1]))


def _find(table: dict, target: str, kind: str | None):
    """``(fn, (target, kind))``: :func:`_most_specific` with the key it was found under,
    described only when a message needs it (every :func:`tuning` call asks)."""
    if not table:
        return None
    for key in _probes(target, kind):
        fn = table.get(key)
        if fn is not None:
            return fn, key
    return None


@functools.lru_cache(maxsize=64)
def _probes(target: str, kind: str | None) -> tuple:
    """The keys an implementation is looked up under, most specific first."""
    return ((target, kind), (target, None), (DEFAULT, kind), (DEFAULT, None))


_hooks: dict[str, Hook] = {}
_lock = threading.Lock()


def _describe(key) -> str:
    t, k = key
    return f"{t}:{k}" if k else t


def _type_name(spec) -> str:
    if isinstance(spec, type):
        return spec.__name__
    if isinstance(spec, tuple):
        if len(spec) == 2 and spec[1] is Ellipsis:
            return f"tuple of {_type_name(spec[0])}"
        return "(" + ", ".join(_type_name(s) for s in spec) + ")"
    return str(spec)


def _normalize_spec(spec):
    """Accept ``int``, ``(int, int)``, ``(int, ...)``, ``tuple[int, ...]``, ``tuple[int, str]``."""
    origin = typing.get_origin(spec)
    if origin is tuple:
        args = typing.get_args(spec)
        return tuple(_normalize_spec(a) if a is not Ellipsis else a for a in args)
    if isinstance(spec, tuple):
        if not spec:
            raise HookError("a hook's result type cannot be an empty tuple")
        return tuple(_normalize_spec(a) if a is not Ellipsis else a for a in spec)
    if isinstance(spec, type):
        return spec
    raise HookError(f"a hook's result type must be a type (int, float, str, bool), a tuple of "
                    f"those, or (T, ...); not {spec!r}")


def _convert(value, spec):
    if isinstance(spec, tuple):
        if not isinstance(value, (tuple, list)):
            raise TypeError("expected a tuple")
        if len(spec) == 2 and spec[1] is Ellipsis:
            return tuple(_convert(v, spec[0]) for v in value)
        if len(value) != len(spec):
            raise ValueError(f"expected {len(spec)} items, got {len(value)}")
        return tuple(_convert(v, s) for v, s in zip(value, spec))
    if spec is int:
        if isinstance(value, (bool, np.bool_)):
            raise TypeError("a bool is not an int")
        return operator.index(value)
    if spec is float:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)):
            raise TypeError("expected a number")
        return float(value)
    if spec is bool:
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError("expected a bool")
        return bool(value)
    if not isinstance(value, spec):
        raise TypeError(f"got {type(value).__name__}")
    return value


def declare(name: str, result_type, doc: str = "", space=None) -> Hook:
    """Declare the hook *name* with its result type (``int``, ``(int, int)``, ``(int, ...)``, ``str``...).

    *space*, if given, is what autotuning may try for it: a sequence of values,
    or a function of the :class:`TuningQuery` returning one (to follow the
    device's limits).  Declaring the same name again with the same type
    returns the existing hook (so a module may be re-imported), taking a
    *space* given then; a different type is an error.
    """
    if space is not None and not callable(space):
        try:
            space = tuple(space)
        except TypeError:
            raise HookError(f"hook {name!r}: a search space is a sequence of values or a "
                            f"function of the query, not {space!r}") from None
    if not isinstance(name, str) or not name:
        raise HookError(f"a hook name must be a non-empty string, not {name!r}")
    spec = _normalize_spec(result_type)
    with _lock:
        hook = _hooks.get(name)
        if hook is not None:
            if hook.result_type != spec:
                raise HookError(f"hook {name!r} is already declared with result type "
                                f"{_type_name(hook.result_type)}, not {_type_name(spec)}")
            if doc and not hook.doc:
                hook.doc = doc
            if space is not None:
                hook.space = space
            return hook
        hook = _hooks[name] = Hook(name, spec, doc, space=space)
        return hook


def get_hook(name) -> Hook:
    """The declared hook *name* (or *name* itself when it is a Hook)."""
    if isinstance(name, Hook):
        return name
    hook = _hooks.get(name)
    if hook is None:
        raise HookError(f"no hook named {name!r} is declared; declared hooks: "
                        f"{', '.join(sorted(_hooks)) or 'none'}")
    return hook


def declared() -> dict[str, Hook]:
    """Every declared hook, by name."""
    return dict(_hooks)


def implement(name, target: str = DEFAULT, device_kind: str | None = None, fn: Callable | None = None,
              *, default: bool = False):
    """Register *fn* as the implementation of hook *name* for *target* (and *device_kind*).

    Use as a decorator (``@implement("lib.block", target="cuda")``) or call it
    with ``fn=``.  *target* ``"default"`` (the default) applies to every target
    without its own implementation.  A later registration for the same
    (target, kind) replaces the earlier one.  *fn* takes one
    :class:`TuningQuery` and returns a value of the hook's declared type; it
    may also be a plain constant.  Registering never touches compiled code.

    *default* ``True`` registers the declaring package's default, the last
    level of a lookup: a tuned result for the device beats it, and any
    implementation registered without *default* beats both.
    """
    hook = get_hook(name)
    if not isinstance(target, str) or not target:
        raise HookError(f"implement(): target must be a target name or 'default', not {target!r}")
    if device_kind is not None and not isinstance(device_kind, str):
        raise HookError(f"implement(): device_kind must be a string such as 'gpu' or 'cpu', "
                        f"not {device_kind!r}")

    def register(f):
        impl = f if callable(f) else (lambda q, _v=hook.check(f, "given"): _v)  # noqa: B008 - checked once, here
        with _lock:
            (hook.defaults if default else hook.impls)[(target, device_kind)] = impl
        return f

    if fn is not None:
        return register(fn)
    return register


def _target_and_device(target_or_device):
    if isinstance(target_or_device, Device):
        return target_or_device.target_name, target_or_device.kind, target_or_device
    if isinstance(target_or_device, Target):
        return target_or_device.name, None, None
    if isinstance(target_or_device, str):
        return target_or_device, None, None
    if target_or_device is None:
        d = default_device()
        return d.target_name, d.kind, d
    raise HookError(f"tuning(): expected a Device, a Target or a target name, "
                    f"not {target_or_device!r}")


# --------------------------------------------------------------------------- tuned results

#: (device spec, dtype str or None, problem key) -> {hook name: value}, filled by autotuning
_tuned: dict = {}
#: the values one autotuning candidate is run with: {(hook name, problem key): value}
_trial: contextvars.ContextVar = contextvars.ContextVar("gpux_hook_trial", default=None)


def _tuned_key(device, dtype, key):
    return (device.spec, None if dtype is None else np.dtype(dtype).str, key)


def record_tuned(device, dtype, key, values: dict) -> None:
    """Record autotuning's result for *device*, *dtype* and the problem *key*: from now
    on :func:`tuning` answers the hooks in *values* (name -> value) with them, where no
    registered implementation takes precedence."""
    checked = {name: get_hook(name).check(v, "tuned") for name, v in values.items()}
    with _lock:
        _tuned[_tuned_key(device, dtype, key)] = checked


def recorded(device, dtype, key) -> bool:
    """Whether tuning results are recorded for *device*, *dtype* and *key*."""
    return _tuned_key(device, dtype, key) in _tuned


def forget_tuned(device=None) -> None:
    """Forget the recorded tuning results (of *device*, or all)."""
    with _lock:
        for k in list(_tuned):
            if device is None or k[0] == device.spec:
                del _tuned[k]


def tuned_value(name: str, device, dtype, key):
    """The tuned value of hook *name* for *device*, *dtype* and *key*, or None."""
    trial = _trial.get()
    if trial is not None:
        v = trial.get((name, key))
        if v is None:
            v = trial.get((name, ANY_KEY))
        if v is not None:
            return v
    if device is None or not _tuned or not config.autotune_enabled():
        return None
    got = _tuned.get(_tuned_key(device, dtype, key))
    return None if got is None else got.get(name)


#: a :func:`trial` for every problem key
ANY_KEY = object()


@contextlib.contextmanager
def trial(values: dict, key=ANY_KEY):
    """Within the block, :func:`tuning` answers the hooks in *values* (name -> value),
    for the problem *key* (default: any key), as if they were tuned so (autotuning's
    candidates, and the choice of a kernel tuned with hooks in its space)."""
    prev = _trial.get()
    merged = dict(prev or {})
    merged.update({(name, key): v for name, v in values.items()})
    token = _trial.set(merged)
    try:
        yield
    finally:
        _trial.reset(token)


def tuning(hook, target_or_device=None, dtype=None, key=None) -> Any:
    """The value of *hook* for *target_or_device* (default: the current device), *dtype*
    and the problem *key* (any hashable value, None by default).

    The most specific registered implementation (target and device kind, then
    target, then the default for that kind, then the default) answers first;
    else a tuning result recorded for this device, dtype and key; else the
    package's default, looked up the same way.  The result is checked against
    the declared type.
    """
    h = get_hook(hook)
    tname, kind, dev = _target_and_device(target_or_device)
    dt = dtype
    if dtype is not None and not isinstance(dtype, np.dtype):
        try:
            dt = np.dtype(dtype)
        except TypeError:
            raise HookError(f"tuning({h.name!r}): {dtype!r} is not a dtype") from None
    got = _find(h.impls, tname, kind)
    if got is None:
        tuned = tuned_value(h.name, dev, dt, key)
        if tuned is not None:
            return tuned
        got = _find(h.defaults, tname, kind)
        if got is None:
            h.lookup(tname, kind)  # (raises: no implementation and no default)
    fn, where = got
    value = fn(TuningQuery(h.name, tname, kind, dev, dt, key))
    try:
        return _convert(value, h.result_type)
    except (TypeError, ValueError):
        return h.check(value, f"for {_describe(where)}")  # (raises, saying where)
