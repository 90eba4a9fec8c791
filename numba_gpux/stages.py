"""The compiler's per-target stages, as an ordered list of named steps
(``TARGET_STAGES``), each enterable from its input:
    map_ir -> mark_kernels -> converge -> parse -> link -> internalize -> finish
    -> optimize -> validate -> emit
They take the kernel IR of the target-neutral half (``compiler.py``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from llvmlite import binding as ll
from numba.core import errors as numba_errors

from . import config, converge, irtext
from . import irlex as lx
from .compiler import Options, _neutrals, compile_neutral, wrap_kernel
from .errors import GpuxUserError, InternalCompilerError, UnsupportedError
from .interface import Artifact, Target
from .lanes import lanes_prefer_serial
from .lockstep import SG_BARRIER, meets_only_at_barriers, order_shared_stores, \
    passes_values_in_step, waits_for_other_work_items
from .irverify import check_step
from .machines import llvm_options, target_machine
from .passes import internalize, run_passes
from .validation import first_located, validate

__all__ = ["Job", "TARGET_STAGES", "STAGE_NAMES", "run_target_stages", "WARP_ROWS",
           "lockstep_kind", "warp_width", "shares_without_subgroups"]


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
    #: what the stages found that launching needs to know: added to the artifact's info
    info: dict = field(default_factory=dict)


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
    _warp_lockstep(job)
    _serial_lanes(job)


def _serial_lanes(job: Job) -> None:
    """Kernels whose sub-groups nothing requires (no sub-group operation, no warps in
    lockstep) that take a lock in a loop (``lockstep.waits_for_other_work_items``:
    CUDA's threads progress each on its own), or whose memory accesses step by a
    row's stride from one work-item to the next with little arithmetic between
    (``lanes.lanes_prefer_serial``: gathers and scatters where one work-item reads
    consecutive addresses): the target's metadata under which the driver runs their
    work-items one at a time (``Target.serial_lanes_metadata``)."""
    meta = job.target.serial_lanes_metadata
    if not (meta and job.kernels) or "warp_lockstep" in job.info or "warp_ops" in job.info:
        return
    if any(n.startswith("__gpux_sg_") for n in irtext.declared_functions(job.text)):
        return
    why = "locks" if waits_for_other_work_items(job.text) \
        else "strides" if lanes_prefer_serial(job.text) else None
    if why is not None:
        job.text = irtext.add_function_metadata(job.text, job.kernels, *meta)
        job.info["serial_lanes"] = why


def _warp_lockstep(job: Job) -> None:
    """Kernels compiled for warps (``Options.subgroup_size``, the numba.cuda facade's
    32) whose work-items share work-group memory (barriers, shared arrays) and use no
    sub-group operation: sub-groups of the warp's width where the device can require
    one (``subgroup_size_metadata``, ``required_subgroup_size``), so that numba.cuda
    code written for warps that run in lockstep (values passed through shared memory
    without a barrier) gives the GPU's answers.  A store to work-group memory that a
    load of it can follow with no barrier between gets a sub-group barrier after it,
    one that can follow such a load one before it (``lockstep.order_shared_stores``),
    so that no compiler or driver moves a lane's load across another lane's store.

    Which launches (:func:`lockstep_kind`, recorded in the artifact's info as
    ``warp_lockstep`` for the launch path): every launch of a kernel that reads only x
    indices ("always"); of one that reads a y or z index ("rows"), only launches whose
    blocks are rows of whole warps
    (``abi.LaunchFacts.warp_rows``, said by the named metadata :data:`WARP_ROWS`,
    removed here): in 16 x 16 tiles a warp spans two rows, and the wider sub-group made
    the driver gather what it loads as vectors (numba's documented tiled matrix
    product: 2.4x slower), where in blocks 32 wide it is faster than the device's own
    width (benchmarks/warp_rows.py).  Kernels with sub-group operations get the width
    in the finish stage (``_require_subgroup_size``), where a device without it is an
    error; here it is only kept where it can be."""
    rows = f"!{WARP_ROWS} =" in job.text  # (a quick no for most kernels)
    if rows:
        marked = irtext.remove_named_metadata(job.text, WARP_ROWS)
        rows, job.text = marked != job.text, marked
    if not job.kernels:
        return
    ops = warp_ops_width(job.text, job.options, job.target)
    if ops:  # (for the launch path: lanelaunch.flat_block)
        job.info["warp_ops"] = ops
    kind = lockstep_kind(job.text, job.options, job.target)
    if kind is None:
        return
    job.info["warp_lockstep"] = kind
    if kind != "always" and not rows:
        return
    spaces = job.target.addrspaces
    job.text = order_shared_stores(job.text, spaces.shared, spaces.generic)
    if SG_BARRIER not in irtext.declared_functions(job.text):
        job.text = irtext.add_function_metadata(job.text, job.kernels,
                                                job.target.subgroup_size_metadata,
                                                f"i32 {job.options.subgroup_size}")
    # (else the finish stage requires the width, as of every kernel with sub-group
    # operations: _require_subgroup_size)


def lockstep_kind(text: str, options, target) -> str | None:
    """How the warps of the kernel of *text* (in *target*'s address spaces:
    ``Target.map_ir``) compiled with *options* for *target* run in lockstep: None where they are not (no width to
    require, or no work-group memory shared, or lanes that meet in it only across
    barriers and update it atomically: ``lockstep.meets_only_at_barriers``, where the
    warp's width makes the atomics slower and nothing else observes it), "always"
    where they are in every launch
    as written (it reads only x indices); of a kernel that reads a y or z index,
    "blocks" where its lanes may pass values in step (a store to shared memory that a
    load can follow with no barrier: ``lockstep.passes_values_in_step``), in every
    launch, blocks that are not rows of whole warps run as one row
    (``LaunchFacts.block``: a sub-group of 32 does not span the rows of a narrower block
    on Intel's CPU driver, which forms sub-groups along dimension 0), else "rows":
    only in launches whose blocks are rows of whole warps (``LaunchFacts.warp_rows``),
    where the width is as fast as the device's own or faster."""
    if not (warp_width(options, target) and shares_without_subgroups(text)):
        return None
    spaces = target.addrspaces
    if "__gpux_atomic_" in text and any(n.startswith("__gpux_atomic_")
                                        for n in irtext.declared_functions(text)) \
            and meets_only_at_barriers(text, spaces.shared, spaces.generic):
        return None  # (atomics at the warp's width: 1.25-2.4x slower than the device's)
    if irtext.index_dimensions(text) <= {0}:
        return "always"
    return "blocks" if passes_values_in_step(text, spaces.shared, spaces.generic) else "rows"




def warp_ops_width(text: str, options, target) -> int | None:
    """The warp width (:func:`warp_width`) of the kernel of *text* where it uses sub-group
    (warp) operations, else None.  Its sub-groups are warps of consecutive linear thread
    ids only where they run along dimension 0 over rows of whole warps; the launch path
    runs other blocks as one row (``abi.LaunchFacts.block``), as it asks this of the
    neutral IR."""
    width = warp_width(options, target)
    if width and any(n.startswith("__gpux_sg_") for n in irtext.declared_functions(text)):
        return width
    return None


#: the named metadata by which a kernel's text says that its launch's blocks are rows
#: of whole warps (``abi.LaunchFacts.warp_rows``; read and removed by the target stages)
WARP_ROWS = "gpux.warp_rows"


def shares_without_subgroups(text: str) -> bool:
    """Whether the kernel of *text* shares work-group memory (a barrier, a static or
    dynamic shared array) and uses no sub-group operation: one whose warps may
    exchange values through shared memory in lockstep."""
    called = irtext.declared_functions(text)
    if any(n.startswith("__gpux_sg_") for n in called):
        return False
    return (any(n.startswith(("__gpux_barrier", "__gpux_dynamic_shared")) for n in called)
            or any(lx.name(n).startswith("__gpux_shared.")
                   for n in irtext.global_variable_names(text)))


def warp_width(options, target) -> int | None:
    """The warp width (``Options.subgroup_size``) that kernels of *options* require on
    *target* to run their warps in lockstep, else None: the target's sub-groups are not
    always that wide (``subgroup_width``) and a kernel can require the width
    (``subgroup_size_metadata`` and the device feature ``required_subgroup_size``)."""
    width = options.subgroup_size
    if not width or target.subgroup_width == width or not _can_require_width(target):
        return None
    return width


def _width_to_require(job: Job) -> int | None:
    """``Options.subgroup_size`` where the target's sub-groups are not always that wide
    (``subgroup_width``), else None: the width a kernel would have to require."""
    width = job.options.subgroup_size
    return width if width and job.target.subgroup_width != width else None


def _can_require_width(target) -> bool:
    """Whether a kernel can require its sub-group width on *target*: the target names
    the metadata (``subgroup_size_metadata``) and the device has the feature
    ``required_subgroup_size``."""
    return bool(target.subgroup_size_metadata) and target.has("required_subgroup_size")


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
    except (InternalCompilerError, converge.CalleeBarrier) as e:
        # the kernel as it is, and the user told why
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
    twins = _split_subgroup_twins(job)
    while True:
        wanted = {n for n in declared if stack.provides(n)} - done
        if not wanted:
            break
        _missing, text = _link_overlays(job, stack, wanted, twins)
        defined |= irtext.defined_functions(text)
        declared = (declared | irtext.declared_functions(text)) - defined
        done |= wanted
    job.defined = defined


def _split_subgroup_twins(job: Job):
    """For a kernel that requires a sub-group width, on a device whose sub-groups of
    that width are split across its vectors (the feature "split_subgroups"): a function
    that gives, for a sub-group shuffle's name, the name of the target's definition to
    link in its place (``split_subgroup_prefix``, exchanging values through work-group
    memory); None otherwise."""
    prefix = job.target.split_subgroup_prefix
    if not (prefix and job.target.has("split_subgroups") and _width_to_require(job)
            and _can_require_width(job.target)):
        return None
    return lambda n: prefix + n[len("__gpux_sg_"):] if n.startswith("__gpux_sg_shuffle") else n


def _link_overlays(job: Job, stack, names, twins=None) -> tuple[set[str], str]:
    """Link the stack's definitions of *names* into the module (each from its twin's,
    renamed, where *twins* names one the stack has): the names it lacks, and the text
    linked."""
    use = {n: twins(n) for n in names} if twins is not None else {}
    use = {n: t for n, t in use.items() if t != n and stack.provides(t)}
    text, missing = stack.module_text([use.get(n, n) for n in names],
                                      map_shared=job.target.map_ir)
    if use:
        text = irtext.rename_globals(text, {t: n for n, t in use.items()})
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
    width = _width_to_require(job)
    if not width or not any(f.name.startswith("__gpux_sg_") for f in job.module.functions):
        return
    target = job.target
    fixed = target.subgroup_width
    md = target.subgroup_size_metadata
    if _can_require_width(target):
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
    # for triangular sums (LLVM would abort the process at emission), nor the
    # counter of the narrowest type that its linear function test replacement
    # makes for a loop of a small trip count (an i2 for ``range(j & 3)``).  The
    # options are process-wide in LLVM, so they are set around our run only.
    if job.target.legal_int_widths:
        with llvm_options((("-replexitval=never", "-replexitval=cheap"),
                           ("-disable-lftr=true", "-disable-lftr=false"))):
            run_passes(mpm, job.module, pb)
    else:
        run_passes(mpm, job.module, pb)
    if job.options.opt == 0 and job.target.rotate_unoptimized_loops:
        rotate = ll.create_new_module_pass_manager()
        rotate.add_loop_rotate_pass()
        run_passes(rotate, job.module, pb)
    _replace_intrinsics(job)
    _rewrite_text(job)
    _replace_intrinsics(job)  # (those a rewrite calls: fuse_contracted's llvm.fma.f16)


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
    return irtext.private_atomics(new, spaces.private)


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
    widths = job.target.legal_int_widths
    # (a boolean's reversal, i1, is no width problem: validation allows i1 too)
    representable = {f"llvm.bitreverse.i{w}" for w in (1, *widths)}
    if widths and any(f.name.startswith("llvm.bitreverse.i") and f.is_declaration
                      and f.name not in representable for f in job.module.functions):
        # (a reversal at a width the target cannot represent, done at a wider one first)
        from .legalize_bits import widen_bitreverse

        job.module = ll.parse_assembly(widen_bitreverse(str(job.module), widths))
        job.module.verify()
    names = [f.name for f in job.module.functions
             if f.is_declaration and f.name.startswith(prefixes)]
    if not names:
        return
    job.printed = None  # (the module changes)
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
    if job.artifact is not None and job.info:
        job.artifact.info.update(job.info)
    # a target whose emit did not record the module it emitted (one that writes source
    # and runs no LLVM code generation, which would have rewritten the module)
    if job.artifact is not None and job.module is not None and job.artifact.llvm_ir is None:
        job.artifact = job.artifact.with_ir(str(job.module))
    return job
