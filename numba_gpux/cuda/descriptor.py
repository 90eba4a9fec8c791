"""``numba_gpux.cuda.descriptor``: numba.cuda's target descriptor, ``cuda_target``.

numba.cuda code reaches the typing and lowering contexts of the CUDA target through
``cuda.descriptor.cuda_target.typing_context`` and ``.target_context`` (to ask
``typing_context.can_convert(fromty, toty)``, resolve a function type, or build
constants in an extension).  Here they are numba_gpux's one shared GPU context, which
every target's kernels are typed and lowered in: ``typing_context`` is a Numba
``BaseContext``, ``target_context`` a Numba ``BaseContext`` for lowering.  Both are
built on first use, as numba.cuda's are, so importing this module builds nothing.
"""

from __future__ import annotations

from numba.core.options import TargetOptions

from ..context import TargetDescriptor

__all__ = ["CUDATargetOptions", "CUDATarget", "cuda_target"]


class CUDATargetOptions(TargetOptions):
    """The options class of the target, as numba.cuda names it (Numba's TargetOptions)."""


class CUDATarget(TargetDescriptor):
    """A target descriptor: its name, options class and two contexts (made lazily)."""

    def __init__(self, name: str) -> None:
        self.options = CUDATargetOptions
        self._target_name = name

    def __repr__(self) -> str:
        return f"<CUDATarget {self._target_name!r}: numba_gpux's shared GPU contexts>"


#: numba.cuda's descriptor of its target
cuda_target = CUDATarget("cuda")
