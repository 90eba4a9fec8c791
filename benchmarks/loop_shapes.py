"""Grid-stride loops as CUDA users write them, next to the same loops in OpenCL C.

numba.cuda programs walk arrays with ``for i in range(cuda.grid(1), n,
cuda.gridsize(1))``; some write the same loop as ``while i < n: ...; i += stride``.
Each kernel here is written both ways through ``numba_gpux.cuda`` and once by hand in
OpenCL C (``for (long i = get_global_id(0); i < n; i += get_global_size(0))``), and
the three run on the same OpenCL device, on the same device-resident buffers, with the
same grid, alternating launch by launch in the same rounds:

* ``hist``: numba-examples' histogram: a float32 value to its bin, an atomic add
  under ``if 0 <= b < nbins`` (a branch in the loop);
* ``sumsq``: each work-item's sum of squares of its elements (float32, float64);
* ``clip``: ``out[i] = min(max(x[i], lo), hi)`` (float64; a store per element).

Sizes vary (a power of two, a prime, 3,000,000) and so do the grids (64x64,
256x256, 1024x128), so no shape is the benchmark's own.  Every output is checked
against NumPy (the histogram exactly).  The ratios are our time / OpenCL C's, for the
``range`` loop and the ``while`` loop (medians): 1.0 is the hand-written speed.

Goal: the ``range`` loop at most 1.1x its OpenCL C twin's time, as a geometric mean
over the cases (a loop that ended on a count of values left ran 2.7x slower on the
Intel CPU driver with a branch inside: docs/performance.md); the worst case is
reported too (sub-millisecond launches carry our launch's fixed cost).

Usage: python benchmarks/loop_shapes.py [--reps 11] [--out FILE]
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_import import geomean_and_worst, ratio_main  # noqa: E402

RESULTS = os.path.join(HERE, "results")
GOAL = 1.1

__all__ = ["main", "measure"]

OPENCL_C = r"""
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void hist(__global const float *x, long n, double xmin, double xmax,
                   __global int *h, long nb) {
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) {
        int b = (int)(nb * ((double)x[i] - xmin) / (xmax - xmin));
        if (b >= 0 && b < nb) atomic_add(&h[b], 1);
    }
}
#define SUMSQ(T, NAME) \
__kernel void NAME(__global const T *x, long n, __global T *out) { \
    T acc = 0; \
    for (long i = get_global_id(0); i < n; i += get_global_size(0)) acc += x[i] * x[i]; \
    out[get_global_id(0)] = acc; \
}
SUMSQ(float, sumsq_f32)
SUMSQ(double, sumsq_f64)
__kernel void clip(__global const double *x, long n, double lo, double hi,
                   __global double *out) {
    for (long i = get_global_id(0); i < n; i += get_global_size(0))
        out[i] = fmin(fmax(x[i], lo), hi);
}
"""


def _kernels():
    from numba_gpux import cuda

    @cuda.jit
    def hist_range(x, xmin, xmax, h):
        nb = h.shape[0]
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            b = np.int32(nb * (np.float64(x[i]) - xmin) / (xmax - xmin))
            if b >= 0 and b < nb:
                cuda.atomic.add(h, b, 1)

    @cuda.jit
    def hist_while(x, xmin, xmax, h):
        nb = h.shape[0]
        i = cuda.grid(1)
        while i < x.shape[0]:
            b = np.int32(nb * (np.float64(x[i]) - xmin) / (xmax - xmin))
            if b >= 0 and b < nb:
                cuda.atomic.add(h, b, 1)
            i += cuda.gridsize(1)

    @cuda.jit
    def sumsq_range(x, out):
        acc = x[0] * 0
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            acc += x[i] * x[i]
        out[cuda.grid(1)] = acc

    @cuda.jit
    def sumsq_while(x, out):
        acc = x[0] * 0
        i = cuda.grid(1)
        while i < x.shape[0]:
            acc += x[i] * x[i]
            i += cuda.gridsize(1)
        out[cuda.grid(1)] = acc

    @cuda.jit
    def clip_range(x, lo, hi, out):
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            out[i] = min(max(x[i], lo), hi)

    @cuda.jit
    def clip_while(x, lo, hi, out):
        i = cuda.grid(1)
        while i < x.shape[0]:
            out[i] = min(max(x[i], lo), hi)
            i += cuda.gridsize(1)

    return {"hist": (hist_range, hist_while), "sumsq": (sumsq_range, sumsq_while),
            "clip": (clip_range, clip_while)}


def _cases(rng, grids, sizes):
    """(name, kernels, ours(args builder), twin name, twin args, outputs, check)."""
    from numba_gpux import cuda

    for n in sizes:
        for grid, block in grids:
            width = grid * block
            x32 = rng.normal(0, 5, n).astype(np.float32)
            dx32 = cuda.to_device(x32)
            # the kernel's bins: int32 of nb * (x - xmin) / (xmax - xmin), in [0, nb)
            b = (10 * (x32.astype(np.float64) + 30.0) / 60.0).astype(np.int32)
            want = np.bincount(b[(b >= 0) & (b < 10)], minlength=10)
            hs = [cuda.to_device(np.zeros(10, np.int32)) for _ in range(3)]
            yield (f"hist f32 n={n} [{grid},{block}]", "hist",
                   [lambda h=h: (dx32, -30.0, 30.0, h) for h in hs[:2]],
                   "hist", (dx32, np.int64(n), np.float64(-30.0), np.float64(30.0), hs[2],
                            np.int64(10)),
                   hs, lambda outs, reps, w=want: all(
                       np.array_equal(o, w * reps[i]) for i, o in enumerate(outs)))
            for dt, cname in ((np.float32, "sumsq_f32"), (np.float64, "sumsq_f64")):
                x = rng.standard_normal(n).astype(dt)
                dx = cuda.to_device(x)
                outs = [cuda.to_device(np.zeros(width, dt)) for _ in range(3)]
                ref = np.array([np.sum(x[k::width].astype(np.float64) ** 2)
                                for k in range(width)])
                tol = 1e-4 if dt == np.float32 else 1e-10
                yield (f"sumsq {np.dtype(dt).name} n={n} [{grid},{block}]", "sumsq",
                       [lambda o=o, dx=dx: (dx, o) for o in outs[:2]],
                       cname, (dx, np.int64(n), outs[2]), outs,
                       lambda got, reps, r=ref, t=tol: all(
                           np.allclose(o, r, rtol=t, atol=t) for o in got))
            x = rng.standard_normal(n)
            dx = cuda.to_device(x)
            outs = [cuda.to_device(np.zeros(n)) for _ in range(3)]
            ref = np.clip(x, -0.5, 0.75)
            yield (f"clip float64 n={n} [{grid},{block}]", "clip",
                   [lambda o=o: (dx, -0.5, 0.75, o) for o in outs[:2]],
                   "clip", (dx, np.int64(n), np.float64(-0.5), np.float64(0.75), outs[2]),
                   outs, lambda got, reps, r=ref: all(np.array_equal(o, r) for o in got))


def measure(reps: int = 11, seed: int = 0, quick: bool = False) -> dict:
    import warnings

    import pyopencl as cl

    import numba_gpux as gpux

    warnings.filterwarnings("ignore", message="Grid size")  # small grids are the point
    rng = np.random.default_rng(seed)
    device = gpux.default_device()
    rt = device.runtime
    queue = rt.queue
    prg = cl.Program(rt.context, OPENCL_C).build()
    kernels = _kernels()
    twins = {}
    grids = ((64, 64), (256, 256), (1024, 128)) if not quick else ((64, 64),)
    sizes = (1 << 21, 3_000_017, 3_000_000) if not quick else (100_003,)
    T = time.perf_counter
    out = {"reps": reps, "seed": seed, "device": str(device), "cases": {}}
    for name, kind, ours_args, cname, cargs, outputs, check in _cases(rng, grids, sizes):
        grid, block = (int(s) for s in name.rsplit("[", 1)[1].rstrip("]").split(","))
        knl = twins.setdefault(cname, cl.Kernel(prg, cname))
        host = [a.handle if isinstance(a, gpux.DeviceArray) else a for a in cargs]
        knl.set_scalar_arg_dtypes([None if isinstance(a, cl.Buffer) else type(a) for a in host])
        runs = {}
        for label, k, args in (("range", kernels[kind][0], ours_args[0]),
                               ("while", kernels[kind][1], ours_args[1])):
            launch, a = k[grid, block], args()

            def run(launch=launch, a=a):
                launch(*a)
                queue.finish()
            runs[label] = run

        def twin():
            knl(queue, (grid * block,), (block,), *host)
            queue.finish()
        runs["opencl_c"] = twin
        for f in runs.values():  # compile, load, warm
            f()
        times = {k: [] for k in runs}
        for _ in range(reps):
            for k, f in runs.items():
                t0 = T()
                f()
                times[k].append(T() - t0)
        ok = bool(check([o.copy_to_host() for o in outputs], [reps + 1] * 3))
        med = {k: statistics.median(v) for k, v in times.items()}
        rec = {"ok": ok, "median_s": med, "min_s": {k: min(v) for k, v in times.items()},
               "range_ratio": med["range"] / med["opencl_c"],
               "while_ratio": med["while"] / med["opencl_c"]}
        out["cases"][name] = rec
        print(f"  {name:40s} range {med['range'] * 1e3:7.2f} ms  while {med['while'] * 1e3:7.2f}"
              f" ms  OpenCL C {med['opencl_c'] * 1e3:7.2f} ms  range/C {rec['range_ratio']:.2f}"
              f"  while/C {rec['while_ratio']:.2f}" + ("" if ok else "  RESULT MISMATCH"),
              flush=True)
    out["geomean_range_ratio"], out["worst_range_ratio"] = geomean_and_worst(
        c["range_ratio"] for c in out["cases"].values())
    out["goal"] = {"range_geomean_max": GOAL, "met": out["geomean_range_ratio"] <= GOAL,
                   "all_results_ok": all(c["ok"] for c in out["cases"].values())}
    return out


def main(argv=None) -> int:
    return ratio_main(__doc__, measure, lambda res: (
        f"range loop / OpenCL C: geomean {res['geomean_range_ratio']:.2f}, worst "
        f"{res['worst_range_ratio']:.2f} (goal: geomean <= {GOAL}: "
        f"{'met' if res['goal']['met'] else 'NOT met'}); results "
        f"{'ok' if res['goal']['all_results_ok'] else 'MISMATCH'}"), 11, "loop_shapes.json",
        lambda res: res["goal"]["all_results_ok"], argv)


if __name__ == "__main__":
    sys.exit(main())
