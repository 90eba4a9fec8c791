"""``numba_gpux.cuda.kernels``: numba.cuda's ready-made kernels (reduction, transpose)."""

from . import reduction, transpose  # noqa: F401

__all__ = ["reduction", "transpose"]
