"""Overlay definitions for SPIR-V / OpenCL, one module per feature area.

Each module fills ``registry("spirv")`` (shared by every SPIR-V target) or
``registry("opencl")`` (this target only) with LLVM IR definitions of the
portable ``__gpux_*`` intrinsics, in SPIR-V address-space numbering
(generic 4, global 1, shared/workgroup 3, constant 2, private 0).
"""

from numba_gpux.overlays import registry

SPIRV = registry("spirv")
OPENCL = registry("opencl")

# feature modules register themselves by being imported here; a module that
# is not written yet is skipped so the others keep working.
import importlib as _importlib  # noqa: E402

for _name in ("core", "memory", "atomics", "bits", "subgroups", "types", "printing", "debug"):
    try:
        _importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _e:
        if _e.name != f"{__name__}.{_name}":
            raise
