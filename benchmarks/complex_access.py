"""Kernels on complex numbers and records of two numbers, next to OpenCL C with vector types.

Numba reads a complex128 element as its two doubles, and a record ``(x, y)`` as its two
fields; OpenCL C programmers write ``double2``.  On a driver that runs work-items as
vector lanes (Intel's CPU driver) two scalar loads at a 16-byte stride are two gathers
where a ``double2`` load is one contiguous load; numba-gpux pairs such accesses
(``legalize_pairs.paired_accesses``, docs/performance.md).  Each kernel is written once
with ``numba_gpux`` and once in OpenCL C with vector types; they run on the same
device and buffers, alternating launch by launch:

* ``cmul``: ``out[i] = x[i] * y[i]`` (complex128, complex64);
* ``cabs``: ``out[i] = abs(z[i])`` (complex128 in, float64 out);
* ``conj_scale``: ``out[i] = z[i].conjugate() * a`` (complex64);
* ``dist``: records ``(x, y)`` of two float64 in, ``sqrt(x*x + y*y)`` out.

Sizes 2**20 and 3,000,017 (a prime), work-groups of 256.  Results are checked against
NumPy.  Ratios are our time / OpenCL C's (medians).

Usage: python benchmarks/complex_access.py [--reps 11] [--quick] [--out FILE]
"""

from __future__ import annotations

import math
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_import import geomean_and_worst, ratio_main  # noqa: E402

RESULTS = os.path.join(HERE, "results")

__all__ = ["main", "measure"]

OPENCL_C = r"""
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void cmul_c128(__global const double2 *x, __global const double2 *y,
                        __global double2 *o, long n) {
    long i = get_global_id(0);
    if (i < n) { double2 a = x[i], b = y[i];
        o[i] = (double2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); } }
__kernel void cmul_c64(__global const float2 *x, __global const float2 *y,
                       __global float2 *o, long n) {
    long i = get_global_id(0);
    if (i < n) { float2 a = x[i], b = y[i];
        o[i] = (float2)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); } }
__kernel void cabs_c128(__global const double2 *z, __global double *o, long n) {
    long i = get_global_id(0);
    if (i < n) o[i] = hypot(z[i].x, z[i].y); }
__kernel void conj_scale_c64(__global const float2 *z, float a, __global float2 *o, long n) {
    long i = get_global_id(0);
    if (i < n) { float2 v = z[i]; o[i] = (float2)(v.x * a, -v.y * a); } }
__kernel void dist_rec(__global const double2 *p, __global double *o, long n) {
    long i = get_global_id(0);
    if (i < n) { double2 v = p[i]; o[i] = sqrt(v.x * v.x + v.y * v.y); } }
"""


def _ours():
    import numba_gpux as gpux

    @gpux.jit
    def cmul(x, y, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = x[i] * y[i]

    @gpux.jit
    def cabs(z, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = abs(z[i])

    @gpux.jit
    def conj_scale(z, a, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = z[i].conjugate() * a

    @gpux.jit
    def dist(p, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = math.sqrt(p[i].x * p[i].x + p[i].y * p[i].y)

    return cmul, cabs, conj_scale, dist


def _cases(rng, n):
    """(name, our kernel index, our args, twin, twin args (our arrays), output, expected,
    tolerance)."""
    import numba_gpux as gpux

    z128 = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    w128 = rng.standard_normal(n) + 1j * rng.standard_normal(n)
    z64, w64 = z128.astype(np.complex64), w128.astype(np.complex64)
    rec = np.zeros(n, dtype=[("x", np.float64), ("y", np.float64)])
    rec["x"], rec["y"] = z128.real, z128.imag
    d = gpux.to_device
    for name, k, args, twin, want, out_dt, tol in (
            ("cmul complex128", 0, (z128, w128), "cmul_c128", z128 * w128, np.complex128,
             1e-12),
            ("cmul complex64", 0, (z64, w64), "cmul_c64", z64 * w64, np.complex64, 1e-5),
            ("cabs complex128", 1, (z128,), "cabs_c128", np.abs(z128), np.float64, 1e-12),
            ("conj_scale complex64", 2, (z64, np.float32(1.5)), "conj_scale_c64",
             z64.conjugate() * np.float32(1.5), np.complex64, 1e-5),
            ("dist record(f8, f8)", 3, (rec,), "dist_rec", np.abs(z128), np.float64, 1e-12)):
        dev_args = tuple(d(a) if isinstance(a, np.ndarray) else a for a in args)
        outs = [gpux.device_array(n, out_dt) for _ in range(2)]
        yield name, k, dev_args, twin, outs, want, tol


def measure(reps: int = 11, seed: int = 0, quick: bool = False) -> dict:
    import pyopencl as cl

    import numba_gpux as gpux

    rng = np.random.default_rng(seed)
    device = gpux.default_device()
    rt = device.runtime
    queue = rt.queue
    prg = cl.Program(rt.context, OPENCL_C).build()
    ours = _ours()
    T = time.perf_counter
    out = {"reps": reps, "seed": seed, "device": str(device), "cases": {}}
    for n in ((10_007,) if quick else (1 << 20, 3_000_017)):
        for name, k, args, twin, outs, want, tol in _cases(rng, n):
            block = 256
            grid = -(-n // block)
            launch = ours[k][grid, block]
            knl = cl.Kernel(prg, twin)
            host = [a.handle if isinstance(a, gpux.DeviceArray) else a for a in args]
            host += [outs[1].handle, np.int64(n)]
            knl.set_scalar_arg_dtypes([None if isinstance(a, cl.Buffer) else type(a)
                                       for a in host])

            def run_ours(launch=launch, a=args + (outs[0],)):
                launch(*a)
                queue.finish()

            def run_c(knl=knl, h=host, g=grid * block):
                knl(queue, (g,), (block,), *h)
                queue.finish()
            runs = {"ours": run_ours, "opencl_c": run_c}
            for f in runs.values():
                f()
            times = {w: [] for w in runs}
            for _ in range(reps):
                for w, f in runs.items():
                    t0 = T()
                    f()
                    times[w].append(T() - t0)
            ok = all(np.allclose(o.copy_to_host(), want, rtol=tol, atol=tol) for o in outs)
            med = {w: statistics.median(v) for w, v in times.items()}
            label = f"{name} n={n}"
            rec = {"ok": bool(ok), "median_s": med, "ratio": med["ours"] / med["opencl_c"]}
            out["cases"][label] = rec
            print(f"  {label:36s} ours {med['ours'] * 1e3:7.2f} ms  OpenCL C "
                  f"{med['opencl_c'] * 1e3:7.2f} ms  ours/C {rec['ratio']:.2f}"
                  + ("" if ok else "  RESULT MISMATCH"), flush=True)
    out["geomean_ratio"], out["worst_ratio"] = geomean_and_worst(
        c["ratio"] for c in out["cases"].values())
    out["all_results_ok"] = all(c["ok"] for c in out["cases"].values())
    return out


def main(argv=None) -> int:
    return ratio_main(__doc__, measure, lambda res: (
        f"ours / OpenCL C with vector types: geomean {res['geomean_ratio']:.2f}, worst "
        f"{res['worst_ratio']:.2f}; results "
        f"{'ok' if res['all_results_ok'] else 'MISMATCH'}"), 11, "complex_access.json",
        lambda res: res["all_results_ok"], argv)


if __name__ == "__main__":
    sys.exit(main())
