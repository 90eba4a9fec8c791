"""``numba_gpux.cuda.kernels.reduction``: ``Reduce`` (the facade's reduction)."""

from ..reduction import Reduce

__all__ = ["Reduce"]
