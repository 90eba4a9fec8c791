"""Host-side entry points that are neither kernels nor memory: compile, synchronize."""

from __future__ import annotations

from numba.core import sigutils, types

from .compiler import Options
from .errors import GpuxUserError
from .interface import Artifact

__all__ = ["compile", "synchronize"]


def compile(pyfunc, signature, target="opencl", device: bool = False, *, opt: int = 3,
            fastmath: bool = False, debug: bool = False, **target_options) -> Artifact:
    """Compile *pyfunc* for *signature* and return the generated code; nothing runs.

    *target* is a target name (``"opencl"``, ``"cuda"``, ``"metal"``), a Device or a
    Target; extra keywords refine a named target (``cc=(9, 0)`` for CUDA).
    The result's ``binary`` is the loadable code (SPIR-V, cubin) where the
    target has one, ``text`` its readable form (SPIR-V disassembly, PTX, MSL)
    and ``llvm_ir`` the optimized LLVM IR.
    """
    from .cache import compile_target
    from .devices import resolve_target
    from .dispatcher import GpuxFunction

    if isinstance(pyfunc, GpuxFunction):
        fn = pyfunc
        if fn.is_device != device:
            fn = GpuxFunction(pyfunc.py_func, device=device, options=fn.options)
    else:
        fn = GpuxFunction(pyfunc, device=device,
                          options=Options(opt=opt, fastmath=fastmath, debug=debug))
    tgt = resolve_target(target, **target_options)
    args, ret = sigutils.normalize_signature(signature)
    if device:
        res = fn.neutral(tuple(args), ret)
        text = res.library.neutral_ir()
        return compile_target(text, (), tgt, fn.options, name=fn.__name__,
                              exports=(res.fndesc.llvm_func_name,))
    if ret not in (None, types.none, types.void):
        raise GpuxUserError(f"kernel signatures must return void, not {ret}")
    return fn.code_for(tuple(args), tgt)


def synchronize(device=None) -> None:
    """Wait for all work queued on *device* (default: the current device)."""
    from .devices import default_device

    dev = device or default_device()
    dev.runtime.synchronize()
