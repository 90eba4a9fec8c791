"""``numba_gpux.cuda.config`` (also ``cuda.core.config``, numba.cuda's path for it):
numba.cuda's configuration.

``ENABLE_CUDASIM`` is False: kernels are always compiled, never simulated.
The CUDA-specific settings numba.cuda code reads have their numba.cuda
defaults here (numba_gpux acts on ``CUDA_WARN_ON_IMPLICIT_COPY``, the warning of
a launch that copies host arrays, and ``CUDA_LOW_OCCUPANCY_WARNINGS``, the warning
of a small grid; both read ``NUMBA_<NAME>`` from the environment, as numba.cuda
does); any other name is read from
Numba's own ``numba.core.config`` (``DISABLE_PERFORMANCE_WARNINGS``, ``OPT``...),
and a write of such a name (``config.DUMP_IR = True``) sets it there, where Numba's
compiler reads it: its dumps (``DUMP_BYTECODE``, ``DUMP_CFG``, ``DUMP_IR``,
``DUMP_LLVM``...) print as the facade's kernels compile, as under numba.cuda;
``DUMP_ASSEMBLY`` prints a kernel's target code as it is made (dispatcher.py).
"""

from __future__ import annotations

import os
import sys as _sys
import types as _types

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


def _numbas(module, name: str) -> bool:
    """Whether *name* is one of Numba's own settings (an upper-case name of
    ``numba.core.config``, not one of its imports or functions) rather than one of this
    module's."""
    return name[:1].isalpha() and name.isupper() and name not in vars(module) \
        and hasattr(_numba_config, name)


#: Numba's settings written through this module, with the values they had before
_replaced: dict = {}


class _Config(_types.ModuleType):
    """This module, whose writes of Numba's own settings (``config.DUMP_IR = True``,
    ``DUMP_BYTECODE``, ``DUMP_CFG``, ``OPT``...) go to ``numba.core.config``, which
    Numba's compiler passes read, as a write of numba-cuda's config reaches its own
    compiler: otherwise the value would stay here, unseen by the compile.  Deleting
    such a name undoes the writes, as deleting a value set on this module would."""

    def __setattr__(self, name: str, value) -> None:
        if _numbas(self, name):
            # NUMBA_* environment changes not yet read are read first: Numba's compiler
            # reads them before each compile, and would undo this write with them
            _numba_config.reload_config()
            _replaced.setdefault(name, getattr(_numba_config, name))
            setattr(_numba_config, name, value)
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if _numbas(self, name):
            if name not in _replaced:
                raise AttributeError(f"{name}: numba_gpux.cuda.config has not set this "
                                     f"setting of Numba's, so there is nothing to undo")
            setattr(_numba_config, name, _replaced.pop(name))
        else:
            super().__delattr__(name)


_sys.modules[__name__].__class__ = _Config
