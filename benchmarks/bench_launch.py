"""Steady-state launch overhead for kernels with 0, 1, 3 and 16 arguments.

On the OpenCL device (the Intel CPU driver here), in several fresh processes,
each measuring in interleaved rounds:

* ours, end to end: ``k[1, 16](*args)`` launched N times, then synchronize;
* pyopencl, end to end, the same program: the same SPIR-V binary built with
  ``cl.Program``, a ``cl.Kernel`` with the same scalar argument dtypes, called
  ``knl(queue, gsize, lsize, *flat_args)`` N times on the same queue, then
  ``queue.finish()``; the flat arguments are made once, as a hand-written
  pyopencl program would;
* pyopencl with the arguments set once and ``cl.enqueue_nd_range_kernel`` per
  launch (a lower bound for any launch through pyopencl);
* both end to end again with the arguments changing on every launch: two
  argument sets (other arrays, same scalars) alternate, ours ``k[1, 16]`` and
  pyopencl's ``knl(...)`` (our OpenCL runtime sets only changed arguments, so
  the same arguments every launch is its best case and this its worst);
* ours, host side only: the kernel's launcher (what the runtime's ``prepare``
  returned, kept on the launch shim) replaced by a no-op (inside this
  benchmark only), so what is left is the core's work per launch (finding the
  shim, flattening the arguments into the runtime's form: the OpenCL runtime
  takes scalars as bytes), both as ``k[1, 16](*args)`` and through a kept
  configuration ``cfg(*args)``.

The reference's flat arguments are made here from the public ABI (``abi.py``),
not with the core's generated code, so that the script measures any commit.

Goals: host side < 2 us for a one-array kernel and < 5 us for 16
arguments; end to end within 1.2x pyopencl enqueueing the same program.  The
goals are checked on the minimum over rounds and processes (on a shared
machine the minimum is the least disturbed figure); medians are shown too.
End to end, the three ways alternate in chunks of 50 launches.

Usage: python benchmarks/bench_launch.py [--procs 3] [--rounds 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_import import child_env, machine, write_result  # noqa: E402

RESULTS = os.path.join(HERE, "results")
GOALS = {"host_1_us": 2.0, "host_16_us": 5.0, "e2e_ratio": 1.2}
ARITIES = (0, 1, 3, 16)

__all__ = ["main", "measure"]

_CHILD = r"""
import json, sys, time
import numpy as np
import numba_gpux as gpux
from numba_gpux.launch import _typeof
from numba_gpux.argtypes import stride_facts

T = time.perf_counter
rounds, n_e2e, n_host = map(int, sys.argv[1:4])

@gpux.jit
def k0():
    i = gpux.grid(1)

@gpux.jit
def k1(x):
    i = gpux.grid(1)
    if i < x.size:
        x[i] += 1.0

@gpux.jit
def k3(x, y, a):
    i = gpux.grid(1)
    if i < x.size:
        x[i] = a * x[i] + y[i]

@gpux.jit
def k16(x0, x1, x2, x3, x4, x5, x6, x7, s0, s1, s2, s3, s4, s5, s6, s7):
    i = gpux.grid(1)
    if i < x0.size:
        x0[i] = (x1[i] + x2[i] + x3[i] + x4[i] + x5[i] + x6[i] + x7[i]
                 + s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7)

dev = gpux.default_device()
arr = lambda: gpux.to_device(np.zeros(16, np.float32))
cases = {
    0: (k0, ()),
    1: (k1, (arr(),)),
    3: (k3, (arr(), arr(), np.float32(2))),
    16: (k16, tuple(arr() for _ in range(8)) + (np.float32(1),) * 4 + (1.0, 2.0, 3, 4)),
}
rt = dev.runtime
queue = rt.queue
import pyopencl as cl

def reference_flat(args):
    # the kernel ABI's leaves as a hand-written pyopencl program passes them (abi.py):
    # an array as (buffer, byte offset, *shape, *strides), numbers as themselves
    flat, dtypes = [], []
    for a in args:
        if isinstance(a, gpux.DeviceArray):
            ints = (a.offset, *a.shape, *a.strides)
            flat += [a._alloc.handle, *ints]
            dtypes += [None] + [np.int64] * len(ints)
        else:
            flat.append(a)
            dtypes.append(np.float64 if type(a) is float else
                          np.int64 if type(a) is int else type(a))
    return flat, dtypes

refs = {}
for n, (k, args) in cases.items():
    k[1, 16](*args)  # compile, load, build the shim
    argtypes = tuple(map(_typeof, args))
    art = k.code_for(argtypes, dev.target)
    prg = cl.Program(rt.context, art.binary).build()
    knl = cl.Kernel(prg, art.kernels[0])
    flat, dtypes = reference_flat(args)
    knl.set_scalar_arg_dtypes(dtypes)
    knl2 = cl.Kernel(prg, art.kernels[0])
    knl2.set_scalar_arg_dtypes(dtypes)
    knl2.set_args(*flat)
    refs[n] = (knl, flat, knl2)
# a second argument set per case, alternated with the first launch by launch: other
# arrays in the same positions (what a ping-pong loop does), same scalars
alts = {}
for n, (k, args) in cases.items():
    alt = tuple(arr() if isinstance(a, gpux.DeviceArray) else a for a in args)
    k[1, 16](*alt)
    alts[n] = (alt, reference_flat(alt)[0])
gpux.synchronize()
gsize, lsize = (16, 1, 1), (16, 1, 1)

CHUNK = 50

def e2e(k, args, knl, flat, knl2):
    # the three ways alternate in chunks of CHUNK launches, so that load on the
    # machine falls on each alike; every chunk ends with the queue drained
    ours = ref = once = 0.0
    for _ in range(max(1, n_e2e // CHUNK)):
        t0 = T()
        for _ in range(CHUNK):
            k[1, 16](*args)
        queue.finish()
        t1 = T()
        for _ in range(CHUNK):
            knl(queue, gsize, lsize, *flat)
        queue.finish()
        t2 = T()
        for _ in range(CHUNK):
            cl.enqueue_nd_range_kernel(queue, knl2, gsize, lsize)
        queue.finish()
        t3 = T()
        ours += t1 - t0
        ref += t2 - t1
        once += t3 - t2
    m = max(1, n_e2e // CHUNK) * CHUNK
    return ours / m, ref / m, once / m

def e2e_alternating(k, args, alt, knl, flat, flat_alt):
    # every launch with other arrays than the one before (the arguments change)
    ours = ref = 0.0
    for _ in range(max(1, n_e2e // CHUNK)):
        t0 = T()
        for _ in range(CHUNK // 2):
            k[1, 16](*args)
            k[1, 16](*alt)
        queue.finish()
        t1 = T()
        for _ in range(CHUNK // 2):
            knl(queue, gsize, lsize, *flat)
            knl(queue, gsize, lsize, *flat_alt)
        queue.finish()
        t2 = T()
        ours += t1 - t0
        ref += t2 - t1
    m = max(1, n_e2e // CHUNK) * (CHUNK // 2) * 2
    return ours / m, ref / m

def noop_launch(*a):
    pass

def host(k, args):
    # the shim's launcher (the runtime's, from prepare) made a no-op
    shim = k._shims[(tuple(map(_typeof, args)), dev, stride_facts(args))]
    real_launch = shim.launch
    shim.launch = noop_launch
    try:
        t0 = T()
        for _ in range(n_host):
            k[1, 16](*args)
        t1 = T()
        cfg = k[1, 16]
        for _ in range(n_host):
            cfg(*args)
        t2 = T()
        for _ in range(n_host):
            noop_launch(k, args)
        t3 = T()
    finally:
        shim.launch = real_launch
    base = (t3 - t2) / n_host  # the loop and one Python call
    calls.append(base)
    return (t1 - t0) / n_host - base, (t2 - t1) / n_host - base

calls = []

out = {str(n): {"ours_e2e": [], "pyopencl_e2e": [], "pyopencl_set_once": [], "ours_host": [],
                "ours_host_cfg": [], "ours_e2e_alternating": [],
                "pyopencl_e2e_alternating": []} for n in cases}
for _ in range(rounds):
    for n, (k, args) in cases.items():
        knl, flat, knl2 = refs[n]
        o = out[str(n)]
        a, b, c = e2e(k, args, knl, flat, knl2)
        o["ours_e2e"].append(a)
        o["pyopencl_e2e"].append(b)
        o["pyopencl_set_once"].append(c)
        alt, flat_alt = alts[n]
        a, b = e2e_alternating(k, args, alt, knl, flat, flat_alt)
        o["ours_e2e_alternating"].append(a)
        o["pyopencl_e2e_alternating"].append(b)
        h, hc = host(k, args)
        o["ours_host"].append(h)
        o["ours_host_cfg"].append(hc)
out["device"] = repr(dev)
out["python_call_s"] = calls
print(json.dumps(out))
"""


def measure(procs: int, rounds: int, n_e2e: int, n_host: int) -> dict:
    env = child_env()
    samples: list[dict] = []
    errors = []
    for _ in range(procs):
        p = subprocess.run([sys.executable, "-c", _CHILD, str(rounds), str(n_e2e), str(n_host)],
                           env=env, capture_output=True, text=True, timeout=900)
        if p.returncode != 0:
            err = p.stderr.strip().splitlines()
            errors.append(err[-1] if err else f"exit {p.returncode}")
            continue
        samples.append(json.loads(p.stdout.strip().splitlines()[-1]))
    res: dict = {"benchmark": "launch", "procs": procs, "rounds": rounds, "n_e2e": n_e2e,
                 "n_host": n_host, "errors": errors, "median_us": {}, "min_us": {},
                 "ratios": {}, "goals": {}}
    if not samples:
        res["machine"] = machine()
        return res
    res["device"] = samples[0]["device"]
    for n in ARITIES:
        key = str(n)
        med, mn = {}, {}
        for field in samples[0][key]:
            vals = [v for s in samples for v in s[key][field]]
            med[field] = statistics.median(vals) * 1e6
            mn[field] = min(vals) * 1e6
        res["median_us"][key] = med
        res["min_us"][key] = mn
        res["ratios"][f"{n} args: ours_e2e/pyopencl_e2e"] = med["ours_e2e"] / med["pyopencl_e2e"]
        res["ratios"][f"{n} args: ours_e2e/pyopencl_set_once"] = (
            med["ours_e2e"] / med["pyopencl_set_once"])
        res["ratios"][f"{n} args: min ours_e2e/min pyopencl_e2e"] = mn["ours_e2e"] / mn["pyopencl_e2e"]
        res["ratios"][f"{n} args, alternating: min ours/min pyopencl"] = (
            mn["ours_e2e_alternating"] / mn["pyopencl_e2e_alternating"])
        r = res["ratios"][f"{n} args: min ours_e2e/min pyopencl_e2e"]
        res["goals"][f"{n} args: end to end <= {GOALS['e2e_ratio']}x pyopencl"] = {
            "max": GOALS["e2e_ratio"], "value": r, "met": r <= GOALS["e2e_ratio"]}
    for n, g in ((1, GOALS["host_1_us"]), (16, GOALS["host_16_us"])):
        v = res["min_us"][str(n)]["ours_host"]
        res["goals"][f"{n} args: host side < {g} us"] = {"max": g, "value": v, "met": v < g}
    res["python_call_ns"] = statistics.median(
        v for s in samples for v in s["python_call_s"]) * 1e9
    res["samples"] = samples
    res["machine"] = machine()
    return res


def report(res: dict) -> str:
    if not res["median_us"]:
        return f"no measurement: {res['errors']}"
    lines = [f"device: {res.get('device')}", "",
             "| args | ours e2e (us) | pyopencl `knl(...)` e2e (us) | ratio | pyopencl args set "
             "once (us) | ours host side `k[1,16](...)` (us) | ours host side `cfg(...)` (us) "
             "| ours, arguments alternating (us) | pyopencl, alternating (us) | ratio |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for stat in ("min_us", "median_us"):
        for n in ARITIES:
            m = res[stat][str(n)]
            lines.append(f"| {n} ({stat[:-3]}) | {m['ours_e2e']:.1f} | {m['pyopencl_e2e']:.1f} | "
                         f"{m['ours_e2e'] / m['pyopencl_e2e']:.3f} | "
                         f"{m['pyopencl_set_once']:.1f} | {m['ours_host']:.2f} | "
                         f"{m['ours_host_cfg']:.2f} | {m['ours_e2e_alternating']:.1f} | "
                         f"{m['pyopencl_e2e_alternating']:.1f} | "
                         f"{m['ours_e2e_alternating'] / m['pyopencl_e2e_alternating']:.3f} |")
    lines.append("")
    lines.append(f"calibration: one Python call with two arguments in a loop costs "
                 f"{res['python_call_ns']:.0f} ns on this machine now")
    for k, g in res["goals"].items():
        lines.append(f"goal {k}: {'met' if g['met'] else 'NOT met'} ({g['value']:.3f})")
    if res["errors"]:
        lines.append(f"errors: {res['errors']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--procs", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n-e2e", type=int, default=1000)
    ap.add_argument("--n-host", type=int, default=20000)
    ap.add_argument("--out", default=os.path.join(RESULTS, "bench_launch.json"))
    a = ap.parse_args(argv)
    res = measure(a.procs, a.rounds, a.n_e2e, a.n_host)
    print(report(res))
    write_result(a.out, res)
    return 0 if res["median_us"] else 1


if __name__ == "__main__":
    sys.exit(main())
