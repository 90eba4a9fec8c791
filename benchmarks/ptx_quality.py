"""PTX code quality: numba-gpux's CUDA target next to numba-cuda, same kernels, same run.

Every kernel in ``benchmarks/ptx_kernels.py`` is numba.cuda source written once.
It is compiled with ``numba_gpux.cuda.compile_ptx`` (the facade over
``gpux.compile(..., target="cuda")``) and with numba-cuda's
``numba.cuda.compile_ptx`` (the same code with ``cuda`` re-bound to
``numba.cuda``), both for one compute capability; both PTX texts go through
the same ``ptxas -v`` and the report gives registers, spill bytes, stack frame
and PTX instruction counts with ratios (ours / numba-cuda).  Kernels that only
one side compiles are listed with the error and left out of the ratios.

Usage: python benchmarks/ptx_quality.py [--cc 9.0] [--filter TEXT] [--out FILE]
Needs ptxas; numba-cuda's column needs numba-cuda and libNVVM (else "n/a").
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import statistics
import sys
import time
import types as pytypes

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

__all__ = ["ptx_instructions", "measure", "main"]


def _load_kernels():
    path = os.path.join(HERE, "ptx_kernels.py")
    spec = importlib.util.spec_from_file_location("gpux_ptx_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ptx_instructions(ptx: str) -> int:
    """Instructions in the bodies of the PTX's functions (labels, directives and
    declarations excluded)."""
    n = 0
    for body in re.findall(r"\)\s*\{(.*?)^\}", ptx, re.S | re.M):
        for line in body.splitlines():
            s = line.strip()
            if not s or s.startswith(("//", ".", "$", "{", "}")) or s.endswith(":"):
                continue
            n += 1
    return n


# ---------------------------------------------------------------- numba-cuda side

class _Rebinder:
    """The kernels' functions with ``cuda``, the ``cuda.random`` names and the
    device functions re-bound to numba.cuda's (one globals dict for the module)."""

    def __init__(self, kmod, cc):
        from numba import cuda
        import numba.cuda.dispatcher as ncdisp
        import numba.cuda.random as ncrand

        # numba-cuda compiles a device function called from a kernel for the
        # current device's capability, which needs a GPU; without one, the same
        # capability as the kernel (this changes only where the number comes from)
        try:
            ncdisp.get_current_device().compute_capability  # noqa: B018 - raises without a GPU
        except Exception:
            ncdisp.get_current_device = lambda: pytypes.SimpleNamespace(compute_capability=cc)

        g = dict(kmod.__dict__)
        g["cuda"] = cuda
        for name in kmod.RANDOM_NAMES:
            g[name] = getattr(ncrand, name)
        self.globals = g
        for name in kmod.DEVICE_FUNCTIONS:
            g[name] = cuda.jit(device=True)(self.rebind(getattr(kmod, name).py_func))

    def rebind(self, pyfunc):
        return pytypes.FunctionType(pyfunc.__code__, self.globals, pyfunc.__name__,
                                    pyfunc.__defaults__, pyfunc.__closure__)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    # numba's TypingError puts the useful line after the banner
    useful = [ln for ln in text if ln.strip() and not ln.startswith(("Failed in", "During:"))]
    return f"{type(e).__name__}: {(useful or text or [''])[0][:240]}"


# ---------------------------------------------------------------- main

def _resources(ptx: str, cc):
    from numba_gpux.targets.cuda import toolkit

    entries = list(toolkit.ptxas_resources(ptx, cc).values())
    if len(entries) != 1:
        raise RuntimeError(f"expected one .entry, ptxas reported {len(entries)}")
    r = dict(entries[0], ptx_insns=ptx_instructions(ptx))
    r["funcs"] = len(re.findall(r"^\.(?:visible |weak )?\.func", ptx, re.M))
    return r


def measure(cc, cases, kmod, verbose=False):
    """One row per (kernel, signature): both sides' ptxas resources and the ratios."""
    from numba import cuda as ncuda

    from numba_gpux import cuda as gcuda

    rebinder = _Rebinder(kmod, cc)
    rows = []
    for ident, group, fn, sig, opts in cases:
        row = {"kernel": ident, "group": group}
        try:
            t = time.perf_counter()
            ptx, _ = gcuda.compile_ptx(fn, sig(gcuda) if callable(sig) else sig, cc=cc, **opts)
            row["gpux_compile_s"] = round(time.perf_counter() - t, 4)
            row["gpux"] = _resources(ptx, cc)
        except Exception as e:  # report, keep going
            row["gpux"] = None
            row["gpux_error"] = _first_line(e)
        try:
            t = time.perf_counter()
            ptx, _ = ncuda.compile_ptx(rebinder.rebind(fn), sig(ncuda) if callable(sig) else sig,
                                       cc=cc, **opts)
            row["numba_cuda_compile_s"] = round(time.perf_counter() - t, 4)
            row["numba_cuda"] = _resources(ptx, cc)
        except Exception as e:
            row["numba_cuda"] = None
            row["numba_cuda_error"] = _first_line(e)
        a, b = row["gpux"], row["numba_cuda"]
        if a and b:
            row["ratio_registers"] = round(a["registers"] / b["registers"], 3) if b["registers"] else None
            row["ratio_ptx_insns"] = round(a["ptx_insns"] / b["ptx_insns"], 3) if b["ptx_insns"] else None
            row["goal_met"] = (a["registers"] <= b["registers"]
                               and a["spill_stores"] + a["spill_loads"]
                               <= b["spill_stores"] + b["spill_loads"])
        rows.append(row)
        if verbose:
            print(ident, row.get("gpux_error") or "", row.get("numba_cuda_error") or "",
                  file=sys.stderr, flush=True)
    return rows


def _fmt(v):
    return "-" if v is None else str(v)


def _spill(r):
    return r["spill_stores"] + r["spill_loads"]


def summarize(rows) -> dict:
    both = [r for r in rows if r.get("gpux") and r.get("numba_cuda")]
    out = {
        "kernels": len(rows),
        "compared": len(both),
        "more_registers": [r["kernel"] for r in both
                           if r["gpux"]["registers"] > r["numba_cuda"]["registers"]],
        "more_spills": [r["kernel"] for r in both if _spill(r["gpux"]) > _spill(r["numba_cuda"])],
        "fewer_registers": sum(1 for r in both
                               if r["gpux"]["registers"] < r["numba_cuda"]["registers"]),
        "equal_registers": sum(1 for r in both
                               if r["gpux"]["registers"] == r["numba_cuda"]["registers"]),
        "numba_cuda_only_failed": {r["kernel"]: r["numba_cuda_error"] for r in rows
                                   if r.get("gpux") and not r.get("numba_cuda")},
        "gpux_failed": {r["kernel"]: r["gpux_error"] for r in rows if not r.get("gpux")},
    }
    if both:
        regs = [r["ratio_registers"] for r in both if r.get("ratio_registers") is not None]
        ins = [r["ratio_ptx_insns"] for r in both if r.get("ratio_ptx_insns") is not None]
        out["median_register_ratio"] = round(statistics.median(regs), 3)
        out["max_register_ratio"] = max(regs)
        out["median_ptx_insn_ratio"] = round(statistics.median(ins), 3)
        out["total_registers"] = [sum(r["gpux"]["registers"] for r in both),
                                  sum(r["numba_cuda"]["registers"] for r in both)]
        out["goal_met"] = not out["more_registers"] and not out["more_spills"]
    return out


def print_table(rows, cc, summary):
    print(f"PTX quality for sm_{cc[0]}{cc[1]}: numba-gpux/numba-cuda registers, spill bytes "
          f"(stores+loads), PTX instructions; ratio = numba-gpux / numba-cuda")
    hdr = f"{'kernel':64} {'regs':>7} {'spill':>7} {'insns':>11} {'r.regs':>6} {'r.insn':>6}"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        a, b = r.get("gpux"), r.get("numba_cuda")
        regs = f"{_fmt(a and a['registers'])}/{_fmt(b and b['registers'])}"
        spill = f"{_fmt(a and _spill(a))}/{_fmt(b and _spill(b))}"
        ins = f"{_fmt(a and a['ptx_insns'])}/{_fmt(b and b['ptx_insns'])}"
        flag = " <-- more registers" if a and b and a["registers"] > b["registers"] else ""
        print(f"{r['kernel'][:64]:64} {regs:>7} {spill:>7} {ins:>11} "
              f"{_fmt(r.get('ratio_registers')):>6} {_fmt(r.get('ratio_ptx_insns')):>6}{flag}")
    s = summary
    print(f"\nkernels compared: {s['compared']} of {s['kernels']}; fewer registers than "
          f"numba-cuda: {s['fewer_registers']}, equal: {s['equal_registers']}, more: "
          f"{len(s['more_registers'])}; more spills: {len(s['more_spills'])}")
    for k in s["more_registers"]:
        print(f"  more registers: {k}")
    for k in s["more_spills"]:
        print(f"  more spills: {k}")
    if s["compared"]:
        print(f"median register ratio {s['median_register_ratio']:.3f} (max "
              f"{s['max_register_ratio']:.3f}), median PTX-instruction ratio "
              f"{s['median_ptx_insn_ratio']:.3f}; goal met: {s['goal_met']}")
    for k, e in s["numba_cuda_only_failed"].items():
        print(f"  numba-cuda cannot compile {k}: {e}")
    for k, e in s["gpux_failed"].items():
        print(f"  numba-gpux cannot compile {k}: {e}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cc", default="9.0", help="compute capability, e.g. 8.0 or 9.0")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "ptx_quality.json"))
    ap.add_argument("--filter", default="", help="only kernels whose id contains this")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    cc = tuple(int(x) for x in args.cc.split("."))
    sys.path.insert(0, ROOT)
    from numba_gpux.targets.cuda import toolkit

    if toolkit.find_ptxas() is None:
        print("ptxas is not installed: nothing to measure", file=sys.stderr)
        return 2
    kmod = _load_kernels()
    rows = measure(cc, kmod.cases(args.filter), kmod, args.verbose)
    summary = summarize(rows)
    print_table(rows, cc, summary)
    try:
        from importlib.metadata import version

        ncv = version("numba-cuda")
    except Exception:
        ncv = None
    import llvmlite

    result = {"benchmark": "ptx_quality", "cc": list(cc), "ptxas": toolkit.find_ptxas(),
              "numba_cuda": ncv, "llvmlite": llvmlite.__version__,
              "python": platform.python_version(), "kernel_source": "benchmarks/ptx_kernels.py",
              "summary": summary, "rows": rows}
    if args.out and not args.filter:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
        print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
