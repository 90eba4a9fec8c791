"""Turns numba-gpux's import alias on in a new interpreter whose environment asks for it.

``numba_gpux.alias.install()`` puts this folder first on ``PYTHONPATH`` and sets
``NUMBA_GPUX_ALIAS`` for the processes the program starts; Python imports this module
at startup in each of them (``site``).  Without ``NUMBA_GPUX_ALIAS`` (or with it empty
or ``0``) it does nothing but run the ``sitecustomize`` it shadows.  Python runs one
``sitecustomize``: this one then runs the next one on ``sys.path``, if there is one, so
an environment's own is not lost.
"""

import importlib.machinery
import importlib.util
import os
import sys


def _install_alias() -> None:
    try:
        import numba_gpux.alias
    except Exception as exc:  # another interpreter, without numba-gpux: say so, run on
        print(f"numba-gpux alias: not in effect in this process ({exc})", file=sys.stderr)
        return
    numba_gpux.alias.install()


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


if os.environ.get("NUMBA_GPUX_ALIAS", "0") not in ("", "0"):
    _install_alias()
_chain_next_sitecustomize()
