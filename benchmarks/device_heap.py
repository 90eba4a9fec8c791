"""The device runtime's cost: a per-work-item scratch array whose size arrives as an
argument (``np.zeros(n)``, from the device heap) next to the same kernel with a
``local.array`` of a size known when compiling, in the same run, on the same device.

Each work-item zeroes and fills its scratch array of ``n`` float32, then reduces it (sum
and the largest square root) in one loop, ``n = 64`` by default, on 2**20 work-items:
the two kernels differ only in where the array comes from, and give the same result
(checked).  A third row, for information, writes the reduction as NumPy code
(``tmp.sum() + np.sqrt(tmp).max()``, which makes a second array).  Reported: the median time of each over ``--repeat`` launches
(after a warm-up launch that compiles), and the heap version's time as a ratio of the
local-array version's.

Goal: the heap version within 2x of the local-array version (the OpenCL CPU device
here; CUDA on the GPU machine, where ``benchmarks/gpu_check.sh`` runs this with
``--device cuda``).

Usage: python benchmarks/device_heap.py [--device SPEC] [--items 1048576] [--n 64]
       [--repeat 7] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_import import machine, write_result  # noqa: E402

GOAL = 2.0
BLOCK = 256


def kernels(n_local: int):
    import numba_gpux as gpux

    @gpux.jit
    def heap_scratch(out, n):
        i = gpux.grid(1)
        if i < out.shape[0]:
            tmp = np.zeros(n, np.float32)
            for k in range(n):
                tmp[k] = (i + k) * 0.5
            s = np.float32(0.0)
            m = np.float32(0.0)
            for k in range(n):
                s += tmp[k]
                m = max(m, np.sqrt(tmp[k]))
            out[i] = s + m

    @gpux.jit
    def numpy_style(out, n):
        i = gpux.grid(1)
        if i < out.shape[0]:
            tmp = np.zeros(n, np.float32)
            for k in range(n):
                tmp[k] = (i + k) * 0.5
            out[i] = tmp.sum() + np.sqrt(tmp).max()  # a second array: np.sqrt(tmp)

    @gpux.jit
    def local_scratch(out, n):
        i = gpux.grid(1)
        if i < out.shape[0]:
            tmp = gpux.local.array(n_local, np.float32)
            for k in range(n):
                tmp[k] = 0.0
            for k in range(n):
                tmp[k] = (i + k) * 0.5
            s = np.float32(0.0)
            m = np.float32(0.0)
            for k in range(n):
                s += tmp[k]
                m = max(m, np.sqrt(tmp[k]))
            out[i] = s + m

    return heap_scratch, local_scratch, numpy_style


def timed(kernel, out, n, items, repeat, device) -> float:
    import numba_gpux as gpux

    grid = (items + BLOCK - 1) // BLOCK
    kernel[grid, BLOCK](out, n)  # compile and warm up
    gpux.synchronize(device)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        kernel[grid, BLOCK](out, n)
        gpux.synchronize(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default=None, help="device spec (default: the best)")
    ap.add_argument("--items", type=int, default=1 << 20)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--out", default=os.path.join(HERE, "results", "device_heap.json"))
    args = ap.parse_args(argv)

    import numba_gpux as gpux

    device = gpux.select_device(args.device) if args.device else gpux.default_device()
    heap_k, local_k, numpy_k = kernels(args.n)
    out_h = gpux.to_device(np.zeros(args.items, np.float32))
    out_l = gpux.to_device(np.zeros(args.items, np.float32))
    t_heap = timed(heap_k, out_h, args.n, args.items, args.repeat, device)
    t_local = timed(local_k, out_l, args.n, args.items, args.repeat, device)
    np.testing.assert_allclose(out_h.copy_to_host(), out_l.copy_to_host(), rtol=1e-5)
    out_n = gpux.to_device(np.zeros(args.items, np.float32))
    t_numpy = timed(numpy_k, out_n, args.n, args.items, args.repeat, device)
    np.testing.assert_allclose(out_n.copy_to_host(), out_l.copy_to_host(), rtol=1e-5)
    ratio = t_heap / t_local
    print(f"device: {device.spec}  work-items: {args.items}  n: {args.n}")
    print(f"np.zeros(n) from the heap:  {t_heap * 1e3:9.2f} ms")
    print(f"local.array({args.n}):         {t_local * 1e3:9.2f} ms")
    print(f"NumPy style (tmp.sum() + np.sqrt(tmp).max(), two arrays): {t_numpy * 1e3:9.2f} ms "
          f"({t_numpy / t_local:.2f}x)")
    print(f"ratio heap / local: {ratio:.2f}  (goal <= {GOAL}: "
          f"{'met' if ratio <= GOAL else 'NOT met'})")
    write_result(args.out, {"machine": machine(), "device": device.spec,
                            "items": args.items, "n": args.n, "heap_s": t_heap,
                            "local_s": t_local, "numpy_style_s": t_numpy, "ratio": ratio, "goal": GOAL,
                            "met": ratio <= GOAL})
    return 0


if __name__ == "__main__":
    sys.exit(main())
