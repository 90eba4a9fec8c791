"""``numba_gpux.cuda.args``: numba.cuda's argument hints ``In``, ``Out``, ``InOut``.

They are numba_gpux's own (:mod:`numba_gpux.memory`): a host array wrapped in
one is copied to the device before and/or back after the launch.
"""

from __future__ import annotations

from ..memory import HostArg as ArgHint
from ..memory import In, InOut, Out

__all__ = ["ArgHint", "In", "Out", "InOut", "wrap_arg"]


def wrap_arg(value, default=InOut):
    """*value* itself when it already carries a hint, else ``default(value)``."""
    return value if isinstance(value, ArgHint) else default(value)
