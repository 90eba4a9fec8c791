"""Memory growth: many distinct kernels compiled and dropped, and many launches.

Each case runs in a fresh process and reports how much its resident memory
(``VmRSS``, after ``gc.collect()`` and glibc's ``malloc_trim``) grew:

* ``ours_compile``: N distinct kernels (new closures over a constant, so each
  is a new program), each compiled, launched once on the default device and
  dropped; growth per compile after a warm-up of W compiles;
* ``numba_njit`` (reference): the same closures compiled by Numba's own CPU
  ``@njit`` and called once: what Numba's compiler itself keeps per compile;
* ``pyopencl_build`` (reference, OpenCL devices): N distinct OpenCL C programs
  built by pyopencl on the same device, run once and dropped: what the driver
  keeps per program;
* ``ours_launch``: L launches with a device array allocated and freed each
  time (growth in all, which should be flat).

Goal: ``ours_compile`` below 0.1 MiB per compile on average.  Not a test:
memory is measured here, never asserted in the test suite.

Usage: python benchmarks/bench_memory.py [--n 2000] [--warmup 50] [--launches 100000]
       [--runs 1] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")
GOAL_MIB = 0.1

__all__ = ["main"]

_COMMON = r"""
import ctypes, gc, json, sys, time
import numpy as np

def rss_mib():
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")

N, W, L = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

def measure(one, warmup, n, finish=lambda: None, **extra):
    # one(i) for the warm-up, then for the n measured ones; prints the RESULT line
    for i in range(warmup):
        one(i)
    finish()
    start, t0 = rss_mib(), time.perf_counter()
    for i in range(warmup, warmup + n):
        one(i)
    finish()
    end, t1 = rss_mib(), time.perf_counter()
    print("RESULT", json.dumps({"mib_start": start, "mib_end": end, "mib_growth": end - start,
                                "mib_per_item": (end - start) / n, "seconds": t1 - t0,
                                **extra}))
"""

_OURS_COMPILE = _COMMON + r"""
import numba_gpux as gpux

def make(c):
    @gpux.jit
    def k(a):
        a[0] = c
    return k

out = gpux.device_array(1, np.float64)
def one(i):
    k = make(float(i) + 0.5)
    k[1, 1](out)
    gpux.synchronize()

measure(one, W, N, device=gpux.default_device().spec)
"""

_NUMBA_NJIT = _COMMON + r"""
import numba

def make(c):
    @numba.njit
    def k(a):
        a[0] = c
    return k

out = np.zeros(1)
def one(i):
    make(float(i) + 0.5)(out)

measure(one, W, N)
"""

_PYOPENCL_BUILD = _COMMON + r"""
import numba_gpux as gpux
import pyopencl as cl

dev = gpux.default_device()
rt = dev.runtime
if not hasattr(rt, "cl_device"):
    print("RESULT", json.dumps({"skipped": f"{dev.spec} is not an OpenCL device"}))
    sys.exit(0)
ctx, q = rt.context, rt.queue
buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8)
src = "__kernel void k(__global double *a) {{ a[0] = {c}; }}"
def one(i):
    prg = cl.Program(ctx, src.format(c=float(i) + 0.5)).build()
    prg.k(q, (1,), (1,), buf)
    q.finish()

measure(one, W, N, device=dev.spec)
"""

_OURS_LAUNCH = _COMMON + r"""
import numba_gpux as gpux

@gpux.jit
def k(a):
    i = gpux.grid(1)
    if i < a.size:
        a[i] = i

def one(i):
    a = gpux.device_array(256, np.float32)
    k[1, 256](a)
    if i % 1000 == 999:
        gpux.synchronize()

measure(one, 1000, L, finish=gpux.synchronize)
"""

CASES = {"ours_compile": _OURS_COMPILE, "numba_njit": _NUMBA_NJIT,
         "pyopencl_build": _PYOPENCL_BUILD, "ours_launch": _OURS_LAUNCH}


def _run(code: str, n: int, warmup: int, launches: int, timeout: int) -> dict:
    res = subprocess.run([sys.executable, "-c", code, str(n), str(warmup), str(launches)],
                         capture_output=True, text=True, timeout=timeout)
    for line in res.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    return {"error": (res.stderr or res.stdout)[-2000:]}


def measure(n: int, warmup: int, launches: int, runs: int, cases, timeout: int) -> dict:
    out: dict = {}
    for name in cases:
        got = [_run(CASES[name], n, warmup, launches, timeout) for _ in range(runs)]
        ok = [g for g in got if "mib_per_item" in g]
        out[name] = {"runs": got}
        if ok:
            out[name]["median_mib_per_item"] = statistics.median(g["mib_per_item"] for g in ok)
            out[name]["median_mib_growth"] = statistics.median(g["mib_growth"] for g in ok)
    return out


def report(res: dict, n: int, launches: int) -> str:
    lines = [f"{'case':16s} {'MiB per item':>13s} {'MiB growth':>11s}"]
    for name, r in res.items():
        per = r.get("median_mib_per_item")
        if per is None:
            first = r["runs"][0] if r["runs"] else {}
            lines.append(f"{name:16s} {first.get('skipped') or 'error: see JSON'}")
            continue
        lines.append(f"{name:16s} {per:13.4f} {r['median_mib_growth']:11.1f}")
    ours = res.get("ours_compile", {}).get("median_mib_per_item")
    for ref in ("numba_njit", "pyopencl_build"):
        rp = res.get(ref, {}).get("median_mib_per_item")
        if ours is not None and rp:
            lines.append(f"ours_compile / {ref}: {ours / rp:.2f}x" if rp > 0 else
                         f"ours_compile / {ref}: reference did not grow")
    if ours is not None:
        lines.append(f"goal: ours_compile < {GOAL_MIB} MiB per compile over {n} compiles: "
                     f"{'met' if ours < GOAL_MIB else 'NOT met'}")
    if "median_mib_growth" in res.get("ours_launch", {}):
        lines.append(f"{launches} launches grew the process by "
                     f"{res['ours_launch']['median_mib_growth']:.1f} MiB")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=2000, help="distinct compiles per case")
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--launches", type=int, default=100_000)
    p.add_argument("--runs", type=int, default=1, help="fresh processes per case (median)")
    p.add_argument("--cases", default=",".join(CASES), help="comma-separated subset")
    p.add_argument("--timeout", type=int, default=3600, help="seconds per process")
    p.add_argument("--out", default=os.path.join(RESULTS, "bench_memory.json"))
    a = p.parse_args(argv)
    cases = [c for c in a.cases.split(",") if c]
    res = measure(a.n, a.warmup, a.launches, a.runs, cases, a.timeout)
    print(report(res, a.n, a.launches))
    doc = {"benchmark": "memory", "n": a.n, "warmup": a.warmup, "launches": a.launches,
           "runs": a.runs, "goal_mib_per_compile": GOAL_MIB, "results": res,
           "machine": platform.processor() or platform.machine(),
           "python": sys.version.split()[0]}
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
