"""NumPy's datetime64 and timedelta64 in kernels: arrays and scalars of any unit as
arguments, arithmetic across units, comparisons and NaT, checked against NumPy;
CONFORMANCE_KERNELS puts them through ptxas and the MSL syntax check as well."""

import warnings

import numpy as np
import pytest
from numba.core import types

import numba_gpux as gpux

FP64 = pytest.mark.needs("fp64")
N = 16


@gpux.jit
def elapsed(start, end, delta):
    for i in range(gpux.grid(1), delta.size, gpux.gridsize(1)):
        delta[i] = end[i] - start[i]


@gpux.jit
def calendar(d, h, td, when, out_h, out_td, out_dd, out_b):
    i = gpux.grid(1)
    if i < d.size:
        out_h[i] = d[i] + h[i]              # datetime64[D] + timedelta64[h]: datetime64[h]
        out_td[i, 0] = td[i] * 3
        out_td[i, 1] = -td[i]
        out_td[i, 2] = abs(td[i])
        out_td[i, 3] = td[i] + h[i]
        out_dd[i] = d[i] - when             # a datetime64 scalar argument
        out_b[i, 0] = d[i] < when
        out_b[i, 1] = d[i] == d[i]          # False for NaT
        out_b[i, 2] = td[i] != td[0]
        out_b[i, 3] = np.isnat(d[i])


@gpux.jit
def shift(dates, step, out):
    i = gpux.grid(1)
    if i < dates.size:
        out[i] = dates[i] - step            # a timedelta64 scalar argument


@gpux.jit
def ratio(td, h, out):
    i = gpux.grid(1)
    if i < td.size:
        out[i] = td[i] / h[i]               # timedelta / timedelta: float64


def _data(rng):
    d = (np.datetime64("2020-01-01") + rng.integers(-500, 500, N).astype("m8[D]"))
    d[3] = np.datetime64("NaT")
    h = rng.integers(1, 100, N).astype("m8[h]")
    td = rng.integers(-50, 50, N).astype("m8[h]")
    td[5] = np.timedelta64("NaT")
    return d.astype("M8[D]"), h, td


def _same(got, want):
    """Equal, NaT included (compared as the int64 counts they are)."""
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.view(np.int64), want.view(np.int64))


def test_arrays_of_dates_subtract_to_timedeltas(device, rng):
    start = np.arange("2005-02", "2006-02", dtype="datetime64[D]")
    end = start + rng.integers(0, 10000, start.size)
    delta = gpux.to_device(np.zeros_like(start, dtype="timedelta64[D]"))
    elapsed[1, 32](gpux.to_device(start), gpux.to_device(end), delta)
    _same(delta.copy_to_host(), end - start)
    # host arrays are copied in and back like any others
    back = np.zeros_like(start, dtype="timedelta64[D]")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpux.NumpyArgumentWarning)
        elapsed[1, 32](start, end, back)
    _same(back, end - start)


def test_units_scalars_comparisons_and_nat(device, rng):
    d, h, td = _data(rng)
    when = d[7]
    out_h = gpux.to_device(np.zeros(N, "M8[h]"))
    out_td = gpux.to_device(np.zeros((N, 4), "m8[h]"))
    out_dd = gpux.to_device(np.zeros(N, "m8[D]"))
    out_b = gpux.to_device(np.zeros((N, 4), np.bool_))
    calendar[1, 32](gpux.to_device(d), gpux.to_device(h), gpux.to_device(td), when,
                    out_h, out_td, out_dd, out_b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's NaT comparisons
        _same(out_h.copy_to_host(), d + h)
        _same(out_td.copy_to_host(), np.stack([td * 3, -td, abs(td), td + h], 1))
        _same(out_dd.copy_to_host(), d - when)
        np.testing.assert_array_equal(
            out_b.copy_to_host(), np.stack([d < when, d == d, td != td[0], np.isnat(d)], 1))


@pytest.mark.parametrize("unit", ["D", "s", "ms", "ns", "M", "Y"])
def test_a_timedelta_scalar_of_each_unit(device, unit):
    dates = np.arange(0, 40, 3).astype(f"M8[{unit}]")
    step = np.timedelta64(5, unit)
    out = gpux.to_device(np.zeros_like(dates))
    shift[1, 32](gpux.to_device(dates), step, out)
    _same(out.copy_to_host(), dates - step)


@FP64
def test_timedelta_ratio_is_a_float(device, rng):
    _, h, td = _data(rng)
    out = gpux.to_device(np.zeros(N))
    ratio[1, 32](gpux.to_device(td), gpux.to_device(h), out)
    np.testing.assert_array_equal(out.copy_to_host(), td / h)  # NaN where td is NaT


def test_a_device_array_viewed_as_int64(device):
    dates = np.arange("2005-02", "2006-02", dtype="datetime64[D]")
    d = gpux.to_device(dates)
    np.testing.assert_array_equal(d.view(np.int64).copy_to_host(), dates.view(np.int64))


def test_the_source_route(device, rng):
    if device.target_name != "opencl":
        pytest.skip("the OpenCL C route is made from an OpenCL device")
    from gpux_testing import selected
    from numba_gpux.targets.opencl_c.target import source_device

    d, h, td = _data(rng)
    with selected(source_device(device)):
        out = gpux.to_device(np.zeros(N, "m8[D]"))
        elapsed[1, 32](gpux.to_device(d), gpux.to_device(d + np.timedelta64(9, "D")), out)
        _same(out.copy_to_host(), np.where(np.isnat(d), np.timedelta64("NaT"),
                                           np.timedelta64(9, "D")).astype("m8[D]"))
        out = gpux.to_device(np.zeros(N, "M8[D]"))
        shift[1, 32](gpux.to_device(d), np.timedelta64(2, "D"), out)
        _same(out.copy_to_host(), d - np.timedelta64(2, "D"))


# (signatures as types: a signature string has no name for datetime64)
_D, _TD, _S, _TS = (types.NPDatetime("D"), types.NPTimedelta("D"), types.NPDatetime("s"),
                    types.NPTimedelta("s"))
CONFORMANCE_KERNELS = [
    (elapsed, types.void(_D[::1], _D[::1], _TD[::1])),
    (shift, types.void(_S[::1], _TS, _S[::1])),
]
