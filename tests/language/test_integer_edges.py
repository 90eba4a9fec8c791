"""Integer operations at the edges where LLVM leaves the result undefined or Numba's
helpers would raise: shifts by the width or more, and divisions by zero inside the
implementations Numba compiles on their own (``**``), in both APIs."""

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import cuda

JITS = [pytest.param(gpux.jit, id="portable"), pytest.param(cuda.jit, id="facade")]


def _shifts(out, uout, x, u, n):
    for i in range(n.size):
        out[0, i] = x[0] << n[i]
        out[1, i] = x[1] >> n[i]
        out[2, i] = x[0] >> n[i]
        uout[0, i] = u[0] << n[i]
        uout[1, i] = u[0] >> n[i]
    s = n[0]
    s <<= 0
    v = x[1]
    v >>= n[n.size - 1]
    out[3, 0] = v


def _py_shift(v, s, left, bits, signed):
    """Python's shift (the amount taken as an unsigned 64-bit value, as PTX's clamp
    and numba-gpux take a negative one), wrapped to the type."""
    s &= (1 << 64) - 1
    s = min(s, 200)
    r = v << s if left else v >> s
    r &= (1 << bits) - 1
    return r - (1 << bits) if signed and r >= 1 << (bits - 1) else r


@pytest.mark.parametrize("jit", JITS)
def test_shifts_by_the_width_or_more(device, jit):
    k = jit(_shifts)
    amounts = np.array([0, 3, 63, 64, 65, 100, -1], np.int64)
    x = np.array([1, -8], np.int64)
    u = np.array([2 ** 63 + 5], np.uint64)
    out = cuda.device_array((4, amounts.size), np.int64)
    uout = cuda.device_array((2, amounts.size), np.uint64)
    k[1, 1](out, uout, cuda.to_device(x), cuda.to_device(u), cuda.to_device(amounts))
    got, ugot = out.copy_to_host(), uout.copy_to_host()
    for j, s in enumerate(amounts.tolist()):
        assert got[0, j] == _py_shift(1, s, True, 64, True), s
        assert got[1, j] == _py_shift(-8, s, False, 64, True), s
        assert got[2, j] == _py_shift(1, s, False, 64, True), s
        assert ugot[0, j] == _py_shift(2 ** 63 + 5, s, True, 64, False), s
        assert ugot[1, j] == _py_shift(2 ** 63 + 5, s, False, 64, False), s
    assert got[3, 0] == -1   # -8 >>= -1 (an amount past the width)


@pytest.mark.parametrize("jit", JITS)
def test_shift_by_a_constant_past_the_width_still_stores(device, jit):
    @jit
    def k(out, x):
        out[0] = x[0] << 64
        out[1] = x[1] >> 70
        out[2] = 7

    out = cuda.to_device(np.full(3, 99, np.int64))
    k[1, 1](out, cuda.to_device(np.array([5, -3], np.int64)))
    assert out.copy_to_host().tolist() == [0, -1, 7]


@pytest.mark.parametrize("jit", JITS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.int32, np.uint32, np.int64, np.uint64])
def test_numpy_shift_ufuncs_past_the_width_give_numpy_s_values(device, jit, dtype):
    # np.left_shift / np.right_shift in a kernel, on scalars and on arrays, with
    # amounts past the width: NumPy defines them (0, or -1 for a negative value
    # shifted right), as the operators above
    @jit
    def k(out, x, n):
        for i in range(n.size):
            out[0, i] = np.left_shift(x[0], n[i])
            out[1, i] = np.right_shift(x[1], n[i])
        np.left_shift(x[2:], n, out[2])
        np.right_shift(x[2:], n, out[3])

    bits = np.dtype(dtype).itemsize * 8
    n = np.array([0, 1, bits - 1, bits, bits + 1, 2 * bits + 3], dtype)
    big = np.iinfo(dtype).min if np.iinfo(dtype).min < 0 else np.iinfo(dtype).max
    x = np.concatenate([np.array([3, big], dtype), np.full(n.size, big, dtype)])
    out = cuda.to_device(np.zeros((4, n.size), dtype))
    k[1, 1](out, cuda.to_device(x), cuda.to_device(n))
    want = np.stack([np.left_shift(x[0], n), np.right_shift(x[1], n),
                     np.left_shift(x[2:], n), np.right_shift(x[2:], n)])
    np.testing.assert_array_equal(out.copy_to_host(), want)


@pytest.mark.parametrize("jit", JITS)
def test_division_by_zero_in_a_power_gives_inf_and_the_kernel_goes_on(device, jit):
    # Numba computes x ** n (an integer n) with a helper compiled on its own; compiled
    # with Numba's default error model, its 1 / 0 raised, and the kernel stopped
    # silently before either store
    @jit
    def k(out, x, n):
        out[0] = x[0] ** n[0]
        out[1] = np.float32(x[0]) ** n[0]
        out[2] = x[0] ** -1
        out[3] = 7.0

    out = cuda.to_device(np.full(4, -1.0))
    k[1, 1](out, cuda.to_device(np.array([0.0])), cuda.to_device(np.array([-1])))
    assert out.copy_to_host().tolist() == [np.inf, np.inf, np.inf, 7.0]


def test_complex_power_underflow_gives_numba_cudas_value(device):
    @cuda.jit
    def k(out, z, w):
        out[0] = z[0] ** w[0]
        out[1] = 1.0

    out = cuda.to_device(np.zeros(2, np.complex128))
    k[1, 1](out, cuda.to_device(np.array([1 + 1j])), cuda.to_device(np.array([-1000j])))
    got = out.copy_to_host()
    assert got[1] == 1.0            # the kernel went on
    assert not np.isfinite(got[0])  # an overflowing power, not a stopped kernel


def test_brev_of_a_signed_integer_is_unsigned(device):
    @cuda.jit
    def k(out):
        out[0] = cuda.brev(np.int32(1))
        out[1] = cuda.brev(np.int64(1))
        out[2] = cuda.brev(np.uint32(3))

    out = cuda.device_array(3, np.uint64)
    k[1, 1](out)
    assert out.copy_to_host().tolist() == [2 ** 31, 2 ** 63, 3 << 30]
