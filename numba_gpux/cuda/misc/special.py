"""``numba_gpux.cuda.misc.special`` is Numba's ``numba.misc.special``."""

from .._alias import alias

alias(__name__, "numba.misc.special")
