"""Metal target data: MSL source from the neutral IR, no double precision."""

from __future__ import annotations

from dataclasses import dataclass

from numba_gpux.cemit import SourceTarget
from numba_gpux.interface import NEUTRAL_ADDRSPACES

from . import msl, overlays  # noqa: F401  (register the "msl" dialect and "metal.src")

__all__ = ["MetalTarget", "make_target", "DEFAULT_FEATURES"]

# Apple GPUs: 32-wide SIMD-groups, half precision, no doubles, no 64-bit atomics
DEFAULT_FEATURES = frozenset({"fp16", "subgroups"})
# The optimizer needs an LLVM target machine; NVPTX's address-space numbering is
# the neutral one, so optimizing with it keeps every pointer's meaning (no NVPTX
# code is generated).  Same choice as the OpenCL C route (targets/opencl/source.py).
OPT_TRIPLE = "nvptx64-nvidia-cuda"
OPT_DATA_LAYOUT = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"


@dataclass(frozen=True)
class MetalTarget(SourceTarget):
    pass


def make_target(device=None, *, features=None) -> MetalTarget:
    if features is None:
        features = device.target_features if device is not None else DEFAULT_FEATURES
    return MetalTarget(
        name="metal",
        families=(),
        triple=OPT_TRIPLE,
        data_layout=OPT_DATA_LAYOUT,
        addrspaces=NEUTRAL_ADDRSPACES,
        emit_kind="source",
        artifact_kind="msl",
        features=frozenset(features),
        options=(("dialect", "msl"), ("intrinsics_by_name", True),
                 ("source_families", ("metal",))),
    )
