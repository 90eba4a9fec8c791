"""numba-cuda-mlir's ``cuda.intrin``: NVIDIA-instruction intrinsics (TMA bulk copies,
mbarriers, thread-block clusters, tcgen05 tensor memory) and a few portable helpers,
plus ``inline_ptx``.

Each NVIDIA-instruction name lowers to a portable intrinsic ``__gpux_nv_<name>``
whose contract (``language.intrinsics.INTRINSICS``) says which PTX instruction it is
and which sm it needs; the CUDA target defines it (``targets/cuda/overlays/nvinstr.py``)
for the compute capabilities and PTX ISA versions that have the instruction.  A kernel
compiled for a target without it (OpenCL, Metal, an older sm) fails to compile with a
ValidationError naming the intrinsic, the kernel's Python line, the target and the sm
the instruction needs.  Nothing here knows which target runs.

Portable names run on every target: ``barrier`` (``syncthreads``), ``warp_idx``,
``elect_sync``/``elect_sync_mask`` (``elect.sync`` on sm_90; elsewhere the lowest
active lane of the mask, from a ballot), ``nanosleep``, ``ffs``/``ffsll``/``__nv_ffs``/
``__nv_ffsll``, ``round_ndigits_*`` and the tcgen05 descriptor encoders.

**Pointer arguments** (``ptr`` in numba-cuda-mlir's stubs, where its kernels pass
``ctypes.pointer(array)``): pass the array itself (a shared array, a device array or
a view of one: the address of its first element), a pointer (``CPointer``) or an
integer holding a generic address (a tensor map's device address passed as
``uint64``).  Which memory each must be in is the PTX instruction's rule, stated on
each name (mbarriers and bulk-copy destinations are in shared memory, bulk-copy
sources and store destinations in global memory).  ``mapa`` returns the same kind:
for an array, the same array in the other block of the cluster.
"""

from __future__ import annotations

import builtins

from llvmlite import ir
from numba.core import types
from numba.core.errors import TypingError
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import AbstractTemplate, Registry, signature

import numba_gpux as _gpux

from ..context import add_registries
from ..dispatcher import jit as _gpux_jit
from ..language import stubs as _stubs
from ..language.intrinsics import (
    INTRINSICS, PTX_OPERAND_TYPES, Intrinsic, call as _call, ptx_name,
)
from ..overlays import SHARED, Deferred, registry

__all__ = [
    "elect_sync", "elect_sync_mask", "mbarrier_init", "mbarrier_try_wait", "barrier",
    "mbarrier_arrive_expect_tx", "cp_async_bulk_load", "fence_mbarrier_init",
    "cp_async_bulk_store", "cp_async_bulk_tensor_2d", "cp_async_bulk_tensor_2d_multicast",
    "cluster_arrive_relaxed", "cluster_wait", "block_idx_in_cluster", "cluster_ctarank", "mapa",
    "warp_idx", "prefetch_tensormap", "encode_instr_descriptor", "encode_smem_descriptor",
    "breakpoint", "nanosleep", "round_ndigits_type_f32_type_i32",
    "round_ndigits_type_f32_type_i64", "round_ndigits_type_f64_type_i32",
    "round_ndigits_type_f64_type_i64", "__nv_ffs", "__nv_ffsll", "ffs", "ffsll",
    "tcgen05_alloc", "tcgen05_mma", "tcgen05_commit_arrive", "tcgen05_ld", "tcgen05_ld_x2",
    "tcgen05_dealloc", "tcgen05_relinquish_alloc_permit", "tcgen05_alloc_2cta",
    "tcgen05_mma_2cta", "tcgen05_dealloc_2cta", "tcgen05_relinquish_alloc_permit_2cta",
    "inline_ptx", "REQUIREMENTS",
]

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.cuda.intrin")

_PTR = ir.PointerType()
_I32 = ir.IntType(32)
_LL = {"ptr": _PTR, "i16": ir.IntType(16), "i32": _I32, "i64": ir.IntType(64)}
_NB = {"i16": types.int16, "i32": types.int32, "i64": types.int64}

SM80 = "CUDA sm_80 or newer (PTX ISA 7.0)"
SM90 = "CUDA sm_90 or newer (PTX ISA 8.0)"
SM100A = ("CUDA sm_100a, sm_103a or sm_110a (an architecture-specific target such as "
          "cc=\"sm_100a\", or its \"f\" family; PTX ISA 8.6)")
ANY_SM = "the CUDA target (any sm)"

# name -> (PTX instruction, needs, parameters, result, what it does)
_SPECS: dict[str, tuple] = {
    "mbarrier_init": (
        "mbarrier.init.b64", SM80, ("ptr", "i32"), None,
        "mbarrier_init(bar, count): initialize the 64-bit mbarrier object at *bar* (in "
        "shared memory, e.g. a shared int64 array of one element) to expect *count* "
        "arrivals per phase."),
    "mbarrier_try_wait": (
        "mbarrier.try_wait.parity.b64", SM90, ("ptr", "i32"), None,
        "mbarrier_try_wait(bar, phase): wait until the phase of the mbarrier at *bar* whose "
        "parity is *phase* (0 or 1) has completed (a loop of try_wait)."),
    "mbarrier_arrive_expect_tx": (
        "mbarrier.arrive.expect_tx.b64", SM90, ("ptr", "i32"), None,
        "mbarrier_arrive_expect_tx(bar, bytes): arrive on the mbarrier at *bar* and make its "
        "current phase also wait for *bytes* bytes of asynchronous copies."),
    "fence_mbarrier_init": (
        "fence.mbarrier_init.release.cluster", SM90, (), None,
        "fence_mbarrier_init(): make earlier mbarrier_init calls visible to the cluster "
        "(before other blocks or the bulk copies use the barriers)."),
    "cp_async_bulk_load": (
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", SM90,
        ("ptr", "ptr", "ptr", "i32"), None,
        "cp_async_bulk_load(dst, src, bar, bytes): copy *bytes* bytes (a multiple of 16; "
        "addresses 16-byte aligned) from global memory at *src* to shared memory at *dst*, "
        "asynchronously; completion is counted on the mbarrier at *bar* (shared)."),
    "cp_async_bulk_store": (
        "cp.async.bulk.global.shared::cta.bulk_group", SM90, ("ptr", "ptr", "i32"), None,
        "cp_async_bulk_store(dst, src, bytes): copy *bytes* bytes from shared memory at *src* "
        "to global memory at *dst* asynchronously, in a bulk async-group: commit and wait for "
        "it with inline_ptx(\"cp.async.bulk.commit_group;\") and "
        "inline_ptx(\"cp.async.bulk.wait_group 0;\") before the shared memory is reused."),
    "cp_async_bulk_tensor_2d": (
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes", SM90,
        ("ptr", "ptr", "i32", "i32", "ptr"), None,
        "cp_async_bulk_tensor_2d(dst, tensor_map, x, y, bar): TMA: copy the box at "
        "coordinates (x, y) of the 2-D tensor that the 128-byte CUtensorMap at *tensor_map* "
        "(its device address as an integer, or a pointer to it; in global, constant or "
        "parameter memory) describes, into shared memory at *dst*; completion counted on the "
        "mbarrier at *bar*."),
    "cp_async_bulk_tensor_2d_multicast": (
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        ".multicast::cluster.cta_group::2", SM100A, ("ptr", "ptr", "i32", "i32", "ptr", "i16"),
        None,
        "cp_async_bulk_tensor_2d_multicast(dst, tensor_map, x, y, bar, cta_mask): "
        "cp_async_bulk_tensor_2d into the same shared-memory offset of every block of the "
        "cluster whose rank is set in the 16-bit *cta_mask*, for a pair of blocks working "
        "together (cta_group::2)."),
    "cluster_arrive_relaxed": (
        "barrier.cluster.arrive.relaxed", SM90, (), None,
        "cluster_arrive_relaxed(): arrive at the cluster barrier, without ordering memory."),
    "cluster_wait": (
        "barrier.cluster.wait", SM90, (), None,
        "cluster_wait(): wait until every thread of the cluster has arrived."),
    "block_idx_in_cluster": (
        "mov.u32 %clusterid.x", SM90, (), "i32",
        "block_idx_in_cluster() -> int32: numba-cuda-mlir's name for %clusterid.x, the index "
        "(x) of this block's cluster in the grid (the block's rank in its cluster is "
        "cluster_ctarank())."),
    "cluster_ctarank": (
        "mov.u32 %cluster_ctarank", SM90, (), "i32",
        "cluster_ctarank() -> int32: this block's rank in its cluster, 0 to size - 1."),
    "mapa": (
        "mapa.u64", SM90, ("ptr", "i32"), "ptr",
        "mapa(p, rank): the address of the variable at shared-memory address *p* in the block "
        "of rank *rank* of the cluster (distributed shared memory): for an array, the same "
        "array in that block (index it: mapa(a, 1)[0] = x); for a pointer, a pointer; for an "
        "integer address, a uint64 address."),
    "prefetch_tensormap": (
        "prefetch.tensormap", SM90, ("ptr",), None,
        "prefetch_tensormap(tensor_map): prefetch the CUtensorMap at *tensor_map* into the "
        "cache."),
    "breakpoint": (
        "brkpt", ANY_SM, (), None,
        "breakpoint(): suspend the thread for a debugger (PTX brkpt)."),
    "tcgen05_mma": (
        "tcgen05.mma.cta_group::1.kind::f16", SM100A, ("i32", "i64", "i64", "i32", "i32"), None,
        "tcgen05_mma(d_tmem, a_desc, b_desc, instr_desc, accumulate): D (tensor memory at "
        "d_tmem) = A * B (+ D where *accumulate* is non-zero), A and B described by shared-"
        "memory descriptors (encode_smem_descriptor), the shape and types by *instr_desc* "
        "(encode_instr_descriptor); issued by one thread."),
    "tcgen05_mma_2cta": (
        "tcgen05.mma.cta_group::2.kind::f16", SM100A, ("i32", "i64", "i64", "i32", "i32"), None,
        "tcgen05_mma_2cta(...): tcgen05_mma over a pair of blocks (cta_group::2)."),
    "tcgen05_commit_arrive": (
        "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64", SM100A,
        ("ptr",), None,
        "tcgen05_commit_arrive(bar): arrive on the mbarrier at *bar* once the tcgen05 "
        "operations this thread issued have completed."),
    "tcgen05_ld_x2": (
        "tcgen05.ld.sync.aligned.32x32b.x2.b32 + tcgen05.wait::ld", SM100A, ("i32",), "f32x2",
        "tcgen05_ld_x2(taddr) -> (float32, float32): two 32-bit values of tensor memory at "
        "*taddr* (shape 32x32b), read by the whole warp; waits for the load."),
    "tcgen05_ld": (
        "tcgen05.ld.sync.aligned.32x32b.x2.b32 + tcgen05.wait::ld", SM100A, ("i32",), "f32",
        "tcgen05_ld(taddr) -> float32: the first value of tcgen05_ld_x2(taddr)."),
}
for _g, _sfx in ((1, ""), (2, "_2cta")):
    _SPECS[f"tcgen05_alloc{_sfx}"] = (
        f"tcgen05.alloc.cta_group::{_g}.sync.aligned.shared::cta.b32", SM100A, ("ptr", "i32"),
        None, f"tcgen05_alloc{_sfx}(dst, ncols): allocate *ncols* columns (a power of two, "
        f"32 to 512) of tensor memory and write their address to the shared int32 at *dst*; "
        f"called by a whole warp.")
    _SPECS[f"tcgen05_dealloc{_sfx}"] = (
        f"tcgen05.dealloc.cta_group::{_g}.sync.aligned.b32", SM100A, ("i32", "i32"), None,
        f"tcgen05_dealloc{_sfx}(taddr, ncols): free tensor memory allocated by "
        f"tcgen05_alloc{_sfx}; called by a whole warp.")
    _SPECS[f"tcgen05_relinquish_alloc_permit{_sfx}"] = (
        f"tcgen05.relinquish_alloc_permit.cta_group::{_g}.sync.aligned", SM100A, (), None,
        f"tcgen05_relinquish_alloc_permit{_sfx}(): this block allocates no more tensor memory.")

#: name -> (PTX instruction, where it exists): the table of docs/cuda.md
REQUIREMENTS: dict[str, tuple[str, str]] = {n: (s[0], s[1]) for n, s in _SPECS.items()}
REQUIREMENTS["elect_sync"] = REQUIREMENTS["elect_sync_mask"] = (
    "elect.sync", "every target; elect.sync on CUDA sm_90 or newer (PTX ISA 8.0)")


def _intrinsic_name(name: str) -> str:
    return "__gpux_nv_" + name


def _ll_result(result):
    if result is None:
        return ir.VoidType()
    if result == "f32x2":
        return ir.LiteralStructType([ir.FloatType(), ir.FloatType()])
    if result == "f32":
        return ir.FloatType()
    return _LL[result]


for _n, (_instr, _needs, _params, _res, _what) in _SPECS.items():
    _iname = _intrinsic_name(_n)
    if _iname not in INTRINSICS:
        INTRINSICS[_iname] = Intrinsic(
            _iname, _ll_result(_res), tuple(_LL[p] for p in _params),
            f"numba-cuda-mlir's cuda.intrin.{_n}: PTX {_instr}; {_needs}.",
            requires=f"cuda.intrin.{_n} (PTX {_instr}) needs {_needs}")

INTRINSICS["__gpux_nv_elect_sync"] = Intrinsic(
    "__gpux_nv_elect_sync", _I32, (_I32,),
    "1 on one active lane of the caller's sub-group among the lanes of the member mask, "
    "else 0; every lane of the mask must call it.  CUDA sm_90: elect.sync.  Shared "
    "default: the lowest active lane of the mask, from a ballot.")


def _elect_default() -> str:
    return (
        "declare i64 @__gpux_sg_ballot_masked(i32, i32) convergent\n"
        "declare i32 @__gpux_sg_lane_id()\n"
        "declare i64 @llvm.cttz.i64(i64, i1)\n"
        "define i32 @__gpux_nv_elect_sync(i32 %mask) alwaysinline nounwind convergent {\n"
        "  %b = call i64 @__gpux_sg_ballot_masked(i32 %mask, i32 1)\n"
        "  %m = zext i32 %mask to i64\n  %c = and i64 %b, %m\n"
        "  %lead = call i64 @llvm.cttz.i64(i64 %c, i1 false)\n"
        "  %lane = call i32 @__gpux_sg_lane_id()\n  %l = zext i32 %lane to i64\n"
        "  %is = icmp eq i64 %l, %lead\n  %r = zext i1 %is to i32\n  ret i32 %r\n}")


registry(SHARED).define("__gpux_nv_elect_sync", Deferred(_elect_default))


# ------------------------------------------------------------------ typing and lowering
def _is_ptr_like(t) -> bool:
    return isinstance(t, (types.Array, types.CPointer, types.RawPointer)) or (
        isinstance(t, types.Integer) and not isinstance(t, types.Boolean))


def _check_args(name: str, params, args) -> list:
    """The signature's argument types for *args* (numba types) of intrinsic *name*."""
    if len(args) != len(params):
        raise TypingError(f"cuda.intrin.{name} takes {len(params)} argument(s), got {len(args)}")
    out = []
    for i, (p, a) in enumerate(zip(params, args)):
        a = types.unliteral(a)
        if p == "ptr":
            if not _is_ptr_like(a):
                raise TypingError(
                    f"cuda.intrin.{name}: argument {i + 1} is an address: pass an array (its "
                    f"first element's address), a pointer or an integer address, not {a}")
            out.append(a)
        else:
            if not isinstance(a, (types.Integer, types.Boolean)):
                raise TypingError(f"cuda.intrin.{name}: argument {i + 1} must be an integer, "
                                  f"not {a}")
            out.append(_NB[p])
    return out


def _address(context, builder, ty, val):
    """A generic pointer (``ptr``) from an array (its data), a pointer or an integer."""
    if isinstance(ty, types.Array):
        val = context.make_array(ty)(context, builder, val).data
    elif isinstance(ty, types.Integer):
        return builder.inttoptr(context.cast(builder, val, ty, types.uint64), _PTR)
    return builder.bitcast(val, _PTR)


def _nv_stub(name: str, also=None):
    """The kernel-side function *name* of ``_SPECS``; *also*, a Python object that kernels
    may call as the same function (the builtin ``breakpoint``)."""
    instr, needs, params, result, what = _SPECS[name]
    stub = _stubs.Stub(f"cuda.intrin.{name}", f"{what}  PTX {instr}; needs {needs}.")

    class T(AbstractTemplate):
        key = stub

        def generic(self, args, kws):
            if kws:
                raise TypingError(f"cuda.intrin.{name} takes no keyword arguments")
            argtys = _check_args(name, params, args)
            if result is None:
                ret = types.none
            elif result == "ptr":  # an array view, a pointer, or an integer address
                a = argtys[0]
                ret = types.uint64 if isinstance(a, types.Integer) else a
            elif result == "f32x2":
                ret = types.UniTuple(types.float32, 2)
            elif result == "f32":
                ret = types.float32
            else:
                ret = _NB[result]
            return signature(ret, *argtys)

    T.__name__ = f"Intrin_{name}"
    typing_registry.register(T)
    typing_registry.register_global(stub, types.Function(T))
    if also is not None:
        typing_registry.register_global(also, types.Function(T))

    iname = _intrinsic_name(name)

    def impl(context, builder, sig, args):
        vals = [_address(context, builder, t, v) if p == "ptr" else v
                for p, t, v in zip(params, sig.args, args)]
        r = _call(builder, iname, *vals)
        if result is None:
            return context.get_dummy_value()
        if result == "ptr":
            rty = sig.return_type
            if isinstance(rty, types.Integer):
                return builder.ptrtoint(r, context.get_value_type(rty))
            if isinstance(rty, types.Array):  # the same view, over the other block's memory
                ary = context.make_array(rty)(context, builder, value=args[0])
                ary.data = builder.bitcast(r, ary.data.type)
                return ary._getvalue()
            return builder.bitcast(r, context.get_value_type(rty))
        if result == "f32x2":
            return context.make_tuple(builder, sig.return_type,
                                      [builder.extract_value(r, 0), builder.extract_value(r, 1)])
        return r

    for key in (stub,) if also is None else (stub, also):
        lowering_registry.lower(key, types.VarArg(types.Any))(impl)
    return stub


mbarrier_init = _nv_stub("mbarrier_init")
mbarrier_try_wait = _nv_stub("mbarrier_try_wait")
mbarrier_arrive_expect_tx = _nv_stub("mbarrier_arrive_expect_tx")
fence_mbarrier_init = _nv_stub("fence_mbarrier_init")
cp_async_bulk_load = _nv_stub("cp_async_bulk_load")
cp_async_bulk_store = _nv_stub("cp_async_bulk_store")
cp_async_bulk_tensor_2d = _nv_stub("cp_async_bulk_tensor_2d")
cp_async_bulk_tensor_2d_multicast = _nv_stub("cp_async_bulk_tensor_2d_multicast")
cluster_arrive_relaxed = _nv_stub("cluster_arrive_relaxed")
cluster_wait = _nv_stub("cluster_wait")
block_idx_in_cluster = _nv_stub("block_idx_in_cluster")
cluster_ctarank = _nv_stub("cluster_ctarank")
mapa = _nv_stub("mapa")
prefetch_tensormap = _nv_stub("prefetch_tensormap")
#: numba-cuda-mlir's name; Python's builtin breakpoint() in a kernel is the same (numba.cuda's)
breakpoint = _nv_stub("breakpoint", also=builtins.breakpoint)  # noqa: A001
tcgen05_alloc = _nv_stub("tcgen05_alloc")
tcgen05_mma = _nv_stub("tcgen05_mma")
tcgen05_commit_arrive = _nv_stub("tcgen05_commit_arrive")
tcgen05_ld = _nv_stub("tcgen05_ld")
tcgen05_ld_x2 = _nv_stub("tcgen05_ld_x2")
tcgen05_dealloc = _nv_stub("tcgen05_dealloc")
tcgen05_relinquish_alloc_permit = _nv_stub("tcgen05_relinquish_alloc_permit")
tcgen05_alloc_2cta = _nv_stub("tcgen05_alloc_2cta")
tcgen05_mma_2cta = _nv_stub("tcgen05_mma_2cta")
tcgen05_dealloc_2cta = _nv_stub("tcgen05_dealloc_2cta")
tcgen05_relinquish_alloc_permit_2cta = _nv_stub("tcgen05_relinquish_alloc_permit_2cta")


# ------------------------------------------------------------------ elect
_elect = _stubs.Stub("cuda.intrin._elect", "elect one lane of the member mask")


class _ElectT(AbstractTemplate):
    key = _elect

    def generic(self, args, kws):
        (mask,) = args
        if not isinstance(mask, types.Integer):
            raise TypingError(f"elect_sync_mask: the member mask must be an integer, not {mask}")
        return signature(types.boolean, types.uint32)


typing_registry.register_global(_elect, types.Function(_ElectT))


@lowering_registry.lower(_elect, types.Any)
def _lower_elect(context, builder, sig, args):
    r = _call(builder, "__gpux_nv_elect_sync", args[0])
    return builder.icmp_unsigned("!=", r, ir.Constant(_I32, 0))


def _device(fn):
    return _gpux_jit(device=True, inline=True)(fn)


@_device
def elect_sync():
    """elect_sync() -> bool: True on exactly one lane of the (full) warp, all of whose
    lanes must call it: elect.sync on CUDA sm_90 or newer, the lowest active lane
    elsewhere (every target)."""
    return _elect(0xFFFFFFFF)


@_device
def elect_sync_mask(mask):
    """elect_sync_mask(mask) -> bool: True on exactly one lane among the lanes of the
    32-bit member *mask*, each of which must call it."""
    return _elect(mask)


# ------------------------------------------------------------------ portable helpers
barrier = _stubs.barrier
nanosleep = _gpux.nanosleep
_lang_ffs = _gpux.ffs
_thread_idx = _stubs.thread_idx
_i32, _i64, _f32, _f64 = types.int32, types.int64, types.float32, types.float64


@_device
def warp_idx():
    """warp_idx() -> int32: threadIdx.x // 32, numba-cuda-mlir's definition (the warp of
    a one-dimensional block; every target, whatever its sub-group width)."""
    return _i32(_thread_idx.x // 32)


@_device
def ffs(x):
    """ffs(x) -> int32: the 1-based position of the lowest set bit of the 32-bit x, 0 for 0."""
    return _i32(_lang_ffs(_i32(x)))


@_device
def ffsll(x):
    """ffsll(x) -> int32: ffs of the 64-bit x."""
    return _i32(_lang_ffs(_i64(x)))


__nv_ffs = ffs
__nv_ffsll = ffsll


@_device
def round_ndigits_type_f32_type_i32(x, ndigits):
    """round(x, ndigits) on float32 x, as Python's round(float(x), ndigits) (halves to
    even, computed in double precision) converted to float32."""
    return _f32(round(_f32(x), _i32(ndigits)))


@_device
def round_ndigits_type_f32_type_i64(x, ndigits):
    return _f32(round(_f32(x), _i64(ndigits)))


@_device
def round_ndigits_type_f64_type_i32(x, ndigits):
    """round(x, ndigits) on float64 x, as Python's."""
    return _f64(round(_f64(x), _i32(ndigits)))


@_device
def round_ndigits_type_f64_type_i64(x, ndigits):
    return _f64(round(_f64(x), _i64(ndigits)))


@_device
def encode_instr_descriptor(sparse_id2, sparse_flag, saturate, c_format, sparse_format,
                            a_format, b_format, a_negate, b_negate, a_major, b_major,
                            n_dim, m_dim, max_shift):
    """The 32-bit tcgen05 instruction descriptor (int32) from its fields, each masked to
    its width: sparse_id2 bits 0-1, sparse_flag 2, saturate 3, c_format 4-5,
    sparse_format 6, a_format 7-9, b_format 10-12, a_negate 13, b_negate 14, a_major 15,
    b_major 16, n_dim (N >> 3) 17-22, m_dim (M >> 4) 24-28, max_shift 30-31."""
    d = (_i64(sparse_id2) & 3) | ((_i64(sparse_flag) & 1) << 2) | ((_i64(saturate) & 1) << 3)
    d |= ((_i64(c_format) & 3) << 4) | ((_i64(sparse_format) & 1) << 6)
    d |= ((_i64(a_format) & 7) << 7) | ((_i64(b_format) & 7) << 10)
    d |= ((_i64(a_negate) & 1) << 13) | ((_i64(b_negate) & 1) << 14)
    d |= ((_i64(a_major) & 1) << 15) | ((_i64(b_major) & 1) << 16)
    d |= ((_i64(n_dim) & 63) << 17) | ((_i64(m_dim) & 31) << 24) | ((_i64(max_shift) & 3) << 30)
    return _i32(d)


@_device
def encode_smem_descriptor(start_address, leading_byte_offset, stride_byte_offset,
                           base_offset, layout_type):
    """The 64-bit shared-memory matrix descriptor (int64) of tcgen05.mma's A and B:
    start_address (bytes >> 4) bits 0-13, leading_byte_offset (>> 4) 16-29,
    stride_byte_offset (>> 4) 32-45, base_offset 49-51, layout_type 61-63 (0 no
    swizzle, 1 128B with 32B base, 2 128B, 4 64B, 6 32B); each masked to its width."""
    d = (_i64(start_address) & 0x3FFF) | ((_i64(leading_byte_offset) & 0x3FFF) << 16)
    d |= (_i64(stride_byte_offset) & 0x3FFF) << 32
    d |= (_i64(base_offset) & 7) << 49
    d |= (_i64(layout_type) & 7) << 61
    return d


# ------------------------------------------------------------------ inline_ptx
inline_ptx = _stubs.Stub(
    "inline_ptx",
    "inline_ptx(ptx, constraint0, value0, constraint1, value1, ...): the PTX text in the "
    "kernel, as CUDA C++'s asm(): %0, %1, ... name the operands in pair order (%% is a "
    "literal %, and %name such as %tid.x stays as written).  A constraint is a type letter "
    "(h int16, r int32, l int64, f float32, d float64), read by the PTX; '=' before it makes "
    "the operand written by the PTX and returned (its value argument is a placeholder, "
    "e.g. np.int32), '+' read and written (its new value is not returned, as in "
    "numba-cuda-mlir).  Returns None, the one output or a tuple of the outputs.  CUDA only.")

_NB_LETTER = {"h": types.int16, "r": types.int32, "l": types.int64, "f": types.float32,
              "d": types.float64}


def _constraint(c: str, i: int) -> tuple[str, str]:
    """(mode: "=", "+" or "", type letter) of operand *i*'s constraint *c*."""
    mode, letter = (c[0], c[1:]) if c[:1] in ("=", "+") else ("", c)
    if letter not in _NB_LETTER:
        raise TypingError(f"inline_ptx: operand {i} has the constraint {c!r}; write one of "
                          f"h r l f d, optionally after '=' (output) or '+' (read and written)")
    return mode, letter


def _ptx_operands(args) -> list[tuple[str, str]]:
    if not args or not isinstance(args[0], types.StringLiteral):
        raise TypingError("inline_ptx: the first argument must be the PTX text, a string "
                          "constant")
    rest = args[1:]
    if len(rest) % 2:
        raise TypingError("inline_ptx: after the PTX text, give (constraint, value) pairs")
    ops = []
    for i in range(len(rest) // 2):
        c, v = rest[2 * i], rest[2 * i + 1]
        if not isinstance(c, types.StringLiteral):
            raise TypingError(f"inline_ptx: the constraint of operand {i} must be a string "
                              f"constant such as \"r\" or \"=r\"")
        mode, letter = _constraint(c.literal_value, i)
        if mode != "=":
            v = types.unliteral(v)
            scalar = isinstance(v, (types.Integer, types.Float, types.Boolean))
            address = isinstance(v, (types.Array, types.CPointer, types.RawPointer))
            if not (scalar or (address and letter == "l")):
                raise TypingError(f"inline_ptx: operand {i} ({c.literal_value!r}) must be a "
                                  f"number" + (" or an array or pointer (its address)"
                                               if letter == "l" else "") + f", not {v}")
        ops.append((mode, letter))
    return ops


class _InlinePtxT(AbstractTemplate):
    key = inline_ptx
    prefer_literal = True

    def generic(self, args, kws):
        if kws:
            raise TypingError("inline_ptx takes no keyword arguments")
        ops = _ptx_operands(args)
        try:
            ptx_asm(args[0].literal_value, ops)
        except ValueError as e:
            raise TypingError(str(e)) from None
        outs = [_NB_LETTER[letter] for mode, letter in ops if mode == "="]
        ret = types.none if not outs else outs[0] if len(outs) == 1 else types.Tuple(outs)
        return signature(ret, *args)


typing_registry.register_global(inline_ptx, types.Function(_InlinePtxT))


def ptx_asm(text: str, ops: list[tuple[str, str]]) -> tuple[str, str]:
    """(LLVM constraints, LLVM assembly text) for inline_ptx's *text* and operands
    *ops* ((mode, letter) in pair order): outputs ("=" and "+") first, then inputs,
    then inputs tied to the "+" outputs; ``%N`` becomes the operand's ``$M``, ``%%`` a
    ``%`` and ``$`` ``$$``.  Raises ValueError for a ``%N`` that names no operand."""
    outputs = [i for i, (m, _) in enumerate(ops) if m in ("=", "+")]
    inputs = [i for i, (m, _) in enumerate(ops) if m == ""]
    number = {i: k for k, i in enumerate(outputs + inputs)}
    cons = [f"={ops[i][1]}" for i in outputs] + [ops[i][1] for i in inputs]
    cons += [str(outputs.index(i)) for i in outputs if ops[i][0] == "+"]
    out, k, n = [], 0, len(text)
    while k < n:
        ch = text[k]
        if ch == "$":
            out.append("$$")
        elif ch == "%" and k + 1 < n and text[k + 1] == "%":
            out.append("%")
            k += 1
        elif ch == "%" and k + 1 < n and text[k + 1].isdigit():
            j = k + 1
            while j < n and text[j].isdigit():
                j += 1
            idx = int(text[k + 1:j])
            if idx not in number:
                raise ValueError(f"inline_ptx: %{idx} names no operand (there are {len(ops)})")
            out.append(f"${number[idx]}")
            k = j
            continue
        else:
            out.append(ch)
        k += 1
    return ",".join(cons), "".join(out)


@lowering_registry.lower(inline_ptx, types.VarArg(types.Any))
def _lower_inline_ptx(context, builder, sig, args):
    ops = _ptx_operands(sig.args)
    constraints, text = ptx_asm(sig.args[0].literal_value, ops)  # checked when typed
    vals = {}
    for i, (mode, letter) in enumerate(ops):
        if mode == "=":
            continue
        ty, v = sig.args[2 + 2 * i], args[2 + 2 * i]
        if isinstance(ty, types.Literal) and not isinstance(ty, types.StringLiteral):
            v = context.get_constant(types.unliteral(ty), ty.literal_value)
            ty = types.unliteral(ty)
        if isinstance(ty, (types.Array, types.CPointer, types.RawPointer)):
            v = builder.ptrtoint(_address(context, builder, ty, v), PTX_OPERAND_TYPES["l"])
        else:
            v = context.cast(builder, v, ty, _NB_LETTER[letter])
        vals[i] = v
    outputs = [i for i, (m, _) in enumerate(ops) if m in ("=", "+")]
    inputs = [i for i, (m, _) in enumerate(ops) if m == ""]
    order = inputs + [i for i in outputs if ops[i][0] == "+"]
    r = _call(builder, ptx_name(constraints, text), *[vals[i] for i in order])
    if len(outputs) == 1:
        got = {outputs[0]: r}
    else:
        got = {i: builder.extract_value(r, k) for k, i in enumerate(outputs)}
    results = [got[i] for i in outputs if ops[i][0] == "="]
    if not results:
        return context.get_dummy_value()
    if len(results) == 1:
        return results[0]
    return context.make_tuple(builder, sig.return_type, results)


add_registries(typing_registry, lowering_registry)
