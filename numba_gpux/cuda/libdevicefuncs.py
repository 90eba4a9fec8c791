"""``numba_gpux.cuda.libdevicefuncs``: the table of libdevice functions behind
``cuda.libdevice``, as numba.cuda and numba-cuda-mlir describe it.

``functions`` maps each C name (``__nv_sincosf``) to ``(return type, [arg, ...])``,
each ``arg`` a ``(name, ty, is_ptr)`` tuple: ``is_ptr`` marks an output that libdevice
writes through a pointer and that ``cuda.libdevice``'s Python function returns in a
tuple after the result.  :func:`create_signature` gives that Python-side signature.
The table is :data:`numba_gpux.cuda.libdevice.TABLE`, read, never a second copy.
"""

from __future__ import annotations

from typing import NamedTuple

from numba.core import types
from numba.core.typing import signature

from . import libdevice as _libdevice

__all__ = ["arg", "functions", "create_signature"]


class arg(NamedTuple):  # noqa: N801 - numba.cuda's name
    """One parameter of a libdevice function."""

    name: str
    ty: types.Type
    is_ptr: bool


def create_signature(retty, args):
    """The signature of ``cuda.libdevice``'s function for a C function returning
    *retty* with parameters *args*: the inputs as arguments; the result, then every
    output, as the return value (a tuple when there is more than one)."""
    outs = [a.ty for a in args if a.is_ptr]
    rets = ([] if retty in (types.void, types.none) else [retty]) + outs
    ret = types.Tuple(rets) if len(rets) > 1 else (rets[0] if rets else types.void)
    return signature(ret, *[a.ty for a in args if not a.is_ptr])


def _table() -> dict:
    names = "xyzwuv"
    out = {}
    for name, (ret, codes) in _libdevice.TABLE.items():
        params = [arg(names[i] if i < len(names) else f"a{i}", _libdevice._TY[c], is_out)
                  for i, (c, is_out) in enumerate(codes)]
        out[f"__nv_{name}"] = (types.void if ret == "v" else _libdevice._TY[ret], params)
    return out


#: ``"__nv_<name>"`` -> (return type, [arg, ...])
functions: dict = _table()
