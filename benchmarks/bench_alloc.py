"""Arrays made and dropped at every call, as numba.cuda programs make them.

Libraries written for numba.cuda often copy their inputs to the device and allocate
their outputs at each call (``cuda.to_device(x)``, ``cuda.device_array_like(x)``),
then drop them.  Through ``numba_gpux.cuda`` their frees are deferred in batches, as
numba.cuda's are (``deallocations``: ten pending); a CPU driver faults a new
buffer's pages in at its first write, so what matters is whether the next call's
arrays get buffers used before.  In one process, for several sizes and dtypes,
alternating round by round (medians):

* ``to_device``: ``cuda.to_device(x)``, the result dropped;
* ``call``: ``to_device(x)``, ``to_device(np.full(...))``, ``copy_to_host()`` of the
  second, both dropped (a library's call without its kernel);
* ``numpy``: ``x.copy()`` (fresh host pages too), the reference;
* ``kept``: ``copy_to_device`` into one device array kept across calls.

The ratio printed is ``to_device`` / ``numpy`` (1.0: a device copy costs what a
host copy does; the device here is the host's memory).

Usage: python benchmarks/bench_alloc.py [--sizes 1,8,82] [--reps 15] [--out FILE]
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_import import machine, write_result  # noqa: E402

RESULTS = os.path.join(HERE, "results")

__all__ = ["measure", "main"]


def measure(sizes_mb=(1, 8, 82), dtypes=("float64", "float32"), reps: int = 15) -> dict:
    from numba_gpux import cuda

    T = time.perf_counter
    out = {"device": str(cuda.get_current_device()), "reps": reps, "cases": []}
    for mb in sizes_mb:
        for dt in dtypes:
            x = np.random.default_rng(0).random(int(mb * 2**20) // np.dtype(dt).itemsize
                                                ).astype(dt)
            kept = cuda.device_array_like(x)

            def to_device():
                cuda.to_device(x)

            def call():
                d = cuda.to_device(x)
                o = cuda.to_device(np.full(x.shape, np.nan, x.dtype))
                o.copy_to_host()
                del d, o

            def numpy():
                x.copy()

            def copy_kept():
                kept.copy_to_device(x)

            fns = {"to_device": to_device, "call": call, "numpy": numpy, "kept": copy_kept}
            times: dict = {k: [] for k in fns}
            for f in fns.values():
                f()
            gc.collect()
            for _ in range(reps):
                for name, f in fns.items():
                    t0 = T()
                    f()
                    times[name].append(T() - t0)
            med = {k: statistics.median(v) for k, v in times.items()}
            # the result checked: a kept array copied through to the host equals x
            ok = bool(np.array_equal(kept.copy_to_host(), x))
            case = {"mb": mb, "dtype": dt, "median_s": med, "ok": ok,
                    "ratio_to_device_over_numpy": med["to_device"] / med["numpy"]}
            out["cases"].append(case)
            print(f"{mb:5g} MB {dt:8s} to_device {med['to_device'] * 1e3:8.2f} ms  call "
                  f"{med['call'] * 1e3:8.2f} ms  kept {med['kept'] * 1e3:7.2f} ms  numpy "
                  f"{med['numpy'] * 1e3:7.2f} ms  to_device/numpy "
                  f"{case['ratio_to_device_over_numpy']:.2f}{'' if ok else '  WRONG'}",
                  flush=True)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1,8,82", help="megabytes, comma-separated")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--out", default=os.path.join(RESULTS, "bench_alloc.json"))
    a = ap.parse_args(argv)
    res = measure(tuple(float(s) for s in a.sizes.split(",")), reps=a.reps)
    res["machine"] = machine()
    write_result(a.out, res)
    return 0 if all(c["ok"] for c in res["cases"]) else 1


if __name__ == "__main__":
    sys.exit(main())
