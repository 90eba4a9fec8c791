"""``numba_gpux.cuda.utils`` is Numba's ``numba.core.utils`` (``PYVERSION``...)."""

from ._alias import alias

alias(__name__, "numba.core.utils")
