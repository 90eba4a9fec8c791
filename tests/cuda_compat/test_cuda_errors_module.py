"""``cuda.errors``: numba.cuda's error module."""

import pytest
from numba.core import errors as numba_errors

from numba_gpux import cuda
from numba_gpux.cuda import errors


def test_errors_module_names():
    assert errors.LoweringError is numba_errors.LoweringError
    assert errors.CudaLoweringError is numba_errors.LoweringError
    assert errors.UnsupportedBytecodeError is numba_errors.UnsupportedBytecodeError
    assert errors.KernelRuntimeError is cuda.KernelRuntimeError


def test_normalize_kernel_dimensions():
    assert errors.normalize_kernel_dimensions(4, (8, 2)) == ((4, 1, 1), (8, 2, 1))
    assert errors.normalize_kernel_dimensions([2, 3, 4], 1) == ((2, 3, 4), (1, 1, 1))
    with pytest.raises(ValueError, match="launch configuration was not specified"):
        errors.normalize_kernel_dimensions(None, 32)
    with pytest.raises(ValueError, match="1, 2 or 3 integers"):
        errors.normalize_kernel_dimensions((1, 1, 1, 1), 32)
    with pytest.raises(TypeError, match="sequence of integers"):
        errors.normalize_kernel_dimensions(1, 2.5)
