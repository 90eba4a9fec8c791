"""Rewrites of a kernel's or device function's Python source before Numba reads it.

A module that provides one registers it here (numba_gpux.cuda.experimental's
compile-time evaluation does); every compile (``compiler.compile_neutral``) then calls
each with the Python function, the argument types and the caller options, and compiles
the function the rewrite returns in the original's place.  A rewrite returns None for a
function it leaves alone, and must keep the original's file and line numbers (errors
name them) and its globals.
"""

from __future__ import annotations

__all__ = ["register_source_transform", "transformed"]

#: ``transform(pyfunc, argtypes, options)`` -> the function to compile instead, or None
_transforms: list = []


def register_source_transform(transform) -> None:
    """Have every compile call ``transform(pyfunc, argtypes, options)`` first."""
    if transform not in _transforms:
        _transforms.append(transform)


def transformed(pyfunc, argtypes: tuple, options):
    """*pyfunc* after every registered rewrite."""
    for transform in _transforms:
        pyfunc = transform(pyfunc, argtypes, options) or pyfunc
    return pyfunc
