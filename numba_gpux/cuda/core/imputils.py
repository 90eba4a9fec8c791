"""``numba_gpux.cuda.core.imputils`` is Numba's ``numba.core.imputils`` (lowering registries)."""

from .._alias import alias

alias(__name__, "numba.core.imputils")
