"""Kernels whose memory accesses run along grid dimension 1 launch with the first two
dimensions exchanged where the device's lanes follow dimension 0 (lanes.py and the
``launch.lanes_follow_memory`` hook): which kernels are, that the rewrite only
exchanges dimensions, and that every such launch gives the same answers."""

import numpy as np
import pytest
from llvmlite import binding as llvm

import numba_gpux as gpux
from numba_gpux import cuda, lanes
from numba_gpux.hooks import trial
from gpux_testing import run_twice_cached

N, M = 37, 45  # not multiples of the blocks: the bounds checks matter


@cuda.jit
def stencil_ij(out, a):
    i, j = cuda.grid(2)
    if 0 < i < a.shape[0] - 1 and 0 < j < a.shape[1] - 1:
        out[i, j] = a[i - 1, j] + a[i + 1, j] + a[i, j - 1] + a[i, j + 1] - 4 * a[i, j]


@cuda.jit
def stencil_xy(out, a):
    x, y = cuda.grid(2)
    if 0 < y < a.shape[0] - 1 and 0 < x < a.shape[1] - 1:
        out[y, x] = a[y - 1, x] + a[y + 1, x] + a[y, x - 1] + a[y, x + 1] - 4 * a[y, x]


@cuda.jit
def matmul_ij(c, a, b):
    i, j = cuda.grid(2)
    if i < c.shape[0] and j < c.shape[1]:
        t = 0.0
        for k in range(a.shape[1]):
            t += a[i, k] * b[k, j]
        c[i, j] = t


@cuda.jit
def every_index(out):
    """Each of numba.cuda's indices, per dimension, written where the work-item is."""
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    j = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j, 0] = cuda.threadIdx.x
        out[i, j, 1] = cuda.threadIdx.y
        out[i, j, 2] = cuda.blockIdx.x
        out[i, j, 3] = cuda.blockIdx.y
        out[i, j, 4] = cuda.blockDim.x * 1000 + cuda.blockDim.y
        out[i, j, 5] = cuda.gridDim.x * 1000 + cuda.gridDim.y
        gi, gj = cuda.grid(2)
        si, sj = cuda.gridsize(2)
        out[i, j, 6] = gi * 1000 + gj
        out[i, j, 7] = si * 1000 + sj


@cuda.jit
def shared_tile(out, a):
    """A tile through shared memory with a barrier: work-groups keep their members."""
    tile = cuda.shared.array((8, 8), np.float64)
    i, j = cuda.grid(2)
    ti, tj = cuda.threadIdx.x, cuda.threadIdx.y
    if i < a.shape[0] and j < a.shape[1]:
        tile[ti, tj] = a[i, j]
    cuda.syncthreads()
    # the work-item mirrored in the block reads what its neighbour wrote
    mi, mj = 7 - ti, 7 - tj
    si = cuda.blockIdx.x * 8 + mi
    sj = cuda.blockIdx.y * 8 + mj
    if i < a.shape[0] and j < a.shape[1] and si < a.shape[0] and sj < a.shape[1]:
        out[i, j] = tile[mi, mj]


@cuda.jit
def warp_shuffle(out, a):
    i, j = cuda.grid(2)
    v = a[i, j]
    out[i, j] = cuda.shfl_down_sync(0xFFFFFFFF, v, 1)


def _ir(kernel, *args):
    kernel[(1, 1), (8, 8)](*args)
    (sig,) = kernel.signatures
    return kernel.kernel_ir(sig)[1]


def _data():
    rng = np.random.default_rng(7)
    return rng.random((N, M))


def test_which_kernels_read_along_the_second_dimension(device):
    a = _data()
    out = np.zeros_like(a)
    assert lanes.lanes_prefer_second_dim(_ir(stencil_ij, out, a))
    assert not lanes.lanes_prefer_second_dim(_ir(stencil_xy, out, a))
    sq = np.ones((8, 8))
    assert lanes.lanes_prefer_second_dim(_ir(matmul_ij, sq.copy(), sq, sq))
    # one-dimensional kernels never ask for dimension 1
    assert not lanes.lanes_prefer_second_dim(_ir(cuda.jit(lambda v: None), np.zeros(3)))


def test_kernels_that_depend_on_sub_groups_keep_their_dimensions(device):
    if "subgroups" not in device.target_features:
        pytest.skip(f"{device.spec} has no sub-groups")
    a = np.ones((8, 8), np.float32)
    text = _ir(warp_shuffle, np.zeros_like(a), a)
    assert "__gpux_sg_" in text
    assert not lanes.lanes_prefer_second_dim(text)


def test_the_rewrite_exchanges_only_the_dimensions_and_verifies(device):
    a = _data()
    text = _ir(every_index, np.zeros((N, M, 8), np.int64))
    swapped = lanes.exchange_first_dims(text)
    calls = [ln for ln in text.split("\n") if "call" in ln and "idx(i32" in ln]
    assert calls and len(swapped.split("\n")) == len(text.split("\n"))
    for old, new in zip(text.split("\n"), swapped.split("\n")):
        if old == new:
            continue
        # only the dimension argument of an index intrinsic changed, 0 <-> 1
        assert old.replace("(i32 0)", "(i32 X)").replace("(i32 1)", "(i32 0)") \
            .replace("(i32 X)", "(i32 1)") == new
    assert lanes.exchange_first_dims(swapped) == text
    llvm.parse_assembly(swapped).verify()
    del a


def _launch_both(kernel, make_args, grid, block):
    """The kernel's outputs launched with the exchange and without it."""
    got = []
    for on in (True, False):
        with trial({"launch.lanes_follow_memory": on}):
            k = cuda.jit(kernel.py_func)  # a fresh kernel: the hook is read at its build
            args = make_args()
            k[grid, block](*args)
            got.append((args, any(s.facts.lanes for s in k._shims.values())))
    return got


@pytest.mark.parametrize("block", [(8, 8), (4, 16), (16, 4), (2, 8), (8, 2)])
def test_exchanged_launches_give_the_same_answers(device, block):
    a = _data()
    grid = ((N + block[0] - 1) // block[0], (M + block[1] - 1) // block[1])
    (on, exchanged), (off, exchanged_off) = _launch_both(
        stencil_ij, lambda: (np.zeros_like(a), a.copy()), grid, block)
    np.testing.assert_array_equal(on[0], off[0])
    want = np.zeros_like(a)
    want[1:-1, 1:-1] = a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] - 4 * a[1:-1, 1:-1]
    np.testing.assert_allclose(on[0], want, rtol=1e-12, atol=1e-12)
    assert not exchanged_off
    if device.kind == "cpu":
        # the exchanged code runs where the block has 4 or more threads along y
        assert exchanged == (block[1] >= 4)
    (on, _), (off, _) = _launch_both(
        every_index, lambda: (np.zeros((N, M, 8), np.int64),), grid, block)
    np.testing.assert_array_equal(on[0], off[0])
    bi, bj = np.meshgrid(np.arange(N), np.arange(M), indexing="ij")
    np.testing.assert_array_equal(on[0][..., 0], bi % block[0])
    np.testing.assert_array_equal(on[0][..., 3], bj // block[1])
    np.testing.assert_array_equal(on[0][..., 6], bi * 1000 + bj)


def test_shared_memory_and_barriers_keep_their_work_groups(device):
    a = _data()
    grid = ((N + 7) // 8, (M + 7) // 8)
    (on, _), (off, _) = _launch_both(shared_tile, lambda: (np.zeros_like(a), a.copy()),
                                     grid, (8, 8))
    np.testing.assert_array_equal(on[0], off[0])
    assert np.count_nonzero(on[0]) > N * M // 2


def test_matmul_through_the_exchange_matches_numpy(device):
    rng = np.random.default_rng(3)
    a, b = rng.random((N, 20)), rng.random((20, M))
    (on, _), _ = _launch_both(matmul_ij, lambda: (np.zeros((N, M)), a, b),
                              ((N + 7) // 8, (M + 7) // 8), (8, 8))
    np.testing.assert_allclose(on[0], a @ b, rtol=1e-12)


def test_portable_kernels_take_the_exchange_too(device):
    @gpux.jit
    def scale(out, a):
        i, j = gpux.grid(2)
        if i < a.shape[0] and j < a.shape[1]:
            out[i, j] = 2 * a[i, j]

    a = _data()
    out = np.zeros_like(a)
    scale[((N + 7) // 8, (M + 7) // 8), (8, 8)](out, a)
    np.testing.assert_array_equal(out, 2 * a)


def test_one_kernel_launched_both_ways_builds_each_code_once(device):
    k = cuda.jit(stencil_ij.py_func)
    a = _data()
    want = np.zeros_like(a)
    want[1:-1, 1:-1] = a[:-2, 1:-1] + a[2:, 1:-1] + a[1:-1, :-2] + a[1:-1, 2:] - 4 * a[1:-1, 1:-1]
    for block in ((8, 8), (64, 1), (16, 4), (1, 64), (8, 8)):
        out = cuda.to_device(np.zeros_like(a))
        grid = ((N + block[0] - 1) // block[0], (M + block[1] - 1) // block[1])
        k[grid, block](out, cuda.to_device(a))
        np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-12, atol=1e-12)
    # the first launch built the code it needed, the second the other one; no more after
    expected = 2 if device.kind == "cpu" else 1
    assert k.stats["target_compiles"] == expected


CACHED = """
import json, sys
import numpy as np
from numba_gpux import cache, cuda

@cuda.jit(cache=True)
def k(out, a):
    i, j = cuda.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        out[i, j] = 3 * a[i, j]

a = np.arange(40 * 24, dtype=np.float64).reshape(40, 24)
out = np.zeros_like(a)
k[(5, 3), (8, 8)](out, a)
print(json.dumps({"ok": bool((out == 3 * a).all()), "stats": dict(cache.stats),
                  "typed": k.stats["neutral_compiles"],
                  "exchanged": any(s.facts.lanes for s in k._shims.values())}))
"""


def test_code_from_the_disk_cache_is_exchanged_without_typing(device, tmp_path):
    if device.kind != "cpu":
        pytest.skip("the exchange is the default on CPU devices only")
    runs = run_twice_cached(CACHED, tmp_path, device)
    first, second = runs
    assert first["ok"] and second["ok"]
    assert first["exchanged"] and second["exchanged"]
    assert second["typed"] == 0  # found in the index: no typing, and still exchanged


def test_the_rewrite_leaves_dimension_2_and_other_calls_alone():
    text = ("  %a = call i64 @__gpux_thread_idx(i32 noundef 2), !dbg !0\n"
            "  %b = tail call i64 @__gpux_block_idx(i32 0) #1\n"
            "  %c = call i64 @__gpux_global_idx(i32 1)\n"
            "  %d = call i64 @helper(i32 1)\n"
            "  ; call i64 @__gpux_grid_dim(i32 0)")
    got = lanes.exchange_first_dims(text).split("\n")
    assert got[0] == text.split("\n")[0]
    assert got[1] == "  %b = tail call i64 @__gpux_block_idx(i32 1) #1"
    assert got[2] == "  %c = call i64 @__gpux_global_idx(i32 0)"
    assert got[3:] == text.split("\n")[3:]  # another function, and a comment


def test_explicit_layout_a_signatures_know_contiguous_strides(device):
    """``cuda.jit("void(complex64[:, :], ...)")`` given contiguous arrays: their
    innermost stride is the item size, which the code knows (a stride fact, as for
    views), so a grid-stride loop over ``x[i, j]`` is exchanged too."""
    def julia(x, div, iters):
        xs, ys = cuda.grid(2)
        xstride, ystride = cuda.gridsize(2)
        for k in range(iters):
            for i in range(xs, x.shape[0], xstride):
                for j in range(ys, x.shape[1], ystride):
                    z = x[i, j]
                    if div[i, j] < 0 and abs(z) > 2:
                        div[i, j] = k
                    x[i, j] = z * z + complex(-0.8, 0.156)

    re, im = np.meshgrid(np.linspace(-1.5, 1.5, N), np.linspace(-1.5, 1.5, M), indexing="ij")
    x0 = (re + 1j * im).astype(np.complex64)
    got = []
    for on in (True, False):
        with trial({"launch.lanes_follow_memory": on}):
            k = cuda.jit("void(complex64[:, :], int32[:, :], int32)")(julia)
            x, d = cuda.to_device(x0), cuda.to_device(np.full((N, M), -1, np.int32))
            k[(3, 3), (8, 8)](x, d, 20)
            got.append(d.copy_to_host())
            (shim,) = k._shims.values()
            if device.target.array_stride_facts:
                assert {(0, 8), (1, 4)} <= set(shim.facts.strides)
            assert shim.facts.lanes == (on and device.kind == "cpu")
    np.testing.assert_array_equal(got[0], got[1])
    # the escape times, computed the same way on the host
    x, want = x0.copy(), np.full((N, M), -1, np.int32)
    for k in range(20):
        want[(want < 0) & (np.abs(x) > 2)] = k
        x = (x * x + np.complex64(complex(-0.8, 0.156))).astype(np.complex64)
    assert np.mean(got[0] == want) > 0.99  # (float32 rounding may move a point by one)
