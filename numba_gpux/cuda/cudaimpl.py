"""``numba_gpux.cuda.cudaimpl``: where numba.cuda extensions register lowerings.

``lower``, ``lower_attr``, ``lower_constant`` and ``lower_cast`` are Numba's
own registration functions of its builtin lowering registry (``registry``),
which the numba_gpux target context installs: an implementation registered
here lowers on every numba_gpux target.
"""

from __future__ import annotations

from numba.core.imputils import builtin_registry as registry
from numba.core.imputils import (
    lower_builtin as lower, lower_cast, lower_constant, lower_getattr as lower_attr,
)

__all__ = ["registry", "lower", "lower_attr", "lower_constant", "lower_cast"]
