"""Compile latency: the first kernel, a second target, a new argument signature.

Every number comes from fresh processes (several, interleaved with the
references so that load on the machine hits every column alike); the table
gives medians.

* first kernel: a fresh process compiles a saxpy kernel to SPIR-V
  (``gpux.compile(k, sig, target="opencl").binary``) or to PTX
  (``target="cuda", cubin=False``: PTX text only, as numba-cuda's
  ``compile_ptx`` gives), import excluded and included; next to numba-cuda's
  first ``numba.cuda.compile_ptx`` of the same kernel (cc 9.0) and numba's
  first ``@njit`` compile of the same computation (eager signature);
* second target: the same kernel object compiled for the other target after
  the first (the target-neutral typed and lowered IR is reused);
* the same with the context warm: before the timed kernel, another kernel
  has been typed and lowered in the process (as after a first kernel, or
  with the disk cache), so the first compile is fast and the second target's
  own first-use costs weigh more; also for a kernel calling ``math.sin``
  (libdevice on CUDA);
* new argument signature: the first launch with new argument types of a
  kernel whose code for them is already compiled, with a runtime whose
  load/prepare/launch are no-ops (host-side cost alone, typing and code
  generation excluded).

* a chain: a kernel calling a chain of N device functions (N = 8 and 32), each its
  own ``jit(device=True)`` calling the previous one, compiled to PTX in a fresh process,
  next to numba-cuda's ``compile_ptx`` of the same source; the difference between the
  two lengths gives the cost of one more device function.  numba-cuda compiles each
  device function for the compute capability of the current device, which needs a
  CUDA driver and creates a context; the benchmark makes it see cc 9.0 (compile_ptx's)
  without one, so no driver is needed and no context creation is timed.

* against an earlier numba-gpux (``--baseline PATH``, a checkout of it, e.g. a git
  worktree of an older commit): the first-kernel rows again with that tree first on
  ``PYTHONPATH``, interleaved, and the ratio this tree / baseline; e.g. a kernel that
  makes no arrays compiles as fast as before the device runtime existed.  A row for a
  kernel that makes an array (``np.zeros``, the device runtime) is measured too.

Goals: first kernel <= 0.35x numba-cuda's first compile_ptx; second
target <= 0.15x the first; new signature < 0.5 ms; the chain of 32 <= 0.5x
numba-cuda's.

The numba-cuda column runs in this interpreter unless ``NUMBA_CUDA_PYTHON`` names
another, with the numba-cuda distribution installed (it replaces Numba's bundled
``numba.cuda``, so it is usually kept out of the environment that runs numba-gpux):
e.g. ``python -m venv /tmp/ncv && /tmp/ncv/bin/pip install "numba-cuda[cu13]"`` and
``NUMBA_CUDA_PYTHON=/tmp/ncv/bin/python`` (the extra brings NVVM and NVRTC, which
``compile_ptx`` needs; no GPU or driver is needed).

Usage: python benchmarks/bench_compile.py [--runs 7] [--out FILE] [--baseline PATH]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_import import bench_main, child_env, goal_lines, machine  # noqa: E402

RESULTS = os.path.join(HERE, "results")
SIG = "void(float32, float32[::1], float32[::1], float32[::1])"
GOALS = {"first_over_numba_cuda": 0.35, "second_over_first": 0.15, "new_signature_ms": 0.5,
         "chain_over_numba_cuda": 0.5}

__all__ = ["main", "measure"]

_PRELUDE = f"""
import json, sys, time
T = time.perf_counter
SIG = {SIG!r}
"""

# numba-gpux: import, first target, second target (same kernel object)
_GPUX = _PRELUDE + """
first, second = sys.argv[1], sys.argv[2]
t0 = T()
import numba_gpux as gpux
t1 = T()

def saxpy(a, x, y, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]

def sin_saxpy(a, x, y, out):  # math: on CUDA, libdevice's sinf
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a * math.sin(x[i]) + y[i]

def build(target):
    if target == "cuda":
        return gpux.compile(k, SIG, target="cuda", cubin=False).text   # PTX only
    return gpux.compile(k, SIG, target=target).binary                  # SPIR-V

if len(sys.argv) > 3:  # warm: the shared context built and typing run by another kernel
    def other(a, x, y, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = a - x[i]
    from numba.core import sigutils
    gpux.jit(other).kernel_ir(tuple(sigutils.normalize_signature(SIG)[0]))

def scratch_saxpy(a, x, y, out):  # makes an array: the device runtime
    i = gpux.grid(1)
    if i < out.size:
        t = np.zeros(4, np.float32)
        t[0] = x[i]
        out[i] = a * t[0] + y[i]

import math
import numpy as np
k = gpux.jit(sin_saxpy if "math" in sys.argv[3:] else
             scratch_saxpy if "heap" in sys.argv[3:] else saxpy)
C = time.process_time
t2 = T(); c2 = C(); build(first); t3 = T(); c3 = C(); build(second); t4 = T(); c4 = C()
print(json.dumps({"import": t1 - t0, "first": t3 - t2, "second": t4 - t3,
                  "first_cpu": c3 - c2, "second_cpu": c4 - c3}))
"""

_NUMBA_CUDA = _PRELUDE + """
t0 = T()
from numba import cuda
t1 = T()

def saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]

t2 = T(); ptx, _ = cuda.compile_ptx(saxpy, SIG, cc=(9, 0)); t3 = T()
print(json.dumps({"import": t1 - t0, "first": t3 - t2}))
"""

_NJIT = _PRELUDE + """
t0 = T()
import numba
t1 = T()

def saxpy(a, x, y, out):
    for i in range(out.size):
        out[i] = a * x[i] + y[i]

t2 = T(); numba.njit(SIG)(saxpy); t3 = T()
print(json.dumps({"import": t1 - t0, "first": t3 - t2}))
"""

# new argument signatures: code compiled beforehand, driver calls made no-ops
_NEWSIG = _PRELUDE + """
import numpy as np
import numba_gpux as gpux
from numba_gpux.launch import _typeof

class NullRuntime:
    # the device's runtime with the driver calls of a launch left out
    def __init__(self, real):
        self._real = real
    def __getattr__(self, name):
        return getattr(self._real, name)
    def load(self, artifact):
        return object()
    def kernel(self, program, name):
        return object()
    def prepare(self, kernel, params):
        pass
    def launch(self, *args):
        pass

@gpux.jit
def fill(a, v):
    i = gpux.grid(1)
    if i < a.size:
        a[i] = v

dev = gpux.default_device()
arrays = [gpux.to_device(np.zeros(n, dt)) for n, dt in
          ((16, np.float32), (16, np.float64), (16, np.int32), (16, np.int64), (16, np.uint8),
           (16, np.int16))]
values = [np.float32(1), 2.0, np.int32(3), 4, np.uint8(5), np.int16(6)]
for a, v in zip(arrays, values):   # typing and code generation, done before timing
    fill.code_for(tuple(map(_typeof, (a, v))), dev.target)
dev.runtime = NullRuntime(dev.runtime)
cfg = fill[1, 16]
first, again = [], []
for a, v in zip(arrays, values):
    t0 = T(); cfg(a, v); t1 = T(); cfg(a, v); t2 = T()
    first.append(t1 - t0); again.append(t2 - t1)
print(json.dumps({"new_signature": first, "same_signature": again,
                  "target_compiles": fill.stats["target_compiles"]}))
"""

# a kernel calling a chain of N device functions, each its own jit(device=True) calling
# the previous one: the first compile to PTX in a fresh process (import excluded)
_CHAIN = _PRELUDE + """
import importlib, os, tempfile
n, api = int(sys.argv[1]), sys.argv[2]
jit = "gpux.jit" if api == "gpux" else "cuda.jit"
src = ["import numba_gpux as gpux" if api == "gpux" else "from numba import cuda", "",
       f"@{jit}(device=True)", "def f0(x):", "    return x * 1.0001 + 0.5", ""]
for i in range(1, n):
    src += [f"@{jit}(device=True)", f"def f{i}(x):", f"    return f{i - 1}(x) * 1.0001 + {i}.5", ""]
src += ["def k(out, x):", f"    i = {'gpux' if api == 'gpux' else 'cuda'}.grid(1)",
        "    if i < out.size:", f"        out[i] = f{n - 1}(x[i])", ""]
d = tempfile.mkdtemp()
with open(os.path.join(d, "chain_mod.py"), "w") as f:
    f.write(chr(10).join(src))
sys.path.insert(0, d)
t0 = T()
if api == "gpux":
    import numba_gpux as gpux
else:
    from numba import cuda
    import types as _t
    import numba.cuda.dispatcher as _d
    # numba-cuda compiles a device function called from a kernel for the current
    # device's compute capability (a CUDA context); answer compile_ptx's cc instead
    _d.get_current_device = lambda: _t.SimpleNamespace(compute_capability=(9, 0))
t1 = T()
m = importlib.import_module("chain_mod")
S = "void(float32[::1], float32[::1])"
t2 = T(); c2 = time.process_time()
if api == "gpux":
    gpux.compile(m.k, S, target="cuda", cubin=False)
else:
    cuda.compile_ptx(m.k, S, cc=(9, 0))
t3 = T(); c3 = time.process_time()
print(json.dumps({"import": t1 - t0, "first": t3 - t2, "first_cpu": c3 - c2}))
"""
#: chain lengths measured
CHAIN_LENGTHS = (8, 32)

CASES = {
    "gpux_spirv_first": (_GPUX, ["opencl", "cuda"]),
    "gpux_ptx_first": (_GPUX, ["cuda", "opencl"]),
    "gpux_spirv_first_warm": (_GPUX, ["opencl", "cuda", "warm"]),
    "gpux_ptx_first_warm": (_GPUX, ["cuda", "opencl", "warm"]),
    "gpux_math_spirv_first_warm": (_GPUX, ["opencl", "cuda", "warm", "math"]),
    "gpux_heap_spirv_first_warm": (_GPUX, ["opencl", "cuda", "warm", "heap"]),
    "numba_cuda": (_NUMBA_CUDA, []),
    "numba_njit": (_NJIT, []),
    "new_signature": (_NEWSIG, []),
    **{f"gpux_chain_{n}": (_CHAIN, [str(n), "gpux"]) for n in CHAIN_LENGTHS},
    **{f"numba_cuda_chain_{n}": (_CHAIN, [str(n), "numba_cuda"]) for n in CHAIN_LENGTHS},
}


#: the first-kernel cases measured again against ``--baseline``
BASELINE_CASES = ("gpux_spirv_first", "gpux_ptx_first", "gpux_spirv_first_warm",
                  "gpux_ptx_first_warm")
#: ``--baseline``: a checkout of an earlier numba-gpux (None: not measured)
BASELINE: str | None = None


def _cases() -> dict:
    cases = dict(CASES)
    if BASELINE:
        cases.update({f"baseline_{k}": CASES[k] for k in BASELINE_CASES})
    return cases


def _env_of(name: str, env: dict) -> dict:
    """A row's environment: this checkout first on PYTHONPATH, or for the baseline rows
    the baseline tree, and the working directory left off ``sys.path``
    (``PYTHONSAFEPATH``): ``python -c`` puts it first, so run from a checkout's root
    every row measured that checkout, the baseline rows included."""
    env = dict(env)
    tree = BASELINE if name.startswith("baseline_") else os.path.dirname(HERE)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (tree, env.get("PYTHONPATH")) if p)
    env["PYTHONSAFEPATH"] = "1"
    return env


#: the interpreter of the numba-cuda column (see the module's docstring)
REFERENCE_PYTHON = os.environ.get("NUMBA_CUDA_PYTHON") or sys.executable


def _python(name: str) -> str:
    return REFERENCE_PYTHON if name.startswith("numba_cuda") else sys.executable


def _reference_version():
    """The numba-cuda version of the reference interpreter (None: not installed)."""
    p = subprocess.run([REFERENCE_PYTHON, "-c", "import importlib.metadata as m; "
                        "print(m.version('numba-cuda'))"], capture_output=True, text=True,
                       timeout=120)
    return p.stdout.strip() or None if p.returncode == 0 else None


def _run(code: str, args: list, env: dict, python: str = sys.executable) -> dict:
    p = subprocess.run([python, "-c", code, *args], env=env, capture_output=True,
                       text=True, timeout=600)
    if p.returncode != 0:
        err = [ln.strip() for ln in p.stderr.splitlines() if len(ln.strip()) > 2]
        said = [ln for ln in err if "Error" in ln.split(":")[0]]  # the exception's line
        raise RuntimeError((said or err or [f"exit {p.returncode}"])[-1])
    return json.loads(p.stdout.strip().splitlines()[-1])


def measure(runs: int) -> dict:
    env = child_env()
    cases = _cases()
    samples: dict[str, list] = {k: [] for k in cases}
    errors: dict[str, str] = {}
    for name, (code, args) in cases.items():  # warm the bytecode cache; find what runs
        try:
            _run(code, args, _env_of(name, env), _python(name))
        except Exception as e:
            errors[name] = str(e)
    for _ in range(runs):
        for name, (code, args) in cases.items():
            if name not in errors:
                samples[name].append(_run(code, args, _env_of(name, env), _python(name)))

    def med(name, field):
        vals = [s[field] for s in samples[name]]
        return statistics.median(vals) if vals else None

    out: dict = {"benchmark": "compile", "runs": runs, "signature": SIG, "errors": errors,
                 "samples": samples, "median_s": {}, "ratios": {}, "goals": {}}
    m = out["median_s"]
    for name in ("gpux_spirv_first", "gpux_ptx_first", "gpux_spirv_first_warm",
                 "gpux_ptx_first_warm", "gpux_math_spirv_first_warm",
                 "gpux_heap_spirv_first_warm", "numba_cuda",
                 "numba_njit", *(f"{a}_chain_{n}" for a in ("gpux", "numba_cuda")
                                 for n in CHAIN_LENGTHS),
                 *(f"baseline_{k}" for k in BASELINE_CASES)):
        if samples.get(name):
            m[name] = {f: med(name, f) for f in samples[name][0]}
            m[name]["import+first"] = statistics.median(
                s["import"] + s["first"] for s in samples[name])
    if samples["new_signature"]:
        flat = [t for s in samples["new_signature"] for t in s["new_signature"]]
        same = [t for s in samples["new_signature"] for t in s["same_signature"]]
        m["new_signature"] = {"first_launch": statistics.median(flat),
                              "same_signature_again": statistics.median(same),
                              "target_compiles_while_timed": max(
                                  s["target_compiles"] for s in samples["new_signature"]) - 6}
    r = out["ratios"]
    nc = m.get("numba_cuda")
    for ours in ("gpux_spirv_first_warm", "gpux_ptx_first_warm", "gpux_math_spirv_first_warm"):
        if ours in m:
            r[f"{ours}: second/first"] = m[ours]["second"] / m[ours]["first"]
            r[f"{ours}: second/first (CPU time)"] = m[ours]["second_cpu"] / m[ours]["first_cpu"]
    for ours in ("gpux_spirv_first", "gpux_ptx_first"):
        if ours in m:
            r[f"{ours}: second/first"] = m[ours]["second"] / m[ours]["first"]
            if nc:
                r[f"{ours}: first/numba_cuda_first"] = m[ours]["first"] / nc["first"]
                r[f"{ours}: import+first/numba_cuda_import+first"] = (
                    m[ours]["import+first"] / nc["import+first"])
            if "numba_njit" in m:
                r[f"{ours}: first/njit_first"] = m[ours]["first"] / m["numba_njit"]["first"]
    for k in BASELINE_CASES:
        if k in m and f"baseline_{k}" in m:
            r[f"{k}: first/baseline first"] = m[k]["first"] / m[f"baseline_{k}"]["first"]
    if BASELINE:
        out["baseline"] = BASELINE
    for n in CHAIN_LENGTHS:
        ours, ref = m.get(f"gpux_chain_{n}"), m.get(f"numba_cuda_chain_{n}")
        if ours and ref:
            r[f"chain of {n} device functions: first/numba_cuda_first"] = \
                ours["first"] / ref["first"]
            # CPU time: on a loaded machine the less noisy of the two (both compile
            # in-process, numba-cuda's NVVM included)
            r[f"chain of {n} device functions: first/numba_cuda_first (CPU time)"] = \
                ours["first_cpu"] / ref["first_cpu"]
    lo, hi = (m.get(f"gpux_chain_{n}") for n in (CHAIN_LENGTHS[0], CHAIN_LENGTHS[-1]))
    if lo and hi:  # the cost of one more device function in the chain
        out["chain_per_function_s"] = (hi["first"] - lo["first"]) / (
            CHAIN_LENGTHS[-1] - CHAIN_LENGTHS[0])
        out["chain_per_function_cpu_s"] = (hi["first_cpu"] - lo["first_cpu"]) / (
            CHAIN_LENGTHS[-1] - CHAIN_LENGTHS[0])
    lo, hi = (m.get(f"numba_cuda_chain_{n}") for n in (CHAIN_LENGTHS[0], CHAIN_LENGTHS[-1]))
    if lo and hi:
        out["numba_cuda_chain_per_function_s"] = (hi["first"] - lo["first"]) / (
            CHAIN_LENGTHS[-1] - CHAIN_LENGTHS[0])
    g = out["goals"]
    for ours in ("gpux_spirv_first_warm", "gpux_ptx_first_warm"):
        key = f"{ours}: second/first"
        if key in r:
            g[key] = {"max": GOALS["second_over_first"], "value": r[key],
                      "met": r[key] <= GOALS["second_over_first"]}
    for ours in ("gpux_spirv_first", "gpux_ptx_first"):
        key = f"{ours}: first/numba_cuda_first"
        if key in r:
            g[key] = {"max": GOALS["first_over_numba_cuda"], "value": r[key],
                      "met": r[key] <= GOALS["first_over_numba_cuda"]}
        key = f"{ours}: second/first"
        if key in r:
            g[key] = {"max": GOALS["second_over_first"], "value": r[key],
                      "met": r[key] <= GOALS["second_over_first"]}
    key = f"chain of {CHAIN_LENGTHS[-1]} device functions: first/numba_cuda_first"
    if key in r:
        g[key] = {"max": GOALS["chain_over_numba_cuda"], "value": r[key],
                  "met": r[key] <= GOALS["chain_over_numba_cuda"]}
    if "new_signature" in m:
        v = m["new_signature"]["first_launch"] * 1e3
        g["new_signature_ms"] = {"max": GOALS["new_signature_ms"], "value": v,
                                 "met": v < GOALS["new_signature_ms"]}
    out["machine"] = machine()
    out["machine"]["versions"]["numba_cuda"] = _reference_version()
    out["reference_python"] = REFERENCE_PYTHON
    return out


def _reference_label(res: dict) -> str:
    """numba-cuda's compile_ptx, or numba's own (deprecated) numba.cuda where the
    numba-cuda distribution is not installed: ``from numba import cuda`` is then
    Numba's bundled copy, whose first compile is several times faster."""
    ver = res.get("machine", {}).get("versions", {}).get("numba_cuda")
    if ver:
        return f"numba-cuda {ver} `compile_ptx` (cc 9.0)"
    return "numba's bundled numba.cuda `compile_ptx` (cc 9.0; numba-cuda not installed)"


def report(res: dict) -> str:
    m = res["median_s"]
    ms = lambda v: f"{v * 1e3:.0f}" if v is not None else "-"  # noqa: E731
    rows = [("numba-gpux, SPIR-V first, then PTX", "gpux_spirv_first"),
            ("numba-gpux, PTX first, then SPIR-V", "gpux_ptx_first"),
            ("numba-gpux, context warm, SPIR-V first, then PTX", "gpux_spirv_first_warm"),
            ("numba-gpux, context warm, PTX first, then SPIR-V", "gpux_ptx_first_warm"),
            ("numba-gpux, context warm, math (sin) kernel, SPIR-V first, then PTX",
             "gpux_math_spirv_first_warm"),
            ("numba-gpux, context warm, kernel making an array (np.zeros), SPIR-V first, "
             "then PTX", "gpux_heap_spirv_first_warm"),
            *((f"baseline ({res.get('baseline')}): {k}", f"baseline_{k}")
              for k in BASELINE_CASES if res.get("baseline")),
            (_reference_label(res), "numba_cuda"),
            ("numba `@njit` (CPU)", "numba_njit"),
            *((f"numba-gpux, kernel calling a chain of {n} device functions, PTX",
               f"gpux_chain_{n}") for n in CHAIN_LENGTHS),
            *((f"the same chain of {n}, {_reference_label(res)}", f"numba_cuda_chain_{n}")
              for n in CHAIN_LENGTHS)]
    lines = ["| fresh process | import (ms) | first kernel (ms) | import + first (ms) "
             "| second target (ms) |", "| --- | --- | --- | --- | --- |"]
    for label, key in rows:
        if key in m:
            v = m[key]
            lines.append(f"| {label} | {ms(v['import'])} | {ms(v['first'])} | "
                         f"{ms(v['import+first'])} | {ms(v.get('second'))} |")
        else:
            lines.append(f"| {label} | n/a: {res['errors'].get(key, '')} | | | |")
    if "new_signature" in m:
        ns = m["new_signature"]
        lines.append("")
        lines.append(f"new argument signature, first launch, code already compiled, driver "
                     f"calls left out: {ns['first_launch'] * 1e6:.0f} us "
                     f"(the same signature again: {ns['same_signature_again'] * 1e6:.1f} us)")
    if "chain_per_function_s" in res:
        lines.append("")
        ref = res.get("numba_cuda_chain_per_function_s")
        lines.append(f"each further device function in the chain: "
                     f"{res['chain_per_function_s'] * 1e3:.1f} ms "
                     f"({res['chain_per_function_cpu_s'] * 1e3:.1f} ms CPU time)"
                     + (f"; numba-cuda: {ref * 1e3:.1f} ms" if ref else ""))
    lines.append("")
    lines.append("| ratio | value |")
    lines.append("| --- | --- |")
    for k, v in res["ratios"].items():
        lines.append(f"| {k} | {v:.3f} |")
    lines.append("")
    lines += goal_lines(res["goals"])
    return "\n".join(lines)


def main(argv=None) -> int:
    global BASELINE
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--baseline" in argv:
        at = argv.index("--baseline")
        BASELINE = os.path.abspath(argv[at + 1])
        del argv[at:at + 2]
    return bench_main(__doc__, measure, report, 7, "bench_compile.json", argv)


if __name__ == "__main__":
    sys.exit(main())
