"""``numba_gpux.cuda.types``: Numba's types, as ``numba.cuda.types`` re-exports them.

Every public name of ``numba.core.types`` (the short aliases ``f2``, ``f4``,
``i8``, ``u1``, ``b1``, ``c8``... included) is Numba's own object.
"""

from numba.core import types as _types

__all__ = sorted(n for n in dir(_types) if not n.startswith("_"))
globals().update({n: getattr(_types, n) for n in __all__})
