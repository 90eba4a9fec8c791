"""numba_gpux.algorithms on a CUDA device next to CuPy (which calls CUB) on the same data.

Each case: median of several timed runs after one warm-up (compilation
excluded); data stays on the device for both, timings include a synchronize.
Prints a table of throughput ratios (ours / CuPy's; the goal is at least 0.8
for reduce and scan, and sort within 1.5x in time) and writes --out as JSON.

    python benchmarks/cuda_algorithms.py [--n 268435456] [--repeat 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np

import numba_gpux as gpux
from numba_gpux import algorithms as alg


def _median_time(fn, repeat, sync):
    fn()
    sync()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2**28)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    try:
        import cupy as cp
    except ImportError as e:
        print("skip: CuPy is not installed:", e)
        return 0
    devs = [d for d in gpux.devices() if d.target_name == "cuda"]
    if not devs:
        print("skip: no CUDA device")
        return 0
    dev = gpux.select_device(devs[0].spec)
    n = args.n
    rng = np.random.default_rng(0)
    xf = rng.standard_normal(n, dtype=np.float32)
    ours_in = gpux.to_device(xf)
    cp_in = cp.asarray(xf)
    ours_sync = dev.runtime.synchronize

    def cp_sync():
        cp.cuda.Device().synchronize()

    # correctness first: a fast wrong answer is not a result
    checks = {
        "reduce sum f32": (lambda: float(np.asarray(alg.reduce(ours_in))),
                           lambda: float(cp.sum(cp_in)), 1e-3),
        "scan inclusive f32": (lambda: alg.scan(ours_in).copy_to_host()[-1],
                               lambda: float(cp.cumsum(cp_in)[-1]), 1e-2),
    }
    cases = [
        ("reduce sum f32", lambda: alg.reduce(ours_in), lambda: cp.sum(cp_in)),
        ("scan inclusive f32", lambda: alg.scan(ours_in), lambda: cp.cumsum(cp_in)),
        ("sort f32", lambda: alg.sort(ours_in), lambda: cp.sort(cp_in)),
    ]
    rows = []
    print(f"device: {dev}  n = {n}  median of {args.repeat}")
    for name, (ours, ref, rtol) in checks.items():
        a, b = ours(), ref()
        ok = abs(a - b) <= rtol * max(1.0, abs(b))
        print(f"check {name}: ours {a:.6g} cupy {b:.6g} {'ok' if ok else 'MISMATCH'}")
    print(f"{'case':22s} {'gpux s':>9s} {'cupy s':>9s} {'throughput ratio':>17s}")
    for name, ours, ref in cases:
        try:
            t_ours = _median_time(ours, args.repeat, ours_sync)
        except Exception as e:  # report and go on: the other cases still say something
            print(f"{name:22s} failed: {type(e).__name__}: {e}")
            rows.append({"case": name, "error": f"{type(e).__name__}: {e}"})
            continue
        t_ref = _median_time(ref, args.repeat, cp_sync)
        rows.append({"case": name, "gpux_s": t_ours, "cupy_s": t_ref,
                     "throughput_ratio": t_ref / t_ours})
        print(f"{name:22s} {t_ours:9.5f} {t_ref:9.5f} {t_ref / t_ours:17.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"n": n, "repeat": args.repeat, "device": str(dev), "cases": rows,
                       "note": "throughput_ratio = cupy time / gpux time (higher is better)"},
                      f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
