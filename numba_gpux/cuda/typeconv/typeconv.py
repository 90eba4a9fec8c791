"""``numba_gpux.cuda.typeconv.typeconv`` is Numba's ``numba.core.typeconv.typeconv``."""

from .._alias import alias

alias(__name__, "numba.core.typeconv.typeconv")
