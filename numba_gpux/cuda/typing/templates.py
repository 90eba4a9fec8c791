"""``numba_gpux.cuda.typing.templates`` is Numba's ``numba.core.typing.templates``."""

from .._alias import alias

alias(__name__, "numba.core.typing.templates")
