"""``numba_gpux.cuda.typeconv``: Numba's type conversion rules (``numba.core.typeconv``).

The package's names and its submodules ``castgraph``, ``rules`` and
``typeconv`` are Numba's own objects.
"""

from numba.core.typeconv import Conversion  # noqa: F401

from . import castgraph, rules, typeconv  # noqa: F401

__all__ = ["Conversion", "castgraph", "rules", "typeconv"]
