"""``compile_ptx`` and friends: numba.cuda's ahead-of-time entry points, through
:func:`numba_gpux.compile` with the CUDA target (no GPU needed)."""

from __future__ import annotations

from numba.core import sigutils, types

from ..api import compile as _gpux_compile
from ..dispatcher import GpuxFunction
from ..errors import UnsupportedError

__all__ = ["compile", "compile_ptx", "compile_for_current_device",
           "compile_ptx_for_current_device", "compile_all"]


def compile(pyfunc, sig, debug=False, lineinfo=False, device=True, fastmath=False, cc=None,
            opt=True, abi="c", abi_info=None, output="ptx", forceinline=False,
            launch_bounds=None):
    """``(ptx, return type)`` for *pyfunc* compiled for an NVIDIA GPU of compute
    capability *cc* (default: the CUDA target's default)."""
    if output != "ptx":
        raise UnsupportedError(f"cuda.compile(output={output!r}): only 'ptx' is supported")
    from ..compiler import Options
    from .decorators import NUMBA_CUDA_SEMANTICS

    if isinstance(pyfunc, GpuxFunction):
        pyfunc = pyfunc.py_func
    opts = {} if cc is None else {"cc": tuple(cc)}
    level = 3 if opt is True else (0 if opt is False else opt)
    # numba.cuda's rules for built-in operations, as the facade's kernels have them
    fn = GpuxFunction(pyfunc, device=device, options=Options(
        opt=level, fastmath=bool(fastmath), debug=bool(debug), lineinfo=bool(lineinfo),
        semantics=NUMBA_CUDA_SEMANTICS))
    art = _gpux_compile(fn, sig, target="cuda", device=device, **opts)
    args, ret = sigutils.normalize_signature(sig)
    if ret is None:
        ret = types.void
    return art.text, ret


def compile_ptx(pyfunc, sig, debug=False, lineinfo=False, device=False, fastmath=False,
                cc=None, opt=True, abi="numba", abi_info=None, forceinline=False,
                launch_bounds=None):
    """numba.cuda's ``compile_ptx``: kernels by default (``device=False``)."""
    return compile(pyfunc, sig, debug=debug, lineinfo=lineinfo, device=device,
                   fastmath=fastmath, cc=cc, opt=opt)


def _current_cc():
    from .api import get_current_device

    # the capability the device reports (capability.py), where PTX can be written for
    # it; below that (a device without float64 or 32-wide warps) the default
    cc = get_current_device().compute_capability
    return cc if cc >= (5, 0) else None


def compile_for_current_device(pyfunc, sig, **kws):
    return compile(pyfunc, sig, cc=_current_cc(), **kws)


def compile_ptx_for_current_device(pyfunc, sig, **kws):
    return compile_ptx(pyfunc, sig, cc=_current_cc(), **kws)


def compile_all(*args, **kws):
    raise UnsupportedError("cuda.compile_all (linkable code objects) is not supported")
