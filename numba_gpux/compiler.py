"""The compiler's target-neutral half (once per (function, argument types, options)):
    translate -> type -> lower            (Numba's front end, ``compile_neutral``)
    + the kernel entry wrapper             (``wrap_kernel``)
The per-target stages that take its result are in ``stages.py``.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

from llvmlite import ir
from numba.core import compiler, cgutils, types
from numba.core.compiler_lock import global_compiler_lock
from numba.core.target_extension import target_override

from . import abi
from .machines import default_emit
from .errors import InternalCompilerError, GpuxUserError
from .interface import provide_defaults
from .language.semantics import DEFAULT_SEMANTICS as _DEFAULT_SEMANTICS, FASTMATH_FLAGS, Semantics

__all__ = ["Options", "Semantics", "compile_neutral", "wrap_kernel", "kernel_symbol",
           "NeutralResult"]


@dataclass(frozen=True)
class Options:
    """Caller options; hashed into every cache key."""

    opt: int = 3
    fastmath: bool = False
    debug: bool = False
    inline: bool = False
    lineinfo: bool = False
    #: sub-groups of exactly this many lanes for a kernel that uses sub-group
    #: operations (0: the device's natural width); the numba.cuda facade asks for
    #: 32, its warp size.  A target that cannot provide the width is an error.
    subgroup_size: int = 0
    #: (max threads per block, min blocks per multiprocessor, max blocks per cluster),
    #: a prefix of them or (): a launch with a larger block is an error, and targets
    #: that can tell their code generator (``Target.kernel_bound_attributes``) do
    max_threads: int = 0
    min_blocks: int = 0
    max_cluster_blocks: int = 0
    #: at most this many registers per thread, where the target can say so (0: any)
    max_registers: int = 0
    #: the share of on-chip memory the kernel prefers as shared memory, in percent
    #: (-1: the driver's default), where the device's runtime takes the hint
    shared_memory_carveout: int = -1
    #: the rules of built-in operations where Python and the kernel's API differ
    semantics: Semantics = _DEFAULT_SEMANTICS

    def __post_init__(self):
        if not isinstance(self.semantics, Semantics):
            raise GpuxUserError(f"semantics must be a numba_gpux.compiler.Semantics, not "
                                f"{self.semantics!r}")
        if self.opt not in (0, 1, 2, 3):
            raise GpuxUserError(f"opt must be 0, 1, 2 or 3, not {self.opt!r}")
        for name in ("max_threads", "min_blocks", "max_cluster_blocks", "max_registers"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise GpuxUserError(f"{name} must be a non-negative int, not {v!r}")
        c = self.shared_memory_carveout
        if not isinstance(c, int) or isinstance(c, bool) or not -1 <= c <= 100:
            raise ValueError(f"shared_memory_carveout must be between -1 and 100, not {c!r}")
        w = self.subgroup_size
        if not isinstance(w, int) or w < 0 or w & (w - 1):
            raise GpuxUserError(f"subgroup_size must be 0 or a power of two, not {w!r}")


@dataclass(eq=False)
class NeutralResult:
    """The target-neutral outcome of typing and lowering one signature."""

    cres: Any             # Numba's CompileResult
    argtypes: tuple
    return_type: Any      # a Numba type
    library: Any          # neutrallib.NeutralLibrary
    fndesc: Any           # Numba's FunctionDescriptor
    #: compiled with debug=True: the kernel wrapper reports errors (language/debug.py)
    debug: bool = False
    #: device arrays read from globals or closure variables: hidden arguments after
    #: ``argtypes`` (language/checks.py's CaptureDeviceArrays), passed at every launch
    captured: tuple = ()
    #: compiled for one launch configuration (the kernel was marked with
    #: mark_launch_config_sensitive() before the compile ended)
    launch_config_sensitive: bool = False
    #: compiled with lineinfo=True (or debug=True): the lowered code carries source locations
    lineinfo: bool = False
    #: the code synchronizes the grid (language/cooperative.py): a kernel takes the hidden
    #: buffer and is launched cooperatively (numba.cuda's ``cooperative``)
    grid_sync: bool = False

    @property
    def all_argtypes(self) -> tuple:
        """The argument types of the lowered function: ``argtypes`` and then the
        types of the captured device arrays."""
        return self.argtypes + tuple(a._numba_type_ for a in self.captured)


# --------------------------------------------------------------------------- front end

_Flags = None


def _flags_class():
    """Numba's compiler flags plus ``gpux_semantics`` (Options.semantics), which
    Numba keeps on its configuration stack while it types and lowers, where
    :func:`current_semantics` reads it."""
    global _Flags
    if _Flags is None:
        from numba.core.targetconfig import Option

        class GpuxFlags(compiler.Flags):
            gpux_semantics = Option(type=_as_semantics, default=_DEFAULT_SEMANTICS,
                                    doc="the compile's Options.semantics")
            gpux_runtime = Option(type=bool, default=False,
                                  doc="lower the function with Numba's runtime whatever "
                                      "its code (language/heap.py's EnableRuntime)")

        _Flags = GpuxFlags
    return _Flags


def _as_semantics(value) -> Semantics:
    return value if isinstance(value, Semantics) else Semantics(**dict(value))


def _flags(options: Options, runtime: bool = False):
    from numba.core.cpu import FastMathOptions

    flags = _flags_class()()
    flags.gpux_semantics = options.semantics
    flags.no_compile = True
    flags.no_cpython_wrapper = True
    flags.no_cfunc_wrapper = True
    # Numba's runtime: on for everything typing compiles (Numba's implementations keep
    # their reference counts right whoever calls them); the function itself is lowered
    # with it where its code makes or returns arrays (language/heap.py's EnableRuntime),
    # or, *runtime*, for a compile that found out late (an allocation inside a call)
    flags.nrt = True
    flags.gpux_runtime = runtime
    # lineinfo, and debug (as numba.cuda's debug=True, which implies line information):
    # source locations only (DWARF directives, no variables)
    flags.debuginfo = flags.dbg_directives_only = options.lineinfo or options.debug
    flags.boundscheck = options.debug
    flags.forceinline = options.inline
    flags.error_model = "python" if options.debug else "numpy"
    if options.fastmath:
        flags.fastmath = FastMathOptions(set(FASTMATH_FLAGS[options.semantics.fastmath]))
    elif options.semantics.float_contract == "on":
        flags.fastmath = FastMathOptions({"contract"})
    return flags


def compile_neutral(pyfunc, argtypes, options: Options, return_type=None) -> NeutralResult:
    """translate -> type -> lower, in the shared context."""
    from . import context as _context
    from .context import TARGET_NAME, target_context, typing_context

    from .language.checks import (GpuxCompiler, attribute_failure, compile_searches,
                                  host_library_failure, lowering_failure,
                                  reject_unsupported_constructs)
    from .language.cooperative import uses_grid_sync
    from .language.heap import needs_runtime
    from .language.source import transformed

    pyfunc = transformed(pyfunc, tuple(argtypes), options)
    reject_unsupported_constructs(pyfunc)
    tctx, cctx = typing_context(), target_context()
    runtime = False
    with global_compiler_lock, target_override(TARGET_NAME), compile_searches():
        while True:
            loads = _context.array_math_loads
            try:
                cres = compiler.compile_extra(
                    tctx, cctx, pyfunc, tuple(argtypes), return_type, _flags(options, runtime),
                    locals={}, pipeline_class=GpuxCompiler,
                )
            except Exception as e:
                if not runtime and needs_runtime(e):
                    runtime = True
                    continue
                if _context.array_math_loads == loads:
                    if isinstance(e, ImportError) and \
                            (getattr(pyfunc, "__module__", None) or "").partition(".")[0] == "numba":
                        raise  # (Numba's implementation of a call: the caller names its line)
                    failure = (host_library_failure(e, pyfunc) or attribute_failure(e, pyfunc)
                               or lowering_failure(e, pyfunc))
                    if failure is None:
                        raise
                    raise failure from e
                continue  # array math loaded during this compile: type it again
            if _context.array_math_loads == loads:
                break
    captured = tuple(cres.metadata.get("gpux_captured", ()))
    grid_sync = uses_grid_sync(cres.library)
    if grid_sync:  # inlined into its callers, down to the kernel (language/cooperative.py)
        from .language.cooperative import mark_inlined

        for fn in cres.library.functions_named(cres.fndesc.llvm_func_name):
            mark_inlined(fn)
    args = tuple(cres.signature.args)
    res = NeutralResult(cres, args[:len(args) - len(captured)], cres.signature.return_type,
                        cres.library, cres.fndesc, options.debug, captured,
                        lineinfo=options.lineinfo or options.debug,
                        grid_sync=grid_sync)
    _remember_neutral(cres.fndesc.llvm_func_name, res)
    return res


def _remember_neutral(name: str, res: NeutralResult) -> None:
    """Keep *res* (weakly) as the neutral result of symbol *name*, unless a live one is
    kept already (a twin compiled with other options has the same symbol)."""
    if _neutrals.get(name) is None:
        _neutrals[name] = res


#: entry point or exported symbol -> the NeutralResult it was made from, while that
#: lives: validation finds the user's source line through it (``_user_line``)
_neutrals: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _ascii_word(s: str) -> bool:
    return s.isascii() and (s.isalnum() or s == "_")


def kernel_symbol(pyfunc, argtypes) -> str:
    """A readable, unique name for a kernel entry point, of ASCII letters, digits and
    ``_`` only, on every target.  Python names and the names of record fields in the
    argument types may hold any Unicode letter, and LLVM's NVPTX back end aborts the
    process on a symbol with characters PTX cannot spell ("Symbol name with
    unsupported characters"); so every other character of the function's name is
    ``_`` and of the signature is left out, and the hash of the full name and
    signature keeps the symbol unique per signature."""
    import hashlib

    base = "".join(c if _ascii_word(c) else "_" for c in pyfunc.__name__)
    sig = "_".join("".join(c for c in str(t) if _ascii_word(c)) for t in argtypes)
    key = f"{pyfunc.__module__}.{pyfunc.__qualname__}({', '.join(map(str, argtypes))})"
    h = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{base}__{sig[:40]}_{h}" if sig else f"{base}_{h}"


def wrap_kernel(neutral: NeutralResult, name: str) -> str:
    """The neutral module of a kernel: its lowered code plus an entry point ``name``
    that takes the flattened ABI (see ``abi.py``) and calls it, cleaned up by
    target-independent passes (``neutrallib.simplify_neutral``).

    The clean-up runs at every ``opt`` level: ``opt=0`` leaves out each target's
    own optimization pipeline, but LLVM's SPIR-V back end cannot translate
    Numba's unoptimized lowering (aggregates built in memory become invalid
    SPIR-V that OpenCL drivers reject), and the clean-up is what it needs."""
    from .context import target_context
    from .language.heap import HEAP_ARG, entry_accessor, uses_heap
    from .language.intrinsics import call as call_intrinsic

    context = target_context()
    _remember_neutral(name, neutral)
    if neutral.return_type not in (types.none, types.void):
        from .errors import UnsupportedError
        from .language.checks import return_value_loc

        raise UnsupportedError(
            f"kernel {neutral.fndesc.qualname!r} returns {neutral.return_type}; "
            f"kernels must not return a value (write results into an array argument)",
            return_value_loc(neutral.cres))
    module = context.create_module(f"{name}.entry")
    params: list[ir.Type] = []
    layout: list[tuple] = []  # per argument: list of leaf slots
    for i, ty in enumerate(neutral.all_argtypes):
        leaves = abi.flatten_type(ty, f"argument {i}")
        for leaf in leaves:
            if leaf.kind == abi.ARRAY:
                n = leaf.ty.ndim
                params.append(ir.PointerType(addrspace=1))
                params.extend([ir.IntType(64)] * (1 + 2 * n))
            elif leaf.kind in (abi.POINTER, abi.RECORD):
                params.extend([ir.PointerType(addrspace=1), ir.IntType(64)])
            elif leaf.kind == abi.BOOL:
                params.append(ir.IntType(8))
            else:
                params.append(context.get_value_type(leaf.ty))
        layout.append(leaves)
    # the hidden buffer (language/debug.py), last parameter: a debug kernel's errors,
    # and the state of the grid barrier of a kernel that synchronizes its grid
    if neutral.debug or neutral.grid_sync:
        params.append(ir.PointerType(addrspace=1))
    # the device heap (language/heap.py), last: a kernel whose code makes arrays
    heap = uses_heap(neutral.library)
    if heap:
        params.append(ir.PointerType(addrspace=1))
    fnty = ir.FunctionType(ir.VoidType(), params)
    fn = ir.Function(module, fnty, name)
    if neutral.debug or neutral.grid_sync:
        from .language.cooperative import BUFFER_ARG, GRID_ARG

        fn.args[len(params) - 1 - heap].name = GRID_ARG if neutral.grid_sync else BUFFER_ARG
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    if heap:
        fn.args[-1].name = HEAP_ARG
        entry_accessor(module, fn, builder)
    pos = 0

    def take(k):
        nonlocal pos
        vals = fn.args[pos:pos + k]
        pos += k
        return list(vals)

    def data_pointer(buf, off):
        """The generic pointer at *buf* + the byte offset *off* (abi.py)."""
        generic = builder.addrspacecast(buf, ir.PointerType())
        off = call_intrinsic(builder, "__gpux_array_offset", off)
        return builder.gep(generic, [off], inbounds=True, source_etype=ir.IntType(8))

    def assume_non_negative(v):
        """Tell the optimizer that *v* (an array's extent) is not negative: an index
        made of extents and work-item ids is then known not to be negative, Numba's
        wrap-around of negative indices folds away, and a loop's consecutive
        work-items load consecutive elements (what a CPU driver's vectorizer needs
        to see; a select on every index makes each load a gather)."""
        assume = module.declare_intrinsic("llvm.assume", fnty=ir.FunctionType(
            ir.VoidType(), [ir.IntType(1)]))
        builder.call(assume, [builder.icmp_signed(">=", v, ir.Constant(v.type, 0))])

    def build(ty):
        if isinstance(ty, types.Array):
            n = ty.ndim
            buf, off, *rest = take(2 + 2 * n)
            shapes, strides = rest[:n], rest[n:]
            for extent in shapes:
                assume_non_negative(extent)
            data = data_pointer(buf, off)
            ary = context.make_array(ty)(context, builder)
            itemsize = context.get_abi_sizeof(context.get_data_type(ty.dtype))
            context.populate_array(
                ary, data=data,
                shape=cgutils.pack_array(builder, shapes, ty=ir.IntType(64)),
                strides=cgutils.pack_array(builder, strides, ty=ir.IntType(64)),
                itemsize=context.get_constant(types.intp, itemsize),
                meminfo=None,
            )
            return ary._getvalue()
        if abi.is_pointer(ty) or isinstance(ty, types.Record):  # a record: its data pointer
            return data_pointer(*take(2))
        if isinstance(ty, types.Boolean):
            (v,) = take(1)
            return builder.icmp_unsigned("!=", v, ir.Constant(v.type, 0))
        if isinstance(ty, types.Complex):
            re_, im = take(2)
            cplx = context.make_complex(builder, ty)
            cplx.real, cplx.imag = re_, im
            return cplx._getvalue()
        if isinstance(ty, (types.Integer, types.Float) + abi.DATETIME_TYPES):
            return take(1)[0]
        if isinstance(ty, (types.EnumMember, types.IntEnumMember)):  # its value's model
            return build(ty.dtype)
        if isinstance(ty, types.BaseTuple):
            return context.make_tuple(builder, ty, [build(t) for t in ty.types])
        if isinstance(ty, types.NoneType):
            return context.get_dummy_value()
        if isinstance(ty, types.Opaque):  # no data passed (abi.py): Numba's dummy value
            return context.get_constant_null(ty)
        raise InternalCompilerError("wrap", f"unhandled argument type {ty}")

    args = [build(ty) for ty in neutral.all_argtypes]
    if neutral.lineinfo:
        _locate_entry(module, fn, builder, neutral.cres)
    callee_ty = context.call_conv.get_function_type(types.void, neutral.all_argtypes)
    callee = cgutils.get_or_insert_function(module, callee_ty, neutral.fndesc.llvm_func_name)
    status, _ = context.call_conv.call_function(builder, callee, types.void, neutral.all_argtypes,
                                                args)
    _inline_call_of(builder.block, callee)
    if neutral.debug:
        from .language.debug import emit_error_record

        emit_error_record(builder, fn.args[len(params) - 1 - heap], status)
    builder.ret_void()

    lib = context.codegen().create_library(name)
    lib.add_ir_module(module)
    lib.add_linking_library(neutral.library)
    text = lib.neutral_ir(simplify=True, entry_points=(name,))
    if neutral.grid_sync:  # the grid barrier on the hidden buffer (language/cooperative.py)
        from .language.cooperative import pass_buffer

        text = pass_buffer(text, name)
    return text


def _locate_entry(module, fn, builder, cres) -> None:
    """With lineinfo, the entry point's own debug scope (a subprogram at the kernel's
    ``def`` line), and that location on the call of the lowered body: LLVM's inliner
    drops the locations of what it inlines at a call that has none."""
    import os

    func_id = cres.type_annotation.func_id
    filename, line = func_id.filename, func_id.firstlineno
    d, base = os.path.split(os.path.abspath(filename))
    file_ = module.add_debug_info("DIFile", {"directory": d, "filename": base})
    unit = module.add_debug_info("DICompileUnit", {
        "language": ir.DIToken("DW_LANG_Python"), "file": file_, "producer": "numba-gpux",
        "runtimeVersion": 0, "isOptimized": True,
        "emissionKind": ir.DIToken("DebugDirectivesOnly")}, is_distinct=True)
    module.add_named_metadata("llvm.dbg.cu", unit)
    module.add_named_metadata("llvm.module.flags", module.add_metadata(
        [ir.IntType(32)(2), "Debug Info Version", ir.IntType(32)(3)]))
    sp = module.add_debug_info("DISubprogram", {
        "name": fn.name, "file": file_, "line": line, "scopeLine": line, "unit": unit,
        "type": module.add_debug_info("DISubroutineType", {"types": module.add_metadata([])}),
        "spFlags": ir.DIToken("DISPFlagDefinition | DISPFlagOptimized")}, is_distinct=True)
    fn.set_metadata("dbg", sp)
    builder.debug_metadata = module.add_debug_info("DILocation", {"line": line, "column": 1,
                                                                  "scope": sp})


def _inline_call_of(block, callee) -> None:
    """Mark the entry point's one call of the kernel's lowered function ``alwaysinline``
    (a call-site attribute: other callers, a recursive call, are not affected), so
    that the neutral clean-up inlines it once for every target: each target's
    optimizer then starts from one function, not from the entry point and the body
    it would inline itself (a part of every target's O3 on a small kernel:
    benchmarks/results/costs.md)."""
    for ins in block.instructions:
        if isinstance(ins, ir.CallInstr) and ins.callee is callee:
            ins.attributes.add("alwaysinline")
            return


# the Target contract's hook defaults run the stages' code (interface imports nothing above)
provide_defaults(emit=default_emit)
