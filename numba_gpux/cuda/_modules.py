"""Module paths that numba.cuda code imports and the facade answers without a file of
its own: one table, served by one import hook.

numba.cuda vendors pieces of Numba (``numba.cuda.core.errors``,
``numba.cuda.typing.templates``...) and keeps small modules that code imports by
path (``numba.cuda.kernels.transpose``).  Here each such path is one row of
:data:`MODULES`; :class:`ModuleTable`, put first on ``sys.meta_path`` by
``numba_gpux/cuda/__init__.py``, answers exactly the paths the table lists (under
each root of :data:`ROOTS`) and nothing else, so ``import numba_gpux.cuda.X``,
``from numba_gpux.cuda.X import Y``, ``importlib.import_module`` and pickles that
name a module by path all find it.  What a row stands for:

- ``"package.module"``: that module itself.  ``import numba_gpux.cuda.core.errors``
  yields ``numba.core.errors``, the same object (never a second copy), and objects
  defined in it pickle under their own module's name.
- ``{"name": "package.module:attribute", ...}``: a module made of those objects.  A
  row with rows below it (``"core"`` and ``"core.errors"``) is a package whose
  submodules are exactly those rows; they are imported with it, as the package's
  ``__init__`` would.

The same hook serves the import alias (:mod:`numba_gpux.alias`): each root of
:data:`ALIASES` that the alias has turned on (:data:`ACTIVE`) is a module name that
stands for a facade module, and every name below it for the facade's module of the same
path (``numba.cuda.cudadrv.driver`` is ``numba_gpux.cuda.cudadrv.driver``, the same
object).  A name below an alias root that the facade lacks is a ``ModuleNotFoundError``
naming it: the path finders never look, so no file of the facade is loaded twice.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from typing import NamedTuple

__all__ = ["MODULES", "ROOTS", "ALIASES", "ACTIVE", "Alias", "ModuleTable", "install", "move_first"]

#: path under the root -> the module, or the names, it stands for
MODULES: dict[str, str | dict[str, str]] = {
    "cgutils": "numba.core.cgutils",
    "utils": "numba.core.utils",
    "core": {},
    "core.config": "numba_gpux.cuda.config",
    "core.errors": "numba.core.errors",
    "core.imputils": "numba.core.imputils",
    "core.rewrites": "numba.core.rewrites",
    "cudadrv.devices": {
        "gpus": "numba_gpux.cuda.api:gpus",
        "get_context": "numba_gpux.cuda.api:current_context",
        "require_context": "numba_gpux.cuda.api:require_context",
        "reset": "numba_gpux.cuda.api:reset",
        "get_current_device": "numba_gpux.cuda.api:get_current_device",
    },
    "kernels": {},
    "kernels.reduction": "numba_gpux.cuda.reduction",
    "kernels.transpose": {"transpose": "numba_gpux.cuda._arrays:transpose_2d"},
    "misc": {},
    "misc.special": "numba.misc.special",
    "np": {},
    "np.numpy_support": "numba.np.numpy_support",
    "typeconv": {"Conversion": "numba.core.typeconv:Conversion"},
    "typeconv.castgraph": "numba.core.typeconv.castgraph",
    "typeconv.rules": "numba.core.typeconv.rules",
    "typeconv.typeconv": "numba.core.typeconv.typeconv",
    "typing": {
        "Signature": "numba.core.typing:Signature",
        "signature": "numba.core.typing:signature",
        "make_concrete_template": "numba.core.typing:make_concrete_template",
    },
    "typing.templates": "numba.core.typing.templates",
    "typing.typeof": "numba.core.typing.typeof",
}

#: the module names each table is served under: root -> table (the import alias's roots,
#: such as ``numba.cuda``, are :data:`ALIASES`)
ROOTS: dict[str, dict[str, str | dict[str, str]]] = {
    "numba_gpux.cuda": MODULES,
}


class Alias(NamedTuple):
    """What one alias root stands for while the alias is on."""

    #: the module the root itself is
    module: str
    #: the facade root whose modules the names below the root are
    below: str
    #: the package above the root as the alias provides it: its submodules other than
    #: the root, each the module it stands for (None: the real package is left alone, as
    #: ``numba`` is, which the facade runs on)
    parent: dict[str, str] | None


#: the module names the import alias can serve: root -> what it stands for
ALIASES: dict[str, Alias] = {
    "numba.cuda": Alias("numba_gpux.cuda", "numba_gpux.cuda", parent=None),
    "numba_cuda_mlir.cuda": Alias("numba_gpux.cuda.mlir_dialect", "numba_gpux.cuda",
                                  parent={"types": "numba_gpux.cuda.types"}),
}

#: the roots of :data:`ALIASES` served now (numba_gpux.alias.install and uninstall)
ACTIVE: set[str] = set()


def _children(table: dict, path: str) -> list[str]:
    """The rows directly below *path* in *table*, by their last name."""
    prefix = path + "."
    return [p[len(prefix):] for p in table if p.startswith(prefix) and "." not in p[len(prefix):]]


class _RowLoader(importlib.abc.Loader):
    """Makes the module that one row of a table stands for."""

    def __init__(self, entry, children: list[str]):
        self.entry = entry
        self.children = children

    def create_module(self, spec):
        return None  # the default module; exec_module fills or replaces it

    def exec_module(self, module) -> None:
        name = module.__spec__.name
        if isinstance(self.entry, str):
            # the import system hands out whatever sys.modules holds for the name once
            # this returns, and binds it as the parent's attribute: the module itself
            sys.modules[name] = importlib.import_module(self.entry)
            return
        for attr, where in self.entry.items():
            modname, _, obj = where.partition(":")
            setattr(module, attr, getattr(importlib.import_module(modname), obj))
        module.__doc__ = f"``{name}``: a module path numba-gpux serves ({__name__})."
        module.__all__ = [*self.entry, *self.children]
        for child in self.children:
            importlib.import_module(f"{name}.{child}")


class ModuleTable(importlib.abc.MetaPathFinder):
    """The import hook: answers the module names that :data:`ROOTS` lists and, while the
    alias is on, those below the roots of :data:`ACTIVE`; only those."""

    def find_spec(self, fullname, path=None, target=None):
        for root, table in ROOTS.items():
            if fullname.startswith(root) and fullname[len(root):len(root) + 1] == ".":
                rel = fullname[len(root) + 1:]
                entry = table.get(rel)
                if entry is None:
                    return None
                children = _children(table, rel)
                return importlib.machinery.ModuleSpec(
                    fullname, _RowLoader(entry, children), is_package=bool(children))
        for root in tuple(ACTIVE):  # a copy: install() may run in another thread
            spec = _alias_spec(fullname, root, ALIASES[root])
            if spec is not None:
                return spec
        return None


def _alias_spec(fullname: str, root: str, alias: Alias):
    """The spec of *fullname* if the alias root *root* serves it, else None."""
    if fullname == root:
        return importlib.machinery.ModuleSpec(fullname, _RowLoader(alias.module, []),
                                              is_package=True)
    parent = root.rpartition(".")[0]
    if alias.parent is not None:
        # the package that holds the root, made here (the real one would load its own)
        if fullname == parent:
            return importlib.machinery.ModuleSpec(
                fullname, _RowLoader({}, list(alias.parent)), is_package=True)
        rel = fullname[len(parent) + 1:] if fullname.startswith(parent + ".") else None
        if rel in alias.parent:
            return importlib.machinery.ModuleSpec(fullname, _RowLoader(alias.parent[rel], []))
    if not fullname.startswith(root + "."):
        return None
    facade_name = alias.below + fullname[len(root):]
    if facade_name not in sys.modules:
        try:
            found = importlib.util.find_spec(facade_name)
        except (ImportError, ValueError):
            found = None
        if found is None:
            # answered here, never by the path finders: the aliased package's __path__
            # is the facade's folder, whose files they would load a second time
            raise ModuleNotFoundError(
                f"No module named {fullname!r} ({alias.below} has no {facade_name!r})",
                name=fullname)
    return importlib.machinery.ModuleSpec(fullname, _RowLoader(facade_name, []))


def install() -> None:
    """Put the hook first on ``sys.meta_path`` (once): before the path finders, which
    would otherwise load a vendored module's file a second time under a facade name."""
    if not any(isinstance(f, ModuleTable) for f in sys.meta_path):
        sys.meta_path.insert(0, ModuleTable())


def move_first() -> None:
    """Put the hook first on ``sys.meta_path`` again, ahead of finders inserted since
    (numba-cuda's redirector of ``numba.cuda`` goes first when its ``.pth`` runs)."""
    tables = [f for f in sys.meta_path if isinstance(f, ModuleTable)]
    for f in tables:
        sys.meta_path.remove(f)
    sys.meta_path.insert(0, tables[0] if tables else ModuleTable())
