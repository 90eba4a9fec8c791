"""``numba_gpux.cuda.types``: Numba's types, as ``numba.cuda.types`` re-exports them."""

from numba.core.types import *  # noqa: F401,F403
from numba.core import types as _types

__all__ = [n for n in dir(_types) if not n.startswith("_")]
