"""Checking the project's IR rewrites with LLVM's parser and verifier (the switch
``NUMBA_GPUX_VERIFY_REWRITES``, ``config.verify_rewrites``).

``checked(name)`` wraps a rewrite of module text: with the switch on, a result that
LLVM's parser or verifier rejects, from an input that they accept, raises an
internal compiler error naming the rewrite.  (An input that does not parse alone, a
fragment of a module, is not checked.)  Layer 1.
"""

from __future__ import annotations

import functools

from . import config
from .errors import InternalCompilerError

__all__ = ["checked", "verify_text", "check_step"]


def verify_text(text: str) -> str | None:
    """LLVM's complaint about *text* (parse, then verify), or None if it is valid."""
    from llvmlite import binding as ll

    try:
        ll.parse_assembly(text).verify()
    except RuntimeError as e:
        return str(e).strip()
    return None


def check_step(name: str, before: str, after: str) -> None:
    """Raise InternalCompilerError if the rewrite *name* turned the valid module text
    *before* into the invalid *after* (only with the switch on)."""
    if not config.verify_rewrites() or after == before:
        return
    bad = verify_text(after)
    if bad is not None and verify_text(before) is None:
        raise InternalCompilerError("verify-rewrites", f"the IR rewrite {name} made invalid IR: "
                                    f"{bad}", after)


def checked(fn):
    """*fn* (a rewrite whose first argument and result are module text), checked by
    LLVM after each call while the switch is on."""
    name = f"{fn.__module__.rsplit('.', 1)[-1]}.{fn.__name__}"

    @functools.wraps(fn)
    def run(text, *args, **kwargs):
        out = fn(text, *args, **kwargs)
        if config.verify_rewrites():
            check_step(name, text, out)
        return out

    return run
