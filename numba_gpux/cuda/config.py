"""``numba_gpux.cuda.config`` (also ``cuda.core.config``, numba.cuda's path for it):
numba.cuda's configuration.

``ENABLE_CUDASIM`` is False: kernels are always compiled, never simulated.
The CUDA-specific settings numba.cuda code reads have their numba.cuda
defaults here (numba_gpux acts on ``CUDA_WARN_ON_IMPLICIT_COPY``, the warning of
a launch that copies host arrays, and ``CUDA_LOW_OCCUPANCY_WARNINGS``, the warning
of a small grid; both read ``NUMBA_<NAME>`` from the environment, as numba.cuda
does); any other name is read from
Numba's own ``numba.core.config`` (``DISABLE_PERFORMANCE_WARNINGS``, ``OPT``...).
"""

from __future__ import annotations

import os

from numba.core import config as _numba_config

__all__ = ["ENABLE_CUDASIM", "CUDA_LOW_OCCUPANCY_WARNINGS", "CUDA_WARN_ON_IMPLICIT_COPY",
           "CUDA_USE_NVIDIA_BINDING", "CUDA_PER_THREAD_DEFAULT_STREAM", "CUDA_LOG_LEVEL",
           "CUDA_DEFAULT_PTX_CC", "CUDA_ENABLE_PYNVJITLINK", "CUDA_ENABLE_MINOR_VERSION_COMPATIBILITY",
           "CUDA_DEBUGINFO_DEFAULT", "CUDA_ARRAY_INTERFACE_SYNC", "CUDA_MEMORY_MANAGER",
           "CUDA_ENABLE_NRT", "CUDA_DEBUG_POLY", "CUDA_DEBUG_POLY_USE_TYPED_CONST"]



def _env_int(name: str, default: int) -> int:
    """numba.cuda's reading of a ``NUMBA_<name>`` environment variable as an int."""
    value = os.environ.get(f"NUMBA_{name}", "")
    try:
        return int(value) if value else default
    except ValueError:
        import warnings

        warnings.warn(f"environment variable NUMBA_{name}={value!r} is not an integer; "
                      f"using {default}")
        return default


ENABLE_CUDASIM = False
#: warn of kernel[griddim, ...] with fewer than 128 blocks (numba.cuda's default: on)
CUDA_LOW_OCCUPANCY_WARNINGS = _env_int("CUDA_LOW_OCCUPANCY_WARNINGS", 1)
CUDA_WARN_ON_IMPLICIT_COPY = _env_int("CUDA_WARN_ON_IMPLICIT_COPY", 1)
CUDA_USE_NVIDIA_BINDING = True
CUDA_PER_THREAD_DEFAULT_STREAM = False
CUDA_LOG_LEVEL = ""
CUDA_DEFAULT_PTX_CC = (7, 5)
CUDA_ENABLE_PYNVJITLINK = False
CUDA_ENABLE_MINOR_VERSION_COMPATIBILITY = False
CUDA_DEBUGINFO_DEFAULT = False
CUDA_ARRAY_INTERFACE_SYNC = True
CUDA_MEMORY_MANAGER = "default"
CUDA_ENABLE_NRT = False
#: numba.cuda's switch for debug info that describes a variable holding values of
#: several types as a DWARF 5 variant part (numba.cuda turns it on from CUDA 13.2);
#: numba_gpux's debug info has no variant parts, so it is off, as numba.cuda's is
#: on older toolkits
CUDA_DEBUG_POLY = False
#: with CUDA_DEBUG_POLY, whether variant members carry typed constants (off with it)
CUDA_DEBUG_POLY_USE_TYPED_CONST = False


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    try:
        return getattr(_numba_config, name)
    except AttributeError:
        raise AttributeError(f"numba_gpux.cuda.config has no setting {name!r}") from None
