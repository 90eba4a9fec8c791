"""``numba_gpux.cuda.cgutils`` is Numba's ``numba.core.cgutils`` (LLVM IR building helpers)."""

from ._alias import alias

alias(__name__, "numba.core.cgutils")
