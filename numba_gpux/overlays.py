"""Overlay registries: per-target definitions of portable intrinsics.

A registry maps a function name (a ``__gpux_*`` intrinsic, or any function a
target wants to replace) to LLVM IR text that defines it, written in that
target's own address spaces.  Registries stack: a target's own registry is
searched first, then its families' (``spirv``), then the shared defaults.
How deep the stack is changes nothing but the keys of the target's own code.

Every registry keeps a content digest of its definitions; a stack's digest
enters the key of code compiled for the Target that uses it, beside the target's
fingerprint (``cachekey.overlaid_fingerprint``), so code compiled before an
overlay was added or replaced is never reused after.
``epoch`` counts changes to any registry, for caches that must notice them
cheaply (the launch path's per-signature shims).

A feature module that few kernels need can be named with ``define_module``
instead of imported: it is imported when a name it defines is first looked up,
and its definitions enter the digest through the module's name (numba-gpux's
own files enter every cache key), so loading it changes no key.

Definitions should be ``alwaysinline`` and externally visible (a plain
``define``): linking resolves the kernel's declarations against them, and the
internalize stage then makes them internal.  A definition may ``declare``
what it calls.
"""

from __future__ import annotations

import hashlib
import importlib
import threading
from typing import Callable, Iterable

from . import irlex
from .irtext import after_params, defined_functions

__all__ = ["OverlayRegistry", "OverlayStack", "Deferred", "registry", "registry_stack", "SHARED",
           "epoch"]

#: bumped by every ``define`` in any registry
epoch = 0

#: the token of a definition made by a module named with ``define_module`` while it
#: loads: the digest has the module's name instead
_FROM_MODULE = object()
#: per thread: the modules being loaded for ``define_module`` (innermost last)
_loading = threading.local()
#: modules named with ``define_module`` that have been imported
_loaded: set[str] = set()


def _module_loading() -> str | None:
    stack = getattr(_loading, "stack", None)
    return stack[-1] if stack else None


def _load_module(module: str) -> None:
    """Import a module named with ``define_module`` (once; its ``define`` calls are
    attributed to it)."""
    if module in _loaded:
        return
    stack = getattr(_loading, "stack", None)
    if stack is None:
        stack = _loading.stack = []
    stack.append(module)
    try:
        importlib.import_module(module)
    finally:
        stack.pop()
    _loaded.add(module)


class Deferred:
    """A definition made when it is first looked up: ``factory(*args)``, then kept.

    For overlay modules that register many variants (one per type and operation):
    importing them, a target's first use, then builds no text for the variants no
    kernel calls.  Its cache token names the factory and the arguments, so the
    factory's output must follow from them and from its module's code (numba-gpux's
    own files enter every cache key; see ``cachekey.environment_key``)."""

    __slots__ = ("factory", "args", "cache_token", "_text")

    def __init__(self, factory: Callable[..., str], *args):
        self.factory, self.args = factory, args
        self.cache_token = f"{factory.__module__}.{factory.__qualname__}{args!r}"
        self._text = None

    def __call__(self) -> str:
        if self._text is None:
            self._text = self.factory(*self.args)
        return self._text


class OverlayRegistry:
    """Named definitions; ``define`` adds or replaces one."""

    def __init__(self, name: str):
        self.name = name
        self._defs: dict[str, str | Callable[[], str]] = {}
        #: name prefix -> factory(name) returning a definition, or None for a name
        #: outside the family (``define_family``)
        self._families: dict[str, Callable[[str], object]] = {}
        self._tokens: dict[str, object] = {}
        #: name prefix -> module that defines the names with that prefix (``define_module``)
        self._modules: dict[str, str] = {}
        self._digest: str | None = None
        self._lock = threading.Lock()
        self.version = 0

    def define(self, name: str, ir_text: str | Callable[[], str], token: str | None = None) -> None:
        """Register IR text (or a callable returning it) that defines *name*.

        *token* identifies the definition's content in cache keys; by default
        it is a hash of the text, or for a callable its ``cache_token``
        attribute or its qualified name.
        """
        global epoch
        if self._by_module(name):
            with self._lock:
                # a definition made before the module loaded (an override) stays
                if name not in self._defs:
                    self._defs[name] = ir_text
                    self._tokens[name] = _FROM_MODULE
            return
        if token is None:
            if callable(ir_text):
                token = getattr(ir_text, "cache_token", None) or \
                    f"{getattr(ir_text, '__module__', '')}.{getattr(ir_text, '__qualname__', repr(ir_text))}"
            # else: text, or a definition object of another kind, whose repr is its
            # content: hashed into the digest itself (one hash for all definitions
            # when the digest is read, not one per definition at import)
        with self._lock:
            self._defs[name] = ir_text
            self._tokens[name] = None if token is None else str(token)
            self._digest = None
            self.version += 1
            epoch += 1

    def define_family(self, prefix: str, factory: Callable[[str], object],
                      token: str | None = None) -> None:
        """Define every name that starts with *prefix* through ``factory(name)``.

        For intrinsics that come in many variants (one ``__gpux_printf_<codes>`` per
        argument list): the definition of a variant is made when a kernel needs it,
        not registered one by one at import.  ``factory`` returns the definition (IR
        text, or the registry's kind of definition object), or None for a name it
        does not define.  A definition of the exact name (``define``) wins.
        *token* identifies the factory's output in cache keys (default: its
        ``cache_token`` attribute or qualified name), as for ``define``.
        """
        global epoch
        if self._by_module(prefix):
            with self._lock:
                self._families.setdefault(prefix, factory)
                self._tokens.setdefault(prefix + "*", _FROM_MODULE)
            return
        if token is None:
            token = getattr(factory, "cache_token", None) or \
                f"{getattr(factory, '__module__', '')}.{getattr(factory, '__qualname__', repr(factory))}"
        with self._lock:
            self._families[prefix] = factory
            self._tokens[prefix + "*"] = str(token)
            self._digest = None
            self.version += 1
            epoch += 1

    def define_module(self, module: str, prefixes: Iterable[str]) -> None:
        """The names that start with one of *prefixes* are defined by *module* (a
        module path), imported when one of them is first looked up (or the
        registry's names are listed, or one of them removed).

        The module fills this registry with ``define`` and ``define_family`` as
        usual, with names of those prefixes only; a definition made before it
        loads (an override) is kept.  The digest names the module, so loading it
        changes no key; its code enters cache keys with numba-gpux's files
        (``cachekey.environment_key``) or its package's (``cachekey.target_key``)."""
        global epoch
        with self._lock:
            for p in prefixes:
                self._modules[p] = module
                self._tokens[p + "@"] = f"module {module}"
            self._digest = None
            self.version += 1
            epoch += 1

    def _by_module(self, name: str) -> bool:
        """Whether *name* is being defined by the module loading now, for this
        registry (a name outside the module's prefixes is an error)."""
        module = _module_loading()
        if module is None or module not in self._modules.values():
            return False
        if not any(name.startswith(p) for p, m in self._modules.items() if m == module):
            raise ValueError(f"overlay module {module} defines {name!r} in registry "
                             f"{self.name!r}, outside the prefixes it was named for")
        return True

    def _load_for(self, name: str) -> bool:
        """Load the module that defines *name*, if one is named for it and not yet
        loaded; whether one was loaded."""
        for p, module in self._modules.items():
            if name.startswith(p) and module not in _loaded:
                _load_module(module)
                return True
        return False

    def _load_all(self) -> None:
        for module in set(self._modules.values()):
            _load_module(module)

    def _from_family(self, name: str):
        for prefix, factory in self._families.items():
            if name.startswith(prefix):
                d = factory(name)
                if d is not None:
                    return d
        return None

    def remove(self, names: Iterable[str]) -> None:
        """Remove the definitions of *names* (those present) from this registry."""
        global epoch
        names = list(names)
        for n in names:
            self._load_for(n)
        with self._lock:
            for n in names:
                if self._defs.pop(n, None) is not None:
                    if self._tokens.pop(n, None) is _FROM_MODULE:
                        self._tokens[n + "!"] = "removed"  # the module's name no longer says it
                    self._digest = None
                    self.version += 1
                    epoch += 1

    @property
    def digest(self) -> str:
        """A hash of every definition's name and content token."""
        d = self._digest
        if d is None:
            with self._lock:
                h = hashlib.sha1(self.name.encode())
                for k in sorted(self._tokens):
                    tok = self._tokens[k]
                    if tok is _FROM_MODULE:  # the module's name is in the digest
                        continue
                    if tok is None:  # the definition's content
                        defn = self._defs[k]
                        body = (defn if isinstance(defn, str) else repr(defn)).encode()
                        h.update(f"|{k}#{len(body)}=".encode())
                        h.update(body)
                    else:
                        h.update(f"|{k}={tok}".encode())
                d = self._digest = h.hexdigest()
        return d

    def define_many(self, defs: dict[str, str]) -> None:
        for k, v in defs.items():
            self.define(k, v)

    def get(self, name: str) -> str | None:
        d = self._defs.get(name)
        if d is None:
            if self._modules and self._load_for(name):
                return self.get(name)
            return self._from_family(name) if self._families else None
        return d() if callable(d) else d

    def names(self) -> set[str]:
        """The names defined one by one (families' members are made on demand)."""
        self._load_all()
        return set(self._defs)

    def __contains__(self, name: str) -> bool:
        if name in self._defs:
            return True
        if self._modules and self._load_for(name):
            return name in self
        return bool(self._families) and self._from_family(name) is not None

    def __repr__(self):
        pending = set(self._modules.values()) - _loaded
        more = f", {len(pending)} modules not loaded" if pending else ""
        return f"<OverlayRegistry {self.name!r}: {len(self._defs)} definitions{more}>"


_registries: dict[str, OverlayRegistry] = {}
_reg_lock = threading.Lock()

#: the shared defaults, searched last by every target
SHARED = "shared"


def registry(name: str) -> OverlayRegistry:
    """The registry called *name* (a target, a family such as ``spirv``, or ``shared``)."""
    with _reg_lock:
        reg = _registries.get(name)
        if reg is None:
            reg = _registries[name] = OverlayRegistry(name)
        return reg


class OverlayStack:
    """Registries searched in order: target, families, shared."""

    def __init__(self, regs: Iterable[OverlayRegistry]):
        self.registries = tuple(regs)

    def lookup(self, name: str) -> str | None:
        return self._lookup(name)[0]

    def _lookup(self, name: str) -> tuple[str | None, OverlayRegistry | None]:
        for reg in self.registries:
            text = reg.get(name)
            if text is not None:
                return text, reg
        return None, None

    @property
    def digest(self) -> str:
        """The registries' digests combined: part of the key of code compiled for a Target
        using this stack (``cachekey.overlaid_fingerprint``)."""
        return hashlib.sha1("|".join(r.digest for r in self.registries).encode()).hexdigest()[:20]

    def provides(self, name: str) -> bool:
        return any(name in reg for reg in self.registries)

    def module_text(self, names: Iterable[str], map_shared=None) -> tuple[str, set[str]]:
        """IR text defining every name it can, and the set of names it could not.

        The shared registry's definitions are written in the neutral address-space
        numbering; *map_shared* (the target's ``map_ir``) turns each into the target's."""
        bodies: list[str] = []
        decls: dict[str, None] = {}
        missing: set[str] = set()
        defined: set[str] = set()
        for n in sorted(set(names)):
            text, reg = self._lookup(n)
            if text is None:
                missing.add(n)
                continue
            if map_shared is not None and reg.name == SHARED:
                text = map_shared(text)
            rest = []
            for ln in text.split("\n"):  # (a line that starts with "declare" is one)
                if ln.startswith("declare ") or ln == "declare":
                    decls[ln] = None
                else:
                    rest.append(ln)
            body = "\n".join(rest).strip()
            if body in bodies:  # one text defines several of the names asked for
                continue
            defined |= defined_functions(body)
            bodies.append(body)
        kept = _merge_declarations(decls, defined)
        return "\n".join(kept) + "\n\n" + "\n\n".join(bodies) + "\n", missing


def _attributes(toks, i: int) -> list[str]:
    """The function attributes among *toks* from *i* on, each as one string (an
    attribute with an argument list, ``memory(none)``, with it)."""
    out = []
    while i < len(toks):
        if not irlex.is_code(toks[i]):
            i += 1
            continue
        j = i + 1
        while j < len(toks) and not irlex.is_code(toks[j]):
            j += 1
        if j < len(toks) and toks[j] == "(":
            end = irlex.match_paren(toks, j)
            out.append(irlex.join(toks[i:end + 1]))
            i = end + 1
        else:
            out.append(toks[i])
            i += 1
    return out


def _merge_declarations(lines, defined: set) -> list[str]:
    """One ``declare`` line per function not in *defined* (a definition's helper
    declares must not clash with another's definition).  Definitions written apart may
    declare a helper with different function attributes (``nounwind`` in one, none in
    another), which LLVM reads as two declarations of one name: the line kept is the
    first, with the attributes of the others after its own (their union, in order of
    appearance)."""
    first: dict[str, list] = {}  # name -> [tokens up to the attributes, attributes]
    out: list = []
    for line in lines:
        toks = irlex.line_tokens(line)
        at = irlex.define_name(toks)
        if at is None:
            out.append(line)
            continue
        name = irlex.name(toks[at])
        if name in defined:
            continue
        head = after_params(toks, at)
        attrs = _attributes(toks, head)
        got = first.get(name)
        if got is None:
            first[name] = entry = [toks[:head], attrs]
            out.append(entry)
        else:
            got[1] += [a for a in attrs if a not in got[1]]
    return [e if isinstance(e, str) else irlex.join(e[0]) + "".join(f" {a}" for a in e[1])
            for e in out]


def registry_stack(target_name: str, families: tuple[str, ...]) -> OverlayStack:
    return OverlayStack([registry(target_name), *(registry(f) for f in families), registry(SHARED)])
