"""CUDA target data: NVPTX 64-bit, compute capability -> sm_XX and PTX ISA version.

The neutral IR's address spaces are NVPTX's, so ``map_ir`` changes nothing.
Code generation is LLVM's NVPTX back end (through llvmlite); ``ptxas``, when
installed, turns the PTX into a cubin for the same ``sm_XX``.
"""

from __future__ import annotations

from numba_gpux.errors import GpuxUserError
from numba_gpux.interface import (NEUTRAL_ADDRSPACES, Artifact, IndexLimits, Target, TargetOptions,
                                  target_dataclass)

from . import overlays  # noqa: F401  (fills the "nvptx" and "cuda" registries)
from .ptxisa import LLVM_MAX_PTX, MIN_PTX_ISA, ptx_isa_for

__all__ = ["CUDATarget", "CUDAOptions", "make_target", "TRIPLE", "DATA_LAYOUT", "DEFAULT_CC", "INDEX_LIMITS",
           "ptx_isa_for", "LLVM_MAX_PTX"]

TRIPLE = "nvptx64-nvidia-cuda"
#: CUDA's block and grid limits on every compute capability since 3.0
INDEX_LIMITS = IndexLimits(block=(1024, 1024, 64), grid=(2 ** 31 - 1, 65535, 65535))
#: 32-bit pointers into shared (3), constant (4) and local (5) memory, whose windows
#: are below 4 GiB: their addresses take one register instead of two (see TM_FLAGS)
DATA_LAYOUT = ("e-p3:32:32-p4:32:32-p5:32:32-p6:32:32-p7:32:32-i64:64-i128:128-i256:256"
               "-v16:16-v32:32-n16:32:64")
#: compute capability used when no device is given (the oldest that CUDA 13's ptxas accepts)
DEFAULT_CC = (7, 5)
#: symbols a finished CUDA module may still declare (resolved by ptxas or the driver)
_EXTERN_PREFIXES = ("__nv_", "vprintf", "__assertfail", "malloc", "free")


#: LLVM code-generation flags set while the NVPTX back end emits, with the value each
#: returns to afterwards.  ``-disable-lsr``: Loop Strength Reduction turns a runtime-
#: unrolled loop's address arithmetic into one pointer induction variable per unrolled
#: access and array (8 live 64-bit pointers in a 4x unrolled copy loop), which ptxas
#: keeps in registers: grid_stride_copy float64 needed 38 registers with it and 26
#: without (numba-cuda: 28).  ptxas strength-reduces addresses itself.
#: ``-spec-exec-max-not-hoisted=1`` (LLVM's default 5): Speculative Execution, in the
#: NVPTX back end's IR passes, hoists a conditional block's cheap instructions into
#: the block before it even when the block's loads and stores stay behind; hoisted
#: addresses then stay live across the branch and across any barrier on the way
#: (atomic_add_shared float64: 16 registers, 14 with it; numba-cuda 14).  Blocks with
#: at most one instruction left behind are still flattened into selects.
CODEGEN_FLAGS = (("-disable-lsr=true", "-disable-lsr=false"),
                 ("-spec-exec-max-not-hoisted=1", "-spec-exec-max-not-hoisted=5"))

#: LLVM flags read when a target machine is created (machines._create_target_machine):
#: ``-nvptx-short-ptr`` gives the NVPTX target machine the 32-bit shared, constant and
#: local pointers of DATA_LAYOUT (clang's ``-fcuda-short-ptr``).  atomic_add_shared
#: int32 used 15 registers with 64-bit shared addresses, numba-cuda's 14.
TM_FLAGS = (("-nvptx-short-ptr=true", "-nvptx-short-ptr=false"),)

#: PTX's target suffixes: "a" architecture-specific (the code runs on that compute
#: capability only; sm_90a's wgmma, sm_100a's tcgen05), "f" family-specific (PTX 8.8)
ARCH_SUFFIXES = ("a", "f")
#: the capabilities whose "a"/"f" targets have the tcgen05 instructions (PTX ISA 8.6)
TCGEN05_CCS = ((10, 0), (10, 1), (10, 3), (11, 0))

#: the function attribute and value that flush float32 denormals (inputs and results)
FTZ_ATTRIBUTE, FTZ_MODE = "denormal-fp-math-f32", "preserve-sign,preserve-sign"


def _parse_cc(cc) -> tuple[tuple[int, int], str]:
    """((major, minor), arch suffix) from ``(9, 0)``, ``"9.0"``, ``"sm_90"``, ``"90"``,
    or with PTX's architecture-specific (``"sm_90a"``, ``"10.0a"``, ``(10, 0, "a")``) or
    family-specific (``"sm_100f"``) suffix."""
    arch = ""
    try:
        if isinstance(cc, tuple) and len(cc) == 3 and cc[2] in ARCH_SUFFIXES:
            cc, arch = cc[:2], cc[2]
        elif isinstance(cc, str):
            s = cc.lower().removeprefix("sm_").removeprefix("compute_")
            if s[-1:] in ARCH_SUFFIXES:
                s, arch = s[:-1], s[-1]
            cc = s.split(".") if "." in s else (s[:-1], s[-1:])
        major, minor = (int(x) for x in cc)
    except (TypeError, ValueError):
        raise GpuxUserError(f"cc must be (major, minor), e.g. cc=(9, 0) or cc=\"sm_100a\", "
                            f"not {cc!r}") from None
    return (major, minor), arch


@target_dataclass
class CUDAOptions(TargetOptions):
    """What only the CUDA target reads."""

    #: compute capability (major, minor): the PTX's ``.target sm_XX`` and ptxas's GPU
    cc: tuple[int, int] = DEFAULT_CC
    #: the PTX ISA version (major, minor) the PTX declares; None: the newest for ``cc``
    ptx_version: tuple[int, int] | None = None
    #: "" or a suffix of ARCH_SUFFIXES: ``.target sm_XXa`` / ``sm_XXf`` (and ptxas's GPU)
    arch: str = ""
    #: True: ptxas (where installed) turns the PTX into a cubin for the same ``sm_XX``
    cubin: bool = True


@target_dataclass
class CUDATarget(Target):
    """NVPTX code for one compute capability (``CUDAOptions``)."""

    cuda: CUDAOptions = CUDAOptions()

    @property
    def cc(self) -> tuple[int, int]:
        return self.cuda.cc

    @property
    def ptx_version(self) -> tuple[int, int]:
        ptx = self.cuda.ptx_version
        return ptx if ptx is not None else ptx_isa_for(self.cc)

    def map_ir(self, text: str) -> str:
        """Identity: the neutral address spaces are NVPTX's."""
        return text

    def finish_module(self, module, kernels) -> None:
        """Link the libdevice functions the module calls, with the module flag
        ``nvvm-reflect-ftz`` (read by the NVVMReflect pass during optimize) saying
        whether the module's code flushes float32 denormals: 1 where its kernels
        carry the attribute of ``fastmath_function_attributes``, else 0."""
        from numba_gpux import irtext

        # the declarations read from the module's text: one print costs less than
        # walking its functions through the binding (two foreign calls each)
        text = str(module)
        wanted = {n for n in irtext.declared_functions(text) if n.startswith("__nv_")} \
            if "@__nv_" in text else ()
        if not wanted:
            return None  # no libdevice call: the module (and its parse) is not needed
        from . import libdevice

        ftz = f'"{FTZ_ATTRIBUTE}"="{FTZ_MODE}"'
        libdevice.link_needed(module, self.triple, self.data_layout, wanted,
                              ftz=ftz if ftz in text else "")
        return None

    def validate(self, module, kernels) -> list[str]:
        try:  # by name: walking every function costs two foreign calls each
            left = module.get_function("__nvvm_reflect").is_declaration
        except NameError:
            left = False
        return ["__nvvm_reflect is still called after optimization"] if left else []

    def emit(self, module, kernels, opt: int) -> Artifact:
        """PTX from LLVM's NVPTX back end (the shared emission, with this target's
        flags); a cubin from ptxas where it is installed, or, for a module that links
        foreign code (``numba_gpux.linking``'s records), from the linker (``_link``)."""
        from numba_gpux import linking
        from numba_gpux.machines import default_emit

        art = default_emit(self, module, kernels, opt)
        info = {"cc": self.cc, "sm": self.cpu, "ptx_version": self.ptx_version}
        recs = linking.read(art.llvm_ir) if f"!{linking.METADATA}" in art.llvm_ir else ()
        cubin = None
        if recs:
            # foreign code (cuda.jit(link=...), declare_device): linker.py
            cubin = self._link(art.text, kernels, recs, opt, info)
        elif self.cuda.cubin:
            from . import toolkit

            cubin = toolkit.ptxas_cubin(art.text, self.cc, opt, arch=self.cuda.arch)
        return Artifact(self.artifact_kind, cubin, art.text, art.kernels, llvm_ir=art.llvm_ir,
                        info=info)

    def _link(self, ptx: str, kernels, recs, opt: int, info: dict) -> bytes | None:
        """The cubin of *ptx* linked with the code of the records *recs*, through
        nvJitLink where installed.  ``info`` records what was linked (``"link"``: (kind,
        name, sha256) of each input) and how (``"linker"``); without nvJitLink, the
        inputs themselves (``"link_images"``, CUDA C compiled to PTX), for the driver's
        linker at load.  No cubin is asked for (``compile_ptx``): the PTX alone."""
        from numba_gpux import linking

        from . import linker

        info["link"] = tuple(linking.inputs_of(recs))
        info["link_symbols"] = tuple(linking.symbols_of(recs))
        if not self.cuda.cubin:
            return None
        images = linker.prepare(recs, self.cc, self.cuda.arch)
        info["link_images"] = tuple(images)
        name = kernels[0] if kernels else "module"
        if linker.have_nvjitlink():
            cubin, log = linker.link_nvjitlink(ptx, name, images, self.cc, self.cuda.arch, opt)
            info["linker"], info["link_log"] = "nvjitlink", log
            return cubin
        info["linker"] = "driver"
        return None


def make_target(device=None, *, cc=None, ptx_version=None, cubin: bool = True) -> CUDATarget:
    """The CUDA target for *device*'s compute capability, or for *cc* (e.g. ``(9, 0)``,
    or ``"sm_100a"`` for the architecture-specific instructions of 10.0)."""
    if cc is None:
        cc = getattr(device, "limits", {}).get("compute_capability") if device is not None else None
    cc, arch = _parse_cc(cc) if cc is not None else (DEFAULT_CC, "")
    if device is not None and not arch and cc in TCGEN05_CCS:
        # code for a device runs on that device alone: compiled for its
        # architecture-specific target, its kernels may use what only that has (tcgen05)
        arch = "a"
    if arch and cc < ((9, 0) if arch == "a" else (10, 0)):
        raise GpuxUserError(f"compute capability sm_{cc[0]}{cc[1]}{arch} does not exist: PTX's "
                            f"architecture-specific targets start at sm_90a, its "
                            f"family-specific ones at sm_100f")
    ptx = tuple(ptx_version) if ptx_version is not None else max(
        ptx_isa_for(cc), (8, 8) if arch == "f" else (0, 0))
    if ptx < MIN_PTX_ISA:
        raise GpuxUserError(f"PTX ISA {ptx[0]}.{ptx[1]} is too old: numba-gpux's CUDA code needs "
                            f"{MIN_PTX_ISA[0]}.{MIN_PTX_ISA[1]} or newer (warp-synchronous "
                            f"instructions)")
    if ptx > LLVM_MAX_PTX:
        raise GpuxUserError(f"PTX ISA {ptx[0]}.{ptx[1]} is newer than LLVM's NVPTX back end "
                            f"emits (at most {LLVM_MAX_PTX[0]}.{LLVM_MAX_PTX[1]})")
    features = {"fp64", "int64_atomics", "float_atomics", "subgroups"}
    if cc >= (5, 3):
        features.add("fp16")
    # the families that stand for instruction sets, newest first (overlays/nvinstr.py)
    fams = tuple(name for name, has in (
        ("nvptx.sm100a", bool(arch) and cc in TCGEN05_CCS and ptx >= (8, 6)),
        ("nvptx.sm90", cc >= (9, 0) and ptx >= (8, 0)),
        ("nvptx.sm80", cc >= (8, 0) and ptx >= (7, 0)),
        ("nvptx.sm75", cc >= (7, 5) and ptx >= (7, 0)),
        ("nvptx.sm70", cc >= (7, 0))) if has)
    return CUDATarget(
        name="cuda",
        families=fams + ("nvptx",),
        triple=TRIPLE,
        data_layout=DATA_LAYOUT,
        addrspaces=NEUTRAL_ADDRSPACES,
        kernel_cc="ptx_kernel",
        emit_kind="assembly",
        artifact_kind="ptx",
        cpu=f"sm_{cc[0]}{cc[1]}{arch}",
        llvm_features=f"+ptx{ptx[0]}{ptx[1]}",
        features=frozenset(features),
        globals_addrspace=1,
        index_limits=INDEX_LIMITS,
        # launch bounds and register limits: NVPTX writes .maxntid, .minnctapersm,
        # .maxclusterrank and .maxnreg from these
        kernel_bound_attributes=(("max_threads", "nvvm.maxntid"),
                                 ("min_blocks", "nvvm.minctasm"),
                                 ("max_cluster_blocks", "nvvm.maxclusterrank"),
                                 ("max_registers", "nvvm.maxnreg")),
        # fastmath flushes float32 denormals to zero, as numba.cuda's (NVVM's -ftz=1):
        # NVPTX then emits the .ftz forms (div.approx.ftz.f32, sqrt.approx.ftz.f32,
        # add.ftz.f32), and libdevice's FTZ paths are taken (finish_module reads the
        # mode from the module)
        fastmath_function_attributes=((FTZ_ATTRIBUTE, FTZ_MODE),),
        # bar.sync waits for the threads of the block that have not exited (sm_70 on;
        # numba.cuda kernels rely on it), so no kernel needs the barrier rewrite
        barriers_skip_exited=True,
        subgroup_width=32,  # warps: Options.subgroup_size 32 holds as is
        tm_flags=TM_FLAGS,
        # its code generation runs LLVM's InferAddressSpaces (at opt > 0) before
        # instruction selection: the compiler's own inference on the text, a print and
        # a parse of every module, gave the same PTX
        backend_infers_address_spaces=True,
        # the inliner's stack saves around inlined NumPy code: NVPTX writes them only
        # for sm_52 and PTX 7.3 on, and ends the process before (legalize_stack.py)
        ir_rewrites=("static_stack",),
        extern_prefixes=_EXTERN_PREFIXES,
        # foreign code linked with kernels (cuda.jit(link=...), declare_device): CUDA C
        # through NVRTC, the rest as it is, by nvJitLink or the driver (linker.py)
        link_kinds=frozenset(("cu", "ptx", "cubin", "fatbin", "object", "archive", "ltoir")),
        recursion=True,  # PTX calls recursively on a per-thread stack (ptxas sizes it)
        device_malloc=True,  # arrays that kernels make: CUDA's device malloc
        codegen_flags=CODEGEN_FLAGS,
        # the NVPTX back end emits module after module through one target machine
        # (machines.emit_machine)
        reusable_emit_machine=True,
        cuda=CUDAOptions(cc=cc, ptx_version=ptx, cubin=bool(cubin), arch=arch),
    )
