"""NVPTX definitions of the atomic intrinsics (``__gpux_atomic_*``).

Everything but float min/max is one ``atom`` instruction: ``atomicrmw`` with
``fadd``/``fsub`` (``atom.add.f32/f64``; LLVM expands f64 into a loop below
sm_60) and ``uinc_wrap``/``udec_wrap`` (``atom.inc/dec.u32``; u64 is a loop).
Float min/max/nanmin/nanmax are ``cmpxchg`` loops (numba.cuda's NaN rules).
"""

from __future__ import annotations

from numba_gpux.language.atomics import ATOMIC_INTRINSICS, llvm_definition
from numba_gpux.overlays import registry

NVPTX = registry("nvptx")

for _name in ATOMIC_INTRINSICS:
    NVPTX.define(_name, llvm_definition(_name, "ptr", frozenset({"fadd", "incdec"})))
