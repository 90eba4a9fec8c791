"""``numba_gpux.cuda.cudadrv.runtime``: numba.cuda's ``runtime`` object."""

from __future__ import annotations

from .. import api as _api

__all__ = ["runtime", "Runtime"]


class Runtime:
    """``cuda.runtime``: version queries."""

    def get_version(self) -> tuple:
        """The CUDA version cuda-python reports, or (0, 0) without one."""
        return _api.driver_version()

    def is_supported_version(self) -> bool:
        return True

    @property
    def supported_versions(self) -> tuple:
        return (self.get_version(),)


runtime = Runtime()
