"""Autotuning: candidates measured once per device and problem key, kept on disk, never a
recompilation, a tuned call's results an untuned call's.

Candidates are ranked by an injected cost function (never by timing): each test says
which candidate is cheapest and checks that one was chosen.  Kernels run for real on the
OpenCL device."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import algorithms as alg
from numba_gpux import autotuning, cachefile, hooks
from numba_gpux.algorithms import _tuning


@pytest.fixture
def tuning_on(monkeypatch, tmp_path, opencl_device):
    """Autotuning on, a private cache folder and key, nothing remembered from before, and
    no time budget that a loaded machine could exhaust before the candidates a test
    expects are measured (the count budget still applies)."""
    monkeypatch.setenv("NUMBA_GPUX_AUTOTUNE", "1")
    monkeypatch.setenv("NUMBA_GPUX_AUTOTUNE_BUDGET", "600")
    monkeypatch.delenv("NUMBA_GPUX_RETUNE", raising=False)
    monkeypatch.setenv("NUMBA_GPUX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("NUMBA_GPUX_CACHE_KEY_FILE", str(tmp_path / "key" / "cache.key"))
    autotuning.forget()
    with gpux.use_device(opencl_device):
        yield opencl_device
    autotuning.forget()


def _by(table, seen=None):
    """A cost function: the cost of a candidate is ``table[its values]``, after running
    it once (so every candidate really runs); *seen* collects the candidates."""
    def cost(cfg, run):
        run()
        if seen is not None:
            seen.append(dict(cfg))
        return table[tuple(cfg.values())]
    return cost


def _launch(cfg, x, *rest):
    return max(1, -(-x.size // (cfg.block * cfg.ITEMS))), cfg.block


@gpux.jit
def _scaled(x, out, factor):
    i = gpux.grid(1)
    g = gpux.gridsize(1)
    for _ in range(ITEMS):  # noqa: F821 - a compile-time constant the candidates bind
        if i < x.size:
            out[i] = x[i] * factor
        i += g


def _tuned_scaled():
    return gpux.autotune(block=[32, 64, 128], ITEMS=[1, 4], factor=[3.0], launch=_launch,
                         constants=("ITEMS",))(_scaled)


def test_the_cheapest_candidate_runs_and_constants_compile_once_each(tuning_on):
    k = _tuned_scaled()
    costs = {(b, i, 3.0): 10.0 for b in (32, 64, 128) for i in (1, 4)}
    costs[(64, 4, 3.0)] = 1.0
    seen = []
    x = gpux.to_device(np.arange(1000, dtype=np.float32))
    out = gpux.device_array(1000, np.float32)
    with autotuning.cost_function(_by(costs, seen)):
        k(x, out)
    assert k.choice(x, out) == {"block": 64, "ITEMS": 4, "factor": 3.0}
    assert len(seen) == 6
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(1000, dtype=np.float32) * 3)
    # one compiled kernel per constant value, whatever the block sizes measured
    assert sorted(k._kernels) == [(("ITEMS", 1),), (("ITEMS", 4),)]
    assert all(kk.stats["neutral_compiles"] == 1 for kk in k._kernels.values())
    # a constant's kernel is a kernel like the one it came from (a cache=True one is
    # kept on disk too)
    cached = gpux.autotune(block=[32], ITEMS=[2], launch=_launch, constants=("ITEMS",))(
        gpux.jit(cache=True)(_scaled.py_func))
    made = cached.kernel_for(cached.configs[0])
    assert made.cache and made.options == cached.kernel.options and made.py_func is not \
        cached.kernel.py_func and made.py_func.__globals__["ITEMS"] == 2
    # later calls: no measuring, no compiling
    before = dict(autotuning.stats)
    k(x, out)
    assert autotuning.stats["candidates"] == before["candidates"]
    assert k.kernel_for(k.choice(x, out)).stats["neutral_compiles"] == 1


@gpux.jit
def _bump(x):
    i = gpux.grid(1)
    if i < x.size:
        x[i] += 1


def test_a_tuned_call_writes_what_an_untuned_call_writes(tuning_on):
    # the kernel updates its argument in place: every candidate ran on the same input,
    # put back before each, and only the chosen run's update is left
    k = gpux.autotune(block=[16, 32, 64, 128], launch=lambda c, x: (-(-x.size // c.block),
                                                                     c.block))(_bump)
    host = np.arange(777, dtype=np.int64)
    x = gpux.to_device(host)
    with autotuning.cost_function(_by({(16,): 4, (32,): 3, (64,): 1, (128,): 2})):
        k(x)
    np.testing.assert_array_equal(x.copy_to_host(), host + 1)
    assert k.choice(x).block == 64
    h = host.copy()  # a NumPy argument: the same
    with autotuning.cost_function(_by({(16,): 4, (32,): 3, (64,): 1, (128,): 2})):
        k(h)
    np.testing.assert_array_equal(h, host + 1)


def test_a_candidate_that_fails_is_not_chosen(tuning_on):
    big = tuning_on.max_threads_per_block * 2  # a launch the device refuses
    k = gpux.autotune(block=[big, 32], launch=lambda c, x: (-(-x.size // c.block), c.block))(_bump)
    x = gpux.to_device(np.zeros(100, np.int64))
    with autotuning.cost_function(_by({(big,): 0.0, (32,): 5.0})):
        k(x)
    assert k.choice(x).block == 32
    assert x.copy_to_host().tolist() == [1] * 100


def test_results_are_kept_on_disk_and_read_back(tuning_on):
    k = _tuned_scaled()
    costs = {(b, i, 3.0): float(b * i) for b in (32, 64, 128) for i in (1, 4)}
    costs[(128, 1, 3.0)] = 0.5
    x = gpux.to_device(np.ones(5000, np.float32))
    out = gpux.device_array(5000, np.float32)
    with autotuning.cost_function(_by(costs)):
        k(x, out)
    [entry] = autotuning.entries()
    assert entry["choice"] == {"block": 128, "ITEMS": 1, "factor": 3.0}
    assert entry["key"] == [8192, 8192] and len(entry["measured"]) == 6
    autotuning.forget()  # as a new process: the disk answers, nothing is measured

    def never(cfg, run):
        raise AssertionError("measured again")

    hits = autotuning.stats["disk_hits"]
    with autotuning.cost_function(never):
        assert _tuned_scaled().choice(x, out).block == 128
    assert autotuning.stats["disk_hits"] == hits + 1
    # another problem key (size bucket) is tuned on its own
    seen = []
    small = gpux.to_device(np.ones(10, np.float32))
    with autotuning.cost_function(_by(costs, seen)):
        _tuned_scaled()(small, gpux.device_array(10, np.float32))
    assert len(seen) == 6 and len(autotuning.entries()) == 2


def test_a_damaged_entry_or_another_driver_is_tuned_again(tuning_on, monkeypatch):
    k = _tuned_scaled()
    x = gpux.to_device(np.ones(300, np.float32))
    out = gpux.device_array(300, np.float32)
    first = {(b, i, 3.0): float(b + i) for b in (32, 64, 128) for i in (1, 4)}
    with autotuning.cost_function(_by(first)):
        k(x, out)
    [entry] = autotuning.entries()
    assert entry["choice"]["block"] == 32
    data = bytearray(open(entry["path"], "rb").read())
    data[-3] ^= 0x40
    open(entry["path"], "wb").write(bytes(data))
    autotuning.forget()
    cachefile._warned.discard("entry")
    second = dict(first)
    second[(128, 4, 3.0)] = 0.0
    seen = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with autotuning.cost_function(_by(second, seen)):
            assert _tuned_scaled().choice(x, out) == {"block": 128, "ITEMS": 4, "factor": 3.0}
    assert len(seen) == 6
    assert any(issubclass(w.category, cachefile.CacheTrustWarning) for w in caught)
    # a driver update is another device identity: tuned again, the old entry kept
    autotuning.forget()
    monkeypatch.setitem(tuning_on.limits, "driver_version", "another driver")
    seen.clear()
    with autotuning.cost_function(_by(first, seen)):
        assert _tuned_scaled().choice(x, out).block == 32
    assert len(seen) == 6 and len(autotuning.entries()) == 2


def test_an_entry_naming_a_candidate_not_in_the_space_is_tuned_again(tuning_on):
    from numba_gpux.cache import DiskCache

    k = _tuned_scaled()
    x = gpux.to_device(np.ones(64, np.float32))
    out = gpux.device_array(64, np.float32)
    costs = {(b, i, 3.0): float(b) for b in (32, 64, 128) for i in (1, 4)}
    with autotuning.cost_function(_by(costs)):
        k(x, out)
    [entry] = autotuning.entries()
    name = os.path.basename(entry["path"])
    forged = {key: v for key, v in entry.items() if key != "path"}
    forged["choice"] = {"block": 4096, "ITEMS": 3, "factor": 3.0}
    assert DiskCache().write(autotuning.KIND, name, forged)
    autotuning.forget()
    seen = []
    with autotuning.cost_function(_by(costs, seen)):
        assert _tuned_scaled().choice(x, out).block == 32
    assert len(seen) == 6


def test_tuning_off_runs_the_default_and_retune_measures_again(tuning_on, monkeypatch):
    k = gpux.autotune(block=[32, 64], launch=lambda c, x: (-(-x.size // c.block), c.block),
                      default={"block": 64})(_bump)
    x = gpux.to_device(np.zeros(50, np.int64))

    def never(cfg, run):
        raise AssertionError("measured with tuning off")

    monkeypatch.setenv("NUMBA_GPUX_AUTOTUNE", "0")
    with autotuning.cost_function(never):
        k(x)
        assert k.choice(x).block == 64
    assert x.copy_to_host().tolist() == [1] * 50
    monkeypatch.setenv("NUMBA_GPUX_AUTOTUNE", "1")
    with autotuning.cost_function(_by({(32,): 1.0, (64,): 2.0})):
        assert k.choice(x).block == 32
    autotuning.forget()
    monkeypatch.setenv("NUMBA_GPUX_RETUNE", "1")
    seen = []
    with autotuning.cost_function(_by({(32,): 2.0, (64,): 1.0}, seen)):
        assert k.choice(x).block == 64
        assert k.choice(x).block == 64  # once per process
    assert len(seen) == 2
    assert autotuning.entries()[0]["choice"] == {"block": 64}


def test_threads_tuning_the_same_entry_measure_once(tuning_on):
    k = gpux.autotune(block=[32, 64, 128], launch=lambda c, x: (-(-x.size // c.block),
                                                                 c.block))(_bump)
    xs = [gpux.to_device(np.zeros(1000, np.int64)) for _ in range(4)]
    seen = []
    errors = []

    def call(x):
        try:
            k(x)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    with autotuning.cost_function(_by({(32,): 3.0, (64,): 1.0, (128,): 2.0}, seen)):
        threads = [threading.Thread(target=call, args=(x,)) for x in xs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    assert len(seen) == 3
    for x in xs:
        assert x.copy_to_host().tolist() == [1] * 1000


def test_bad_declarations_are_clear_errors():
    with pytest.raises(autotuning.AutotuneError, match="same values"):
        gpux.autotune([{"block": 1}, {"items": 2}], launch=_launch)(_bump)
    with pytest.raises(autotuning.AutotuneError, match="is a parameter"):
        gpux.autotune(x=[1, 2], launch=_launch, constants=("x",))(_bump)
    with pytest.raises(autotuning.AutotuneError, match="not a name the candidates give"):
        gpux.autotune(block=[1], launch=_launch, constants=("ITEMS",))(_bump)
    with pytest.raises(autotuning.AutotuneError, match="takes a kernel"):
        gpux.autotune(block=[1], launch=_launch)(lambda x: x)
    with pytest.raises(autotuning.AutotuneError, match="non-empty sequence"):
        autotuning.space(block=[])


def test_bucket_rounds_up_to_a_power_of_two():
    assert [autotuning.bucket(n) for n in (0, 1, 2, 3, 1000, 1024, 1025)] == \
        [0, 1, 2, 4, 1024, 1024, 2048]


# ---------------------------------------------------------------------- hooks

def test_hook_levels_registered_then_tuned_then_defaults(opencl_device, monkeypatch):
    monkeypatch.setenv("NUMBA_GPUX_AUTOTUNE", "1")
    h = hooks.declare("test.levels", int, "levels", space=(1, 2, 3))
    h.impls.clear()
    h.defaults.clear()
    seen = []
    hooks.implement("test.levels", fn=lambda q: (seen.append(q.key), 10)[1], default=True)
    key = ("test.op", 1024)
    assert hooks.tuning("test.levels", opencl_device, np.float32, key=key) == 10
    assert seen == [key]  # the query carries the problem key
    hooks.record_tuned(opencl_device, np.float32, key, {"test.levels": 2})
    try:
        assert hooks.tuning("test.levels", opencl_device, np.float32, key=key) == 2
        assert hooks.tuning("test.levels", opencl_device, np.float32, key=("other", 1)) == 10
        assert hooks.tuning("test.levels", opencl_device, np.float64, key=key) == 10
        monkeypatch.setenv("NUMBA_GPUX_AUTOTUNE", "0")
        assert hooks.tuning("test.levels", opencl_device, np.float32, key=key) == 10
        monkeypatch.setenv("NUMBA_GPUX_AUTOTUNE", "1")
        hooks.implement("test.levels", target=opencl_device.target_name, fn=7)  # a library's
        assert hooks.tuning("test.levels", opencl_device, np.float32, key=key) == 7
    finally:
        hooks.forget_tuned(opencl_device)
        h.impls.clear()
    q = hooks.TuningQuery("test.levels", "opencl", None, None, None)
    assert q.key is None  # the old five-field form still builds
    assert h.candidates(q) == (1, 2, 3)
    hooks.declare("test.levels", int, space=lambda q: [4, "x"])
    with pytest.raises(hooks.HookError, match="search space"):
        h.candidates(q)


def _algo_cost(prefer: dict):
    """Cheapest: the candidate whose hook values match *prefer*; the others by how many differ."""
    seen = []

    def cost(cfg, run):
        run()
        seen.append(dict(cfg))
        return sum(cfg.get(n) != v for n, v in prefer.items())

    return cost, seen


def test_algorithms_are_tuned_through_their_hooks(tuning_on, rng):
    n = _tuning.TUNE_MIN_SIZE + 3
    x = rng.integers(-1000, 1000, n).astype(np.int64)
    d = gpux.to_device(x)
    cost, seen = _algo_cost({"algorithms.block_size": 32, "algorithms.items_per_thread": 16})
    with autotuning.cost_function(cost):
        assert alg.reduce(d) == x.sum()
        got = alg.scan(d).copy_to_host()
    np.testing.assert_array_equal(got, np.cumsum(x))
    assert len(seen) > 1
    key = ("algorithms.scan", "add", autotuning.bucket(n))
    assert _tuning.block_size(tuning_on, np.int64, key) == 32
    assert _tuning.items_per_thread(tuning_on, np.int64, key) == 16
    # a registered implementation beats the tuned result, and nothing recompiles
    hook = hooks.get_hook("algorithms.block_size")
    saved = dict(hook.impls)
    try:
        hooks.implement("algorithms.block_size", target="opencl", fn=64)
        assert _tuning.block_size(tuning_on, np.int64, key) == 64
        np.testing.assert_array_equal(alg.scan(d).copy_to_host(), np.cumsum(x))
    finally:
        hook.impls.clear()
        hook.impls.update(saved)
    # in place: foreach's writes are put back before each candidate
    arr = gpux.to_device(np.zeros(n, np.int64))
    cost, seen = _algo_cost({"algorithms.map_block_size": 64})
    with autotuning.cost_function(cost):
        alg.foreach(_add_index, n, arr)
    assert len(seen) > 1
    np.testing.assert_array_equal(arr.copy_to_host(), np.arange(n))
    # sort and argsort: the passes sort in place; results as NumPy's
    f = rng.standard_normal(n).astype(np.float32)
    cost, seen = _algo_cost({"algorithms.radix_bits": 8, "algorithms.sort_items_per_thread": 1024})
    with autotuning.cost_function(cost):
        np.testing.assert_array_equal(alg.argsort(f), np.argsort(f, kind="stable"))
        np.testing.assert_array_equal(alg.sort(f), np.sort(f))
    key = ("algorithms.argsort", autotuning.bucket(n))
    assert _tuning.radix_bits(tuning_on, np.float32, key) == 8


@gpux.jit(device=True)
def _add_index(i, arr):
    arr[i] += i


# ---------------------------------------------------------------------- processes

PROGRAM = """
import json, sys, time
import numpy as np
import numba_gpux as gpux
from numba_gpux import autotuning

@gpux.jit(cache=True)
def k(x):
    i = gpux.grid(1)
    if i < x.size:
        x[i] += 1

tuned = gpux.autotune(block=[16, 32, 64, 128],
                      launch=lambda c, x: (-(-x.size // c.block), c.block))(k)
costs = {16: 3.0, 32: 0.5, 64: 2.0, 128: 4.0}
measured = []

def cost(cfg, run):
    run()
    measured.append(cfg.block)
    time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 0)
    return costs[cfg.block]

x = gpux.to_device(np.zeros(4096, np.int64))
with autotuning.cost_function(cost):
    tuned(x)
print(json.dumps({"out": x.copy_to_host()[:3].tolist(), "measured": measured,
                  "choice": tuned.choice(x).block}))
"""


def _run(tmp_path, *args, wait=True):
    prog = tmp_path / "prog.py"
    if not prog.exists():
        prog.write_text(textwrap.dedent(PROGRAM))
    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(tmp_path / "cache"), NUMBA_GPUX_AUTOTUNE="1",
               NUMBA_GPUX_CACHE_KEY_FILE=str(tmp_path / "key" / "cache.key"))
    env.pop("NUMBA_GPUX_RETUNE", None)
    p = subprocess.Popen([sys.executable, str(prog), *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=str(tmp_path))
    return p if not wait else _result(p)


def _result(p):
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def _tuning_files(tmp_path):
    return [os.path.join(r, f) for r, _, fs in os.walk(tmp_path / "cache")
            for f in fs if os.sep + "tuning" + os.sep in os.path.join(r, f)]


def test_a_later_process_pays_no_tuning_and_the_command_line_lists_and_clears(
        tmp_path, opencl_device):
    first = _run(tmp_path)
    assert first == {"out": [1, 1, 1], "measured": [16, 32, 64, 128], "choice": 32}
    later = _run(tmp_path)
    assert later == {"out": [1, 1, 1], "measured": [], "choice": 32}
    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(tmp_path / "cache"),
               NUMBA_GPUX_CACHE_KEY_FILE=str(tmp_path / "key" / "cache.key"))
    info = subprocess.run([sys.executable, "-m", "numba_gpux", "cache", "info"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert info.returncode == 0, info.stderr
    line = next(ln for ln in info.stdout.splitlines() if "__main__.k" in ln)
    assert "block=32" in line and "4 candidates" in line
    cleared = subprocess.run([sys.executable, "-m", "numba_gpux", "cache", "clear"],
                             capture_output=True, text=True, env=env, timeout=300)
    assert cleared.returncode == 0, cleared.stderr
    assert _tuning_files(tmp_path) == []
    assert _run(tmp_path)["measured"] == [16, 32, 64, 128]


def test_two_processes_tuning_at_once_both_finish_with_one_entry(tmp_path, opencl_device):
    procs = [_run(tmp_path, "0.2", wait=False) for _ in range(2)]
    results = [_result(p) for p in procs]
    for r in results:
        assert r["out"] == [1, 1, 1] and r["choice"] == 32
    assert len(_tuning_files(tmp_path)) == 1


def _kernel_from(source: str):
    ns = {"gpux": gpux, "__name__": __name__}
    exec(textwrap.dedent(source), ns)  # noqa: S102 - the test's own kernels
    return gpux.autotune(block=[32, 64], launch=lambda c, x: (-(-x.size // c.block),
                                                              c.block))(ns["k"])


def test_a_changed_kernel_is_tuned_again_the_same_one_is_not(tuning_on):
    one = """
    @gpux.jit
    def k(x):
        i = gpux.grid(1)
        if i < x.size:
            x[i] += 1
    """
    x = gpux.to_device(np.zeros(100, np.int64))
    seen = []
    with autotuning.cost_function(_by({(32,): 2.0, (64,): 1.0}, seen)):
        _kernel_from(one)(x)
        autotuning.forget()
        _kernel_from(one)(x)  # the same code, as in a later process: read from disk
        assert len(seen) == 2
        _kernel_from(one.replace("+= 1", "+= 2"))(x)  # the same name, other code
    assert len(seen) == 4
    assert x.copy_to_host().tolist() == [4] * 100
    assert len(autotuning.entries()) == 2


def test_a_kernel_tuned_over_a_hooks_space_sees_the_value_through_tuning(tuning_on):
    hooks.declare("test.kblock", int, "a library's block size", space=(16, 32, 64))
    hooks.implement("test.kblock", fn=32, default=True)
    seen_in_launch = []

    def launch(cfg, x):
        bs = gpux.tuning("test.kblock", tuning_on)      # the candidate's value while it runs
        seen_in_launch.append(bs)
        assert bs == cfg["test.kblock"]
        return -(-x.size // bs), bs

    k = gpux.autotune(hooks=["test.kblock"], launch=launch)(_bump)
    x = gpux.to_device(np.zeros(500, np.int64))
    with autotuning.cost_function(_by({(32,): 2.0, (16,): 3.0, (64,): 1.0})):
        k(x)
    assert x.copy_to_host().tolist() == [1] * 500
    assert k.choice(x) == {"test.kblock": 64}
    assert seen_in_launch[0] == 32 and seen_in_launch[-1] == 64  # the default first
    assert gpux.tuning("test.kblock", tuning_on) == 32  # outside the kernel's calls: as before


def test_a_call_no_candidate_can_run_reports_the_error_and_records_nothing(tuning_on):
    big = tuning_on.max_threads_per_block
    k = gpux.autotune(block=[big * 2, big * 4],  # launches the device refuses
                      launch=lambda c, x: (-(-x.size // c.block), c.block))(_bump)
    x = gpux.to_device(np.zeros(10, np.int64))
    with autotuning.cost_function(_by({(big * 2,): 1.0, (big * 4,): 2.0})):
        with pytest.raises(gpux.LaunchError):
            k(x)
    assert autotuning.entries() == [] and autotuning._chosen == {}
    assert x.copy_to_host().tolist() == [0] * 10


@gpux.jit
def _scale_by(x, factor):
    i = gpux.grid(1)
    if i < x.size:
        x[i] *= factor


def test_keys_keywords_and_a_default_outside_the_candidates(tuning_on):
    # a default not among the candidates is measured first; keyword arguments pass through
    k = gpux.autotune(block=[32, 64], default={"block": 16},
                      launch=lambda c, x, factor=1: (-(-x.size // c.block), c.block),
                      key=lambda x, factor=1: (autotuning.bucket(x.size), np.dtype(x.dtype)))(
        _scale_by)
    assert k.configs[0] == {"block": 16} and len(k.configs) == 3
    x = gpux.to_device(np.ones(100, np.float64))
    seen = []
    with autotuning.cost_function(_by({(16,): 2.0, (32,): 1.0, (64,): 3.0}, seen)):
        k(x, factor=3.0)
    assert [c["block"] for c in seen] == [16, 32, 64]
    assert x.copy_to_host().tolist() == [3.0] * 100
    [entry] = autotuning.entries()
    assert entry["key"] == [128, "<f8"] and entry["choice"] == {"block": 32}
    bad = gpux.autotune(block=[32], launch=lambda c, x, factor=1: (1, 32),
                        key=lambda x, factor=1: object())(_scale_by)
    with pytest.raises(autotuning.AutotuneError, match="key.*is not a number"):
        bad(x, 2.0)
