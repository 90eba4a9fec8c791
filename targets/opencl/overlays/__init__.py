"""Overlay definitions for SPIR-V / OpenCL, one module per feature area.

Each module fills ``registry("spirv")`` (shared by every SPIR-V target) or
``registry("opencl")`` (this target only) with LLVM IR definitions of the
portable ``__gpux_*`` intrinsics, in SPIR-V address-space numbering
(generic 4, global 1, shared/workgroup 3, constant 2, private 0).
"""

from numba_gpux.overlays import registry

SPIRV = registry("spirv")
OPENCL = registry("opencl")

# feature modules register themselves by being imported
from . import core, memory, atomics, bits, subgroups, types, printing  # noqa: E402,F401
