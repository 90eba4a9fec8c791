"""``numba_gpux.cuda.typeconv.rules`` is Numba's ``numba.core.typeconv.rules``."""

from .._alias import alias

alias(__name__, "numba.core.typeconv.rules")
