"""The import alias: unchanged numba.cuda and numba-cuda-mlir code runs on numba-gpux.

Opt-in, one process tree at a time::

    python -m numba_gpux.alias script.py [args]     # or -m module [args], -c code [args]

or, from Python, :func:`install` (and :func:`uninstall` to undo it).  While it is on,
``numba.cuda`` is :mod:`numba_gpux.cuda` and ``numba_cuda_mlir.cuda`` is
:mod:`numba_gpux.cuda.mlir_dialect` (the facade in numba-cuda-mlir's defaults and
spellings); every ``numba.cuda.X`` and ``numba_cuda_mlir.cuda.X`` is the facade's own
module ``numba_gpux.cuda.X``, the same object, whichever way it is imported
(``from numba import cuda``, ``import numba.cuda.cudadrv.driver``, ``importlib``).  A
module path the facade lacks is a ``ModuleNotFoundError`` naming it.

The names are served by the facade's one import hook (``numba_gpux/cuda/_modules.py``:
:data:`~numba_gpux.cuda._modules.ALIASES` lists them); turning the alias on moves that
hook first on ``sys.meta_path`` (ahead of numba-cuda's redirector of ``numba.cuda``)
and puts out of ``sys.modules`` a ``numba.cuda`` that was imported before, so the next
import, and ``numba.cuda`` read as an attribute of ``numba``, are the facade.
:func:`uninstall` puts it back.

Python processes the program starts (``subprocess`` running Python, multiprocessing's
spawn and forkserver workers) get the alias through their environment: :data:`ENVIRONMENT`
is set, and the folder ``numba_gpux/alias/site``, first on ``PYTHONPATH``, holds the
``sitecustomize`` module that calls :func:`install` when it is set (and then runs the
``sitecustomize`` it shadows, if any).  Interpreters started with ``-E``, ``-I`` or
``-S`` read neither, and run without the alias.
"""

from __future__ import annotations

import importlib
import os
import sys

from ..cuda import _modules

__all__ = ["install", "uninstall", "installed", "ENVIRONMENT", "SITE_DIR"]

#: set (to "1") in the environment of the processes the alias is on in
ENVIRONMENT = "NUMBA_GPUX_ALIAS"
#: the folder whose ``sitecustomize`` turns the alias on in a new interpreter
SITE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site")

_MISSING = object()
#: what install() put aside: module name -> module, and (parent, attribute) -> value
_saved_modules: dict[str, object] = {}
_saved_attributes: dict[tuple[str, str], object] = {}
#: whether install() changed the environment (uninstall() changes it back)
_environment_changed = False


def installed() -> bool:
    """Whether the alias is on in this process."""
    return bool(_modules.ACTIVE)


def _served_names(root: str, alias: _modules.Alias) -> list[str]:
    """The names in ``sys.modules`` that the alias root *root* answers."""
    parent = root.rpartition(".")[0]
    return [name for name in sys.modules
            if name == root or name.startswith(root + ".")
            or (alias.parent is not None and (name == parent or name.startswith(parent + ".")))]


def install(children: bool = True) -> None:
    """Turn the alias on in this process and, with *children*, in the Python processes
    it starts from now on.  Installing twice is the same as once."""
    global _environment_changed
    _modules.move_first()
    reimport = []
    for root, alias in _modules.ALIASES.items():
        if root in _modules.ACTIVE:
            continue
        for name in _served_names(root, alias):
            _saved_modules[name] = sys.modules.pop(name)
            if name == root:
                reimport.append(root)
        parent, _, attr = root.rpartition(".")
        if parent in sys.modules and alias.parent is None:
            _saved_attributes[(parent, attr)] = getattr(sys.modules[parent], attr, _MISSING)
            if hasattr(sys.modules[parent], attr):
                delattr(sys.modules[parent], attr)
        _modules.ACTIVE.add(root)
    for root in reimport:
        # code that reads numba.cuda as an attribute of an imported numba gets the facade
        importlib.import_module(root)
    if children:
        os.environ[ENVIRONMENT] = "1"
        paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
        if SITE_DIR not in paths:
            os.environ["PYTHONPATH"] = os.pathsep.join([SITE_DIR, *(p for p in paths if p)])
            _environment_changed = True


def uninstall() -> None:
    """Turn the alias off: the names it served are imported as without it again (the
    modules it put aside are back), and processes started from now on do not get it."""
    global _environment_changed
    for root, alias in _modules.ALIASES.items():
        if root not in _modules.ACTIVE:
            continue
        _modules.ACTIVE.discard(root)
        for name in _served_names(root, alias):
            del sys.modules[name]
        parent, _, attr = root.rpartition(".")
        if parent in sys.modules and alias.parent is None:
            old = _saved_attributes.pop((parent, attr), _MISSING)
            if old is _MISSING:
                if hasattr(sys.modules[parent], attr):
                    delattr(sys.modules[parent], attr)
            else:
                setattr(sys.modules[parent], attr, old)
    sys.modules.update(_saved_modules)
    _saved_modules.clear()
    if _environment_changed or os.environ.get(ENVIRONMENT):
        os.environ.pop(ENVIRONMENT, None)
        paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
                 if p and p != SITE_DIR]
        if paths:
            os.environ["PYTHONPATH"] = os.pathsep.join(paths)
        else:
            os.environ.pop("PYTHONPATH", None)
        _environment_changed = False
