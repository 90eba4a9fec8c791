"""``__cuda_array_interface__`` of arrays on OpenCL devices: the integer device pointer
numba_gpux gives each allocation (``device_ctypes_pointer``; OpenCL buffers have no
address), which the facade's arrays, kernels and ufuncs take back as views of the same
memory; any other address is refused."""

import numpy as np
import pytest

from numba_gpux import cai
from numba_gpux import cuda


class Holder:
    """Another library's array: only its interface, and the producer kept alive."""

    def __init__(self, arr, desc=None):
        self.arr = arr
        self.__cuda_array_interface__ = desc if desc is not None else \
            arr.__cuda_array_interface__


def test_the_interface_describes_the_array(opencl_device):
    d = cuda.to_device(np.arange(12, dtype=np.float32).reshape(3, 4))
    desc = d.__cuda_array_interface__
    assert desc["shape"] == (3, 4) and desc["strides"] is None and desc["typestr"] == "<f4"
    assert desc["version"] == 3 and desc["stream"] is None
    assert desc["data"] == (d.device_ctypes_pointer.value, False)
    view = d[1:, ::2].__cuda_array_interface__
    assert view["strides"] == (16, 8)
    assert view["data"][0] == desc["data"][0] + 16  # the view's first element


def test_a_view_through_the_interface_shares_the_memory(opencl_device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = cuda.to_device(a)
    w = cuda.as_cuda_array(Holder(d[1:, ::2]))
    np.testing.assert_array_equal(w.copy_to_host(), a[1:, ::2])
    w[0, 0] = -1.0  # written through the view, seen by the producer
    assert d.copy_to_host()[1, 0] == -1.0


def test_kernels_take_objects_with_the_interface(opencl_device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    d = cuda.to_device(a)

    @cuda.jit
    def add(x, v):
        i, j = cuda.grid(2)
        if i < x.shape[0] and j < x.shape[1]:
            x[i, j] += v

    add[1, (4, 4)](Holder(d[1:, ::2]), 100.0)
    want = a.copy()
    want[1:, ::2] += 100
    np.testing.assert_array_equal(d.copy_to_host(), want)

    @cuda.jit
    def first_column(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            out[i] = x[i, 0]

    out = cuda.device_array(3, np.float32)
    first_column[1, 3](Holder(d[::-1]), out)  # negative strides
    np.testing.assert_array_equal(out.copy_to_host(), want[::-1, 0])


def test_an_empty_array_has_a_null_pointer(opencl_device):
    z = cuda.to_device(np.zeros((0, 3)))
    desc = z.__cuda_array_interface__
    assert desc["data"][0] == 0 and desc["strides"] is None
    assert cuda.as_cuda_array(Holder(z)).shape == (0, 3)


def test_a_stream_in_the_interface_is_ours_again(opencl_device):
    s = cuda.stream()
    d = cuda.to_device(np.arange(8, dtype=np.float32), stream=s)
    desc = d.__cuda_array_interface__
    assert desc["stream"] == int(s)
    v = cuda.as_cuda_array(Holder(d))
    assert v.stream == s
    np.testing.assert_array_equal(v.copy_to_host(), np.arange(8, dtype=np.float32))


def test_an_address_of_no_buffer_is_refused(opencl_device):
    desc = {"shape": (4,), "typestr": "<f4", "data": (12345678, False), "version": 3}
    with pytest.raises(Exception, match="cannot use a Holder as a device array"):
        cuda.as_cuda_array(Holder(None, desc))

    @cuda.jit
    def touch(x):
        x[0] = 1

    with pytest.raises(Exception, match="cannot be passed to a kernel"):
        touch[1, 1](Holder(None, desc))


def test_an_array_reaching_past_its_allocation_is_refused(opencl_device):
    d = cuda.to_device(np.zeros(4, np.float32))
    start = d.__cuda_array_interface__["data"][0]
    desc = {"shape": (5,), "typestr": "<f4", "data": (start, False), "version": 3}
    with pytest.raises(Exception, match="past its allocation"):
        cuda.as_cuda_array(Holder(d, desc))


def test_layouts_read_and_written():
    desc = cai.write(1000, (2, 3), (24, 8), np.float64)
    assert desc["strides"] is None and desc["data"] == (1000, False)
    assert cai.read(desc) == (1000, (2, 3), (24, 8), np.dtype(np.float64))
    rev = cai.write(1000, (3,), (-8,), np.float64)
    assert rev["strides"] == (-8,)
    assert cai.read(rev)[0] == 1000 - 16  # the lowest address the array reaches
    with pytest.raises(NotImplementedError):
        cai.read({**desc, "mask": object()})


def test_ufuncs_take_objects_with_the_interface(opencl_device):
    @cuda.vectorize(["float64(float64, float64)"], target="cuda")
    def vadd(a, b):
        return a + b

    x = cuda.to_device(np.arange(5.0))
    got = vadd(Holder(x), 1.5)
    np.testing.assert_array_equal(np.asarray(got.copy_to_host() if hasattr(got, "copy_to_host")
                                             else got), np.arange(5.0) + 1.5)


def test_foreign_arrays_as_ufunc_and_gufunc_operands_and_outputs(opencl_device):
    """Another library's GPU arrays go into ``vectorize``/``guvectorize`` as operands and
    as ``out=`` (written in place, the result a view of the same memory), as numba.cuda
    takes them."""
    @cuda.vectorize(["float64(float64, float64)"])
    def vadd(a, b):
        return a + b

    @cuda.guvectorize(["(float64, float64, float64[:])"], "(),()->()")
    def gadd(x, v, out):
        out[0] = x + v

    h = np.linspace(0.0, 1.0, 10)
    src = Holder(cuda.to_device(h))
    np.testing.assert_array_equal(vadd(src, 6.0).copy_to_host(), h + 6.0)
    np.testing.assert_array_equal(gadd(src, np.float64(7)).copy_to_host(), h + 7.0)
    for fn, v in ((vadd, 6.0), (gadd, np.float64(7))):
        out = Holder(cuda.device_array(h.shape))
        got = fn(h, v, out=out)
        assert got.device_ctypes_pointer.value == out.arr.device_ctypes_pointer.value
        np.testing.assert_array_equal(out.arr.copy_to_host(), h + v)


def test_stream_handles_round_trip_through_the_interface(opencl_device):
    """A stream's ``handle`` converts to the int an array interface carries (an OpenCL
    queue has no number of its own: ``handle.queue`` is the queue); the consumer's
    view is on an external stream with that handle, ordered with the producer's."""
    s = cuda.stream()
    d = cuda.device_array(10, stream=s)
    assert d.__cuda_array_interface__["stream"] == int(s.handle) == s.handle.value != 0
    assert s.handle.queue is s.gpux_queue
    view = cuda.as_cuda_array(Holder(d))
    assert view.stream.external and not s.external
    assert int(view.stream.handle) == int(s.handle) and view.stream == s
    assert int(cuda.default_stream().handle) == 0


def test_a_launch_waits_for_each_foreign_arrays_stream(opencl_device):
    """Launching a kernel on other libraries' arrays first synchronizes the stream each
    array's interface names (the interface's consumer duty), once per array."""
    from unittest import mock

    s1, s2 = cuda.stream(), cuda.stream()
    a = cuda.to_device(np.arange(4.0), stream=s1)
    b = cuda.to_device(np.zeros(4), stream=s2)

    @cuda.jit
    def copy(x, y):
        i = cuda.grid(1)
        if i < x.size:
            y[i] = x[i] + 1.0

    real = cuda.cudadrv.driver.Stream.synchronize
    with mock.patch.object(cuda.cudadrv.driver.Stream, "synchronize", autospec=True,
                           side_effect=real) as spy:
        copy[1, 4](Holder(a), Holder(b))
    assert sorted(int(c.args[0].handle) for c in spy.call_args_list) == \
        sorted([int(s1.handle), int(s2.handle)])
    np.testing.assert_array_equal(b.copy_to_host(), np.arange(4.0) + 1.0)
    with mock.patch.object(cuda.cudadrv.driver.Stream, "synchronize", autospec=True,
                           side_effect=real) as spy:
        copy[1, 4](a, b)  # our own arrays: nothing to wait for
    assert spy.call_count == 0
