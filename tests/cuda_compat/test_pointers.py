"""Raw device pointers, as numba.cuda code uses them: ``a.gpu_data.device_pointer``
passed to a kernel with a ``CPointer`` parameter, and wrapped in the kernel with
``numba.carray`` / ``numba.farray``."""

import ctypes

import numpy as np
import pytest
from numba import carray, farray, types

import numba_gpux as gpux
from numba_gpux import cuda
from numba_gpux.errors import LaunchError


def test_carray_and_farray_on_a_pointer_argument(device):
    @cuda.jit(types.void(types.CPointer(types.float64), types.int64, types.int64))
    def fill(p, rows, cols):
        c = carray(p, (rows, cols))
        f = farray(p, (rows, cols), dtype=np.float64)
        i, j = cuda.grid(2)
        if i < rows and j < cols:
            c[i, j] = 10 * i + j
            cuda.syncthreads()
            if i == 0 and j == 0:
                f[rows - 1, 0] += 0.5  # element (rows - 1) in memory order

    a = cuda.device_array((3, 4), dtype=np.float64)
    fill[1, (3, 4)](a.gpu_data.device_pointer, 3, 4)
    want = 10.0 * np.arange(3)[:, None] + np.arange(4)
    want.flat[2] += 0.5
    np.testing.assert_array_equal(a.copy_to_host(), want)


def test_pointer_into_a_view_and_pointer_arithmetic(device):
    @cuda.jit("void(CPointer(int32), int64)")
    def bump(p, n):
        a = carray(p, n)
        i = cuda.grid(1)
        if i < n:
            a[i] += 100

    h = np.arange(16, dtype=np.int32)
    d = cuda.to_device(h)
    view = d[4:]
    assert view.gpu_data.device_pointer == d.gpu_data.device_pointer + 16
    bump[1, 16](view.gpu_data.device_pointer + 4 * 4, 3)  # elements 8, 9, 10
    want = h.copy()
    want[8:11] += 100
    np.testing.assert_array_equal(d.copy_to_host(), want)
    # numba.cuda's other spellings of the same address
    assert d.device_ctypes_pointer.value == d.gpu_data.device_pointer
    assert isinstance(d.gpu_data.device_ctypes_pointer, ctypes.c_void_p)
    assert d.gpu_data.size == h.nbytes


def test_voidptr_needs_a_dtype(device):
    @cuda.jit("void(voidptr)")
    def zero(p):
        a = carray(p, 4, dtype=np.uint8)
        a[cuda.grid(1) % 4] = 0

    d = cuda.to_device(np.full(8, 7, np.uint8))
    zero[1, 4](d.gpu_data.device_pointer)
    np.testing.assert_array_equal(d.copy_to_host(), [0, 0, 0, 0, 7, 7, 7, 7])

    def untyped(p):
        a = carray(p, 4)
        a[0] = 1

    with pytest.raises(Exception, match="explicit dtype required for void"):
        gpux.compile(untyped, "void(voidptr)", device=False, target=device)

    def mismatched(p):
        a = carray(p, 4, dtype=np.float32)
        a[0] = 1

    with pytest.raises(Exception, match="mismatching dtype 'float32'"):
        gpux.compile(mismatched, "void(CPointer(int32))", target=device)


def test_bad_pointers_are_launch_errors(device):
    @cuda.jit("void(CPointer(float32))")
    def one(p):
        carray(p, 1)[0] = 1.0

    with pytest.raises(LaunchError, match="does not point into a live"):
        one[1, 1](12345)  # no allocation there (a made-up or a host address)
    d = cuda.device_array(4, np.float32)
    stale = d.gpu_data.device_pointer
    del d
    import gc

    gc.collect()
    if device.target_name != "cuda":  # CUDA passes unknown addresses on as they are
        with pytest.raises(LaunchError, match="does not point into a live"):
            one[1, 1](stale)
    with pytest.raises(TypeError, match="No matching definition"):
        one[1, 1](1.5)


def test_pointer_of_another_device():
    devs = [d for d in gpux.devices()]
    if len(devs) < 2:
        pytest.skip("needs two devices")
    a, b = devs[:2]

    def one(p):
        carray(p, 1)[0] = 1.0

    k = gpux.jit("void(CPointer(float32))")(one)
    d = gpux.to_device(np.zeros(1, np.float32), device=a)
    from numba_gpux.memory import device_pointer

    with pytest.raises(LaunchError, match=f"points into memory of {a.spec}"):
        k[1, 1, b](device_pointer(d._alloc))
    k[1, 1, a](device_pointer(d._alloc))
    assert d.copy_to_host()[0] == 1.0


def test_pointer_kernels_compile_for_cuda():
    from numba_gpux.targets.cuda import toolkit

    def bump(p, n):
        a = carray(p, n)
        for i in range(n):
            a[i] += 1.0

    art = gpux.compile(bump, "void(CPointer(float32), int64)", target="cuda", cc=(8, 0),
                       cubin=False)
    assert ".param .u64" in art.text
    try:
        ok, msg = toolkit.ptxas_check(art.text, (8, 0))
    except FileNotFoundError as e:
        pytest.skip(str(e))
    assert ok, msg


def test_pointer_kernel_on_the_opencl_c_route(opencl_device):
    from gpux_testing import selected
    from numba_gpux.targets.opencl_c.target import source_device

    def scale(p, n, f):
        a = carray(p, n)
        i = gpux.grid(1)
        if i < n:
            a[i] *= f

    k = gpux.jit("void(CPointer(float32), int64, float32)")(scale)
    with selected(source_device(opencl_device)) as dev:
        d = gpux.to_device(np.arange(8, dtype=np.float32), device=dev)
        from numba_gpux.memory import device_pointer

        k[1, 8](device_pointer(d._alloc) + 4, 6, np.float32(2.0))
        np.testing.assert_array_equal(d.copy_to_host(), [0, 2, 4, 6, 8, 10, 12, 7])
        assert "__global" in gpux.compile(k, "void(CPointer(float32), int64, float32)",
                                          target=dev).text


def test_gpu_data_of_a_dtype_view_is_the_arrays(device):
    """As numba.cuda's views share their MemoryPointer: the same memory compares equal
    (a datetime64 array and its int64 view), a slice or another array does not."""
    dates = np.arange("2005-02", "2006-02", dtype="datetime64[D]")
    d = cuda.to_device(dates)
    viewed = d.view(np.int64)
    np.testing.assert_array_equal(viewed.copy_to_host(), dates.view(np.int64))
    assert viewed.gpu_data == d.gpu_data and hash(viewed.gpu_data) == hash(d.gpu_data)
    assert d[1:].gpu_data != d.gpu_data
    assert cuda.to_device(dates).gpu_data != d.gpu_data
