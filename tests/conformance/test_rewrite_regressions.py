"""Kernels that the IR rewrites (numba_gpux/legalize.py) or LLVM's SPIR-V code
generation once broke: each runs on every route here (the SPIR-V route and the
OpenCL C route of the same driver) at every optimization level and is checked
against Numba on the CPU or NumPy; the SPIR-V of each is checked by ``spirv-val``."""

from __future__ import annotations

import math
import subprocess
import types as pytypes

import numba
import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import cuda

OPTS = pytest.mark.parametrize("opt", [0, 1, 2, 3])


def _routes():
    from gpux_testing import testable_here

    out = []
    for d in gpux.devices():
        if not testable_here(d):
            continue
        out.append(pytest.param(d, id=d.spec))
        if d.target_name == "opencl":
            from numba_gpux.targets.opencl_c.target import source_device

            out.append(pytest.param(source_device(d), id=f"source-of-{d.spec}"))
    if not out:
        out.append(pytest.param(None, marks=pytest.mark.skip(reason="no OpenCL device")))
    return out


@pytest.fixture(params=_routes())
def route(request):
    from gpux_testing import selected

    with selected(request.param) as dev:
        yield dev


def _spirv_valid(spirv_val, tmp_path, art):
    path = tmp_path / "k.spv"
    path.write_bytes(art.binary)
    res = subprocess.run([spirv_val, "--target-env", "spv1.4", str(path)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


# -- two float32 atomics at indices computed from arguments --
# The rematerialization of index math copied an address into a later block before
# the index it is made of: the copies followed the order of the text, where the
# block computing the index came after the block using it.

def _two_atomics(opt):
    @cuda.jit(opt=opt)
    def k(a, step, every, out):
        s = step // every
        i = cuda.grid(1)
        if i < a.shape[0]:
            cuda.atomic.add(out, s, a[i])
            cuda.atomic.add(out, s + 1, a[i])
    return k


@OPTS
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32])
def test_two_atomic_adds_at_computed_indices(route, opt, dtype):
    a = cuda.to_device(np.ones(64, dtype))
    out = cuda.to_device(np.zeros(4, dtype))
    _two_atomics(opt)[2, 32](a, 8, 4, out)
    np.testing.assert_array_equal(out.copy_to_host(), np.array([0, 0, 64, 64], dtype))
    out = cuda.to_device(np.zeros(4, dtype))
    _two_atomics(opt)[2, 32](a, 3, 2, out)  # s = 1: both slots from the same quotient
    np.testing.assert_array_equal(out.copy_to_host(), np.array([0, 64, 64, 0], dtype))


def two_atomic_adds(a, step, every, out):
    s = step // every
    i = gpux.grid(1)
    if i < a.shape[0]:
        gpux.atomic.add(out, s, a[i])
        gpux.atomic.add(out, s + 1, a[i])


_TWO_ATOMICS_SIG = "void(float32[::1], int64, int64, float32[::1])"


@OPTS
def test_spirv_of_two_atomic_adds_validates(opt, spirv_val, tmp_path):
    art = gpux.compile(two_atomic_adds, _TWO_ATOMICS_SIG, target="opencl", opt=opt)
    _spirv_valid(spirv_val, tmp_path, art)


# -- a long device function applied elementwise --
# LLVM's loop strength reduction, run by code generation, wrote the trip count of the
# inner loop (6 - (v1 & 1), from -(v1 & 1 | -774) & 7) as a zext of a trunc to i1, which
# LLVM 22's SPIR-V back end turned into an OpBitwiseAnd of mismatched widths; the
# Intel OpenCL CPU driver refused the module ("Invalid binary operator record").

def _long_function(a, b, c, d, e, f_, g, h):
    v1 = math.floor(min(max((f_ if f_ == f_ else 0.0), -1e15), 1e15))
    t2 = (h * e)
    v3 = np.int32(min(max((t2 if t2 == t2 else 0.0), -2e9), 2e9))
    arr4 = LOCAL_ARRAY(4, np.int32)  # noqa: F821 (given by _build)
    for j5 in range(4):
        arr4[(j5) & 3] = np.int32(((np.int32(1) & v1) + (-np.int64(774))))
    v6 = np.uint32(176)
    if ((b ^ d) > (abs(v6) | (c if (v6 > v1) else np.int32(65535)))):
        for j7 in range(np.int64(abs(arr4[(v6) & 3]) & 7)):
            v8 = math.floor(min(max((h if h == h else 0.0), -1e15), 1e15))
            v9 = ((abs(v3) + (j7 ^ v3)) % (((np.int64(min(max((e if e == e else 0.0), -9e18), 9e18))  # noqa: F841 - the kernel as the fuzzer wrote it
                                             // (((v8 + v1) & 127) + 2)) & 127) + 2))
            v10 = (-((-g) / (-(abs((v3 + e)) + 0.5))))  # noqa: F841
    return ((((t2 + v1) * v6) + arr4[((np.int32(1) >> (v6 & 63))) & 3]) + v3)


def _build(decorator, local_array):
    """The same Python as a Numba CPU function or a device function."""
    glob = {"np": np, "math": math, "LOCAL_ARRAY": local_array}
    return decorator(pytypes.FunctionType(_long_function.__code__, glob, "f"))


_DEVICE_F = _build(gpux.jit(device=True), gpux.local.array)


def _elementwise(a, b, c, d, e, f_, g, h, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = _DEVICE_F(a[i], b[i], c[i], d[i], e[i], f_[i], g[i], h[i])


_TYPES = (np.int32, np.int32, np.int64, np.uint32, np.float32, np.float32, np.float64, np.float64)


def _arguments(n=64):
    rng = np.random.default_rng(7)
    args = []
    for t in _TYPES:
        if np.issubdtype(t, np.integer):
            lo = 0 if np.issubdtype(t, np.unsignedinteger) else -1000
            args.append(rng.integers(lo, 1000, n).astype(t))
        else:
            args.append(rng.normal(0.0, 100.0, n).astype(t))
    # the branch into the inner loop taken by some, not all, elements
    args[1][::2] = 1 << 20
    return args


@OPTS
def test_long_device_function_elementwise(route, opt):
    args = _arguments()
    ref = _build(numba.njit(error_model="numpy"), np.empty)
    want = np.array([ref(*(x[i] for x in args)) for i in range(args[0].size)])
    out = gpux.device_array(want.size, want.dtype)
    gpux.jit(opt=opt)(_elementwise)[1, 64](*(gpux.to_device(x) for x in args), out)
    np.testing.assert_array_equal(out.copy_to_host(), want)


_ELEMENTWISE_SIG = "void(%s, float64[::1])" % ", ".join(f"{np.dtype(t).name}[::1]" for t in _TYPES)


@OPTS
def test_spirv_of_long_device_function_validates(opt, spirv_val, tmp_path):
    art = gpux.compile(_elementwise, _ELEMENTWISE_SIG, target="opencl", opt=opt)
    _spirv_valid(spirv_val, tmp_path, art)


# -- two array expressions, one of them np.where --
# Numba's implementations, inlined, left llvm.stacksave/llvm.stackrestore around their
# bodies; LLVM's SPIR-V back end (and NVPTX below sm_52) then ended the process.

def _array_expressions(a, out):
    b = a[::-1]
    x = np.sqrt(a)
    y = np.where(a > 3, a, b * 10)
    for i in range(x.size):
        out[0, i] = x[i]
        out[1, i] = y[i]


_ARRAY_EXPRESSIONS_SIG = "void(float32[::1], float64[:, ::1])"


@pytest.mark.parametrize("opt", [0, 3])
def test_array_expressions_inlined_inside_stack_saves(route, opt):
    a = np.arange(1, 8, dtype=np.float32)
    out = gpux.to_device(np.zeros((2, a.size)))
    gpux.jit(opt=opt)(_array_expressions)[1, 1](gpux.to_device(a), out)
    want = [np.sqrt(a), np.where(a > 3, a, a[::-1] * 10)]
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-7)


def test_array_expressions_compile_for_cuda_before_sm_52():
    art = gpux.compile(_array_expressions, _ARRAY_EXPRESSIONS_SIG, target="cuda", cc=(5, 0),
                       cubin=False)
    assert "stacksave" not in art.text and "stackrestore" not in art.text


#: compiled for every route by tests/targets (ptxas, the MSL syntax check) and put
#: through each IR rewrite by tests/pipeline/test_legalize_verify.py
CONFORMANCE_KERNELS = [(two_atomic_adds, _TWO_ATOMICS_SIG), (_elementwise, _ELEMENTWISE_SIG),
                       (_array_expressions, _ARRAY_EXPRESSIONS_SIG)]


# -- a negated float live across a barrier --
# Intel's OpenCL CPU driver gave every work-item one work-item's value of ``-x`` kept
# across a barrier (and of the negation LLVM hoists out of a loop with a barrier, or
# that ``acc -= a * b`` fused into an fma takes); the OpenCL targets write ``fneg`` as
# an xor of the sign bit (legalize_fneg.py).

def _negations(opt):
    @cuda.jit(opt=opt)
    def across(g, out):
        i = cuda.grid(1)
        w = -g[i]
        cuda.syncthreads()
        out[i] = w

    @cuda.jit(opt=opt)
    def fused(g, h, out, niter):
        i = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
        v = g[i]
        acc = np.float32(0.0)
        for it in range(niter):
            cuda.syncthreads()
            acc -= v * h[it]
        out[i] = acc
    return across, fused


@OPTS
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_negation_kept_across_a_barrier(route, opt, dtype):
    across, fused = _negations(opt)
    g = np.arange(64, dtype=dtype) - 20
    out = cuda.device_array(64, dtype)
    across[1, 64](cuda.to_device(g), out)
    np.testing.assert_array_equal(out.copy_to_host(), -g)
    across[1, (8, 8)](cuda.to_device(g), out)
    np.testing.assert_array_equal(out.copy_to_host(), -g)
    if route is not None and route.target_name == "opencl-c":
        return  # (the driver contracts c - a * b there itself: docs/opencl-c.md)
    h = np.array([1, 2], np.float32)
    out32 = cuda.device_array(16, np.float32)
    fused[1, (8, 2)](cuda.to_device(g[:16].astype(np.float32)), cuda.to_device(h), out32, 2)
    np.testing.assert_array_equal(out32.copy_to_host(), -3 * g[:16].astype(np.float32))
