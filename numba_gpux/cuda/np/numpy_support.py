"""``numba_gpux.cuda.np.numpy_support`` is Numba's ``numba.np.numpy_support``."""

from .._alias import alias

alias(__name__, "numba.np.numpy_support")
