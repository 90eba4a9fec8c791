"""``numba_gpux.cuda.vector``: numba-cuda-mlir's ``vector.load``/``vector.store``, not
supported.

numba-cuda-mlir's ``cuda.vector.load(array, index, shape, alignment=None)`` returns an
MLIR ``vector`` value (a register vector of any shape), which its own lowering gives
arithmetic and which has no Numba type: numba_gpux compiles through Numba's lowering
and LLVM, with no MLIR vector dialect.  Both names exist so that code importing them
loads, and a kernel that calls them fails to compile with this reason.  Whole-element
vector loads come from the CUDA vector types instead (``cuda.float32x4``...: build one
from four loads; LLVM merges adjacent loads of contiguous arrays where it can).
"""

from __future__ import annotations

from .intrinsics import _unavailable

__all__ = ["load", "store"]

_WHY = ("numba-cuda-mlir's MLIR vector values have no Numba type (numba_gpux has no "
        "MLIR stage); use the vector types (cuda.float32x4 ...) or element loads")

load = _unavailable("vector.load", _WHY)
store = _unavailable("vector.store", _WHY)
