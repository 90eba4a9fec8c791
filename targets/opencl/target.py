"""OpenCL target data: SPIR-V 64-bit, OpenCL address spaces, device capabilities."""

from __future__ import annotations

from numba_gpux.interface import (AddressSpaces, IndexLimits, Target, TargetOptions,
                                  target_dataclass)

from . import overlays  # noqa: F401  (fills the "spirv" and "opencl" registries)

__all__ = ["OpenCLTarget", "OpenCLOptions", "make_target", "SPIRV_ADDRSPACES", "TRIPLE", "DATA_LAYOUT",
           "INDEX_LIMITS", "NO_LSR_FLAGS"]

#: Neutral constant memory maps to CrossWorkgroup (1), not UniformConstant (2):
#: kernels reach constant arrays through generic pointers, and OpenCL cannot cast
#: UniformConstant to Generic (LLVM's SPIR-V back end aborts on the cast).
SPIRV_ADDRSPACES = AddressSpaces(generic=4, global_=1, shared=3, constant=1, private=0)
TRIPLE = "spirv64-unknown-unknown"
DATA_LAYOUT = ("e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-"
               "v512:512-v1024:1024-n8:16:32:64-G1")
DEFAULT_FEATURES = frozenset({"fp64", "int64_atomics"})
#: LLVM flags that turn code generation's loop strength reduction off.  The target
#: emits with them: the driver compiles the SPIR-V again and reduces strength for its
#: own machine, and LSR's SPIR-V hides what its vectorizer needs to see.  LSR rewrites
#: an index that steps through a loop into a pointer that steps (a pointer phi), and
#: the Intel OpenCL CPU driver then loads the consecutive elements of a strided loop
#: (``for t in range(s, n, w): x[r, t]``, s the work-item) with gathers: 5x slower
#: than its OpenCL C twin (about as fast without LSR).  LSR is also what makes the
#: back end's integer-width faults (spirv_widths.py).  A target made without these
#: flags keeps LSR and emits a module again without it after such a fault.
NO_LSR_FLAGS = (("-disable-lsr=true", "-disable-lsr=false"),)
#: the target machine's flags on a device with the feature "native_float_add": LLVM's
#: SPIR-V back end writes ``atomicrmw fadd`` (the family ``spirv_float_add``,
#: overlays/atomics.py) only with the extension allowed when the machine is created,
#: and ends the process without it
FLOAT_ADD_FLAGS = (("--spirv-ext=+SPV_EXT_shader_atomic_float_add", "--spirv-ext="),)
#: emissions again in this process before a fresh one, for a module whose SPIR-V
#: defined a result id twice (LLVM 22's back end, see spirv_ids.py)
_RETRIES_IN_PROCESS = 3
#: OpenCL's get_global_id, as the module calls it (overlays/core.py)
_GLOBAL_ID = "_Z13get_global_idj"


def _generic_atomics(text: str, generic: int) -> bool:
    """Whether the module text has an atomic instruction (``atomicrmw``, ``cmpxchg``) on
    a pointer in the generic address space *generic*."""
    from numba_gpux import irlex

    if "cmpxchg" not in text and "atomicrmw" not in text:
        return False
    for ln in irlex.lines(text):
        if "cmpxchg" not in ln and "atomicrmw" not in ln:
            continue
        toks = irlex.line_tokens(ln)
        op, at = irlex.instruction(toks)
        if op not in ("cmpxchg", "atomicrmw"):
            continue
        ci = [k for k in range(at + 1, len(toks)) if irlex.is_code(toks[k])]
        for k in ci[:4]:  # [weak] [volatile] [operation] ptr ...
            got = irlex.ptr_type(toks, k)
            if got is not None:
                if got[0] == generic:
                    return True
                break
    return False
#: allocations held across such an emission, so that its MachineFunctions land elsewhere
_spacer: list = []
#: OpenCL bounds a work-group by the device (CL_DEVICE_MAX_WORK_ITEM_SIZES, checked
#: at launch) and the number of groups only by size_t; these are the bounds the
#: compiler states (IndexLimits), and the launcher refuses more groups (max_grid_dims)
INDEX_LIMITS = IndexLimits(block=(2 ** 31 - 1,) * 3, grid=(2 ** 31 - 1,) * 3)


#: the two portable intrinsics a kernel's dynamic shared memory is read through
#: (language/memory.py); OpenCL turns them into trailing kernel parameters: a
#: ``__local`` buffer (pyopencl.LocalMemory(shared_bytes)) and its size in bytes
_DYNAMIC_SHARED_PARAMS = {
    "__gpux_dynamic_shared": ("ptr addrspace(3)", "addrspacecast ptr addrspace(3) {arg} "
                                                  "to ptr addrspace(4)"),
    "__gpux_dynamic_shared_bytes": ("i64", "add i64 {arg}, 0"),
}


@target_dataclass
class OpenCLOptions(TargetOptions):
    """What only the OpenCL (SPIR-V) target reads."""

    #: True: dynamic shared memory is read through trailing kernel parameters (a
    #: ``__local`` buffer and its size), as OpenCL sizes ``__local`` memory at launch
    #: only through a kernel argument (``finish_module``)
    dynamic_shared_params: bool = True


@target_dataclass
class OpenCLTarget(Target):
    """SPIR-V code for OpenCL devices (``OpenCLOptions``)."""

    opencl: OpenCLOptions = OpenCLOptions()

    def map_ir(self, text: str) -> str:
        """The default address-space mapping, then printf format strings into
        UniformConstant (2): OpenCL's printf takes ``constant char *``, while
        other neutral constant data lives in CrossWorkgroup (see above)."""
        from numba_gpux import irtext

        text = super().map_ir(text)
        return irtext.move_globals(text, "__gpux_fmt_", SPIRV_ADDRSPACES.constant, 2,
                                   callee_prefix="__gpux_printf_")

    def emit(self, module, kernels, opt):
        """SPIR-V from LLVM's back end.  The module is first checked for the IR shapes
        the back end aborts the process on (backend_guard.py), which are an internal
        compiler error instead; the SPIR-V is checked for two faults of LLVM 22's SPIR-V
        back end: result ids defined twice (about one module in a hundred in a process that
        has emitted many; see spirv_ids.py), after which the module is emitted again by
        a fresh process, whose back end carries nothing over; and integer operations
        on operands of another width (spirv_widths.py), an internal compiler error; a
        target that keeps loop strength reduction (which makes what the back end
        mistranslates) emits such a module again without it, and one with masks widened
        to a legal width (spirv_widths.widened_masks) the same way."""
        import dataclasses

        from llvmlite import binding as ll

        from numba_gpux import irtext
        from numba_gpux.errors import InternalCompilerError

        from .backend_guard import abort_shapes
        from .pointer_phis import shared_pointer_phis_as_integers
        from .printf_guard import PRINTF, calls
        from .spirv_widths import mismatched_integer_widths, widened_masks

        ir_text = str(module)  # before code generation, which rewrites the module
        # Intel's OpenCL CPU driver (2026.2) miscompiles a vectorized 64-bit shift by
        # an unmasked per-work-item amount (uint64 1 << (t + 30) stored at out[t]
        # gave wrong values once the store was contiguous); masking the amount, which
        # OpenCL C does by definition, gives right ones
        masked = irtext.mask_shift_amounts(ir_text)
        # the same driver reads zeros through a phi of three or more constant casts of
        # work-group arrays (a tuple of shared arrays indexed at run time); carried as
        # integers it reads the arrays (pointer_phis.py)
        masked = shared_pointer_phis_as_integers(masked)
        if _generic_atomics(masked, self.addrspaces.generic):
            # the driver's OpenCL C library has no legacy atomics on generic pointers
            # (what is left where address spaces could not be inferred, as at opt=0):
            # such a module keeps the back end's default source language (module_metadata)
            masked = irtext.remove_named_metadata(masked, "opencl.ocl.version")
        if masked != ir_text:
            ir_text, module = masked, ll.parse_assembly(masked)
        # what the back end would abort the process on is an error here instead
        shapes = abort_shapes(module, ir_text)
        if shapes:
            raise InternalCompilerError(
                "emit", "the module holds IR that LLVM's SPIR-V back end aborts the process "
                        "on, so it was not emitted: " + "; ".join(shapes), ir_text)
        try:  # the driver computes get_global_id in 32 bits (launch.py refuses more)
            module.get_function(_GLOBAL_ID)
            narrow = True
        except NameError:
            narrow = False
        if calls(module, PRINTF):
            art, ir_text = self._emit_printing(kernels, opt, ir_text)
        else:
            art = self._emit_once(module, kernels, opt, ir_text)
        art.info["global_ids_32bit"] = narrow
        lsr = NO_LSR_FLAGS[0] not in self.codegen_flags
        if not lsr:
            art.info["emitted_without_lsr"] = True
        # (a widened mask is a fault of LSR's code alone)
        if not mismatched_integer_widths(art.binary) and not (
                lsr and widened_masks(art.binary, ir_text)):
            return art
        if not lsr:
            raise InternalCompilerError(
                "emit", f"LLVM's SPIR-V back end wrote integer operations on operands of "
                        f"another width (result ids {mismatched_integer_widths(art.binary)[:8]})",
                ir_text)
        without_lsr = dataclasses.replace(self, codegen_flags=self.codegen_flags + NO_LSR_FLAGS)
        art = without_lsr._emit_once(ll.parse_assembly(ir_text), kernels, opt, ir_text)
        art.info["emitted_without_lsr"] = True
        art.info["global_ids_32bit"] = narrow
        bad = mismatched_integer_widths(art.binary)
        if bad:
            raise InternalCompilerError(
                "emit", f"LLVM's SPIR-V back end wrote integer operations on operands of "
                        f"another width (result ids {bad[:8]}), with and without loop "
                        f"strength reduction", ir_text)
        return art

    def _emit_printing(self, kernels, opt, ir_text):
        """(the artifact, the module text emitted) of a module that calls printf,
        emitted by a fresh process: LLVM 22's back end can end the process on such a
        module ("SPV_EXT_relaxed_printf_string_address_space is required because printf
        uses a format string not in constant address space", for a format string that
        is a constant in the constant space: a kernel with prints in the error branches
        of code that calls non-inlined device functions).  Where it does, the kernel is
        emitted without its print calls, with a warning saying so, rather than not at
        all (such prints are mostly in branches that report a failure)."""
        import warnings

        from llvmlite import binding as ll
        from numba.core.errors import NumbaWarning

        from numba_gpux.errors import InternalCompilerError
        from numba_gpux.machines import default_artifact, emit_in_fresh_process

        from .printf_guard import PRINTF, without_calls

        try:
            binary = emit_in_fresh_process(self, ir_text, opt)
        except InternalCompilerError as e:
            if "printf" not in str(e):
                raise
            names = ", ".join(kernels)
            warnings.warn(
                f"numba_gpux: the print() calls of kernel {names} are left out on "
                f"{self.name}: LLVM's SPIR-V back end cannot emit them in this kernel "
                f"({str(e).splitlines()[0].split(': ')[-1]})", NumbaWarning)
            ir_text = without_calls(ir_text, PRINTF)
            art = self._emit_once(ll.parse_assembly(ir_text), kernels, opt, ir_text)
            art.info["prints_left_out"] = True
            return art, ir_text
        art = default_artifact(self, binary, opt, kernels, ir_text)
        art.info["emitted_in_fresh_process"] = True
        return art, ir_text

    def _emit_once(self, module, kernels, opt, ir_text):
        """The SPIR-V of *module* (whose text is *ir_text*), emitted again by a fresh
        process if this one's back end defined a result id twice."""
        from llvmlite import binding as ll

        from numba_gpux.errors import InternalCompilerError
        from numba_gpux.machines import default_emit, emit_in_fresh_process

        from .spirv_ids import duplicate_result_ids

        art = default_emit(self, module, kernels, opt, ir_text)
        if not duplicate_result_ids(art.binary):
            return art
        # the collision needs a new MachineFunction at an earlier one's address: an
        # emission again in this process, after another allocation moved the heap on,
        # usually escapes it for a few milliseconds, where a fresh process costs far more
        for attempt in range(_RETRIES_IN_PROCESS):
            _spacer.append(bytearray(4096 << attempt))
            again = default_emit(self, ll.parse_assembly(ir_text), kernels, opt, ir_text)
            _spacer.clear()
            if not duplicate_result_ids(again.binary):
                again.info["emitted_again"] = attempt + 1
                return again
        art.binary = emit_in_fresh_process(self, ir_text, opt)
        art.info["emitted_in_fresh_process"] = True
        dups = duplicate_result_ids(art.binary)
        if dups:
            raise InternalCompilerError(
                "emit", f"LLVM's SPIR-V back end defined result ids {dups[:8]} more than once, "
                        f"in this process and in a fresh one", ir_text)
        return art

    def finish_module(self, module, kernels):
        """Dynamic shared memory as trailing kernel parameters
        (``OpenCLOptions.dynamic_shared_params``): OpenCL sizes ``__local`` memory at
        launch only through a kernel argument.  Device functions are inlined
        into the kernels first, so every use sits in a kernel body."""
        if not self.opencl.dynamic_shared_params:
            return None
        used = {f.name for f in module.functions
                if f.is_declaration and f.name in _DYNAMIC_SHARED_PARAMS}
        if not used:
            return None
        from llvmlite import binding as ll

        from numba_gpux import irtext
        from numba_gpux.machines import target_machine
        from numba_gpux.passes import run_passes

        for f in module.functions:
            if not f.is_declaration and f.name not in kernels:
                f.add_function_attribute("alwaysinline")
        pb = ll.create_pass_builder(target_machine(self, 3),  # the kept optimizing machine
                                    ll.create_pipeline_tuning_options(speed_level=0))
        mpm = ll.create_new_module_pass_manager()
        mpm.add_always_inliner_pass()
        run_passes(mpm, module, pb)
        text = irtext.calls_to_kernel_params(str(module), kernels, _DYNAMIC_SHARED_PARAMS)
        return ll.parse_assembly(text)


def make_target(device=None, *, features=None) -> OpenCLTarget:
    if features is None:
        features = device.target_features if device is not None else DEFAULT_FEATURES
    return OpenCLTarget(
        name="opencl",
        families=(("spirv_float_add",) if "native_float_add" in features else ()) + ("spirv",),
        tm_flags=FLOAT_ADD_FLAGS if "native_float_add" in features else (),
        triple=TRIPLE,
        data_layout=DATA_LAYOUT,
        addrspaces=SPIRV_ADDRSPACES,
        kernel_cc="spir_kernel",
        # the back end writes the source language as OpSource: without this it says
        # OpenCL C++, and the Intel CPU driver then never vectorizes a kernel along a
        # dimension other than 0 (a 2-D kernel whose consecutive index is grid(2)[1]
        # loads with gathers); as OpenCL C it picks the dimension, as for source
        module_metadata=(("opencl.ocl.version", "i32 2, i32 0"),),
        emit_kind="object",
        artifact_kind="spirv",
        features=frozenset(features),
        index_limits=INDEX_LIMITS,
        # Numba wraps a negative index around with a select on its sign: on an index
        # that varies across work-items (T[j + m - 1], m an argument) the Intel CPU
        # driver then gathers instead of loading a vector; launched with m >= 0 the
        # code knows m's sign and LLVM drops the select (benchmarks/codegen_speed.py,
        # sliding_row)
        int_argument_facts=True,
        # a view's innermost stride, when small: the driver loads x[::2] (and the rows of
        # a[1:-1, 1:-1]) as vectors instead of gathering (codegen_speed.py, strided)
        array_stride_facts=(1, 2, 3, 4, -1),
        # a required sub-group width (compiler.Options.subgroup_size), on devices with
        # cl_intel_required_subgroup_size: LLVM's SPIR-V back end writes this metadata
        # as the SubgroupSize execution mode
        subgroup_size_metadata="intel_reqd_sub_group_size",
        # warp shuffles through work-group memory on CPUs (overlays/subgroups.py)
        split_subgroup_prefix="__gpux_sgsplit_",
        # a kernel that spins on a lock: a vector type as its hint, under which Intel's
        # CPU driver does not vectorize across work-items (datashader's line
        # reductions, a per-pixel lock taken in a loop, hung vectorized)
        serial_lanes_metadata=("vec_type_hint", "<4 x float> undef, i32 1"),
        legal_int_widths=(8, 16, 32, 64),
        # Intel's CPU driver ran an opt=0 kernel whose two loops each had a side exit
        # (tuple indexing's out-of-range branch) with sub-groups of one work-item, the
        # width it requires notwithstanding (warp shuffles gave each lane its own
        # value); rotated, as every optimized kernel's loops are, it vectorizes
        rotate_unoptimized_loops=True,
        # (scalar min/max only: the driver's uniformity analysis, overlays/core.py)
        replace_intrinsics=("llvm.bitreverse.", "llvm.sadd.with.overflow.",
                            "llvm.smul.with.overflow.", "llvm.umul.with.overflow.", "llvm.smax.i",
                            "llvm.smin.i", "llvm.umax.i", "llvm.umin.i", "llvm.fma.f16"),
        workgroup_syncscope="workgroup",
        codegen_flags=NO_LSR_FLAGS,
        ir_rewrites=("split_aggregate_phis", "sitofp_i1", "zero_length_allocas", "byte_allocas",
                     "rematerialize_index_math", "logical_selects", "static_stack",
                     "fuse_contracted", "bool_vector_bits", "paired_accesses",
                     "fneg_sign_bits"),
        extern_prefixes=("_Z", "__spirv"),
        opencl=OpenCLOptions(dynamic_shared_params=True),
    )
