"""Autotuning on the OpenCL device: tuned against the hand-picked defaults, in one run.

For each case (the algorithms at 4M elements in several dtypes, and one kernel written
here whose block size and items per work-item are tuned):

- the one-time tuning cost (the first call with tuning on, in a fresh cache folder:
  seconds spent measuring candidates, and how many);
- the time per call with the package's defaults (``NUMBA_GPUX_AUTOTUNE=0``) and with
  the tuned choice, interleaved run by run, medians; the ratio tuned / default
  (goal: at most 1.0);
- in three warm processes (same cache folder): the time each case's first call
  spends in tuning, i.e. finding its choice on disk, median of the three (goal:
  under 1 ms).

    python benchmarks/autotune.py [--n 4194304] [--repeat 5] [--cases map,reduce]

Prints a table and writes benchmarks/results/autotune.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import numba_gpux as gpux
from numba_gpux import algorithms as alg
from numba_gpux import autotuning


@gpux.jit(device=True)
def _affine(a):
    return a * np.float32(2) + np.float32(1)


@gpux.jit(device=True)
def _absmax(a, b):
    a = abs(a)
    b = abs(b)
    return a if a > b else b


@gpux.jit
def _hypot_kernel(x, y, out):
    i = gpux.grid(1)
    g = gpux.gridsize(1)
    for _ in range(ITEMS):  # noqa: F821 - a compile-time constant the candidates bind
        if i < out.size:
            out[i] = (x[i] * x[i] + y[i] * y[i]) ** np.float32(0.5)
        i += g


def _hypot_launch(cfg, x, y, out):
    return max(1, -(-out.size // (cfg.block * cfg.ITEMS))), cfg.block


#: a user's kernel, its defaults as a CUDA programmer would pick them (256 threads,
#: 4 items each) first
hypot = gpux.autotune(block=[256, 64, 128, 512, 1024], ITEMS=[4, 1, 2, 8, 16],
                      launch=_hypot_launch, constants=("ITEMS",),
                      writes=lambda x, y, out: [])(_hypot_kernel)


def _cases(n, names):
    rng = np.random.default_rng(0)
    xf = gpux.to_device(rng.standard_normal(n).astype(np.float32))
    yf = gpux.to_device(rng.standard_normal(n).astype(np.float32))
    xd = gpux.to_device(rng.standard_normal(n))
    xi = gpux.to_device(rng.integers(-1000, 1000, n).astype(np.int32))
    xl = gpux.to_device(rng.integers(-1000, 1000, n).astype(np.int64))
    m2 = gpux.to_device(rng.standard_normal((4000, 1000)))
    outf = gpux.device_array(n, np.float32)
    all_cases = [
        ("map x*2+1 f32", lambda: alg.map(_affine, xf)),
        ("reduce sum f32", lambda: alg.reduce(xf)),
        ("reduce sum f64", lambda: alg.reduce(xd)),
        ("reduce max i32", lambda: alg.reduce(xi, "max")),
        ("reduce absmax f32", lambda: alg.reduce(xf, _absmax)),
        ("reduce axis=0 f64 4000x1000", lambda: alg.reduce(m2, axis=0)),
        ("scan incl i32", lambda: alg.scan(xi)),
        ("scan excl i64", lambda: alg.scan(xl, exclusive=True)),
        ("sort f32", lambda: alg.sort(xf)),
        ("sort i32", lambda: alg.sort(xi)),
        ("argsort f32", lambda: alg.argsort(xf)),
        ("user kernel hypot f32", lambda: hypot(xf, yf, outf)),
    ]
    return [c for c in all_cases if not names or any(s in c[0] for s in names)]


_SUBJECTS = {"map": "algorithms.map", "reduce axis": "algorithms.reduce_axis",
             "reduce": "algorithms.reduce", "scan incl": "algorithms.scan",
             "scan excl": "algorithms.scan_exclusive", "sort": "algorithms.sort",
             "argsort": "algorithms.argsort"}


def _choice(case: str, since: int) -> tuple[str, bool]:
    """What the case's own tuning chose (calls inside it may tune their own problems),
    and whether that is the default."""
    subject = next((v for k, v in _SUBJECTS.items() if case.startswith(k)), None)
    mine = [h for h in autotuning.history[since:]
            if subject is None or h["subject"] == subject]
    if not mine:
        return "(none)", True
    got = mine[0]["choice"]
    text = ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in got.items())
    return text, got == mine[0]["default"]


def _set_tuning(on: bool) -> None:
    os.environ["NUMBA_GPUX_AUTOTUNE"] = "1" if on else "0"


def _time(fn, sync) -> float:
    t = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t


def _measure(args) -> list[dict]:
    dev = gpux.select_device("opencl")
    sync = dev.runtime.synchronize
    rows = []
    for name, fn in _cases(args.n, args.cases):
        _set_tuning(False)
        _time(fn, sync)  # compiles the default
        _set_tuning(True)
        s0, c0 = autotuning.stats["seconds"], autotuning.stats["candidates"]
        since = len(autotuning.history)
        first = _time(fn, sync)
        choice, kept = _choice(name, since)
        tune_s = autotuning.stats["seconds"] - s0
        cands = autotuning.stats["candidates"] - c0
        _time(fn, sync)  # the tuned choice's first run (its compile, if another variant)
        default_t, tuned_t = [], []
        for _ in range(args.repeat):
            _set_tuning(False)
            default_t.append(_time(fn, sync))
            _set_tuning(True)
            tuned_t.append(_time(fn, sync))
        d, t = statistics.median(default_t), statistics.median(tuned_t)
        rows.append({"case": name, "default_ms": d * 1e3, "tuned_ms": t * 1e3, "ratio": t / d,
                     "tuning_s": tune_s, "candidates": cands, "first_call_s": first,
                     "choice": choice, "default_kept": kept})
        print(f"{name:30s} default {d * 1e3:8.2f} ms  tuned {t * 1e3:8.2f} ms  "
              f"ratio {t / d:5.2f}  tuning {tune_s:5.2f} s ({cands} candidates): "
              f"{'the default kept: ' if kept else ''}{choice}", flush=True)
    return rows


def _warm(args) -> None:
    """In a process whose cache folder holds the choices: the seconds each case's first
    call spends finding its choice (reading and checking the disk entry)."""
    spent = [0.0]

    def timed(fn):
        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[0] += time.perf_counter() - t
        return wrapper

    # the modules the lookup uses, imported as any use of the disk cache imports them:
    # an import is not tuning
    from numba_gpux import cache, cachefile, cachekey  # noqa: F401

    autotuning._choose = timed(autotuning._choose)
    autotuning.Autotuned._entry = timed(autotuning.Autotuned._entry)
    dev = gpux.select_device("opencl")
    _set_tuning(True)
    out = {}
    import gc

    for name, fn in _cases(args.n, args.cases):
        spent[0] = 0.0
        gc.collect()
        gc.disable()  # as timeit does: a collection is not the lookup's
        try:
            fn()
        finally:
            gc.enable()
        dev.runtime.synchronize()
        out[name] = {"lookup_ms": spent[0] * 1e3, "measured": autotuning.stats["candidates"]}
    print(json.dumps(out))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2**22)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cases", type=lambda s: [c for c in s.split(",") if c], default=[])
    ap.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--cache", default=None, help="the cache folder (default: a new temporary "
                    "one, so that everything is tuned)")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                  "autotune.json"))
    args = ap.parse_args(argv)
    if args.warm:
        _warm(args)
        return 0
    with tempfile.TemporaryDirectory(prefix="gpux-autotune-") as folder:
        os.environ["NUMBA_GPUX_CACHE_DIR"] = args.cache or folder
        os.environ.pop("NUMBA_GPUX_RETUNE", None)
        rows = _measure(args)
        cmd = [sys.executable, os.path.abspath(__file__), "--warm", "--n", str(args.n),
               "--cases", ",".join(args.cases)]
        runs = []
        for _ in range(3):  # three warm processes: the median of each case's first call
            p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
            if p.returncode != 0:
                print(p.stderr[-3000:], file=sys.stderr)
                return 1
            runs.append(json.loads(p.stdout.strip().splitlines()[-1]))
        warm = {c: {"lookup_ms": statistics.median(r[c]["lookup_ms"] for r in runs),
                    "measured": max(r[c]["measured"] for r in runs)} for c in runs[0]}
    print()
    print(f"{'case':30s} {'default ms':>10s} {'tuned ms':>9s} {'ratio':>6s} {'tuning s':>9s} "
          f"{'warm lookup ms':>15s}  choice")
    for r in rows:
        w = warm.get(r["case"], {})
        r["warm_lookup_ms"] = w.get("lookup_ms")
        r["warm_measured"] = w.get("measured")
        print(f"{r['case']:30s} {r['default_ms']:10.2f} {r['tuned_ms']:9.2f} {r['ratio']:6.2f} "
              f"{r['tuning_s']:9.2f} {r['warm_lookup_ms']:15.3f}  "
              f"{'(defaults) ' if r['default_kept'] else ''}{r['choice']}")
    ratios = [r["ratio"] for r in rows]
    geo = float(np.exp(np.mean(np.log(ratios))))
    worst_lookup = max(r["warm_lookup_ms"] for r in rows)
    changed = [r["ratio"] for r in rows if not r["default_kept"]]
    print(f"\ngeomean tuned/default {geo:.2f}; worst ratio {max(ratios):.2f}; where tuning "
          f"chose other values than the defaults ({len(changed)} cases) the worst is "
          f"{max(changed, default=1.0):.2f} (goal <= 1.0 each; where it kept the defaults "
          f"the same code runs, and the ratio is the noise of this machine); warm process: "
          f"worst first-call lookup {worst_lookup:.3f} ms (goal < 1 ms), "
          f"{sum(r['warm_measured'] or 0 for r in rows)} candidates measured (goal 0)")
    if not args.cases:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump({"machine": platform.processor() or platform.machine(),
                       "device": str(gpux.select_device("opencl")), "n": args.n,
                       "repeat": args.repeat, "cases": rows, "geomean": geo}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
