"""PYTEST_DONT_REWRITE (the kernels use assert).  Device-side errors: with debug=True, out-of-bounds indexing, assert and raise in a
kernel or in a device function it calls reach the host as the Python exception, naming
the kernel, the source line and the thread and block indices."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import numba_gpux as gpux

pytestmark = pytest.mark.feature("debug_errors")


@gpux.jit(device=True)
def checked_double(x):
    if x > 100:
        raise ValueError("value too large")
    return x * 2


@gpux.jit(debug=True)
def debug_kernel(a, out):
    i = gpux.grid(1)
    out[i] = checked_double(a[i])
    assert a[i] >= 0, "negative input"


@gpux.jit(debug=True)
def divide(a, b, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a[i] // b[i]


@gpux.jit
def nodebug_kernel(a, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = checked_double(a[i])


CONFORMANCE_KERNELS = [
    (debug_kernel, "void(float64[::1], float64[::1])"),
    (divide, "void(int32[::1], int32[::1], int32[::1])"),
]


def _line(fn, text):
    src, start = inspect.getsourcelines(fn.py_func)
    return start + next(k for k, line in enumerate(src) if text in line)


def test_out_of_bounds(device):
    a = gpux.to_device(np.arange(4.0))
    out = gpux.to_device(np.zeros(8))
    with pytest.raises(IndexError) as e:
        debug_kernel[2, 4](a, out)  # 8 threads read a[0..7]
    msg = str(e.value)
    assert "debug_kernel" in msg and f", line {_line(debug_kernel, 'checked_double(a[i])')}," in msg
    assert "thread_idx=(0, 0, 0), block_idx=(1, 0, 0)" in msg


def test_raise_in_device_function(device):
    a = np.arange(8.0)
    a[6] = 1000
    with pytest.raises(ValueError, match="value too large") as e:
        debug_kernel[2, 4](gpux.to_device(a), gpux.to_device(np.zeros(8)))
    msg = str(e.value)
    assert f", line {_line(checked_double, 'raise ValueError')}," in msg and "checked_double" in msg
    assert "thread_idx=(2, 0, 0), block_idx=(1, 0, 0)" in msg


def test_assert(device):
    a = np.arange(8.0)
    a[1] = -1
    with pytest.raises(AssertionError, match="negative input") as e:
        debug_kernel[1, 8](gpux.to_device(a), gpux.to_device(np.zeros(8)))
    assert f", line {_line(debug_kernel, 'assert')}," in str(e.value)
    assert "thread_idx=(1, 0, 0), block_idx=(0, 0, 0)" in str(e.value)


def test_zero_division(device):
    b = np.ones(4, np.int32)
    b[3] = 0
    with pytest.raises(ZeroDivisionError) as e:
        divide[1, 4](*(gpux.to_device(x) for x in (np.arange(4, dtype=np.int32), b,
                                                     np.zeros(4, np.int32))))
    assert "thread_idx=(3, 0, 0)" in str(e.value)


def test_no_error_and_buffer_rearmed(device):
    a = gpux.to_device(np.arange(8.0))
    out = gpux.to_device(np.zeros(8))
    debug_kernel[1, 8](a, out)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(8.0) * 2)
    bad = np.arange(8.0)
    bad[0] = -3
    with pytest.raises(AssertionError):
        debug_kernel[1, 8](gpux.to_device(bad), out)
    debug_kernel[1, 8](a, out)  # the next clean launch raises nothing


def test_without_debug_nothing_is_checked(device):
    a = np.arange(4.0)
    a[2] = 1000
    out = gpux.to_device(np.zeros(4))
    nodebug_kernel[1, 4](gpux.to_device(a), out)  # the raise ends the work-item quietly
    got = out.copy_to_host()
    assert list(got[[0, 1, 3]]) == [0, 2, 6]
    sym, text = nodebug_kernel.kernel_ir(nodebug_kernel.signatures[0])
    assert "cmpxchg" not in text  # no error buffer, no atomics
