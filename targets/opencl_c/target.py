"""The OpenCL C route: OpenCL C source for devices that do not take SPIR-V.

PoCL 3.x as shipped by pip (``pocl-binary-distribution``, which pyopencl's
loader finds in its own ``.libs``) and Debian, Apple's OpenCL and older
drivers accept OpenCL C source but not SPIR-V.  The target ``opencl-c``
writes each kernel as OpenCL C with :mod:`numba_gpux.targets.cfamily` and builds it
with ``clCreateProgramWithSource``.  Devices without SPIR-V are listed under
it; ``NUMBA_GPUX_OPENCL_C=1`` lists every OpenCL device under it (and prefers
it), and :func:`source_device` gives the source-route twin of any OpenCL
device.
"""

from __future__ import annotations

import dataclasses

from numba_gpux import config
from numba_gpux.targets.cfamily import (ATOMIC_LOOP_RULES, Dialect, SourceDef, SourceTarget,
                              make_source_target, register_dialect)
from numba_gpux.devices import Device
from numba_gpux.language.atomics import ATOMIC_INTRINSICS
from numba_gpux.language.intrinsics import MATH_BINARY, MATH_UNARY, PRINTF_PREFIX, printf_codes
from numba_gpux.overlays import registry
from numba_gpux.targets.opencl.runtime import OpenCLRuntime, quiet_build

__all__ = ["OPENCL_C", "OpenCLCTarget", "make_target", "discover", "source_device",
           "OpenCLSourceRuntime"]

OPENCL_C = register_dialect(Dialect(
    name="opencl-c",
    # neutral numbering (interface.NEUTRAL_ADDRSPACES) -> OpenCL C qualifiers; no generic
    # pointers, so OpenCL C 1.2 drivers take the source
    qualifiers={1: "__global", 3: "__local", 4: "__constant", 5: "__private"},
    kernel_qualifier="__kernel",
    bitcast="as_{t}({x})",
    # ctz is OpenCL C 2.0: the trailing zeros are the ones of (x & -x) - 1 (all ones for 0)
    builtins={"ctz": "popcount(({t})(({t})({0} & ({t})(~{0} + 1u)) - 1u))"},
    implicit_params={"_gpux_dsmem": "__local uchar* _gpux_dsmem",
                     "_gpux_dsmem_bytes": "ulong _gpux_dsmem_bytes"},
    feature_preambles={"fp64": "#pragma OPENCL EXTENSION cl_khr_fp64 : enable",
                       "fp16": "#pragma OPENCL EXTENSION cl_khr_fp16 : enable"},
    source_families=("opencl-c",),
    # the builtin select, not ?: -- the OpenCL CPU compiler of intel-opencl-rt 2026.2.0
    # crashes in SimplifyCFG on ?: selects inside unrolled loops (cuda.reduce's fold kernel)
    select="select({b}, {a}, ({t}){c})",
    # OpenCL C lets the compiler fuse a * b + c by default (the Intel CPU compiler does);
    # Numba's semantics, and the SPIR-V route's ContractionOff, round each operation
    contract_off="#pragma OPENCL FP_CONTRACT OFF",
    contract_on="#pragma OPENCL FP_CONTRACT ON",
    # private arrays as bytes: the OpenCL C compiler of intel-opencl-rt 2026.2 loses or
    # misplaces the second of two stores at computed indices into a `ulong m[8]` (then
    # a load of m[0]; right with -cl-opt-disable, and right with the same accesses to a
    # byte array) -- the source-route twin of legalize.byte_allocas
    private_array="uchar {name}[{bytes}] __attribute__((aligned({align})));",
))

SRC = registry("opencl-c.src")

for _name, _fn in (("thread_idx", "get_local_id"), ("block_idx", "get_group_id"),
                   ("block_dim", "get_local_size"), ("grid_dim", "get_num_groups")):
    SRC.define(f"__gpux_{_name}", SourceDef(f"((ulong){_fn}({{0}}))", llvm_attrs=("nounwind",)))
SRC.define("__gpux_barrier", SourceDef("barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)",
                                       pure=False, llvm_attrs=("convergent", "nounwind")))
for _fn in MATH_UNARY:
    for _sfx in ("f32", "f64"):
        SRC.define(f"__gpux_{_fn}_{_sfx}", SourceDef(f"{_fn}({{0}})", llvm_attrs=("nounwind",)))
for _fn in MATH_BINARY:
    for _sfx in ("f32", "f64"):
        SRC.define(f"__gpux_{_fn}_{_sfx}", SourceDef(f"{_fn}({{0}}, {{1}})", llvm_attrs=("nounwind",)))

# The optimizer needs an LLVM target machine.  NVPTX's address-space numbering *is*
# the neutral convention (0 generic, 1 global, 3 shared, 4 constant, 5 local), so
# optimizing with it changes no pointer's meaning; no NVPTX code is ever generated.
OPT_TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_FEATURES = frozenset({"fp64", "int64_atomics"})


class OpenCLCTarget(SourceTarget):
    pass


def make_target(device=None, *, features=None) -> OpenCLCTarget:
    from numba_gpux.targets.opencl.target import INDEX_LIMITS  # the SPIR-V route's: the same devices launch both

    # the SPIR-V route's devices (Intel's CPU driver miscompiles a negated float kept
    # across a barrier: legalize_fneg.py)
    return make_source_target(OpenCLCTarget, device, features, name="opencl-c",
                              dialect="opencl-c", artifact_kind="opencl-c",
                              default_features=DEFAULT_FEATURES, opt_triple=OPT_TRIPLE,
                              index_limits=INDEX_LIMITS, ir_rewrites=("fneg_sign_bits",))


class OpenCLSourceRuntime(OpenCLRuntime):
    """An OpenCL device's runtime that builds programs from OpenCL C source."""

    def load(self, artifact):
        import pyopencl as cl

        if not artifact.text:
            raise ValueError(f"the OpenCL C route cannot load a {artifact.kind} artifact")
        opts = []
        try:
            if self.cl_device.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT:
                opts.append("-cl-fp32-correctly-rounded-divide-sqrt")
        except Exception:
            pass
        prg = cl.Program(self.context, artifact.text)
        with quiet_build():
            try:
                # cache_dir=False: not through pyopencl's program cache, which keys a
                # binary by device and source alone (a CPU driver's native code for one
                # processor would reach another that reports the same device name) and
                # unpickles what it reads back; the project's cache keeps programs
                # instead (numba_gpux.cache.load_program, keyed by binary_identity)
                return prg.build(options=opts, cache_dir=False)
            except cl.RuntimeError as e:
                from numba_gpux.errors import InternalCompilerError

                raise InternalCompilerError("load", f"the OpenCL driver rejected the "
                                            f"generated OpenCL C: {e}", artifact.text) from None


def source_device(dev: Device, index: int | None = None, kind_index: int | None = None) -> Device:
    """The OpenCL C route twin of an OpenCL device (same driver device, target ``opencl-c``)."""
    rt = OpenCLSourceRuntime(dev.runtime.cl_device)
    rt._ctx, rt._queue = dev.runtime.context, dev.runtime.queue  # arrays stay usable on both
    return dataclasses.replace(dev, target_name="opencl-c", runtime=rt, _target=None,
                               index=dev.index if index is None else index,
                               kind_index=dev.kind_index if kind_index is None else kind_index)


def discover() -> list[Device]:
    """OpenCL devices through OpenCL C: those without SPIR-V (all with NUMBA_GPUX_OPENCL_C=1)."""
    from numba_gpux.targets.opencl.drivers import cl_devices, make_device

    every = config.opencl_c_route()
    found: list[Device] = []
    counts: dict = {}
    for plat, dev, il in cl_devices():
        if "SPIR-V" in il and not every:
            continue
        try:
            if not dev.compiler_available:
                continue
        except Exception:
            pass
        found.append(make_device("opencl-c", plat, dev, il, OpenCLSourceRuntime(dev),
                                 len(found), counts))
    return found


# -- sub-groups (cl_khr_subgroups and the khr shuffle / non-uniform extensions) -----------
# Sub-group operations must run on every lane: they are never folded into a
# conditional expression (pure=False) and are convergent for the optimizer.
_SG = ("convergent", "nounwind")
for _name, _fn in (("lane_id", "get_sub_group_local_id"), ("size", "get_sub_group_size"),
                   ("id", "get_sub_group_id"), ("count", "get_num_sub_groups")):
    SRC.define(f"__gpux_sg_{_name}", SourceDef(f"((uint){_fn}())", pure=False, llvm_attrs=_SG, feature="subgroups"))
_SGT = {"i32": ("uint", "int"), "u32": ("uint", "uint"), "i64": ("ulong", "long"),
        "u64": ("ulong", "ulong"), "f32": ("float", "float"), "f64": ("double", "double")}
_SG_OK = {"shuffle_up": "get_sub_group_local_id() >= d", "shuffle_down":
          "get_sub_group_local_id() + d < get_sub_group_size()",
          "shuffle_xor": "(get_sub_group_local_id() ^ d) < get_sub_group_size()"}
for _kind in ("shuffle", "shuffle_up", "shuffle_down", "shuffle_xor"):
    for _sfx in ("i32", "i64", "f32", "f64"):
        _st = _SGT[_sfx][0]
        _h = f"_gpux_sg_{_kind}_{_sfx}"
        _ok = _SG_OK.get(_kind)
        _body = (f"{_st} r = sub_group_{_kind}(v, d); return ({_ok}) ? r : v;" if _ok
                 else f"return sub_group_{_kind}(v, d);")
        SRC.define(f"__gpux_sg_{_kind}_{_sfx}", SourceDef(
            f"{_h}({{0}}, {{1}})", helper=f"static inline {_st} {_h}({_st} v, uint d) {{ {_body} }}",
            pure=False, llvm_attrs=_SG, feature="subgroups"))
SRC.define("__gpux_sg_barrier", SourceDef("sub_group_barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)",
                                          pure=False, llvm_attrs=_SG, feature="subgroups"))
SRC.define("__gpux_sg_all", SourceDef("((uint)(sub_group_all((int){0}) != 0))", pure=False, llvm_attrs=_SG, feature="subgroups"))
SRC.define("__gpux_sg_any", SourceDef("((uint)(sub_group_any((int){0}) != 0))", pure=False, llvm_attrs=_SG, feature="subgroups"))
SRC.define("__gpux_sg_ballot", SourceDef("_gpux_sg_ballot({0})", helper=(
    "static inline ulong _gpux_sg_ballot(uint p) { uint4 m = sub_group_ballot((int)p); "
    "return (ulong)m.x | ((ulong)m.y << 32); }"), pure=False, llvm_attrs=_SG, feature="subgroups"))
for _op in ("add", "mul", "min", "max", "and", "or", "xor"):
    for _sfx, (_st, _sg) in _SGT.items():
        if _op in ("and", "or", "xor") and _sfx[0] == "f":
            continue
        _fn = f"sub_group_reduce_{_op}" if _op in ("add", "min", "max") else \
            f"sub_group_non_uniform_reduce_{_op}"
        SRC.define(f"__gpux_sg_reduce_{_op}_{_sfx}", SourceDef(
            f"(({_st}){_fn}(({_sg}){{0}}))", pure=False, llvm_attrs=_SG, feature="subgroups"))

# -- fences ---------------------------------------------------------------------------------
SRC.define("__gpux_fence_block", SourceDef("mem_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)",
                                           pure=False, llvm_attrs=("nounwind",)))
SRC.define("__gpux_fence_device", SourceDef("mem_fence(CLK_GLOBAL_MEM_FENCE)", pure=False,
                                            llvm_attrs=("nounwind",)))
SRC.define("__gpux_fence_system", SourceDef("mem_fence(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)",
                                            pure=False, llvm_attrs=("nounwind",)))

# -- barriers with a predicate -------------------------------------------------------------
# OpenCL C 1.2 has no work-group collectives (work_group_reduce_add is 2.0): the items
# count into a __local word that the first item clears.  Three barriers: the first is
# the barrier itself (and keeps a previous call's readers ahead of the clearing), the
# second orders the clearing before the counting, the third the counting before the reads.
_BARRIER_COUNT = """static inline uint _gpux_barrier_count(bool p, volatile __local uint* c) {
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  if (get_local_id(0) == 0 && get_local_id(1) == 0 && get_local_id(2) == 0) *c = 0u;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (p) atomic_inc(c);
  barrier(CLK_LOCAL_MEM_FENCE);
  return *c;
}"""
for _op, _expr in (("count", "_gpux_barrier_count({0} != 0u, &_gpux_bpred)"),
                   ("and", "((uint)(_gpux_barrier_count({0} == 0u, &_gpux_bpred) == 0u))"),
                   ("or", "((uint)(_gpux_barrier_count({0} != 0u, &_gpux_bpred) != 0u))")):
    SRC.define(f"__gpux_barrier_{_op}", SourceDef(
        _expr, helper=_BARRIER_COUNT, locals=("__local uint _gpux_bpred;",), pure=False,
        llvm_attrs=("convergent", "nounwind")))

# -- bit reversal (OpenCL C 1.2 has no bit_reverse) ------------------------------------------
_BREV = """static inline uint _gpux_brev32(uint x) {
  x = ((x >> 1) & 0x55555555u) | ((x & 0x55555555u) << 1);
  x = ((x >> 2) & 0x33333333u) | ((x & 0x33333333u) << 2);
  x = ((x >> 4) & 0x0f0f0f0fu) | ((x & 0x0f0f0f0fu) << 4);
  x = ((x >> 8) & 0x00ff00ffu) | ((x & 0x00ff00ffu) << 8);
  return (x >> 16) | (x << 16);
}
static inline ulong _gpux_brev64(ulong x) {
  return ((ulong)_gpux_brev32((uint)x) << 32) | (ulong)_gpux_brev32((uint)(x >> 32));
}"""
SRC.define("__gpux_brev_i32", SourceDef("_gpux_brev32({0})", helper=_BREV, llvm_attrs=("nounwind",)))
SRC.define("__gpux_brev_i64", SourceDef("_gpux_brev64({0})", helper=_BREV, llvm_attrs=("nounwind",)))

# -- dynamic shared memory: a trailing __local parameter and its size (as the SPIR-V
# target's finishing step adds them; OpenCLRuntime.prepare/launch pass cl.LocalMemory)
_DSMEM = ("_gpux_dsmem", "_gpux_dsmem_bytes")
SRC.define("__gpux_dynamic_shared", SourceDef("_gpux_dsmem", implicit=_DSMEM, result_space=3,
                                              llvm_attrs=("nounwind",)))
SRC.define("__gpux_dynamic_shared_bytes", SourceDef("_gpux_dsmem_bytes", implicit=_DSMEM,
                                                    llvm_attrs=("nounwind",)))

# -- print(): OpenCL C printf, the format a string literal -----------------------------------
def _printf_def(name: str):
    codes = printf_codes(name)
    if codes is None:
        return None
    args = "".join(f", {'(long)' if c == 'l' else ''}{{{k + 1}}}" for k, c in enumerate(codes))
    return SourceDef(f"((uint)printf({{0}}{args}))", cstring_args=(0,), pure=False,
                     llvm_attrs=("nounwind",))


SRC.define_family(PRINTF_PREFIX, _printf_def)

# -- atomics ----------------------------------------------------------------------------------
# OpenCL C 1.2 atomic_* (32-bit, global and local memory) and atom_* (64-bit,
# cl_khr_int64_base/extended_atomics) where the operation exists with the portable
# meaning; everything else (float arithmetic and min/max with their NaN rules, CUDA's
# wrapping inc/dec) is a compare-and-swap loop on the bits, one helper per address space.
_INT64_PRAGMAS = ("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
                  "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable")
_NATIVE = ("add", "sub", "and", "or", "xor", "exch", "min", "max")
_SIGNED_T = {"i32": "int", "u32": "uint", "i64": "long", "u64": "ulong"}


def _atomic_def(name: str, op: str, sfx: str) -> SourceDef:
    bits = int(sfx[1:])
    ut = "uint" if bits == 32 else "ulong"                  # the storage type of the bits
    t = {"f32": "float", "f64": "double"}.get(sfx, ut)      # the storage type of values
    pre = "atomic_" if bits == 32 else "atom_"
    cas = pre + "cmpxchg"
    ptr = f"(volatile {{q0}} {ut}*){{0}}"
    kw = dict(pure=False, ptr_spaces=(1, 3), llvm_attrs=("nounwind",),
              feature="int64_atomics" if bits == 64 else "")
    pragma = _INT64_PRAGMAS + "\n" if bits == 64 else ""
    if sfx[0] == "f":
        to, frm = f"as_{ut}", f"as_{t}"
        if op == "exch":
            return SourceDef(f"{frm}({pre}xchg({ptr}, {to}({{1}})))", helper=pragma.strip(), **kw)
        if op == "cas":
            return SourceDef(f"{frm}({cas}({ptr}, {to}({{1}}), {to}({{2}})))", helper=pragma.strip(), **kw)
    else:
        to = frm = ""
        st = _SIGNED_T[sfx]
        sptr = f"(volatile {{q0}} {st}*){{0}}"
        if op == "cas":
            return SourceDef(f"(({ut}){cas}({sptr}, ({st}){{1}}, ({st}){{2}}))", helper=pragma.strip(), **kw)
        if op in _NATIVE:
            fn = pre + ("xchg" if op == "exch" else op)
            return SourceDef(f"(({ut}){fn}({sptr}, ({st}){{1}}))", helper=pragma.strip(), **kw)
    store, new = ATOMIC_LOOP_RULES[op]
    h = f"_gpux_{name[len('__gpux_'):]}_{{s0}}"
    helper = (f"{pragma}static inline {t} {h}(volatile {{q0}} uchar* p_, {t} v) {{\n"
              f"  volatile {{q0}} {ut}* p = (volatile {{q0}} {ut}*)p_;\n"
              f"  {ut} old = *p;\n"
              f"  while (1) {{\n"
              f"    {t} o = {frm}(old);\n"
              f"    if (!({store})) return o;\n"
              f"    {ut} seen = {cas}(p, old, {to}(({t})({new})));\n"
              f"    if (seen == old) return o;\n"
              f"    old = seen;\n"
              f"  }}\n}}")
    return SourceDef(f"{h}({{0}}, {{1}})", helper=helper, **kw)


for _name, (_op, _sfx) in ATOMIC_INTRINSICS.items():
    SRC.define(_name, _atomic_def(_name, _op, _sfx))
