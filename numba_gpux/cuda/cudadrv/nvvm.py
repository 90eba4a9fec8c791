"""``numba_gpux.cuda.cudadrv.nvvm``: what code checks of numba.cuda's NVVM layer.

numba_gpux compiles CUDA kernels with LLVM's NVPTX back end, not NVVM, so
``is_available()`` is False and ``NVVM()`` raises :class:`NvvmSupportError`.
``LibDevice`` finds libdevice (``libdevice.10.bc``) as the CUDA target does.
"""

from __future__ import annotations

from .error import NvvmError, NvvmSupportError

__all__ = ["is_available", "NVVM", "LibDevice", "NvvmError", "NvvmSupportError", "nvvmError",
           "ADDRSPACE_GENERIC", "ADDRSPACE_GLOBAL", "ADDRSPACE_SHARED", "ADDRSPACE_CONSTANT",
           "ADDRSPACE_LOCAL", "compile_ir"]

ADDRSPACE_GENERIC, ADDRSPACE_GLOBAL, ADDRSPACE_SHARED = 0, 1, 3
ADDRSPACE_CONSTANT, ADDRSPACE_LOCAL = 4, 5
nvvmError = None


def is_available() -> bool:
    """False: numba_gpux does not use NVVM (kernels go through LLVM's NVPTX back end)."""
    return False


class NVVM:
    def __init__(self, *args, **kwargs):
        raise NvvmSupportError("numba_gpux does not use NVVM: CUDA kernels are compiled with "
                               "LLVM's NVPTX back end")


def compile_ir(llvmir, **options):
    raise NvvmSupportError("numba_gpux does not use NVVM; compile kernels with "
                           "numba_gpux.cuda.compile_ptx")


class LibDevice:
    """libdevice's bitcode, found where the CUDA target looks for it."""

    def __init__(self):
        from numba_gpux.targets.cuda import libdevice as _ld

        path = _ld.find_libdevice()
        if path is None:
            raise NvvmSupportError(_ld.LIBDEVICE_HINT)
        self.path = path

    def get(self) -> bytes:
        with open(self.path, "rb") as f:
            return f.read()
