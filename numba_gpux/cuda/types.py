"""``numba_gpux.cuda.types``: Numba's types, as ``numba.cuda.types`` re-exports them,
numba-cuda-mlir's ``complex32`` (two float16 parts: :mod:`.complex_half`), numba.cuda's
``bfloat16`` (:mod:`.bf16`) and the type of ``cg.this_grid()`` (``GridGroup``, its
instance ``grid_group``).

Every public name of ``numba.core.types`` (the short aliases ``f2``, ``f4``,
``i8``, ``u1``, ``b1``, ``c8``... included) is Numba's own object.
"""

from numba.core import types as _types

from .complex_half import complex32  # noqa: F401 - in __all__
from ._bf16_core import bfloat16  # noqa: F401 - in __all__

_OWN = ("complex32", "bfloat16", "GridGroup", "grid_group")
__all__ = sorted([n for n in dir(_types) if not n.startswith("_")] + list(_OWN))
globals().update({n: getattr(_types, n) for n in __all__ if n not in _OWN})


def __getattr__(name: str):
    # (the cooperative groups' types load Numba's lowering: only when asked for)
    if name in ("GridGroup", "grid_group"):
        from ..language import cooperative

        return getattr(cooperative, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _read_signatures(sigs):
    """Signature strings read as numba.cuda reads them, with this module's names (so
    that ``"void(bfloat16[::1])"`` parses, as numba.cuda evaluates a string among its
    ``types``, as Numba does among its own); a list of them item by item; anything
    else as it is."""
    if isinstance(sigs, list):
        return [_read_signatures(s) for s in sigs]
    if isinstance(sigs, str):
        names = {n: globals()[n] for n in __all__ if n in globals()}
        return eval(sigs, {}, names)  # noqa: S307 - as Numba
    return sigs
