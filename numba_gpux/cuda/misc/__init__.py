"""``numba_gpux.cuda.misc``: ``special`` (``literal_unroll``...) is Numba's ``numba.misc.special``."""

from . import special  # noqa: F401

__all__ = ["special"]
