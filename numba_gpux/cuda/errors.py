"""``numba_gpux.cuda.errors``: numba.cuda's error module.

``LoweringError`` and ``UnsupportedBytecodeError`` are Numba's own (numba_gpux
compiles with Numba, whose lowering raises them); ``CudaLoweringError``, numba.cuda's
class for its own lowering failures, is ``LoweringError`` itself, so that code
catching it catches numba_gpux's lowering errors.  ``KernelRuntimeError`` is
``cuda.KernelRuntimeError`` (:class:`numba_gpux.errors.LaunchError`).
``normalize_kernel_dimensions`` checks a launch's grid and block as numba.cuda does,
with numba_gpux's launch checks (which also refuse dimensions below 1).
"""

from __future__ import annotations

from numba.core.errors import LoweringError, UnsupportedBytecodeError

from ..dispatcher import normalize_dims
from ..errors import LaunchError as KernelRuntimeError

__all__ = ["LoweringError", "UnsupportedBytecodeError", "CudaLoweringError",
           "KernelRuntimeError", "missing_launch_config_msg", "normalize_kernel_dimensions"]

CudaLoweringError = LoweringError

missing_launch_config_msg = """
Kernel launch configuration was not specified. Use the syntax:

kernel_function[blockspergrid, threadsperblock](arg0, arg1, ..., argn)

See https://numba.readthedocs.io/en/stable/cuda/kernels.html#kernel-invocation for help.

"""


def normalize_kernel_dimensions(griddim, blockdim):
    """(griddim, blockdim) as 3-tuples, from ints or sequences of 1 to 3 ints: a
    ValueError when either is missing (``missing_launch_config_msg``) or has more than
    three entries, a TypeError for an entry that is not an integer."""
    if griddim is None or blockdim is None:
        raise ValueError(missing_launch_config_msg)
    return normalize_dims(griddim, "griddim"), normalize_dims(blockdim, "blockdim")
