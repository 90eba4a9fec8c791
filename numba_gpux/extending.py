"""The extension API for library authors: per-target overlays.

Two kinds of extension exist, and they live at different levels:

* **Typing-level extensions, shared by every target**:
  ``numba.extending.overload(fn, target="gpux")`` (and ``@intrinsic`` /
  ``@register_jitable``) add device implementations written in Python or
  llvmlite that every target compiles the same way, because every target
  shares one typing and lowering context.

* **Per-target overlays** (:func:`overlay`): the shared lowering turns math
  functions and kernel-language calls into portable intrinsics
  (``math.exp`` on float32 becomes a call to ``__gpux_exp_f32``); each target
  defines those in its overlay registry.  ``overlay`` adds or replaces such a
  definition on one target, stacking over the target's defaults, either from
  LLVM IR text (in the target's address spaces) or from a Python function
  compiled through the shared pipeline::

      @gpux.overlay(math.exp, target="opencl")
      def fast_exp(x):                   # compiled once per float type it is used with
          return 2.0 ** (x * 1.4426950408889634)

An overlay changes the target's overlay registry, whose digest is part of the
key of the target's code (``cachekey.overlaid_fingerprint``): code compiled
before the overlay is never reused after it.  (Tuning hooks, by contrast, change no compiled code: ``hooks.py``.)
"""

from __future__ import annotations

import hashlib
import marshal
import threading
from typing import Callable

from numba.core import types

from .errors import GpuxUserError

__all__ = ["overlay", "intrinsic_names", "remove_overlay"]

_LL_TO_NUMBA = {"float": types.float32, "double": types.float64, "i64": types.int64,
                "i32": types.int32, "i16": types.int16, "i8": types.int8, "i1": types.boolean,
                "half": types.float16}


def intrinsic_names(fn) -> tuple[str, ...]:
    """The portable intrinsics that the shared lowering emits for the Python function *fn*
    (``math.exp`` -> ``('__gpux_exp_f32', '__gpux_exp_f64')``), or ``(fn,)`` for an
    intrinsic name."""
    from .language.intrinsics import INTRINSICS
    from .language.lowering import MATH_FUNCS

    if isinstance(fn, str):
        if not fn.startswith("__gpux_") and fn not in INTRINSICS:
            raise GpuxUserError(f"overlay(): {fn!r} is not a portable intrinsic name "
                                f"(they start with '__gpux_')")
        return (fn,)
    base = MATH_FUNCS.get(fn)
    if base is None:
        name = getattr(fn, "__qualname__", repr(fn))
        raise GpuxUserError(
            f"overlay(): {name} has no portable intrinsic, so no target-specific definition "
            f"can replace it; use numba.extending.overload({name}, target='gpux') to add an "
            f"implementation shared by every target")
    return (f"__gpux_{base}_f32", f"__gpux_{base}_f64")


def _registry_and_target(target):
    from .devices import Device
    from .interface import Target
    from .overlays import registry

    if isinstance(target, Device):
        target = target.target
    if isinstance(target, Target):
        return registry(target.name), (lambda: target)
    if isinstance(target, str) and target:
        def resolve():
            from .devices import resolve_target

            return resolve_target(target)

        return registry(target), resolve
    raise GpuxUserError(f"overlay(): target must be a target name, a Device or a Target, "
                        f"not {target!r}")


def _signature_of(name: str):
    from .language.intrinsics import INTRINSICS

    spec = INTRINSICS.get(name)
    if spec is None:
        raise GpuxUserError(
            f"overlay(): {name!r} is not a known portable intrinsic, so its signature is "
            f"unknown; define it with ir= text instead of a Python function")
    try:
        ret = _LL_TO_NUMBA[str(spec.ret)]
        args = tuple(_LL_TO_NUMBA[str(a)] for a in spec.args)
    except KeyError:
        raise GpuxUserError(
            f"overlay(): {name} takes or returns pointers or aggregates; define it with ir= "
            f"text (in the target's address spaces) instead of a Python function") from None
    return spec, ret, args


def _code_token(pyfunc) -> str:
    code = getattr(pyfunc, "__code__", None)
    h = hashlib.sha1(f"{getattr(pyfunc, '__module__', '')}.{getattr(pyfunc, '__qualname__', '')}"
                     .encode())
    if code is not None:
        h.update(marshal.dumps(code))
    for cell in getattr(pyfunc, "__closure__", None) or ():
        try:
            h.update(repr(cell.cell_contents).encode())
        except ValueError:
            pass
    return h.hexdigest()


class _PythonDefinition:
    """Overlay text made, on first use, from a Python function compiled through the
    shared pipeline: its neutral IR plus a wrapper named after the intrinsic,
    mapped into the target's address spaces."""

    def __init__(self, name: str, device_fn, resolve_target):
        self.name = name
        self.device_fn = device_fn
        self.resolve_target = resolve_target
        self.cache_token = f"py:{name}:{_code_token(device_fn.py_func)}:{device_fn.options!r}"
        self._text: str | None = None
        self._lock = threading.Lock()

    def __call__(self) -> str:
        if self._text is None:
            with self._lock:
                if self._text is None:
                    self._text = self._make()
        return self._text

    def _make(self) -> str:
        from . import irtext

        spec, ret, args = _signature_of(self.name)
        res = self.device_fn.neutral(args, ret)
        callee = res.fndesc.llvm_func_name
        ll_ret = str(spec.ret)
        params = ", ".join(f"{a} %a{i}" for i, a in enumerate(map(str, spec.args)))
        wrapper = (
            f"define {ll_ret} @{self.name}({params}) alwaysinline nounwind {{\n"
            f"entry:\n"
            f"  %ret = alloca {ll_ret}\n"
            f"  %st = call i32 @\"{callee}\"(ptr %ret{', ' if params else ''}{params})\n"
            f"  %v = load {ll_ret}, ptr %ret\n"
            f"  ret {ll_ret} %v\n}}\n")
        neutral = res.library.neutral_ir() + "\n" + wrapper
        target = self.resolve_target()
        return irtext.definitions_only(target.map_ir(neutral))


def overlay(fn_or_name, target, *, ir=None) -> Callable[[Callable], Callable] | None:
    """Add or replace the device implementation of *fn_or_name* on *target*.

    *fn_or_name* is a Python function that the kernel language lowers to a
    portable intrinsic (``math.exp``, ``math.sin``, ...; see
    :func:`intrinsic_names`) or the name of an intrinsic (``"__gpux_exp_f32"``).
    *target* is a target name (``"opencl"``), a family (``"spirv"``), a
    Device or a Target.

    With ``ir=``, the definition is LLVM IR text in the target's address
    spaces that ``define``\\ s the intrinsic (``alwaysinline``), plus
    ``declare`` lines for what it calls; give a dict ``{intrinsic name: text}``
    to define several.  Without ``ir=``, ``overlay`` returns a decorator that
    takes a Python function (or a ``@jit(device=True)`` function) and uses it,
    compiled for each intrinsic's argument types, as the definition.  The
    definition stacks over the target's defaults and replaces an earlier
    overlay of the same name.
    """
    names = intrinsic_names(fn_or_name)
    reg, resolve = _registry_and_target(target)
    if ir is not None:
        if isinstance(ir, str):
            if len(names) != 1:
                raise GpuxUserError(
                    f"overlay(): {fn_or_name!r} maps to {len(names)} intrinsics ({', '.join(names)}); "
                    f"give ir= as a dict {{intrinsic name: IR text}}")
            ir = {names[0]: ir}
        if not isinstance(ir, dict):
            raise GpuxUserError("overlay(): ir= must be IR text or a dict {intrinsic name: IR text}")
        for k, text in ir.items():
            if k not in names:
                raise GpuxUserError(f"overlay(): {k!r} is not one of {', '.join(names)}")
            if not isinstance(text, str) or f"@{k}(" not in text.replace(f'@"{k}"(', f"@{k}("):
                raise GpuxUserError(f"overlay(): the IR given for {k} does not define @{k}")
            reg.define(k, text)
        return None

    def decorate(impl):
        from .compiler import Options
        from .dispatcher import GpuxFunction

        if isinstance(impl, GpuxFunction):
            dev = GpuxFunction(impl.py_func, device=True, options=impl.options)
        elif callable(impl):
            dev = GpuxFunction(impl, device=True, options=Options())
        else:
            raise GpuxUserError(f"overlay(...) decorates a Python function, not {impl!r}")
        for n in names:
            _signature_of(n)  # fail now, not at link time
            d = _PythonDefinition(n, dev, resolve)
            reg.define(n, d, token=d.cache_token)
        return impl

    return decorate


def remove_overlay(fn_or_name, target) -> None:
    """Remove overlays of *fn_or_name* from *target*'s own registry (the defaults below
    it apply again)."""
    names = intrinsic_names(fn_or_name)
    reg, _ = _registry_and_target(target)
    reg.remove(names)

