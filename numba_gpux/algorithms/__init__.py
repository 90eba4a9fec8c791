"""Parallel algorithms built on the public kernel language and tuning hooks.

``foreach``/``map`` (elementwise), ``reduce`` (tree reduction, optional axis),
``scan`` (inclusive and exclusive prefix scans), ``sort``/``argsort`` (stable
LSD radix sort; NaNs last).  Block sizes and items per work-item come from the
hooks in ``_tuning`` (``algorithms.block_size`` and friends), which every
target implements and library users may re-implement; changing them never
recompiles a kernel.  See docs/algorithms.md.
"""

from . import _tuning  # noqa: F401  (declares and implements the hooks)
from .elementwise import foreach, map, astype
from .reduction import reduce
from .scanning import scan
from .sorting import sort, argsort

__all__ = ["foreach", "map", "astype", "reduce", "scan", "sort", "argsort"]
