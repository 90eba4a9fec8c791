"""``numba_gpux.cuda.np``: numba.cuda's ``np`` package (``numpy_support``)."""

from . import numpy_support  # noqa: F401

__all__ = ["numpy_support"]
