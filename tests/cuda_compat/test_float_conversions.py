"""Float to integer conversions and the float results of ``math.floor``/``ceil``/
``trunc``: the numba.cuda facade follows numba.cuda's code (PTX's saturating
``cvt.rzi``, its typing of the rounding functions); ``numba_gpux.jit`` follows Python
and Numba's CPU target (numba_gpux/language/semantics.py, docs/migration.md)."""

import math

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import cuda
from numba_gpux.cuda import libdevice

nan, inf = float("nan"), float("inf")
I64MAX, I64MIN = 2 ** 63 - 1, -(2 ** 63)
I32MAX, I32MIN = 2 ** 31 - 1, -(2 ** 31)
VALUES = [nan, inf, -inf, 1e30, -1e30, -1.0, -0.5, 3e9, -3e9, 40000.0, 2.75, -2.75]


def _convert(out64, out32, outu32, outu64, out8, outu8, x):
    for i in range(x.size):
        out64[i] = int(x[i])
        out32[i] = np.int32(x[i])
        outu32[i] = np.uint32(x[i])
        outu64[i] = np.uint64(x[i])
        out8[i] = x[i]          # a store converts as np.int8(x) would
        outu8[i] = np.uint8(x[i])


def _run(jit, dtype):
    k = jit(_convert)
    x = np.array(VALUES, dtype)
    outs = [np.zeros(x.size, t) for t in (np.int64, np.int32, np.uint32, np.uint64,
                                          np.int8, np.uint8)]
    dev = [cuda.to_device(o) for o in outs]
    k[1, 1](*dev, cuda.to_device(x))
    return [d.copy_to_host() for d in dev]


def _cvt_rzi(v, bits, signed):
    """PTX's cvt.rzi to an integer of *bits* (NVVM converts to 8 bits through 16 and
    keeps the low byte)."""
    wide = max(bits, 16)
    lo, hi = (-(2 ** (wide - 1)), 2 ** (wide - 1) - 1) if signed else (0, 2 ** wide - 1)
    r = 0 if math.isnan(v) else hi if v >= hi else lo if v <= lo else int(v)
    r &= (1 << bits) - 1
    return r - (1 << bits) if signed and r >= 1 << (bits - 1) else r


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_facade_converts_floats_to_integers_as_ptx_saturating(device, dtype):
    got = _run(cuda.jit, dtype)
    x = np.array(VALUES, dtype)
    for arr, bits, signed in zip(got, (64, 32, 32, 64, 8, 8),
                                 (True, True, False, False, True, False)):
        want = [_cvt_rzi(float(v), bits, signed) for v in x]
        assert [int(v) for v in arr] == want, (bits, signed)


def test_facade_examples_from_numba_cuda():
    # a few values spelled out (numba.cuda's answers on an NVIDIA GPU)
    assert _cvt_rzi(nan, 64, True) == 0 and _cvt_rzi(1e30, 32, True) == I32MAX
    assert _cvt_rzi(-1.0, 32, False) == 0 and _cvt_rzi(40000.0, 8, True) == -1


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_portable_keeps_in_range_conversions(device, dtype):
    got = _run(gpux.jit, dtype)
    x = np.array(VALUES, dtype)
    ok = np.isfinite(x) & (np.abs(x) < 100)
    for arr in got[:2]:  # int64, int32: truncation toward zero
        assert [int(v) for v in arr[ok]] == [int(v) for v in x[ok]]


def test_facade_round_saturates_and_gives_0_for_nan(device):
    @cuda.jit
    def k(out, x):
        for i in range(x.size):
            out[i] = round(x[i])

    x = np.array([nan, 1e30, -1e30, 2.5, 3.5, -2.5], np.float64)
    out = cuda.device_array(x.size, np.int64)
    k[1, 1](out, cuda.to_device(x))
    assert out.copy_to_host().tolist() == [0, I64MAX, I64MIN, 2, 4, -2]


def test_libdevice_conversions_saturate(device):
    @cuda.jit
    def k(i32, u32, i64, x):
        i32[0] = libdevice.float2int_rn(np.float32(x[0]))
        i32[1] = libdevice.double2int_rz(x[1])
        u32[0] = libdevice.float2uint_rz(np.float32(x[2]))
        u32[1] = libdevice.double2uint_rn(x[1])
        i64[0] = libdevice.double2ll_rz(x[1])
        i64[1] = libdevice.llrint(x[0])
        i64[2] = libdevice.llround(x[3])

    i32, u32 = cuda.device_array(2, np.int32), cuda.device_array(2, np.uint32)
    i64 = cuda.device_array(3, np.int64)
    k[1, 1](i32, u32, i64, cuda.to_device(np.array([nan, 1e20, -1.0, -1e30])))
    assert i32.copy_to_host().tolist() == [0, I32MAX]
    assert u32.copy_to_host().tolist() == [0, 2 ** 32 - 1]
    assert i64.copy_to_host().tolist() == [I64MAX, 0, I64MIN]


def test_facade_floor_ceil_trunc_return_floats(device):
    @cuda.jit
    def k(out, out32, x):
        out[0] = math.floor(x[0])
        out[1] = math.floor(x[1]) * math.floor(x[1])   # float, no int64 overflow
        out[2] = math.ceil(x[2])                       # -0.0 keeps its sign
        out[3] = math.trunc(np.int32(7)) / 2
        out[4] = math.floor(x[3])
        out32[0] = math.floor(np.float32(x[4])) * np.float32(0.1)

    out, out32 = cuda.device_array(5, np.float64), cuda.device_array(1, np.float32)
    k[1, 1](out, out32, cuda.to_device(np.array([nan, 1e10, -0.5, -inf, 2.7])))
    got = out.copy_to_host()
    assert np.isnan(got[0]) and got[1] == 1e20 and got[3] == 3.5 and got[4] == -inf
    assert got[2] == 0 and np.signbit(got[2])
    assert out32.copy_to_host()[0] == np.float32(2.0) * np.float32(0.1)


def test_facade_floor_of_float32_is_float32():
    @cuda.jit(device=True)
    def f(v):
        return math.floor(v)

    from numba.core import types
    res = f.compile((types.float32,))
    assert res.signature.return_type == types.float32
    assert f.compile((types.int32,)).signature.return_type == types.float64


def test_portable_floor_returns_an_int(device):
    @gpux.jit
    def k(out, x):
        out[0] = math.floor(x[0]) // 2
        out[1] = math.ceil(x[0])

    out = cuda.device_array(2, np.int64)
    k[1, 1](out, cuda.to_device(np.array([7.5])))
    assert out.copy_to_host().tolist() == [3, 8]
