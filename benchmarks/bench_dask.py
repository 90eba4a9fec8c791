"""One Dask worker against two on a compute-bound kernel over a chunked array, and the
scheduler's overhead per task.

For each worker count (1, then 2; one thread per worker, processes, each worker
pinned to the device by ``numba_gpux.dask.DevicePlugin``), in one
``distributed.LocalCluster`` kept for all rounds:

* **kernel**: ``map_blocks`` of a compute-bound kernel (a dependent loop of
  ``--iters`` multiply-adds per element) over ``--n`` float64 elements in
  ``--blocks`` blocks, ``.sum()`` gathered on the client; the first run (compiling
  on each worker) is a warm-up and not counted;
* **per block, NumPy**: the scheduler's own overhead: ``--tasks`` blocks of 8
  elements through a NumPy one-liner (``dask.array.map_blocks``) and summed,
  time / blocks (each block's tasks: its slice, the function, its share of the sum);
* **per block, numba-gpux**: the same blocks through ``numba_gpux.dask.map_blocks``
  and a one-line kernel: the scheduler's overhead plus ours per block (copy the
  block in, allocate the output, launch, copy it back); the difference of the
  two is ours.

Each figure is the median of ``--rounds`` runs; the speed-up is one worker's
median over two workers' (the reference is the same work on one worker).  On
the OpenCL CPU device one kernel launch already uses every core of the machine,
so there two workers share the cores and the speed-up stays near 1: the figure
that scales is a machine with one device per worker.

Usage: python benchmarks/bench_dask.py [--n 2097152] [--blocks 16] [--iters 400]
       [--rounds 3] [--tasks 100] [--out benchmarks/results/bench_dask.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import time

import numpy as np

import numba_gpux as gpux


@gpux.jit(cache=True)
def compute_bound(x, iters, out):
    i = gpux.grid(1)
    if i < out.size:
        v = x[i]
        acc = 0.0
        for k in range(iters):
            acc = acc * 0.999 + v
        out[i] = acc


@gpux.jit(cache=True)
def plus_one(x, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = x[i] + 1.0


def _noop(block):
    return block + 1.0


def _timed(fn, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def measure(workers: int, args, cache_dir: str) -> dict:
    import dask.array as da
    import distributed

    import numba_gpux.dask as gd

    # made on the workers (seeded: the same blocks for one and two workers)
    x = da.random.default_rng(0).random(args.n, chunks=-(-args.n // args.blocks))
    small = da.zeros(8 * args.tasks, chunks=8)
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=logging.ERROR) as cluster, \
            distributed.Client(cluster, timeout=120) as client:
        client.wait_for_workers(workers, timeout=120)
        client.register_plugin(gd.DevicePlugin(cache_dir=cache_dir))
        device = next(iter(client.run(lambda: gd.worker_device().spec).values()))
        heavy = gd.map_blocks(compute_bound, x, args.iters).sum()
        ours = gd.map_blocks(plus_one, small).sum()
        theirs = small.map_blocks(_noop, dtype=small.dtype).sum()
        want = None
        for g in (heavy, ours, theirs):  # warm-up: compiles, imports
            got = g.compute()
            want = got if g is heavy else want
        kernel = _timed(lambda: heavy.compute(), args.rounds)
        per_np = [t / args.tasks for t in _timed(lambda: theirs.compute(), args.rounds)]
        per_ours = [t / args.tasks for t in _timed(lambda: ours.compute(), args.rounds)]
    return {"workers": workers, "device": device, "kernel_s": kernel,
            "kernel_median_s": statistics.median(kernel),
            "per_task_numpy_us": [t * 1e6 for t in per_np],
            "per_task_numpy_median_us": statistics.median(per_np) * 1e6,
            "per_task_gpux_us": [t * 1e6 for t in per_ours],
            "per_task_gpux_median_us": statistics.median(per_ours) * 1e6,
            "checksum": float(want)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1 << 21)
    ap.add_argument("--blocks", type=int, default=16)
    ap.add_argument("--iters", type=int, default=400)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=100)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                  "bench_dask.json"))
    args = ap.parse_args(argv)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gpux-bench-dask-") as cache_dir:
        runs = [measure(w, args, cache_dir) for w in (1, 2)]
    one, two = runs
    if not np.isclose(one["checksum"], two["checksum"], rtol=1e-9):
        raise SystemExit(f"one and two workers disagree: {one['checksum']} vs {two['checksum']}")
    speedup = one["kernel_median_s"] / two["kernel_median_s"]
    print(f"device {one['device']}, {args.n} float64 in {args.blocks} blocks, "
          f"{args.iters} iterations per element, median of {args.rounds}")
    print("| workers | kernel over the array (s) | per block, NumPy (ms) "
          "| per block, numba-gpux (ms) | ratio |")
    print("| --- | --- | --- | --- | --- |")
    for r in runs:
        r["per_block_ratio"] = r["per_task_gpux_median_us"] / r["per_task_numpy_median_us"]
        print(f"| {r['workers']} | {r['kernel_median_s']:.3f} "
              f"| {r['per_task_numpy_median_us'] / 1e3:.2f} "
              f"| {r['per_task_gpux_median_us'] / 1e3:.2f} | {r['per_block_ratio']:.2f} |")
    print(f"speed-up, two workers over one: {speedup:.2f}x")
    result = {"args": vars(args), "cpu_count": os.cpu_count(), "machine": platform.machine(),
              "runs": runs, "speedup_two_over_one": speedup}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
