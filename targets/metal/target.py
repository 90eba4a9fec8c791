"""Metal target data: MSL source from the neutral IR, no double precision."""

from __future__ import annotations


from numba_gpux.targets.cfamily import SourceTarget, make_source_target
from numba_gpux.interface import IndexLimits

from . import msl, overlays  # noqa: F401  (register the "msl" dialect and "metal.src")

__all__ = ["MetalTarget", "make_target", "DEFAULT_FEATURES", "INDEX_LIMITS"]

# Apple GPUs: 32-wide SIMD-groups, half precision, no doubles, no 64-bit atomics
DEFAULT_FEATURES = frozenset({"fp16", "subgroups"})
# The optimizer needs an LLVM target machine; NVPTX's address-space numbering is
# the neutral one, so optimizing with it keeps every pointer's meaning (no NVPTX
# code is generated).  Same choice as the OpenCL C route (targets/opencl_c/target.py).
OPT_TRIPLE = "nvptx64-nvidia-cuda"
#: at most 1024 threads per threadgroup on every Apple GPU; threadgroups per grid
#: as the compiler assumes them (the launcher refuses more: max_grid_dims)
INDEX_LIMITS = IndexLimits(block=(1024, 1024, 1024), grid=(2 ** 31 - 1,) * 3)


class MetalTarget(SourceTarget):
    pass


def make_target(device=None, *, features=None) -> MetalTarget:
    return make_source_target(MetalTarget, device, features, name="metal", dialect="msl",
                              artifact_kind="msl", default_features=DEFAULT_FEATURES,
                              opt_triple=OPT_TRIPLE, index_limits=INDEX_LIMITS)
