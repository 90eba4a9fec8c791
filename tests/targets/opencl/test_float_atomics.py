"""Float atomic adds on OpenCL devices that have them (the feature "native_float_add",
from the capabilities the driver reports for cl_ext_float_atomics): ``atomicrmw fadd``
(SPIR-V's OpAtomicFAddEXT) instead of a compare-and-swap loop, on global and local
memory, float32 and float64, with the same sums; devices without the feature keep
the loop."""

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import cuda
from numba_gpux.targets.opencl.target import make_target

_BASE = {"subgroups", "required_subgroup_size", "fp64", "int64_atomics"}


@gpux.jit
def accumulate(x, total, per_group):
    i = gpux.grid(1)
    local = gpux.shared.array(1, np.float32)
    if gpux.thread_idx.x == 0:
        local[0] = 0
    gpux.barrier()
    if i < x.size:
        gpux.atomic.add(total, 0, x[i])
        gpux.atomic.sub(total, 1, x[i])
        gpux.atomic.add(local, 0, np.float32(x[i]))
    gpux.barrier()
    if gpux.thread_idx.x == 0:
        per_group[gpux.block_idx.x] = local[0]


_SIG = "void(float64[::1], float64[::1], float32[::1])"


def test_the_family_and_the_extension_follow_the_feature():
    native = make_target(features=_BASE | {"float_atomics", "native_float_add"})
    assert native.families == ("spirv_float_add", "spirv")
    assert any("SPV_EXT_shader_atomic_float_add" in on for on, _ in native.tm_flags)
    asm = gpux.compile(accumulate, _SIG, target=native).asm
    assert "OpAtomicFAddEXT" in asm and 'OpExtension "SPV_EXT_shader_atomic_float_add"' in asm
    # (the extension named by the driver is not enough: its capabilities decide)
    for features in (_BASE, _BASE | {"float_atomics"}):
        plain = make_target(features=features)
        assert plain.families == ("spirv",) and plain.tm_flags == ()
        asm = gpux.compile(accumulate, _SIG, target=plain).asm
        assert "OpAtomicFAddEXT" not in asm and "OpAtomicCompareExchange" in asm


def test_sums_are_right_with_the_devices_own_adds(opencl_device):
    if not {"fp64", "int64_atomics"} <= opencl_device.target.features:
        pytest.skip(f"{opencl_device.spec} has no float64 atomics")
    x = np.random.default_rng(5).integers(-50, 50, 1000).astype(np.float64) / 4
    total = gpux.to_device(np.zeros(2))
    per_group = gpux.to_device(np.zeros(8, np.float32))
    accumulate[8, 128](gpux.to_device(x), total, per_group)
    # (quarters of small integers: every order of the adds gives the exact sum)
    assert total.copy_to_host().tolist() == [x.sum(), -x.sum()]
    want = np.zeros(8 * 128)
    want[:1000] = x
    np.testing.assert_array_equal(per_group.copy_to_host(), want.reshape(8, 128).sum(axis=1))


def test_devices_say_whether_they_add_floats_themselves():
    """The feature follows the driver's capabilities: a device without
    cl_ext_float_atomics never has it (PoCL's CPU device)."""
    devs = [d for d in gpux.devices() if d.target_name == "opencl"]
    if not devs:
        pytest.skip("no OpenCL device")
    for d in devs:
        if not d.target.has("float_atomics"):
            assert not d.target.has("native_float_add")
        # the target made for the device searches the family exactly where it has it
        assert (d.target.families[0] == "spirv_float_add") == d.target.has("native_float_add")


def test_a_facade_kernel_with_one_float_atomic_adds_right(opencl_device):
    @cuda.jit
    def partial_sums(a, out, part):
        i = cuda.grid(1)
        v = np.float32(0)
        while i < a.size:
            v += a[i]
            i += cuda.gridsize(1)
        part[cuda.grid(1)] = v
        cuda.atomic.add(out, 0, v)

    a = np.arange(4096, dtype=np.float32) % 7
    out = cuda.to_device(np.zeros(1, np.float32))
    part = cuda.device_array(256, np.float32)
    partial_sums[2, 128](cuda.to_device(a), out, part)
    assert out.copy_to_host()[0] == a.sum()
