"""GPU code on the CPU: a numba.cuda program next to the same computation in numba's
``@njit(parallel=True)``, on the same CPU, same inputs, results compared.

The computation is a time series' matrix profile by sliding dot products along the
diagonals of its distance matrix: for subsequences of length ``m`` starting at ``i``
and ``j``, the dot product ``QT[i, j]`` follows from ``QT[i - 1, j - 1]`` with two
multiply-adds, the z-normalized distance follows from ``QT`` and the windows' means
and standard deviations, and the profile ``P[j]`` is the smallest distance of window
``j`` to any window outside its exclusion zone (``|i - j| > m // 4``).

* **numba.cuda style** (written against ``numba_gpux.cuda`` as a numba.cuda program is
  written): one device array per quantity, a host loop over the rows ``i`` that
  launches one kernel per row over every ``j`` of the whole row (the grid covers it
  and each thread checks its range, as libraries write it), ping-pong ``QT`` buffers,
  and thread ``j`` keeps column ``j``'s minimum, which over all rows is the profile
  (the matrix is symmetric; no atomics, twice the pairs of the CPU version);
  thousands of launches on the same device arrays, one copy back at the end.
* **``@njit(parallel=True)``**: each thread walks whole diagonals with one running dot
  product, into its own row of a (threads x windows) profile, reduced at the end; the
  way a user writes the loop for the CPU.

Both take the same series; the profiles must agree to 1e-6 relative.  The script
also says where the GPU-style program's time goes: the same number of launches of a
kernel that does nothing (with the same arguments), the kernel work (the difference),
and the final copy.

Goal: the numba.cuda program at most 1.5x the ``@njit(parallel=True)`` time.

Usage: python benchmarks/sliding_dot.py [--n 20000] [--m 100] [--repeat 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_import import machine, write_result  # noqa: E402

from numba_gpux import cuda  # noqa: E402

GOAL = 1.5
BLOCK = 256


def window_stats(T: np.ndarray, m: int):
    """Each window's mean and standard deviation (float64)."""
    c = np.concatenate(([0.0], np.cumsum(T)))
    c2 = np.concatenate(([0.0], np.cumsum(T * T)))
    mu = (c[m:] - c[:-m]) / m
    var = np.maximum((c2[m:] - c2[:-m]) / m - mu * mu, 0.0)
    return mu, np.sqrt(var)


# ------------------------------------------------------------------ numba.cuda style
def row_kernel(T, mu, sig, qt0, qt_prev, qt, i, m, excl, P):
    """Row i of the matrix: thread j's dot product from row i - 1's, its distance, and
    column j's minimum so far (also benchmarks/codegen_speed.py's ``sliding_row``)."""
    j = cuda.grid(1)
    if j >= qt.shape[0]:
        return
    if i == 0:
        q = qt0[j]
    elif j == 0:
        q = qt0[i]  # QT is symmetric: row i starts where column i of row 0 is
    else:
        q = qt_prev[j - 1] - T[i - 1] * T[j - 1] + T[i + m - 1] * T[j + m - 1]
    qt[j] = q
    if abs(j - i) > excl:
        d = max(2.0 * m * (1.0 - (q - m * mu[i] * mu[j]) / (m * sig[i] * sig[j])), 0.0)
        if d < P[j]:
            P[j] = d


def _gpu_kernels():
    row = cuda.jit(row_kernel)

    @cuda.jit
    def nothing(T, mu, sig, qt0, qt_prev, qt, i, m, excl, P):
        pass

    return cuda, row, nothing


def profile_gpu_style(T, m, excl, kernels, launch_kernel=None):
    """The numba.cuda program: returns (P as distances, seconds by part)."""
    cuda, row, _ = kernels
    k = launch_kernel or row
    nw = T.size - m + 1
    mu, sig = window_stats(T, m)
    qt0 = np.correlate(T, T[:m], mode="valid")  # row 0 of QT
    t0 = time.perf_counter()
    dT, dmu, dsig = cuda.to_device(T), cuda.to_device(mu), cuda.to_device(sig)
    dq0, qa, qb = cuda.to_device(qt0), cuda.device_array(nw), cuda.device_array(nw)
    dP = cuda.to_device(np.full(nw, np.inf))
    blocks = (nw + BLOCK - 1) // BLOCK
    launch = k[blocks, BLOCK]
    t1 = time.perf_counter()
    for i in range(nw):
        launch(dT, dmu, dsig, dq0, qa, qb, i, m, excl, dP)
        qa, qb = qb, qa
    cuda.synchronize()
    t2 = time.perf_counter()
    P = dP.copy_to_host()
    t3 = time.perf_counter()
    return np.sqrt(P), {"setup_s": t1 - t0, "launches_s": t2 - t1, "copy_back_s": t3 - t2,
                        "total_s": t3 - t0, "launches": nw}


# ------------------------------------------------------------------ @njit(parallel=True)
def _cpu_fn():
    import numba
    from numba import njit, prange

    @njit(parallel=True)
    def profile(T, m, mu, sig, excl):
        nw = T.size - m + 1
        nt = numba.get_num_threads()
        P = np.full((nt, nw), np.inf)
        for t in prange(nt):
            for k in range(excl + 1 + t, nw, nt):  # the diagonal j - i == k
                q = 0.0
                for s in range(m):
                    q += T[s] * T[k + s]
                for i in range(nw - k):
                    j = i + k
                    if i > 0:
                        q = q - T[i - 1] * T[j - 1] + T[i + m - 1] * T[j + m - 1]
                    d = 2.0 * m * (1.0 - (q - m * mu[i] * mu[j]) / (m * sig[i] * sig[j]))
                    if d < 0.0:
                        d = 0.0
                    if d < P[t, i]:
                        P[t, i] = d
                    if d < P[t, j]:
                        P[t, j] = d
        out = np.empty(nw)
        for j in prange(nw):
            v = np.inf
            for t in range(nt):
                v = min(v, P[t, j])
            out[j] = math.sqrt(v)
        return out

    return profile


def profile_cpu(T, m, excl, fn):
    mu, sig = window_stats(T, m)
    t0 = time.perf_counter()
    P = fn(T, m, mu, sig, excl)
    return P, time.perf_counter() - t0


def brute_force(T, m, excl):
    """The profile by definition (small series only)."""
    nw = T.size - m + 1
    W = np.lib.stride_tricks.sliding_window_view(T, m)
    Z = (W - W.mean(axis=1, keepdims=True)) / W.std(axis=1, keepdims=True)
    D = np.sqrt(np.maximum(((Z[:, None, :] - Z[None, :, :]) ** 2).sum(axis=2), 0.0))
    idx = np.arange(nw)
    D[np.abs(idx[:, None] - idx[None, :]) <= excl] = np.inf
    return D.min(axis=0)


def measure(n: int, m: int, repeat: int, seed: int = 0) -> dict:
    import numba

    rng = np.random.default_rng(seed)
    T = np.cumsum(rng.standard_normal(n))  # a random walk, as a real series
    excl = m // 4
    kernels = _gpu_kernels()
    fn = _cpu_fn()
    # correctness on a small series, against the definition
    small = T[:600].copy()
    want = brute_force(small, 32, 8)
    got_gpu, _ = profile_gpu_style(small, 32, 8, kernels)
    got_cpu, _ = profile_cpu(small, 32, 8, fn)
    ok_small = bool(np.allclose(got_gpu, want, rtol=1e-6, atol=1e-6) and
                    np.allclose(got_cpu, want, rtol=1e-6, atol=1e-6))
    gpu_runs, cpu_runs, empty_runs = [], [], []
    P_gpu = P_cpu = None
    for _ in range(repeat):  # alternating, so that other load falls on both alike
        P_gpu, parts = profile_gpu_style(T, m, excl, kernels)
        gpu_runs.append(parts)
        P_cpu, t = profile_cpu(T, m, excl, fn)
        cpu_runs.append(t)
        _, eparts = profile_gpu_style(T, m, excl, kernels, launch_kernel=kernels[2])
        empty_runs.append(eparts["launches_s"])
    agree = bool(np.allclose(P_gpu, P_cpu, rtol=1e-6, atol=1e-6))
    med = {key: statistics.median(r[key] for r in gpu_runs)
           for key in ("setup_s", "launches_s", "copy_back_s", "total_s")}
    cpu = statistics.median(cpu_runs)
    empty = statistics.median(empty_runs)
    ratio = med["total_s"] / cpu
    return {
        "n": n, "m": m, "exclusion": excl, "repeat": repeat, "launches": T.size - m + 1,
        "threads": numba.get_num_threads(), "device": str(kernels[0].get_current_device()),
        "machine": machine(), "ok_small_vs_definition": ok_small, "profiles_agree": agree,
        "gpu_style_s": med, "njit_parallel_s": cpu,
        "empty_launches_s": empty,
        "kernel_work_s": max(med["launches_s"] - empty, 0.0),
        "per_launch_overhead_us": empty / (T.size - m + 1) * 1e6,
        "ratio": ratio, "goal_max": GOAL, "goal_met": ratio <= GOAL,
        "note": "ratio = numba.cuda-style program time / @njit(parallel=True) time",
    }


def report(r: dict) -> str:
    g = r["gpu_style_s"]
    return "\n".join([
        f"matrix profile by sliding dot products, n={r['n']}, m={r['m']}, "
        f"{r['launches']} launches, device {r['device']}, {r['threads']} numba threads",
        f"  numba.cuda program   {g['total_s'] * 1e3:9.1f} ms  (setup {g['setup_s'] * 1e3:.1f}, "
        f"launches {g['launches_s'] * 1e3:.1f}, copy back {g['copy_back_s'] * 1e3:.1f})",
        f"    of the launches: the same launches of an empty kernel "
        f"{r['empty_launches_s'] * 1e3:.1f} ms ({r['per_launch_overhead_us']:.1f} us each), "
        f"kernel work about {r['kernel_work_s'] * 1e3:.1f} ms",
        f"  @njit(parallel=True) {r['njit_parallel_s'] * 1e3:9.1f} ms",
        f"  ratio {r['ratio']:.2f} (goal <= {r['goal_max']}: "
        f"{'met' if r['goal_met'] else 'NOT met'}); results agree: {r['profiles_agree']}; "
        f"small series against the definition: {r['ok_small_vs_definition']}",
    ])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--m", type=int, default=100)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--out", default=os.path.join(HERE, "results", "sliding_dot.json"))
    a = p.parse_args(argv)
    r = measure(a.n, a.m, a.repeat)
    print(report(r))
    write_result(a.out, r)
    return 0 if (r["profiles_agree"] and r["ok_small_vs_definition"]) else 1


if __name__ == "__main__":
    sys.exit(main())
