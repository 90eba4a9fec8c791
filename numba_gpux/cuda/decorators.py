"""``cuda.jit``: numba.cuda's decorator, mapped onto :func:`numba_gpux.jit`.

The result is a :class:`~numba_gpux.cuda.dispatcher.CUDADispatcher`, a
:class:`numba_gpux.GpuxFunction` with numba.cuda's kernel behaviour on top: the
same compiler, caches and launch path as ``@numba_gpux.jit``.
"""

from __future__ import annotations

from numba.core import types as _types

from ..compiler import Semantics
from ..dispatcher import jit as _gpux_jit
from .dispatcher import CUDADispatcher
from .foreign import declare_device as _declare_device, link_inputs
from .types import _read_signatures

__all__ = ["jit", "declare_device", "WARP_SIZE", "DUMPS", "NO_OP_DUMPS"]

#: numba.cuda's warp width, which the facade's kernels get as their sub-group width
WARP_SIZE = 32

#: numba.cuda's rules where they differ from Python's (the portable API's): built-in
#: min/max of floats are libdevice's fmin/fmax (a NaN operand gives the other one),
#: float16 converts to integers as PTX's cvt.rni (to nearest, saturating), float32 and
#: float64 as PTX's cvt.rzi (toward zero, saturating, NaN to 0), math.floor/ceil/trunc
#: return a float as numba.cuda types them, print()
#: writes floats with %f and prints the raw format string (with a warning) for more
#: than 32 values, as CUDA's vprintf; a multiply and an add may fuse into an fma, as
#: NVVM's default (-fma=1) fuses them; 0j ** w as numba.cuda's complex power computes
#: it; fastmath=True as numba.cuda's NVVM options (approximate functions and division,
#: no assumption that values are not NaN or infinite)
NUMBA_CUDA_SEMANTICS = Semantics(float_minmax="ieee", float16_to_int="nearest",
                                 float_to_int="saturate", floor_ceil_trunc="float",
                                 print_float="%f", print_too_many="format",
                                 float_contract="on", complex_zero_power="polar",
                                 fastmath="approx")


#: numba-cuda-mlir's dump options the facade carries out: what each prints to stderr
#: when the kernel compiles (CUDADispatcher.dumps)
DUMPS = {"dump": ("numba_ir", "llvmir"), "dump_numba_ir": ("numba_ir",),
         "dump_llvmir": ("llvmir",), "dump_ptx": ("asm",), "dump_cubin": ("binary",)}
#: numba-cuda-mlir's dump options of stages numba_gpux has not (MLIR, its AST passes and
#: pass pipeline): accepted, and without effect
NO_OP_DUMPS = ("dump_mlir", "dump_ast", "dump_ast_after_all", "print_after_all",
               "print_before_all")
#: keywords the facade's jit takes through **kws (``argtypes``, ``restype`` and ``bind``
#: only as None: numba.cuda's DeprecationError otherwise)
_EXTRA_KEYWORDS = ("shared_memory_carveout", "argtypes", "restype", "bind", "nopython")


def jit(func_or_sig=None, device: bool = False, inline="never", forceinline: bool = False,
        link=(), debug=None, opt=None, lineinfo: bool = False, cache: bool = False,
        launch_bounds=None, lto=None, boundscheck=None, fastmath: bool = False,
        max_registers=None, extensions=None, dump: bool = False, dump_numba_ir: bool = False,
        dump_llvmir: bool = False, dump_ptx: bool = False, dump_cubin: bool = False,
        dump_mlir: bool = False, dump_ast: bool = False, dump_ast_after_all: bool = False,
        print_after_all: bool = False, print_before_all: bool = False,
        **kws) -> CUDADispatcher:
    """Compile a kernel (or, with ``device=True``, a device function), as numba.cuda does.

    Accepted as in numba.cuda: a signature or list of signatures (eager
    compilation), ``device``, ``inline``, ``forceinline``, ``debug``, ``opt``,
    ``fastmath``, ``lineinfo``, ``cache``, ``boundscheck``, ``max_registers``,
    ``launch_bounds``, ``shared_memory_carveout``, ``lto`` and ``extensions``
    (objects whose ``prepare_args`` is applied to each argument before a launch:
    CUDADispatcher.extensions).
    ``link``: code linked with the kernel on the CUDA target (file paths by extension:
    ``.cu`` compiled with NVRTC, ``.ptx``, ``.cubin``, ``.fatbin``, ``.o``, ``.a``,
    ``.ltoir``, or ``cuda.PTXSource``/``CUSource``/... objects); a missing file is an
    error here, and the kernel compiles for CUDA devices only (elsewhere an
    UnsupportedError naming the files and the target).

    numba-cuda-mlir's dump options print to stderr as the code is made: ``dump`` the
    Numba IR and the LLVM IR, ``dump_numba_ir`` and ``dump_llvmir`` one of them (the
    LLVM IR of a kernel as optimized for its target, of a device function as lowered),
    ``dump_ptx`` the PTX (on other targets their code's text form: SPIR-V assembly,
    MSL), ``dump_cubin`` a line on the binary.  ``dump_mlir``, ``dump_ast``,
    ``dump_ast_after_all``, ``print_after_all`` and ``print_before_all`` name stages
    numba_gpux has not and do nothing.  An unknown keyword is a TypeError listing the
    valid ones.
    """
    # the code to link: files checked now (a missing one is an error naming it), read
    # when the kernel compiles (their contents are part of its cache keys)
    link = link_inputs(link or None, "cuda.jit(link=...)")
    if lto:
        # numba.cuda's error where nvJitLink is missing: numba_gpux makes no LTO-IR of
        # Python kernels (cudadrv.driver._have_nvjitlink() is False)
        raise RuntimeError("LTO requires nvjitlink, which is not available or not "
                           "sufficiently recent (>=12.3): numba_gpux compiles Python kernels "
                           "to PTX, not LTO-IR (use lto=False or leave it unset; .ltoir files "
                           "given to link= are linked)")
    for old_keyword in ("argtypes", "restype", "bind"):
        if kws.pop(old_keyword, None) is not None:
            from numba.core.errors import DeprecationError

            raise DeprecationError(f"Deprecated keyword argument `{old_keyword}`. Signatures "
                                   f"should be passed as the first positional argument.")
    carveout = kws.pop("shared_memory_carveout", None)
    kws.pop("nopython", None)
    if kws:
        raise TypeError(f"cuda.jit() got unexpected keyword argument(s): "
                        f"{', '.join(sorted(kws))}; valid: {', '.join(valid_keywords())}")
    given = dict(dump=dump, dump_numba_ir=dump_numba_ir, dump_llvmir=dump_llvmir,
                 dump_ptx=dump_ptx, dump_cubin=dump_cubin)
    dumps = frozenset(stage for name, on in given.items() if on for stage in DUMPS[name])
    func_or_sig = _read_signatures(func_or_sig)  # names of cuda.types (bfloat16) too
    debug, opt = debug_and_opt(debug, opt, lineinfo)
    if not device and func_or_sig is not None and not callable(func_or_sig):
        # numba.cuda's TypeError for a kernel signature that returns a value
        from numba.core import sigutils

        for sig in func_or_sig if isinstance(func_or_sig, list) else [func_or_sig]:
            check_kernel_return(sigutils.normalize_signature(sig)[1])
    # numba.cuda code assumes warps of 32 lanes: kernels that use warp (sub-group)
    # operations ask for 32-wide sub-groups (an error on a device that cannot)
    options = dict(device=device, fastmath=fastmath, debug=bool(debug),
                   opt=opt, inline=inline, cache=cache,
                   lineinfo=lineinfo, forceinline=forceinline, subgroup_size=WARP_SIZE,
                   semantics=NUMBA_CUDA_SEMANTICS, kernel_class=CUDADispatcher)
    if boundscheck:  # numba.cuda's refusal (debug=True checks bounds: IndexError at the line)
        raise NotImplementedError("bounds checking is not supported for CUDA")
    if max_registers is not None:
        options["max_registers"] = max_registers
    if launch_bounds is not None:
        options["launch_bounds"] = launch_bounds_of(launch_bounds)
    if link:
        options["link"] = link
    if carveout is not None:
        options["shared_memory_carveout"] = _carveout(carveout)

    # numba.cuda launches a kernel given one signature (not a list) with whatever
    # arrays it gets: integer arrays of the signature's width are viewed as its type
    single = func_or_sig is not None and not callable(func_or_sig) \
        and not isinstance(func_or_sig, list)

    def finish(made):
        if callable(made) and not isinstance(made, CUDADispatcher):  # a decorator
            return lambda fn: finish(made(fn))
        if extensions:
            made.extensions = extensions
        if dumps:
            made.dumps = dumps
        if single and not device:
            made.bitcast_arrays = True
        return made

    if func_or_sig is None:
        return finish(lambda fn: _gpux_jit(fn, **options))
    return finish(_gpux_jit(func_or_sig, **options))


def check_kernel_return(restype) -> None:
    """numba.cuda's TypeError for a kernel signature whose return type is not void."""
    if restype is not None and restype not in (_types.void, _types.none):
        raise TypeError(f"CUDA kernel must have void return type, not {restype}: a kernel "
                        f"writes its results into array arguments")


def launch_bounds_of(value):
    """``launch_bounds`` with NumPy integers as Python ints (numba.cuda writes the values
    into its IR as they are, so ``(np.int32(128), 2)`` works there); numba_gpux.jit
    checks the rest."""
    import numbers

    def plain(v):
        return int(v) if isinstance(v, numbers.Integral) and not isinstance(v, bool) else v

    if isinstance(value, (tuple, list)):
        return tuple(plain(v) for v in value)
    return plain(value)


def valid_keywords() -> list[str]:
    """Every keyword :func:`jit` takes, sorted."""
    import inspect

    params = inspect.signature(jit).parameters
    return sorted([n for n, p in params.items()
                   if p.kind == p.POSITIONAL_OR_KEYWORD and n != "func_or_sig"]
                  + list(_EXTRA_KEYWORDS))


def debug_and_opt(debug, opt, lineinfo: bool) -> tuple:
    """``debug`` and ``opt`` with numba.cuda's defaults (``config.CUDA_DEBUGINFO_DEFAULT``;
    optimized unless ``config.OPT`` is 0), warning as numba.cuda does of debug with opt
    and of debug with lineinfo (``NumbaInvalidConfigWarning``)."""
    import warnings

    from numba.core.errors import NumbaInvalidConfigWarning

    from . import config

    debug = config.CUDA_DEBUGINFO_DEFAULT if debug is None else debug
    opt = (config.OPT != 0) if opt is None else opt
    if debug and opt:
        warnings.warn(NumbaInvalidConfigWarning(
            "debug=True with opt=True is not supported by CUDA. This may result in a crash - "
            "set debug=False or opt=False."), stacklevel=3)
    if debug and lineinfo:
        warnings.warn(NumbaInvalidConfigWarning(
            "debug and lineinfo are mutually exclusive. Use debug to get full debug info "
            "(this disables some optimizations), or lineinfo for line info only with code "
            "generation unaffected."), stacklevel=3)
    return debug, opt


_CARVEOUTS = {"maxl1": 0, "maxshared": 100, "default": -1}


def _carveout(value):
    """``shared_memory_carveout`` with numba.cuda's names as percentages ("default":
    -1, the driver's); numba_gpux.jit checks the range."""
    if isinstance(value, str):
        if value.lower() not in _CARVEOUTS:
            raise ValueError(f"Invalid carveout value {value!r}: use 'MaxL1', 'MaxShared', "
                             f"'default' or a percentage")
        return _CARVEOUTS[value.lower()]
    return value


def declare_device(name, sig, link=None, use_cooperative=False, abi="numba"):
    """numba.cuda's ``declare_device``: :func:`numba_gpux.cuda.foreign.declare_device`."""
    return _declare_device(name, sig, link=link, use_cooperative=use_cooperative, abi=abi)
