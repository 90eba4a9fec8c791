"""``numba_gpux.cuda.kernels.transpose``: ``transpose(a, b=None)`` of a 2-D device array."""

from __future__ import annotations

from ...errors import GpuxUserError

__all__ = ["transpose"]

_kernel = None


def _get_kernel():
    global _kernel
    if _kernel is None:
        from .. import grid
        from ..decorators import jit

        @jit
        def transpose_kernel(src, dst):
            i, j = grid(2)
            if i < dst.shape[0] and j < dst.shape[1]:
                dst[i, j] = src[j, i]

        _kernel = transpose_kernel
    return _kernel


def transpose(a, b=None):
    """Write the transpose of the 2-D device array *a* into *b* (a new device array by
    default) with a kernel, and return *b*."""
    from .. import api

    if a.ndim != 2:
        raise GpuxUserError(f"transpose needs a 2-D array, got {a.ndim}-D")
    if b is None:
        b = api.device_array((a.shape[1], a.shape[0]), dtype=a.dtype)
    if b.shape != (a.shape[1], a.shape[0]) or b.dtype != a.dtype:
        raise GpuxUserError(f"transpose: output must be {a.dtype} of shape "
                            f"{(a.shape[1], a.shape[0])}, got {b.dtype} {b.shape}")
    tile = 16
    blocks = ((b.shape[0] + tile - 1) // tile, (b.shape[1] + tile - 1) // tile)
    _get_kernel()[blocks, (tile, tile)](a, b)
    return b
