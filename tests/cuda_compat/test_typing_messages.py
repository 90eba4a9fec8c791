"""Typing errors of kernel-language calls read as numba.cuda's do: the intrinsic is
named like the function it stands for, invalid dtype strings say so in Numba's
words, and ``np.dtype(...)`` works in a kernel as on Numba's CPU target."""

import numpy as np
import pytest
from numba.core.errors import TypingError
from numba.core.types import float32, int32, void

from numba_gpux import cuda


def test_a_rejected_intrinsic_call_names_the_function(device):
    def listed_shape(a):
        s = cuda.shared.array(shape=[5, 6], dtype=float32)
        a[0, 0] = s[0, 0]

    with pytest.raises(TypingError) as e:
        cuda.jit((float32[:, :],))(listed_shape)
    msg = str(e.value)
    assert "No implementation of function Function(<function shared.array" in msg
    assert ">>> array(shape=list(int64)<iv=[5, 6]>, dtype=class(float32))" in msg
    assert "shape must be an int or a tuple of ints" in msg  # our reason stays


def _shared_int33(x):
    arr = cuda.shared.array(10, dtype="int33")
    arr[0] = x[0]


def _local_int33(x):
    arr = cuda.local.array(10, dtype="int33")
    arr[0] = x[0]


@pytest.mark.parametrize("fn", [_shared_int33, _local_int33])
def test_an_invalid_dtype_string_is_named(device, fn):
    with pytest.raises(TypingError, match="Invalid NumPy dtype specified: 'int33'"):
        cuda.jit(void(int32[::1]))(fn)


def test_np_dtype_in_a_kernel(device):
    @cuda.jit
    def fill(out):
        a = cuda.local.array(4, dtype=np.dtype("float32"))
        b = cuda.local.array(4, dtype=np.dtype(np.int16))
        for i in range(4):
            a[i] = i * 0.5
            b[i] = i
        for i in range(4):
            out[i] = a[i] + b[i]

    out = np.zeros(4, dtype=np.float64)
    fill[1, 1](out)
    np.testing.assert_equal(out, [0.0, 1.5, 3.0, 4.5])


def test_an_object_dtype_cannot_be_typed(device):
    def objects():
        arr = cuda.shared.array(10, dtype=np.dtype("O"))  # noqa: F841

    with pytest.raises(TypingError, match="Cannot infer the type of variable 'arr'"):
        cuda.jit(void())(objects)
