"""What an OpenCL device's built programs depend on: the disk cache keys kept driver
binaries by it, and OpenCL C source is built without pyopencl's own program cache
(which keys a binary by device and source alone, and unpickles what it reads back)."""

import os

import numpy as np
import pytest

import numba_gpux as gpux


def test_a_cpu_devices_identity_names_the_host_processor_and_driver_settings(
        opencl_device, monkeypatch):
    cl = pytest.importorskip("pyopencl")
    import llvmlite.binding as llvm

    rt = opencl_device.runtime
    if not rt.cl_device.type & cl.device_type.CPU:
        pytest.skip("not a CPU device: its binaries do not depend on the host processor")
    for name in [k for k in os.environ if k.startswith("CL_CONFIG_")]:
        monkeypatch.delenv(name)
    plain = rt.binary_identity()
    assert llvm.get_host_cpu_name() in plain
    assert llvm.get_host_cpu_features().flatten() in plain
    monkeypatch.setenv("NUMBA_GPUX_SOMETHING_ELSE", "1")
    assert rt.binary_identity() == plain  # an unrelated setting keeps the programs
    monkeypatch.setenv("CL_CONFIG_CPU_TARGET_ARCH", "corei7")
    other = rt.binary_identity()
    assert other != plain and "CL_CONFIG_CPU_TARGET_ARCH=corei7" in other


def test_opencl_c_programs_are_not_kept_in_pyopencls_cache(opencl_device, monkeypatch,
                                                           tmp_path):
    pytest.importorskip("pyopencl")
    from gpux_testing import selected
    from numba_gpux.targets.opencl_c.target import source_device

    # pyopencl's cache folder follows XDG_CACHE_HOME (platformdirs), read at each build
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("PYOPENCL_NO_CACHE", raising=False)

    @gpux.jit
    def add_seven(a):  # a kernel of its own: built here, not found in memory
        i = gpux.grid(1)
        if i < a.size:
            a[i] += 7

    with selected(source_device(opencl_device)) as dev:
        a = gpux.to_device(np.arange(10, dtype=np.int32), device=dev)
        add_seven[1, 16](a)
        assert (a.copy_to_host() == np.arange(10) + 7).all()
    # (pyopencl's invoker cache, pytools/, and the driver's own cache may be there)
    assert not (tmp_path / "pyopencl").exists(), sorted(p.name for p in tmp_path.rglob("*"))
