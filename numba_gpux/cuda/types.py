"""``numba_gpux.cuda.types``: Numba's types, as ``numba.cuda.types`` re-exports them,
numba-cuda-mlir's ``complex32`` (two float16 parts: :mod:`.complex_half`) and numba.cuda's
``bfloat16`` (:mod:`.bf16`).

Every public name of ``numba.core.types`` (the short aliases ``f2``, ``f4``,
``i8``, ``u1``, ``b1``, ``c8``... included) is Numba's own object.
"""

from numba.core import types as _types

from .complex_half import complex32  # noqa: F401 - in __all__
from ._bf16_core import bfloat16  # noqa: F401 - in __all__

__all__ = sorted([n for n in dir(_types) if not n.startswith("_")] + ["complex32", "bfloat16"])
globals().update({n: getattr(_types, n) for n in __all__ if n not in ("complex32", "bfloat16")})


def _read_signatures(sigs):
    """Signature strings read as numba.cuda reads them, with this module's names (so
    that ``"void(bfloat16[::1])"`` parses, as numba.cuda evaluates a string among its
    ``types``, as Numba does among its own); a list of them item by item; anything
    else as it is."""
    if isinstance(sigs, list):
        return [_read_signatures(s) for s in sigs]
    if isinstance(sigs, str):
        return eval(sigs, {}, {n: globals()[n] for n in __all__})  # noqa: S307 - as Numba
    return sigs
