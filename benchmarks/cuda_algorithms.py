"""numba_gpux.algorithms on a CUDA device next to CuPy (which calls CUB) on the same data.

Each case: median of several timed runs after one warm-up (compilation
excluded); data stays on the device for both, timings include a synchronize.
Prints a table of throughput ratios (ours / CuPy's; the goal is at least 0.8
for reduce and scan, and sort within 1.5x in time) and writes --out as JSON.

    python benchmarks/cuda_algorithms.py [--n 268435456] [--repeat 5] [--out FILE]
        [--sweep SECONDS]

``--sweep`` then times other values of the algorithms' tuning hooks (set at run
time through ``hooks.implement``; nothing recompiles for a launch-time value) for
at most that many seconds (scan's variants and tile shapes first), and prints the best
setting of each algorithm.  Scan is timed with its default variant and with each GPU
variant forced through the hook ``algorithms.scan_variant`` ("blocked": three kinds of
launch, about four passes over memory; "lookback": one pass), each checked first
against CuPy's ``cumsum`` on int32 data.
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
    }
    # scan: the default variant, then each GPU variant forced through the hook
    # (integers for the check: a float32 sum of 2**28 normals depends on the order)
    xi = rng.integers(-3, 4, n, dtype=np.int32)
    ours_i, cp_i = gpux.to_device(xi), cp.asarray(xi)
    want_i = cp.cumsum(cp_i, dtype=cp.int32)
    scan_cases = []
    for variant in (None,) + SCAN_VARIANTS:
        tag = f"scan inclusive f32{'' if variant is None else ' ' + variant}"
        checks[f"scan inclusive i32{'' if variant is None else ' ' + variant}"] = (
            lambda v=variant: _scan_matches(ours_i, want_i, v, cp), lambda: 1.0, 0.0)
        scan_cases.append((tag, lambda v=variant: with_scan_variant(v, alg.scan, ours_in),
                           lambda: cp.cumsum(cp_in)))
    cases = [
        ("reduce sum f32", lambda: alg.reduce(ours_in), lambda: cp.sum(cp_in)),
        *scan_cases,
        ("sort f32", lambda: alg.sort(ours_in), lambda: cp.sort(cp_in)),
    ]
    rows = []
    print(f"device: {dev}  n = {n}  median of {args.repeat}")
    for name, (ours, ref, rtol) in checks.items():
        try:
            a, b = ours(), ref()
        except Exception as e:  # reported; the timings below say the rest
            print(f"check {name}: failed: {type(e).__name__}: {e}")
            continue
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
    def write(sweep):
        if args.out:
            with open(args.out, "w") as f:
                json.dump({"n": n, "repeat": args.repeat, "device": str(dev), "cases": rows,
                           "sweep": sweep,
                           "note": "throughput_ratio = cupy time / gpux time (higher is better)"},
                          f, indent=2)

    write([])  # the table survives a sweep that runs past the caller's time limit
    if args.sweep > 0:
        write(_sweep(args.sweep, n, ours_in, ours_sync, dev))
    return 0


#: the scan variants a GPU runs (the hook ``algorithms.scan_variant``)
SCAN_VARIANTS = ("blocked", "lookback")


def with_scan_variant(variant, fn, *args):
    """``fn(*args)`` with scan's variant forced to *variant* on CUDA (None: the
    default), the hook restored after."""
    if variant is None:
        return fn(*args)
    from numba_gpux import hooks

    hook = hooks.get_hook("algorithms.scan_variant")
    saved = dict(hook.impls)
    hooks.implement("algorithms.scan_variant", target="cuda", fn=variant)
    try:
        return fn(*args)
    finally:
        hook.impls.clear()
        hook.impls.update(saved)


def _scan_matches(ours_in, want, variant, cp) -> float:
    """1.0 if the variant's inclusive scan equals CuPy's element for element, else 0."""
    got = cp.asarray(with_scan_variant(variant, alg.scan, ours_in).copy_to_host())
    return 1.0 if bool(cp.array_equal(got, want)) else 0.0


def _sweep(budget_s, n, ours_in, sync, dev):
    """Time the algorithms under other hook values for at most *budget_s* seconds."""
    from numba_gpux import hooks

    units = int(dev.limits.get("compute_units") or 16)
    names = ("algorithms.block_size", "algorithms.items_per_thread", "algorithms.scan_variant",
             "algorithms.reduce_groups", "algorithms.sort_items_per_thread",
             "algorithms.radix_bits")
    saved = {h: dict(hooks.get_hook(h).impls) for h in names}
    small = ours_in[: min(n, 2**26)]
    plans = []
    for variant in ("lookback", "blocked"):
        for bs in (256, 512, 1024):
            for ipt in (2, 4, 8, 16):
                plans.append((f"scan inclusive f32 {variant}", ours_in, lambda x: alg.scan(x),
                              {"algorithms.scan_variant": variant, "algorithms.block_size": bs,
                               "algorithms.items_per_thread": ipt}))
    for groups in (0, 4 * units, 8 * units, 16 * units):
        for bs in (256, 512, 1024):
            for ipt in (4, 8, 16):
                plans.append(("reduce sum f32", ours_in, lambda x: alg.reduce(x),
                              {"algorithms.reduce_groups": groups,
                               "algorithms.block_size": bs, "algorithms.items_per_thread": ipt}))
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
