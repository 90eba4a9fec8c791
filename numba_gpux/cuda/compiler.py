"""``compile_ptx`` and friends: numba.cuda's ahead-of-time entry points, through
:func:`numba_gpux.compile` with the CUDA target (no GPU needed)."""

from __future__ import annotations

from numba.core import sigutils, types
from numba.core.typing import signature as _signature

from ..api import compile as _gpux_compile
from ..dispatcher import GpuxFunction, jit as _gpux_jit
from ..errors import UnsupportedError, format_loc

__all__ = ["compile", "compile_ptx", "compile_for_current_device",
           "compile_ptx_for_current_device", "compile_all", "compile_cubin", "compile_for",
           "compile_mlir", "CompileResult"]


def compile(pyfunc, sig, debug=None, lineinfo=False, device=True, fastmath=False, cc=None,
            opt=None, abi="c", abi_info=None, output="ptx", forceinline=False,
            launch_bounds=None):
    """``(ptx, return type)`` for *pyfunc* compiled for an NVIDIA GPU of compute
    capability *cc* (default: the CUDA target's default).

    numba.cuda's checks of the request, with its error types: an *output* other than
    ``"ptx"`` or ``"ltoir"`` and an *abi* other than ``"numba"`` or ``"c"`` are
    NotImplementedErrors, as is the C ABI for a kernel; *forceinline* is a ValueError
    unless the output is LTO-IR, or for a kernel; a kernel whose return type is not
    void is a TypeError.  ``output="ltoir"`` is an UnsupportedError: numba_gpux makes
    no LTO-IR of Python code.  *launch_bounds* (an int, or a tuple of one to three
    ints: max threads per block, min blocks per multiprocessor, max blocks per
    cluster) reach a kernel's PTX as ``.maxntid``, ``.minnctapersm`` and
    ``.maxclusterrank``; a device function ignores them, as in numba.cuda."""
    check_request(output, abi, device, forceinline)
    _ptx_only("cuda.compile", output)
    art, ret = _artifact(pyfunc, sig, debug, lineinfo, device, fastmath, cc, opt,
                         cubin=False, launch_bounds=launch_bounds, abi=abi, abi_info=abi_info)
    return art.text, ret


_OUTPUTS = ("ptx", "ltoir")
_ABIS = ("numba", "c")


def check_request(output, abi, device, forceinline) -> None:
    """numba.cuda's checks of what ``compile``, ``compile_ptx`` and ``compile_all`` are
    asked for, in its order, with its error types and messages."""
    if output not in _OUTPUTS:
        raise NotImplementedError(f"Unsupported output type: {output}")
    if forceinline and output != "ltoir":
        raise ValueError("Can only designate forced inlining in LTO-IR")
    if abi not in _ABIS:
        raise NotImplementedError(f"Unsupported ABI: {abi}")
    if abi == "c" and not device:
        raise NotImplementedError("The C ABI is not supported for kernels")
    if forceinline and not device:
        raise ValueError("Cannot force-inline kernels")


def _ptx_only(entry: str, output) -> None:
    """numba_gpux makes PTX of Python code, never LTO-IR: ``output="ltoir"`` is an
    UnsupportedError naming *entry*."""
    if output == "ltoir":
        raise UnsupportedError(f"{entry}(output='ltoir'): numba_gpux compiles Python code "
                               f"to PTX, not LTO-IR; pass output='ptx'")


def _artifact(pyfunc, sig, debug=None, lineinfo=False, device=True, fastmath=False, cc=None,
              opt=None, cubin=False, launch_bounds=None, abi="numba", abi_info=None):
    """The CUDA target's Artifact for *pyfunc* and *sig* (with a cubin from ptxas, where
    installed, if *cubin*), and the return type: the signature's, or the inferred one.
    A device function has Numba's ABI, or with *abi* ``"c"`` the C ABI (``_cabi.py``).
    *debug* and *opt* None are numba.cuda's defaults (``config.CUDA_DEBUGINFO_DEFAULT``,
    ``config.OPT``), and both on is numba.cuda's warning."""
    from .decorators import (NUMBA_CUDA_SEMANTICS, check_kernel_return, debug_and_opt,
                             launch_bounds_of)
    from .dispatcher import CUDADispatcher
    from .types import _read_signatures

    # numba.cuda's compile warns of debug with opt, not of debug with lineinfo
    debug, opt = debug_and_opt(debug, opt, lineinfo=False)
    sig = _read_signatures(sig)  # names of cuda.types (bfloat16) too
    args, ret = sigutils.normalize_signature(sig)
    if not device:
        check_kernel_return(ret)
    # a cuda.jit function's code to link (cuda.jit(link=...)) is linked here too
    extra = {"link": pyfunc.extra["link"]} if isinstance(pyfunc, GpuxFunction) and \
        pyfunc.extra.get("link") else {}
    if isinstance(pyfunc, GpuxFunction):
        pyfunc = pyfunc.py_func
    opts = {"cubin": bool(cubin)}
    if cc is not None:
        opts["cc"] = tuple(cc)
    level = 3 if opt is True else (0 if opt is False else opt)
    # numba.cuda's rules for built-in operations, as the facade's kernels have them; a
    # kernel's launch bounds checked and kept as numba_gpux.jit keeps them
    fn = _gpux_jit(pyfunc, device=device, opt=level, fastmath=bool(fastmath),
                   debug=bool(debug), lineinfo=bool(lineinfo),
                   launch_bounds=None if device or launch_bounds is None
                   else launch_bounds_of(launch_bounds),
                   semantics=NUMBA_CUDA_SEMANTICS, kernel_class=CUDADispatcher, **extra)
    if device:
        if abi != "c":
            art = _gpux_compile(fn, sig, target="cuda", device=True, **opts)
            return art, fn.neutral(tuple(args), ret).return_type if ret is None else ret
        from ..devices import resolve_target
        from ._cabi import compile_c_abi, symbol

        name = symbol(pyfunc, abi_info)
        res = fn.neutral(tuple(args), ret)
        opts.pop("cubin")
        tgt = resolve_target("cuda", cubin=bool(cubin), **opts)
        return compile_c_abi(fn, res, name, tgt), res.return_type
    # a kernel: typed first, its return type inferred, so that one returning a value is
    # numba.cuda's TypeError
    fn.infer_kernel_return = True
    res = fn.neutral(tuple(args))
    if res.return_type not in (types.void, types.none):
        from ..language.checks import return_value_loc

        loc = return_value_loc(res.cres)
        where = f"\n\n{format_loc(loc)}" if loc is not None else ""
        raise TypeError(f"CUDA kernel must have void return type: {fn.__name__} returns "
                        f"{res.return_type} (a kernel writes its results into array "
                        f"arguments){where}")
    return _gpux_compile(fn, sig, target="cuda", device=False, **opts), types.void


def compile_ptx(pyfunc, sig, debug=None, lineinfo=False, device=False, fastmath=False,
                cc=None, opt=None, abi="numba", abi_info=None, forceinline=False,
                launch_bounds=None):
    """numba.cuda's ``compile_ptx``: kernels by default (``device=False``), with the
    Numba ABI; :func:`compile` with ``output="ptx"``."""
    return compile(pyfunc, sig, debug=debug, lineinfo=lineinfo, device=device,
                   fastmath=fastmath, cc=cc, opt=opt, abi=abi, abi_info=abi_info,
                   output="ptx", forceinline=forceinline, launch_bounds=launch_bounds)


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


def compile_all(pyfunc, sig, debug=None, lineinfo=False, device=True, fastmath=False, cc=None,
                opt=None, abi="c", abi_info=None, output="ltoir", forceinline=False,
                launch_bounds=None):
    """numba.cuda's ``compile_all``: ``(codes, return type)``, the codes being the PTX of
    *pyfunc* and then the code it links (``cuda.jit(link=...)``, the ``link=`` of the
    ``declare_device`` functions it calls): CUDA C compiled to PTX with NVRTC, other
    kinds as ``cudadrv.linkable_code`` objects.  ``output="ptx"`` only: numba_gpux
    makes no LTO-IR of Python code (numba.cuda's default, ``"ltoir"``, is an
    UnsupportedError)."""
    check_request(output, abi, device, forceinline)
    _ptx_only("cuda.compile_all", output)
    art, ret = _artifact(pyfunc, sig, debug, lineinfo, device, fastmath, cc, opt,
                         cubin=False, launch_bounds=launch_bounds, abi=abi, abi_info=abi_info)
    codes = [art.text]
    cc = tuple(cc) if cc is not None else _default_cc()
    if art.info.get("link"):
        from .. import linking
        from ..targets.cuda import linker
        from .cudadrv import linkable_code as lc

        kinds = {"ptx": lc.PTXSource, "cubin": lc.Cubin, "fatbin": lc.Fatbin,
                 "object": lc.Object, "archive": lc.Archive, "ltoir": lc.LTOIR}
        for kind, name, digest in art.info["link"]:
            data = linking.content(digest, name)
            if kind == "cu":
                codes.append(linker.compile_cu(data, name, cc).decode())
            else:
                codes.append(kinds[kind](data, name=name))
    return codes, ret


def _cubin_of(art, name: str, cc) -> bytes:
    """The cubin in *art*, or a ToolchainError saying why ptxas made none."""
    if art.binary is not None:
        return art.binary
    from ..errors import ToolchainError

    if art.info.get("link"):
        names = ", ".join(repr(n) for _k, n, _d in art.info["link"]) or "foreign code"
        raise ToolchainError(f"{name}: a cubin of code linked with {names} needs nvJitLink "
                             f"(cuda-python's cuda.bindings.nvjitlink and the "
                             f"nvidia-nvjitlink library), which is not installed (a launch "
                             f"links it through the CUDA driver instead)")
    from ..targets.cuda import toolkit

    if toolkit.find_ptxas() is None:
        raise ToolchainError(f"{name}: a cubin needs ptxas from the CUDA toolkit (or the "
                             f"nvidia-cuda-nvcc wheel), which is not installed; "
                             f"compile_ptx() needs none")
    cc = tuple(cc) if cc is not None else _default_cc()
    if not toolkit.ptxas_supports(cc):
        raise ToolchainError(f"{name}: no installed ptxas assembles for sm_{cc[0]}{cc[1]}")
    ok, log = toolkit.ptxas_check(art.text, cc)
    raise ToolchainError(f"{name}: ptxas rejected the PTX for sm_{cc[0]}{cc[1]}:\n{log}")


def _default_cc() -> tuple:
    from ..devices import resolve_target

    return tuple(resolve_target("cuda", cubin=False).cuda.cc)


def compile_cubin(pyfunc, sig, debug=False, lineinfo=False, device=False, fastmath=False,
                  cc=None, opt=True, chip=None) -> bytes:
    """numba-cuda-mlir's ``compile_cubin``: the cubin (bytes) of *pyfunc* compiled for
    *sig* (a kernel unless ``device=True``) for ``sm_XX`` of *cc* or, in numba-cuda-mlir's
    spelling, *chip* (``"sm_90"``; default: the CUDA target's), through
    ``compile_ptx``'s PTX and ptxas.  Without ptxas, or where it rejects the PTX, a
    ToolchainError saying which."""
    if chip is not None:
        if cc is not None:
            raise TypeError("compile_cubin() takes cc or chip, not both")
        cc = _chip_cc(chip)
    art, _ret = _artifact(pyfunc, sig, debug, lineinfo, device, fastmath, cc, opt,
                          cubin=True)
    return _cubin_of(art, "cuda.compile_cubin()", cc)


def _chip_cc(chip) -> tuple[int, int]:
    """numba-cuda-mlir's ``chip`` (``"sm_90"``, ``"sm_100a"``) as a compute capability."""
    digits = str(chip).lower().removeprefix("sm_").rstrip("af")
    if not digits.isdigit() or len(digits) < 2:
        raise ValueError(f"chip must name an NVIDIA architecture such as 'sm_90', not {chip!r}")
    return int(digits[:-1]), int(digits[-1])


class CompileResult:
    """What :func:`compile_for` returns: the kernel's ``signature`` and its code for the
    CUDA target (``ptx``, ``cubin``, ``llvm_ir``), made on first use."""

    def __init__(self, kernel, argtypes: tuple):
        self.kernel = kernel
        self.argtypes = tuple(argtypes)
        self.signature = _signature(types.void, *argtypes)
        self._art = {}

    def _artifact(self, cubin: bool):
        art = self._art.get(cubin)
        if art is None:
            art = self._art[cubin] = _gpux_compile(self.kernel, self.signature, target="cuda",
                                                   cubin=cubin)
        return art

    @property
    def ptx(self) -> str:
        return self._artifact(False).text

    @property
    def cubin(self) -> bytes:
        return _cubin_of(self._artifact(True), f"compile_for({self.kernel.__name__})", None)

    @property
    def llvm_ir(self) -> str:
        """The optimized LLVM IR the PTX was made from."""
        return self._artifact(False).llvm_ir

    def inspect_asm(self) -> str:
        return self.ptx

    def inspect_llvm(self) -> str:
        return self.llvm_ir

    def __repr__(self):
        return f"<CompileResult of {self.kernel.__name__}{self.signature}>"


def compile_for(func, *args) -> CompileResult:
    """numba-cuda-mlir's ``compile_for``: compile kernel *func* (a Python function or a
    ``cuda.jit`` kernel) for the types of the example arguments *args*, as a launch with
    them would, and return a :class:`CompileResult` (typing errors are raised here)."""
    from .decorators import jit

    kernel = func if isinstance(func, GpuxFunction) else jit(func)
    if kernel.is_device:
        raise TypeError(f"compile_for({kernel.__name__}): a device function; compile_for "
                        f"compiles kernels (use cuda.compile(..., device=True))")
    argtypes = kernel.typeof_args(args)
    kernel.neutral(argtypes)
    return CompileResult(kernel, argtypes)


def compile_mlir(pyfunc, sig, optimized=False, **targetoptions):
    """numba-cuda-mlir's ``compile_mlir``: not supported, numba_gpux has no MLIR stage
    (its kernels go from Numba IR to LLVM IR, then to the target's code:
    ``compile_ptx`` or ``kernel.inspect_llvm()`` show those)."""
    raise UnsupportedError("cuda.compile_mlir(): numba_gpux compiles through Numba's lowering "
                           "to LLVM IR and has no MLIR stage; see compile_ptx() or "
                           "kernel.inspect_llvm() for the LLVM IR")
