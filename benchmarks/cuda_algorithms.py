"""numba_gpux.algorithms on a CUDA device next to CuPy (which calls CUB) on the same data.

Each case: median of several timed runs after one warm-up (compilation
excluded); data stays on the device for both, timings include a synchronize.
Prints a table of throughput ratios (ours / CuPy's; the goal is at least 0.8
for reduce and scan, and sort within 1.5x in time) and writes --out as JSON.

    python benchmarks/cuda_algorithms.py [--n 268435456] [--repeat 5] [--out FILE]
        [--sweep SECONDS]

``--sweep`` then times other values of the algorithms' tuning hooks (set at run
time through ``hooks.implement``; nothing recompiles for a launch-time value) for
at most that many seconds, and prints the best setting of each algorithm.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

import numba_gpux as gpux
from numba_gpux import algorithms as alg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from algorithms import _median_time  # noqa: E402  (the same timing as the CPU table's)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2**28)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out", default=None)
    ap.add_argument("--sweep", type=float, default=0.0)
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
    sweep = _sweep(args.sweep, n, ours_in, ours_sync, dev) if args.sweep > 0 else []
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"n": n, "repeat": args.repeat, "device": str(dev), "cases": rows,
                       "sweep": sweep,
                       "note": "throughput_ratio = cupy time / gpux time (higher is better)"},
                      f, indent=2)
    return 0


def _sweep(budget_s, n, ours_in, sync, dev):
    """Time the algorithms under other hook values for at most *budget_s* seconds."""
    from numba_gpux import hooks

    units = int(dev.limits.get("compute_units") or 16)
    names = ("algorithms.block_size", "algorithms.items_per_thread",
             "algorithms.reduce_groups", "algorithms.sort_items_per_thread",
             "algorithms.radix_bits")
    saved = {h: dict(hooks.get_hook(h).impls) for h in names}
    small = ours_in[: min(n, 2**26)]
    plans = []
    for groups in (0, 4 * units, 8 * units, 16 * units):
        for bs in (256, 512, 1024):
            for ipt in (4, 8, 16):
                plans.append(("reduce sum f32", ours_in, lambda x: alg.reduce(x),
                              {"algorithms.reduce_groups": groups,
                               "algorithms.block_size": bs, "algorithms.items_per_thread": ipt}))
    for bs in (256, 512, 1024):
        for ipt in (2, 4, 8, 16):
            plans.append(("scan inclusive f32", ours_in, lambda x: alg.scan(x),
                          {"algorithms.block_size": bs, "algorithms.items_per_thread": ipt}))
    for bits in (4, 8):
        for ipt in (16, 64, 256, 1024):
            plans.append((f"sort f32 (n={small.size})", small, lambda x: alg.sort(x),
                          {"algorithms.radix_bits": bits,
                           "algorithms.sort_items_per_thread": ipt}))
    rows = []
    t_end = time.perf_counter() + budget_s
    try:
        for case, data, fn, setting in plans:
            if time.perf_counter() > t_end:
                break
            for h, v in setting.items():
                hooks.implement(h, target="cuda", fn=v)
            try:
                t = _median_time(lambda: fn(data), 3, sync)
                rows.append({"case": case, **setting, "s": t})
                print(f"sweep {case:24s} {setting} {t * 1e3:9.3f} ms")
            except Exception as e:  # a setting the device refuses: reported, not fatal
                rows.append({"case": case, **setting, "error": f"{type(e).__name__}: {e}"})
    finally:
        for h, impls in saved.items():
            hooks.get_hook(h).impls.clear()
            hooks.get_hook(h).impls.update(impls)
    best = {}
    for r in rows:
        if "s" in r and (r["case"] not in best or r["s"] < best[r["case"]]["s"]):
            best[r["case"]] = r
    for case, r in best.items():
        print(f"best {case}: {r}")
    return rows


if __name__ == "__main__":
    sys.exit(main())
