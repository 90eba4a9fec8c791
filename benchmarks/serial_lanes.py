"""Kernels of one grid dimension in which each work-item walks its own row of a
C-ordered array (``for k in range(n): ... a[i, k]``), written the way numba.cuda users
write them, on the OpenCL CPU device: compiled as numba-gpux compiles them (work-items
one after another where ``lanes.lanes_prefer_serial`` says so), compiled with that
choice off (work-items as the lanes of vectors: each ``a[i, k]`` a gather from as many
rows), and the same computation with numba's ``@njit(parallel=True)``, in one run.
Also a 3x3 matrix product per work-item (nested loops over its elements) and a CSR
matrix-vector product, a row per work-item (16 values each, random columns).
Controls that must not change: a binary search (a branch on what its loop loads), a
row written to a column (stores consecutive across lanes), a
k-means assignment (each row read again for every
centre), the nearest of a set of points (a row's two fields, the same each time round
the loop), a library function per element, a 2-D pairwise distance, an ODE integrator
whose loop touches no memory, an elementwise kernel.  Two sizes each: rows that stay in cache,
and rows streamed from memory.  Prints each time (median of --reps launches on device
arrays, after a warm-up) and the ratios; writes results/serial_lanes.json.

    python benchmarks/serial_lanes.py [--reps 7] [--quick] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time

import numba
import numpy as np

import numba_gpux.lanes as lanes
from numba_gpux import cuda

SRC = '''
def rowpoly(a, out):  # FLOPS operations per element of the row
    i = cuda.grid(1)
    if i < a.shape[0]:
        s = 0.0
        for k in range(a.shape[1]):
            v = a[i, k]
            BODY
            s += v
        out[i] = s

def dist_to_point(a, c, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        s = 0.0
        for k in range(a.shape[1]):
            d = a[i, k] - c[k]
            s += d * d
        out[i] = math.sqrt(s)

def kmeans_assign(x, cent, label):
    i = cuda.grid(1)
    if i < x.shape[0]:
        best = 1e300
        arg = 0
        for c in range(cent.shape[0]):
            d = 0.0
            for k in range(x.shape[1]):
                t = x[i, k] - cent[c, k]
                d += t * t
            if d < best:
                best = d
                arg = c
        label[i] = arg

def horner_rows(c, x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        s = 0.0
        for k in range(c.shape[1]):
            s = s * x[i] + c[i, k]
        out[i] = s

def norm_rows(a, out):
    i = cuda.grid(1)
    if i < a.shape[0]:
        m = 0.0
        for k in range(a.shape[1]):
            m += a[i, k]
        m /= a.shape[1]
        v = 0.0
        for k in range(a.shape[1]):
            d = a[i, k] - m
            v += d * d
        r = 1.0 / math.sqrt(v / a.shape[1] + 1e-6)
        for k in range(a.shape[1]):
            out[i, k] = (a[i, k] - m) * r

def matmul3(a, b, c):  # a 3x3 product per work-item: nested loops over its elements
    i = cuda.grid(1)
    if i < a.shape[0]:
        for r in range(3):
            for col in range(3):
                s = 0.0
                for k in range(3):
                    s += a[i, r, k] * b[i, k, col]
                c[i, r, col] = s

def csr_spmv(rowptr, col, val, x, y):  # a CSR row per work-item: its own run of values
    i = cuda.grid(1)
    if i < y.shape[0]:
        s = 0.0
        for k in range(rowptr[i], rowptr[i + 1]):
            s += val[k] * x[col[k]]
        y[i] = s

def bsearch(table, x, out):  # control: a branch on what the loop loads
    i = cuda.grid(1)
    if i < x.shape[0]:
        lo = 0
        hi = table.shape[0]
        v = x[i]
        while lo < hi:
            mid = (lo + hi) // 2
            if table[mid] < v:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo

def row_to_column(a, out):  # control: its stores consecutive across lanes
    i = cuda.grid(1)
    if i < a.shape[0]:
        for k in range(a.shape[1]):
            out[k, i] = a[i, k] * 2.0

def nearest_point(p, cent, label):  # control: p[i, 0], p[i, 1] the same round the loop
    i = cuda.grid(1)
    if i < p.shape[0]:
        best = 1e300
        arg = 0
        for c in range(cent.shape[0]):
            dx = p[i, 0] - cent[c, 0]
            dy = p[i, 1] - cent[c, 1]
            d = dx * dx + dy * dy
            if d < best:
                best = d
                arg = c
        label[i] = arg

def row_exp(a, out):  # control: a library function per element
    i = cuda.grid(1)
    if i < a.shape[0]:
        for k in range(a.shape[1]):
            out[i, k] = math.exp(a[i, k])

def pairwise(x, y, out):  # control: two grid dimensions
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < y.shape[0]:
        s = 0.0
        for k in range(x.shape[1]):
            d = x[i, k] - y[j, k]
            s += d * d
        out[i, j] = math.sqrt(s)

def lorenz(y, out, steps):  # control: the loop touches no memory
    i = cuda.grid(1)
    if i < y.shape[0]:
        a = y[i, 0]
        b = y[i, 1]
        c = y[i, 2]
        for s in range(steps):
            a2 = a + 0.001 * 10.0 * (b - a)
            b2 = b + 0.001 * (a * (28.0 - c) - b)
            c2 = c + 0.001 * (a * b - 2.6 * c)
            a, b, c = a2, b2, c2
        out[i, 0] = a
        out[i, 1] = b
        out[i, 2] = c

def axpy(x, y, out):  # control: no row
    i = cuda.grid(1)
    if i < x.shape[0]:
        out[i] = 2.0 * x[i] + y[i]
'''


def _body(flops: int) -> str:
    ops = ["v = v * 1.0001 + 0.5"] * ((flops - 1) // 2) + (["v = v * 0.999"] if (flops - 1) % 2 else [])
    return "\n            ".join(ops) if ops else "pass"


def _kernels(flops_set, prefix: str) -> dict:
    g = {"cuda": cuda, "math": math}
    src = SRC.replace("def ", f"def {prefix}")
    exec(compile(src, f"<{prefix}kernels>", "exec"), g)
    ks = {n: cuda.jit(g[prefix + n]) for n in ("dist_to_point", "kmeans_assign", "horner_rows",
                                               "norm_rows", "matmul3", "csr_spmv", "bsearch",
                                               "row_to_column",
                                               "nearest_point", "row_exp",
                                               "pairwise", "lorenz", "axpy")}
    for f in flops_set:
        gf = {"cuda": cuda}
        body = SRC.split("def pairwise")[0].split("def rowpoly")[1].split("def dist_to_point")[0]
        exec("def " + prefix + f"rowpoly{f}" + body.replace("BODY", _body(f)), gf)
        ks[f"rowpoly{f}"] = cuda.jit(gf[prefix + f"rowpoly{f}"])
    return ks


@numba.njit(parallel=True)
def _np_rowpoly(a, flops):
    out = np.empty(a.shape[0])
    for i in numba.prange(a.shape[0]):
        s = 0.0
        for k in range(a.shape[1]):
            v = a[i, k]
            for _ in range((flops - 1) // 2):
                v = v * 1.0001 + 0.5
            if (flops - 1) % 2:
                v = v * 0.999
            s += v
        out[i] = s
    return out


@numba.njit(parallel=True)
def _np_kmeans(x, cent):
    label = np.empty(x.shape[0], np.int64)
    for i in numba.prange(x.shape[0]):
        best, arg = 1e300, 0
        for c in range(cent.shape[0]):
            d = 0.0
            for k in range(x.shape[1]):
                t = x[i, k] - cent[c, k]
                d += t * t
            if d < best:
                best, arg = d, c
        label[i] = arg
    return label


@numba.njit(parallel=True)
def _np_dist(a, c):
    out = np.empty(a.shape[0])
    for i in numba.prange(a.shape[0]):
        s = 0.0
        for k in range(a.shape[1]):
            d = a[i, k] - c[k]
            s += d * d
        out[i] = math.sqrt(s)
    return out


def _median_ms(fn, reps: int) -> float:
    fn()
    cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--quick", action="store_true", help="the streamed size only, fewer kernels")
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "results",
                                                  "serial_lanes.json"))
    args = ap.parse_args()
    flops_set = (1, 3, 8) if args.quick else (1, 2, 3, 4, 6, 8, 12)
    ours = _kernels(flops_set, "o_")
    saved = lanes.SERIAL_FLOPS_PER_STRIDED
    rng = np.random.default_rng(7)
    sizes = (("streamed", 1 << 19),) if args.quick else (("cached", 4096), ("streamed", 1 << 19))
    rows_out = []
    for tag, n in sizes:
        for dt in (np.float64, np.float32):
            a = rng.random((n, 16)).astype(dt)
            da, dout = cuda.to_device(a), cuda.device_array(n, dt)
            c = rng.random(16).astype(dt)
            dc = cuda.to_device(c)
            cent = rng.random((16, 16)).astype(dt)
            dcent, dlab = cuda.to_device(cent), cuda.device_array(n, np.int64)
            dout2 = cuda.device_array((n, 16), dt)
            dx = cuda.to_device(rng.random(n).astype(dt))
            pts = cuda.to_device(rng.random((n, 2)).astype(dt))
            m3 = cuda.to_device(rng.random((n, 3, 3)).astype(dt))
            m3o = cuda.device_array((n, 3, 3), dt)
            dcol = cuda.device_array((16, n), dt)
            rowptr = cuda.to_device(np.arange(0, 16 * (n + 1), 16, dtype=np.int64))
            cols = cuda.to_device(rng.integers(0, n, 16 * n))
            vals = cuda.to_device(rng.random(16 * n).astype(dt))
            table = cuda.to_device(np.sort(rng.random(4096)).astype(dt))
            y3 = cuda.to_device(rng.random((n // 4, 3)).astype(dt))
            o3 = cuda.device_array((n // 4, 3), dt)
            blocks = (n + 127) // 128
            m = 512 if tag == "cached" else 2048
            px = cuda.to_device(rng.random((m, 16)).astype(dt))
            pout = cuda.device_array((m, m), dt)
            cases = {f"rowpoly{f}": (lambda k: k[blocks, 128](da, dout), dout) for f in flops_set}
            cases.update({
                "dist_to_point": (lambda k: k[blocks, 128](da, dc, dout), dout),
                "kmeans_assign": (lambda k: k[blocks, 128](da, dcent, dlab), dlab),
                "horner_rows": (lambda k: k[blocks, 128](da, dx, dout), dout),
                "norm_rows": (lambda k: k[blocks, 128](da, dout2), dout2),
                "matmul3": (lambda k: k[blocks, 128](m3, m3, m3o), m3o),
                "csr_spmv": (lambda k: k[blocks, 128](rowptr, cols, vals, dx, dout), dout),
                "bsearch": (lambda k: k[blocks, 128](table, dx, dlab), dlab),
                "row_to_column": (lambda k: k[blocks, 128](da, dcol), dcol),
                "nearest_point": (lambda k: k[blocks, 128](pts, dcent[:, :2], dlab), dlab),
                "row_exp": (lambda k: k[blocks, 128](da, dout2), dout2),
                "pairwise": (lambda k: k[(m // 16, m // 16), (16, 16)](px, px, pout), pout),
                "lorenz": (lambda k: k[(n // 4 + 127) // 128, 128](y3, o3, 50), o3),
                "axpy": (lambda k: k[blocks, 128](dx, dx, dout), dout),
            })
            if args.quick:
                cases = {k: v for k, v in cases.items()
                         if k.startswith("rowpoly") or k in ("kmeans_assign", "nearest_point",
                                                               "row_exp", "pairwise", "lorenz")}
            # the same kernels with the choice off: compiled while no kernel qualifies
            vec = _kernels(flops_set, "v_")
            lanes.SERIAL_FLOPS_PER_STRIDED = -1
            try:
                for name, (launch, _) in cases.items():
                    launch(vec[name])
                cuda.synchronize()
            finally:
                lanes.SERIAL_FLOPS_PER_STRIDED = saved
            refs = {f"rowpoly{f}": (lambda f=f: _np_rowpoly(a, f)) for f in flops_set}
            refs.update(kmeans_assign=lambda: _np_kmeans(a, cent), dist_to_point=lambda: _np_dist(a, c))
            for name, (launch, out) in cases.items():
                # the same bits both ways, and (where numba's loop is there) numba's answers
                launch(vec[name])
                want = out.copy_to_host()
                launch(ours[name])
                got = out.copy_to_host()
                ok = bool(np.array_equal(got, want))
                serial = any(art.info.get("serial_lanes") == "strides"
                             for art in ours[name]._code.values())
                t_ours = min(_median_ms(lambda: launch(ours[name]), args.reps) for _ in range(2))
                t_vec = min(_median_ms(lambda: launch(vec[name]), args.reps) for _ in range(2))
                t_cpu = None
                if name in refs:
                    ref = refs[name]()
                    ok = ok and (np.mean(got == ref) > 0.999 if name == "kmeans_assign"
                                 else np.allclose(got, ref, rtol=1e-4))
                    t0 = time.perf_counter()
                    refs[name]()
                    t_cpu = (time.perf_counter() - t0) * 1e3
                row = dict(kernel=name, size=tag, rows=n, dtype=np.dtype(dt).name, serial=serial,
                           ours_ms=t_ours, vector_lanes_ms=t_vec, njit_parallel_ms=t_cpu,
                           ours_over_vector=t_ours / t_vec, ok=bool(ok))
                rows_out.append(row)
                cpu = f"{t_cpu:8.3f}" if t_cpu is not None else "       -"
                print(f"{name:14s} {tag:8s} {row['dtype']:7s} {'serial' if serial else 'lanes ':6s} "
                      f"ours {t_ours:8.3f} ms  as lanes {t_vec:8.3f} ms  njit-parallel {cpu} ms  "
                      f"ours/lanes {t_ours / t_vec:5.2f}  {'ok' if ok else 'WRONG'}", flush=True)
    chosen = [r["ours_over_vector"] for r in rows_out if r["serial"]]
    others = [r["ours_over_vector"] for r in rows_out if not r["serial"]]

    def gm(xs):
        return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")

    print(f"\nkernels run in order: {len(chosen)}, ours/lanes geomean {gm(chosen):.2f}, "
          f"worst {max(chosen, default=float('nan')):.2f}; others: {len(others)}, geomean "
          f"{gm(others):.2f} (the same code: 1.0 but for noise)")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"reps": args.reps, "rows": rows_out}, f, indent=1)
    print("written:", args.out)


if __name__ == "__main__":
    main()
