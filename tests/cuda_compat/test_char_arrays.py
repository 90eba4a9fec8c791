"""NumPy's fixed-width character arrays ("S" and "U" dtypes) as kernel arguments, as
numba.cuda takes them: elements are values (read, stored, compared with constants), no
string is made."""

from __future__ import annotations

import numpy as np
import pytest

from numba_gpux import cuda


@pytest.mark.parametrize("dtype, value", [("<U12", "XYZ"), ("S12", b"XYZ")])
def test_a_constant_stored_into_each_element(device, dtype, value):
    if dtype == "<U12":
        @cuda.jit
        def store(arr):
            i = cuda.grid(1)
            if i < len(arr):
                arr[i] = "XYZ"
    else:
        @cuda.jit
        def store(arr):
            i = cuda.grid(1)
            if i < len(arr):
                arr[i] = b"XYZ"

    arr = np.zeros(9, dtype=dtype)
    store[1, 8](arr)  # the last element is past the grid
    want = np.zeros_like(arr)
    want[:-1] = value
    np.testing.assert_array_equal(arr, want)


@pytest.mark.parametrize("dtype", ["<U7", "S7"])
def test_elements_copy_between_arrays(device, dtype):
    @cuda.jit
    def reverse(a, b):
        i = cuda.grid(1)
        if i < a.size:
            b[a.size - 1 - i] = a[i]

    a = np.array(["abc", "defgh", "", "x" * 7], dtype=dtype)
    b = np.zeros_like(a)
    reverse[1, 4](a, b)
    np.testing.assert_array_equal(b, a[::-1])


@pytest.mark.parametrize("dtype", ["<U5", "S5"])
def test_char_array_kernels_assemble_for_cuda(ptxas, dtype):
    def store(arr):
        i = cuda.grid(1)
        if i < len(arr):
            arr[i] = arr[0]

    from numba import typeof

    from numba_gpux.targets.cuda.toolkit import ptxas_check

    sig = (typeof(np.zeros(2, dtype=dtype)),)
    ptx, _ = cuda.compile_ptx(store, sig, cc=(8, 0))
    ok, log = ptxas_check(ptx, (8, 0))
    assert ok, log
