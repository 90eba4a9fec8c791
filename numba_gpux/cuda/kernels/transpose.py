"""``numba_gpux.cuda.kernels.transpose``: ``transpose(a, b=None)`` of a 2-D device array."""

from __future__ import annotations

from .._arrays import transpose_2d as transpose

__all__ = ["transpose"]
