"""Overlay definitions for SPIR-V / OpenCL, one module per feature area.

Each module fills ``registry("spirv")`` (shared by every SPIR-V target) or
``registry("opencl")`` (this target only) with LLVM IR definitions of the
portable ``__gpux_*`` intrinsics, in SPIR-V address-space numbering
(generic 4, global 1, shared/workgroup 3, constant 2, private 0).  The core
definitions, which nearly every kernel calls, and the float16 math are imported
with the package; the other feature modules are named for the prefixes of what
they define and imported when a kernel first needs one
(``OverlayRegistry.define_module``).
"""

from numba_gpux.language.intrinsics import PRINTF_PREFIX
from numba_gpux.overlays import registry

SPIRV = registry("spirv")
OPENCL = registry("opencl")
#: slots in each work-group array through which split sub-groups shuffle (subgroups.py):
#: the largest work-group of a device given the feature "split_subgroups"
SPLIT_SLOTS = 8192

# feature modules register themselves by being imported
from . import core, types  # noqa: E402,F401

SPIRV.define_module(f"{__name__}.memory", ("__gpux_barrier_", "__gpux_fence_"))
SPIRV.define_module(f"{__name__}.atomics", ("__gpux_atomic_",))
# (float add on devices that have it, searched before "spirv": atomics.py)
registry("spirv_float_add").define_module(f"{__name__}.atomics", ("__gpux_atomic_",))
SPIRV.define_module(f"{__name__}.bits", ("__gpux_brev_",))
SPIRV.define_module(f"{__name__}.subgroups", ("__gpux_sg_", "__gpux_sgsplit_"))
SPIRV.define_module(f"{__name__}.printing", (PRINTF_PREFIX,))
