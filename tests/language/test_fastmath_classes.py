"""``fastmath=True`` and values that are NaN or infinite.

The numba.cuda facade's fastmath is numba.cuda's (NVVM's -ftz=1 -prec-div=0
-prec-sqrt=0 -fma=1: approximate functions and division, fused multiply-adds), which
assumes nothing about NaN and infinities: ``math.isnan``, ``x != x``, comparisons with
infinity keep their meaning.  The portable API's fastmath is Numba's (every LLVM
fast-math flag); there ``math.isnan``/``isinf``/``isfinite`` (and ``np.``/``cmath.``'s)
still tell a value read from memory apart, where Numba's CPU target folds them to
constants."""

from __future__ import annotations

import cmath
import math

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import cuda

VALUES = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, -np.nan, 5e-324, 1e308,
                   1e-40, 3.0e38])


def _classes(x, z, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i, 0] = math.isnan(x[i])
        out[i, 1] = math.isinf(x[i])
        out[i, 2] = math.isfinite(x[i])
        out[i, 3] = np.isnan(x[i])
        out[i, 4] = np.isinf(x[i])
        out[i, 5] = np.isfinite(x[i])
        out[i, 6] = cmath.isnan(z[i])
        out[i, 7] = cmath.isinf(z[i])
        out[i, 8] = cmath.isfinite(z[i])
        out[i, 9] = np.isnan(z[i])
        out[i, 10] = np.isinf(z[i])
        out[i, 11] = np.isfinite(z[i])
        # the pattern real code uses: keep a value unless it is NaN
        out[i, 12] = 1 if (x[i] if not math.isnan(x[i]) else -7.0) == -7.0 else 0


def _expected(x, z):
    return np.stack([np.isnan(x), np.isinf(x), np.isfinite(x)] * 2
                    + [np.isnan(z), np.isinf(z), np.isfinite(z)] * 2 + [np.isnan(x)], 1)


@pytest.mark.parametrize("jit", [pytest.param(gpux.jit, id="portable"),
                                 pytest.param(cuda.jit, id="facade")])
@pytest.mark.parametrize("fastmath", [False, True], ids=["exact", "fastmath"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nan_and_infinity_tests_hold_under_fastmath(device, jit, fastmath, dtype):
    k = jit(fastmath=fastmath)(_classes)
    with np.errstate(over="ignore"):
        x = VALUES.astype(dtype)
    z = np.empty(x.size, np.complex64 if dtype == np.float32 else np.complex128)
    z.real, z.imag = x, x[::-1]
    out = cuda.device_array((x.size, 13), np.int8)
    k[1, 32](cuda.to_device(x), cuda.to_device(z), out)
    np.testing.assert_array_equal(out.copy_to_host(), _expected(x, z).astype(np.int8))


def test_the_facade_s_fastmath_keeps_nan_comparisons_and_minmax(device):
    # numba.cuda's fastmath does not let the compiler take values to be numbers:
    # x != x, x == inf and min/max (fmin/fmax in the facade) of a NaN keep their answers
    @cuda.jit(fastmath=True)
    def k(x, out):
        i = cuda.grid(1)
        if i < x.size:
            v = x[i]
            out[i, 0] = v != v
            out[i, 1] = v == math.inf
            out[i, 2] = max(v, 1.0) if v == v else -1.0
            out[i, 3] = min(v, np.float32(2.0))

    x = np.array([np.nan, np.inf, 0.5, 3.0], np.float32)
    out = cuda.device_array((4, 4), np.float32)
    k[1, 4](cuda.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), [[1, 0, -1, 2], [0, 1, np.inf, 2],
                                                       [0, 0, 1, 0.5], [0, 0, 3, 2]])


def test_fastmath_flags_by_api():
    # what each API's fastmath=True gives the code: the facade's no-NaN, no-infinity,
    # no-reassociation flags are those numba.cuda's NVVM options imply
    from numba_gpux.language.semantics import FASTMATH_FLAGS, DEFAULT_SEMANTICS
    from numba_gpux.cuda.decorators import NUMBA_CUDA_SEMANTICS

    assert FASTMATH_FLAGS[DEFAULT_SEMANTICS.fastmath] == {"fast"}
    facade = FASTMATH_FLAGS[NUMBA_CUDA_SEMANTICS.fastmath]
    assert facade == {"contract", "afn", "arcp"}
    assert not facade & {"fast", "nnan", "ninf", "nsz", "reassoc"}


def test_the_facade_s_fastmath_ptx_keeps_the_nan_test_and_the_fast_division():
    # the PTX numba.cuda writes: approximate float32 division and square root, and the
    # isnan test (before, the facade's flags folded it to a constant store)
    def f(x, y, out, flag):
        out[0] = x[0] / y[0] + math.sqrt(x[0])
        flag[0] = 1 if math.isnan(x[0]) else 0
        flag[1] = 1 if x[1] != x[1] else 0

    ptx, _ = cuda.compile_ptx(f, "void(float32[::1], float32[::1], float32[::1], int32[::1])",
                              fastmath=True)
    assert "div.approx.ftz.f32" in ptx and "sqrt.approx.ftz.f32" in ptx
    assert ptx.count("setp.nan") == 2, ptx
