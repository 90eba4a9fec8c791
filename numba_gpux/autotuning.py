"""Autotuning: the fastest of a kernel's or a hook's candidate settings, measured once per
device and problem key, kept on disk, and never a recompilation.

Two users, one mechanism:

- :func:`autotune` wraps a kernel with a search space (block size, items per
  work-item, any launch argument, compile-time constants of the kernel) and a
  problem key (``key(*args)``: the element count rounded to a power of two, say);
  calling the result launches the kernel with the chosen candidate.
- :func:`tuned_hooks` runs a library's host function with some of its tuning
  hooks (``hooks.py``) tuned; ``numba_gpux.algorithms`` tunes map, reduce, scan
  and sort so.  The choice is recorded with :func:`hooks.record_tuned`, so
  ``hooks.tuning`` answers from it, after any implementation a library or user
  registered and before the package's defaults.

The first call for a (device, kernel, signature, problem key) runs each
candidate on the real arguments: once to warm up (compiles, first touches: not
counted), then a few timed runs, until a budget in time
(``NUMBA_GPUX_AUTOTUNE_BUDGET``) and in count (``NUMBA_GPUX_AUTOTUNE_MAX``) is
spent.  A search space larger than the count is searched one axis at a time
from the default (coordinate descent).  Arrays the call may write are copied
first and put back before every run, and the chosen candidate then runs once
more for real: a tuned call's results are an untuned call's.  A candidate that
fails (a block size its kernel cannot launch with) is skipped.

Launch-time values (launch dimensions, arguments) reach the same compiled
kernel.  Compile-time constants give one kernel per value, compiled once each
and cached like any kernel.

The result is kept in the disk cache, in its authenticated format
(``cachefile.py``), under a key of the device's identity (target, vendor, name,
platform, driver version), the kernel (its cache key: code, globals, options,
package versions), the signature, the problem key and the search space.  A
changed driver or kernel is another key, hence tuned again; an entry that fails
its check, or names a candidate no longer in the space, is tuned again.  Two
processes tuning the same entry at once both finish with a valid choice; the
entry is written atomically, so one of the two is kept.

``NUMBA_GPUX_AUTOTUNE=0`` turns tuning off (the defaults run and nothing is
read); ``NUMBA_GPUX_RETUNE=1`` tunes again, once per process, what is on disk.
Tests choose through an injected cost function (:func:`cost_function`), never
by timing.  See docs/autotuning.md.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import itertools
import json
import os
import threading
import time
import types as pytypes
from typing import Any, Callable, Iterable

import numpy as np

from . import config, hooks
from ._version import __version__
from .errors import GpuxUserError

__all__ = ["autotune", "Autotuned", "Config", "space", "bucket", "tuned_hooks", "cost_function",
           "AutotuneError", "entries", "stats", "history", "forget", "device_identity",
           "code_identity"]

#: what the disk entries' layout is; a new layout is a new key
FORMAT = "numba-gpux tuning 1"
#: the disk cache kind the entries live under (``cache.DiskCache``)
KIND = "tuning"
#: by how much (a fraction of its time) a candidate must beat the default, head to
#: head, to be chosen over it: within it, timing noise decides, so the default stays
MARGIN = 0.03


class AutotuneError(GpuxUserError):
    """An autotuned kernel or search space was declared or called wrongly."""


class Config(dict):
    """One candidate: names to values, read as ``cfg["block"]`` or ``cfg.block``."""

    def __getattr__(self, name: str):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"this candidate has no {name!r}: it has "
                                 f"{', '.join(self) or 'nothing'}") from None

    def __repr__(self) -> str:
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in self.items()) + ")"


def space(**axes: Iterable) -> list[Config]:
    """Every combination of the values given per name, the first values first:
    ``space(block=[64, 128], items=[1, 4])`` is four candidates, ``(64, 1)`` first."""
    names = list(axes)
    values = []
    for n in names:
        vs = list(axes[n]) if not isinstance(axes[n], (str, bytes)) else None
        if not vs:
            raise AutotuneError(f"space(): {n!r} needs a non-empty sequence of values, "
                                f"not {axes[n]!r}")
        values.append(vs)
    return [Config(zip(names, combo)) for combo in itertools.product(*values)]


def bucket(n) -> int:
    """*n* rounded up to a power of two (0 stays 0): a problem key in which sizes of the
    same magnitude share one tuning."""
    n = int(n)
    return 0 if n <= 0 else 1 << (n - 1).bit_length()


# --------------------------------------------------------------------------- state

#: entry name -> the chosen candidate (tuned or read in this process)
_chosen: dict[str, Config] = {}
#: entry names tuned again in this process under NUMBA_GPUX_RETUNE
_retuned: set[str] = set()
_locks: dict[str, threading.Lock] = {}
_locks_lock = threading.Lock()
#: True in a thread while it measures candidates: calls inside them do not tune
_measuring: contextvars.ContextVar = contextvars.ContextVar("gpux_autotune_measuring", default=False)
_cost: list = [None]

#: counters: tunings done, candidates measured, seconds spent tuning, disk hits
stats = {"tunings": 0, "candidates": 0, "seconds": 0.0, "disk_hits": 0, "memory_hits": 0}
#: the tunings done in this process, in order: subject, device, signature, key, the
#: default, the choice, candidates measured, seconds
history: list[dict] = []


def _lock_for(name: str) -> threading.Lock:
    with _locks_lock:
        lk = _locks.get(name)
        if lk is None:
            lk = _locks[name] = threading.Lock()
        return lk


@contextlib.contextmanager
def cost_function(fn: Callable[[Config, Callable[[], float]], float] | None):
    """Within the block, candidates are ranked by ``fn(candidate, run)`` instead of by
    timing (*run* runs the candidate once, returning its seconds; the lowest cost
    wins; ties go to the earlier candidate).  For tests and for costs other than
    time; applies to every thread."""
    prev = _cost[0]
    _cost[0] = fn
    try:
        yield
    finally:
        _cost[0] = prev


def forget() -> None:
    """Forget every choice made or read in this process (the disk keeps them)."""
    _chosen.clear()
    _retuned.clear()
    hooks.forget_tuned()


def device_identity(device) -> str:
    """What a tuning result depends on of *device*: target, vendor, name, platform, kind
    and driver version."""
    return "|".join((device.target_name, device.vendor, device.name, device.platform,
                     device.kind, str(device.limits.get("driver_version", ""))))


def _canon(value, what: str):
    """*value* as JSON data with one spelling per value (tuples as lists, dtypes as
    their names), or AutotuneError."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value)
    if isinstance(value, np.dtype):
        return value.str
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).str
    if isinstance(value, (tuple, list)):
        return [_canon(v, what) for v in value]
    if isinstance(value, dict):
        return {str(k): _canon(v, what) for k, v in value.items()}
    raise AutotuneError(f"{what}: {value!r} is not a number, string, dtype, bool, None or "
                        f"tuple of those")


def _name(*parts) -> str:
    text = json.dumps([FORMAT, *parts], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------- disk

def _disk():
    from .cache import DiskCache

    return DiskCache()


def _read(name: str):
    try:
        return _disk().read(KIND, name)
    except OSError:
        return None


def _write(name: str, entry: dict) -> None:
    try:
        _disk().write(KIND, name, entry)
    except OSError:
        pass


def entries(root: str | None = None) -> list[dict]:
    """Every tuning result on disk that passes its check: dicts with ``subject``,
    ``device``, ``signature``, ``key``, ``choice``, ``measured`` (candidate, seconds or
    None where it failed), ``seconds`` (the tuning's cost) and ``path``."""
    from .cache import DiskCache
    from .cachefile import read_sealed

    dc = DiskCache(root)
    secret_key = dc._secret()
    if secret_key is None:
        return []
    out = []
    for _mtime, _size, kind, path in dc.entries():
        if kind != KIND:
            continue
        got = read_sealed(path, secret_key, KIND, os.path.basename(path), {})
        if isinstance(got, dict) and got.get("format") == FORMAT:
            out.append(dict(got, path=path))
    return sorted(out, key=lambda e: (str(e.get("subject")), str(e.get("key"))))


# --------------------------------------------------------------------------- measuring

class _Restore:
    """Copies of the arrays a call may write, put back before each run."""

    def __init__(self, arrays: Iterable) -> None:
        from .memory import DeviceArray

        self.saved = []
        for a in arrays:
            if isinstance(a, DeviceArray):
                self.saved.append((a, a.copy_to_host()))
            elif isinstance(a, np.ndarray) and a.flags.writeable:
                self.saved.append((a, a.copy()))

    def __call__(self) -> None:
        for a, host in self.saved:
            if isinstance(a, np.ndarray):
                a[...] = host
            else:
                a.copy_to_device(host)


def _timed_cost(cfg: Config, run: Callable[[], float], best: float | None = None) -> float:
    """The default cost: one warm-up run (not counted), then three timed runs (five for
    fast candidates); their median.  A candidate whose warm-up and first timed run both
    took over three times the best median so far is not timed further (the warm-up alone
    may be a compilation: a compile-time constant's first candidate)."""
    first = run()
    if best is not None and first > 3 * best:
        second = run()
        if second > 3 * best:
            return second
        first = second
    reps = 5 if first < 0.02 else 3
    return float(np.median([run() for _ in range(reps)]))


def _search(default: Config, candidates: list[Config], axes: dict | None,
            measure: Callable[[Config], float | None]) -> tuple[Config, list]:
    """The candidate of least cost, and every (candidate, cost) measured.  Exhaustive in
    order when the candidates fit the count budget, else one axis at a time from the
    default while the budgets last."""
    budget = config.autotune_budget()
    most = config.autotune_max_configs()
    deadline = time.perf_counter() + budget
    costs: dict = {}
    order: list = []

    def cost_of(cfg: Config):
        k = tuple(sorted((n, repr(v)) for n, v in cfg.items()))
        if k not in costs:
            if len(costs) >= most or (costs and time.perf_counter() > deadline):
                return None, False
            costs[k] = measure(cfg)
            order.append((cfg, costs[k]))
        return costs[k], True

    def better(c, best_c):
        return c is not None and (best_c is None or c < best_c)

    best, best_c = default, cost_of(default)[0]
    if axes is None or len(candidates) <= most:
        for cfg in candidates:
            c, ok = cost_of(cfg)
            if not ok:
                break
            if better(c, best_c):
                best, best_c = cfg, c
        return best, order
    changed = True
    while changed:
        changed = False
        for name, values in axes.items():
            for v in values:
                cfg = Config(best)
                cfg[name] = v
                c, ok = cost_of(cfg)
                if not ok:
                    return best, order
                if better(c, best_c):
                    best, best_c, changed = cfg, c, True
    return best, order


def _choose(name: str, describe: dict, default: Config,
            candidates: list[Config] | Callable[[], list[Config]],
            axes: dict | None, body: Callable[[Config], Any], device,
            restore: Callable[[], _Restore] | None, cost, persist: bool) -> Config | None:
    """The chosen candidate of the entry *name*: this process's, the disk's, or measured
    now (and kept); None inside another tuning's candidate, which does not tune."""
    got = _chosen.get(name)
    if got is not None:
        stats["memory_hits"] += 1
        return got
    with _lock_for(name):
        got = _chosen.get(name)
        if got is not None:
            return got
        forced = config.autotune_forced() and name not in _retuned
        if persist and not forced:
            entry = _read(name)
            if isinstance(entry, dict) and entry.get("format") == FORMAT:
                got = _candidate(entry.get("choice"), entry.get("index"), default, candidates,
                                 axes)
                if got is not None:
                    stats["disk_hits"] += 1
                    _chosen[name] = got
                    return got
        if _measuring.get():  # a call inside another tuning's candidate: no tuning
            return None
        if callable(candidates):
            candidates = candidates()
        chosen, measured, spent = _measure_all(default, candidates, axes, body, device,
                                               restore, cost)
        if all(t is None for _c, t in measured):
            # no candidate ran (the call itself is wrong, or the device is out of
            # memory): nothing is learnt, the default runs and reports the error
            return None
        _chosen[name] = chosen
        _retuned.add(name)
        history.append(dict(describe, default=dict(default), choice=dict(chosen),
                            candidates=len(measured), seconds=spent))
        if persist:
            index = next((i for i, c in enumerate(candidates) if c == chosen), None)
            _write(name, dict(describe, format=FORMAT, choice=_canon(chosen, "choice"), index=index,
                              measured=[[_canon(c, "candidate"), t] for c, t in measured],
                              seconds=spent, when=time.time()))
        return chosen


def _canon_key(cfg) -> str:
    try:
        return json.dumps(_canon(cfg, "candidate"), sort_keys=True)
    except AutotuneError:
        return ""


def _candidate(choice, index, default: Config, candidates, axes: dict | None):
    """The candidate a stored *choice* (found at *index* when it was stored) names, or
    None where it names none (then the entry is tuned again)."""
    if not isinstance(choice, dict) or set(choice) != set(default):
        return None
    if axes is None and type(index) is int and 0 <= index < len(candidates):
        if _canon_key(candidates[index]) == _canon_key(choice):
            return candidates[index]
    if axes is not None:  # a product of axes: each value one of its axis's
        got = Config()
        for n, d in default.items():
            values = axes.get(n, (d,))
            canon = _canon(choice[n], "choice")
            match = [v for v in values if _canon(v, "candidate") == canon]
            if not match:
                return None
            got[n] = match[0]
        return got
    want = _canon_key(choice)
    return next((c for c in candidates if _canon_key(c) == want), None)


def _hook_values(h, q, now) -> list:
    """*now* first, then the other values of hook *h*'s search space for the query *q*."""
    return [now, *(v for v in h.candidates(q) if v != now)]


def _timed_once(cfg: Config, body, restore, sync) -> float:
    if restore is not None:
        restore()
    sync()
    start = time.perf_counter()
    body(cfg)
    sync()
    return time.perf_counter() - start


def _measure_all(default, candidates, axes, body, device, make_restore, cost):
    fn = cost or _cost[0] or _timed_cost
    restore = make_restore() if make_restore is not None else None
    sync = device.runtime.synchronize
    t0 = time.perf_counter()
    token = _measuring.set(True)
    try:
        def measure(cfg: Config):
            def run() -> float:
                return _timed_once(cfg, body, restore, sync)

            try:
                c = fn(cfg, run, best[0]) if fn is _timed_cost else fn(cfg, run)
            except Exception:  # noqa: BLE001 - a candidate that cannot run is not chosen
                return None
            stats["candidates"] += 1
            if c is None:
                return None
            if best[0] is None or c < best[0]:
                best[0] = float(c)
            return float(c)

        best: list = [None]
        chosen, measured = _search(default, candidates, axes, measure)
        if fn is _timed_cost and chosen != default:
            # timing is noisy: the choice must beat the default again, head to head,
            # by MARGIN
            again = {id(c): [] for c in (default, chosen)}
            quick = all(t is not None and t < 0.02 for c, t in measured if c in (default, chosen))
            for _ in range(5 if quick else 2):
                for c in (default, chosen):
                    again[id(c)].append(_timed_once(c, body, restore, sync))
            if np.median(again[id(chosen)]) > (1 - MARGIN) * np.median(again[id(default)]):
                chosen = default
    finally:
        _measuring.reset(token)
        if restore is not None:
            restore()
    spent = time.perf_counter() - t0
    stats["tunings"] += 1
    stats["seconds"] += spent
    return chosen, measured, spent


# --------------------------------------------------------------------------- hooks

def tuned_hooks(subject: str, names: Iterable[str], device, dtype, key, run: Callable[[], Any],
                *, writes: Iterable = (), cost=None, fingerprint: str | None = "") -> Any:
    """``run()`` with the hooks *names* tuned for *device*, *dtype* and the problem *key*.

    The first time (per process, then per disk entry), every combination of the
    hooks' declared search spaces (``hooks.declare(..., space=)``) is tried
    within the budgets, each candidate's values answering ``hooks.tuning(name,
    device, dtype, key=key)`` while it runs; hooks with an implementation a
    library or user registered are not searched (theirs wins).  The choice is
    recorded for ``hooks.tuning``, then *run* runs once for real.  *writes* are
    the arrays *run* writes that it does not make itself (put back before each
    candidate).  *subject* names the operation; *fingerprint* identifies the code
    (None: the result is kept in this process only).
    """
    if not config.autotune_enabled():
        return run()
    dt = None if dtype is None else np.dtype(dtype)
    if hooks.recorded(device, dt, key):
        return run()
    axes: dict = {}
    default = Config()
    for n in names:
        h = hooks.get_hook(n)
        if h.registered(device.target_name, device.kind) is not None:
            continue
        fn, _where = h.lookup(device.target_name, device.kind)
        q = hooks.TuningQuery(h.name, device.target_name, device.kind, device, dt, key)
        d = h.check(fn(q), "default")
        values = _hook_values(h, q, d)
        default[n] = d
        if len(values) > 1:
            axes[n] = values
    if not axes:
        return run()
    def candidates() -> list[Config]:
        return [Config(default, **c) for c in space(**axes)]

    describe = {"subject": subject, "device": device_identity(device),
                "signature": None if dt is None else dt.str, "key": _canon(key, "key")}
    name = _name(describe, fingerprint, __version__, _canon(axes, "space"))

    def body(cfg: Config):
        with hooks.trial(cfg, key):
            return run()

    restore = (lambda: _Restore(writes)) if writes else None
    chosen = _choose(name, describe, default, candidates, axes, body, device, restore, cost,
                     persist=fingerprint is not None)
    if chosen is not None:
        hooks.record_tuned(device, dt, key, chosen)
    return run()


# --------------------------------------------------------------------------- kernels

def _with_constants(kernel, consts: dict):
    """A kernel of the same class for *kernel*'s Python function with the names in
    *consts* bound as globals (compile-time constants: one compiled kernel per value)."""
    py = kernel.py_func
    g = dict(py.__globals__)
    g.update(consts)
    fn = pytypes.FunctionType(py.__code__, g, py.__name__, py.__defaults__, py.__closure__)
    fn.__kwdefaults__ = py.__kwdefaults__
    fn.__qualname__ = py.__qualname__
    fn.__module__ = py.__module__
    fn.__doc__ = py.__doc__
    return type(kernel)(fn, device=False, options=kernel.options, cache=kernel.cache,
                        extra=kernel.extra)


def code_identity(kernel) -> str:
    """What a tuning result depends on of *kernel*: its class, options, and Python code
    with the values of the globals and closure cells it reads (the code of the kernels
    and device functions among them, the names of modules, the values of constants).
    Lighter than the disk cache's key, which also keys typing registries."""
    from .dispatcher import GpuxFunction

    h = hashlib.sha256(f"{type(kernel).__module__}.{type(kernel).__qualname__}|"
                       f"{kernel.options!r}|{sorted(map(str, kernel.extra))}".encode())
    seen: set = set()

    def value(v) -> str:
        if isinstance(v, GpuxFunction):
            function(v.py_func)
            return f"fn:{v.__qualname__}"
        if isinstance(v, pytypes.ModuleType):
            return f"module:{v.__name__}"
        if isinstance(v, pytypes.FunctionType):
            function(v)
            return f"pyfn:{v.__qualname__}"
        if v is None or isinstance(v, (bool, int, float, complex, str, bytes, np.generic)):
            return f"{type(v).__name__}:{v!r}"
        if isinstance(v, tuple):
            return "(" + ",".join(value(x) for x in v) + ")"
        if isinstance(v, np.ndarray):
            return f"array:{v.dtype.str}:{v.shape}:{hashlib.sha256(v.tobytes()).hexdigest()}"
        return f"{type(v).__module__}.{type(v).__qualname__}"

    def code(co, g) -> None:
        h.update(co.co_code)
        h.update(repr((co.co_names, co.co_varnames, co.co_freevars)).encode())
        for c in co.co_consts:
            if isinstance(c, pytypes.CodeType):
                code(c, g)
            else:
                h.update(repr(c).encode())
        for n in co.co_names:
            if n in g:
                h.update(f"{n}={value(g[n])};".encode())

    def function(fn) -> None:
        if id(fn) in seen:
            return
        seen.add(id(fn))
        code(fn.__code__, fn.__globals__)
        for cell in fn.__closure__ or ():
            try:
                h.update(value(cell.cell_contents).encode())
            except ValueError:  # an empty cell
                h.update(b"<empty>")
        h.update(repr(fn.__defaults__).encode())

    function(kernel.py_func)
    return h.hexdigest()


class Autotuned:
    """A kernel launched with the candidate tuning chose for its device, arguments'
    types and problem key; made by :func:`autotune`.  Call it with the kernel's
    arguments (those the candidates fill in are left out)."""

    def __init__(self, kernel, configs: list[Config], launch: Callable, key: Callable | None,
                 constants: tuple, default: Config | None, writes, cost,
                 hook_names: tuple = ()) -> None:
        from .dispatcher import GpuxFunction

        if not isinstance(kernel, GpuxFunction) or kernel.is_device:
            raise AutotuneError(f"autotune() takes a kernel (@jit), not {kernel!r}")
        #: hooks whose values the candidates set, answering gpux.tuning while they run
        self.hooks = tuple(hook_names)
        for n in self.hooks:
            hooks.get_hook(n)  # declared, or a HookError now
        if not configs:
            if not self.hooks:
                raise AutotuneError("autotune(): give at least one candidate")
            configs = [Config()]
        self.kernel = kernel
        self.configs = [Config(c) for c in configs]
        names = set(self.configs[0])
        for c in self.configs:
            if set(c) != names:
                raise AutotuneError(f"autotune(): every candidate names the same values; "
                                    f"{dict(c)} differs from {dict(self.configs[0])}")
        self.default = Config(default) if default is not None else self.configs[0]
        if self.default not in self.configs:
            self.configs.insert(0, self.default)
        params = list(kernel._pysig.parameters)
        self.constants = tuple(constants)
        for c in self.constants:
            if c not in names:
                raise AutotuneError(f"autotune(): constant {c!r} is not a name the candidates "
                                    f"give ({', '.join(sorted(names))})")
            if c in params:
                raise AutotuneError(f"autotune(): constant {c!r} is a parameter of "
                                    f"{kernel.__name__}; a compile-time constant is a global "
                                    f"name the kernel reads")
        #: candidate names passed as the kernel's (keyword) arguments
        self.arguments = tuple(n for n in sorted(names) if n in params)
        if not callable(launch):
            raise AutotuneError("autotune(): launch must be a function (candidate, *args) "
                                "-> (griddim, blockdim)")
        self.launch = launch
        self.key = key
        self.writes = writes
        self.cost = cost
        self._kernels: dict = {}
        self._names: dict = {}
        #: device -> (candidates, default) with the hooks' spaces for that device
        self._spaces: dict = {}
        #: the kernel's code, the candidates and constants, hashed (computed once)
        self._identity: str | None = None
        self.__name__ = kernel.__name__
        self.__doc__ = kernel.__doc__
        self.__wrapped__ = kernel

    def __repr__(self) -> str:
        return f"<autotuned {self.kernel!r}, {len(self.configs)} candidates>"

    def kernel_for(self, cfg: Config):
        """The kernel object that runs candidate *cfg* (its constants bound)."""
        if not self.constants:
            return self.kernel
        k = tuple((c, cfg[c]) for c in self.constants)
        got = self._kernels.get(k)
        if got is None:
            got = self._kernels[k] = _with_constants(self.kernel, dict(k))
        return got

    def _run(self, cfg: Config, args: tuple, kwargs: dict) -> None:
        if self.hooks:
            with hooks.trial({n: cfg[n] for n in self.hooks}):
                return self._launch(cfg, args, kwargs)
        return self._launch(cfg, args, kwargs)

    def _launch(self, cfg: Config, args: tuple, kwargs: dict) -> None:
        dims = self.launch(cfg, *args, **kwargs)
        if not isinstance(dims, tuple) or not 2 <= len(dims) <= 4:
            raise AutotuneError(f"autotune(): launch returned {dims!r}; it returns "
                                f"(griddim, blockdim) like kernel[griddim, blockdim]")
        kw = dict(kwargs)
        kw.update((n, cfg[n]) for n in self.arguments)
        self.kernel_for(cfg)[dims](*args, **kw)

    def _problem_key(self, args, kwargs):
        if self.key is not None:
            return _canon(self.key(*args, **kwargs), f"{self.__name__}: key()")
        from .memory import DeviceArray

        return [bucket(np.size(a)) for a in (*args, *kwargs.values())
                if isinstance(a, (DeviceArray, np.ndarray))]

    def _entry(self, device, args, kwargs) -> tuple[str, dict]:
        argtypes = self.kernel.typeof_args(tuple(args) + tuple(kwargs.values()))
        pkey = self._problem_key(args, kwargs)
        memo_key = (device, argtypes, tuple(kwargs), json.dumps(pkey))
        got = self._names.get(memo_key)
        if got is None:

            if self._identity is None:
                self._identity = _name(code_identity(self.kernel), __version__,
                                       repr([sorted(c.items()) for c in self.configs]),
                                       list(self.constants), list(self.hooks))
            describe = {"subject": f"{self.kernel.py_func.__module__}."
                                   f"{self.kernel.__qualname__}",
                        "device": device_identity(device),
                        "signature": ", ".join(map(str, argtypes)), "key": pkey}
            extra = repr([sorted(c.items()) for c in self._space(device)[0]]) \
                if self.hooks else ""
            name = _name(describe, self._identity, list(kwargs), extra)
            got = self._names[memo_key] = (name, describe)
        return got

    def _space(self, device) -> tuple[list[Config], Config]:
        """The candidates and the default on *device*: with the hooks' values there."""
        if not self.hooks:
            return self.configs, self.default
        got = self._spaces.get(device)
        if got is None:
            axes = {}
            for n in self.hooks:
                h = hooks.get_hook(n)
                q = hooks.TuningQuery(h.name, device.target_name, device.kind, device, None)
                axes[n] = _hook_values(h, q, hooks.tuning(h.name, device))
            extra = space(**axes)
            configs = [Config(c, **e) for c in self.configs for e in extra]
            default = Config(self.default, **extra[0])
            got = self._spaces[device] = (configs, default)
        return got

    def choice(self, *args, **kwargs) -> Config:
        """The candidate a call with these arguments runs (tuning now if none is chosen)."""
        from .devices import default_device

        device = default_device()
        configs, default = self._space(device)
        if not config.autotune_enabled():
            return default
        name, describe = self._entry(device, args, kwargs)
        got = _chosen.get(name)
        if got is not None:
            return got
        def restore() -> _Restore:
            writes = self.writes(*args, **kwargs) if callable(self.writes) else \
                [a for a in (*args, *kwargs.values()) if hasattr(a, "shape")]
            return _Restore(writes)

        got = _choose(name, describe, default, configs, None,
                      lambda cfg: self._run(cfg, args, kwargs), device, restore,
                      self.cost, persist=True)
        return default if got is None else got

    def __call__(self, *args, **kwargs) -> None:
        self._run(self.choice(*args, **kwargs), args, kwargs)


def autotune(configs: Iterable | None = None, *, launch: Callable, key: Callable | None = None,
             constants: Iterable[str] = (), default: dict | None = None,
             writes: Callable | None = None, cost=None, hooks: Iterable[str] = (),
             **axes) -> Callable[[Any], Autotuned]:
    """Decorate a kernel (``@jit``) so that calling it tunes, then launches.

    The candidates are *configs* (a list of dicts, e.g. from :func:`space`) or
    the keyword axes (``block=[64, 128, 256], items=[1, 4]``: every
    combination).  ``launch(cfg, *args)`` returns the launch dimensions
    ``(griddim, blockdim)`` for candidate *cfg*; candidate names that are the
    kernel's parameters are passed as those arguments; names in *constants*
    are compile-time constants: global names the kernel reads, bound per value
    (one compiled kernel each).  ``key(*args)`` is the problem key (default: each
    array argument's size rounded up to a power of two); the signature is part
    of the key anyway.  *default* is the candidate run when tuning is off
    (default: the first).  ``writes(*args)`` lists the arrays the kernel writes
    (default: every array argument), copied and put back around each candidate.
    *cost* replaces timing (see :func:`cost_function`).  *hooks* names tuning hooks
    whose declared search spaces join the candidates (a candidate's value is
    ``cfg[name]``, and ``gpux.tuning(name, ...)`` answers it while the candidate, and
    later the choice, runs: in *launch*, say).
    """
    if configs is not None and axes:
        raise AutotuneError("autotune(): give the candidates as a list or as keyword axes, "
                            "not both")
    cands = space(**axes) if axes else [Config(c) for c in (configs or ())]

    hook_names = tuple(hooks)

    def wrap(kernel):
        return Autotuned(kernel, cands, launch, key, tuple(constants), default, writes, cost,
                         hook_names)

    return wrap
