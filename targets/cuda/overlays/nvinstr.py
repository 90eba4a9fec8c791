"""NVPTX definitions of the NVIDIA-instruction intrinsics (``__gpux_nv_*``) and of
inline PTX (``__gpux_ptx_*``): numba-cuda-mlir's ``cuda.intrin`` and ``inline_ptx``.

Each definition is inline PTX (LLVM's NVPTX back end aborts the process on an
intrinsic the target's sm cannot select; inline assembly reaches ptxas as text), in
the registry of the instruction set it needs, which ``make_target`` lists among a
target's families only where the compute capability and PTX ISA version have it:

- ``nvptx.sm80``: ``mbarrier.init`` (sm_80, PTX 7.0);
- ``nvptx.sm90``: ``elect.sync``, ``mbarrier.try_wait``/``arrive.expect_tx``,
  ``fence.mbarrier_init``, ``cp.async.bulk`` (and ``.tensor``), ``barrier.cluster``,
  the cluster registers, ``mapa``, ``prefetch.tensormap`` (sm_90, PTX 8.0);
- ``nvptx.sm100a``: ``tcgen05.*`` and the ``.cta_group::2`` multicast tensor copy
  (sm_100a/sm_103a/sm_110a and their ``f`` families, PTX 8.6).

A kernel compiled for a target without the family fails validation naming the
intrinsic, its Python line and the sm it needs (the contract's ``requires``).
Shared-memory operands are cast to the shared space and passed as 32-bit addresses
(the target's short shared pointers); mbarrier operations on generic addresses
take 64-bit ones, as PTX allows.
"""

from __future__ import annotations

from numba_gpux.language.intrinsics import ptx_parts, ptx_signature
from numba_gpux.overlays import registry

NVPTX = registry("nvptx")
SM80 = registry("nvptx.sm80")
SM90 = registry("nvptx.sm90")
SM100A = registry("nvptx.sm100a")

_ATTR = "alwaysinline nounwind"
_CONV = "alwaysinline nounwind convergent"


def ir_string(text: str) -> str:
    """*text* as an LLVM IR string constant's body: ``"``, ``\\`` and bytes outside
    printable ASCII as ``\\XX``."""
    out = []
    for b in text.encode():
        out.append(chr(b) if 32 <= b < 127 and b not in (0x22, 0x5C) else f"\\{b:02X}")
    return "".join(out)


def _asm(ret: str, text: str, constraints: str, args: str, side_effect: bool = True) -> str:
    kind = "asm sideeffect" if side_effect else "asm"
    return f'call {ret} {kind} "{ir_string(text)}", "{constraints}"({args})'


def _shared32(var: str, src: str) -> str:
    """Lines that make ``%<var>``, the 32-bit shared-space address of generic ``%<src>``."""
    return (f"  %{var}.s = addrspacecast ptr %{src} to ptr addrspace(3)\n"
            f"  %{var} = ptrtoint ptr addrspace(3) %{var}.s to i32\n")


def _void(name: str, params: str, body: str, attrs: str = _ATTR) -> str:
    return f"define void @{name}({params}) {attrs} {{\n{body}  ret void\n}}"


# ------------------------------------------------------------------ sm_80
SM80.define("__gpux_nv_mbarrier_init", _void(
    "__gpux_nv_mbarrier_init", "ptr %bar, i32 %count",
    "  " + _asm("void", "mbarrier.init.b64 [$0], $1;", "l,r,~{memory}",
                "ptr %bar, i32 %count") + "\n"))

# ------------------------------------------------------------------ sm_90
SM90.define("__gpux_nv_elect_sync", (
    "define i32 @__gpux_nv_elect_sync(i32 %mask) " + _CONV + " {\n"
    "  %r = " + _asm("i32", "{\n.reg .pred p;\nelect.sync _|p, $1;\nselp.u32 $0, 1, 0, p;\n}",
                     "=r,r", "i32 %mask") + "\n  ret i32 %r\n}"))

SM90.define("__gpux_nv_mbarrier_try_wait", (
    "define void @__gpux_nv_mbarrier_try_wait(ptr %bar, i32 %phase) " + _ATTR + " {\n"
    "entry:\n  %parity = and i32 %phase, 1\n  br label %wait\n"
    "wait:\n  %done = " + _asm(
        "i32", "{\n.reg .pred p;\nmbarrier.try_wait.parity.b64 p, [$1], $2;\n"
               "selp.u32 $0, 1, 0, p;\n}", "=r,l,r,~{memory}", "ptr %bar, i32 %parity") + "\n"
    "  %ok = icmp ne i32 %done, 0\n  br i1 %ok, label %out, label %wait\n"
    "out:\n  ret void\n}"))

SM90.define("__gpux_nv_mbarrier_arrive_expect_tx", _void(
    "__gpux_nv_mbarrier_arrive_expect_tx", "ptr %bar, i32 %tx",
    "  " + _asm("void", "mbarrier.arrive.expect_tx.b64 _, [$0], $1;", "l,r,~{memory}",
                "ptr %bar, i32 %tx") + "\n"))

SM90.define("__gpux_nv_fence_mbarrier_init", _void(
    "__gpux_nv_fence_mbarrier_init", "",
    "  " + _asm("void", "fence.mbarrier_init.release.cluster;", "~{memory}", "") + "\n"))

SM90.define("__gpux_nv_cp_async_bulk_load", _void(
    "__gpux_nv_cp_async_bulk_load", "ptr %dst, ptr %src, ptr %bar, i32 %n",
    _shared32("d", "dst") + _shared32("b", "bar")
    + "  %s = addrspacecast ptr %src to ptr addrspace(1)\n  "
    + _asm("void", "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes "
                   "[$0], [$1], $3, [$2];", "r,l,r,r,~{memory}",
           "i32 %d, ptr addrspace(1) %s, i32 %b, i32 %n") + "\n"))

SM90.define("__gpux_nv_cp_async_bulk_store", _void(
    "__gpux_nv_cp_async_bulk_store", "ptr %dst, ptr %src, i32 %n",
    _shared32("s", "src") + "  %d = addrspacecast ptr %dst to ptr addrspace(1)\n  "
    + _asm("void", "cp.async.bulk.global.shared::cta.bulk_group [$0], [$1], $2;",
           "l,r,r,~{memory}", "ptr addrspace(1) %d, i32 %s, i32 %n") + "\n"))

_TENSOR_2D = ("cp.async.bulk.tensor.2d.shared::cluster.global.tile."
              "mbarrier::complete_tx::bytes")
SM90.define("__gpux_nv_cp_async_bulk_tensor_2d", _void(
    "__gpux_nv_cp_async_bulk_tensor_2d", "ptr %dst, ptr %map, i32 %c0, i32 %c1, ptr %bar",
    _shared32("d", "dst") + _shared32("b", "bar") + "  "
    + _asm("void", f"{_TENSOR_2D} [$0], [$1, {{$2, $3}}], [$4];", "r,l,r,r,r,~{memory}",
           "i32 %d, ptr %map, i32 %c0, i32 %c1, i32 %b") + "\n"))

SM90.define("__gpux_nv_cluster_arrive_relaxed", _void(
    "__gpux_nv_cluster_arrive_relaxed", "",
    "  " + _asm("void", "barrier.cluster.arrive.relaxed;", "~{memory}", "") + "\n", _CONV))
SM90.define("__gpux_nv_cluster_wait", _void(
    "__gpux_nv_cluster_wait", "",
    "  " + _asm("void", "barrier.cluster.wait;", "~{memory}", "") + "\n", _CONV))

for _name, _reg in (("block_idx_in_cluster", "%clusterid.x"),
                    ("cluster_ctarank", "%cluster_ctarank")):
    SM90.define(f"__gpux_nv_{_name}", (
        f"define i32 @__gpux_nv_{_name}() {_ATTR} {{\n"
        f"  %r = {_asm('i32', f'mov.u32 $0, {_reg};', '=r', '', side_effect=False)}\n"
        f"  ret i32 %r\n}}"))

SM90.define("__gpux_nv_mapa", (
    "define ptr @__gpux_nv_mapa(ptr %p, i32 %rank) " + _ATTR + " {\n"
    "  %a = " + _asm("i64", "mapa.u64 $0, $1, $2;", "=l,l,r", "ptr %p, i32 %rank",
                     side_effect=False) + "\n"
    "  %r = inttoptr i64 %a to ptr\n  ret ptr %r\n}"))

SM90.define("__gpux_nv_prefetch_tensormap", _void(
    "__gpux_nv_prefetch_tensormap", "ptr %map",
    "  " + _asm("void", "prefetch.tensormap [$0];", "l", "ptr %map") + "\n"))

# ------------------------------------------------------------------ sm_100a: tcgen05
SM100A.define("__gpux_nv_cp_async_bulk_tensor_2d_multicast", _void(
    "__gpux_nv_cp_async_bulk_tensor_2d_multicast",
    "ptr %dst, ptr %map, i32 %c0, i32 %c1, ptr %bar, i16 %mask",
    _shared32("d", "dst") + _shared32("b", "bar") + "  "
    + _asm("void", f"{_TENSOR_2D}.multicast::cluster.cta_group::2 "
                   "[$0], [$1, {$2, $3}], [$4], $5;", "r,l,r,r,r,h,~{memory}",
           "i32 %d, ptr %map, i32 %c0, i32 %c1, i32 %b, i16 %mask") + "\n"))

for _g in (1, 2):
    _sfx = "" if _g == 1 else "_2cta"
    SM100A.define(f"__gpux_nv_tcgen05_alloc{_sfx}", _void(
        f"__gpux_nv_tcgen05_alloc{_sfx}", "ptr %dst, i32 %ncols",
        _shared32("d", "dst") + "  "
        + _asm("void", f"tcgen05.alloc.cta_group::{_g}.sync.aligned.shared::cta.b32 [$0], $1;",
               "r,r,~{memory}", "i32 %d, i32 %ncols") + "\n", _CONV))
    SM100A.define(f"__gpux_nv_tcgen05_dealloc{_sfx}", _void(
        f"__gpux_nv_tcgen05_dealloc{_sfx}", "i32 %taddr, i32 %ncols",
        "  " + _asm("void", f"tcgen05.dealloc.cta_group::{_g}.sync.aligned.b32 $0, $1;",
                    "r,r,~{memory}", "i32 %taddr, i32 %ncols") + "\n", _CONV))
    SM100A.define(f"__gpux_nv_tcgen05_relinquish_alloc_permit{_sfx}", _void(
        f"__gpux_nv_tcgen05_relinquish_alloc_permit{_sfx}", "",
        "  " + _asm("void", f"tcgen05.relinquish_alloc_permit.cta_group::{_g}.sync.aligned;",
                    "~{memory}", "") + "\n", _CONV))
    SM100A.define(f"__gpux_nv_tcgen05_mma{_sfx}", _void(
        f"__gpux_nv_tcgen05_mma{_sfx}", "i32 %taddr, i64 %adesc, i64 %bdesc, i32 %idesc, i32 %acc",
        "  " + _asm("void", "{\n.reg .pred p;\nsetp.ne.b32 p, $4, 0;\n"
                            f"tcgen05.mma.cta_group::{_g}.kind::f16 [$0], $1, $2, $3, p;\n}}",
                    "r,l,l,r,r,~{memory}",
                    "i32 %taddr, i64 %adesc, i64 %bdesc, i32 %idesc, i32 %acc") + "\n"))

SM100A.define("__gpux_nv_tcgen05_commit_arrive", _void(
    "__gpux_nv_tcgen05_commit_arrive", "ptr %bar",
    _shared32("b", "bar") + "  "
    + _asm("void", "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [$0];",
           "r,~{memory}", "i32 %b") + "\n"))

SM100A.define("__gpux_nv_tcgen05_ld", (
    "declare { float, float } @__gpux_nv_tcgen05_ld_x2(i32)\n"
    "define float @__gpux_nv_tcgen05_ld(i32 %taddr) " + _CONV + " {\n"
    "  %v = call { float, float } @__gpux_nv_tcgen05_ld_x2(i32 %taddr)\n"
    "  %r = extractvalue { float, float } %v, 0\n  ret float %r\n}"))
SM100A.define("__gpux_nv_tcgen05_ld_x2", (
    "define { float, float } @__gpux_nv_tcgen05_ld_x2(i32 %taddr) " + _CONV + " {\n"
    "  %v = " + _asm("{ i32, i32 }", "{\ntcgen05.ld.sync.aligned.32x32b.x2.b32 {$0, $1}, [$2];\n"
                                     "tcgen05.wait::ld.sync.aligned;\n}",
                     "=r,=r,r,~{memory}", "i32 %taddr") + "\n"
    "  %a = extractvalue { i32, i32 } %v, 0\n  %b = extractvalue { i32, i32 } %v, 1\n"
    "  %fa = bitcast i32 %a to float\n  %fb = bitcast i32 %b to float\n"
    "  %r0 = insertvalue { float, float } poison, float %fa, 0\n"
    "  %r1 = insertvalue { float, float } %r0, float %fb, 1\n"
    "  ret { float, float } %r1\n}"))

# ------------------------------------------------------------------ every sm
NVPTX.define("__gpux_nv_breakpoint", _void(
    "__gpux_nv_breakpoint", "", "  " + _asm("void", "brkpt;", "~{memory}", "") + "\n"))


def _inline_ptx(name: str) -> str | None:
    """The definition of an inline-PTX intrinsic, read from its name
    (``language.intrinsics.ptx_name``): the assembly as a side effect on memory."""
    parts = ptx_parts(name)
    if parts is None:
        return None
    constraints, text = parts
    ret, args = ptx_signature(constraints)
    params = ", ".join(f"{t} %a{i}" for i, t in enumerate(args))
    cons = constraints + ("," if constraints else "") + "~{memory}"
    call = _asm(str(ret), text, cons, params)
    body = f"  {call}\n  ret void\n" if str(ret) == "void" else f"  %r = {call}\n  ret {ret} %r\n"
    return f'define {ret} @{name}({params}) {_CONV} {{\n{body}}}'


NVPTX.define_family("__gpux_ptx_", _inline_ptx)
