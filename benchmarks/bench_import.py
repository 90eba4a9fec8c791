"""Import time: ``import numba_gpux`` next to ``import numba`` and numba-cuda's
``from numba import cuda``, each in fresh processes, interleaved, same run.

Also checks, in a fresh process, that ``import numba_gpux`` touches no GPU
driver, no OpenCL loader and no LLVM target: no ``pyopencl``/``cuda``/Metal
module in ``sys.modules``, no OpenCL/CUDA/NVVM library in ``/proc/self/maps``,
and no LLVM target registered (``llvmlite.binding.Target.from_triple`` fails
for the SPIR-V, NVPTX and host triples).

Goal: ``import numba_gpux`` at most 1.1x ``import numba``.

Usage: python benchmarks/bench_import.py [--runs 15] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results")

__all__ = ["main", "child_env"]

CASES = {
    "numba_gpux": "import numba_gpux",
    "numba": "import numba",
    "numba_cuda": "from numba import cuda",
}
GOAL = 1.1

_TIMER = """
import time
t0 = time.perf_counter()
{stmt}
t1 = time.perf_counter()
print(repr(t1 - t0))
"""

_PURITY = r"""
import sys, json
import numba_gpux  # noqa: F401
bad_mods = sorted(m for m in sys.modules
                  if m.split(".")[0] in ("pyopencl", "cupy", "Metal", "objc", "torch")
                  or m == "cuda" or m.startswith(("cuda.", "numba.cuda", "numba_cuda")))
libs = set()
with open("/proc/self/maps") as f:
    for line in f:
        path = line.split()[-1] if len(line.split()) >= 6 else ""
        base = path.rsplit("/", 1)[-1].lower()
        if any(k in base for k in ("opencl", "libcuda", "nvvm", "nvrtc", "intelocl", "libze",
                                   "pocl", "libmetal", "cudart")):
            libs.add(path)
from llvmlite import binding as ll
targets = []
for triple in ("spirv64-unknown-unknown", "nvptx64-nvidia-cuda", ll.get_process_triple()):
    try:
        ll.Target.from_triple(triple)
        targets.append(triple)
    except RuntimeError:
        pass
print(json.dumps({"modules": bad_mods, "libraries": sorted(libs), "llvm_targets": targets}))
"""


def child_env() -> dict:
    """Environment of the measured processes: bytecode caching on, in a private
    folder, so every package is timed from .pyc as a user's install would be
    (this machine sets PYTHONDONTWRITEBYTECODE)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "numba_gpux_bench_pyc")
    return env


def _run(code: str, env: dict) -> str:
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else "failed")
    return p.stdout.strip().splitlines()[-1]


def measure(runs: int) -> dict:
    env = child_env()
    times: dict[str, list] = {k: [] for k in CASES}
    errors: dict[str, str] = {}
    for name, stmt in CASES.items():  # warm the bytecode cache
        try:
            _run(_TIMER.format(stmt=stmt), env)
        except Exception as e:
            errors[name] = str(e)
    for _ in range(runs):  # interleaved: load on the machine hits every case alike
        for name, stmt in CASES.items():
            if name in errors:
                continue
            times[name].append(float(_run(_TIMER.format(stmt=stmt), env)))
    med = {k: statistics.median(v) for k, v in times.items() if v}
    purity = json.loads(_run(_PURITY, env))
    ratio = med["numba_gpux"] / med["numba"] if "numba" in med else None
    return {
        "benchmark": "import",
        "runs": runs,
        "median_s": med,
        "min_s": {k: min(v) for k, v in times.items() if v},
        "samples_s": times,
        "errors": errors,
        "ratio_gpux_over_numba": ratio,
        "ratio_gpux_over_numba_cuda": (med["numba_gpux"] / med["numba_cuda"]
                                       if "numba_cuda" in med else None),
        "goal": {"ratio_max": GOAL, "met": ratio is not None and ratio <= GOAL},
        "import_purity": purity,
        "import_purity_ok": not (purity["modules"] or purity["libraries"]
                                 or purity["llvm_targets"]),
        "machine": machine(),
    }


def write_result(path: str, res: dict) -> None:
    """Write a benchmark's result as JSON at *path* (folders made) and say where."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    print(f"\nwritten: {path}")



def goal_lines(goals: dict) -> list[str]:
    """One report line per goal ``{name: {"max", "met", "value"}}``."""
    return [f"goal {k} <= {g['max']}: {'met' if g['met'] else 'NOT met'} ({g['value']:.3f})"
            for k, g in goals.items()]


def bench_main(doc: str, measure, report, runs: int, result_name: str, argv=None) -> int:
    """The command line every one-number-of-runs benchmark shares: ``--runs`` and
    ``--out``; measure, print the report, write the JSON."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--runs", type=int, default=runs)
    ap.add_argument("--out", default=os.path.join(RESULTS, result_name))
    a = ap.parse_args(argv)
    res = measure(a.runs)
    print(report(res))
    write_result(a.out, res)
    return 0

def geomean_and_worst(ratios) -> tuple[float, float]:
    """The geometric mean and the largest of *ratios* (our time / a reference's)."""
    r = list(ratios)
    return math.exp(sum(map(math.log, r)) / len(r)), max(r)


def ratio_main(doc: str, measure, summary, reps: int, result_name: str, ok,
               argv=None) -> int:
    """The command line the benchmarks that time ours against a reference, launch by
    launch, share: ``--reps``, ``--seed``, ``--quick`` (one small case), ``--out``;
    ``measure(reps, seed, quick)``, print ``summary(res)``, write the JSON; 1 where
    ``ok(res)`` says a result did not match."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--reps", type=int, default=reps, help="timed launches of each")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="one small case")
    p.add_argument("--out", default=os.path.join(RESULTS, result_name))
    a = p.parse_args(argv)
    res = measure(a.reps, a.seed, a.quick)
    res["machine"] = machine()
    print(summary(res))
    if a.out:
        write_result(a.out, res)
    return 0 if ok(res) else 1


def machine() -> dict:
    """What the numbers were measured on."""
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    vers = {}
    for mod in ("numba", "llvmlite", "numpy", "pyopencl", "numba_cuda"):
        try:
            from importlib.metadata import version

            vers[mod] = version(mod.replace("_", "-"))
        except Exception:
            vers[mod] = None
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    return {"cpu": cpu, "nproc": os.cpu_count(), "python": platform.python_version(),
            "platform": platform.platform(), "versions": vers, "loadavg": load}


def report(res: dict) -> str:
    med, mn = res["median_s"], res["min_s"]
    lines = ["| import | median (ms) | min (ms) | ratio to `import numba` |",
             "| --- | --- | --- | --- |"]
    for name, stmt in CASES.items():
        if name in med:
            r = med[name] / med["numba"] if "numba" in med else float("nan")
            lines.append(f"| `{stmt}` | {med[name] * 1e3:.0f} | {mn[name] * 1e3:.0f} | {r:.2f} |")
        else:
            lines.append(f"| `{stmt}` | n/a ({res['errors'].get(name, '')}) | | |")
    g = res["goal"]
    lines.append("")
    lines.append(f"goal: import numba_gpux <= {g['ratio_max']}x import numba: "
                 f"{'met' if g['met'] else 'NOT met'} "
                 f"({res['ratio_gpux_over_numba']:.3f}x)")
    p = res["import_purity"]
    lines.append(f"import touches no driver/loader/LLVM target: "
                 f"{'yes' if res['import_purity_ok'] else 'NO'} "
                 f"(GPU modules {p['modules'] or 'none'}, libraries {p['libraries'] or 'none'}, "
                 f"LLVM targets {p['llvm_targets'] or 'none'})")
    return "\n".join(lines)


def main(argv=None) -> int:
    return bench_main(__doc__, measure, report, 15, "bench_import.json", argv)


if __name__ == "__main__":
    sys.exit(main())
