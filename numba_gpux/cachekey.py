"""The pre-typing key of a kernel: what determines its code, computed before Numba runs.

The disk cache's index (``cache.py``) finds finished code by this key, so that
a process with a warm cache runs neither typing nor lowering.  The key is made
of:

* the function's code: bytecode, constants (nested code objects included),
  names, argument defaults;
* the values of the globals and closure variables it reads: numbers, strings,
  bytes, tuples of those, NumPy scalars and arrays (by content), enum members;
  modules by name, with the values of the attributes the code may read from
  them (so ``other_module.helper`` is keyed by what ``helper`` is now);
* the keys of the device functions it calls (numba-gpux device functions and
  ``@numba.jit`` functions), transitively, in whatever module they live;
* for a global resolved through Numba's typing registry, the overloads
  registered for it outside Numba and numba-gpux: an ``@overload``'s function
  (keyed like a kernel), an ``@intrinsic``'s definition, and for any other
  template the size and modification time of the file that defines it;
  the same for attribute and method templates registered by libraries;
* for an object that says what of it the code depends on (a ``__gpux_cache_key__``
  method), that: e.g. the kind, name and current content of code linked with the
  kernel (``linking.LinkInput``) and of a foreign device function's code, so a
  changed ``.cu`` file compiles again;
* the argument types (numbers, arrays, tuples and records: types whose Numba name
  says everything about them), the caller options, the target description and the
  content of its overlay registries;
* the versions of Python, NumPy, Numba, llvmlite and numba-gpux, and the sizes
  and modification times of numba-gpux's own files (an edited checkout is
  another version).

Anything the key cannot see into (an object of an unknown class, a plain
Python function, an empty closure cell) makes :func:`kernel_key` return None:
such a kernel is not found by this index (it still uses the cache keyed by the
neutral IR), so a change the key cannot see never yields stale code.
"""

from __future__ import annotations

import enum
import hashlib
import os
import sys
import types as pytypes

import numpy as np

__all__ = ["kernel_key", "Uncacheable", "environment_key", "target_key", "overlaid_fingerprint"]


class Uncacheable(Exception):
    """Something the kernel reads cannot be keyed."""


#: modules whose objects are keyed by name: their behaviour is fixed by the
#: versions (and numba-gpux's files) in :func:`environment_key`
_KNOWN_ROOTS = frozenset({"numba", "numba_gpux", "numpy", "math", "cmath", "builtins",
                          "operator", "llvmlite", "_operator", "functools"})

_SCALARS = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis))


def _root(modname) -> str:
    return (modname or "").split(".", 1)[0]


def _file_stamp(modname: str) -> str:
    """Size and modification time of the file that defines module *modname*."""
    mod = sys.modules.get(modname)
    path = getattr(mod, "__file__", None)
    if not path:
        raise Uncacheable(f"module {modname} has no file")
    try:
        st = os.stat(path)
    except OSError:
        raise Uncacheable(f"cannot stat {path}") from None
    return f"{path}:{st.st_size}:{st.st_mtime_ns}"


# --------------------------------------------------------------------------- environment

_env_key: str | None = None


def _tree_stamp(root: str, h) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".py", ".ll", ".cl", ".metal", ".txt", ".json")):
                try:
                    st = os.stat(os.path.join(dirpath, name))
                except OSError:
                    continue
                h.update(f"{os.path.relpath(os.path.join(dirpath, name), root)}:"
                         f"{st.st_size}:{st.st_mtime_ns}|".encode())


def environment_key() -> str:
    """Versions of Python, NumPy, Numba, llvmlite and numba-gpux, and the sizes and
    modification times of numba-gpux's files (computed once per process)."""
    global _env_key
    if _env_key is None:
        import llvmlite
        import numba

        from . import _version

        h = hashlib.sha256()
        h.update(f"{sys.implementation.cache_tag}|{sys.version}|{np.__version__}|"
                 f"{numba.__version__}|{llvmlite.__version__}|{_version.__version__}|".encode())
        roots = {os.path.dirname(os.path.abspath(__file__))}
        targets = sys.modules.get("numba_gpux.targets")
        for p in getattr(targets, "__path__", ()) or ():
            roots.add(os.path.abspath(p))
        for r in sorted(roots):
            h.update(r.encode())
            _tree_stamp(r, h)
        _env_key = h.hexdigest()
    return _env_key


def overlaid_fingerprint(target) -> str:
    """What a target contributes to the key of code compiled for it: its fingerprint (a
    pure function of the description) combined with the content of its overlay registry
    stack, so that registering or removing an overlay changes the key of every kernel it
    could change.  The kernel-language modules are imported first, since they fill the
    shared overlay registry as they load (the shared typing context is not built).
    Computed once per (description, overlay registries' change count)."""
    global _language_loaded
    from . import overlays

    if not _language_loaded:
        from .context import load_language_modules

        load_language_modules()
        _language_loaded = True
    memo = (target.fingerprint, overlays.epoch)
    got = _overlaid.get(memo)
    if got is None:
        got = hashlib.sha256(f"{target.fingerprint}|{target.overlays().digest}"
                             .encode()).hexdigest()[:24]
        if len(_overlaid) > 256:
            _overlaid.clear()
        _overlaid[memo] = got
    return got


_overlaid: dict = {}
_language_loaded = False


def target_key(target) -> str:
    """:func:`overlaid_fingerprint`, and for a target from another package the sizes and
    modification times of that package's files (the pre-typing key's part for the target)."""
    from . import overlays

    base = overlaid_fingerprint(target)
    memo = (base, overlays.epoch)
    got = _target_keys.get(memo)
    if got is None:
        cls = type(target)
        h = hashlib.sha256(f"{base}|".encode())
        if _root(cls.__module__) != "numba_gpux":  # a target from another package: its files
            top = sys.modules.get(_root(cls.__module__))
            for p in getattr(top, "__path__", None) or ():
                _tree_stamp(os.path.abspath(p), h)
            if not getattr(top, "__path__", None):
                h.update(_file_stamp(cls.__module__).encode())
        got = h.hexdigest()
        if len(_target_keys) > 64:
            _target_keys.clear()
        _target_keys[memo] = got
    return got


_target_keys: dict = {}


# --------------------------------------------------------------------------- overloads

_reg_index: tuple | None = None  # (registration counts, {id(value): [types]})
_attr_digest: tuple | None = None  # (registration counts, digest)


def _typing_registries():
    from numba.core.typing import templates

    from . import context

    return [templates.builtin_registry, *context._extra_typing_registries]


def _counts(regs) -> tuple:
    return tuple((len(r.globals), len(r.functions), len(r.attributes)) for r in regs) + tuple(
        sum(len(getattr(r, a, ()) or ()) for a in ("functions", "getattrs", "setattrs", "casts",
                                                     "constants"))
        for r in _lowering_registries())


def _lowering_registries():
    from numba.core import imputils

    from . import context

    return [imputils.builtin_registry, *context._extra_lowering_registries]


def _lowering_keys() -> list[str]:
    """The files of the lowering implementations libraries registered (``lower_builtin``
    & co.), by size and modification time."""
    mods = set()
    for r in _lowering_registries():
        for attr in ("functions", "getattrs", "setattrs", "casts", "constants"):
            for item in getattr(r, attr, ()) or ():
                impl = item[0] if isinstance(item, tuple) else item
                mod = _impl_module(impl)
                if _root(mod) not in _KNOWN_ROOTS:
                    mods.add(mod)
    return [f"lower:{_file_stamp(m)}" for m in sorted(mods)]


def _impl_module(fn) -> str:
    """The module of a lowering implementation, looking through Numba's wrappers (the
    implementation it wraps is in the wrapper's closure)."""
    mod = _defining_module(fn)
    if _root(mod) in _KNOWN_ROOTS:
        for cell in getattr(fn, "__closure__", None) or ():
            try:
                inner = cell.cell_contents
            except ValueError:
                continue
            if isinstance(inner, pytypes.FunctionType):
                m = _defining_module(inner)
                if _root(m) not in _KNOWN_ROOTS:
                    return m
    return mod


def _registry_index() -> dict:
    """{id(global value): [its registered Numba types]} over the registries a library's
    ``@overload`` & co. go to (rebuilt when they grow)."""
    global _reg_index
    regs = _typing_registries()
    counts = _counts(regs)
    if _reg_index is None or _reg_index[0] != counts:
        by_value: dict = {}
        for r in regs:
            for gv, gty in r.globals:
                by_value.setdefault(id(gv), []).append(gty)
        _reg_index = (counts, by_value)
    return _reg_index[1]


def _attributes_key() -> str:
    """A digest of the attribute, method and key templates libraries registered (which
    ones a kernel uses is known only after typing, so all of them enter every key)."""
    global _attr_digest
    regs = _typing_registries()
    counts = _counts(regs)
    if _attr_digest is None or _attr_digest[0] != counts:
        parts = [_template_key(tmpl) for r in regs
                 for tmpl in list(r.attributes) + list(r.functions) if _from_library(tmpl)]
        parts.extend(_lowering_keys())
        _attr_digest = (counts, hashlib.sha256("|".join(sorted(parts)).encode()).hexdigest())
    return _attr_digest[1]


def _template_function(tmpl):
    """The function behind a typing template: an ``@overload``'s or ``@intrinsic``'s
    definition, else the template's typer or ``generic`` method; None if it has none."""
    for attr in ("_overload_func", "_definition_func"):
        fn = getattr(tmpl, attr, None)
        if fn is not None:
            return fn
    gen = getattr(tmpl, "generic", None)
    gen = getattr(gen, "__func__", gen)
    for cell in getattr(gen, "__closure__", None) or ():
        try:
            content = cell.cell_contents
        except ValueError:
            continue
        if isinstance(content, pytypes.FunctionType):
            return content
    return gen if isinstance(gen, pytypes.FunctionType) else None


def _defining_module(fn) -> str:
    """The module whose globals a function reads (``__module__`` may be unset)."""
    g = getattr(fn, "__globals__", None)
    return (g.get("__name__") if g else None) or getattr(fn, "__module__", None) or ""


def _template_module(tmpl) -> str:
    fn = _template_function(tmpl)
    return _defining_module(fn) if fn is not None else getattr(tmpl, "__module__", "")


def _from_library(tmpl) -> bool:
    """Whether a typing template was registered outside Numba and numba-gpux (their own
    registrations, which grow as the context is built, are the versions')."""
    return _root(_template_module(tmpl)) not in _KNOWN_ROOTS


def _template_key(tmpl) -> str:
    """A library's template: an ``@overload``'s or ``@intrinsic``'s function keyed like a
    kernel's, any other template by the size and modification time of its file."""
    if getattr(tmpl, "_overload_func", None) is not None or \
            getattr(tmpl, "_definition_func", None) is not None:
        k = _Keyer()
        return "overload:" + k.function(_template_function(tmpl)) + repr(sorted(
            (str(a), repr(b)) for a, b in (getattr(tmpl, "_jit_options", {}) or {}).items()))
    mod = _template_module(tmpl)
    return f"tmpl:{mod}.{getattr(tmpl, '__qualname__', '')}@{_file_stamp(mod)}"


def _registered_key(value) -> str:
    """What the typing registries say about *value*, where a library registered it."""
    by_value = _registry_index()
    parts = []
    for gty in by_value.get(id(value), ()):
        for tmpl in getattr(gty, "templates", ()) or ():
            if _from_library(tmpl):
                parts.append(_template_key(tmpl))
    return "|".join(sorted(parts))


# --------------------------------------------------------------------------- values


def _is_gpux_function(v) -> bool:
    """A numba-gpux kernel or device function (of the class or a subclass)."""
    from .language.functions import is_device_function

    return is_device_function(v)


def _is_device_memory(v) -> bool:
    from .language.checks import is_device_memory

    return is_device_memory(v)


def _eager(fn) -> str:
    """The eager signatures a kernel or device function was declared with (they decide
    the types it is compiled for)."""
    return repr(tuple(str(s) for s in getattr(fn, "_eager_sigs", ()) or ()))


class _Keyer:
    """Keys functions and values, remembering functions already being keyed."""

    def __init__(self, lines: bool = False):
        #: key source positions too (code that carries line information)
        self.lines = lines
        self.active: set[int] = set()
        self.done: dict[int, str] = {}

    # -- code ---------------------------------------------------------------
    def code(self, co: pytypes.CodeType, h, names: set) -> None:
        h.update(co.co_code)
        h.update(repr((co.co_argcount, co.co_posonlyargcount, co.co_kwonlyargcount,
                       co.co_flags, co.co_names, co.co_varnames, co.co_freevars,
                       co.co_cellvars)).encode())
        if self.lines:
            h.update(f"{co.co_filename}:{co.co_firstlineno}".encode())
            h.update(co.co_linetable)
        names.update(co.co_names)
        for c in co.co_consts:
            if isinstance(c, pytypes.CodeType):
                h.update(b"<code>")
                self.code(c, h, names)
            else:
                h.update(self.value(c).encode())
                h.update(b",")

    def function(self, fn) -> str:
        """The key of a Python function: code, defaults, closure, the globals it reads."""
        fid = id(fn)
        got = self.done.get(fid)
        if got is not None:
            return got
        if fid in self.active:  # recursion: the cycle is keyed by the functions' code
            return f"cycle:{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', '')}"
        co = getattr(fn, "__code__", None)
        if not isinstance(co, pytypes.CodeType):
            raise Uncacheable(f"{fn!r} has no Python code")
        self.active.add(fid)
        try:
            h = hashlib.sha256()
            h.update(f"{fn.__module__}.{fn.__qualname__}|".encode())
            names: set[str] = set()
            self.code(co, h, names)
            h.update(b"|defaults:")
            h.update(self.value(fn.__defaults__).encode())
            kw = fn.__kwdefaults__ or {}
            h.update(self.value(tuple(sorted(kw.items()))).encode())
            h.update(b"|closure:")
            for name, cell in zip(co.co_freevars, fn.__closure__ or ()):
                try:
                    content = cell.cell_contents
                except ValueError:
                    raise Uncacheable(f"closure variable {name} of {fn.__qualname__} "
                                      f"is empty") from None
                h.update(f"{name}=".encode())
                h.update(self.value(content, names).encode())
            h.update(b"|globals:")
            g = fn.__globals__
            builtins = g.get("__builtins__")
            if isinstance(builtins, pytypes.ModuleType):
                builtins = builtins.__dict__
            for name in sorted(names):
                if name in g:
                    h.update(f"{name}=".encode())
                    h.update(self.value(g[name], names).encode())
                    h.update(b";")
                elif builtins and name in builtins:
                    h.update(f"{name}=builtin:{self.value(builtins[name], names)};".encode())
            key = h.hexdigest()
        finally:
            self.active.discard(fid)
        self.done[fid] = key
        return key

    # -- values -------------------------------------------------------------
    def value(self, v, names: set | None = None, depth: int = 0) -> str:
        if type(v) in _SCALARS:  # exactly: a subclass may mean anything
            return f"{type(v).__name__}:{v!r}"
        if type(v) in (tuple, list, frozenset):
            items = sorted(v, key=repr) if type(v) is frozenset else v
            return f"{type(v).__name__}(" + ",".join(self.value(x, names, depth) for x in items) + ")"
        keyed = getattr(type(v), "__gpux_cache_key__", None)
        if keyed is not None:  # an object that says what of it the code depends on
            try:
                return f"keyed:{type(v).__module__}.{type(v).__qualname__}:{keyed(v)}"
            except Exception as e:  # noqa: BLE001 - e.g. a file to link is gone
                raise Uncacheable(f"{type(v).__qualname__}: {e}") from None
        if isinstance(v, np.ndarray):
            a = np.ascontiguousarray(v)
            if a.dtype.hasobject:
                raise Uncacheable("an array of Python objects")
            digest = hashlib.sha256(a.view(np.uint8).reshape(-1) if a.size else b"").hexdigest()
            layout = "C" if v.flags.c_contiguous else ("F" if v.flags.f_contiguous else "A")
            return f"ndarray:{a.dtype.str}:{a.shape}:{layout}:{v.flags.writeable}:{digest}"
        if isinstance(v, np.generic):
            return f"np:{v.dtype.str}:{v!r}"
        if isinstance(v, np.dtype):
            return f"dtype:{v.str}:{v!r}"
        if isinstance(v, enum.Enum):
            cls = type(v)
            return f"enum:{cls.__module__}.{cls.__qualname__}.{v.name}={self.value(v.value)}"
        if isinstance(v, pytypes.ModuleType):
            return self.module(v, names or set(), depth)
        if _is_gpux_function(v):
            return (f"gpux:{type(v).__qualname__}:{v.is_device}:{v.options!r}:"
                    f"{self.value(tuple(sorted(v.extra.items())))}:{_eager(v)}:"
                    f"{self.function(v.py_func)}")
        from numba.core.dispatcher import Dispatcher
        from numba.core.extending import _Intrinsic

        if isinstance(v, Dispatcher):  # a @numba.jit function called as a device function
            return f"njit:{self.function(v.py_func)}"
        if isinstance(v, _Intrinsic):
            return f"intrinsic:{v._name}:{self.function(v._defn)}"
        registered = _registered_key(v)
        mod = getattr(v, "__module__", None) if isinstance(v, (type, pytypes.FunctionType,
                                                               pytypes.BuiltinFunctionType,
                                                               np.ufunc)) else None
        if isinstance(v, np.ufunc):
            return f"ufunc:{v.__name__}|{registered}"
        if isinstance(v, (type, pytypes.BuiltinFunctionType)):
            if _root(mod) in _KNOWN_ROOTS or isinstance(v, pytypes.BuiltinFunctionType):
                return f"obj:{mod}.{getattr(v, '__qualname__', v.__name__)}|{registered}"
            if isinstance(v, type) and issubclass(v, enum.Enum):
                return (f"enumclass:{mod}.{v.__qualname__}:"
                        + ",".join(f"{m.name}={self.value(m.value)}" for m in v))
            raise Uncacheable(f"class {mod}.{v.__qualname__}")
        if isinstance(v, pytypes.FunctionType):
            if _root(mod) in _KNOWN_ROOTS:
                return f"fn:{mod}.{v.__qualname__}|{registered}"
            if registered:  # a library function with a registered @overload (or template)
                return f"overloaded:{mod}.{v.__qualname__}|{registered}"
            # a plain Python function (a helper an intrinsic's code generator calls): by
            # its code, closure and the globals it reads, as a kernel's own function
            return f"pyfn:{self.function(v)}"
        tmod = type(v).__module__
        if _is_device_memory(v):
            # a captured device array is a hidden argument of the launch, which only
            # typing finds (the neutral IR's key still finds the compiled code)
            raise Uncacheable("a device array read from a global or closure variable")
        if _root(tmod) in ("numba", "numba_gpux"):
            # numba types and numba-gpux stubs: their behaviour is the versions'
            name = getattr(v, "name", None) or getattr(v, "__name__", None) or getattr(v, "_name", "")
            return f"inst:{tmod}.{type(v).__qualname__}:{name}|{registered}"
        from numba.core.types import Type as NumbaType

        if isinstance(v, NumbaType):
            # a library's Numba type (an extension type an intrinsic returns): its name,
            # and the files of its class and of its data model, whose code the kernel's
            # depends on
            cls = type(v)
            from numba.core.datamodel import default_manager

            model = default_manager._handlers.get(cls)
            where = _file_stamp(cls.__module__) + (
                f":{_file_stamp(model.__module__)}" if model is not None else "")
            return f"ntype:{cls.__module__}.{cls.__qualname__}:{v.name}:{where}|{registered}"
        raise Uncacheable(f"a global of type {tmod}.{type(v).__qualname__}")

    def module(self, mod: pytypes.ModuleType, names: set, depth: int) -> str:
        """A module by name, with the values of every attribute the code may read."""
        parts = [f"module:{mod.__name__}"]
        if _root(mod.__name__) in _KNOWN_ROOTS:
            return parts[0]
        if depth > 3:
            raise Uncacheable(f"modules nested too deep under {mod.__name__}")
        d = mod.__dict__
        for n in sorted(names):
            if n in d:
                v = d[n]
                if isinstance(v, pytypes.ModuleType) and v is mod:
                    continue
                # (the names are a superset of the attributes read: one that cannot be
                # keyed makes the kernel uncacheable even if it is not read)
                parts.append(f"{n}={self.value(v, names, depth + 1)}")
        return ";".join(parts)


def kernel_key(fn, argtypes: tuple, target) -> str | None:
    """The pre-typing key of the kernel *fn* (a GpuxFunction) for *argtypes* on
    *target*, or None if something it reads cannot be keyed."""
    try:
        k = _Keyer(lines=fn.options.lineinfo or fn.options.debug)
        body = f"{type(fn).__module__}.{type(fn).__qualname__}|" + k.function(fn.py_func)
        args = ",".join(_type_key(t) for t in argtypes)
        attrs = _attributes_key()
        extra = k.value(tuple(sorted((str(a), b) for a, b in fn.extra.items()))) + _eager(fn)
    except Uncacheable:
        return None
    h = hashlib.sha256()
    for part in ("kernel", body, args, repr(fn.options), extra, attrs, target_key(target),
                 environment_key()):
        h.update(part.encode())
        h.update(b"\x00")
    return h.hexdigest()


def _type_key(t) -> str:
    """A Numba argument type; only the kinds whose name says everything about them."""
    from numba.core import types

    # (datetime64/timedelta64 names carry their unit: "datetime64[D]")
    named = (types.Integer, types.Float, types.Complex, types.Boolean, types.NPDatetime,
             types.NPTimedelta)
    if isinstance(t, named):
        return f"{type(t).__name__}:{t.name}"
    if type(t) is types.Record:
        # Numba's identity of a record type is its name, which spells every field's name,
        # type, offset (and alignment or title), the size and whether it is aligned
        return f"Record:{t.name}"
    if isinstance(t, types.Array) and type(t) is types.Array:
        if isinstance(t.dtype, named):
            return f"Array:{t.dtype.name}:{t.ndim}:{t.layout}:{t.mutable}:{t.aligned}"
        if type(t.dtype) is types.Record:
            return f"Array:{_type_key(t.dtype)}:{t.ndim}:{t.layout}:{t.mutable}:{t.aligned}"
    if isinstance(t, (types.UniTuple, types.Tuple)) and type(t) in (types.UniTuple, types.Tuple):
        return f"{type(t).__name__}(" + ",".join(_type_key(x) for x in t.types) + ")"
    raise Uncacheable(f"argument type {t}")
