"""The public API says what it returns: every function in ``numba_gpux.__all__``, and
every public method of a class there, has a return annotation (what a reader and a type
checker see first).  mypy checks the Target contract and ``api.py`` in CI
(pyproject.toml, ``.ci/run``)."""

from __future__ import annotations

import inspect

import numba_gpux

#: methods that Python or Numba call, not users
_PROTOCOL = frozenset(("__init_subclass__", "__class_getitem__", "__repr__", "__reduce__"))


def _public_callables():
    for name in numba_gpux.__all__:
        obj = getattr(numba_gpux, name)
        if inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj) and obj.__module__.startswith("numba_gpux"):
            for attr, member in vars(obj).items():
                if attr in _PROTOCOL or (attr.startswith("_") and not attr.startswith("__")):
                    continue
                if isinstance(member, (staticmethod, classmethod)):
                    member = member.__func__
                if isinstance(member, property):
                    member = member.fget
                if inspect.isfunction(member):
                    yield f"{name}.{attr}", member


def test_public_functions_have_return_hints():
    missing = [name for name, fn in _public_callables() if "return" not in fn.__annotations__]
    assert not missing, "public functions without a return annotation: " + ", ".join(missing)


def test_the_check_sees_the_api():
    names = {name for name, _ in _public_callables()}
    assert {"jit", "to_device", "GpuxFunction.__getitem__"} <= names
