"""Each IR rewrite of legalize.py, alone and all in order, on the optimized IR of every
conformance kernel (and the CUDA suite's kernels, tests/targets/cuda/kernels.py),
leaves IR that LLVM's verifier accepts.  The IR is the OpenCL target's, compiled
without its rewrites, at opt=0 (where loops over tuples of structs leave aggregate
phis) and opt=3."""

from __future__ import annotations

import dataclasses
import importlib.util
import os

import numpy as np
import pytest
from llvmlite import binding as ll

import numba_gpux as gpux
from numba_gpux import legalize
from numba_gpux.targets.opencl.target import make_target

_spec = importlib.util.spec_from_file_location(
    "gpux_cuda_test_kernels",
    os.path.join(os.path.dirname(__file__), "..", "targets", "cuda", "kernels.py"))
K = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(K)



def _mul_adds(a, b, c, out):
    # a multiply-add and a multiply-subtract, which the numba.cuda facade's kernels may
    # fuse (their operations carry LLVM's contract flag): fuse_contracted's work
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a[i] * b[i] + c[i] - a[i] * c[i]


def _quantile(a, out):
    # np.percentile leaves a 0-d array's struct in private memory, with its shape and
    # strides arrays of no elements: zero_length_allocas' work
    out[0] = np.percentile(a, 30.0)


def _complex_product(x, y, out):
    # a complex128 element is two doubles: paired_accesses' work
    i = gpux.grid(1)
    if i < out.size:
        out[i] = x[i] * y[i]


def _facade(fn):
    from numba_gpux import cuda

    return cuda.jit(fn)


CASES = K.collect() + [("cuda_facade._mul_adds", _facade(_mul_adds),
                        "void(float32[::1], float32[::1], float32[::1], float32[::1])"),
                       ("_quantile", _quantile, "void(float64[::1], float64[::1])"),
                       ("_complex_product", _complex_product,
                        "void(complex128[::1], complex128[::1], complex128[::1])")]


def _bare_target():
    """The OpenCL target without its IR rewrites."""
    t = make_target()
    return dataclasses.replace(t, ir_rewrites=())


def _optimized_ir(kernel, sig, opt):
    """The kernel's IR after the optimizer, on the OpenCL target without its rewrites
    (not emitted: LLVM's SPIR-V back end aborts the process on what some rewrites
    are for)."""
    from numba.core import sigutils

    from numba_gpux.compiler import Options
    from numba_gpux.stages import Job, run_target_stages

    if not isinstance(kernel, gpux.dispatcher.GpuxFunction):
        kernel = gpux.jit(kernel)
    sym, text = kernel.kernel_ir(tuple(sigutils.normalize_signature(sig)[0]))
    job = run_target_stages(Job(target=_bare_target(), options=Options(opt=opt), kernels=(sym,),
                                text=text, name=kernel.__name__), stop="optimize")
    return job.printed if job.printed is not None else str(job.module)


_changed: dict = {}  # rewrite -> number of modules it changed


@pytest.mark.parametrize("opt", [0, 3])
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_each_rewrite_leaves_valid_ir(case, opt):
    _, kernel, sig = case
    text = _optimized_ir(kernel, sig, opt)
    names = tuple(legalize.REWRITES)
    for name in names + ("all",):
        new = legalize.apply_rewrites(text, names if name == "all" else (name,))
        if new == text:
            continue
        _changed[name] = _changed.get(name, 0) + 1
        try:
            ll.parse_assembly(new).verify()
        except RuntimeError as e:
            raise AssertionError(f"{name} made invalid IR: {e}\n{new}") from None


def test_every_rewrite_had_work_to_do():
    """(run after the cases above) Each rewrite changed at least one module: the cases
    exercise what they are for."""
    if not _changed:
        pytest.skip("run with the cases above")
    assert set(legalize.REWRITES) <= set(_changed), _changed
