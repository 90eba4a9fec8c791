"""PTX ISA versions: which one each compute capability needs, and the range the
overlays and LLVM's NVPTX back end can write.

Facts about the PTX ISA, read by the target (``target.py``, to pick the version
a module declares) and by the toolkit (``toolkit.py``, to probe ptxas); it imports
nothing of this target.
"""

from __future__ import annotations

from numba_gpux.errors import GpuxUserError

__all__ = ["ptx_isa_for", "LLVM_MAX_PTX", "MIN_PTX_ISA"]

#: the newest PTX ISA version LLVM 22's NVPTX back end emits
LLVM_MAX_PTX = (9, 0)

#: the first PTX ISA version that knows each sm_XX (PTX ISA manual, "Release notes")
_MIN_PTX = {
    (5, 0): (4, 0), (5, 2): (4, 1), (5, 3): (4, 2), (6, 0): (5, 0), (6, 1): (5, 0),
    (6, 2): (5, 0), (7, 0): (6, 0), (7, 2): (6, 1), (7, 5): (6, 3), (8, 0): (7, 0),
    (8, 6): (7, 1), (8, 7): (7, 4), (8, 9): (7, 8), (9, 0): (7, 8), (10, 0): (8, 6),
    (10, 1): (8, 6), (10, 3): (8, 8), (11, 0): (9, 0), (12, 0): (8, 7), (12, 1): (8, 8),
}

#: the oldest PTX ISA the overlays can be written in: ``shfl.sync``/``vote.sync``/
#: ``bar.warp.sync`` need 6.0 and ``activemask`` 6.2; LLVM's NVPTX back end does not
#: raise the version for an instruction, it aborts the process ("Cannot select").
#: PTX 6.3 is CUDA 10.0's (2018); every supported compute capability can use it.
MIN_PTX_ISA = (6, 3)


#: capabilities from which the overlays use instructions of a newer PTX ISA than the
#: first one that knows the capability: sm_90's (elect.sync, cp.async.bulk,
#: mbarrier.arrive.expect_tx, fence.mbarrier_init) need PTX 8.0, CUDA 12.0's
_OVERLAY_PTX = {(9, 0): (8, 0)}


def ptx_isa_for(cc: tuple[int, int]) -> tuple[int, int]:
    """The oldest PTX ISA version that supports *cc* and every instruction the
    overlays use (at least :data:`MIN_PTX_ISA`): the widest range of drivers can JIT it."""
    if cc in _MIN_PTX:
        return max(_MIN_PTX[cc], _OVERLAY_PTX.get(cc, MIN_PTX_ISA), MIN_PTX_ISA)
    if cc < min(_MIN_PTX):
        raise GpuxUserError(f"compute capability {cc[0]}.{cc[1]} is too old; numba-gpux "
                            f"supports 5.0 and newer")
    # a capability newer than this table: the newest PTX ISA LLVM can write
    return max(_MIN_PTX[max(k for k in _MIN_PTX if k <= cc)], LLVM_MAX_PTX)
