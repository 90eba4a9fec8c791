"""``numba_gpux.cuda.extending``: numba.cuda's extension API, for the numba_gpux target.

The names are Numba's own (``numba.core.extending``, ``numba.core.imputils``);
``overload``, ``overload_method``, ``overload_attribute`` and
``overload_classmethod`` register for every numba_gpux target (Numba's
``target="gpux"``; numba.cuda's ``target="cuda"`` means the same here).
"""

from __future__ import annotations

import functools

from numba.core import extending as _ext
from numba.core.datamodel import models  # noqa: F401
from numba.core.datamodel import models as core_models  # numba.cuda's name for them
from numba.core.extending import (  # noqa: F401
    intrinsic, register_jitable, make_attribute_wrapper, type_callable, typeof_impl,
    register_model, box, unbox, NativeValue, as_numba_type, infer, infer_getattr,
    lower_builtin, lower_getattr, lower_getattr_generic, lower_setattr, lower_setattr_generic,
    lower_cast, SentryLiteralArgs, sentry_literal_args,
)

from ..context import TARGET_NAME

__all__ = ["overload", "overload_method", "overload_attribute", "overload_classmethod",
           "intrinsic", "register_jitable", "make_attribute_wrapper", "type_callable",
           "typeof_impl", "register_model", "models", "core_models", "box", "unbox", "NativeValue",
           "as_numba_type", "infer", "infer_getattr", "lower_builtin", "lower_getattr",
           "lower_getattr_generic", "lower_setattr", "lower_setattr_generic", "lower_cast",
           "SentryLiteralArgs", "sentry_literal_args"]


def _target(kwargs: dict) -> dict:
    if kwargs.get("target", "cuda") in ("cuda", TARGET_NAME):
        kwargs["target"] = TARGET_NAME
    return kwargs


@functools.wraps(_ext.overload)
def overload(func, *args, **kwargs):
    return _ext.overload(func, *args, **_target(kwargs))


@functools.wraps(_ext.overload_method)
def overload_method(typ, attr, **kwargs):
    return _ext.overload_method(typ, attr, **_target(kwargs))


@functools.wraps(_ext.overload_attribute)
def overload_attribute(typ, attr, **kwargs):
    return _ext.overload_attribute(typ, attr, **_target(kwargs))


@functools.wraps(_ext.overload_classmethod)
def overload_classmethod(typ, attr, **kwargs):
    return _ext.overload_classmethod(typ, attr, **_target(kwargs))
