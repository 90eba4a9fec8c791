"""Warp shuffles on devices whose 32-wide sub-groups are split across vectors (CPUs,
the feature "split_subgroups"): kernels that require the width exchange values through
work-group memory (``Target.split_subgroup_prefix``) and give CUDA's answers; kernels
of the device's natural width, and devices without the feature, keep the device's
shuffles."""

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import cuda

FULL = 0xFFFFFFFF
DELTAS = (1, 5, 16, 31)


@cuda.jit
def shuffles(x, down, up, xor, idx):
    i = cuda.grid(1)
    v = x[i]
    lane = cuda.laneid
    for k in range(len(down)):
        d = (1, 5, 16, 31)[k]
        down[k, i] = cuda.shfl_down_sync(FULL, v, d)
        up[k, i] = cuda.shfl_up_sync(FULL, v, d)
        xor[k, i] = cuda.shfl_xor_sync(FULL, v, d)
        idx[k, i] = cuda.shfl_sync(FULL, v, (lane * 7 + d) % 32)


def _expected(x):
    n = x.size
    lanes = np.arange(n) % 32
    base = np.arange(n) - lanes
    down, up, xor, idx = (np.empty((len(DELTAS), n), x.dtype) for _ in range(4))
    for k, d in enumerate(DELTAS):
        # out of the warp: the lane's own value, as CUDA's shfl.sync gives it
        src = lanes + d
        down[k] = np.where(src < 32, x[base + np.minimum(src, 31)], x)
        src = lanes - d
        up[k] = np.where(src >= 0, x[base + np.maximum(src, 0)], x)
        src = lanes ^ d
        xor[k] = np.where(src < 32, x[base + np.minimum(src, 31)], x)
        idx[k] = x[base + (lanes * 7 + d) % 32]
    return down, up, xor, idx


def _values(dtype, n):
    i = np.arange(n)
    if dtype == np.int64:
        return (i * (1 << 33) + i * 7 - (1 << 40)).astype(dtype)   # high words differ
    if dtype == np.float64:
        return 1 / 3 + i * 1.000000000001   # needs all of a double's bits
    return (i * 3 - 50).astype(dtype) if dtype == np.int32 else (i * 0.5 + 0.25).astype(dtype)


def _split(device) -> bool:
    t = device.target
    return (t.has("split_subgroups") and bool(t.split_subgroup_prefix)
            and bool(t.subgroup_size_metadata) and t.has("required_subgroup_size"))


@pytest.mark.needs("subgroups")
@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.float64])
@pytest.mark.parametrize("block", [64, 2048, 8192])
def test_warp_shuffles_give_cudas_answers(device, dtype, block):
    """Through the work-group arrays, whose slots each warp of a block owns (up to the
    largest block, 8192 work-items on Intel's CPU driver, the arrays' size)."""
    if not (device.target.subgroup_width == 32 or (
            device.target.subgroup_size_metadata and device.target.has("required_subgroup_size"))):
        pytest.skip("the device cannot run warps of 32")
    if dtype == np.float64 and not device.target.has("fp64"):
        pytest.skip("no float64 on this device")
    if block > device.limits.get("max_threads_per_block", 1024):
        pytest.skip(f"work-groups of {block} exceed the device's limit")
    n = 2 * block
    x = _values(dtype, n)
    outs = [cuda.device_array((len(DELTAS), n), dtype) for _ in range(4)]
    shuffles[n // block, block](cuda.to_device(x), *outs)
    for got, want, what in zip(outs, _expected(x), ("down", "up", "xor", "idx")):
        np.testing.assert_array_equal(got.copy_to_host(), want, err_msg=what)


def test_exchange_only_where_a_width_is_required_on_a_split_device():
    from numba_gpux.targets.opencl.target import make_target

    sig = "void(float32[::1], float32[:, ::1], float32[:, ::1], float32[:, ::1], float32[:, ::1])"
    split = make_target(features={"subgroups", "required_subgroup_size", "fp64",
                                  "split_subgroups"})
    art = gpux.compile(shuffles, sig, target=split)
    assert "__gpux_sgsplit_i32_slots" in art.llvm_ir and "sub_group_barrier" in art.llvm_ir
    assert "sub_group_shuffle" not in art.llvm_ir
    # the device's shuffles: a kernel of the natural width, a device without the feature
    natural = gpux.compile(gpux.jit(shuffles.py_func), sig, target=split)
    assert "__gpux_sgsplit" not in natural.llvm_ir
    whole = make_target(features={"subgroups", "required_subgroup_size", "fp64"})
    plain = gpux.compile(shuffles, sig, target=whole)
    assert "__gpux_sgsplit" not in plain.llvm_ir and "sub_group_shuffle" in plain.llvm_ir


def test_cpu_devices_have_split_subgroups():
    from numba_gpux.targets.opencl.overlays import SPLIT_SLOTS

    cpus = [d for d in gpux.devices() if d.target_name == "opencl" and d.kind == "cpu"
            and d.target.has("subgroups")]
    if not cpus:
        pytest.skip("no OpenCL CPU device with sub-groups")
    for d in cpus:   # those whose largest work-group has a slot in the arrays
        fits = d.limits["max_threads_per_block"] <= SPLIT_SLOTS
        assert d.target.has("split_subgroups") == fits
    gpus = [d for d in gpux.devices() if d.target_name == "opencl" and d.kind == "gpu"]
    assert not any(d.target.has("split_subgroups") for d in gpus)
