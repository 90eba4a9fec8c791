"""Float atomic adds on an OpenCL device, next to the same kernels in OpenCL C with
the device's own float atomics, and to NumPy, in one run.

Where the device's driver reports float adds on global and local memory
(cl_ext_float_atomics' capabilities: the feature ``native_float_add``) numba-gpux
writes ``atomic.add`` on floats as the device's instruction (OpAtomicFAddEXT);
elsewhere it is a compare-and-swap loop, which made Intel's CPU driver give up
vectorizing the whole kernel (docs/language-memory.md, "Atomics").  The kernels:

* ``sum_one``: a grid-stride sum, each work-item adding its partial sum to one
  float with ``atomic.add`` (float32, float64; NumPy: ``x.sum()``);
* ``histogram``: a weighted histogram, every element adding its weight to its bin
  in global memory (64 and 4096 bins; NumPy: ``np.bincount(bins, weights)``);
* ``shared_bins``: the same histogram with 64 bins per work-group in shared memory,
  then one global add per bin and work-group.

Ours is launched through the numba.cuda facade (``k[grid, block](...)``), the
OpenCL C twin through pyopencl on the same queue with the same global and local
sizes, alternating launch by launch; results are checked against NumPy (float64
exactly up to summation order: a relative 1e-9; float32 to 1e-4).  Ratios are our
time / theirs (medians): below 1 is faster.

Usage: python benchmarks/float_atomics.py [--reps 9] [--n 4194304]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np

OPENCL_C = r"""
#define ADD(T, AT, p, v) atomic_fetch_add_explicit((volatile __global AT*)(p), (v), \
    memory_order_relaxed, memory_scope_device)
#define LADD(T, AT, p, v) atomic_fetch_add_explicit((volatile __local AT*)(p), (v), \
    memory_order_relaxed, memory_scope_work_group)
#define KERNELS(T, AT) \
__kernel void sum_one_##T(__global const T* x, __global T* out, long n) { \
  long i = get_global_id(0), st = get_global_size(0); T s = 0; \
  for (; i < n; i += st) s += x[i]; \
  ADD(T, AT, out, s); \
} \
__kernel void histogram_##T(__global const int* bins, __global const T* w, __global T* h, \
                            long n) { \
  long i = get_global_id(0); \
  if (i < n) ADD(T, AT, h + bins[i], w[i]); \
} \
__kernel void shared_bins_##T(__global const int* bins, __global const T* w, __global T* h, \
                              long n) { \
  __local T loc[64]; \
  long i = get_global_id(0); int t = get_local_id(0); \
  if (t < 64) loc[t] = 0; \
  barrier(CLK_LOCAL_MEM_FENCE); \
  if (i < n) LADD(T, AT, loc + bins[i], w[i]); \
  barrier(CLK_LOCAL_MEM_FENCE); \
  if (t < 64) ADD(T, AT, h + t, loc[t]); \
}
KERNELS(float, atomic_float)
KERNELS(double, atomic_double)
"""


def _kernels(dtype):
    """The three kernels for float arrays of *dtype*."""
    from numba_gpux import cuda

    zero = dtype(0)

    @cuda.jit
    def sum_one(x, out):
        i = cuda.grid(1)
        s = zero
        while i < x.size:
            s += x[i]
            i += cuda.gridsize(1)
        cuda.atomic.add(out, 0, s)

    @cuda.jit
    def histogram(bins, w, h):
        i = cuda.grid(1)
        if i < bins.size:
            cuda.atomic.add(h, bins[i], w[i])

    @cuda.jit
    def shared_bins(bins, w, h):
        loc = cuda.shared.array(64, dtype)
        i = cuda.grid(1)
        t = cuda.threadIdx.x
        if t < 64:
            loc[t] = 0
        cuda.syncthreads()
        if i < bins.size:
            cuda.atomic.add(loc, bins[i], w[i])
        cuda.syncthreads()
        if t < 64:
            cuda.atomic.add(h, t, loc[t])

    return sum_one, histogram, shared_bins


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=9)
    ap.add_argument("--n", type=int, default=1 << 22)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    import pyopencl as cl

    import numba_gpux as gpux
    from numba_gpux import cuda

    device = gpux.default_device()
    if device.target_name != "opencl":
        print(f"{device}: not an OpenCL device; nothing to compare")
        return 0
    rt = device.runtime
    queue = rt.queue
    native = device.target.has("native_float_add")
    print(f"device: {device}; its own float atomic adds: {native}; n = {args.n}; "
          f"medians of {args.reps}")
    try:
        prg = cl.Program(rt.context, OPENCL_C).build(options="-cl-std=CL3.0")
    except cl.Error as e:  # a driver without OpenCL C float atomics
        print(f"OpenCL C twins do not build here ({str(e).splitlines()[0]}); ours only")
        prg = None
    rng = np.random.default_rng(0)
    n, block = args.n, 256
    grid_all = (n + block - 1) // block
    rows = []
    for dtype, ctype, tol in ((np.float32, "float", 1e-4), (np.float64, "double", 1e-9)):
        x = rng.random(n).astype(dtype)
        sum_one, histogram, shared_bins = _kernels(dtype)
        cases = [("sum_one", None)] + [("histogram", nb) for nb in (64, 4096)] \
            + [("shared_bins", 64)]
        for name, nbins in cases:
            if nbins is None:
                want = np.array([x.astype(np.float64).sum()])
                d_in = (gpux.to_device(x),)
                d_out = gpux.to_device(np.zeros(1, dtype))
                ours_k, cfg = sum_one, (256, block)
                ref_args = (d_in[0].handle, d_out.handle, np.int64(n))
                gsize = (256 * block,)
            else:
                bins = rng.integers(0, nbins, n).astype(np.int32)
                want = np.bincount(bins, x.astype(np.float64), minlength=nbins)
                d_in = (gpux.to_device(bins), gpux.to_device(x))
                d_out = gpux.to_device(np.zeros(nbins, dtype))
                ours_k, cfg = (histogram if name == "histogram" else shared_bins), (grid_all, block)
                ref_args = (d_in[0].handle, d_in[1].handle, d_out.handle,
                            np.int64(n))
                gsize = (grid_all * block,)
            launch = ours_k[cfg]

            def ours():
                d_out.copy_to_device(np.zeros(d_out.shape, dtype))
                launch(*d_in, d_out)
                cuda.synchronize()

            ref = None
            if prg is not None:
                knl = getattr(prg, f"{name}_{ctype}")
                knl.set_scalar_arg_dtypes([None] * (len(ref_args) - 1) + [np.int64])

                def ref():
                    d_out.copy_to_device(np.zeros(d_out.shape, dtype))
                    knl(queue, gsize, (block,), *ref_args)
                    queue.finish()

            host = (lambda: x.sum()) if nbins is None else \
                (lambda: np.bincount(bins, x, minlength=nbins))
            ours()
            got = d_out.copy_to_host().astype(np.float64)
            ok = bool(np.allclose(got, want, rtol=tol * max(1, np.log2(n))))
            ref_ok = None
            if ref:
                ref()
                ref_ok = bool(np.allclose(d_out.copy_to_host().astype(np.float64), want,
                                          rtol=tol * max(1, np.log2(n))))
            times = {"ours": [], "opencl_c": [], "numpy": []}
            for _ in range(args.reps):
                for key, f in (("ours", ours), ("opencl_c", ref), ("numpy", host)):
                    if f is None:
                        continue
                    t0 = time.perf_counter()
                    f()
                    times[key].append(time.perf_counter() - t0)
            med = {k: statistics.median(v) * 1e3 for k, v in times.items() if v}
            label = f"{np.dtype(dtype).name} {name}" + (f" {nbins} bins" if nbins else "")
            c = med.get("opencl_c")
            rows.append((label, med["ours"], c, med["numpy"], ok, ref_ok))
            print(f"  {label:28s} ours {med['ours']:8.2f} ms  "
                  + (f"OpenCL C {c:8.2f} ms  ours/C {med['ours'] / c:5.2f}  " if c else "")
                  + f"NumPy {med['numpy']:8.2f} ms  ours/NumPy {med['ours'] / med['numpy']:5.2f}"
                  + ("" if ok else "  OURS WRONG") + ("" if ref_ok in (None, True) else
                                                       "  C WRONG"), flush=True)
    return 0 if all(r[4] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
