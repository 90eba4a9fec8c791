"""``numba_gpux.cuda.cudadrv.error``: numba.cuda's driver-layer exception types."""

from __future__ import annotations

from ...errors import DriverError
from ..api import CudaSupportError

__all__ = ["CudaDriverError", "CudaRuntimeError", "CudaSupportError", "NvvmError",
           "NvvmSupportError", "NvvmWarning", "NvrtcError", "NvrtcCompilationError",
           "NvrtcSupportError", "CCSupportError"]


#: a device driver call failed: the runtimes' own errors (a CUDA driver call's, or
#: using CUDA in a process forked after its parent initialized it) are this class
CudaDriverError = DriverError


class CudaRuntimeError(Exception):
    """A CUDA runtime call failed."""


class NvvmError(Exception):
    """NVVM failed (numba_gpux compiles with LLVM's NVPTX back end, not NVVM)."""


class NvvmSupportError(ImportError):
    """NVVM is not available (it never is: numba_gpux does not use it)."""


class NvvmWarning(Warning):
    pass


class NvrtcError(Exception):
    pass


class NvrtcCompilationError(NvrtcError):
    pass


class NvrtcSupportError(ImportError):
    pass


class CCSupportError(RuntimeError):
    """The device's compute capability is not supported."""
