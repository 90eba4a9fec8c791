"""``compute_capability`` of the facade's devices: an NVIDIA GPU's own; on every other
device the highest CUDA capability all of whose facade features work there
(numba_gpux/cuda/capability.py), so that numba.cuda code that picks a code path by
it picks one that runs."""

import numpy as np
import pytest

from numba_gpux import cuda
from numba_gpux.cuda import capability
from numba_gpux.cuda.intrinsics import Unavailable
from numba_gpux.devices import Device

#: every facade feature of every level
_ALL = frozenset(f for _, needs, _ in capability.LEVELS for f in needs)


# ------------------------------------------------------------------- the rule
def test_every_feature_reaches_the_highest_level():
    assert capability.derive(_ALL) == capability.LEVELS[-1][0] == (9, 0)
    assert capability.missing_at(_ALL) is None


def test_nothing_reaches_the_first_level_only():
    assert capability.derive(()) == (1, 1)
    assert capability.missing_at(()) == ((1, 2), ("int64_atomics", "warp32"))


@pytest.mark.parametrize("lacking, cc", [
    ("fp16", (3, 5)),            # no float16: below 5.3
    ("fp64", (1, 2)),            # no float64: below 1.3, whatever else it has
    ("warp32", (1, 1)),          # no 32-lane warps: no warp vote either
    ("int64_atomics", (1, 1)),
    ("grid_sync", (5, 3)),
    ("independent_thread_scheduling", (6, 0)),
    ("bfloat16", (7, 0)),
    ("fp8", (8, 0)),
    ("clusters", (8, 9)),
])
def test_one_missing_feature_caps_the_capability_below_its_level(lacking, cc):
    feats = _ALL - {lacking}
    assert capability.derive(feats) == cc
    level, missing = capability.missing_at(feats)
    assert missing == (lacking,) and level > cc


def test_a_feature_of_a_later_level_does_not_lift_an_earlier_gap():
    # clusters and bfloat16 but no float16: still below 5.3
    assert capability.derive({"int64_atomics", "warp32", "fp64", "bfloat16", "clusters"}) \
        == (3, 5)


def test_levels_increase_and_name_known_features():
    ccs = [cc for cc, _, _ in capability.LEVELS]
    assert ccs == sorted(ccs) and len(set(ccs)) == len(ccs)
    for _, needs, _ in capability.LEVELS:
        assert all(f in capability.FEATURES for f in needs)


# ------------------------------------------------- devices built from target data
def _device(target_name, features, limits=None, name="some device"):
    return Device(target_name=target_name, index=0, name=name, kind="gpu", vendor="Vendor",
                  runtime=None, limits=dict(limits or {}), target_features=frozenset(features))


def _expected_with(cc_without_grid_sync):
    """(6, 0) where the facade has a grid barrier, else the capability below it."""
    return (6, 0) if not isinstance(cuda.cg, Unavailable) else cc_without_grid_sync


def test_opencl_device_that_can_require_32_lanes():
    dev = _device("opencl", {"fp64", "fp16", "int64_atomics", "float_atomics", "subgroups",
                             "required_subgroup_size"})
    assert "warp32" in capability.device_features(dev)
    assert capability.capability_of(dev) == _expected_with((5, 3))


def test_opencl_device_without_float16():
    dev = _device("opencl", {"fp64", "int64_atomics", "subgroups", "required_subgroup_size"})
    assert capability.capability_of(dev) == (3, 5)


def test_opencl_device_that_cannot_require_32_lanes_has_no_warp_functions():
    dev = _device("opencl", {"fp64", "fp16", "int64_atomics", "subgroups"})
    assert "warp32" not in capability.device_features(dev)
    assert capability.capability_of(dev) == (1, 1)


def test_metal_device_without_float64():
    # Apple GPUs: half precision and SIMD-groups, but no doubles or 64-bit atomics
    dev = _device("metal", {"fp16", "subgroups"})
    assert capability.capability_of(dev) == (1, 1)


def test_cuda_device_keeps_its_own():
    dev = _device("cuda", set(), {"compute_capability": (9, 0)}, name="NVIDIA H200")
    assert capability.capability_of(dev) == (9, 0)
    dev = _device("cuda", set(), {"compute_capability": (5, 2)})
    assert capability.capability_of(dev) == (5, 2)


def test_a_target_feature_alone_does_not_claim_an_absent_facade_feature():
    # a device whose driver has bfloat16 does not reach 8.0 while cuda.bf16 is not
    # provided by the facade
    dev = _device("opencl", {"fp64", "fp16", "int64_atomics", "subgroups",
                             "required_subgroup_size", "independent_thread_scheduling",
                             "bfloat16"})
    has_bf16 = not isinstance(getattr(cuda, "bf16", Unavailable("bf16", "")), Unavailable)
    assert ("bfloat16" in capability.device_features(dev)) == has_bf16


# --------------------------------------------------------------- this machine's device
def _intel_opencl_cpu():
    import numba_gpux as gpux

    for d in gpux.devices():
        if d.target_name == "opencl" and d.kind == "cpu" and "Intel" in d.platform:
            return d
    pytest.skip("no Intel OpenCL CPU device here")


def test_intel_opencl_cpu_device_reports_what_works_there():
    gdev = _intel_opencl_cpu()
    dev = cuda.api._wrap(gdev)
    # float16, float64, 64-bit atomics and 32-wide sub-groups (required per kernel);
    # its sub-groups do not diverge independently (7.0)
    assert {"fp16", "fp64", "int64_atomics", "warp32"} <= capability.device_features(gdev)
    assert dev.compute_capability == _expected_with((5, 3))
    assert (dev.COMPUTE_CAPABILITY_MAJOR, dev.COMPUTE_CAPABILITY_MINOR) == dev.compute_capability
    assert dev.supports_float16 and dev.supports_bfloat16  # cuda.bf16 runs everywhere
    # the device's own name, not an NVIDIA GPU's
    assert dev.name == gdev.name and "NVIDIA" not in dev.name


def test_current_device_answers_as_its_wrapper(device):
    cur = cuda.get_current_device()
    assert cur.compute_capability == capability.capability_of(device)
    assert cuda.is_float16_supported() == cur.supports_float16
    assert cuda.is_bfloat16_supported() == cur.supports_bfloat16


# ----------------------------------------------- code gated on it takes a path that runs
def _gated_kernel():
    cc = cuda.get_current_device().compute_capability

    @cuda.jit
    def gated(a, b, out, took_fast):
        i = cuda.grid(1)
        if cc >= (5, 3):
            # half-precision arithmetic, 5.3 and later
            out[i] = cuda.fp16.hfma(a[i], b[i], a[i])
            took_fast[i] = 1
        else:
            out[i] = np.float16(np.float32(a[i]) * np.float32(b[i]) + np.float32(a[i]))
            took_fast[i] = 0
        if cc >= (3, 0):
            # a warp-shuffle sum over the 32 lanes, 3.0 and later
            v = np.int32(i)
            off = 16
            while off > 0:
                v += cuda.shfl_down_sync(0xFFFFFFFF, v, off)
                off //= 2
            if cuda.laneid == 0:
                took_fast[i] += 2 * v
    return cc, gated


@pytest.mark.needs("fp16")  # its arrays are float16 on either path
def test_code_gated_on_the_capability_runs_its_fast_path(device):
    cc, gated = _gated_kernel()
    n = 64
    a = (np.arange(n) % 7 + 1).astype(np.float16) / np.float16(4)
    b = (np.arange(n) % 5 + 1).astype(np.float16) / np.float16(2)
    d_out = cuda.device_array(n, np.float16)
    d_took = cuda.device_array(n, np.int32)
    gated[1, n](cuda.to_device(a), cuda.to_device(b), d_out, d_took)
    out, took = d_out.copy_to_host(), d_took.copy_to_host()
    np.testing.assert_allclose(out.astype(np.float32),
                               (a.astype(np.float32) * b + a).astype(np.float16), rtol=1e-3)
    if cc >= (5, 3):
        np.testing.assert_equal(took % 2, 1)
    if cc >= (3, 0):
        warps = np.arange(n).reshape(-1, 32)
        np.testing.assert_equal(took[::32] // 2, warps.sum(axis=1))
