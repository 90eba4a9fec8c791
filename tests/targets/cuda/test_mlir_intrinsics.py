"""numba-cuda-mlir's ``cuda.intrin`` and ``inline_ptx``: each NVIDIA-instruction
intrinsic compiled to PTX for the sm it needs and accepted by ptxas; the error naming
the intrinsic, the Python line and the target on OpenCL and on an older sm; the
portable names run on the OpenCL CPU device against Python references."""

from __future__ import annotations

import inspect

import numba
import numpy as np
import pytest

import numba_gpux as gpux
import numba_gpux.cuda.intrin as intrin
from numba_gpux import cuda
from numba_gpux.errors import ValidationError

SM80, SM90, SM100A = ((8, 0), ""), ((9, 0), ""), ((10, 0), "a")


# ------------------------------------------------------------------ one kernel per intrinsic
def k_mbarrier_init(out):
    bar = cuda.shared.array(1, np.int64)
    intrin.mbarrier_init(bar, 32)
    out[0] = 0


def k_mbarrier_try_wait(out):
    bar = cuda.shared.array(1, np.int64)
    intrin.mbarrier_try_wait(bar, 1)
    out[0] = 0


def k_mbarrier_arrive_expect_tx(out):
    bar = cuda.shared.array(1, np.int64)
    intrin.mbarrier_arrive_expect_tx(bar, 1024)
    out[0] = 0


def k_fence_mbarrier_init(out):
    intrin.fence_mbarrier_init()
    out[0] = 0


def k_cp_async_bulk_load(out):
    smem = cuda.shared.array(256, np.float32)
    bar = cuda.shared.array(1, np.int64)
    intrin.cp_async_bulk_load(smem, out, bar, 1024)
    out[0] = smem[1]


def k_cp_async_bulk_store(out):
    smem = cuda.shared.array(256, np.float32)
    smem[0] = 1.0
    intrin.cp_async_bulk_store(out, smem, 1024)


def k_cp_async_bulk_tensor_2d(out, tmap):
    smem = cuda.shared.array(256, np.float32)
    bar = cuda.shared.array(1, np.int64)
    intrin.cp_async_bulk_tensor_2d(smem, tmap, 16, 32, bar)
    out[0] = smem[3]


def k_cp_async_bulk_tensor_2d_multicast(out, tmap):
    smem = cuda.shared.array(256, np.float32)
    bar = cuda.shared.array(1, np.int64)
    intrin.cp_async_bulk_tensor_2d_multicast(smem, tmap, 16, 32, bar, np.int16(3))
    out[0] = smem[3]


def k_cluster_arrive_relaxed(out):
    intrin.cluster_arrive_relaxed()
    out[0] = 0


def k_cluster_wait(out):
    intrin.cluster_wait()
    out[0] = 0


def k_block_idx_in_cluster(out):
    out[0] = intrin.block_idx_in_cluster()


def k_cluster_ctarank(out):
    out[0] = intrin.cluster_ctarank()


def k_mapa(out):
    smem = cuda.shared.array(8, np.float32)
    remote = intrin.mapa(smem, 1)
    remote[2] = 4.0
    out[0] = smem[0]


def k_prefetch_tensormap(out, tmap):
    intrin.prefetch_tensormap(tmap)
    out[0] = 0


def k_breakpoint(out):
    intrin.breakpoint()
    out[0] = 0


def k_tcgen05_alloc(out):
    slot = cuda.shared.array(1, np.int32)
    intrin.tcgen05_alloc(slot, 32)
    intrin.tcgen05_relinquish_alloc_permit()
    out[0] = slot[0]


def k_tcgen05_alloc_2cta(out):
    slot = cuda.shared.array(1, np.int32)
    intrin.tcgen05_alloc_2cta(slot, 64)
    intrin.tcgen05_relinquish_alloc_permit_2cta()
    out[0] = slot[0]


def k_tcgen05_dealloc(out, taddr):
    intrin.tcgen05_dealloc(taddr, 32)
    out[0] = 0


def k_tcgen05_dealloc_2cta(out, taddr):
    intrin.tcgen05_dealloc_2cta(taddr, 32)
    out[0] = 0


def k_tcgen05_mma(out, taddr):
    a = intrin.encode_smem_descriptor(64, 1, 8, 0, 2)
    b = intrin.encode_smem_descriptor(128, 1, 8, 0, 2)
    d = intrin.encode_instr_descriptor(0, False, False, 1, False, 0, 0, False, False,
                                       False, False, 16, 8, 0)
    intrin.tcgen05_mma(taddr, a, b, d, 1)
    out[0] = 0


def k_tcgen05_mma_2cta(out, taddr):
    a = intrin.encode_smem_descriptor(64, 1, 8, 0, 2)
    intrin.tcgen05_mma_2cta(taddr, a, a, 0x10400010, 0)
    out[0] = 0


def k_tcgen05_commit_arrive(out):
    bar = cuda.shared.array(1, np.int64)
    intrin.tcgen05_commit_arrive(bar)
    out[0] = 0


def k_tcgen05_ld(out, taddr):
    out[0] = intrin.tcgen05_ld(taddr)


def k_tcgen05_ld_x2(out, taddr):
    a, b = intrin.tcgen05_ld_x2(taddr)
    out[0] = a + b


def k_elect_sync(out):
    if intrin.elect_sync():
        out[0] = 1.0


F32 = "void(float32[::1])"
F32_MAP = "void(float32[::1], uint64)"
F32_TADDR = "void(float32[::1], int32)"

#: (kernel, signature, (cc, arch) it needs, PTX mnemonics that must appear)
CASES = {
    "mbarrier_init": (k_mbarrier_init, F32, SM80, ["mbarrier.init.b64"]),
    "mbarrier_try_wait": (k_mbarrier_try_wait, F32, SM90, ["mbarrier.try_wait.parity.b64"]),
    "mbarrier_arrive_expect_tx": (k_mbarrier_arrive_expect_tx, F32, SM90,
                                  ["mbarrier.arrive.expect_tx.b64"]),
    "fence_mbarrier_init": (k_fence_mbarrier_init, F32, SM90,
                            ["fence.mbarrier_init.release.cluster"]),
    "cp_async_bulk_load": (k_cp_async_bulk_load, F32, SM90,
                           ["cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes"]),
    "cp_async_bulk_store": (k_cp_async_bulk_store, F32, SM90,
                            ["cp.async.bulk.global.shared::cta.bulk_group"]),
    "cp_async_bulk_tensor_2d": (k_cp_async_bulk_tensor_2d, F32_MAP, SM90,
                                ["cp.async.bulk.tensor.2d.shared::cluster.global.tile"]),
    "cp_async_bulk_tensor_2d_multicast": (k_cp_async_bulk_tensor_2d_multicast, F32_MAP, SM100A,
                                          [".multicast::cluster.cta_group::2"]),
    "cluster_arrive_relaxed": (k_cluster_arrive_relaxed, F32, SM90,
                               ["barrier.cluster.arrive.relaxed"]),
    "cluster_wait": (k_cluster_wait, F32, SM90, ["barrier.cluster.wait"]),
    "block_idx_in_cluster": (k_block_idx_in_cluster, F32, SM90, ["%clusterid.x"]),
    "cluster_ctarank": (k_cluster_ctarank, F32, SM90, ["%cluster_ctarank"]),
    "mapa": (k_mapa, F32, SM90, ["mapa.u64"]),
    "prefetch_tensormap": (k_prefetch_tensormap, F32_MAP, SM90, ["prefetch.tensormap"]),
    "breakpoint": (k_breakpoint, F32, ((7, 5), ""), ["brkpt"]),
    "tcgen05_alloc": (k_tcgen05_alloc, F32, SM100A,
                      ["tcgen05.alloc.cta_group::1", "tcgen05.relinquish_alloc_permit.cta_group::1"]),
    "tcgen05_alloc_2cta": (k_tcgen05_alloc_2cta, F32, SM100A,
                           ["tcgen05.alloc.cta_group::2",
                            "tcgen05.relinquish_alloc_permit.cta_group::2"]),
    "tcgen05_dealloc": (k_tcgen05_dealloc, F32_TADDR, SM100A, ["tcgen05.dealloc.cta_group::1"]),
    "tcgen05_dealloc_2cta": (k_tcgen05_dealloc_2cta, F32_TADDR, SM100A,
                             ["tcgen05.dealloc.cta_group::2"]),
    "tcgen05_mma": (k_tcgen05_mma, F32_TADDR, SM100A, ["tcgen05.mma.cta_group::1.kind::f16"]),
    "tcgen05_mma_2cta": (k_tcgen05_mma_2cta, F32_TADDR, SM100A,
                         ["tcgen05.mma.cta_group::2.kind::f16"]),
    "tcgen05_commit_arrive": (k_tcgen05_commit_arrive, F32, SM100A,
                              ["tcgen05.commit.cta_group::1.mbarrier::arrive::one"]),
    "tcgen05_ld": (k_tcgen05_ld, F32_TADDR, SM100A,
                   ["tcgen05.ld.sync.aligned.32x32b.x2.b32", "tcgen05.wait::ld"]),
    "tcgen05_ld_x2": (k_tcgen05_ld_x2, F32_TADDR, SM100A,
                      ["tcgen05.ld.sync.aligned.32x32b.x2.b32", "tcgen05.wait::ld"]),
    "elect_sync": (k_elect_sync, F32, SM90, ["elect.sync"]),
}
#: the names that exist only on CUDA (the others run on every target)
CUDA_ONLY = [n for n in CASES if n != "elect_sync"]


def _cc_str(need):
    (major, minor), arch = need
    return f"sm_{major}{minor}{arch}"


def _compile_ptx(name):
    kernel, sig, need, _ = CASES[name]
    return gpux.compile(kernel, sig, target="cuda", cc=_cc_str(need), cubin=False)


def _line_of(fn, text):
    """The source line number in this file of the first line of *fn* containing *text*."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, ln in enumerate(lines) if text in ln)


# ------------------------------------------------------------------ PTX and ptxas
def test_every_name_of_the_stub_exists():
    names = ("elect_sync elect_sync_mask mbarrier_init mbarrier_try_wait barrier "
             "mbarrier_arrive_expect_tx cp_async_bulk_load fence_mbarrier_init "
             "cp_async_bulk_store cp_async_bulk_tensor_2d cp_async_bulk_tensor_2d_multicast "
             "cluster_arrive_relaxed cluster_wait block_idx_in_cluster cluster_ctarank mapa "
             "warp_idx prefetch_tensormap encode_instr_descriptor encode_smem_descriptor "
             "breakpoint nanosleep round_ndigits_type_f32_type_i32 "
             "round_ndigits_type_f32_type_i64 round_ndigits_type_f64_type_i32 "
             "round_ndigits_type_f64_type_i64 __nv_ffs __nv_ffsll ffs ffsll tcgen05_alloc "
             "tcgen05_mma tcgen05_commit_arrive tcgen05_ld tcgen05_ld_x2 tcgen05_dealloc "
             "tcgen05_relinquish_alloc_permit tcgen05_alloc_2cta tcgen05_mma_2cta "
             "tcgen05_dealloc_2cta tcgen05_relinquish_alloc_permit_2cta").split()
    missing = [n for n in names if not hasattr(intrin, n)]
    assert not missing
    assert set(names) <= set(intrin.__all__)
    assert set(CUDA_ONLY) <= set(intrin.REQUIREMENTS)
    with pytest.raises(RuntimeError, match="inside a function compiled"):
        intrin.cluster_wait()


@pytest.mark.parametrize("name", list(CASES))
def test_ptx_for_the_sm_it_needs_is_accepted_by_ptxas(name, ptxas):
    from numba_gpux.targets.cuda import toolkit

    _, _, (cc, arch), mnemonics = CASES[name]
    art = _compile_ptx(name)
    assert f".target {_cc_str((cc, arch))}" in art.text
    for m in mnemonics:
        assert m in art.text, f"{m!r} not in the PTX of {name}:\n{art.text}"
    if not toolkit.ptxas_supports(cc, arch):
        pytest.skip(f"no installed ptxas ({', '.join(toolkit.all_ptxas())}) assembles "
                    f"{_cc_str((cc, arch))}")
    ok, messages = toolkit.ptxas_check(art.text, cc, arch)
    assert ok, f"ptxas rejected {name} for {_cc_str((cc, arch))}:\n{messages}\n{art.text}"


def test_a_kernel_for_the_device_runs_ptxas_for_its_arch_specific_gpu(ptxas):
    """The target's own cubin (emit) for sm_100a: ptxas runs with --gpu-name sm_100a."""
    from numba_gpux.targets.cuda import toolkit

    if not toolkit.ptxas_supports((10, 0), "a"):
        pytest.skip("no installed ptxas assembles sm_100a")
    kernel, sig, _, _ = CASES["tcgen05_alloc"]
    art = gpux.compile(kernel, sig, target="cuda", cc="sm_100a")
    assert art.binary and art.info["sm"] == "sm_100a"


def k_tensor_map_in_an_array(out, tmap):
    smem = cuda.shared.array(256, np.float32)
    bar = cuda.shared.array(1, np.int64)
    intrin.prefetch_tensormap(tmap)
    intrin.cp_async_bulk_tensor_2d(smem, tmap, 0, 8, bar)
    out[0] = smem[0]


def test_a_tensor_map_in_a_device_array(ptxas):
    """A CUtensorMap's 128 bytes in a device array: the array is the address."""
    from numba_gpux.targets.cuda import toolkit

    art = gpux.compile(k_tensor_map_in_an_array, "void(float32[::1], uint64[::1])",
                       target="cuda", cc=(9, 0), cubin=False)
    assert "prefetch.tensormap [%rd" in art.text and "cp.async.bulk.tensor.2d" in art.text
    if toolkit.ptxas_supports((9, 0)):
        ok, messages = toolkit.ptxas_check(art.text, (9, 0))
        assert ok, messages


def test_elect_sync_before_sm90_is_a_ballot(ptxas):
    from numba_gpux.targets.cuda import toolkit

    art = gpux.compile(k_elect_sync, F32, target="cuda", cc=(8, 0), cubin=False)
    assert "elect.sync" not in art.text and "vote.sync.ballot" in art.text
    if toolkit.ptxas_supports((8, 0)):
        ok, messages = toolkit.ptxas_check(art.text, (8, 0))
        assert ok, messages


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("name", CUDA_ONLY)
def test_opencl_names_the_intrinsic_the_line_and_the_target(name):
    kernel, sig, _, _ = CASES[name]
    with pytest.raises(ValidationError) as info:
        gpux.compile(kernel, sig, target="opencl")
    msg = str(info.value)
    assert f"cuda.intrin.{name} " in msg
    assert f"test_mlir_intrinsics.py:{_line_of(kernel, f'intrin.{name}(')}" in msg
    assert "target 'opencl'" in msg and "needs " in msg



def k_builtin_breakpoint(out):
    out[0] = 1
    breakpoint()


def test_python_breakpoint_in_a_facade_kernel_is_ptx_brkpt(ptxas):
    """numba.cuda lowers Python's breakpoint() in a kernel to PTX brkpt (for cuda-gdb);
    on OpenCL it is the intrinsic's error, naming the line."""
    from numba_gpux.targets.cuda import toolkit

    ptx, _ = cuda.compile_ptx(k_builtin_breakpoint, "void(float32[::1])", cc=(7, 5))
    assert "brkpt;" in ptx
    ok, messages = toolkit.ptxas_check(ptx, (7, 5), "")
    assert ok, messages
    with pytest.raises(ValidationError) as info:
        gpux.compile(k_builtin_breakpoint, "void(float32[::1])", target="opencl")
    msg = str(info.value)
    assert f"test_mlir_intrinsics.py:{_line_of(k_builtin_breakpoint, 'breakpoint()')}" in msg
    assert "brkpt" in msg and "target 'opencl'" in msg

@pytest.mark.parametrize("name", ["mbarrier_init", "cp_async_bulk_tensor_2d", "tcgen05_mma"])
def test_metal_names_the_intrinsic_and_the_target(name):
    """The MSL route (written here, compiled only on macOS) rejects them when it writes."""
    kernel, sig, _, _ = CASES[name]
    with pytest.raises(ValidationError) as info:
        gpux.compile(kernel, sig, target="metal")
    msg = str(info.value)
    assert f"cuda.intrin.{name} " in msg and "target 'metal'" in msg and "needs CUDA sm_" in msg


@pytest.mark.parametrize("name, cc, needs", [
    ("mbarrier_init", (7, 5), "sm_80"),
    ("mbarrier_try_wait", (8, 0), "sm_90"),
    ("cp_async_bulk_tensor_2d", (8, 9), "sm_90"),
    ("tcgen05_mma", (10, 0), "sm_100a"),
    ("tcgen05_alloc", "sm_90a", "sm_100a"),
    ("cp_async_bulk_tensor_2d_multicast", (9, 0), "sm_100a"),
])
def test_an_older_sm_names_the_instruction_and_the_sm_it_needs(name, cc, needs):
    kernel, sig, _, _ = CASES[name]
    with pytest.raises(ValidationError) as info:
        gpux.compile(kernel, sig, target="cuda", cc=cc, cubin=False)
    msg = str(info.value)
    instr = intrin.REQUIREMENTS[name][0]
    assert f"cuda.intrin.{name} (PTX {instr}) needs CUDA {needs}" in msg
    assert "target 'cuda' (sm_" in msg
    assert "test_mlir_intrinsics.py:" in msg


def test_sm90_with_an_old_ptx_isa_names_the_ptx_version():
    with pytest.raises(ValidationError, match=r"needs CUDA sm_90 or newer \(PTX ISA 8\.0\)"):
        gpux.compile(k_mbarrier_try_wait, F32, target="cuda", cc=(9, 0), ptx_version=(7, 8),
                     cubin=False)


def test_pointer_arguments_are_checked():
    def bad(out):
        intrin.mbarrier_init(1.5, 32)

    with pytest.raises(Exception, match="argument 1 is an address"):
        gpux.compile(bad, F32, target="cuda", cc=(9, 0), cubin=False)


# ------------------------------------------------------------------ inline_ptx
def k_ptx_one(out, a, b):
    out[0] = intrin.inline_ptx("mul.lo.s32 %0, %1, %2;", "=r", np.int32, "r", a, "r", b)


def k_ptx_two(out, a, b):
    s, d = intrin.inline_ptx("add.s32 %0, %2, %3;\n\tsub.s32 %1, %2, %3;",
                             "=r", 0, "=r", 0, "r", a, "r", b)
    out[0] = s
    out[1] = d


def k_ptx_misc(out, a, b):
    intrin.inline_ptx("add.s32 %0, %0, %1;", "+r", a, "r", b)
    t = intrin.inline_ptx("mov.u32 %0, %%clock;", "=r", 0)
    u = intrin.inline_ptx("mov.u32 %0, %laneid;", "=r", 0)
    x = intrin.inline_ptx("add.f64 %0, %1, %1;", "=d", 0.0, "d", 1.25)
    h = intrin.inline_ptx("mov.b16 %0, %1;", "=h", 0, "h", 7)
    intrin.inline_ptx("st.s32 [%0], %1;", "l", out, "r", t + u)
    out[1] = np.int32(x) + h


def test_inline_ptx_on_cuda(ptxas):
    from numba_gpux.targets.cuda import toolkit

    arts = [gpux.compile(k, "void(int32[::1], int32, int32)", target="cuda", cc=(7, 5),
                         cubin=False).text for k in (k_ptx_one, k_ptx_two, k_ptx_misc)]
    one, two, misc = arts
    assert "mul.lo.s32 %r" in one
    assert "add.s32 %r" in two and "sub.s32 %r" in two
    for want in ("%clock;", "%laneid;", "add.f64 %", "mov.b16 %rs", "st.s32 [%rd"):
        assert want in misc, want
    assert "%%" not in misc
    if toolkit.ptxas_supports((7, 5)):
        for text in arts:
            ok, messages = toolkit.ptxas_check(text, (7, 5))
            assert ok, f"{messages}\n{text}"


def test_inline_ptx_operand_mapping():
    ops = [("=", "r"), ("", "r"), ("+", "l"), ("", "f")]
    cons, text = intrin.ptx_asm("op %0, %1, %2, %3, %%r1, $x, %10", ops[:4] + [("", "r")] * 7)
    assert cons.split(",")[:4] == ["=r", "=l", "r", "f"]
    assert cons.split(",")[-1] == "1"  # the "+" operand's input, tied to output 1
    assert text == "op $0, $2, $1, $3, %r1, $$x, $10"
    with pytest.raises(ValueError, match="%4 names no operand"):
        intrin.ptx_asm("op %4;", ops)


@pytest.mark.parametrize("src, match", [
    ("def f(out, s):\n    intrin.inline_ptx('mov.u32 %0, 1;', '=q', 0)\n", "constraint '=q'"),
    ("def f(out, s):\n    intrin.inline_ptx('op %3;', 'r', 1)\n", "%3 names no operand"),
    ("def f(out, s):\n    intrin.inline_ptx('op %0;', 'r')\n", "pairs"),
    ("def f(out, s):\n    intrin.inline_ptx('op %0;', 'r', out)\n", "must be a number"),
])
def test_inline_ptx_errors(src, match):
    ns = {"intrin": intrin}
    exec(compile(src, "<inline_ptx>", "exec"), ns)
    with pytest.raises(Exception, match=match):
        gpux.compile(ns["f"], "void(int32[::1], int32)", target="cuda", cubin=False)


def test_inline_ptx_on_opencl_is_an_error_naming_the_line():
    with pytest.raises(ValidationError) as info:
        gpux.compile(k_ptx_two, "void(int32[::1], int32, int32)", target="opencl")
    msg = str(info.value)
    assert "cuda.inline_ptx writes PTX" in msg and "target 'opencl'" in msg
    assert f"test_mlir_intrinsics.py:{_line_of(k_ptx_two, 'inline_ptx(')}" in msg


# ------------------------------------------------------------------ portable names on OpenCL
def _ffs_ref(x, bits):
    x &= (1 << bits) - 1
    return (x & -x).bit_length()


@gpux.jit
def _bits_kernel(a32, a64, out):
    i = gpux.grid(1)
    if i < a32.size:
        out[i, 0] = intrin.ffs(a32[i])
        out[i, 1] = intrin.__nv_ffs(a32[i])
        out[i, 2] = intrin.ffsll(a64[i])
        out[i, 3] = intrin.__nv_ffsll(a64[i])


def test_ffs_on_opencl(opencl_device, rng):
    a32 = np.concatenate([np.array([0, 1, -1, 2 ** 31 - 1, -2 ** 31, 8, 12], np.int32),
                          rng.integers(-2 ** 31, 2 ** 31, 57, dtype=np.int32)])
    a64 = np.concatenate([np.array([0, 1, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 40, 3 << 50], np.int64),
                          rng.integers(-2 ** 63, 2 ** 63 - 1, 57, dtype=np.int64)])
    out = np.zeros((64, 4), np.int32)
    _bits_kernel[1, 64](a32, a64, out)
    ref32 = [_ffs_ref(int(x), 32) for x in a32]
    ref64 = [_ffs_ref(int(x), 64) for x in a64]
    np.testing.assert_array_equal(out[:, 0], ref32)
    np.testing.assert_array_equal(out[:, 1], ref32)
    np.testing.assert_array_equal(out[:, 2], ref64)
    np.testing.assert_array_equal(out[:, 3], ref64)


@gpux.jit
def _round_kernel(x32, x64, nd, out32, out64):
    i = gpux.grid(1)
    if i < x32.size:
        out32[i, 0] = intrin.round_ndigits_type_f32_type_i32(x32[i], nd[i])
        out32[i, 1] = intrin.round_ndigits_type_f32_type_i64(x32[i], np.int64(nd[i]))
        out64[i, 0] = intrin.round_ndigits_type_f64_type_i32(x64[i], nd[i])
        out64[i, 1] = intrin.round_ndigits_type_f64_type_i64(x64[i], np.int64(nd[i]))


def test_round_ndigits_on_opencl(opencl_device, rng):
    n = 96
    x64 = np.concatenate([np.array([0.5, 1.5, 2.5, -2.5, 0.125, 0.375, 1234.5678, -0.0, np.inf,
                                    -np.inf, 1e300, 2.675]), rng.normal(0, 1000, n - 12)])
    with np.errstate(over="ignore"):
        x32 = x64.astype(np.float32)
    nd = rng.integers(-3, 6, n).astype(np.int32)
    nd[:12] = [0, 0, 0, 0, 2, 2, 2, 1, 3, 3, 3, 2]
    out32 = np.zeros((n, 2), np.float32)
    out64 = np.zeros((n, 2), np.float64)
    _round_kernel[1, n](x32, x64, nd, out32, out64)
    # Numba's round(x, ndigits) on the CPU (float32: on float(x), as numba.cuda), which
    # rounds x * 10**ndigits (Python's own is correctly rounded: round(2.675, 2) is 2.67)
    ref = numba.njit(lambda x, d: round(x, d))
    ref32 = np.array([np.float32(ref(float(x), int(d))) for x, d in zip(x32, nd)])
    ref64 = np.array([ref(float(x), int(d)) for x, d in zip(x64, nd)])
    for j in range(2):
        np.testing.assert_array_equal(out32[:, j], ref32)
        np.testing.assert_array_equal(out64[:, j], ref64)


@gpux.jit
def _warp_kernel(out, elected, elected_mask):
    tid = gpux.thread_idx.x
    i = gpux.grid(1)
    out[i, 0] = intrin.warp_idx()
    out[i, 1] = gpux.subgroup.id()
    out[i, 2] = gpux.subgroup.lane_id()
    elected[i] = intrin.elect_sync()
    # every other lane of the mask; the lanes outside it do not call
    if tid % 2 == 1:
        elected_mask[i] = intrin.elect_sync_mask(0xAAAAAAAA)


def test_warp_idx_and_elect_sync_on_opencl(opencl_device):
    blocks, threads = 3, 96
    n = blocks * threads
    out = np.zeros((n, 3), np.int32)
    elected = np.zeros(n, np.bool_)
    elected_mask = np.zeros(n, np.bool_)
    _warp_kernel[blocks, threads](out, elected, elected_mask)
    tid = np.arange(n) % threads
    np.testing.assert_array_equal(out[:, 0], tid // 32)
    block = np.arange(n) // threads
    lanes_of = {}
    for i in range(n):
        lanes_of.setdefault((block[i], out[i, 1]), []).append(i)
    for members in lanes_of.values():
        lanes = out[members, 2]
        # exactly one lane of each sub-group is elected: the lowest
        assert elected[members].sum() == 1
        assert lanes[elected[members]][0] == lanes.min()
        # among the odd lanes of the mask (those below 32 that call it), the lowest one
        odd = [i for i in members if tid[i] % 2 == 1 and out[i, 2] < 32]
        if odd:
            lowest = min(odd, key=lambda i: out[i, 2])
            assert elected_mask[members].sum() == 1 and elected_mask[lowest]


def _instr_ref(f):
    widths = (2, 1, 1, 2, 1, 3, 3, 1, 1, 1, 1, 6, 5, 2)
    shifts = (0, 2, 3, 4, 6, 7, 10, 13, 14, 15, 16, 17, 24, 30)
    d = 0
    for v, w, s in zip(f, widths, shifts):
        d |= (int(v) & ((1 << w) - 1)) << s
    return np.uint32(d).view(np.int32)


def _smem_ref(f):
    d = 0
    for v, w, s in zip(f, (14, 14, 14, 3, 3), (0, 16, 32, 49, 61)):
        d |= (int(v) & ((1 << w) - 1)) << s
    return np.uint64(d).view(np.int64)


@gpux.jit
def _descriptor_kernel(fi, fs, out_i, out_s):
    i = gpux.grid(1)
    if i < out_i.size:
        out_i[i] = intrin.encode_instr_descriptor(
            fi[i, 0], fi[i, 1] != 0, fi[i, 2] != 0, fi[i, 3], fi[i, 4] != 0, fi[i, 5], fi[i, 6],
            fi[i, 7] != 0, fi[i, 8] != 0, fi[i, 9] != 0, fi[i, 10] != 0, fi[i, 11], fi[i, 12],
            fi[i, 13])
        out_s[i] = intrin.encode_smem_descriptor(fs[i, 0], fs[i, 1], fs[i, 2], fs[i, 3], fs[i, 4])


def test_descriptor_encoders_on_opencl(opencl_device, rng):
    n = 64
    fi = rng.integers(0, 64, (n, 14)).astype(np.int16)
    fi[:, [1, 2, 4, 7, 8, 9, 10]] %= 2
    fi[0] = [3, 1, 1, 3, 1, 7, 7, 1, 1, 1, 1, 63, 31, 3]  # every bit of the descriptor
    fs = rng.integers(0, 2 ** 15, (n, 5)).astype(np.int16)
    fs[:, 3:] %= 8
    fs[0] = [0x3FFF, 0x3FFF, 0x3FFF, 7, 7]
    out_i = np.zeros(n, np.int32)
    out_s = np.zeros(n, np.int64)
    _descriptor_kernel[1, n](fi, fs, out_i, out_s)
    np.testing.assert_array_equal(out_i, [_instr_ref(f) for f in fi])
    np.testing.assert_array_equal(out_s, [_smem_ref(f) for f in fs])
    assert out_i[0] == np.uint32(0xDF7FFFFF).view(np.int32)


@gpux.jit
def _barrier_kernel(a, out):
    buf = gpux.shared.array(64, np.float32)
    t = gpux.thread_idx.x
    buf[t] = a[t]
    intrin.nanosleep(100)
    intrin.barrier()
    out[t] = buf[63 - t]


def test_barrier_and_nanosleep_on_opencl(opencl_device):
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    _barrier_kernel[1, 64](a, out)
    np.testing.assert_array_equal(out, a[::-1])


# ------------------------------------------------------------------ on an sm_90 GPU
@cuda.jit
def _bulk_copy_kernel(src, dst, info):
    smem = cuda.shared.array(256, np.float32)
    mirror = cuda.shared.array(256, np.int32)
    bar = cuda.shared.array(1, np.int64)
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * 256
    if t == 0:
        intrin.mbarrier_init(bar, 1)
        intrin.fence_mbarrier_init()
    cuda.syncthreads()
    if t == 0:
        intrin.mbarrier_arrive_expect_tx(bar, 1024)
        intrin.cp_async_bulk_load(smem, src[base:], bar, 1024)
    intrin.mbarrier_try_wait(bar, 0)
    smem[t] = smem[t] * 2
    intrin.inline_ptx("fence.proxy.async.shared::cta;")  # before the bulk store reads it
    cuda.syncthreads()
    if t == 0:
        intrin.cp_async_bulk_store(dst[base:], smem, 1024)
        intrin.inline_ptx("cp.async.bulk.commit_group;")
        intrin.inline_ptx("cp.async.bulk.wait_group 0;")
    intrin.mapa(mirror, intrin.cluster_ctarank())[t] = t  # this block: a cluster of one
    cuda.syncthreads()
    i = base + t
    info[i, 0] = 1 if intrin.elect_sync() else 0
    info[i, 1] = intrin.inline_ptx("mul.lo.s32 %0, %1, %2;", "=r", np.int32, "r", t, "r", 3)
    info[i, 2] = intrin.cluster_ctarank()
    info[i, 3] = intrin.block_idx_in_cluster()
    info[i, 4] = mirror[t]
    info[i, 5] = intrin.warp_idx()


@pytest.mark.cuda
def test_bulk_copy_mbarrier_elect_and_inline_ptx_on_an_sm90_gpu(cuda_device):
    cc = cuda_device.limits["compute_capability"]
    if tuple(cc) < (9, 0):
        pytest.skip(f"the GPU is sm_{cc[0]}{cc[1]}; the bulk copies need sm_90")
    blocks = 4
    src = np.arange(blocks * 256, dtype=np.float32)
    d_src = cuda.to_device(src)
    d_dst = cuda.device_array_like(src)
    d_info = cuda.to_device(np.full((blocks * 256, 6), -1, np.int32))
    _bulk_copy_kernel[blocks, 256](d_src, d_dst, d_info)
    np.testing.assert_array_equal(d_dst.copy_to_host(), src * 2)
    info = d_info.copy_to_host()
    t = np.arange(blocks * 256) % 256
    assert info[:, 0].reshape(-1, 32).sum(axis=1).tolist() == [1] * (blocks * 8)
    np.testing.assert_array_equal(info[:, 1], 3 * t)
    np.testing.assert_array_equal(info[:, 2], 0)
    np.testing.assert_array_equal(info[:, 3], np.arange(blocks * 256) // 256)
    np.testing.assert_array_equal(info[:, 4], t)
    np.testing.assert_array_equal(info[:, 5], t // 32)


@pytest.mark.parametrize("cc, cpu, tcgen05", [((10, 0), "sm_100a", True),
                                             ((9, 0), "sm_90", False),
                                             ((12, 0), "sm_120", False)])
def test_a_device_with_tcgen05_compiles_for_its_arch_specific_target(cc, cpu, tcgen05):
    """Code compiled for a device runs on that device alone, so a device whose
    architecture has tcgen05 gets its architecture-specific target: its kernels may
    call tcgen05 through cuda.jit, not only through an explicit cc="sm_100a"."""
    from types import SimpleNamespace

    from numba_gpux.targets.cuda.target import make_target

    t = make_target(SimpleNamespace(limits={"compute_capability": cc}))
    assert t.cpu == cpu
    assert ("nvptx.sm100a" in t.families) is tcgen05
    assert make_target(cc=cc).cpu == f"sm_{cc[0]}{cc[1]}"  # an explicit cc stays as given
