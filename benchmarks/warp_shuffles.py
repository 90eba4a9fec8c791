"""Warp shuffles as numba.cuda users write them, next to the same code in OpenCL C.

numba.cuda kernels reduce, scan and broadcast within a warp of 32 with
``cuda.shfl_*_sync``.  On a CPU device a sub-group of 32 is wider than the vector
registers that run it, and the driver's shuffles across such a sub-group are slow;
numba-gpux exchanges the values through work-group memory instead (the feature
"split_subgroups", docs/performance.md).  Each kernel here is written once through
``numba_gpux.cuda`` and twice by hand in OpenCL C: with warps of 32 as the CUDA code
(``intel_reqd_sub_group_size(32)`` and ``sub_group_shuffle*``: what our code compiled to
before) and at the width the driver picks (``get_sub_group_size()`` lanes: what an
OpenCL programmer writes for this device; it computes per sub-group, so only its time
is compared).  The three run on the same device, the same buffers and grid,
alternating launch by launch:

* ``warp_sum``: each warp's sum by ``shfl_down_sync`` (16, 8, 4, 2, 1), lane 0 writes it;
* ``warp_max``: each warp's maximum by ``shfl_xor_sync`` (a butterfly), every lane writes it;
* ``warp_scan``: each warp's inclusive prefix sum by ``shfl_up_sync``;
* ``broadcast``: ``x[i] - shfl_sync(mask, x[i], 0)`` (``sub_group_shuffle(v, 0)`` in C).

For float32, float64 and int32, sizes 2**20 and 3,000,017 (a prime: the last warp is
partly out of range), work-groups of 256 and 1024.  Our results are checked against
NumPy and against the warp-32 twin.  Ratios are our time / the twin's (medians).

Usage: python benchmarks/warp_shuffles.py [--reps 9] [--quick] [--out FILE]
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
FULL = 0xFFFFFFFF

__all__ = ["main", "measure"]

_C_KERNELS = r"""
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define W get_sub_group_size()
#define LANE get_sub_group_local_id()
#define KERNELS(T, S) \
ATTR __kernel void warp_sum_##S(__global const T *x, long n, __global T *out) { \
    long i = get_global_id(0); T v = i < n ? x[i] : (T)0; \
    for (uint d = W / 2; d > 0; d /= 2) { T o = sub_group_shuffle_down(v, d); \
        v += LANE + d < W ? o : (T)0; } \
    if (LANE == 0 && i < n) out[i / 32] = v; } \
ATTR __kernel void warp_max_##S(__global const T *x, long n, __global T *out) { \
    long i = get_global_id(0); T v = i < n ? x[i] : x[0]; \
    for (uint d = W / 2; d > 0; d /= 2) v = max(v, sub_group_shuffle_xor(v, d)); \
    if (i < n) out[i] = v; } \
ATTR __kernel void warp_scan_##S(__global const T *x, long n, __global T *out) { \
    long i = get_global_id(0); T v = i < n ? x[i] : (T)0; \
    for (uint d = 1; d < W; d *= 2) { T o = sub_group_shuffle_up(v, d); \
        if (LANE >= d) v += o; } \
    if (i < n) out[i] = v; } \
ATTR __kernel void broadcast_##S(__global const T *x, long n, __global T *out) { \
    long i = get_global_id(0); T v = i < n ? x[i] : (T)0; \
    T b = sub_group_shuffle(v, 0); \
    if (i < n) out[i] = v - b; }
KERNELS(float, f32)
KERNELS(double, f64)
KERNELS(int, i32)
"""


def _ours():
    from numba_gpux import cuda

    @cuda.jit
    def warp_sum(x, out):
        i = cuda.grid(1)
        v = x[i] if i < x.size else x[0] * 0
        d = 16
        while d > 0:
            v += cuda.shfl_down_sync(FULL, v, d)
            d //= 2
        if cuda.laneid == 0 and i < x.size:
            out[i // 32] = v

    @cuda.jit
    def warp_max(x, out):
        i = cuda.grid(1)
        v = x[i] if i < x.size else x[0]
        d = 16
        while d > 0:
            v = max(v, cuda.shfl_xor_sync(FULL, v, d))
            d //= 2
        if i < x.size:
            out[i] = v

    @cuda.jit
    def warp_scan(x, out):
        i = cuda.grid(1)
        v = x[i] if i < x.size else x[0] * 0
        d = 1
        while d < 32:
            o = cuda.shfl_up_sync(FULL, v, d)
            if cuda.laneid >= d:
                v += o
            d *= 2
        if i < x.size:
            out[i] = v

    @cuda.jit
    def broadcast(x, out):
        i = cuda.grid(1)
        v = x[i] if i < x.size else x[0] * 0
        b = cuda.shfl_sync(FULL, v, 0)
        if i < x.size:
            out[i] = v - b

    return {"warp_sum": warp_sum, "warp_max": warp_max, "warp_scan": warp_scan,
            "broadcast": broadcast}


def _expected(kind, x):
    n = x.size
    pad = -n % 32
    if kind == "warp_max":
        w = np.concatenate([x, np.full(pad, x[0], x.dtype)]).reshape(-1, 32)
        return np.repeat(w.max(axis=1), 32)[:n]
    w = np.concatenate([x, np.zeros(pad, x.dtype)]).reshape(-1, 32)
    if kind == "warp_sum":
        return w.sum(axis=1, dtype=x.dtype)
    if kind == "warp_scan":
        return np.cumsum(w, axis=1, dtype=x.dtype).ravel()[:n]
    return (w - w[:, :1]).ravel()[:n]


def _close(got, want, x):
    """Exact for integers; for floats, within the rounding of 32 additions of x's size."""
    if np.issubdtype(want.dtype, np.integer):
        return np.array_equal(got, want)
    return np.allclose(got, want, rtol=0, atol=64 * np.finfo(x.dtype).eps * np.abs(x).max())


def measure(reps: int = 9, seed: int = 0, quick: bool = False) -> dict:
    import warnings

    import pyopencl as cl

    import numba_gpux as gpux
    from numba_gpux import cuda

    warnings.filterwarnings("ignore", message="Grid size")
    rng = np.random.default_rng(seed)
    device = gpux.default_device()
    rt = device.runtime
    queue = rt.queue
    progs = {w: cl.Program(rt.context, _C_KERNELS.replace(
        "ATTR", "__attribute__((intel_reqd_sub_group_size(32)))" if w == "warp32" else ""))
        .build("-cl-std=CL3.0") for w in ("warp32", "natural")}
    ours = _ours()
    sizes = (1 << 20, 3_000_017) if not quick else (10_007,)
    blocks = (256, 1024) if not quick else (256,)
    T = time.perf_counter
    out = {"reps": reps, "seed": seed, "device": str(device), "cases": {}}
    for dt, sfx in ((np.float32, "f32"), (np.float64, "f64"), (np.int32, "i32")):
        for n in sizes:
            x = (rng.standard_normal(n) * 100).astype(dt)
            dx = cuda.to_device(x)
            for kind, k in ours.items():
                size_out = -(-n // 32) if kind == "warp_sum" else n
                outs = {w: cuda.to_device(np.zeros(size_out, dt))
                        for w in ("ours", "warp32", "natural")}
                want = _expected(kind, x)
                for block in blocks:
                    grid = -(-n // block)
                    launch = k[grid, block]

                    def run_ours(launch=launch, o=outs["ours"]):
                        launch(dx, o)
                        queue.finish()
                    runs = {"ours": run_ours}
                    for w in ("warp32", "natural"):
                        knl = getattr(progs[w], f"{kind}_{sfx}")
                        knl.set_scalar_arg_dtypes([None, np.int64, None])

                        def run_c(knl=knl, o=outs[w], g=grid * block, b=block):
                            knl(queue, (g,), (b,), dx.handle, np.int64(n), o.handle)
                            queue.finish()
                        runs[w] = run_c
                    for f in runs.values():  # compile, load, warm
                        f()
                    times = {w: [] for w in runs}
                    for _ in range(reps):
                        for w, f in runs.items():
                            t0 = T()
                            f()
                            times[w].append(T() - t0)
                    got = outs["ours"].copy_to_host()
                    ok = _close(got, want, x) and _close(got, outs["warp32"].copy_to_host(), x)
                    med = {w: statistics.median(v) for w, v in times.items()}
                    name = f"{kind} {np.dtype(dt).name} n={n} block={block}"
                    rec = {"ok": bool(ok), "median_s": med,
                           "vs_warp32": med["ours"] / med["warp32"],
                           "vs_natural": med["ours"] / med["natural"]}
                    out["cases"][name] = rec
                    print(f"  {name:40s} ours {med['ours'] * 1e3:7.2f} ms  C warp32 "
                          f"{med['warp32'] * 1e3:7.2f} ms  C natural {med['natural'] * 1e3:7.2f}"
                          f" ms  ours/warp32 {rec['vs_warp32']:.2f}  ours/natural "
                          f"{rec['vs_natural']:.2f}" + ("" if ok else "  RESULT MISMATCH"),
                          flush=True)
    for key in ("vs_warp32", "vs_natural"):
        out[f"geomean_{key}"], out[f"worst_{key}"] = geomean_and_worst(
            c[key] for c in out["cases"].values())
    out["all_results_ok"] = all(c["ok"] for c in out["cases"].values())
    return out


def main(argv=None) -> int:
    return ratio_main(__doc__, measure, lambda res: (
        f"ours / OpenCL C with warps of 32: geomean {res['geomean_vs_warp32']:.2f}, worst "
        f"{res['worst_vs_warp32']:.2f}; ours / OpenCL C at the driver's width: geomean "
        f"{res['geomean_vs_natural']:.2f}, worst {res['worst_vs_natural']:.2f}; results "
        f"{'ok' if res['all_results_ok'] else 'MISMATCH'}"), 9, "warp_shuffles.json",
        lambda res: res["all_results_ok"], argv)


if __name__ == "__main__":
    sys.exit(main())
