"""numba_gpux.algorithms on the OpenCL device next to NumPy on the same data.

Each case: several rounds, each a block of timed runs of ours, then a block of
NumPy's, each block after untimed calls (three in the first round: compilation, the
first transfer and the OpenCL CPU driver's warm-up; one after); a case's time is the
median of all its timed runs, and the per-round ratios show the spread.  Blocks, not
single calls, alternate: the driver's worker threads spin for a while after each
kernel, so NumPy timed right after one ran 2 to 3 times slower than alone, and ours
after NumPy waits for those threads to wake.  Rounds spread a burst of load from
elsewhere on the machine over both sides instead of one.  Data stays on the device for
ours, timings include a synchronize.  Prints a table and writes
benchmarks/results/algorithms.json.

    python benchmarks/algorithms.py [--n 4194304] [--repeat 7] [--rounds 3] [--quick]
                                    [--only NAME]

Cases: map, reduce (sum, max, min, a custom operator against ``np.abs(x).max()``),
inclusive and exclusive scan, sort and stable argsort, for float32, float64, int32 and
int64; and sums along each axis of 4,000 x 1,000 and 1,000 x 4,000 float64 arrays.
Prints each ratio (ours / NumPy) and their geometric mean.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time

import numpy as np

import numba_gpux as gpux
from numba_gpux import algorithms as alg


def _affine_for(t):
    """``a * 2 + 1`` in the element type *t* (constants of that type, so that NumPy and
    the kernel compute in the same type); made once per type."""
    two, one = t(2), t(1)

    @gpux.jit(device=True)
    def affine(a):
        return a * two + one

    return affine


@gpux.jit(device=True)
def absmax(a, b):  # a custom operator: NumPy's np.abs(x).max()
    return max(abs(a), abs(b))


WARMUP = 3


def _timed(fn, sync=None) -> float:
    t = time.perf_counter()
    fn()
    if sync:
        sync()
    return time.perf_counter() - t


def _samples(fn, repeat, warmup, sync=None) -> list:
    """*repeat* timed calls of *fn* (each followed by *sync*) after *warmup* untimed ones."""
    for _ in range(warmup):
        _timed(fn, sync)
    return [_timed(fn, sync) for _ in range(repeat)]


def _median_time(fn, repeat, sync=None) -> float:
    """Median of *repeat* timed calls of *fn* (each followed by *sync*) after
    :data:`WARMUP` untimed ones (also benchmarks/cuda_algorithms.py's timing)."""
    return statistics.median(_samples(fn, repeat, WARMUP, sync))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2**22)
    ap.add_argument("--repeat", type=int, default=7, help="timed runs a block")
    ap.add_argument("--rounds", type=int, default=3,
                    help="blocks of ours then NumPy's, alternating")
    ap.add_argument("--quick", action="store_true",
                    help="float32 and int32 only, no 2-D cases")
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                  "algorithms.json"))
    args = ap.parse_args(argv)
    dev = gpux.select_device("opencl")
    rng = np.random.default_rng(0)
    n = args.n
    sync = dev.runtime.synchronize
    cases = []
    dtypes = ("float32", "float64", "int32", "int64") if not args.quick else ("float32",
                                                                              "int32")
    for name in dtypes:
        dt = np.dtype(name)
        if dt.kind == "f":
            x = rng.standard_normal(n).astype(dt)
        else:
            x = rng.integers(-1000, 1000, n).astype(dt)
        d = gpux.to_device(x)
        affine, t = _affine_for(dt.type), dt.type
        short = name[0] + name[-2:]  # f32, i64 ...
        cases += [
            (f"map x*2+1 {short}", lambda d=d, f=affine, dt=dt: alg.map(f, d, dtype=dt),
             lambda x=x, t=t: x * t(2) + t(1)),
            (f"reduce sum {short}", lambda d=d: alg.reduce(d), lambda x=x: x.sum(dtype=x.dtype)),
            (f"reduce max {short}", lambda d=d: alg.reduce(d, "max"), lambda x=x: x.max()),
            (f"reduce min {short}", lambda d=d: alg.reduce(d, "min"), lambda x=x: x.min()),
            (f"reduce absmax {short}", lambda d=d, t=t: alg.reduce(d, absmax, init=t(0)),
             lambda x=x: np.abs(x).max()),
            (f"scan incl {short}", lambda d=d: alg.scan(d),
             lambda x=x: np.cumsum(x, dtype=x.dtype)),
            (f"scan excl {short}", lambda d=d: alg.scan(d, exclusive=True),
             lambda x=x: np.concatenate([[0], np.cumsum(x[:-1], dtype=x.dtype)])),
            (f"sort {short}", lambda d=d: alg.sort(d), lambda x=x: np.sort(x)),
            (f"argsort {short}", lambda d=d: alg.argsort(d),
             lambda x=x: np.argsort(x, kind="stable")),
        ]
    if not args.quick:
        for shape in ((4000, 1000), (1000, 4000)):
            x2 = rng.standard_normal(shape)
            d2 = gpux.to_device(x2)
            for ax in (0, 1):
                cases.append((f"sum axis={ax} {shape[0]}x{shape[1]} f64",
                              lambda d2=d2, ax=ax: alg.reduce(d2, axis=ax),
                              lambda x2=x2, ax=ax: x2.sum(axis=ax)))
    rows = []
    rounds = max(1, args.rounds)
    print(f"device: {dev}  n = {n}  median of {rounds} rounds of {args.repeat}")
    print(f"{'case':22s} {'gpux s':>9s} {'numpy s':>9s} {'gpux/numpy':>11s}  rounds' ratios")
    cases = [c for c in cases if args.only in c[0]]
    for name, ours, ref in cases:
        all_ours: list = []
        all_ref: list = []
        per_round = []
        for r in range(rounds):
            warm = WARMUP if r == 0 else 1
            o = _samples(ours, args.repeat, warm, sync)
            f = _samples(ref, args.repeat, warm)
            all_ours += o
            all_ref += f
            per_round.append(statistics.median(o) / statistics.median(f))
        t_ours = statistics.median(all_ours)
        t_ref = statistics.median(all_ref)
        ratio = t_ours / t_ref
        rows.append({"case": name, "gpux_s": t_ours, "numpy_s": t_ref, "ratio": ratio,
                     "round_ratios": per_round})
        spread = " ".join(f"{v:.2f}" for v in per_round)
        print(f"{name:22s} {t_ours:9.4f} {t_ref:9.4f} {ratio:11.2f}  {spread}")
    geomean = float(np.exp(np.mean([np.log(r["ratio"]) for r in rows]))) if rows else None
    print(f"geomean gpux/numpy: {geomean:.2f}  (goal: every case at most 1.0)")
    result = {"n": n, "geomean": geomean, "repeat": args.repeat, "rounds": rounds,
              "device": str(dev), "cpu_count": os.cpu_count(),
              "machine": platform.machine(), "numpy": np.__version__, "cases": rows,
              "note": "ratio = gpux time / numpy time (lower is better for gpux)"}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
