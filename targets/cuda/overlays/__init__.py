"""Overlay definitions for NVPTX / CUDA, one module per feature area.

Each module fills ``registry("cuda")`` (or a family registry such as
``"nvptx"``) with LLVM IR definitions of the portable ``__gpux_*``
intrinsics, in NVPTX address-space numbering (generic 0, global 1,
shared 3, constant 4, local 5) -- the same numbering as the neutral IR.
A feature module fetches its registries by name (``registry("nvptx")``), never from
this package, which imports it.
"""

from numba_gpux.overlays import registry

CUDA = registry("cuda")
NVPTX = registry("nvptx")
#: definitions that need sm_70 or newer, searched first by targets of such a compute
#: capability (make_target lists it among their families)
NVPTX_SM70 = registry("nvptx.sm70")

# feature modules register themselves by being imported
from . import core, memory, atomics, bits, subgroups, printing  # noqa: E402,F401
