"""``cuda.experimental``: numba-cuda-mlir's experimental names, on every target.

- :func:`consteval`: compile-time evaluation.  ``consteval(expr)`` in a kernel or
  device function is the value of *expr* computed when the function compiles (from
  its globals, closure variables, earlier ``consteval`` results; a parameter stands
  for its Numba type); ``for i in consteval(range(n)):`` unrolls the loop, each copy
  of the body with ``i`` a constant (so ``t[i]`` of a tuple of mixed types works);
  ``with consteval():`` runs a block of Python when the function compiles, its
  names then constants.  A function that uses it is rewritten from its source
  before Numba reads it (``_consteval.py`` says why and how): numba-cuda-mlir's
  ``experimental_ast_transforms``, on whenever ``consteval`` is used.  Called on the
  host (a kernel's Python function run as Python), ``consteval(x)`` is ``x`` and
  ``with consteval():`` runs its block.
- :func:`current_target_options`: inside ``consteval``, the compile's options (a
  dict: ``opt``, ``fastmath``, ``debug``, ``lineinfo``...).
- :func:`local_array_from`, :func:`struct`, :func:`union`: numba-cuda-mlir's
  structured values; not provided by numba-gpux (each raises ``UnsupportedError``
  saying so, where it is called: on the host or, in a kernel, when it compiles).
- ``inline_ptx``, ``intrin``, ``tcgen05_descriptors``: numba-cuda-mlir's PTX-level
  names, looked up on first use from :mod:`numba_gpux.cuda.intrin`
  (``tcgen05_descriptors`` from ``numba_gpux.cuda.intrin.tcgen05_descriptors``);
  where that module is missing, using them is an ``ImportError`` saying so.
"""

from __future__ import annotations

import importlib

from ..language.source import register_source_transform
from ..errors import UnsupportedError
from ._consteval import ConstevalError, consteval, current_target_options

__all__ = ["consteval", "current_target_options", "local_array_from", "struct", "union",
           "ConstevalError",
           "inline_ptx", "intrin", "tcgen05_descriptors"]  # noqa: F822 (served by __getattr__)


def _unsupported(name: str, what: str):
    def stub(*args, **kwargs):
        raise UnsupportedError(f"cuda.experimental.{name}: {what} is not supported by "
                               f"numba_gpux")

    stub.__name__ = stub.__qualname__ = name
    stub.__doc__ = f"numba-cuda-mlir's {what}: not supported by numba_gpux (raises " \
                   f"UnsupportedError)."
    return stub


local_array_from = _unsupported("local_array_from",
                                "a local array built from a generator expression")
struct = _unsupported("struct", "a user-defined struct type (decorator)")
union = _unsupported("union", "a user-defined union type (decorator)")


def _typing() -> None:
    """Kernels calling the unsupported names get the same error when they compile.  A
    ``consteval(x)`` that reaches Numba unrewritten (in a device function Numba inlines
    into its caller's IR from its Python source: one that reads a captured device
    array) is ``x`` as Numba types it: a loop over it runs, not unrolled."""
    from numba.core import types
    from numba.core.imputils import Registry as LoweringRegistry
    from numba.core.typing.templates import AbstractTemplate, Registry, signature

    from ..context import add_registries

    registry = Registry()
    for fn in (local_array_from, struct, union):
        def generic(self, args, kws, fn=fn):
            fn()  # raises UnsupportedError, which Numba reports with the call's line

        tmpl = type(f"Unsupported_{fn.__name__}", (AbstractTemplate,),
                    {"key": fn, "generic": generic})
        registry.register_global(fn, types.Function(tmpl))

    class Identity(AbstractTemplate):
        key = consteval

        def generic(self, args, kws):
            if len(args) == 1 and not kws:
                return signature(args[0], args[0])
            return None

    registry.register_global(consteval, types.Function(Identity))
    lowering = LoweringRegistry("numba_gpux.cuda.experimental")
    lowering.lower(consteval, types.Any)(lambda context, builder, sig, args: args[0])
    add_registries(registry, lowering)


_typing()

#: the module numba-cuda-mlir's PTX-level names come from
_INTRIN = "numba_gpux.cuda.intrin"
_FROM_INTRIN = ("inline_ptx", "intrin", "tcgen05_descriptors")


def __getattr__(name: str):
    if name not in _FROM_INTRIN:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(_INTRIN)
    except ModuleNotFoundError as e:
        if e.name != _INTRIN:
            raise
        raise ImportError(f"cuda.experimental.{name} comes from {_INTRIN}, which this "
                          f"numba_gpux does not have", name=_INTRIN) from None
    if name == "intrin":
        return module
    if hasattr(module, name):
        return getattr(module, name)
    try:  # a submodule of it
        return importlib.import_module(f"{_INTRIN}.{name}")
    except ImportError:
        raise ImportError(f"cuda.experimental.{name}: {_INTRIN} has no {name} in this "
                          f"numba_gpux", name=f"{_INTRIN}.{name}") from None


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def _transform(pyfunc, argtypes, options):
    from ._consteval import transform, uses_consteval

    if not uses_consteval(pyfunc):
        return None
    import dataclasses

    opts = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
            if f.name != "semantics"}
    return transform(pyfunc, argtypes, opts)


register_source_transform(_transform)
