"""Where numba.cuda only vendored a piece of Numba, the facade answers with Numba's own.

``alias(__name__, "numba.core.errors")`` in a facade module replaces that module,
while it is being imported, by Numba's module: ``import numba_gpux.cuda.core.errors``
then yields ``numba.core.errors`` itself (the same object, never a copy).
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["alias"]


def alias(name: str, target: str):
    """Make the module being imported as *name* be the module *target*."""
    mod = importlib.import_module(target)
    sys.modules[name] = mod
    return mod
