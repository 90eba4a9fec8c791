"""PTX code quality: numba-gpux's CUDA target next to numba-cuda, same kernels, same run.

For every kernel in tests/targets/cuda/kernels.py and every conformance
kernel (``CONFORMANCE_KERNELS``), compile PTX with ``gpux.compile(...,
target="cuda")`` and with numba-cuda's ``numba.cuda.compile_ptx`` (the gpux
kernel's Python source re-bound to ``numba.cuda``'s names), run both through
the same ``ptxas -v`` for one ``sm_XX`` and report registers, spill bytes,
stack frame and PTX instruction counts, with ratios (ours / numba-cuda).

Usage: python benchmarks/ptx_quality.py [--cc 9.0] [--out benchmarks/results/ptx_quality.json]
Needs ptxas; numba-cuda's column needs numba-cuda and libNVVM (else "n/a").
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import sys
import time
import types as pytypes

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _load_kernels():
    path = os.path.join(ROOT, "tests", "targets", "cuda", "kernels.py")
    spec = importlib.util.spec_from_file_location("gpux_cuda_bench_kernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.collect()


_INSN = re.compile(r"^\s+(?:@!?%p\d+\s+)?[a-z][\w.]*(?:\s|;)", re.M)


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

def _cuda_namespace():
    """An object standing in for the ``numba_gpux`` module inside a kernel's
    globals, with numba.cuda's spellings of the same things."""
    from numba import cuda

    ns = pytypes.ModuleType("numba_gpux_as_numba_cuda")
    ns.__dict__.update(
        grid=cuda.grid, gridsize=cuda.gridsize, thread_idx=cuda.threadIdx,
        block_idx=cuda.blockIdx, block_dim=cuda.blockDim, grid_dim=cuda.gridDim,
        barrier=cuda.syncthreads, barrier_count=cuda.syncthreads_count,
        barrier_and=cuda.syncthreads_and, barrier_or=cuda.syncthreads_or,
        fence_block=cuda.threadfence_block, fence_device=cuda.threadfence,
        fence_system=cuda.threadfence_system, fence=cuda.threadfence,
        shared=cuda.shared, local=cuda.local, const=cuda.const, atomic=cuda.atomic,
        popc=cuda.popc, clz=cuda.clz, ffs=cuda.ffs, brev=cuda.brev, fma=cuda.fma,
        cbrt=cuda.cbrt, select=cuda.selp,
    )
    return ns


def _globals_for(orig: dict, cache: dict) -> dict:
    """A copy of a module's globals with numba_gpux's names re-bound to numba.cuda's
    (one copy per module, shared by its kernels and device functions)."""
    import numba_gpux as gpux
    from numba import cuda

    key = id(orig)
    if key in cache:
        return cache[key]
    g = dict(orig)
    cache[key] = g
    ns = _cuda_namespace()
    for name, val in list(g.items()):
        if val is gpux:
            g[name] = ns
        elif val is getattr(gpux, "subgroup", object()):
            g[name] = None  # numba.cuda has no portable sub-group API
    for name, val in list(g.items()):
        if isinstance(val, gpux.GpuxFunction) and val.is_device:
            g[name] = cuda.jit(device=True)(_rebind(val.py_func, cache))
    return g


def _rebind(pyfunc, cache):
    """*pyfunc* with its globals re-bound to numba.cuda; device functions translated too."""
    return pytypes.FunctionType(pyfunc.__code__, _globals_for(pyfunc.__globals__, cache),
                                pyfunc.__name__, pyfunc.__defaults__, pyfunc.__closure__)


def numba_cuda_ptx(kernel, sig, cc, cache):
    from numba import cuda

    fn = _rebind(kernel.py_func, cache)
    ptx, _ = cuda.compile_ptx(fn, sig, cc=cc)
    return ptx


# ---------------------------------------------------------------- main

def measure(cc, cases, verbose=False):
    import numba_gpux as gpux
    from numba_gpux.targets.cuda import toolkit

    rows = []
    cache: dict = {}
    for ident, kernel, sig in cases:
        row = {"kernel": ident}
        try:
            t = time.perf_counter()
            art = gpux.compile(kernel, sig, target="cuda", cc=cc, cubin=False)
            row["gpux_compile_s"] = round(time.perf_counter() - t, 4)
            res = next(iter(toolkit.ptxas_resources(art.text, cc).values()))
            row["gpux"] = dict(res, ptx_insns=ptx_instructions(art.text))
        except Exception as e:  # report, keep going
            row["gpux"] = None
            row["gpux_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        try:
            ptx = numba_cuda_ptx(kernel, sig, cc, cache)
            res = toolkit.ptxas_resources(ptx, cc)
            entries = [v for v in res.values()]
            r = dict(entries[0], ptx_insns=ptx_instructions(ptx))
            r["funcs"] = len(re.findall(r"^\.(?:visible |weak )?\.func", ptx, re.M))
            row["numba_cuda"] = r
        except Exception as e:
            row["numba_cuda"] = None
            row["numba_cuda_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        if row["gpux"] and row["numba_cuda"]:
            a, b = row["gpux"], row["numba_cuda"]
            row["ratio_registers"] = round(a["registers"] / b["registers"], 3) if b["registers"] else None
            row["ratio_ptx_insns"] = round(a["ptx_insns"] / b["ptx_insns"], 3) if b["ptx_insns"] else None
        rows.append(row)
        if verbose:
            print(ident, row.get("gpux_error") or "", row.get("numba_cuda_error") or "",
                  file=sys.stderr)
    return rows


def _fmt(v):
    return "-" if v is None else str(v)


def print_table(rows, cc):
    print(f"PTX quality for sm_{cc[0]}{cc[1]}: registers / spill bytes (stores+loads) / "
          f"PTX instructions; ratio = numba-gpux / numba-cuda")
    hdr = f"{'kernel':58} {'regs':>9} {'spill':>9} {'insns':>11} {'r.regs':>7} {'r.insn':>7}"
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        a, b = r.get("gpux"), r.get("numba_cuda")
        regs = f"{_fmt(a and a['registers'])}/{_fmt(b and b['registers'])}"
        spill = (f"{_fmt(a and a['spill_stores'] + a['spill_loads'])}/"
                 f"{_fmt(b and b['spill_stores'] + b['spill_loads'])}")
        ins = f"{_fmt(a and a['ptx_insns'])}/{_fmt(b and b['ptx_insns'])}"
        print(f"{r['kernel'][:58]:58} {regs:>9} {spill:>9} {ins:>11} "
              f"{_fmt(r.get('ratio_registers')):>7} {_fmt(r.get('ratio_ptx_insns')):>7}")
    both = [r for r in rows if r.get("gpux") and r.get("numba_cuda")]
    more_regs = [r["kernel"] for r in both if r["gpux"]["registers"] > r["numba_cuda"]["registers"]]
    more_spill = [r["kernel"] for r in both
                  if r["gpux"]["spill_stores"] + r["gpux"]["spill_loads"]
                  > r["numba_cuda"]["spill_stores"] + r["numba_cuda"]["spill_loads"]]
    print(f"\nkernels compared: {len(both)} of {len(rows)}; "
          f"more registers than numba-cuda: {len(more_regs)}; more spills: {len(more_spill)}")
    for k in more_regs:
        print(f"  more registers: {k}")
    if both:
        import statistics

        print(f"median register ratio {statistics.median(r['ratio_registers'] for r in both):.3f}, "
              f"median PTX-instruction ratio "
              f"{statistics.median(r['ratio_ptx_insns'] for r in both):.3f}")
    return more_regs, more_spill


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
    cases = [c for c in _load_kernels() if args.filter in c[0]]
    rows = measure(cc, cases, args.verbose)
    more_regs, more_spill = print_table(rows, cc)
    try:
        import numba_cuda  # noqa: F401
        from importlib.metadata import version

        ncv = version("numba-cuda")
    except Exception:
        ncv = None
    import llvmlite

    result = {"benchmark": "ptx_quality", "cc": list(cc), "ptxas": toolkit.find_ptxas(),
              "numba_cuda": ncv, "llvmlite": llvmlite.__version__,
              "python": platform.python_version(), "rows": rows,
              "summary": {"kernels": len(rows),
                          "compared": sum(1 for r in rows if r.get("gpux") and r.get("numba_cuda")),
                          "more_registers": more_regs, "more_spills": more_spill}}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
