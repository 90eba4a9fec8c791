"""``numba_gpux.cuda.cudadecl``: where numba.cuda extensions register typing templates.

``registry`` is a typing registry (``numba.core.typing.templates.Registry``) that
numba_gpux's typing context installs (``numba_gpux.context.add_registries``), as
numba.cuda's CUDA typing context installs its ``cudadecl.registry``: a template
registered here (``register``, ``register_attr``, ``register_global``) types kernels
and device functions on every numba_gpux target, and enters their cache keys.
It is the typing half of :mod:`.cudaimpl` (whose lowerings go to Numba's builtin
lowering registry, which every numba_gpux target installs).  numba.cuda's own
templates for its kernel functions are not in it: numba_gpux types those itself.
"""

from __future__ import annotations

from numba.core.typing.templates import Registry

from ..context import add_registries

__all__ = ["registry", "register", "register_attr", "register_global"]

registry = Registry()
register = registry.register
register_attr = registry.register_attr
register_global = registry.register_global

add_registries(typing_registry=registry)
