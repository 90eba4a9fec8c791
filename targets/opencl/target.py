"""OpenCL target data: SPIR-V 64-bit, OpenCL address spaces, device capabilities."""

from __future__ import annotations

from dataclasses import dataclass

from numba_gpux.interface import AddressSpaces, Target

from . import overlays  # noqa: F401  (fills the "spirv" and "opencl" registries)

__all__ = ["OpenCLTarget", "make_target", "SPIRV_ADDRSPACES", "TRIPLE", "DATA_LAYOUT"]

SPIRV_ADDRSPACES = AddressSpaces(generic=4, global_=1, shared=3, constant=2, private=0)
TRIPLE = "spirv64-unknown-unknown"
DATA_LAYOUT = ("e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-"
               "v512:512-v1024:1024-n8:16:32:64-G1")
DEFAULT_FEATURES = frozenset({"fp64", "int64_atomics"})


@dataclass(frozen=True)
class OpenCLTarget(Target):
    pass


def make_target(device=None, *, features=None) -> OpenCLTarget:
    if features is None:
        features = device.target_features if device is not None else DEFAULT_FEATURES
    return OpenCLTarget(
        name="opencl",
        families=("spirv",),
        triple=TRIPLE,
        data_layout=DATA_LAYOUT,
        addrspaces=SPIRV_ADDRSPACES,
        kernel_cc="spir_kernel",
        emit_kind="object",
        artifact_kind="spirv",
        features=frozenset(features),
        options=(("extern_prefixes", ("_Z", "__spirv")), ("legal_int_widths", (8, 16, 32, 64))),
    )
