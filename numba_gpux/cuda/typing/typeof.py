"""``numba_gpux.cuda.typing.typeof`` is Numba's ``numba.core.typing.typeof``."""

from .._alias import alias

alias(__name__, "numba.core.typing.typeof")
