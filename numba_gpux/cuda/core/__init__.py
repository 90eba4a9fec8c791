"""``numba_gpux.cuda.core``: numba.cuda's ``core`` package (``errors``, ``config``).

numba.cuda vendors Numba's core modules here; the facade's ``errors`` is
Numba's ``numba.core.errors`` and ``config`` is the facade's configuration.
"""

from . import config, errors  # noqa: F401

__all__ = ["config", "errors"]
