"""Make ``numba.cuda`` be ``numba_gpux.cuda`` in every interpreter that starts with this
folder on ``PYTHONPATH`` (``benchmarks/library_tests.sh`` puts it there).

Code written for numba.cuda (a library and its tests, unchanged) then runs through the
facade: ``from numba import cuda``, ``import numba.cuda`` and ``numba.cuda.X`` (for every
submodule ``X`` the facade has, ``numba.cuda.cudadrv.driver`` say) all yield the facade's
own module objects, never a second copy loaded under a numba.cuda name.  A submodule the
facade lacks is a ``ModuleNotFoundError`` naming it.

Nothing is imported until something asks for ``numba.cuda``: a process that never uses it
(pip, a build step) pays nothing.  Python runs one ``sitecustomize``; this one then runs
the next one on ``sys.path``, if there is one, so an environment's own is not lost.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys

__all__ = ["FACADE", "NumbaCudaAlias"]

FACADE = "numba_gpux.cuda"
ALIASED = "numba.cuda"


class _ExistingModule(importlib.abc.Loader):
    """Loader whose import yields the module ``target`` (imported on demand).

    The import system returns whatever ``sys.modules[spec.name]`` holds once
    ``exec_module`` is done and binds that object as the parent's attribute, so
    replacing the entry hands out the facade's module itself.
    """

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        sys.modules[module.__spec__.name] = importlib.import_module(self.target)


class NumbaCudaAlias(importlib.abc.MetaPathFinder):
    """Answers ``numba.cuda`` and ``numba.cuda.*`` with ``numba_gpux.cuda`` and its modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != ALIASED and not fullname.startswith(ALIASED + "."):
            return None
        facade_name = FACADE + fullname[len(ALIASED):]
        if facade_name not in sys.modules:
            try:
                found = importlib.util.find_spec(facade_name)
            except (ImportError, ValueError):
                found = None
            if found is None:
                # The path finders must not look in the facade's folders themselves:
                # they would load its files a second time under numba.cuda names.
                raise ModuleNotFoundError(
                    f"No module named {fullname!r} ({FACADE} has no {facade_name!r})",
                    name=fullname,
                )
        return importlib.machinery.ModuleSpec(fullname, _ExistingModule(facade_name))


def _install() -> None:
    if any(isinstance(f, NumbaCudaAlias) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, NumbaCudaAlias())


def _chain_next_sitecustomize() -> None:
    """Run the ``sitecustomize`` this one shadows, as Python would have without us."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if os.path.abspath(entry or os.curdir) == here:
            continue
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry])
        if spec is not None and spec.loader is not None:
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return


_install()
_chain_next_sitecustomize()
