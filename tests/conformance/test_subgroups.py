"""Sub-group (warp) intrinsics on every device, checked against NumPy.

The sub-group width differs between devices (and, on the OpenCL CPU driver,
between kernels), so every kernel writes out its lane, sub-group size and
sub-group index, and the expectations are computed from those.
"""

from __future__ import annotations

import numpy as np
import pytest

import numba_gpux as gpux

pytestmark = pytest.mark.needs("subgroups")

sg = gpux.subgroup
BLOCK, GRID = 64, 2
N = BLOCK * GRID
DTYPES = [np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64]


@gpux.jit
def sg_info(info):
    i = gpux.grid(1)
    info[i, 0] = sg.lane_id()
    info[i, 1] = sg.size()
    info[i, 2] = sg.id()
    info[i, 3] = sg.count()


@gpux.jit
def sg_shuffles(info, v, out):
    i = gpux.grid(1)
    info[i, 0] = sg.lane_id()
    info[i, 1] = sg.size()
    info[i, 2] = sg.id()
    x = v[i]
    out[i, 0] = sg.shuffle(x, 0)
    out[i, 1] = sg.shuffle(x, sg.size() - 1 - sg.lane_id())
    out[i, 2] = sg.shuffle_up(x, 1)
    out[i, 3] = sg.shuffle_down(x, 2)
    out[i, 4] = sg.shuffle_xor(x, 1)
    out[i, 5] = sg.shuffle_xor(x, 3)


@gpux.jit
def sg_reductions(info, v, out):
    i = gpux.grid(1)
    info[i, 0] = sg.lane_id()
    info[i, 1] = sg.size()
    info[i, 2] = sg.id()
    x = v[i]
    out[i, 0] = sg.reduce(x, "add")
    out[i, 1] = sg.reduce(x, "min")
    out[i, 2] = sg.reduce(x, "max")


@gpux.jit
def sg_bitwise(info, v, out):
    i = gpux.grid(1)
    info[i, 0] = sg.lane_id()
    info[i, 1] = sg.size()
    info[i, 2] = sg.id()
    x = v[i]
    out[i, 0] = sg.reduce(x, "and")
    out[i, 1] = sg.reduce(x, "or")
    out[i, 2] = sg.reduce(x, "xor")


@gpux.jit
def sg_votes(info, v, out):
    i = gpux.grid(1)
    info[i, 0] = sg.lane_id()
    info[i, 1] = sg.size()
    info[i, 2] = sg.id()
    out[i, 0] = sg.all(v[i] > 0)
    out[i, 1] = sg.any(v[i] == 7)
    out[i, 2] = sg.ballot(v[i] % 3 == 0)
    out[i, 3] = sg.all(v[i] >= 0)


@gpux.jit
def sg_warp_sum(v, out):
    # a typical use: a block reduction with sub-group sums and no assumed width
    i = gpux.grid(1)
    s = sg.reduce(v[i], "add")
    if sg.lane_id() == 0:
        out[gpux.block_idx.x * sg.count() + sg.id()] = s


FULL = 0xFFFFFFFF


@gpux.jit
def sg_masked(info, v, out):
    # the member-mask forms (CUDA's *_sync spelling) with every lane as a member: the
    # same results as the unmasked forms on every target
    i = gpux.grid(1)
    info[i, 0] = sg.lane_id()
    info[i, 1] = sg.size()
    info[i, 2] = sg.id()
    x = v[i]
    sg.barrier(FULL)
    out[i, 0] = sg.shuffle(x, 0, FULL)
    out[i, 1] = sg.shuffle_up(x, 1, FULL)
    out[i, 2] = sg.shuffle_down(x, 2, FULL)
    out[i, 3] = sg.shuffle_xor(x, 1, FULL)
    out[i, 4] = sg.all(x > 0, FULL)
    out[i, 5] = sg.any(x == 7, FULL)
    out[i, 6] = sg.ballot(x % 3 == 0, FULL)


CONFORMANCE_KERNELS = [
    (sg_masked, "void(int32[:, ::1], int64[::1], int64[:, ::1])"),
    (sg_info, "void(int32[:, ::1])"),
    (sg_shuffles, "void(int32[:, ::1], float32[::1], float32[:, ::1])"),
    (sg_shuffles, "void(int32[:, ::1], int64[::1], int64[:, ::1])"),
    (sg_reductions, "void(int32[:, ::1], float64[::1], float64[:, ::1])"),
    (sg_reductions, "void(int32[:, ::1], uint32[::1], uint32[:, ::1])"),
    (sg_bitwise, "void(int32[:, ::1], int32[::1], int32[:, ::1])"),
    (sg_votes, "void(int32[:, ::1], int32[::1], uint64[:, ::1])"),
]


def _groups(info):
    """{(block, sub-group id): global indices ordered by lane}; checks the layout."""
    groups: dict = {}
    for i in range(N):
        lane, size, sid = info[i, 0], info[i, 1], info[i, 2]
        assert 0 <= lane < size, (i, lane, size)
        groups.setdefault((i // BLOCK, sid), {})[lane] = i
    out = {}
    for key, lanes in groups.items():
        size = info[next(iter(lanes.values())), 1]
        assert sorted(lanes) == list(range(size)), f"sub-group {key} lanes {sorted(lanes)}"
        out[key] = [lanes[k] for k in range(size)]
    return out


def _run(kernel, v, ncols, out_dtype=None):
    info = gpux.to_device(np.full((N, 4), -1, np.int32))
    out = gpux.to_device(np.zeros((N, ncols), out_dtype or v.dtype))
    kernel[GRID, BLOCK](info, gpux.to_device(v), out)
    return _groups(info.copy_to_host()), out.copy_to_host()


def _values(dtype, rng):
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(-100, 100, N).astype(dtype)
    lo = 0 if np.issubdtype(dtype, np.unsignedinteger) else -1000
    return rng.integers(lo, 1000, N).astype(dtype)


def test_subgroup_layout(device):
    info = gpux.to_device(np.full((N, 4), -1, np.int32))
    sg_info[GRID, BLOCK](info)
    h = info.copy_to_host()
    groups = _groups(h)
    sizes = {len(m) for m in groups.values()}
    assert all(s >= 1 for s in sizes)
    # sub-groups partition each work-group
    per_block = {}
    for (b, sid), members in groups.items():
        per_block.setdefault(b, []).extend(members)
    for b, members in per_block.items():
        assert sorted(members) == list(range(b * BLOCK, (b + 1) * BLOCK))
        assert len([k for k in groups if k[0] == b]) == h[b * BLOCK, 3]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_shuffles(device, dtype, rng):
    v = _values(dtype, rng)
    groups, out = _run(sg_shuffles, v, 6)
    exp = np.zeros_like(out)
    for members in groups.values():
        size = len(members)
        for lane, i in enumerate(members):
            src = lambda k: v[members[k]] if 0 <= k < size else v[i]  # noqa: E731
            exp[i] = [src(0), src(size - 1 - lane), src(lane - 1), src(lane + 2),
                      src(lane ^ 1), src(lane ^ 3)]
    np.testing.assert_array_equal(out, exp)


@pytest.mark.parametrize("dtype", [np.int8, np.uint16, np.bool_, np.float16],
                         ids=lambda d: np.dtype(d).name)
def test_shuffle_small_types(device, dtype, rng):
    v = (rng.integers(0, 2, N) if dtype is np.bool_ else rng.integers(-50, 100, N)).astype(dtype)
    groups, out = _run(sg_shuffles, v, 6)
    for members in groups.values():
        for lane, i in enumerate(members):
            assert out[i, 0] == v[members[0]]
            assert out[i, 4] == v[members[lane ^ 1]] if (lane ^ 1) < len(members) else True


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_reductions(device, dtype, rng):
    v = _values(dtype, rng)
    groups, out = _run(sg_reductions, v, 3)
    for members in groups.values():
        vals = v[members]
        s = vals.sum(dtype=dtype) if np.issubdtype(dtype, np.integer) else vals.sum()
        for i in members:
            if np.issubdtype(dtype, np.floating):
                np.testing.assert_allclose(out[i, 0], s, rtol=1e-5, atol=1e-3)
            else:
                assert out[i, 0] == s
            assert out[i, 1] == vals.min() and out[i, 2] == vals.max()


@pytest.mark.parametrize("dtype", [np.int32, np.uint64], ids=lambda d: np.dtype(d).name)
def test_bitwise_reductions(device, dtype, rng):
    v = rng.integers(0, 2**20, N).astype(dtype)
    groups, out = _run(sg_bitwise, v, 3)
    for members in groups.values():
        vals = v[members]
        exp = [np.bitwise_and.reduce(vals), np.bitwise_or.reduce(vals),
               np.bitwise_xor.reduce(vals)]
        for i in members:
            assert list(out[i]) == exp


def test_votes(device, rng):
    v = rng.integers(0, 12, N).astype(np.int32)
    v[:BLOCK // 2] = np.abs(v[:BLOCK // 2]) + 1  # some sub-groups all positive
    groups, out = _run(sg_votes, v, 4, np.uint64)
    for members in groups.values():
        vals = v[members]
        ballot = sum(1 << lane for lane, x in enumerate(vals) if x % 3 == 0 and lane < 64)
        for i in members:
            assert out[i, 0] == (vals > 0).all()
            assert out[i, 1] == (vals == 7).any()
            assert int(out[i, 2]) == ballot
            assert out[i, 3] == 1


def test_masked_forms_with_every_lane(device, rng):
    v = rng.integers(0, 12, N).astype(np.int64)
    v[:BLOCK // 2] += 1
    groups, out = _run(sg_masked, v, 7)
    for members in groups.values():
        size = len(members)
        vals = v[members]
        ballot = sum(1 << lane for lane, x in enumerate(vals) if x % 3 == 0 and lane < 64)
        for lane, i in enumerate(members):
            src = lambda k: v[members[k]] if 0 <= k < size else v[i]  # noqa: E731
            assert list(out[i]) == [src(0), src(lane - 1), src(lane + 2), src(lane ^ 1),
                                    (vals > 0).all(), (vals == 7).any(), ballot]


@gpux.jit
def sg_match(info, v, out):
    i = gpux.grid(1)
    info[i, 0] = sg.lane_id()
    info[i, 1] = sg.size()
    info[i, 2] = sg.id()
    x = v[i]
    out[i, 0] = sg.match_any(x)
    out[i, 1] = sg.match_all(x)
    out[i, 2] = sg.match_any(x, FULL)
    out[i, 3] = sg.match_all(x, FULL)


CONFORMANCE_KERNELS.append((sg_match, "void(int32[:, ::1], int64[::1], uint64[:, ::1])"))
CONFORMANCE_KERNELS.append((sg_match, "void(int32[:, ::1], float32[::1], uint64[:, ::1])"))


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.uint8])
def test_match(device, dtype, rng):
    v = rng.integers(0, 4, N).astype(dtype)
    v[BLOCK:BLOCK + BLOCK // 2] = 3  # sub-groups where every lane matches
    groups, out = _run(sg_match, v, 4, np.uint64)
    for members in groups.values():
        vals = v[members]
        for lane, i in enumerate(members):
            want = sum(1 << k for k, x in enumerate(vals) if x == vals[lane] and k < 64)
            assert int(out[i, 0]) == want and int(out[i, 2]) == want, (members, lane)
            assert out[i, 1] == out[i, 3] == (vals == vals[0]).all()


def test_match_is_bitwise_for_floats(device):
    # -0.0 and 0.0 are equal numbers with different bits; NaNs with equal bits match
    v = np.zeros(N, np.float32)
    v[1::2] = -0.0
    v[:4] = np.nan
    groups, out = _run(sg_match, v, 4, np.uint64)
    for members in groups.values():
        bits = v[members].view(np.uint32)
        for lane, i in enumerate(members):
            want = sum(1 << k for k, b in enumerate(bits) if b == bits[lane] and k < 64)
            assert int(out[i, 0]) == want


def test_member_mask_must_be_an_integer(device):
    from numba.core.errors import TypingError

    @gpux.jit
    def bad(v):
        v[0] = sg.shuffle(v[0], 0, 1.5)

    with pytest.raises(TypingError, match="subgroup.shuffle"):
        bad[1, 1](gpux.to_device(np.zeros(1, np.float32)))


def test_block_sum_with_subgroups(device, rng):
    v = rng.integers(-100, 100, N).astype(np.int64)
    info = gpux.to_device(np.zeros((N, 4), np.int32))
    sg_info[GRID, BLOCK](info)
    per_block = int(info.copy_to_host()[0, 3])
    out = gpux.to_device(np.zeros(GRID * per_block, np.int64))
    sg_warp_sum[GRID, BLOCK](gpux.to_device(v), out)
    sums = out.copy_to_host().reshape(GRID, per_block).sum(axis=1)
    np.testing.assert_array_equal(sums, v.reshape(GRID, BLOCK).sum(axis=1))


def test_reduce_rejects_unknown_op(device):
    from numba.core.errors import TypingError

    @gpux.jit
    def bad(v):
        v[0] = sg.reduce(v[0], "median")

    with pytest.raises(TypingError, match="median"):
        bad[1, 1](gpux.to_device(np.zeros(1, np.float32)))


@gpux.jit
def sg_exchange(out):
    # lanes publish through shared memory, wait at the sub-group barrier, read a neighbour
    buf = gpux.shared.array(256, np.int64)
    t = gpux.thread_idx.x
    lane = gpux.subgroup.lane_id()
    n = gpux.subgroup.size()
    base = t - lane
    buf[t] = t * 10
    gpux.subgroup.barrier()
    out[t, 0] = buf[base + (lane + 1) % n]
    out[t, 1] = n


CONFORMANCE_KERNELS.append((sg_exchange, "void(int64[:, ::1])"))


@pytest.mark.feature("shared_static")
def test_subgroup_barrier_orders_shared_memory(device):
    out = gpux.device_array((64, 2), np.int64)
    sg_exchange[1, 64](out)
    h = out.copy_to_host()
    t = np.arange(64)
    n = h[:, 1]
    lane = t % n  # sub-groups are consecutive work-items of a 1-D group
    np.testing.assert_array_equal(h[:, 0], (t - lane + (lane + 1) % n) * 10)


@gpux.jit
def sg_rotate(v, out):
    i = gpux.grid(1)
    out[i] = sg.shuffle(v[i], (sg.lane_id() + 1) % sg.size())


def test_python_modulo_of_a_lane_by_the_width_is_an_unsigned_remainder(device, rng):
    """lane_id() and size() (and id(), count()) are stated non-negative and positive to
    the optimizer: ``(lane_id() + 1) % size()`` needs no sign fix-up of Python's ``%``
    and no test of a zero divisor; the rotation is right."""
    v = rng.standard_normal(N).astype(np.float32)
    out = gpux.device_array(N, np.float32)
    sg_rotate[GRID, BLOCK](gpux.to_device(v), out)
    info = gpux.device_array((N, 4), np.int64)
    sg_info[GRID, BLOCK](info)
    lane, size = info.copy_to_host()[:, 0], info.copy_to_host()[:, 1]
    src = np.arange(N) - lane + (lane + 1) % size
    np.testing.assert_array_equal(out.copy_to_host(), v[src])
    if device.target_name == "opencl":
        art = gpux.compile(sg_rotate, "void(float32[::1], float32[::1])", target="opencl")
        body = art.llvm_ir[art.llvm_ir.index("define"):]
        assert " srem " not in body and " sdiv " not in body and " urem " in body, body
