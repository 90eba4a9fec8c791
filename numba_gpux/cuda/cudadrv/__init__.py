"""``numba_gpux.cuda.cudadrv``: the names of numba.cuda's driver layer that code checks.

numba_gpux has no CUDA driver layer of its own: each module here maps
numba.cuda's names onto numba_gpux's devices, device arrays and errors, and a
driver-only feature raises :class:`numba_gpux.UnsupportedError` when used.
"""

from . import devicearray, devices, driver, error, linkable_code, nvvm, runtime  # noqa: F401

__all__ = ["devicearray", "devices", "driver", "error", "linkable_code", "nvvm", "runtime"]
