"""``numba_gpux.cuda.tensor_map``: numba-cuda-mlir's TMA descriptors (tensor maps),
not supported.

numba-cuda-mlir's ``create_tensor_map_from_tensor`` encodes a CUDA tensor map
(``cuTensorMapEncodeTiled``) for its TMA copy intrinsics (``cp_async_bulk_tensor_2d``),
which exist on NVIDIA GPUs of compute capability 9.0 and newer only.  numba_gpux's
kernels take no tensor map argument (a 128-byte ``CUtensorMap`` passed by value to a
kernel parameter has no Numba type here), so the names exist for code that imports
them and calling :func:`create_tensor_map_from_tensor` raises an UnsupportedError
saying so, before anything touches a device.
"""

from __future__ import annotations

from ..errors import UnsupportedError

__all__ = ["TensorMapSwizzle", "TensorMapL2Promotion", "TensorMapFloatOOBFill",
           "TensorMapInterleave", "create_tensor_map_from_tensor"]

_WHY = ("CUDA tensor maps (TMA descriptors) are not supported by numba_gpux: its kernels "
        "take no CUtensorMap parameter; copy tiles with shared arrays and loads instead")


class _Options:
    """numba-cuda-mlir's option namespaces; here without values (see the module)."""


class TensorMapSwizzle(_Options):
    """Tensor map swizzle options (no values: tensor maps are not supported)."""


class TensorMapL2Promotion(_Options):
    """Tensor map L2 promotion options (no values: tensor maps are not supported)."""


class TensorMapFloatOOBFill(_Options):
    """Tensor map out-of-bounds fill options (no values: tensor maps are not supported)."""


class TensorMapInterleave(_Options):
    """Tensor map interleave options (no values: tensor maps are not supported)."""


def create_tensor_map_from_tensor(tensor, box_dim, swizzle=None, transpose=False,
                                  l2promo=None, oob=None, interleave=None):
    """numba-cuda-mlir's TMA descriptor maker: an UnsupportedError (module docstring)."""
    raise UnsupportedError(f"cuda.tensor_map.create_tensor_map_from_tensor(): {_WHY}")
