"""Kernel launches with keyword arguments and Python defaults, on every target
(``kernel[grid, block](x, out=..., scale=...)``), and the errors for missing,
unknown or repeated arguments, raised before anything runs."""

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import cuda
from numba_gpux.errors import LaunchError


@gpux.jit
def affine(x, out, scale=2.0, offset=1):
    i = gpux.grid(1)
    if i < x.size:
        out[i] = x[i] * scale + offset


def test_keywords_and_defaults(device):
    x = gpux.to_device(np.arange(8, dtype=np.float32))
    out = gpux.device_array(8, np.float32)
    base = np.arange(8, dtype=np.float32)
    affine[1, 8](x, out)
    np.testing.assert_allclose(out.copy_to_host(), base * 2 + 1)
    affine[1, 8](x, out=out, offset=10)
    np.testing.assert_allclose(out.copy_to_host(), base * 2 + 10)
    affine[1, 8](out=out, x=x, scale=3.0)
    np.testing.assert_allclose(out.copy_to_host(), base * 3 + 1)
    affine[1, 8](x, out, 0.5, offset=-1)
    np.testing.assert_allclose(out.copy_to_host(), base * 0.5 - 1)
    affine[1, 8](x, out, 4.0, 2)  # all positional: the fast path, same results
    np.testing.assert_allclose(out.copy_to_host(), base * 4 + 2)


def test_host_arrays_by_keyword(device):
    x = np.arange(5.0, dtype=np.float32)
    out = np.zeros(5, np.float32)
    affine[1, 8](x=x, out=out, scale=-1.0)
    np.testing.assert_allclose(out, -x + 1)


def test_none_default_prunes_the_branch(device):
    @gpux.jit
    def copy_or_fill(x, out=None):
        i = gpux.grid(1)
        if i < x.size:
            if out is None:
                x[i] = -1
            else:
                out[i] = x[i]

    x = gpux.to_device(np.arange(4, dtype=np.int32))
    out = gpux.device_array(4, np.int32)
    copy_or_fill[1, 4](x, out=out)
    np.testing.assert_equal(out.copy_to_host(), np.arange(4))
    copy_or_fill[1, 4](x)
    np.testing.assert_equal(x.copy_to_host(), [-1] * 4)


def test_numba_cuda_facade_keywords(device):
    @cuda.jit
    def axpy(out, x, y, a=1.0):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]

    x = cuda.to_device(np.ones(6))
    y = cuda.to_device(np.arange(6.0))
    out = cuda.device_array(6)
    axpy[1, 8](out, y=y, x=x)
    np.testing.assert_allclose(out.copy_to_host(), 1 + np.arange(6.0))
    axpy[1, 8](out, x, y, a=3.0)
    np.testing.assert_allclose(out.copy_to_host(), 3 + np.arange(6.0))


@pytest.mark.parametrize("args,kwargs,message", [
    ((), {"out": None}, "missing a required argument: 'x'"),
    ((1,), {"out": 2, "z": 3}, "unexpected keyword argument 'z'"),
    ((1, 2), {"x": 3}, "multiple values for argument 'x'"),
    ((1, 2, 3, 4, 5), {}, "too many positional arguments"),
])
def test_bad_arguments_rejected_before_launch(args, kwargs, message):
    before = dict(affine.stats)
    with pytest.raises(LaunchError, match=message) as e:
        affine[1, 8](*args, **kwargs)
    assert "affine(x, out, scale=2.0, offset=1)" in str(e.value)
    assert affine.stats == before  # nothing was compiled, nothing ran


def test_keyword_only_parameters_are_rejected():
    @gpux.jit
    def kw_only(x, *, y=1):
        x[0] = y

    with pytest.raises(LaunchError, match="keyword-only"):
        kw_only[1, 1](np.zeros(1), y=2)
