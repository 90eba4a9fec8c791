"""Overlay definitions for NVPTX / CUDA, one module per feature area.

Each module fills ``registry("cuda")`` (or a family registry such as
``"nvptx"``) with LLVM IR definitions of the portable ``__gpux_*``
intrinsics, in NVPTX address-space numbering (generic 0, global 1,
shared 3, constant 4, local 5) -- the same numbering as the neutral IR.
A feature module fetches its registries by name (``registry("nvptx")``), never from
this package, which imports it.  The core definitions, which nearly every kernel
calls, are imported with the package; the other feature modules are named for the
prefixes of what they define and imported when a kernel first needs one
(``OverlayRegistry.define_module``).
"""

from numba_gpux.language.intrinsics import PRINTF_PREFIX, PTX_PREFIX
from numba_gpux.overlays import registry

CUDA = registry("cuda")
NVPTX = registry("nvptx")
#: definitions that need sm_70 or newer, searched first by targets of such a compute
#: capability (make_target lists it among their families)
NVPTX_SM70 = registry("nvptx.sm70")
#: sm_75 or newer with PTX ISA 7.0 or newer (tanh.approx.f32), searched before
#: NVPTX_SM70 by such targets
NVPTX_SM75 = registry("nvptx.sm75")

_ATTR = "alwaysinline nounwind"

# Array arguments: this target's launcher (targets/cuda/launch.py) passes each
# array's device address plus its byte offset as the pointer, so the entry point
# adds nothing (numba_gpux/abi.py): the offset parameter is never loaded and no
# register keeps it.  On the "cuda" registry, not the "nvptx" family: the fold is
# this launcher's, not NVPTX's.
CUDA.define("__gpux_array_offset",
            f"define i64 @__gpux_array_offset(i64 %off) {_ATTR} {{\n  ret i64 0\n}}")

# feature modules register themselves by being imported
from . import core  # noqa: E402,F401

NVPTX.define_module(f"{__name__}.memory", ("__gpux_dynamic_shared", "__gpux_barrier_",
                                           "__gpux_fence_", "__gpux_malloc", "__gpux_free"))
NVPTX.define_module(f"{__name__}.atomics", ("__gpux_atomic_",))
NVPTX.define_module(f"{__name__}.bits", ("__gpux_brev_",))
NVPTX.define_module(f"{__name__}.subgroups", ("__gpux_sg_",))
NVPTX.define_module(f"{__name__}.cachehints", ("__gpux_ld_", "__gpux_st_"))
NVPTX_SM70.define_module(f"{__name__}.subgroups", ("__gpux_sg_match_",))
NVPTX.define_module(f"{__name__}.printing", (PRINTF_PREFIX,))
# the NVIDIA-instruction intrinsics (numba_gpux.cuda.intrin) and inline PTX, each in
# the family of the instruction set it needs (make_target lists the families)
for _fam in ("nvptx", "nvptx.sm80", "nvptx.sm90", "nvptx.sm100a"):
    registry(_fam).define_module(f"{__name__}.nvinstr", ("__gpux_nv_", PTX_PREFIX))
