"""Kernel entry symbols are ASCII identifiers on every target, unique per signature.

Python function names and the field names of record dtypes may hold any Unicode
character, and both reach the entry symbol (its readable part spells the function's
name and argument types).  LLVM's NVPTX back end aborts the process on a symbol
with characters PTX cannot spell ("LLVM ERROR: Symbol name with unsupported
characters"), so such a kernel is compiled here in a child process: a regression
fails the test with the child's output instead of killing pytest.  The child
compiles PTX (checked with ptxas where one is installed), compiles for every
built-in target, and runs the kernel on the OpenCL CPU device against NumPy.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

from numba_gpux.compiler import kernel_symbol

ROOT = Path(__file__).resolve().parents[2]

FIELD = "ünï ✓ λ→∞"

_CHILD = '''
import json, sys
import numba
import numpy as np
import numba_gpux as gpux

DTYPES = {"f4": np.dtype([("ünï ✓ λ→∞", np.float32), ("b", np.int32)]),
          "f8": np.dtype([("ünï ✓ λ→∞", np.float64), ("b", np.int32)])}


@gpux.jit
def kérnel_λ(out, r):
    i = gpux.grid(1)
    if i < out.shape[0]:
        out[i] = r[i]["ünï ✓ λ→∞"] * 2 + r[i]["b"]


@gpux.jit
def cöpy_μ(out, r):  # float32 only, which every target takes (Metal has no float64)
    i = gpux.grid(1)
    if i < out.shape[0]:
        out[i] = r[i]["ünï ✓ λ→∞"]


def sig(dt):
    return (numba.float64[::1], numba.from_dtype(dt)[::1])


got = {}
for key, dt in DTYPES.items():
    art = gpux.compile(kérnel_λ, sig(dt), target="cuda", cubin=False)
    got["cuda_" + key] = {"kernels": list(art.kernels), "ptx": art.text}
for target in ("cuda", "opencl", "opencl-c", "metal"):  # compiled only: no device needed
    art = gpux.compile(cöpy_μ, (numba.float32[::1], numba.from_dtype(DTYPES["f4"])[::1]),
                       target=target)
    got["copy_" + target] = {"kernels": list(art.kernels)}
if len(sys.argv) > 1:
    dev = gpux.select_device(sys.argv[1])
    for key, dt in DTYPES.items():
        art = gpux.compile(kérnel_λ, sig(dt), target=dev)
        r = np.zeros(5, dtype=dt)
        r["ünï ✓ λ→∞"] = np.arange(5) + 0.5
        r["b"] = np.arange(5) * 10
        out = gpux.to_device(np.zeros(5))
        kérnel_λ[1, 8](out, gpux.to_device(r))
        want = r["ünï ✓ λ→∞"].astype(np.float64) * 2 + r["b"]
        got["opencl_" + key] = {"kernels": list(art.kernels),
                                "got": out.copy_to_host().tolist(), "want": want.tolist()}
print("RESULT " + json.dumps(got), flush=True)
'''


def _ascii_identifier(s: str) -> bool:
    return s.isascii() and s.isidentifier()


def test_symbols_of_unicode_names_and_record_fields_are_ascii_identifiers():
    ns = {}
    exec("def kérnel_λ(out, r):\n    pass\n", ns)
    fn = ns["kérnel_λ"]
    recs = [numba.from_dtype(np.dtype([(FIELD, t), ("b", np.int32)]))[::1]
            for t in (np.float32, np.float64)]
    syms = [kernel_symbol(fn, (numba.float64[::1], r)) for r in recs]
    assert all(_ascii_identifier(s) for s in syms), syms
    assert syms[0] != syms[1]  # unique per signature
    assert syms[0] == kernel_symbol(fn, (numba.float64[::1], recs[0]))  # and stable
    exec("def λ(x):\n    pass\n", ns)  # a name with no ASCII character at all
    assert _ascii_identifier(kernel_symbol(ns["λ"], (numba.int32,)))


@pytest.fixture(scope="module")
def child(tmp_path_factory):
    import numba_gpux as gpux
    from gpux_testing import testable_here

    devs = [d for d in gpux.devices() if d.target_name == "opencl" and testable_here(d)]
    d = tmp_path_factory.mktemp("symbols")
    script = d / "unicode_kernel.py"
    script.write_text(_CHILD, encoding="utf-8")
    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(d / "cache"), PYTHONIOENCODING="utf-8")
    res = subprocess.run([sys.executable, str(script)] + ([devs[0].spec] if devs else []),
                         capture_output=True, text=True, encoding="utf-8", env=env,
                         cwd=str(ROOT), timeout=600)
    out = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    assert res.returncode == 0 and out, (
        f"the child died (rc {res.returncode}):\n{(res.stdout + res.stderr)[-3000:]}")
    return json.loads(out[-1][len("RESULT "):]), bool(devs)


def test_unicode_kernel_compiles_to_ptx_with_ascii_entry_symbols(child, ptxas):
    from numba_gpux.targets.cuda import toolkit

    got, _ = child
    syms = []
    for key in ("cuda_f4", "cuda_f8"):
        (sym,) = got[key]["kernels"]
        assert _ascii_identifier(sym), sym
        assert f".entry {sym}(" in got[key]["ptx"]
        syms.append(sym)
        cc = next((cc for cc in ((8, 0), (9, 0), (7, 5)) if toolkit.ptxas_supports(cc)), None)
        if cc is not None:
            ok, messages = toolkit.ptxas_check(got[key]["ptx"], cc)
            assert ok, messages
    assert syms[0] != syms[1]


@pytest.mark.parametrize("target", ["cuda", "opencl", "opencl-c", "metal"])
def test_every_target_writes_ascii_entry_symbols(child, target):
    got, _ = child
    (sym,) = got["copy_" + target]["kernels"]
    assert _ascii_identifier(sym), sym


def test_unicode_kernel_runs_on_the_opencl_device(child):
    got, have_device = child
    if not have_device:
        pytest.skip("no SPIR-V capable OpenCL device (pip install 'numba-gpux[cpu]')")
    for key in ("opencl_f4", "opencl_f8"):
        (sym,) = got[key]["kernels"]
        assert _ascii_identifier(sym), sym
        assert got[key]["got"] == got[key]["want"]
