"""SPIR-V definitions of the atomic intrinsics (``__gpux_atomic_*``).

Integer operations are ``atomicrmw``/``cmpxchg``, which LLVM's SPIR-V back end
turns into OpAtomic* instructions.  Float add/sub and integer inc/dec are
``cmpxchg`` loops: ``atomicrmw fadd`` needs SPV_EXT_shader_atomic_float_add and
``atomicrmw uinc_wrap/udec_wrap`` cannot be legalized (LLVM aborts on both).
Pointers are generic (addrspace 4): they may point to global or local memory.
"""

from __future__ import annotations

from numba_gpux.language.atomics import ATOMIC_INTRINSICS, llvm_definition
from numba_gpux.overlays import registry

SPIRV = registry("spirv")

for _name in ATOMIC_INTRINSICS:
    SPIRV.define(_name, llvm_definition(_name, "ptr addrspace(4)"))
