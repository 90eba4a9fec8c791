"""numba-gpux: compile Python kernels with Numba, run them on CUDA, OpenCL and Metal GPUs.

Importing this package loads no GPU driver, no OpenCL loader, no LLVM target
and parses no library; all of that happens on first use.
"""

from __future__ import annotations

from ._version import __version__


class _CheckoutTargets:
    """``numba_gpux.targets`` when this package runs from a source checkout.

    setup.cfg installs the top-level folder ``targets/`` as ``numba_gpux.targets``
    (its ``package_dir``, the one mapping), so an installed copy has the folder
    ``numba_gpux/targets``.  A checkout has none: imported from there (``python -m
    pytest``, ``python -m numba_gpux`` at its root), this finder, first on
    ``sys.meta_path``, answers that one name with the checkout's ``targets/``."""

    def __init__(self, folder: str):
        self.folder = folder

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "numba_gpux.targets":
            return None
        import importlib.util
        import os

        return importlib.util.spec_from_file_location(
            fullname, os.path.join(self.folder, "__init__.py"),
            submodule_search_locations=[self.folder])

    @classmethod
    def install(cls, package_dir: str) -> None:
        import os
        import sys

        root = os.path.dirname(package_dir)
        folder = os.path.join(root, "targets")
        if (not os.path.isdir(os.path.join(package_dir, "targets"))  # not installed
                and os.path.isfile(os.path.join(root, "setup.cfg"))
                and os.path.isfile(os.path.join(folder, "__init__.py"))):
            # first: an editable install's finder may name another checkout's folder
            sys.meta_path.insert(0, cls(folder))


_CheckoutTargets.install(__path__[0])

from .dispatcher import jit, GpuxFunction, LaunchConfig  # noqa: E402
from .language import (  # noqa: E402
    grid, gridsize, thread_idx, block_idx, block_dim, grid_dim, barrier,
)
from .memory import (  # noqa: E402
    DeviceArray, to_device, device_array, device_array_like, is_device_array,
)
# ``available_targets``, not ``targets``: importing the subpackage numba_gpux.targets
# would replace a package attribute of that name
from .devices import Device, devices, default_device, select_device, use_device  # noqa: E402
from .devices import targets as available_targets  # noqa: E402
from .api import compile, synchronize  # noqa: E402
from .errors import (  # noqa: E402
    GpuxUserError, LaunchError, LaunchTypeError, DeviceNotFoundError, ValidationError,
    UnsupportedError, InternalCompilerError, ToolchainError,
)
from .launch import NumpyArgumentWarning  # noqa: E402
from . import probe as _probe  # noqa: E402,F401  (devices are probed before they are listed)

# Names imported on first use (module __getattr__), so that ``import numba_gpux``
# stays within a few percent of ``import numba``.  Numba resolves
# ``gpux.shared`` & co. in kernels by getattr, which imports them then.
_LAZY = {
    "hooks": (".hooks", None),
    "tuning": (".hooks", "tuning"),
    "autotune": (".autotuning", "autotune"),
    "autotuning": (".autotuning", None),
    "overlay": (".extending", "overlay"),
    "subgroup": (".language.subgroups", "subgroup"),
    **{n: (".language.memory", n) for n in (
        "shared", "local", "const", "barrier_count", "barrier_and", "barrier_or", "fence",
        "fence_block", "fence_device", "fence_system", "nanosleep")},
    "atomic": (".language.atomics", "atomic"),
    "this_grid": (".language.cooperative", "this_grid"),
    "this_block": (".language.cooperative", "this_block"),
    "GridSyncError": (".language.debug", "GridSyncError"),
    "cache_hints": (".language.cachehints", None),
    **{n: (".language.bits", n) for n in ("popc", "clz", "ffs", "brev", "fma", "cbrt", "select")},
}


def __getattr__(name: str):
    spec = _LAZY.get(name)
    if spec is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    mod = importlib.import_module(spec[0], __name__)
    value = mod if spec[1] is None else getattr(mod, spec[1])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "__version__",
    "jit", "GpuxFunction", "LaunchConfig",
    "grid", "gridsize", "thread_idx", "block_idx", "block_dim", "grid_dim", "barrier",
    "DeviceArray", "to_device", "device_array", "device_array_like", "is_device_array",
    "Device", "devices", "default_device", "select_device", "use_device", "available_targets",
    "compile", "synchronize",
    "GpuxUserError", "LaunchError", "LaunchTypeError", "DeviceNotFoundError", "ValidationError",
    "UnsupportedError", "InternalCompilerError", "ToolchainError", "NumpyArgumentWarning",
    "hooks", "tuning", "autotune", "autotuning", "overlay",
    "subgroup",
    "shared", "local", "const", "barrier_count", "barrier_and", "barrier_or", "fence",
    "fence_block", "fence_device", "fence_system", "nanosleep", "atomic",
    "this_grid", "this_block", "GridSyncError",
    "popc", "clz", "ffs", "brev", "fma", "cbrt", "select",
]
