"""Conformance kernels through the compiler's IR rewrites with LLVM's verifier after
each one (``gpux_fuzz.verifying_rewrites``: the target's map_ir, irtext's rewrites,
each rewrite of legalize.REWRITES): every kernel on the SPIR-V route (the route with
the legalize rewrites; its SPIR-V must pass ``spirv-val --target-env spv1.4``), every
third on the OpenCL C route and CUDA (their text rewrites are the shared irtext ones;
all of them take minutes, which the suite's budget does not have).  The random kernels
of the fuzzer get the same checks on every route (tests/test_fuzz.py,
benchmarks/fuzz.py)."""

from __future__ import annotations

import glob
import importlib.util
import os
import warnings

import pytest

import gpux_fuzz as F
import numba_gpux as gpux
from numba_gpux.dispatcher import GpuxFunction

HERE = os.path.dirname(__file__)
TARGETS = ("opencl", "opencl-c", "cuda")


def _conformance_kernels():
    out = []
    pattern = os.path.join(HERE, "..", "conformance", "*.py")
    for path in sorted(glob.glob(pattern)):
        name = os.path.splitext(os.path.basename(path))[0]
        if name in ("conftest", "skiplist", "__init__"):
            continue
        with open(path) as f:
            if "CONFORMANCE_KERNELS" not in f.read():
                continue
        spec = importlib.util.spec_from_file_location(f"gpux_verified_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except Exception:  # a module that does not import is its own suite's failure
            continue
        for k, sig in getattr(mod, "CONFORMANCE_KERNELS", ()):
            out.append((f"{name}.{getattr(k, '__name__', k)}", k, sig))
    return out


KERNELS = _conformance_kernels()


def _target(name):
    from numba_gpux.devices import resolve_target

    if name == "cuda":
        return resolve_target("cuda", cc=(8, 0))
    return resolve_target(name)


def _unexpressible(e: Exception) -> bool:
    """A kernel a target refuses by design (a clear user-facing error), not a defect."""
    from numba_gpux.targets.cfamily import SourceEmitError

    return isinstance(e, (gpux.errors.ValidationError, gpux.errors.UnsupportedError,
                          SourceEmitError))


def _params():
    return [pytest.param(k, s, t, id=f"{i}-{t}") for n, (i, k, s) in enumerate(KERNELS)
            for t in TARGETS if t == "opencl" or n % 3 == 0]


@pytest.mark.parametrize("kernel, sig, target", _params())
def test_every_rewrite_leaves_valid_ir(kernel, sig, target):
    tgt = _target(target)
    # a fresh dispatcher: the kernel's code may already be cached by other tests
    fresh = (GpuxFunction(kernel.py_func, device=False, options=kernel.options)
             if isinstance(kernel, GpuxFunction) else kernel)
    with warnings.catch_warnings(), F.verifying_rewrites():
        warnings.simplefilter("ignore")
        try:
            art = gpux.compile(fresh, sig, target=tgt)
        except Exception as e:
            if _unexpressible(e):
                pytest.skip(f"{target} refuses this kernel by design: {str(e).splitlines()[0]}")
            raise
    if target == "opencl":
        if F.spirv_val_path() is None:
            return
        F.spirv_val_check(art.binary)


def test_kernels_were_found():
    names = {i.split(".")[0] for i, _, _ in KERNELS}
    assert {"test_atomics", "test_memory", "test_print", "test_sync"} <= names
    assert len(KERNELS) > 50
