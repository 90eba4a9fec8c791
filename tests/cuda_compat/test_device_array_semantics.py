"""numba.cuda's device-array behaviours through the facade (``DeviceNDArray``):
constructor forms, strict copies, assignment errors and broadcasting, streams bound
to arrays, broadcast arrays kept broadcast, ``alloc_size``, transposes, negative
strides, the contiguity helpers of ``cudadrv.devicearray``, masked array interfaces,
``require_context``."""

import numpy as np
import pytest

import numba_gpux as gpux

from numba_gpux import cuda
from numba_gpux.cuda.cudadrv import devicearray, driver


@cuda.jit
def _sum_into(x, out):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(out, 0, x[i])


def test_constructor_forms(device):
    relaxed = devicearray.DeviceNDArray((1, 10), (800, 8), np.float64)
    assert relaxed.flags["C_CONTIGUOUS"] and relaxed.flags["F_CONTIGUOUS"]
    assert relaxed.stream == 0 and relaxed.alloc_size == 80
    with pytest.raises(TypeError, match="shape elements must be integers"):
        devicearray.DeviceNDArray((2.0,), (8,), np.float64)
    with pytest.raises(ValueError, match="strides not match ndim"):
        devicearray.DeviceNDArray((2, 2), (8,), np.float64)
    empty = devicearray.DeviceNDArray(shape=(0,), strides=(8,), dtype=np.int8)
    host = np.ndarray(shape=(0,), strides=(0,), dtype=np.int8)
    empty.copy_to_host(host)
    empty.copy_to_device(host)
    back = cuda.to_device(host)
    assert back.shape == (0,) and back.strides == (0,)
    # over memory from memalloc: the array and the pointer are the same bytes
    mem = cuda.current_context().memalloc(40)
    over = devicearray.DeviceNDArray((5,), (8,), np.int64, gpu_data=mem)
    over.copy_to_device(np.arange(5, dtype=np.int64))
    got = np.zeros(5, np.int64)
    driver.device_to_host(got, mem, 40)
    np.testing.assert_array_equal(got, np.arange(5))


def test_copy_to_device_checks_strides_contiguity_and_dtype(device):
    a_c = np.arange(125).reshape(5, 5, 5)
    a_f = np.array(a_c, order="F")
    d = cuda.to_device(a_c)
    with pytest.raises(ValueError) as e:
        d.copy_to_device(cuda.to_device(a_f))
    assert str(e.value) == f"incompatible strides: {a_c.strides} vs. {a_f.strides}"
    d.copy_to_device(cuda.to_device(a_c * 2))
    np.testing.assert_array_equal(d.copy_to_host(), a_c * 2)
    with pytest.raises(ValueError, match="non-contiguous buffer"):
        cuda.to_device(np.arange(20)).copy_to_device(cuda.to_device(np.arange(20))[::2])
    with pytest.raises(ValueError, match="non-contiguous buffer"):
        cuda.to_device(np.arange(25).reshape(5, 5, order="F"))[2].copy_to_device(np.ones(5))
    with pytest.raises(TypeError, match="incompatible dtype"):
        cuda.to_device(np.arange(4.0)).copy_to_device(cuda.to_device(np.arange(4)))


def test_copy_to_host_checks_as_numba_cuda_checks(device):
    d = cuda.to_device(np.arange(8, dtype=np.float32))
    with pytest.raises(TypeError, match="incompatible dtype"):
        d.copy_to_host(np.zeros(8, np.float64))
    # shapes equal but for axes of length 1: numba.cuda copies (it squeezes both)
    got = d.copy_to_host(np.zeros((1, 8), np.float32))
    np.testing.assert_array_equal(got, np.arange(8, dtype=np.float32).reshape(1, 8))
    with pytest.raises(ValueError, match="incompatible shape"):
        d.copy_to_host(np.zeros((2, 4), np.float32))
    with pytest.raises(ValueError, match="must be either C/F order"):
        cuda.device_array((2, 2), order="X")
    with pytest.raises(ValueError, match="must be either C/F order"):
        cuda.device_array((2, 2), order=5)
    assert cuda.device_array((2, 2), order="F").flags["F_CONTIGUOUS"]


def test_assignment_broadcasts_and_refuses_what_numba_cuda_refuses(device):
    h = np.arange(35).reshape(5, 7)
    d = cuda.to_device(h)
    h[:, 2] = 500
    d[:, 2] = 500
    h[1] = np.arange(7)
    d[1] = np.arange(7)
    h[3, 4] = -1
    d[3, 4] = -1
    np.testing.assert_array_equal(d.copy_to_host(), h)
    flat = cuda.to_device(np.arange(35))
    with pytest.raises(ValueError, match="Can't assign 3-D array to 1-D self"):
        flat[:] = np.ones((1, 2, 3))
    with pytest.raises(ValueError, match="Can't copy sequence with size 2 to array axis 0 "
                                         "with dimension 5"):
        cuda.to_device(np.arange(5))[:] = [1, 3]


def test_streams_bound_to_arrays(device):
    s = cuda.stream()
    arr = cuda.device_array((3, 3), dtype=np.float64, stream=s)
    assert arr.stream is s
    plain = cuda.device_array(3)
    bound = plain.bind(s)
    assert bound.stream is s and plain.stream == 0
    bound.copy_to_device(np.arange(3.0))  # the same memory
    np.testing.assert_array_equal(plain.copy_to_host(), np.arange(3.0))
    assert arr[1:].stream is s  # views keep the array's stream
    d = cuda.to_device(np.zeros(5), stream=s)
    assert d.stream is s
    d.setitem(slice(1, 3), 7.0, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), [0, 7, 7, 0, 0])


def test_broadcast_arrays_stay_broadcast(device):
    a = np.broadcast_to(np.array([3]), (10,))
    d = cuda.to_device(a)
    assert d.strides == (0,) and d._numba_type_.layout == "A"
    out = cuda.to_device(np.zeros(1, dtype=a.dtype))
    _sum_into[1, 16](d, out)
    assert out.copy_to_host()[0] == 30
    b = np.broadcast_to(np.arange(4.0)[:, None], (4, 3))
    db = cuda.to_device(b)
    assert db.strides == (8, 0)
    np.testing.assert_array_equal(db.copy_to_host(), b)


def test_alloc_size_and_pointers_of_views(device):
    d = cuda.to_device(np.arange(10.0))
    assert d.alloc_size == 80 and d[2:].alloc_size == 64 and d[::2].alloc_size == 72
    assert d[2:].gpu_data.device_pointer == d.gpu_data.device_pointer + 16
    assert cuda.device_array(0).alloc_size == 0


def test_transposes_and_negative_strides(device):
    d3 = cuda.to_device(np.arange(12).reshape(3, 4, 1))
    with pytest.raises(NotImplementedError, match="non-2D DeviceNDArray"):
        np.transpose(d3)
    d = cuda.to_device(np.arange(10.0))
    with pytest.raises(NotImplementedError, match="negative strides"):
        d[::-1].copy_to_host()
    from numba_gpux import DeviceArray

    np.testing.assert_array_equal(DeviceArray.copy_to_host(d[::-1]), np.arange(10.0)[::-1])


def test_contiguity_helpers():
    f = np.zeros((10, 12), order="F")
    assert not devicearray.is_contiguous(f)  # C-contiguity only, as numba.cuda
    assert devicearray.is_contiguous(np.zeros((10, 12)))
    assert devicearray.is_contiguous(np.broadcast_to(np.arange(3), (4, 3)))
    devicearray.sentry_contiguous(f)  # C or F passes
    with pytest.raises(ValueError, match="non-contiguous"):
        devicearray.sentry_contiguous(np.zeros((4, 4))[:, ::2])


def test_masked_array_interfaces_are_refused(device):
    desc = {"shape": (3,), "typestr": "<f8", "data": (0, False), "version": 3,
            "strides": None, "mask": object()}
    with pytest.raises(NotImplementedError, match="Masked arrays are not supported"):
        cuda.from_cuda_array_interface(desc)


def test_require_context_forbids_switching_devices(device):
    if len(cuda.gpus) < 2:
        pytest.skip("needs two devices")
    other = next(i for i in range(len(cuda.gpus)) if cuda.gpus[i] != cuda.get_current_device())

    @cuda.require_context
    def switch():
        with cuda.gpus[other]:
            pass

    with pytest.raises(RuntimeError, match="Cannot switch CUDA-context"):
        switch()
    with cuda.gpus[other]:  # outside it, switching works
        pass


def test_driver_memory_info(device):
    free, total = driver.driver.cuMemGetInfo()
    assert 0 <= free <= total and total == cuda.current_context().get_memory_info().total


def test_mapped_arrays_have_a_device_view_and_a_stream(device):
    s = cuda.stream()
    m = cuda.mapped_array(6, dtype=np.int32, stream=s)
    from numba_gpux.cuda._memory_api import MappedNDArray

    if not isinstance(m, MappedNDArray):
        pytest.skip("this device cannot address host memory: mapped_array is a host array")
    assert m.stream is s
    m[:] = np.arange(6)
    view = m.device_view()
    assert view.stream is s
    np.testing.assert_array_equal(view.copy_to_host(), np.arange(6))
    view[2:4] = 0  # the device array writes the host array's memory
    np.testing.assert_array_equal(m, [0, 1, 0, 0, 4, 5])
    with pytest.raises(TypeError):
        (m + 1).device_view()


def test_external_streams_take_only_what_the_runtime_can_check(device):
    rt = cuda.get_current_device().gpux_device.runtime
    if rt.buffers_are_addresses:  # CUDA: a CUstream handle, passed on as numba.cuda does
        st = cuda.external_stream(1234)
        assert st.external and int(st.handle) == 1234
    else:  # a raw address the driver would dereference is refused, never used
        with pytest.raises((NotImplementedError, gpux.GpuxUserError)) as e:
            cuda.external_stream(1234)
        assert type(rt).__name__ in str(e.value) or "CommandQueue" in str(e.value)
    assert int(cuda.default_stream()) == 0 and not cuda.default_stream().external
    assert int(cuda.stream()) != 0


def test_from_array_like_over_given_memory(device):
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    mem = cuda.current_context().memalloc(host.nbytes)
    d = devicearray.from_array_like(host, gpu_data=mem)
    d.copy_to_device(host)
    out = np.zeros_like(host)
    driver.device_to_host(out, mem, host.nbytes)
    np.testing.assert_array_equal(out, host)
    s = cuda.stream()
    like = devicearray.from_array_like(np.zeros((2, 5), order="F"), stream=s)
    assert like.is_f_contiguous() and like.stream is s


def test_kernels_use_mapped_and_managed_memory_without_copies(device):
    import warnings

    from numba_gpux.cuda._memory_api import MappedNDArray

    m = cuda.mapped_array(8, dtype=np.float64)
    if not isinstance(m, MappedNDArray):
        pytest.skip("this device cannot address host memory: mapped_array is a host array")
    g = cuda.managed_array(8, dtype=np.float64)
    m[:] = 1.0
    g[:] = 2.0

    @cuda.jit
    def add(x, y):
        i = cuda.grid(1)
        if i < x.size:
            x[i] += y[i]

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no implicit-copy warning: nothing is copied
        add[1, 8](m, g)
    cuda.synchronize()
    np.testing.assert_array_equal(m, 3.0)
    host = np.full(8, 1.0)  # an ordinary array is still copied in and back
    with pytest.warns(Warning, match="copy overhead"):
        add[1, 8](host, g)
    np.testing.assert_array_equal(host, 3.0)


@cuda.jit
def _write_repeatedly(x, times):
    i = cuda.grid(1)
    if i < x.size:
        for k in range(times):
            x[i] = x[i] + 1.0


def test_host_memory_outlives_the_kernels_that_use_it(device):
    """Dropping a mapped or managed array right after a launch that writes it frees its
    host memory only once the device's work is done (on a CPU device a kernel writing
    freed memory would end the process)."""
    for make in (cuda.managed_array, cuda.mapped_array):
        for _ in range(4):
            a = make(1 << 14, dtype=np.float32)
            a[:] = 0
            _write_repeatedly[64, 256](a, 2000)
            del a
    ctx = cuda.current_context()
    mem = ctx.memhostalloc(1 << 16, mapped=True) if _can_map() else None
    if mem is not None:
        view = np.ndarray(1 << 14, np.float32, buffer=mem)
        view[:] = 0
        _write_repeatedly[64, 256](view, 10)  # a MappedNDArray it is not: copied
        mem.free()  # explicit: waits for the device, then unregisters
    cuda.synchronize()


def _can_map() -> bool:
    try:
        cuda.current_context().memhostalloc(8, mapped=True)
    except NotImplementedError:
        return False
    return True


def test_auto_device_uses_mapped_memory_in_place(device):
    from numba_gpux.cuda._memory_api import MappedNDArray

    m = cuda.mapped_array(4, dtype=np.int64)
    if not isinstance(m, MappedNDArray):
        pytest.skip("this device cannot address host memory: mapped_array is a host array")
    d, copied = devicearray.auto_device(m)
    assert not copied
    d.copy_to_device(np.arange(4))
    np.testing.assert_array_equal(m, np.arange(4))
    h, copied = devicearray.auto_device(np.arange(3))
    assert copied and isinstance(h, devicearray.DeviceNDArray)


def test_arrays_of_python_objects_go_to_the_device_as_numba_cudas_do(device):
    """``to_device(None)`` (an optional array left out) and object arrays make device
    arrays of their shape, as numba.cuda's; their objects come back whole, and no
    kernel takes one."""
    none = cuda.to_device(None)
    assert none.shape == () and none.dtype == object and none.copy_to_host() is not None
    assert none.copy_to_host()[()] is None
    item = [1, "a"]
    objs = cuda.to_device(np.array([None, item, 3], dtype=object))
    assert objs.shape == (3,) and objs.dtype == object
    back = objs.copy_to_host()
    assert back[0] is None and back[1] is item and back[2] == 3
    into = np.empty(3, dtype=object)
    assert objs.copy_to_host(into) is into and into[1] is item
    with pytest.raises(gpux.errors.LaunchTypeError, match="pyobject cannot be passed"):
        _sum_into[1, 1](objs, cuda.device_array(1, np.float64))
    with pytest.raises(TypeError, match="objects only the whole array gives back"):
        objs[1:].copy_to_host()
