"""``numba_gpux.cuda.typing``: Numba's typing package (``numba.core.typing``).

``signature``, ``Signature`` and the submodules ``typeof`` and ``templates``
are Numba's own objects.
"""

from numba.core.typing import Signature, make_concrete_template, signature  # noqa: F401

from . import templates, typeof  # noqa: F401

__all__ = ["Signature", "signature", "make_concrete_template", "templates", "typeof"]
