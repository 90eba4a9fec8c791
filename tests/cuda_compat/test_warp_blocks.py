"""Warps in blocks of any shape: CUDA numbers a block's threads x fastest, then y,
then z, and its warps are 32 consecutive numbers, so a warp spans rows where
``blockDim.x`` is not a multiple of 32.  A driver that forms sub-groups along
dimension 0 only (Intel's CPU driver) would make each row its own warp; a kernel of
the numba.cuda facade with warp operations runs such blocks as one row instead
(``abi.LaunchFacts.block``, ``lanes.flatten_block``), its thread indices and
block shape unchanged; so does one whose lanes pass values through shared memory in
step, its warps in lockstep (test_warps.py).  Every answer here is checked against a model of CUDA's
warps, so the tests hold on any device that runs 32-wide warps."""

import numpy as np
import pytest
from llvmlite import binding as llvm

from numba_gpux import cuda, lanes
from numba_gpux.errors import UnsupportedError

from gpux_testing import run_twice_cached

pytestmark = pytest.mark.needs("subgroups")


def _can_require_32(device) -> bool:
    t = device.target
    return t.subgroup_width == 32 or (
        bool(t.subgroup_size_metadata) and t.has("required_subgroup_size"))


@pytest.fixture
def warps32(device):
    if not _can_require_32(device):
        pytest.skip(f"{device.spec} cannot run 32-wide warps")
    return device


@cuda.jit
def warp_view(lane, first, votes, idx):
    """Per thread (by its linear number in the block, per block): its lane, the number
    of its warp's lane 0 (a shuffle), a ballot, and the indices it is given."""
    tx, ty, tz = cuda.threadIdx.x, cuda.threadIdx.y, cuda.threadIdx.z
    t = tx + ty * cuda.blockDim.x + tz * cuda.blockDim.x * cuda.blockDim.y
    b = cuda.blockIdx.x + cuda.blockIdx.y * cuda.gridDim.x
    mask = cuda.activemask()
    lane[b, t] = cuda.laneid
    first[b, t] = cuda.shfl_sync(mask, t, 0)
    votes[b, t] = cuda.ballot_sync(mask, t % 3 == 0)
    x, y, z = cuda.grid(3)
    idx[b, t, 0] = x
    idx[b, t, 1] = y
    idx[b, t, 2] = z
    idx[b, t, 3] = cuda.blockDim.x * 100 + cuda.blockDim.y * 10 + cuda.blockDim.z
    idx[b, t, 4] = tx * 100 + ty * 10 + tz


def _model(grid, block):
    """What CUDA gives warp_view for blocks of *block* in a grid of *grid*."""
    bx, by, bz = block
    n = bx * by * bz
    t = np.arange(n)
    lane, warp = t % 32, t // 32
    first = warp * 32
    votes = np.zeros(n, np.int64)
    for w in range(warp.max() + 1):
        members = t[warp == w]
        votes[warp == w] = sum(1 << int(m % 32) for m in members if m % 3 == 0)
    tx, ty, tz = t % bx, t // bx % by, t // (bx * by)
    blocks = grid[0] * grid[1]
    idx = np.zeros((blocks, n, 5), np.int64)
    for b in range(blocks):
        gx, gy = b % grid[0], b // grid[0]
        idx[b, :, 0] = gx * bx + tx
        idx[b, :, 1] = gy * by + ty
        idx[b, :, 2] = tz
        idx[b, :, 3] = bx * 100 + by * 10 + bz
        idx[b, :, 4] = tx * 100 + ty * 10 + tz
    return (*(np.broadcast_to(a, (blocks, n)) for a in (lane, first, votes)), idx)


def _run(grid, block):
    blocks, n = grid[0] * grid[1], block[0] * block[1] * block[2]
    lane = cuda.device_array((blocks, n), np.int32)
    first = cuda.device_array((blocks, n), np.int64)
    votes = cuda.device_array((blocks, n), np.uint32)
    idx = cuda.device_array((blocks, n, 5), np.int64)
    warp_view[grid, block](lane, first, votes, idx)
    return [a.copy_to_host() for a in (lane, first, votes, idx)]


BLOCKS = [(16, 4, 1), (8, 8, 1), (2, 3, 1), (24, 3, 1), (4, 4, 4), (16, 16, 1),
          (32, 2, 1), (64, 1, 1), (1, 40, 1)]


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: "x".join(map(str, b)))
def test_warps_are_consecutive_linear_thread_numbers(warps32, block):
    grid = (3, 2)
    got = _run(grid, block)
    want = _model(grid, block)
    for name, g, w in zip(("laneid", "shfl_sync from lane 0", "ballot_sync", "indices"),
                          got, want):
        np.testing.assert_array_equal(g, w, err_msg=f"{name} in blocks of {block}")


def test_one_kernel_launched_with_blocks_of_several_shapes(warps32):
    """Each shape gets the code it needs, built when a launch first needs it; a block of
    whole rows of warps runs the code as written."""
    for block in [(16, 4, 1), (32, 2, 1), (8, 8, 1), (16, 4, 1), (64, 1, 1)]:
        got = _run((2, 1), block)
        for g, w in zip(got, _model((2, 1), block)):
            np.testing.assert_array_equal(g, w, err_msg=str(block))
    if warps32.target.subgroup_width == 32:
        return  # (sub-groups that are always warps: no block runs as a row)
    blocks = {facts.block for (_, _, facts) in warp_view._code}
    assert {(), (16, 4, 1), (8, 8, 1)} <= blocks


@cuda.jit
def square_reduce(a, out):
    """The usual warp reduction, in 16 x 16 blocks: one sum per warp of 32 threads."""
    t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
    i = cuda.blockIdx.x * 256 + t
    v = a[i]
    off = 16
    while off > 0:
        v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
        off //= 2
    if cuda.laneid == 0:
        out[i // 32] = v


def test_a_warp_reduction_in_square_blocks(warps32):
    a = np.arange(4 * 256, dtype=np.int64) % 97
    out = np.zeros(a.size // 32, np.int64)
    square_reduce[4, (16, 16)](a, out)
    np.testing.assert_array_equal(out, a.reshape(-1, 32).sum(axis=1))


@cuda.jit
def returns_then_meets_a_barrier(a, out, n):
    """Work-items past the end return before a barrier (the barrier rewrite resumes
    the others), then a warp operation: in a block run as one row."""
    sm = cuda.shared.array(64, np.int64)
    t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
    i = cuda.blockIdx.x * 64 + t
    if i >= n:
        return
    sm[t] = a[i]
    cuda.syncthreads()
    out[i] = sm[t] * 1000 + cuda.laneid * 10 + (cuda.activemask() == 0xFFFFFFFF)


@pytest.mark.parametrize("block", [(16, 4), (8, 8), (64, 1)], ids=lambda b: "x".join(map(str, b)))
def test_work_items_that_return_before_a_barrier_in_a_block_run_as_a_row(warps32, block):
    n = 150  # the last block: 22 work-items, the rest return
    a = np.arange(n, dtype=np.int64) * 3
    out = np.zeros(n, np.int64)
    returns_then_meets_a_barrier[3, block](a, out, n)
    t = np.arange(n)
    full = (t // 32 * 32 + 32 <= n)  # the warp's 32 lanes are all still running
    np.testing.assert_array_equal(out, a * 1000 + t % 32 * 10 + full)


@cuda.jit
def tiled_matmul(A, B, C):
    """numba's documented tiled product in 16 x 16 tiles: barriers around every use
    of shared memory, no value passed in step."""
    sA = cuda.shared.array((16, 16), np.float32)
    sB = cuda.shared.array((16, 16), np.float32)
    x, y = cuda.grid(2)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    acc = np.float32(0)
    for i in range(cuda.gridDim.x):
        sA[ty, tx] = A[y, tx + i * 16]
        sB[ty, tx] = B[ty + i * 16, x]
        cuda.syncthreads()
        for j in range(16):
            acc += sA[ty, j] * sB[j, tx]
        cuda.syncthreads()
    C[y, x] = acc


def _requires_width(device):
    t = device.target
    if not (t.subgroup_size_metadata and t.has("required_subgroup_size")):
        pytest.skip(f"{device.spec} does not require sub-group widths of its kernels")


def test_kernels_with_barriers_around_shared_memory_keep_their_blocks(device):
    """A kernel that passes no value in step keeps a 16 x 16 block's shape and the
    device's width (faster there: docs/performance.md, "Warps in lockstep")."""
    _requires_width(device)
    rng = np.random.default_rng(4)
    A, B = (rng.random((64, 64)).astype(np.float32) for _ in range(2))
    C = cuda.device_array((64, 64), np.float32)
    tiled_matmul[(4, 4), (16, 16)](cuda.to_device(A), cuda.to_device(B), C)
    np.testing.assert_allclose(C.copy_to_host(), A @ B, rtol=1e-5)
    facts = [f for (_, _, f) in tiled_matmul._code]
    assert facts and all(f.block == () and not f.warp_rows for f in facts)
    assert {a.info.get("warp_lockstep") for a in tiled_matmul._code.values()} == {"rows"}


def test_the_rewrite_computes_indices_from_the_row_and_verifies():
    text = "\n".join([
        "define void @k(ptr %o) {",
        "  %a = call i64 @__gpux_thread_idx(i32 1)",
        "  %b = call i64 @__gpux_block_dim(i32 0)",
        "  %c = call i64 @__gpux_global_idx(i32 2)",
        "  %d = call i64 @__gpux_block_idx(i32 1)",
        "  %s = add i64 %a, %b",
        "  %s2 = add i64 %s, %c",
        "  %s3 = add i64 %s2, %d",
        "  store i64 %s3, ptr %o",
        "  ret void",
        "}",
        "declare i64 @__gpux_thread_idx(i32)",
        "declare i64 @__gpux_block_dim(i32)",
        "declare i64 @__gpux_global_idx(i32)",
        "declare i64 @__gpux_block_idx(i32)"])
    flat = lanes.flatten_block(text, (8, 4, 2))
    mod = llvm.parse_assembly(flat)
    mod.verify()
    names = {f.name: f.is_declaration for f in mod.functions}
    # the block's own indices are computed; the hardware's, and the block index, are called
    assert not names["__gpux_flat_thread_idx"] and not names["__gpux_flat_block_dim"]
    assert not names["__gpux_flat_global_idx"]
    assert names["__gpux_thread_idx"] and names["__gpux_block_idx"]
    assert "__gpux_global_idx" not in names and "__gpux_block_dim" not in names
    body = str(mod.get_function("k"))
    assert "@__gpux_flat_thread_idx(i32 1)" in body and "@__gpux_block_idx(i32 1)" in body
    # text that asks for no index is left as it is
    plain = "define void @k() {\n  ret void\n}"
    assert lanes.flatten_block(plain, (8, 4, 2)) == plain


def test_the_rewritten_indices_are_cuda_s_numbering():
    """The functions the rewrite defines, compiled for this CPU with the hardware's
    linear id as a variable: every linear id of a block gives CUDA's thread index,
    and the block's shape is the launch's."""
    import ctypes

    text = "\n".join([
        "@lin = global i64 0",
        "define i64 @probe(i32 %d) {",
        "  %t = call i64 @__gpux_thread_idx(i32 %d)",
        "  %n = call i64 @__gpux_block_dim(i32 %d)",
        "  %s = mul i64 %n, 1000",
        "  %r = add i64 %s, %t",
        "  ret i64 %r",
        "}",
        "declare i64 @__gpux_thread_idx(i32)",
        "declare i64 @__gpux_block_dim(i32)"])
    block = (5, 3, 2)
    flat = lanes.flatten_block(text, block)
    hw = "declare i64 @__gpux_thread_idx(i32)"
    assert hw in flat  # (the hardware's index, dimension 0: here read from @lin)
    flat = flat.replace(hw, "define i64 @__gpux_thread_idx(i32 %d) {\n"
                            "  %v = load i64, ptr @lin\n  ret i64 %v\n}")
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(flat)
    mod.verify()
    tm = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    probe = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int32)(engine.get_function_address("probe"))
    lin = ctypes.c_int64.from_address(engine.get_global_value_address("lin"))
    for n in range(5 * 3 * 2):
        lin.value = n
        got = [probe(d) for d in range(3)]
        assert got == [block[0] * 1000 + n % 5, block[1] * 1000 + n // 5 % 3,
                       block[2] * 1000 + n // 15], n


CACHED = """
import json
import numpy as np
from numba_gpux import cuda

@cuda.jit(cache=True)
def lanes_of(out):
    t = cuda.threadIdx.x + cuda.threadIdx.y * cuda.blockDim.x
    out[t] = cuda.laneid + 100 * cuda.shfl_sync(0xFFFFFFFF, t, 0)

out = np.zeros(64, np.int64)
lanes_of[1, (16, 4)](out)
t = np.arange(64)
print(json.dumps({"ok": bool((out == t % 32 + 100 * (t // 32 * 32)).all()),
                  "typed": lanes_of.stats["neutral_compiles"]}))
"""


def test_code_from_the_disk_cache_runs_blocks_as_rows(warps32, tmp_path):
    runs = run_twice_cached(CACHED, tmp_path, warps32)
    assert runs[0]["ok"] and runs[1]["ok"]
    assert runs[1]["typed"] == 0  # the row's code found in the index, without typing


def test_devices_that_cannot_run_warps_still_say_so(device):
    if _can_require_32(device):
        pytest.skip(f"{device.spec} runs 32-wide warps")
    with pytest.raises(UnsupportedError, match="sub-groups of 32 lanes"):
        _run((1, 1), (16, 4, 1))
