"""numba_gpux.algorithms on the OpenCL device next to NumPy on the same data.

Each case: median of several timed runs after one warm-up (compilation and
first transfer excluded); data stays on the device for ours, timings include
a synchronize.  Prints a table and writes benchmarks/results/algorithms.json.

    python benchmarks/algorithms.py [--n 4194304] [--repeat 5]
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


@gpux.jit(device=True)
def _affine(a):  # made once: a new lambda per call would be a new device function to compile
    return a * np.float32(2) + np.float32(1)


def _median_time(fn, repeat, sync=None):
    fn()
    if sync:
        sync()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        if sync:
            sync()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2**22)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                  "algorithms.json"))
    args = ap.parse_args(argv)
    dev = gpux.select_device("opencl")
    rng = np.random.default_rng(0)
    n = args.n
    xf = rng.standard_normal(n).astype(np.float32)
    xi = rng.integers(-1000, 1000, n).astype(np.int32)
    df, di = gpux.to_device(xf), gpux.to_device(xi)
    sync = dev.runtime.synchronize
    cases = [
        ("map x*2+1 f32", lambda: alg.map(_affine, df),
         lambda: xf * np.float32(2) + np.float32(1)),
        ("reduce sum f32", lambda: alg.reduce(df), lambda: xf.sum()),
        ("reduce max i32", lambda: alg.reduce(di, "max"), lambda: xi.max()),
        ("scan inclusive i32", lambda: alg.scan(di), lambda: np.cumsum(xi, dtype=np.int32)),
        ("scan exclusive i32", lambda: alg.scan(di, exclusive=True),
         lambda: np.concatenate([[0], np.cumsum(xi[:-1], dtype=np.int32)])),
        ("sort f32", lambda: alg.sort(df), lambda: np.sort(xf)),
        ("argsort f32", lambda: alg.argsort(df), lambda: np.argsort(xf, kind="stable")),
        ("sort i32", lambda: alg.sort(di), lambda: np.sort(xi)),
    ]
    rows = []
    print(f"device: {dev}  n = {n}  median of {args.repeat}")
    print(f"{'case':22s} {'gpux s':>9s} {'numpy s':>9s} {'gpux/numpy':>11s}")
    for name, ours, ref in cases:
        t_ours = _median_time(ours, args.repeat, sync)
        t_ref = _median_time(ref, args.repeat)
        ratio = t_ours / t_ref
        rows.append({"case": name, "gpux_s": t_ours, "numpy_s": t_ref, "ratio": ratio})
        print(f"{name:22s} {t_ours:9.4f} {t_ref:9.4f} {ratio:11.2f}")
    result = {"n": n, "repeat": args.repeat, "device": str(dev), "cpu_count": os.cpu_count(),
              "machine": platform.machine(), "numpy": np.__version__, "cases": rows,
              "note": "ratio = gpux time / numpy time (lower is better for gpux)"}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
