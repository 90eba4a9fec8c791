"""Whole-array reductions in kernels (np.min/max & co., np.sum/mean & co.), against NumPy;
CONFORMANCE_KERNELS puts them through ptxas and the MSL syntax check as well."""

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import numba_gpux as gpux

FP64 = pytest.mark.needs("fp64")


@gpux.jit
def extremes(a, out):
    if gpux.grid(1) == 0:
        out[0] = np.min(a)
        out[1] = np.max(a)
        out[2] = a.min()
        out[3] = a.max()
        out[4] = np.amin(a)
        out[5] = np.amax(a)
        out[6] = np.nanmin(a)
        out[7] = np.nanmax(a)


@gpux.jit
def counts(a, out):
    if gpux.grid(1) == 0:
        out[0] = np.count_nonzero(a)
        out[1] = np.argmin(a)
        out[2] = np.argmax(a)
        out[3] = np.all(a)
        out[4] = np.any(a)


@gpux.jit
def spread(a, out):
    if gpux.grid(1) == 0:
        out[0] = np.ptp(a)


@gpux.jit
def moments(a, out):
    if gpux.grid(1) == 0:
        out[0] = np.sum(a)
        out[1] = a.sum()
        out[2] = np.mean(a)
        out[3] = np.var(a)
        out[4] = np.std(a)
        out[5] = np.prod(a)
        out[6] = np.nansum(a)
        out[7] = np.nanmean(a)


def _want_extremes(h):
    return [np.min(h), np.max(h), h.min(), h.max(), np.amin(h), np.amax(h),
            np.nanmin(h), np.nanmax(h)]


def _run(kernel, host, n, dtype):
    out = gpux.to_device(np.zeros(n, dtype))
    kernel[1, 32](gpux.to_device(host), out)
    return out.copy_to_host()


def _sample(dtype, rng):
    if dtype is np.bool_:
        return rng.integers(0, 2, 23).astype(bool)
    if np.issubdtype(dtype, np.complexfloating):
        re = rng.integers(-3, 4, 23)
        im = rng.integers(-3, 4, 23)
        return (re + 1j * im).astype(dtype)   # many equal real parts: the tie-break counts
    if np.issubdtype(dtype, np.floating):
        return (rng.standard_normal(23) * 10).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -1000), min(info.max, 1000), 23).astype(dtype)


DTYPES = [np.float32, pytest.param(np.float64, marks=FP64), np.int32, np.int64, np.uint8,
          np.int16, np.bool_, np.complex64]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_min_max_of_each_element_type(device, dtype, rng):
    h = _sample(dtype, rng)
    np.testing.assert_array_equal(_run(extremes, h, 8, dtype), np.array(_want_extremes(h), dtype))
    got = _run(counts, h, 5, np.int64)
    np.testing.assert_array_equal(got, [np.count_nonzero(h), np.argmin(h), np.argmax(h),
                                        np.all(h), np.any(h)])
    if dtype is not np.bool_:
        np.testing.assert_array_equal(_run(spread, h, 1, dtype), [np.ptp(h)])


@pytest.mark.parametrize("layout", ["2d-C", "2d-F", "2d-strided", "3d-transposed", "1d-reversed"])
def test_min_max_over_every_layout(device, layout, rng):
    base = rng.integers(-500, 500, (6, 8, 5)).astype(np.int32)
    h = {"2d-C": base[0], "2d-F": np.asfortranarray(base[1]), "2d-strided": base[:, ::3, 2],
         "3d-transposed": base.transpose(2, 0, 1), "1d-reversed": base[2, 3, ::-1]}[layout]
    d = gpux.to_device(np.ascontiguousarray(base))
    view = {"2d-C": d[0], "2d-F": None, "2d-strided": d[:, ::3, 2],
            "3d-transposed": d.T, "1d-reversed": d[2, 3, ::-1]}[layout]
    if view is None:
        view = gpux.to_device(h)
    if layout == "3d-transposed":
        h = base.T
    out = gpux.to_device(np.zeros(8, np.int32))
    extremes[1, 32](view, out)
    np.testing.assert_array_equal(out.copy_to_host(), _want_extremes(h))
    ci = gpux.to_device(np.zeros(5, np.int64))
    counts[1, 32](view, ci)
    np.testing.assert_array_equal(ci.copy_to_host(), [np.count_nonzero(h), np.argmin(h),
                                                      np.argmax(h), np.all(h), np.any(h)])


@pytest.mark.parametrize("case", ["nan-inside", "nan-first", "all-nan", "inf"])
def test_nan_semantics_are_numpys(device, case):
    h = {"nan-inside": [3.0, np.nan, -1.0, 7.0], "nan-first": [np.nan, 2.0, -4.0],
         "all-nan": [np.nan, np.nan], "inf": [np.inf, -np.inf, 0.0]}[case]
    h = np.array(h, np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's all-NaN warning
        want = np.array(_want_extremes(h), np.float32)
    np.testing.assert_array_equal(_run(extremes, h, 8, np.float32), want)


def test_complex_nan_and_tie_break(device):
    h = np.array([1 + 5j, 1 + 2j, 0 + 9j, 1 + 5j], np.complex64)
    np.testing.assert_array_equal(_run(extremes, h, 8, np.complex64), _want_extremes(h))
    h = np.array([1 + 1j, complex(1, np.nan), 4 + 0j], np.complex64)
    got = _run(extremes, h, 8, np.complex64)
    assert np.isnan(got[:6]).all()                     # NaN in a part propagates
    np.testing.assert_array_equal(got[6:], [1 + 1j, 4 + 0j])   # and the nan versions skip it


@pytest.mark.parametrize("dtype", [np.float32, pytest.param(np.float64, marks=FP64)],
                         ids=lambda d: np.dtype(d).name)
def test_numbas_sums_and_moments(device, dtype, rng):
    h = (rng.standard_normal((5, 7)) + 2).astype(dtype)
    want = [np.sum(h), h.sum(), np.mean(h), np.var(h), np.std(h), np.prod(h), np.nansum(h),
            np.nanmean(h)]
    np.testing.assert_allclose(_run(moments, h, 8, dtype), np.array(want, dtype),
                               rtol=1e-5 if dtype is np.float32 else 1e-12)


def test_an_empty_array_raises_numpys_error(device):
    @gpux.jit(debug=True, opt=0)
    def k(a, out):
        if gpux.grid(1) == 0:
            out[0] = np.max(a)

    with pytest.raises(ValueError, match="zero-size array to reduction operation maximum"):
        k[1, 1](gpux.to_device(np.zeros(0, np.float32)), gpux.to_device(np.zeros(1, np.float32)))


def test_a_reduction_with_an_axis_is_a_typing_error(device):
    from numba.core.errors import TypingError

    @gpux.jit
    def k(a, out):
        out[0] = np.max(a, axis=0)[0]

    with pytest.raises(TypingError):
        k[1, 1](gpux.to_device(np.zeros((2, 2), np.float32)),
                gpux.to_device(np.zeros(1, np.float32)))


def test_the_source_route(device, rng):
    if device.target_name != "opencl":
        pytest.skip("the OpenCL C route is made from an OpenCL device")
    from gpux_testing import selected
    from numba_gpux.targets.opencl_c.target import source_device

    h = rng.standard_normal((4, 6)).astype(np.float32)[:, ::2]
    hc = _sample(np.complex64, rng)
    with selected(source_device(device)):
        np.testing.assert_array_equal(_run(extremes, h, 8, np.float32), _want_extremes(h))
        np.testing.assert_array_equal(_run(extremes, hc, 8, np.complex64), _want_extremes(hc))
        np.testing.assert_array_equal(_run(counts, h, 5, np.int64),
                                      [np.count_nonzero(h), np.argmin(h), np.argmax(h),
                                       np.all(h), np.any(h)])


def test_numbas_cpu_target_keeps_its_own_reductions(device):
    import numba

    @gpux.jit
    def k(a, out):
        out[0] = np.max(a)

    k[1, 1](gpux.to_device(np.ones(3, np.float32)), gpux.to_device(np.zeros(1, np.float32)))
    h = np.array([2.0, np.nan, 5.0])
    got = numba.njit(lambda a: (np.max(a), a.min(), np.nanmax(a), a.argmax(), np.ptp(a)))(h)
    np.testing.assert_array_equal(got, (np.max(h), h.min(), np.nanmax(h), h.argmax(), np.ptp(h)))


CONFORMANCE_KERNELS = [
    (extremes, "void(float32[:, :], float32[::1])"),
    (extremes, "void(complex64[::1], complex64[::1])"),
    (counts, "void(int32[:, ::1], int64[::1])"),
    (spread, "void(uint8[::1], uint8[::1])"),
    (moments, "void(float32[::1], float32[::1])"),
]


# Numba's reductions load when typing first meets one, and the compile then starts
# again.  In a fresh process, as the first kernel, after another kernel, and whether
# or not numba's CPU target ran first (which imports Numba's array reductions for
# itself): the same results each time.
PROGRAM = """
import sys
import numpy as np
import numba
import numba_gpux as gpux

order = sys.argv[1]
if order == "njit-first":
    numba.njit(lambda a: a.sum())(np.ones(3))

@gpux.jit
def plain(a):
    i = gpux.grid(1)
    if i < a.size:
        a[i] += 1

@gpux.jit
def red(a, out):
    if gpux.grid(1) == 0:
        out[0] = np.max(a)    # typed before Numba's reductions are loaded (by np.sum)
        out[1] = np.sum(a)
        out[2] = a.mean()
        out[3] = np.max(a)    # and again after

@gpux.jit
def empty(a):
    pass

@gpux.jit
def red_method_first(a, out):
    if gpux.grid(1) == 0:
        out[1] = a.sum()      # the first of Numba's reductions, met as a method
        out[2] = a.mean()
        out[0] = out[3] = a.max()

a = gpux.to_device(np.array([1.5, 4.0, -2.0], np.float32))
if order == "after-another":
    plain[1, 32](a)
if order == "method-after-another":
    # a first kernel whose compile adds nothing to the context after building it: the
    # reductions Numba registered while it was built must still be installed
    empty[1, 32](a)
out = gpux.to_device(np.zeros(4, np.float32))
(red_method_first if order == "method-after-another" else red)[1, 32](a, out)
print(" ".join(repr(float(v)) for v in out.copy_to_host()))
"""


@pytest.mark.parametrize("order", ["first-kernel", "after-another", "njit-first",
                                   "method-after-another"])
def test_reductions_in_a_fresh_process_whatever_ran_before(device, order):
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(PROGRAM), order],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "NUMBA_GPUX_DEVICE": device.spec})
    assert p.returncode == 0, p.stderr[-3000:]
    lines = p.stdout.strip().splitlines()
    a = np.array([1.5, 4.0, -2.0], np.float32) + (order == "after-another")
    assert lines[-1].split() == [repr(float(v)) for v in (np.max(a), np.sum(a), a.mean(),
                                                          np.max(a))]
