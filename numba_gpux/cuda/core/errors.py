"""``numba_gpux.cuda.core.errors`` is Numba's ``numba.core.errors``."""

from .._alias import alias

alias(__name__, "numba.core.errors")
