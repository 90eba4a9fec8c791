"""``numba_cuda_mlir.cuda`` under the import alias: the facade in numba-cuda-mlir's dialect.

numba-cuda-mlir keeps numba.cuda's API and changes a few defaults and spellings of
``cuda.jit``.  This module is :mod:`numba_gpux.cuda` (every name is the facade's own
object, looked up on use) except for ``jit``, which applies :data:`JIT_DIFFERENCES`, one
row per keyword where numba-cuda-mlir's ``jit`` differs from numba.cuda's, and then calls
the facade's ``jit``.  The differences are data: a new one is a new row, never new code
in the decorator.  What each kind of row does:

- ``default``: numba-cuda-mlir's default for a keyword the facade also has (``inline``
  is ``"always"``; the ``dump*`` options the facade carries out); a value the caller
  gives is passed on unchanged.
- ``spelling``: numba-cuda-mlir's name for a numba.cuda keyword (``opt_level`` is
  ``opt``, ``signature`` the positional signature), with a conversion where the value
  differs (``signature="infer"``: the signature from the function's annotations).
- ``no-op``: accepted with any value and without effect, for the reason the row gives.
- ``only``: accepted at numba-cuda-mlir's default value; any other value is an
  ``UnsupportedError`` giving the row's reason.
- ``dialect``: numba-cuda-mlir's own option, which numba.cuda lacks, carried out here
  (``annotations_as_signatures``: a function whose every parameter is annotated with a
  type compiles for those types when it is decorated).

numba.cuda's own keywords (``cache``, ``boundscheck``...) are accepted too; a keyword
neither dialect has is a ``TypeError`` listing the valid ones.  ``numba_gpux.cuda``
itself keeps numba.cuda's defaults.

Besides ``jit``, the names :data:`OWN_NAMES` lists are this module's own objects
(``cuda.shared``, whose ``array`` also takes a shape known at run time), and debug
kernels raise numba-cuda-mlir's exceptions (:data:`KERNEL_EXCEPTIONS`).
"""

from __future__ import annotations

import inspect as _inspect
from typing import Any as _Any, Callable as _Callable, NamedTuple as _NamedTuple

from numba.core import types as _types
from numba.core import typing as _typing

from .. import cuda as _facade
from ..errors import UnsupportedError

__all__ = list(_facade.__all__)

#: a signature :func:`jit` leaves to :func:`_infer_signature`
_INFER = "infer"


class Difference(_NamedTuple):
    """One keyword of numba-cuda-mlir's ``jit`` that differs from numba.cuda's."""

    #: ``"default"``, ``"spelling"``, ``"no-op"``, ``"only"`` or ``"dialect"`` (module
    #: docstring)
    kind: str
    #: spelling: the facade's keyword; the others: numba-cuda-mlir's default value
    value: _Any
    #: why, as the documentation and error messages say it
    note: str
    #: spelling: the value's conversion for the facade (None: passed as it is)
    convert: str | None = None


#: numba-cuda-mlir's ``cuda.jit`` against numba.cuda's, from its documented signature
#: (numba-cuda-mlir 0.6, ``numba_cuda_mlir/cuda/jit.pyi``)
JIT_DIFFERENCES: dict[str, Difference] = {
    "inline": Difference("default", "always",
                         "device functions are inlined into their callers unless told not to"),
    "annotations_as_signatures": Difference(
        "dialect", True, "a function whose every parameter is annotated with a type "
        "compiles for those types when it is decorated (together with a signature given, "
        "a TypeError); otherwise on each first call"),
    "opt_level": Difference("spelling", "opt", "the optimisation level, 0 to 3"),
    "signature": Difference("spelling", "func_or_sig",
                            "a signature or list of them (eager compilation); \"infer\" reads "
                            "it from the function's annotations", convert="signature"),
    "chip": Difference("no-op", "sm_100",
                       "kernels compile for the device they launch on, CUDA or not"),
    "features": Difference("no-op", None, "PTX features follow the device's architecture"),
    "ptxas_options": Difference("no-op", None,
                                "ptxas's options are the CUDA target's own"),
    "experimental_ast_transforms": Difference(
        "no-op", False, "consteval and its unrolling are rewritten whenever a kernel uses "
        "them (cuda.experimental); the option changes nothing"),
    "abi": Difference("only", "numba",
                      "kernels and device functions use Numba's calling convention"),
    "capi": Difference("only", False,
                       "symbol names are the compiler's own (no cubin is exported)"),
    # the facade carries these out (decorators.DUMPS): passed on
    **{name: Difference("default", False,
                        "printed to stderr as the kernel compiles: the Numba IR, the LLVM IR, "
                        "the PTX (elsewhere the target's code as text), a line on the cubin")
       for name in ("dump", "dump_numba_ir", "dump_llvmir", "dump_ptx", "dump_cubin")},
    **{name: Difference("no-op", False,
                        "numba-cuda-mlir's MLIR, AST-pass and pass-pipeline dumps: numba_gpux "
                        "has none of those stages")
       for name in ("dump_ast", "dump_ast_after_all", "dump_mlir", "print_after_all",
                    "print_before_all")},
    "lto": Difference("no-op", False,
                      "a kernel and the libdevice functions it calls are linked as LLVM IR and "
                      "optimized as one module, which is what link-time optimization gives "
                      "numba-cuda-mlir's code"),
}


def _facade_keywords() -> list[str]:
    from .decorators import valid_keywords as facade_keywords

    return facade_keywords()


def valid_keywords() -> list[str]:
    """Every keyword :func:`jit` accepts, sorted."""
    return sorted(set(_facade_keywords()) | set(JIT_DIFFERENCES))


def _infer_signature(fn: _Callable, device: bool, strict: bool = True):
    """The signature that *fn*'s annotations give: a Numba type (or a NumPy scalar type)
    on every parameter; the return annotation, if any, is a device function's return
    type (without one, typing finds it) and a kernel's must be None or void.  Where
    the annotations give none: a ``TypeError`` saying why if *strict*, else None."""
    try:
        sig = _inspect.signature(fn, eval_str=True)
    except (NameError, SyntaxError, TypeError, ValueError) as exc:
        if not strict:
            return None
        raise TypeError(f"cuda.jit(signature='infer'): the annotations of "
                        f"{fn.__qualname__} cannot be read: {exc}") from None
    params = list(sig.parameters.values())
    if not strict and not params:
        return None  # nothing annotated: compiled on the first call, as without
    argtypes = []
    for p in params:
        t = _annotation_type(p.annotation) if p.kind in (
            p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else None
        if t is None:
            if not strict:
                return None
            raise TypeError(f"cuda.jit(signature='infer'): parameter {p.name!r} of "
                            f"{fn.__qualname__} is annotated {p.annotation!r}, not a Numba "
                            f"type" if p.annotation is not p.empty else
                            f"cuda.jit(signature='infer'): parameter {p.name!r} of "
                            f"{fn.__qualname__} has no annotation")
        argtypes.append(t)
    ret = sig.return_annotation
    if ret is sig.empty:
        return _typing.signature(_types.void, *argtypes) if not device else tuple(argtypes)
    restype = _types.void if ret is None else _annotation_type(ret)
    if restype is None or (not device and restype != _types.void):
        if not strict:
            return None
        raise TypeError(f"cuda.jit(signature='infer'): the return of {fn.__qualname__} is "
                        f"annotated {ret!r}, not " + ("a Numba type" if device else "void"))
    return _typing.signature(restype, *argtypes)


def _annotation_type(annotation):
    """The Numba type an annotation stands for, or None."""
    if isinstance(annotation, _types.Type):
        return annotation
    if annotation is _inspect.Parameter.empty or isinstance(annotation, str):
        return None
    try:
        import numpy as np
        from numba.np.numpy_support import from_dtype

        if isinstance(annotation, type) and issubclass(annotation, np.generic):
            return from_dtype(np.dtype(annotation))
    except (TypeError, NotImplementedError):
        pass
    return None


def _is_function(obj) -> bool:
    return callable(obj) and not isinstance(obj, (str, tuple, list, _types.Type,
                                                  _typing.Signature))


def jit(func_or_sig=None, **options):
    """numba-cuda-mlir's ``cuda.jit``: the facade's, after :data:`JIT_DIFFERENCES`."""
    unknown = set(options) - set(valid_keywords())
    if unknown:
        raise TypeError(f"cuda.jit() got unexpected keyword argument(s) "
                        f"{', '.join(sorted(unknown))}; valid: {', '.join(valid_keywords())}")
    passed: dict[str, _Any] = {}
    for name, value in options.items():
        row = JIT_DIFFERENCES.get(name)
        if row is None or row.kind in ("default", "dialect"):
            passed[name] = value
        elif row.kind == "only" and value != row.value:
            raise UnsupportedError(f"cuda.jit({name}={value!r}): numba_gpux takes only "
                                   f"{name}={row.value!r}: {row.note}")
        elif row.kind == "spelling":
            if row.value in passed or row.value in options:
                raise TypeError(f"cuda.jit() got both {name!r} and numba.cuda's spelling "
                                f"{row.value!r}")
            passed[row.value] = value
    for name, row in JIT_DIFFERENCES.items():
        if row.kind in ("default", "dialect"):
            passed.setdefault(name, row.value)
    annotated = bool(passed.pop("annotations_as_signatures"))
    sig = passed.pop("func_or_sig", None)
    if sig is not None and func_or_sig is not None:
        raise TypeError("cuda.jit() got a signature both by position and as signature=")
    fn = None
    if _is_function(func_or_sig):
        fn = func_or_sig
    elif func_or_sig is not None:
        sig = func_or_sig
    device = bool(passed.get("device", False))

    def decorate(fn):
        use = sig
        if isinstance(sig, str) and sig == _INFER:
            use = _infer_signature(fn, device)
        elif annotated:
            found = _infer_signature(fn, device, strict=False)
            if found is not None and sig is not None:
                raise TypeError(f"cuda.jit(): {fn.__qualname__} has both a signature and "
                                f"type annotations on every parameter; give one of them, "
                                f"or annotations_as_signatures=False")
            if found is not None:
                use = found
        made = _facade.jit(use, **passed)(fn) if use is not None else _facade.jit(**passed)(fn)
        made.device_exception = device_exception  # numba-cuda-mlir's messages
        return made

    return decorate(fn) if fn is not None else decorate


#: numba-cuda-mlir's exceptions from ``debug=True`` kernels, by the class raised in the
#: kernel (exactly that class): the class and message the launch raises; any other
#: class raised is numba-cuda-mlir's RuntimeError (its launcher's error codes)
KERNEL_EXCEPTIONS: dict = {
    AssertionError: (AssertionError, "Kernel assertion failed"),
    IndexError: (IndexError, "Index out of bounds in kernel"),
    ValueError: (ValueError, "Invalid value in kernel"),
    RuntimeError: (RuntimeError, "Runtime error in kernel"),
    ZeroDivisionError: (ZeroDivisionError, "Division by zero in kernel"),
}


def device_exception(exc: BaseException) -> BaseException:
    """The exception numba-cuda-mlir raises for the error a debug kernel reported as
    *exc* (the facade's, numba.cuda's form): :data:`KERNEL_EXCEPTIONS`'s class and
    message, then the facade's message (function, file, line, thread) in parentheses.
    Errors that are not a raised exception (a grid barrier that gave up) are kept."""
    from ..language.debug import DeviceError

    if isinstance(exc, DeviceError):
        return exc
    cls, message = KERNEL_EXCEPTIONS.get(type(exc), KERNEL_EXCEPTIONS[RuntimeError])
    detail = str(exc)
    out = cls(f"{message} ({type(exc).__name__}: {detail})" if detail else message)
    out.__cause__ = exc if cls is not type(exc) else None
    return out


# numba-cuda-mlir's shared arrays: shapes known at run time too (mlir_shared.py)
from .mlir_shared import shared, shared_array  # noqa: E402, F401

#: the names besides ``jit`` that are this module's own objects, not the facade's:
#: numba-cuda-mlir accepts more than numba.cuda there, and the facade keeps numba.cuda's
#: errors (name -> what differs)
OWN_NAMES: dict[str, str] = {
    "shared": "shared.array takes a shape known only at run time (carved out of the "
              "launch's dynamic shared memory)",
    "shared_array": "numba-cuda-mlir's shared.array, under its second name",
}


def __getattr__(name: str):
    return getattr(_facade, name)


def __dir__() -> list[str]:
    return sorted(set(dir(_facade)) | set(globals()))


#: a package, as numba_cuda_mlir.cuda is (its submodules are the facade's: the import
#: alias answers them); empty, so no path finder looks for them in a folder
__path__: list[str] = []
