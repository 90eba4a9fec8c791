"""The compiler: stages as an ordered list of named steps.

Target-neutral (once per (function, argument types, options)):
    translate -> type -> lower            (Numba's front end, ``compile_neutral``)
    + the kernel entry wrapper             (``wrap_kernel``)
Per target (``TARGET_STAGES``, each enterable from its input):
    map_ir -> mark_kernels -> parse -> link -> internalize -> finish
    -> optimize -> validate -> emit
"""

from __future__ import annotations

import dataclasses
import weakref
from dataclasses import dataclass, field
from typing import Any

from llvmlite import binding as ll
from llvmlite import ir
from numba.core import compiler, cgutils, types
from numba.core import errors as numba_errors
from numba.core.compiler_lock import global_compiler_lock
from numba.core.target_extension import target_override

from . import abi, converge, irtext
from .machines import default_emit, llvm_options, target_machine
from .passes import internalize, run_passes
from .errors import InternalCompilerError, GpuxUserError, UnsupportedError
from .interface import Artifact, Target, provide_defaults
from .validation import first_located, validate
from .language.semantics import DEFAULT_SEMANTICS as _DEFAULT_SEMANTICS, Semantics
from . import config
from .irverify import check_step

__all__ = ["Options", "Semantics", "Job", "TARGET_STAGES",
           "compile_neutral", "wrap_kernel", "run_target_stages", "NeutralResult"]


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
        flags.fastmath = FastMathOptions(True)
    return flags


def compile_neutral(pyfunc, argtypes, options: Options, return_type=None) -> NeutralResult:
    """translate -> type -> lower, in the shared context."""
    from . import context as _context
    from .context import TARGET_NAME, target_context, typing_context

    from .language.checks import (GpuxCompiler, compile_searches, lowering_failure,
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
                    failure = lowering_failure(e, pyfunc)
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


# --------------------------------------------------------------------------- per target

@dataclass
class Job:
    """The state that flows through the per-target stages."""

    target: Target
    options: Options
    kernels: tuple[str, ...]
    text: str | None = None
    #: non-kernel symbols that stay visible (``compile(..., device=True)``)
    exports: tuple[str, ...] = ()
    module: object = None
    artifact: Artifact | None = None
    name: str = "module"
    history: dict = field(default_factory=dict)
    keep_ir: bool = False
    #: the functions the module defines, once linked (read from the texts linked)
    defined: set | None = None
    #: the module's text as the optimize stage left it (printed or parsed), for the
    #: stages after it, which read the module without changing it
    printed: str | None = None


def _stage_map_ir(job: Job):
    job.text = job.target.map_ir(job.text)
    if job.target.index_limits is not None:
        job.text = irtext.index_ranges(job.text, job.target.index_limits)


def _stage_mark_kernels(job: Job):
    job.text = irtext.mark_kernels(job.text, job.kernels, job.target.kernel_cc)
    for name, operands in job.target.module_metadata:
        job.text = irtext.add_named_metadata(job.text, name, operands)
    # the kernel's launch bounds, as function attributes where the target names them
    names = dict(job.target.kernel_bound_attributes)
    attrs = {names[k]: str(getattr(job.options, k)) for k in names if getattr(job.options, k)}
    if attrs:
        job.text = irtext.add_function_attributes(job.text, job.kernels, attrs)
    fast = _fastmath_attributes(job)
    if fast:
        job.text = irtext.add_function_attributes(job.text, None, fast)


def _stage_converge(job: Job):
    """Kernels whose work-items may return while others meet a barrier, rewritten to
    meet every barrier in one place, on a target whose barriers wait for every
    work-item (``barriers_skip_exited`` False; converge.py)."""
    if job.target.barriers_skip_exited:
        return
    try:
        new = converge.rewrite(job.text, job.kernels, job.target.data_layout,
                               job.target.addrspaces.shared, lambda: ll.create_pass_builder(
                                   target_machine(job.target, 0),
                                   ll.create_pipeline_tuning_options()))
    except InternalCompilerError as e:  # the kernel as it is, and the user told why
        import warnings

        warnings.warn(f"numba-gpux: {job.name!r} is compiled for {job.target.name} without "
                      f"the barrier rewrite ({e}); its work-items that return before a "
                      f"barrier may hold the others back there", RuntimeWarning, stacklevel=2)
        return
    if new is not None:
        job.text = new


def _fastmath_attributes(job: Job) -> dict:
    """The function attributes a ``fastmath`` compile puts on every function the module
    defines, its own and the overlay definitions linked (the target's
    ``fastmath_function_attributes``, e.g. CUDA's float32 denormal mode: LLVM does not
    inline a function into one whose mode differs)."""
    if not job.options.fastmath:
        return {}
    return dict(job.target.fastmath_function_attributes)


def _stage_parse(job: Job):
    try:
        job.module = ll.parse_assembly(job.text)
    except RuntimeError as e:
        raise InternalCompilerError("parse", str(e), job.text) from None
    job.module.triple = job.target.triple
    job.module.data_layout = job.target.data_layout


def _stage_link(job: Job):
    """Link the overlay definitions of what the module declares, and of what those
    declare in turn.  What is declared is read from the texts parsed (the module's
    and each overlay module's), not by walking the module's functions: that costs
    two foreign calls per function, several times per compile."""
    stack = job.target.overlays()
    defined = irtext.defined_functions(job.text)
    declared = irtext.declared_functions(job.text)
    done: set[str] = set()
    while True:
        wanted = {n for n in declared if stack.provides(n)} - done
        if not wanted:
            break
        _missing, text = _link_overlays(job, stack, wanted)
        defined |= irtext.defined_functions(text)
        declared = (declared | irtext.declared_functions(text)) - defined
        done |= wanted
    job.defined = defined


def _link_overlays(job: Job, stack, names) -> tuple[set[str], str]:
    """Link the stack's definitions of *names* into the module: the names it lacks,
    and the text linked."""
    text, missing = stack.module_text(names, map_shared=job.target.map_ir)
    fast = _fastmath_attributes(job)
    if fast:
        text = irtext.add_function_attributes(text, None, fast)
    if set(names) - missing:
        try:
            ovl = ll.parse_assembly(text)
        except RuntimeError as e:
            raise InternalCompilerError("link", f"overlay definitions for {job.target.name} "
                                        f"do not parse: {e}", text) from None
        ovl.triple = job.target.triple
        ovl.data_layout = job.target.data_layout
        job.module.link_in(ovl)
    return missing, text


def _stage_internalize(job: Job):
    internalize(job.module, (*job.kernels, *job.exports), job.defined)


def _require_subgroup_size(job: Job):
    """Options.subgroup_size, for a module that uses sub-group operations, as the
    target's data says: sub-groups that always have one width (``subgroup_width``),
    or a per-kernel requirement written as metadata (``subgroup_size_metadata``,
    where the device has the feature ``required_subgroup_size``)."""
    width = job.options.subgroup_size
    if not width or not any(f.name.startswith("__gpux_sg_") for f in job.module.functions):
        return
    target = job.target
    fixed = target.subgroup_width
    if fixed == width:
        return
    md = target.subgroup_size_metadata
    if md and target.has("required_subgroup_size"):
        job.module = ll.parse_assembly(
            irtext.add_function_metadata(str(job.module), job.kernels, md, f"i32 {width}"))
        return
    why = (f"its sub-groups are always {fixed} wide" if fixed else
           "this device cannot require a sub-group width" if md else
           "the target cannot require a sub-group width")
    raise UnsupportedError(
        f"kernel {job.name!r} uses sub-group (warp) operations written for sub-groups of "
        f"{width} lanes, which {target.name} cannot run: {why} (kernels of the numba.cuda "
        f"facade assume warps of 32; gpux.jit kernels use the device's natural width)")


def _stage_finish(job: Job):
    _require_subgroup_size(job)
    # a target may return a replacement module (e.g. after an IR text round trip)
    new = job.target.finish_module(job.module, job.kernels)
    if new is not None:
        job.module = new


def _stage_optimize(job: Job):
    tm = target_machine(job.target, job.options.opt)
    pto = ll.create_pipeline_tuning_options(speed_level=job.options.opt)
    if not job.target.loop_vectorization:
        pto.loop_vectorization = False
    pb = ll.create_pass_builder(tm, pto)
    mpm = pb.getModulePassManager()
    # Targets that accept only some integer widths (SPIR-V without
    # SPV_ALTERA_arbitrary_precision_integers: 8/16/32/64) must not get the
    # i65 arithmetic that IndVarSimplify's closed-form exit values introduce
    # for triangular sums; LLVM would abort the process at emission.  The
    # option is process-wide in LLVM, so it is set around our run only.
    if job.target.legal_int_widths:
        with llvm_options((("-replexitval=never", "-replexitval=cheap"),)):
            run_passes(mpm, job.module, pb)
    else:
        run_passes(mpm, job.module, pb)
    _replace_intrinsics(job)
    _rewrite_text(job)


def _rewrite_text(job: Job) -> None:
    """The text rewrites after the optimizer, in one print and one parse of the module:
    address-space inference (at ``opt`` > 0, unless the target's field
    ``backend_infers_address_spaces`` says its code generation runs LLVM's own pass),
    then the target's IR rewrites (field ``ir_rewrites``, see ``legalize.py``:
    constructs its back end mistranslates, written another way after the optimizer has
    run), then the removal of the values they left unused (``irtext.drop_unused_values``,
    what dead-code elimination would do, without a pass manager run).  The text parsed
    is kept for the stages after."""
    names = job.target.ir_rewrites
    if names:
        from .legalize import needed

        names = needed(names, job.module)
    infer = job.options.opt > 0 and not job.target.backend_infers_address_spaces
    if not infer and not names:
        return  # nothing to rewrite: the module is not printed
    text = str(job.module)
    steps = []  # (what made it, text after it)
    if infer:
        steps.append(("address-space inference", _infer_address_spaces(job, text)))
    if names:
        from .legalize import apply_rewrites

        before = steps[-1][1] if steps else text
        if config.verify_rewrites():  # one at a time, each checked by LLVM
            after = before
            for name in names:
                after, prev = apply_rewrites(after, (name,)), after
                check_step(f"legalize.{name}", prev, after)
        else:
            after = apply_rewrites(before, names)
        steps.append((f"the IR rewrites {names}", after))
    new = steps[-1][1]
    if new == text:
        job.printed = text
        return
    new = irtext.drop_unused_values(new)
    steps.append(("the removal of unused values", new))
    try:
        job.module = ll.parse_assembly(new)
        job.module.verify()
    except RuntimeError as e:
        # say which step made the invalid IR: the first whose result is invalid
        culprit, bad = steps[-1]
        for what, t in steps[:-1]:
            try:
                ll.parse_assembly(t).verify()
            except RuntimeError:
                culprit, bad = what, t
                break
        raise InternalCompilerError("optimize", f"{culprit} made invalid IR: {e}", bad) from None
    job.printed = new


def _infer_address_spaces(job: Job, text: str) -> str:
    """Memory accesses through generic pointers that are casts of global, shared, local
    or constant pointers use those pointers instead (``irtext.infer_address_spaces``;
    LLVM's own pass is not in llvmlite's pass manager, and LLVM's SPIR-V back end
    would emit generic loads and stores); the casts left unused are removed after
    (``_rewrite_text``)."""
    spaces = job.target.addrspaces
    new = irtext.infer_address_spaces(text, spaces.generic)
    scope = job.target.workgroup_syncscope  # the back end's name for it, if any
    if scope:
        new = irtext.narrow_shared_atomics(new, spaces.shared, scope)
    return new


def _replace_intrinsics(job: Job) -> None:
    """Swap LLVM intrinsics the target's back end cannot lower for overlay definitions.

    The optimizer creates some intrinsics on its own (InstCombine turns shift-and-mask
    bit reversal into ``llvm.bitreverse``); LLVM 22's SPIR-V back end aborts the process
    on ``llvm.bitreverse`` (no SPV_KHR_bit_instructions) and ``llvm.sadd.with.overflow``.
    A target lists such intrinsics in its field ``replace_intrinsics``; each call of
    ``llvm.X.Y`` becomes a call of ``__gpux_llvm_X_Y``, defined in its overlay registry
    and inlined.  Only the always-inliner runs afterwards, so the definitions are not
    turned back into the intrinsic.
    """
    prefixes = job.target.replace_intrinsics
    if not prefixes:
        return
    names = [f.name for f in job.module.functions
             if f.is_declaration and f.name.startswith(prefixes)]
    if not names:
        return
    # renamed through llvmlite's objects: a renamed declaration is no intrinsic any more
    for f in job.module.functions:
        if f.name in names:
            f.name = f"__gpux_{f.name.replace('.', '_')}"
    wanted = {f"__gpux_{n.replace('.', '_')}" for n in names}
    # names the stack lacks stay declared: validation reports them as unresolved
    wanted -= _link_overlays(job, job.target.overlays(), wanted)[0]
    if wanted:
        for f in job.module.functions:
            if f.name in wanted and not f.is_declaration:
                f.linkage = "internal"
        pb = ll.create_pass_builder(target_machine(job.target, job.options.opt),
                                    ll.create_pipeline_tuning_options(speed_level=0))
        mpm = ll.create_new_module_pass_manager()
        mpm.add_always_inliner_pass()
        mpm.add_global_dead_code_eliminate_pass()
        run_passes(mpm, job.module, pb)


def _stage_validate(job: Job):
    validate(job, _located_with_line_info)


def _located_with_line_info(job: Job, uses):
    """``validation.first_located`` on *job*'s module compiled again with line information
    (for validation's messages, on the error path only); None where the kernel's
    neutral result is gone."""
    import warnings

    from numba.core.errors import NumbaDebugInfoWarning

    names = (*job.kernels, *job.exports)
    res = next((r for n in names if (r := _neutrals.get(n)) is not None), None)
    ann = getattr(res.cres, "type_annotation", None) if res is not None else None
    pyfunc = getattr(getattr(ann, "func_id", None), "func", None)
    if pyfunc is None:
        return None
    options = dataclasses.replace(job.options, lineinfo=True)
    with warnings.catch_warnings():  # (Numba's array expressions have no source to locate)
        warnings.simplefilter("ignore", NumbaDebugInfoWarning)
        again = compile_neutral(pyfunc, res.argtypes, options, res.return_type)
    if job.kernels:
        text, exports = wrap_kernel(again, job.kernels[0]), job.exports
    else:
        text, exports = again.library.neutral_ir(), (again.fndesc.llvm_func_name,)
    redo = run_target_stages(Job(target=job.target, options=options, kernels=job.kernels,
                                 text=text, exports=exports, name=job.name), stop="optimize")
    return first_located(redo.printed if redo.printed is not None else str(redo.module), uses)


# the Target contract's hook defaults run the stages' code (interface imports nothing above)
provide_defaults(emit=default_emit)


def _stage_emit(job: Job):
    job.artifact = job.target.emit(job.module, job.kernels, job.options.opt)


TARGET_STAGES: list[tuple[str, object]] = [
    ("map_ir", _stage_map_ir),
    ("mark_kernels", _stage_mark_kernels),
    ("converge", _stage_converge),
    ("parse", _stage_parse),
    ("link", _stage_link),
    ("internalize", _stage_internalize),
    ("finish", _stage_finish),
    ("optimize", _stage_optimize),
    ("validate", _stage_validate),
    ("emit", _stage_emit),
]
STAGE_NAMES = [n for n, _ in TARGET_STAGES]


def run_target_stages(job: Job, start: str = "map_ir", stop: str | None = None) -> Job:
    """Run the per-target stages from *start* through *stop* (inclusive)."""
    i = STAGE_NAMES.index(start)
    j = STAGE_NAMES.index(stop) if stop else len(STAGE_NAMES) - 1
    for name, fn in TARGET_STAGES[i:j + 1]:
        try:
            fn(job)
        except (GpuxUserError, InternalCompilerError, numba_errors.NumbaError):
            raise
        except Exception as e:  # a bug in a stage: say which, with the IR
            ir_now = job.text if job.module is None else str(job.module)
            raise InternalCompilerError(name, f"{type(e).__name__}: {e}", ir_now) from e
        if job.keep_ir:
            job.history[name] = job.text if job.module is None else str(job.module)
    # a target whose emit did not record the module it emitted (one that writes source
    # and runs no LLVM code generation, which would have rewritten the module)
    if job.artifact is not None and job.module is not None and job.artifact.llvm_ir is None:
        job.artifact = job.artifact.with_ir(str(job.module))
    return job
