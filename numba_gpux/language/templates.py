"""Typing templates the language and the facade share, kept light to import (the
facade's import loads no Numba implementation module)."""

from __future__ import annotations

from numba.core import types
from numba.core.typing.templates import AbstractTemplate, signature

__all__ = ["exact_template"]


def exact_template(registry, key, nargs: int, argtype, result, prefix: str, metadata=None):
    """Register in *registry* a template for ``key(a, ...)`` that matches only when all
    *nargs* arguments are *argtype* (and there are no keywords), giving *result*: a
    ConcreteTemplate would also accept other number types by an unsafe conversion, and
    since these templates are tried before Numba's, float32 code would silently become
    the narrower type.  *metadata* (e.g. a target) is the template's."""

    class T(AbstractTemplate):
        def generic(self, args, kws):
            if not kws and len(args) == nargs and all(a == argtype for a in args):
                return signature(result, *args)
            return None

    if metadata is not None:
        T.metadata = metadata
    T.key = key
    T.__name__ = f"{prefix}_{getattr(key, '__name__', key)}"
    registry.register_global(key, types.Function(T))
