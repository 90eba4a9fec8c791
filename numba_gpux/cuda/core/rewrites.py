"""``numba_gpux.cuda.core.rewrites`` is Numba's ``numba.core.rewrites``: IR rewrites
(``register_rewrite``, ``Rewrite``) that the kernel compiler runs, as numba.cuda's do."""

from .._alias import alias

alias(__name__, "numba.core.rewrites")
