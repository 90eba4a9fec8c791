"""``numba_gpux.cuda.typeconv.castgraph`` is Numba's ``numba.core.typeconv.castgraph``."""

from .._alias import alias

alias(__name__, "numba.core.typeconv.castgraph")
