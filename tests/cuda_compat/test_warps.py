"""Warps of 32: kernels of the numba.cuda facade that use warp operations run with
32-wide sub-groups where the device can require that width (a clear error where it
cannot); ``gpux.jit`` kernels keep the device's natural sub-group width."""

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import cuda
from numba_gpux.errors import UnsupportedError


def _can_require_32(device) -> bool:
    t = device.target
    return t.subgroup_width == 32 or (
        bool(t.subgroup_size_metadata) and t.has("required_subgroup_size"))


@cuda.jit
def warp_facts(width, ballots, shuffled):
    i = cuda.grid(1)
    width[i] = cuda.warpsize
    ballots[i] = cuda.ballot_sync(0xFFFFFFFF, cuda.laneid % 2 == 0)
    shuffled[i] = cuda.shfl_sync(0xFFFFFFFF, i, 31)   # lane 31 of this warp


@pytest.mark.needs("subgroups")
def test_facade_warps_are_32_wide(device):
    n = 128
    width = cuda.device_array(n, np.int32)
    ballots = cuda.device_array(n, np.uint32)
    shuffled = cuda.device_array(n, np.int64)
    if not _can_require_32(device):
        with pytest.raises(UnsupportedError, match="sub-groups of 32 lanes"):
            warp_facts[1, n](width, ballots, shuffled)
        return
    warp_facts[1, n](width, ballots, shuffled)
    np.testing.assert_equal(width.copy_to_host(), 32)
    np.testing.assert_equal(ballots.copy_to_host(), 0x55555555)
    np.testing.assert_equal(shuffled.copy_to_host(), np.arange(n) // 32 * 32 + 31)


@pytest.mark.needs("subgroups")
def test_gpux_kernels_keep_the_natural_width(device):
    @gpux.jit
    def natural(out):
        out[gpux.grid(1)] = gpux.subgroup.size()

    @gpux.jit(subgroup_size=32)
    def required(out):
        out[gpux.grid(1)] = gpux.subgroup.size()

    out = gpux.device_array(64, np.int32)
    natural[1, 64](out)
    widths = set(out.copy_to_host().tolist())
    assert len(widths) == 1 and widths.pop() in (4, 8, 16, 32, 64)
    if _can_require_32(device):
        required[1, 64](out)
        np.testing.assert_equal(out.copy_to_host(), 32)


def test_requirement_reaches_the_spirv_only_for_warp_kernels():
    @cuda.jit
    def no_warps(out):
        out[cuda.grid(1)] = 1

    sig = "void(int32[::1], uint32[::1], int64[::1])"
    from numba_gpux.targets.opencl.target import make_target

    tgt = make_target(features={"subgroups", "required_subgroup_size", "fp64"})
    art = gpux.compile(warp_facts, sig, target=tgt)
    assert "intel_reqd_sub_group_size" in art.llvm_ir
    assert "OpExecutionMode" in art.text and "SubgroupSize 32" in art.text
    plain = gpux.compile(no_warps, "void(int32[::1])", target=tgt)
    assert "intel_reqd_sub_group_size" not in plain.llvm_ir
    # the kernel language's own kernels: no requirement
    natural = gpux.compile(gpux.jit(warp_facts.py_func), sig, target=tgt)
    assert "intel_reqd_sub_group_size" not in natural.llvm_ir
    assert "OpExecutionMode" in art.text
    assert not any("SubgroupSize" in line for line in natural.text.splitlines()
                   if "OpExecutionMode" in line)


def test_cuda_warps_satisfy_32_and_refuse_other_widths():
    sig = "void(int32[::1], uint32[::1], int64[::1])"
    ptx = gpux.compile(warp_facts, sig, target="cuda").text
    assert "vote.sync.ballot" in ptx or "vote" in ptx
    other = gpux.jit(subgroup_size=16)(warp_facts.py_func)
    with pytest.raises(UnsupportedError, match="always 32 wide"):
        gpux.compile(other, sig, target="cuda")


def test_device_without_required_sizes_is_a_clear_error():
    from numba_gpux.targets.opencl.target import make_target

    tgt = make_target(features={"subgroups", "fp64"})   # no cl_intel_required_subgroup_size
    with pytest.raises(UnsupportedError, match="warp_facts.*cannot require a sub-group width"):
        gpux.compile(warp_facts, "void(int32[::1], uint32[::1], int64[::1])", target=tgt)


def test_subgroup_size_must_be_a_power_of_two():
    from numba_gpux.errors import GpuxUserError

    with pytest.raises(GpuxUserError, match="power of two"):
        gpux.jit(subgroup_size=24)(lambda out: None)


@pytest.mark.needs("subgroups")
def test_warpsize_is_32_in_a_partial_warp(device):
    @cuda.jit
    def width(out):
        out[cuda.grid(1)] = cuda.warpsize

    out = cuda.device_array(5, np.int32)
    if not _can_require_32(device):
        pytest.skip(f"{device.spec} cannot require 32-wide sub-groups")
    width[1, 5](out)          # one block of 5 threads: a partial warp, still 32 wide
    np.testing.assert_equal(out.copy_to_host(), 32)


def test_cuda_warpsize_is_the_constant_32():
    @cuda.jit
    def width(out):
        out[cuda.grid(1)] = cuda.warpsize

    ptx = gpux.compile(width, "void(int32[::1])", target="cuda").text
    assert "], 32;" in ptx            # the constant is stored
    assert "min.u32" not in ptx      # not the size of a (possibly partial) warp


@pytest.mark.parametrize("vote", ["all_sync", "any_sync", "eq_sync", "ballot_sync"])
def test_vote_argument_types_are_checked_as_numba_cuda_does(vote):
    from numba.core.errors import TypingError

    ns = {"cuda": cuda}
    exec(f"def k(mask, pred, out):\n    i = cuda.grid(1)\n"
         f"    out[i] = cuda.{vote}(mask[i], pred[i])\n", ns)
    cases = [("float32", "int32", "Mask type must be an integer, not float32"),
             ("boolean", "int32", "Mask type must be an integer, not bool"),
             ("int32", "float64", "Predicate must be an integer or boolean, not float64")]
    for mask, pred, message in cases:
        with pytest.raises(TypingError, match=message):
            gpux.compile(cuda.jit(ns["k"]), f"void({mask}[:], {pred}[:], int32[:])",
                         target="cuda", cubin=False)
    # integer masks with integer or boolean predicates type and compile
    for pred in ("int32", "boolean"):
        gpux.compile(cuda.jit(ns["k"]), f"void(uint32[:], {pred}[:], int32[:])",
                     target="cuda", cubin=False)


@cuda.jit
def warp_sums(x, out):
    # the reduction of a block of 32 threads written for warps that run in lockstep:
    # values pass through shared memory without a barrier
    sm = cuda.shared.array(32, np.float32)
    t = cuda.threadIdx.x
    sm[t] = x[cuda.grid(1)]
    s = 16
    while s > 0:
        if t < s:
            sm[t] += sm[t + s]
        s //= 2
    if t == 0:
        out[cuda.blockIdx.x] = sm[0]


def test_warps_that_share_memory_run_in_lockstep(device):
    """A kernel of the facade with 1-D blocks that shares work-group memory runs with
    32-wide sub-groups where the device can require that width, so that a warp's
    lanes exchange values in program order as a GPU's do (a device running narrower
    sub-groups one after the other between barriers gave wrong sums)."""
    if not _can_require_32(device):
        pytest.skip(f"{device.spec} cannot require sub-groups of 32")
    x = np.random.default_rng(3).integers(0, 100, 32 * 40).astype(np.float32)
    out = cuda.device_array(40, np.float32)
    warp_sums[40, 32](cuda.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), x.reshape(40, 32).sum(axis=1))


def test_only_1d_kernels_that_share_memory_get_the_warps_width(device):
    """The width is required of kernels whose work-items share memory and differ in x
    only; a kernel with 2-D blocks keeps the device's width (its warps span rows of a
    block narrower than 32), and so does one that shares nothing."""
    t = device.target
    if not (t.subgroup_size_metadata and t.has("required_subgroup_size")):
        pytest.skip(f"{device.spec} cannot require a sub-group width")

    @cuda.jit
    def tiles(x, out):
        sm = cuda.shared.array((16, 16), np.float32)
        sm[cuda.threadIdx.y, cuda.threadIdx.x] = x[cuda.grid(1)]
        cuda.syncthreads()
        out[cuda.grid(1)] = sm[cuda.threadIdx.x, cuda.threadIdx.y]

    @cuda.jit
    def plain(x, out):
        out[cuda.grid(1)] = x[cuda.grid(1)] * 2

    def ir(fn):
        return gpux.compile(fn, "void(float32[::1], float32[::1])", target=device).llvm_ir

    assert t.subgroup_size_metadata in ir(warp_sums)
    assert t.subgroup_size_metadata not in ir(tiles)
    assert t.subgroup_size_metadata not in ir(plain)


@cuda.jit
def warp_tail_min(m, out):
    # a block's minimum with the last 32 steps unrolled and no barrier between them, as
    # older numba.cuda code writes them; threads numbered x first, as numba.cuda's
    row, col = cuda.grid(2)
    sm = cuda.shared.array(1024, np.float32)
    t = cuda.threadIdx.x + cuda.blockDim.x * cuda.threadIdx.y
    sm[t] = m[row, col]
    cuda.syncthreads()
    s = (cuda.blockDim.x * cuda.blockDim.y) // 2
    while s > 32:
        if t < s:
            sm[t] = min(sm[t], sm[t + s])
        cuda.syncthreads()
        s //= 2
    if t < 32:
        sm[t] = min(sm[t], sm[t + 32])
        sm[t] = min(sm[t], sm[t + 16])
        sm[t] = min(sm[t], sm[t + 8])
        sm[t] = min(sm[t], sm[t + 4])
        sm[t] = min(sm[t], sm[t + 2])
        sm[t] = min(sm[t], sm[t + 1])
    if t == 0:
        out[cuda.blockIdx.x, cuda.blockIdx.y] = sm[0]


def _block_mins(m, block):
    a, b = m.shape[0] // block[0], m.shape[1] // block[1]
    return m.reshape(a, block[0], b, block[1]).min(axis=(1, 3))


@pytest.mark.parametrize("block", [(32, 8), (64, 4), (32, 32), (128, 1)])
def test_warps_in_blocks_of_whole_rows_run_in_lockstep(device, block):
    """A facade kernel that reads a y index and shares memory runs its warps in
    lockstep where its launch's blocks are rows of whole warps (blockDim.x a multiple
    of 32, or one row): a warp-synchronous tail with no barrier between its steps gives
    CUDA's answer (at the device's own width, or without the sub-group barriers the
    compiler puts after its stores, it did not)."""
    if not _can_require_32(device):
        pytest.skip(f"{device.spec} cannot require sub-groups of 32")
    m = np.random.default_rng(7).random((block[0] * 3, block[1] * 2)).astype(np.float32)
    out = cuda.device_array((3, 2), np.float32)
    warp_tail_min[(3, 2), block](cuda.to_device(m), out)
    np.testing.assert_array_equal(out.copy_to_host(), _block_mins(m, block))


@pytest.mark.parametrize("block", [(16, 16), (8, 32), (4, 64), (16, 4)],
                         ids=lambda b: "x".join(map(str, b)))
def test_warps_that_span_rows_run_in_lockstep_too(device, block):
    """The same tail in blocks narrower than a warp's row: each warp of 32 consecutive
    thread numbers spans rows, and such blocks run as one row (``LaunchFacts.block``),
    in lockstep: the kernel passes values in step (its warp-lockstep kind "blocks")."""
    t = device.target
    if not (t.subgroup_size_metadata and t.has("required_subgroup_size")):
        pytest.skip(f"{device.spec} does not require sub-group widths of its kernels")
    m = np.random.default_rng(3).random((block[0] * 3, block[1] * 2)).astype(np.float32)
    out = cuda.device_array((3, 2), np.float32)
    warp_tail_min[(3, 2), block](cuda.to_device(m), out)
    np.testing.assert_array_equal(out.copy_to_host(), _block_mins(m, block))
    assert {art.info.get("warp_lockstep") for art in warp_tail_min._code.values()} == {"blocks"}
    assert tuple(block) + (1,) in {facts.block for (_, _, facts) in warp_tail_min._code}


@cuda.jit
def warp_shift(x, out):
    # each lane but a warp's first takes its left neighbour's value in place, with no
    # barrier between the read and the write: lanes in step all read first
    sm = cuda.shared.array(128, np.float32)
    t = cuda.threadIdx.x
    sm[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    if t % 32 > 0:
        sm[t] = sm[t - 1]
    cuda.syncthreads()
    out[cuda.grid(1)] = sm[t]


@pytest.mark.parametrize("block", [8, 24, 32, 40, 100])
def test_lanes_in_step_read_before_another_lane_writes(device, block):
    """A warp's lanes read what they read before any lane of the same statement writes,
    in partial warps too (a block of 8, or the last 8 lanes of 40): Intel's CPU driver
    ran such a sub-group's work-items one after another, and lane 2 read the value lane
    1 had just written (every lane got the block's first value)."""
    if not _can_require_32(device):
        pytest.skip(f"{device.spec} cannot require sub-groups of 32")
    x = np.arange(block * 3, dtype=np.float32)
    out = cuda.device_array(block * 3, np.float32)
    warp_shift[3, block](cuda.to_device(x), out)
    rows = x.reshape(3, block)
    want = rows.copy()
    for w in range(0, block, 32):
        end = min(w + 32, block)
        want[:, w + 1:end] = rows[:, w:end - 1]
    np.testing.assert_array_equal(out.copy_to_host(), want.ravel())


@cuda.jit
def warp_tail_sum_1d(x, out):
    sm = cuda.shared.array(256, np.float64)
    t = cuda.threadIdx.x
    sm[t] = x[cuda.grid(1)]
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 32:
        if t < s:
            sm[t] += sm[t + s]
        cuda.syncthreads()
        s //= 2
    if t < 32:
        sm[t] += sm[t + 32]
        sm[t] += sm[t + 16]
        sm[t] += sm[t + 8]
        sm[t] += sm[t + 4]
        sm[t] += sm[t + 2]
        sm[t] += sm[t + 1]
    if t == 0:
        out[cuda.blockIdx.x] = sm[0]


def test_unrolled_warp_tails_of_1d_kernels_run_in_lockstep(device):
    """The unrolled tail of a 1-D block reduction gives CUDA's sums: the compiler keeps
    each lane's loads after the other lanes' stores before them (a sub-group width of
    32 alone left the driver free to move the loads up)."""
    if not _can_require_32(device):
        pytest.skip(f"{device.spec} cannot require sub-groups of 32")
    x = np.random.default_rng(8).integers(0, 1000, 256 * 12).astype(np.float64)
    out = cuda.device_array(12, np.float64)
    warp_tail_sum_1d[12, 256](cuda.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), x.reshape(12, 256).sum(axis=1))


@cuda.jit
def tile_transpose(a, b):
    # a shared tile, a barrier between its stores and loads: right at any width
    tile = cuda.shared.array((32, 33), np.float32)
    x = cuda.blockIdx.x * 32 + cuda.threadIdx.x
    y = cuda.blockIdx.y * 32 + cuda.threadIdx.y
    for j in range(0, 32, cuda.blockDim.y):
        tile[cuda.threadIdx.y + j, cuda.threadIdx.x] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * 32 + cuda.threadIdx.x
    y = cuda.blockIdx.x * 32 + cuda.threadIdx.y
    for j in range(0, 32, cuda.blockDim.y):
        b[y + j, x] = tile[cuda.threadIdx.x, cuda.threadIdx.y + j]


def test_each_launch_runs_the_code_its_blocks_need(device):
    """A kernel that reads a y index, shares memory and orders its accesses with
    barriers, launched with blocks of whole rows of warps and with 16-wide blocks: the
    first runs code that requires the warp's width (faster there), the second the code
    at the device's own width (a 16-wide block's warp spans two rows, and the wider
    sub-group made the driver gather its loads), each built when a launch first needs
    it and both kept."""
    t = device.target
    if not (t.subgroup_size_metadata and t.has("required_subgroup_size")):
        pytest.skip(f"{device.spec} cannot require a sub-group width")
    a = np.random.default_rng(9).random((64, 64)).astype(np.float32)
    da = cuda.to_device(a)
    for block in [(32, 8), (16, 16)]:
        b = cuda.device_array((64, 64), np.float32)
        tile_transpose[(2, 2), block](da, b)
        if block == (32, 8):
            np.testing.assert_array_equal(b.copy_to_host(), a.T)
    codes = {facts.warp_rows: art for (_, _, facts), art in tile_transpose._code.items()}
    assert set(codes) == {True, False}
    assert t.subgroup_size_metadata in str(codes[True].llvm_ir)
    assert t.subgroup_size_metadata not in str(codes[False].llvm_ir)
    assert {a.info.get("warp_lockstep") for a in codes.values()} == {"rows"}


@cuda.jit
def half_warp_votes(pred, val, ballot, anyv, allv, eqv, many, mall, mall_ok):
    # each half-warp votes with its own mask in one converged call (legal on sm_70+)
    i = cuda.grid(1)
    lane = cuda.laneid
    m = 0x0000FFFF if lane < 16 else 0xFFFF0000
    p = pred[i] != 0
    ballot[i] = cuda.ballot_sync(m, p)
    anyv[i] = cuda.any_sync(m, p)
    allv[i] = cuda.all_sync(m, p)
    eqv[i] = cuda.eq_sync(m, p)
    many[i] = cuda.match_any_sync(m, val[i])
    lanes, same = cuda.match_all_sync(m, val[i])
    mall[i] = lanes
    mall_ok[i] = same


@pytest.mark.needs("subgroups")
def test_votes_and_matches_answer_for_their_mask_lanes_only(device):
    """A vote with a partial mask counts the mask's lanes only, as CUDA's vote.sync and
    match.sync do: the lanes outside it (here the other half-warp, which votes with its
    own mask) do not change the answer (a ballot returned the whole warp's bits)."""
    if not _can_require_32(device):
        pytest.skip(f"{device.spec} cannot require sub-groups of 32")
    # half-warp 0: all true, values all 7; half-warp 1: one true, values 7 and 9
    pred = np.zeros(64, np.int32)
    pred[:16] = 1
    pred[16 + 3] = 1
    pred[32:48] = 0
    pred[48:] = 1
    val = np.full(64, 7, np.int64)
    val[16 + 5] = 9
    outs = [cuda.device_array(64, dt) for dt in
            (np.uint32, np.int32, np.int32, np.int32, np.uint32, np.uint32, np.int32)]
    half_warp_votes[1, 64](pred, val, *outs)
    ballot, anyv, allv, eqv, many, mall, mall_ok = (o.copy_to_host() for o in outs)
    low, high = 0x0000FFFF, 0xFFFF0000
    want_ballot = [low, 1 << 19, 0, high]  # per half-warp of the 64 lanes
    for h in range(4):
        s = slice(16 * h, 16 * h + 16)
        m = low if h % 2 == 0 else high
        np.testing.assert_equal(ballot[s], want_ballot[h])
        np.testing.assert_equal(anyv[s], int(want_ballot[h] != 0))
        np.testing.assert_equal(allv[s], int(want_ballot[h] == m))
        np.testing.assert_equal(eqv[s], int(want_ballot[h] in (0, m)))
        if h == 1:  # lane 21 holds 9, the others 7
            np.testing.assert_equal(many[s], np.where(np.arange(16) == 5, 1 << 21,
                                                      high & ~(1 << 21)))
            np.testing.assert_equal(mall[s], 0)
            np.testing.assert_equal(mall_ok[s], 0)
        else:
            np.testing.assert_equal(many[s], m)
            np.testing.assert_equal(mall[s], m)
            np.testing.assert_equal(mall_ok[s], 1)
    # the same kernel compiles for CUDA, where the masks go to vote.sync and match.sync
    ptx = gpux.compile(half_warp_votes, "void(int32[::1], int64[::1], uint32[::1], "
                       "int32[::1], int32[::1], int32[::1], uint32[::1], uint32[::1], "
                       "int32[::1])", target="cuda", cubin=False).text
    assert "vote.sync.ballot" in ptx and "match.any.sync" in ptx


# ------------------------------------------ a barrier in a loop nest, an early return
# The barrier rewrite resumes work-items inside the loop nest; a loop that can go round
# without the barrier was then entered at two blocks, and Intel's CPU driver ran such a
# kernel with sub-groups of one work-item (numba_gpux/reducible.py)

@cuda.jit
def _shuffle_sum_after_a_barrier_loop(vals, ks, out, n, widths):
    t = cuda.threadIdx.x
    if t >= n:
        return
    sh = cuda.shared.array(1, np.float64)
    for a in range(ks.shape[0]):
        acc = 0.0
        for j in range(ks[a]):
            if t == 0:
                sh[0] = vals[j]
            cuda.syncthreads()
            acc += sh[0]
            cuda.syncthreads()
        v = acc + t
        off = 16
        while off > 0:
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
            off //= 2
        if t == 0:
            out[a] = v
    widths[t] = cuda.warpsize


@pytest.mark.needs("subgroups")
def test_warp_shuffles_after_a_loop_nest_of_barriers_and_an_early_return(device):
    if not _can_require_32(device):
        pytest.skip(f"{device.spec} cannot require sub-groups of 32")
    vals = np.array([3.0, 10.0, 20.0, 28.0, 1.0])
    ks = np.array([3, 5, 0], np.int32)
    out, widths = np.zeros(3), np.zeros(32, np.int32)
    _shuffle_sum_after_a_barrier_loop[1, 32](vals, ks, out, 32, widths)
    lanes = sum(range(32))
    assert out.tolist() == [33 * 32 + lanes, 62 * 32 + lanes, lanes]


@cuda.jit
def _lockstep_reads_before_the_next_store(vals, ks, out, n):
    t = cuda.threadIdx.x
    if t >= n:
        return
    sh = cuda.shared.array(1, np.float64)
    for a in range(ks.shape[0]):
        acc = 0.0
        for j in range(ks[a]):
            if t == 0:
                sh[0] = vals[j]
            cuda.syncthreads()
            acc += sh[0]  # no barrier before lane 0's next store: one warp, in lockstep
        out[a, t] = acc


def test_lanes_in_lockstep_after_a_loop_nest_of_barriers_and_an_early_return(device):
    if not _can_require_32(device):
        pytest.skip(f"{device.spec} cannot require sub-groups of 32")
    vals = np.array([3.0, 10.0, 20.0, 28.0, 1.0])
    ks = np.array([3, 5], np.int32)
    out = np.zeros((2, 32))
    _lockstep_reads_before_the_next_store[1, 32](vals, ks, out, 32)
    assert (out[0] == 33.0).all() and (out[1] == 62.0).all()


def _two_butterflies(a, o, lanes):
    # two loops over a tuple, each with a shuffle: unoptimized (opt=0), each loop keeps
    # the tuple index's out-of-range exit
    i = cuda.grid(1)
    v = a[i]
    for off in (16, 8, 4, 2, 1):
        v += cuda.shfl_xor_sync(0xFFFFFFFF, v, off)
    w = 1
    for off in (16, 8, 4, 2, 1):
        w += cuda.shfl_xor_sync(0xFFFFFFFF, w, off)
    o[i] = v - w
    lanes[i] = cuda.laneid


@pytest.mark.needs("subgroups")
@pytest.mark.parametrize("options", [{}, {"opt": False}, {"debug": True, "opt": False}],
                         ids=["optimized", "opt0", "debug"])
def test_warp_shuffles_in_unoptimized_kernels(device, options):
    # Intel's CPU driver ran the opt=0 code with sub-groups of one work-item (each
    # shuffle gave the lane its own value) until its loops were rotated
    if not _can_require_32(device):
        pytest.skip(f"{device.spec} cannot require sub-groups of 32")
    k = cuda.jit(**options)(_two_butterflies)
    a = np.arange(64, dtype=np.int32)
    o, lanes = np.zeros(64, np.int32), np.zeros(64, np.int32)
    k[1, 64](a, o, lanes)
    warp_sums = a.reshape(2, 32).sum(axis=1).repeat(32)
    np.testing.assert_array_equal(o, warp_sums - 32)
    np.testing.assert_array_equal(lanes, np.tile(np.arange(32), 2))


@cuda.jit
def shared_histogram(keys, bins):
    h = cuda.shared.array(16, np.int32)
    t = cuda.threadIdx.x
    if t < 16:
        h[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < keys.size:
        cuda.atomic.add(h, keys[i] & 15, 1)
    cuda.syncthreads()
    if t < 16:
        cuda.atomic.add(bins, t, h[t])


@cuda.jit
def shared_count_then_read(keys, out):
    # lanes read, with no barrier, a slot other lanes stored to: in step on a GPU
    h = cuda.shared.array(64, np.int32)
    t = cuda.threadIdx.x
    h[t] = keys[cuda.grid(1)]
    cuda.atomic.add(h, 0, 1)
    out[cuda.grid(1)] = h[t ^ 1]


def test_shared_atomics_met_only_across_barriers_keep_the_devices_width(device):
    """A block histogram in shared memory (atomics between two barriers) runs at the
    device's own sub-group width, where a warp's width made it 1.25-2.4x slower and
    nothing observes it; a kernel whose lanes also read what others stored with no
    barrier between keeps its warps in lockstep."""
    t = device.target
    if not (t.subgroup_size_metadata and t.has("required_subgroup_size")):
        pytest.skip(f"{device.spec} does not require sub-group widths of its kernels")
    keys = np.random.default_rng(5).integers(0, 1 << 20, 1000).astype(np.int64)
    bins = np.zeros(16, np.int32)
    shared_histogram[8, 128](keys, bins)
    np.testing.assert_array_equal(bins, np.bincount(keys & 15, minlength=16))
    assert {a.info.get("warp_lockstep") for a in shared_histogram._code.values()} == {None}
    out = np.zeros(64, np.int64)
    shared_count_then_read[1, 64](np.arange(64), out)
    kinds = {a.info.get("warp_lockstep") for a in shared_count_then_read._code.values()}
    assert kinds == {"always"}
