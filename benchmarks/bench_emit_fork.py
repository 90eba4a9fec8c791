"""What it would cost to emit SPIR-V in a forked child, so that an abort inside LLVM's
SPIR-V back end kills the child, not the user's process.

Each run is a fresh process that compiles a small kernel (saxpy) for the first time,
either emitting in the process as the compiler does, or with the emission
(``machines.default_emit``) run in a ``os.fork()`` child that sends the artifact back
through a pipe.  Two situations: ``gpux.compile`` alone (no OpenCL driver loaded), and
the first launch on the OpenCL device (driver loaded, its threads running: the case a
user meets, and the one where forking is riskiest); and ``gpux.compile`` of a second
kernel after a first (the context warm: what every later compile pays).  The runs of the two modes are
interleaved and the table gives medians; it also gives the emission alone and one
bare fork (fork, child exits, parent waits) measured in the compile process.

The lead's threshold for a guard that forks per emission: under ~5% of a first compile.

Usage: python benchmarks/bench_emit_fork.py [--runs 9] [--out FILE]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_import import bench_main, child_env, machine  # noqa: E402

__all__ = ["main", "measure"]

#: compile: gpux.compile of the first kernel; second: of a second kernel after a first
#: (what every later compile of a process pays); launch: the first launch, driver loaded
SITUATIONS = ("compile", "second", "launch")

_CHILD = r"""
import json, os, pickle, sys, time
T = time.perf_counter
mode, situation = sys.argv[1], sys.argv[2]
import numpy as np
import numba_gpux as gpux
from numba_gpux import machines

emit_times, fork_times = [], []
original = machines.default_emit

def timed(*a, **k):
    t0 = T(); art = original(*a, **k); emit_times.append(T() - t0)
    return art

def forked(*a, **k):
    t0 = T()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: emit, send the artifact, leave without cleanup
        try:
            os.close(r)
            data = pickle.dumps(original(*a, **k))
            with os.fdopen(w, "wb") as f:
                f.write(data)
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        raise RuntimeError(f"emission aborted (signal {os.WTERMSIG(status)})")
    emit_times.append(T() - t0)
    return pickle.loads(data)

machines.default_emit = timed if mode == "inproc" else forked

@gpux.jit
def saxpy(a, x, y, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]

SIG = "void(float32, float32[::1], float32[::1], float32[::1])"
if situation == "launch":
    x = gpux.to_device(np.arange(256, dtype=np.float32))
    out = gpux.device_array(256, np.float32)
    gpux.synchronize() if hasattr(gpux, "synchronize") else None
    t0 = T()
    saxpy[4, 64](np.float32(2), x, x, out)
    out.copy_to_host()
    total = T() - t0
    assert np.allclose(out.copy_to_host(), 3 * np.arange(256, dtype=np.float32))
elif situation == "second":  # another kernel compiled first: the context warm
    @gpux.jit
    def other(a, x, y, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = a - x[i]
    gpux.compile(other, SIG, target="opencl")
    emit_times.clear()
    t0 = T()
    b = gpux.compile(saxpy, SIG, target="opencl").binary
    total = T() - t0
else:
    t0 = T()
    b = gpux.compile(saxpy, SIG, target="opencl").binary
    total = T() - t0
    assert b[:4] == b"\x03\x02\x23\x07"
# one bare fork of this process, as it is now
t0 = T()
pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
bare = T() - t0
print(json.dumps({"total": total, "emit": sum(emit_times), "bare_fork": bare}))
"""


def _once(mode: str, situation: str, env: dict) -> dict:
    p = subprocess.run([sys.executable, "-c", _CHILD, mode, situation], env=env,
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"{mode}/{situation}: " + (p.stderr.strip().splitlines() or ["?"])[-1])
    return json.loads(p.stdout.strip().splitlines()[-1])


def measure(runs: int) -> dict:
    env = child_env()
    res = {"machine": machine(), "runs": runs}
    for situation in SITUATIONS:
        samples = {"inproc": [], "fork": []}
        _once("inproc", situation, env)  # bytecode caches warm
        for _ in range(runs):
            for mode in ("inproc", "fork"):
                samples[mode].append(_once(mode, situation, env))
        med = {m: {k: statistics.median(s[k] for s in samples[m]) for k in samples[m][0]}
               for m in samples}
        res[situation] = {
            "inproc_total_s": med["inproc"]["total"], "fork_total_s": med["fork"]["total"],
            "inproc_emit_s": med["inproc"]["emit"], "fork_emit_s": med["fork"]["emit"],
            "bare_fork_s": med["inproc"]["bare_fork"],
            "fork_over_inproc": med["fork"]["total"] / med["inproc"]["total"],
            "emit_added_s": med["fork"]["emit"] - med["inproc"]["emit"],
        }
    return res


def report(res: dict) -> str:
    lines = [f"emission in a forked child vs in the process, first compile of saxpy "
             f"(median of {res['runs']} fresh processes each)", ""]
    lines.append(f"{'situation':10s} {'in-process':>11s} {'forked':>9s} {'ratio':>7s} "
                 f"{'emit in':>9s} {'emit fork':>10s} {'bare fork':>10s}")
    for situation in SITUATIONS:
        r = res[situation]
        lines.append(f"{situation:10s} {r['inproc_total_s'] * 1e3:9.1f}ms "
                     f"{r['fork_total_s'] * 1e3:7.1f}ms {r['fork_over_inproc']:7.3f} "
                     f"{r['inproc_emit_s'] * 1e3:7.2f}ms {r['fork_emit_s'] * 1e3:8.2f}ms "
                     f"{r['bare_fork_s'] * 1e3:8.2f}ms")
    lines.append("")
    lines.append("threshold for a fork-per-emission guard: ratio <= 1.05 "
                 + ", ".join(f"{s}: {'met' if res[s]['fork_over_inproc'] <= 1.05 else 'NOT met'}"
                             for s in SITUATIONS))
    return "\n".join(lines)


def main(argv=None) -> int:
    return bench_main(__doc__, measure, report, 9, "emit_fork.json", argv)


if __name__ == "__main__":
    sys.exit(main())
