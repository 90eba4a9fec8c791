"""Start-up with the disk cache: 20 kernels, cold and warm, in fresh processes.

A generated program defines 20 small element-wise kernels with
``@gpux.jit(cache=True)`` and launches each once on the default device; the
same 20 computations written for numba's ``@njit(cache=True)`` (a loop over
the elements) are called once each.  Every number comes from a fresh process:

* cold: an empty cache folder (ours: ``NUMBA_GPUX_CACHE_DIR``; numba's:
  ``NUMBA_CACHE_DIR``), so everything is compiled and written;
* warm: the folder a cold run filled, so everything can come from the cache.

Measured is the time from after the imports and the device set-up (driver,
context, three device arrays) to the end of the 20 launches (synchronized),
i.e. what the cache can save; the imports and the device set-up are reported
apart.  Runs are interleaved (ours cold, ours warm, numba cold, numba warm),
the table gives medians.  Each run's results are checked against NumPy, and
the warm runs report the cache's own counters (entries found before typing).

Apart from the fresh processes, the entries a warm start reads (each kernel's index
entry and driver program) are read again in this process, timed per entry: our
check (HMAC-SHA256 over the entry, constant-time compare) and decoding (data, no
pickle), next to what a checksummed pickle costs for the same objects (SHA-256 of
the body and ``pickle.loads``, the format before authentication).

Goals: our warm start at most 1.0x numba's warm start, and at most 0.15x our
own cold start.

Usage: python benchmarks/bench_cache.py [--runs 5] [--out FILE]
"""

from __future__ import annotations

import json
import os
import hashlib
import pickle
import shutil
import statistics
import subprocess
import sys
import tempfile
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_import import bench_main, child_env, goal_lines, machine  # noqa: E402

RESULTS = os.path.join(HERE, "results")
GOALS = {"warm_over_numba_warm": 1.0, "warm_over_cold": 0.15}
N = 1024

__all__ = ["main", "measure", "EXPRESSIONS"]

#: the 20 kernels' element-wise computations, of a[i] and b[i] (float32 arrays)
EXPRESSIONS = [
    "a[i] + b[i]",
    "a[i] * b[i]",
    "a[i] - b[i]",
    "2.0 * a[i] + b[i]",
    "math.sqrt(abs(a[i]))",
    "math.sin(a[i]) + b[i]",
    "math.exp(-a[i] * a[i])",
    "max(a[i], b[i])",
    "min(a[i], b[i])",
    "a[i] if a[i] > b[i] else b[i] * 0.5",
    "a[i] * a[i] + b[i] * b[i]",
    "math.cos(a[i]) * b[i]",
    "(a[i] + 1.0) / (b[i] + 2.0)",
    "math.log(1.0 + abs(a[i]))",
    "math.tanh(a[i])",
    "a[i] ** 2 - b[i]",
    "math.floor(a[i] * 10.0) / 10.0",
    "abs(a[i] - b[i])",
    "math.hypot(a[i], b[i])",
    "a[i] * 3.0 + b[i] * 4.0 - 1.0",
]


def _gpux_module() -> str:
    lines = ["import math", "import numba_gpux as gpux", ""]
    for k, e in enumerate(EXPRESSIONS):
        lines += ["@gpux.jit(cache=True)", f"def k{k}(a, b, out):", "    i = gpux.grid(1)",
                  "    if i < out.size:", f"        out[i] = {e}", ""]
    lines.append(f"KERNELS = [{', '.join(f'k{k}' for k in range(len(EXPRESSIONS)))}]")
    return "\n".join(lines) + "\n"


def _numba_module() -> str:
    lines = ["import math", "import numba", ""]
    for k, e in enumerate(EXPRESSIONS):
        lines += ["@numba.njit(cache=True)", f"def k{k}(a, b, out):",
                  "    for i in range(out.size):", f"        out[i] = {e}", ""]
    lines.append(f"KERNELS = [{', '.join(f'k{k}' for k in range(len(EXPRESSIONS)))}]")
    return "\n".join(lines) + "\n"


def _reference_module() -> str:
    """The same computations in plain Python over one element (the check)."""
    lines = ["import math", ""]
    for k, e in enumerate(EXPRESSIONS):
        lines += [f"def k{k}(a, b, out, i):", f"    out[i] = {e}", ""]
    lines.append(f"KERNELS = [{', '.join(f'k{k}' for k in range(len(EXPRESSIONS)))}]")
    return "\n".join(lines) + "\n"


_CHILD = """
import json, sys, time
T = time.perf_counter
kind, folder = sys.argv[1], sys.argv[2]
sys.path.insert(0, folder)
t0 = T()
import numpy as np
if kind == "gpux":
    import numba_gpux as gpux
    import kernels_gpux as K
else:
    import numba
    import kernels_numba as K
t1 = T()
rng = np.random.default_rng(7)
a = rng.standard_normal(%(n)d).astype(np.float32)
b = rng.standard_normal(%(n)d).astype(np.float32)
outs = []
if kind == "gpux":
    da, db, dout = gpux.to_device(a), gpux.to_device(b), gpux.device_array(%(n)d, np.float32)
    gpux.synchronize()
    t2 = T()
    for k in K.KERNELS:
        k[(%(n)d + 255) // 256, 256](da, db, dout)
        outs.append(dout.copy_to_host())
    t3 = T()
    from numba_gpux import cache
    counters = dict(cache.stats)
else:
    out = np.empty(%(n)d, np.float32)
    t2 = T()
    for k in K.KERNELS:
        k(a, b, out)
        outs.append(out.copy())
    t3 = T()
    counters = {}
import kernels_ref as R
worst = 0.0
for k, got in zip(R.KERNELS, outs):
    ref = np.empty(16, np.float32)
    for i in range(16):
        k(a, b, ref, i)
    worst = max(worst, float(np.max(np.abs(got[:16] - ref) / (1 + np.abs(ref)))))
print(json.dumps({"import": t1 - t0, "setup": t2 - t1, "kernels": t3 - t2,
                  "max_rel_err": worst, "counters": counters}))
""" % {"n": N}


def _run(kind: str, folder: str, cache: str, env: dict) -> dict:
    env = dict(env)
    env["NUMBA_GPUX_CACHE_DIR" if kind == "gpux" else "NUMBA_CACHE_DIR"] = cache
    p = subprocess.run([sys.executable, "-c", _CHILD, kind, folder], env=env,
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        err = p.stderr.strip().splitlines()
        raise RuntimeError(err[-1] if err else f"exit {p.returncode}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def measure(runs: int) -> dict:
    env = child_env()
    work = tempfile.mkdtemp(prefix="gpux_bench_cache_")
    try:
        for name, text in (("kernels_gpux", _gpux_module()), ("kernels_numba", _numba_module()),
                           ("kernels_ref", _reference_module())):
            with open(os.path.join(work, name + ".py"), "w") as f:
                f.write(text)
        samples: dict[str, list] = {"gpux_cold": [], "gpux_warm": [], "numba_cold": [],
                                    "numba_warm": []}
        for kind in ("gpux", "numba"):  # the bytecode cache of each side, warmed once
            _run(kind, work, os.path.join(work, f"prime-{kind}"), env)
        for r in range(runs):
            for kind in ("gpux", "numba"):
                cache = os.path.join(work, f"cache-{kind}-{r}")
                samples[f"{kind}_cold"].append(_run(kind, work, cache, env))
                samples[f"{kind}_warm"].append(_run(kind, work, cache, env))
                if kind == "gpux" and r == runs - 1:
                    entry_costs = _entry_costs(cache)
                shutil.rmtree(cache, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out: dict = {"benchmark": "cache", "runs": runs, "kernels": len(EXPRESSIONS),
                 "elements": N, "samples": samples, "median_s": {}, "ratios": {}, "goals": {}}
    m = out["median_s"]
    for name, ss in samples.items():
        m[name] = {f: statistics.median(s[f] for s in ss) for f in ("import", "setup", "kernels")}
    out["max_rel_err"] = max(s["max_rel_err"] for ss in samples.values() for s in ss)
    out["warm_counters"] = samples["gpux_warm"][-1]["counters"]
    r = out["ratios"]
    r["gpux warm / numba warm"] = m["gpux_warm"]["kernels"] / m["numba_warm"]["kernels"]
    r["gpux warm / gpux cold"] = m["gpux_warm"]["kernels"] / m["gpux_cold"]["kernels"]
    r["numba warm / numba cold"] = m["numba_warm"]["kernels"] / m["numba_cold"]["kernels"]
    g = out["goals"]
    g["gpux warm / numba warm"] = {"max": GOALS["warm_over_numba_warm"],
                                   "value": r["gpux warm / numba warm"]}
    g["gpux warm / gpux cold"] = {"max": GOALS["warm_over_cold"],
                                  "value": r["gpux warm / gpux cold"]}
    for v in g.values():
        v["met"] = v["value"] <= v["max"]
    out["entry_read_us"] = entry_costs
    out["machine"] = machine()
    return out


def _entry_costs(cache: str) -> dict:
    """Median microseconds per entry a warm start reads (index and programs), for our
    check and decoding and for a SHA-256 checksum and ``pickle.loads`` of the same objects."""
    from numba_gpux import cachefile

    key = cachefile.secret()
    per: dict[str, list] = {"mac": [], "decode": [], "sha256": [], "unpickle": [], "bytes": []}
    root = os.path.join(cache, f"code-v{cachefile.FORMAT_VERSION}")
    for kind in ("index", "programs"):
        for dirpath, _dirs, files in os.walk(os.path.join(root, kind)):
            for name in files:
                with open(os.path.join(dirpath, name), "rb") as f:
                    data = f.read()
                body = cachefile.unseal(key, kind, name, data)
                assert body is not None, "an entry the benchmark's own run wrote fails its check"
                obj = cachefile.decode(body)
                pickled = pickle.dumps((name, obj), protocol=pickle.HIGHEST_PROTOCOL)
                digest = hashlib.sha256(pickled).digest()
                n = 200
                t = lambda f: min(timeit.repeat(f, number=n, repeat=5)) / n * 1e6  # noqa: E731
                per["mac"].append(t(lambda: cachefile.unseal(key, kind, name, data)))
                per["decode"].append(t(lambda: cachefile.decode(body)))
                per["sha256"].append(t(lambda: hashlib.sha256(pickled).digest() == digest))
                per["unpickle"].append(t(lambda: pickle.loads(pickled)))
                per["bytes"].append(len(data))
    out = {k: statistics.median(v) for k, v in per.items() if v}
    out["entries"] = len(per["bytes"])
    return out


def report(res: dict) -> str:
    m = res["median_s"]
    ms = lambda v: f"{v * 1e3:.0f}"  # noqa: E731
    lines = [f"{res['kernels']} kernels, one launch (call) each, fresh processes, "
             f"median of {res['runs']}", "",
             "| fresh process | import (ms) | device set-up (ms) | 20 kernels (ms) |",
             "| --- | --- | --- | --- |"]
    labels = {"gpux_cold": "numba-gpux, cold cache", "gpux_warm": "numba-gpux, warm cache",
              "numba_cold": "numba `@njit(cache=True)`, cold", "numba_warm":
              "numba `@njit(cache=True)`, warm"}
    for key, label in labels.items():
        v = m[key]
        lines.append(f"| {label} | {ms(v['import'])} | {ms(v['setup'])} | {ms(v['kernels'])} |")
    lines += ["", "| ratio | value |", "| --- | --- |"]
    lines += [f"| {k} | {v:.3f} |" for k, v in res["ratios"].items()]
    lines += ["", f"warm run's cache counters: {res['warm_counters']}",
              f"largest relative error against Python: {res['max_rel_err']:.2e}", ""]
    e = res.get("entry_read_us")
    if e:
        lines += [f"per entry a warm start reads ({e['entries']} entries, median "
                  f"{e['bytes']:.0f} bytes), microseconds:", "",
                  "| authenticated data (ours) | checksummed pickle (before) |", "| --- | --- |",
                  f"| HMAC check {e['mac']:.1f} + decode {e['decode']:.1f} = "
                  f"{e['mac'] + e['decode']:.1f} | SHA-256 {e['sha256']:.1f} + pickle.loads "
                  f"{e['unpickle']:.1f} = {e['sha256'] + e['unpickle']:.1f} |", ""]
    lines += goal_lines(res["goals"])
    return "\n".join(lines)


def main(argv=None) -> int:
    return bench_main(__doc__, measure, report, 5, "bench_cache.json", argv)


if __name__ == "__main__":
    sys.exit(main())
