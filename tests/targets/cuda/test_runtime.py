"""The CUDA runtime on a real NVIDIA GPU (skipped without one), checked against NumPy.

Also, without a GPU: DLPack structures round-trip through NumPy on host memory.
"""

from __future__ import annotations

import ctypes
import gc
import importlib.util
import math
import os

import numpy as np
import pytest

import numba_gpux as gpux

_spec = importlib.util.spec_from_file_location(
    "gpux_cuda_test_kernels", os.path.join(os.path.dirname(__file__), "kernels.py"))
K = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(K)

cuda = pytest.mark.cuda


# ------------------------------------------------------------ host-only checks

@pytest.mark.skipif(not hasattr(np, "from_dlpack"), reason="np.from_dlpack is new in NumPy 1.23")
def test_dlpack_export_is_read_by_numpy():
    from numba_gpux.targets.cuda import interop

    a = np.arange(24, dtype=np.float32).reshape(4, 6)[:, ::2]
    cap = interop.to_capsule(a.ctypes.data, a.shape, a.strides, a.dtype, interop.KDL_CPU, 0, a)

    class Holder:
        def __dlpack__(self, stream=None, **kw):
            return cap  # noqa: F821 - called before the del below

        def __dlpack_device__(self):
            return (interop.KDL_CPU, 0)

    b = np.from_dlpack(Holder())
    assert b.ctypes.data == a.ctypes.data and b.strides == a.strides
    np.testing.assert_array_equal(b, a)
    del b, cap
    gc.collect()
    assert not interop._live


def test_dlpack_import_reads_numpy_capsules():
    from numba_gpux.targets.cuda import interop

    x = np.arange(10, dtype=np.int64)[::-2]
    ptr, off, shape, strides, dtype, owner, dev = interop.capsule_view(
        x.__dlpack__(), accept=(interop.KDL_CPU,))
    assert ptr + off == x.ctypes.data
    assert shape == x.shape and strides == x.strides and dtype == x.dtype
    assert dev == (interop.KDL_CPU, 0)
    assert interop.capsule_view(x.__dlpack__(), accept=(interop.KDL_CUDA,)) is None


# ------------------------------------------------------------ on a GPU

@cuda
def test_device_reports_compute_capability(cuda_device):
    cc = cuda_device.limits["compute_capability"]
    assert cuda_device.target.cc == cc
    assert cuda_device.target.cpu == f"sm_{cc[0]}{cc[1]}"


@cuda
def test_facade_device_attributes_come_from_the_driver(cuda_device):
    """numba.cuda's ``device.<NAME>`` is the driver's CU_DEVICE_ATTRIBUTE_<NAME>, also for
    names numba_gpux keeps no limit of."""
    from numba_gpux import cuda as facade

    d = facade.gpus[[g.gpux_device for g in facade.gpus].index(cuda_device)]
    assert d.MULTIPROCESSOR_COUNT == cuda_device.limits["compute_units"]
    assert d.ASYNC_ENGINE_COUNT >= 1 and d.L2_CACHE_SIZE > 0 and d.CLOCK_RATE > 0
    assert d.COMPUTE_CAPABILITY_MAJOR == cuda_device.limits["compute_capability"][0]
    with pytest.raises(AttributeError, match="NOT_AN_ATTRIBUTE"):
        d.NOT_AN_ATTRIBUTE


@cuda
def test_saxpy(cuda_device, rng):
    n = 1000
    x, y = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = gpux.device_array(n, np.float32)
    K.saxpy[(n + 127) // 128, 128](np.float32(2.5), gpux.to_device(x), gpux.to_device(y), out)
    np.testing.assert_allclose(out.copy_to_host(), 2.5 * x + y, rtol=1e-6)


@cuda
def test_2d_strided_views(cuda_device, rng):
    a = rng.integers(-50, 50, (40, 30)).astype(np.int64)
    b = rng.integers(-50, 50, (40, 30)).astype(np.int64)
    da, db = gpux.to_device(a), gpux.to_device(b)
    out = gpux.to_device(np.zeros((40, 30), np.int64))
    va, vb, vo = da[::2, 1::3], db[::2, 1::3], out[::2, 1::3]
    K.add_2d[(3, 2), (8, 8)](va, vb, vo)
    expect = np.zeros((40, 30), np.int64)
    expect[::2, 1::3] = a[::2, 1::3] + b[::2, 1::3]
    np.testing.assert_array_equal(out.copy_to_host(), expect)


@cuda
@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-6), (np.float64, 1e-14)])
def test_libdevice_math(cuda_device, rng, dtype, rtol):
    x = rng.uniform(-3, 3, 512).astype(dtype)
    out = gpux.device_array((512, 10), dtype)
    kern = K.math_unary
    kern[4, 128](gpux.to_device(x), out)
    h = out.copy_to_host()
    erf = np.vectorize(math.erf)
    expect = np.stack([np.sin(x), np.cos(x), np.tan(x), np.exp(x), np.log(np.abs(x) + 1),
                       np.sqrt(np.abs(x)), np.tanh(x), erf(x.astype(np.float64)).astype(dtype),
                       np.floor(x), np.arctan2(x, dtype(2.0))], axis=1)
    np.testing.assert_allclose(h, expect, rtol=rtol * 8, atol=rtol * 8)


@cuda
def test_barrier_block_reverse(cuda_device):
    x = np.arange(512, dtype=np.float32)
    out = gpux.device_array(512, np.float32)
    K.block_reverse[4, 128](gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), x.reshape(4, 128)[:, ::-1].ravel())


@cuda
def test_warp_operations_on_part_of_a_warp(cuda_device):
    """numba.cuda's masked warp functions called by the lower half of each warp only,
    with the mask naming those lanes (CUDA passes it to shfl/vote/match.sync)."""
    from numba_gpux import cuda as ncuda

    @ncuda.jit
    def half(v, out):
        i = ncuda.grid(1)
        lane = ncuda.laneid
        if lane < 16:
            out[i, 0] = ncuda.shfl_xor_sync(0xFFFF, v[i], 1)
            out[i, 1] = ncuda.ballot_sync(0xFFFF, v[i] % 2 == 0)
            out[i, 2] = ncuda.match_any_sync(0xFFFF, v[i] % 3)
            ncuda.syncwarp(0xFFFF)

    n = 64
    v = np.arange(n, dtype=np.int64) * 5
    out = gpux.to_device(np.full((n, 3), -1, np.int64))
    half[1, n](gpux.to_device(v), out)
    h = out.copy_to_host()
    for i in range(n):
        lane, base = i % 32, i - i % 32
        if lane >= 16:
            assert list(h[i]) == [-1, -1, -1]
            continue
        assert h[i, 0] == v[i ^ 1]
        assert h[i, 1] == sum(1 << k for k in range(16) if v[base + k] % 2 == 0)
        assert h[i, 2] == sum(1 << k for k in range(16) if v[base + k] % 3 == v[i] % 3)


@cuda
def test_ptx_path_without_cubin(cuda_device, rng):
    from numba_gpux.targets.cuda.target import make_target

    tgt = make_target(cuda_device, cubin=False)
    art = K.saxpy.code_for(K.saxpy.typeof_args(
        (np.float32(1), gpux.device_array(4, np.float32), gpux.device_array(4, np.float32),
         gpux.device_array(4, np.float32))), tgt)
    assert art.binary is None
    rt = cuda_device.runtime
    kern = rt.kernel(rt.load(art), art.kernels[0])
    assert kern is not None


@cuda
def test_streams_and_events(cuda_device):
    rt = cuda_device.runtime
    q = rt.new_queue()
    x = gpux.to_device(np.ones(1 << 16, np.float64))
    y = gpux.device_array(1 << 16, np.float64)
    start = rt.record_event(q)
    K.grid_stride_copy[64, 128, q](x, y)
    end = rt.record_event(q)
    rt.event_synchronize(end)
    assert rt.event_query(end)
    assert rt.event_elapsed_ms(start, end) >= 0.0
    rt.synchronize(q)
    np.testing.assert_array_equal(y.copy_to_host(), 1.0)


@cuda
def test_cuda_array_interface_export(cuda_device):
    d = gpux.to_device(np.arange(12, dtype=np.float32).reshape(3, 4))
    cai = d.__cuda_array_interface__
    assert cai["version"] == 3 and cai["shape"] == (3, 4) and cai["typestr"] == "<f4"
    assert cai["strides"] is None and cai["data"][0] == d.handle
    v = d[:, 1::2]
    assert v.__cuda_array_interface__["strides"] == (16, 8)
    assert v.__cuda_array_interface__["data"][0] == d.handle + 4
    assert d.__dlpack_device__() == (2, cuda_device.runtime.ordinal)


@cuda
def test_cupy_interop(cuda_device):
    cp = pytest.importorskip("cupy")
    a = cp.arange(256, dtype=cp.float32)
    b = cp.ones(256, dtype=cp.float32)
    out = cp.zeros(256, dtype=cp.float32)
    K.saxpy[2, 128](np.float32(3), a, b, out)  # CuPy arrays straight into a kernel
    np.testing.assert_allclose(cp.asnumpy(out), 3 * np.arange(256) + 1)
    d = gpux.to_device(np.arange(10, dtype=np.float64))
    view = cp.asarray(d)  # zero-copy through __cuda_array_interface__
    np.testing.assert_array_equal(cp.asnumpy(view), np.arange(10))
    via_dlpack = cp.from_dlpack(d)
    np.testing.assert_array_equal(cp.asnumpy(via_dlpack), np.arange(10))


@cuda
def test_kernels_capture_other_libraries_device_arrays(cuda_device):
    cp = pytest.importorskip("cupy")
    table = cp.arange(8, dtype=cp.float32)

    class Wrapper:  # any object exposing the interface (numba.cuda's tests wrap arrays so)
        def __init__(self, a):
            self.a = a

        @property
        def __cuda_array_interface__(self):
            return self.a.__cuda_array_interface__

    wrapped = Wrapper(gpux.to_device(np.full(8, 10, np.float32)))

    @gpux.jit(device=True)
    def read(i):
        return table[i] + wrapped[i]

    @gpux.jit
    def k(out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = read(i)
            wrapped[i] = 1.0  # writes reach the other library's memory

    out = gpux.to_device(np.zeros(8, np.float32))
    k[1, 8](out)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(8) + 10)
    np.testing.assert_array_equal(wrapped.a.copy_to_host(), np.ones(8))
    table[:] = 100  # the kernel reads the memory, not a copy made when it compiled
    cp.cuda.Device().synchronize()
    k[1, 8](out)
    np.testing.assert_array_equal(out.copy_to_host(), np.full(8, 101))


@cuda
def test_external_streams_and_cuda_core_streams(cuda_device):
    from numba_gpux import cuda as fcuda

    cp = pytest.importorskip("cupy")
    theirs = cp.cuda.Stream(non_blocking=True)
    s = fcuda.external_stream(theirs.ptr)
    assert s.handle == theirs.ptr
    d = fcuda.to_device(np.zeros(256, np.float32), stream=s)
    K.saxpy[2, 128, s](np.float32(1), d, d, d)
    theirs.synchronize()  # their stream: our work was queued on it
    np.testing.assert_array_equal(d.copy_to_host(stream=s), np.zeros(256))
    core = pytest.importorskip("cuda.core")  # a cuda.core Stream is a stream argument too
    dev = core.Device()
    dev.set_current()
    cs = dev.create_stream()
    start, end = fcuda.event(), fcuda.event()
    start.record(cs)
    end.record(cs)
    end.synchronize()
    assert fcuda.event_elapsed_time(start, end) >= 0


@cuda
def test_a_process_forked_after_cuda_started_gets_numba_cudas_error(cuda_device):
    import concurrent.futures
    import multiprocessing as mp

    from numba_gpux import cuda as fcuda
    from numba_gpux.cuda.cudadrv.error import CudaDriverError

    fcuda.current_context()
    with concurrent.futures.ProcessPoolExecutor(mp_context=mp.get_context("fork")) as exe:
        fut = exe.submit(fcuda.to_device, np.arange(1))
    with pytest.raises(CudaDriverError, match="CUDA initialized before forking"):
        fut.result()


@cuda
def test_torch_interop(cuda_device):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no CUDA device")
    a = torch.arange(256, dtype=torch.float32, device="cuda")
    b = torch.ones(256, dtype=torch.float32, device="cuda")
    out = torch.zeros(256, dtype=torch.float32, device="cuda")
    K.saxpy[2, 128](np.float32(2), a, b, out)
    torch.cuda.synchronize()
    np.testing.assert_allclose(out.cpu().numpy(), 2 * np.arange(256) + 1)
    d = gpux.to_device(np.arange(6, dtype=np.int64).reshape(2, 3))
    t = torch.from_dlpack(d)
    assert t.shape == (2, 3) and t.device.type == "cuda"
    np.testing.assert_array_equal(t.cpu().numpy(), np.arange(6).reshape(2, 3))
    t2 = torch.as_tensor(d, device="cuda")  # __cuda_array_interface__
    np.testing.assert_array_equal(t2.cpu().numpy(), np.arange(6).reshape(2, 3))


@cuda
def test_dynamic_shared_bytes_above_48k(cuda_device):
    big = 64 * 1024
    if cuda_device.limits["max_shared_bytes"] < big:
        pytest.skip("device allows less than 64 KiB of shared memory per block")
    x = gpux.to_device(np.ones(128, np.float32))
    out = gpux.device_array(128, np.float32)
    K.device_calls[1, 128, 0, big](x, out)
    gpux.synchronize()
    assert out.copy_to_host().shape == (128,)


@cuda
def test_dropped_programs_are_unloaded(cuda_device):
    """Programs live as long as a kernel can launch them (plus the launch path's
    bounded list of recent ones): modules of dropped kernels are unloaded."""
    from numba_gpux import launch

    rt = cuda_device.runtime
    out = gpux.device_array(1, np.float64)

    def make(c):
        @gpux.jit
        def k(a):
            a[0] = c
        return k

    kept = make(-1.5)
    kept[1, 1](out)
    before = rt.loaded_modules
    n = 3 * launch.PROGRAM_LRU + 10
    for i in range(n):
        make(i + 0.25)[1, 1](out)
    gc.collect()
    gpux.synchronize()  # a context-wide synchronize unloads what was dropped
    assert rt.loaded_modules <= before + launch.PROGRAM_LRU + 1, (before, rt.loaded_modules)
    assert out.copy_to_host()[0] == n - 1 + 0.25
    kept[1, 1](out)  # a live kernel's module stays loaded
    assert out.copy_to_host()[0] == -1.5


@cuda
def test_waits_after_a_launch_go_through_the_interruptible_helper(cuda_device):
    """Once a kernel may run, synchronize and copies wait on a helper thread (so that
    Ctrl-C raises at once, see test_bad_inputs); afterwards waits are direct again."""
    rt = cuda_device.runtime
    a = gpux.to_device(np.zeros(256, np.float32))

    @gpux.jit
    def fill(x):
        i = gpux.grid(1)
        if i < x.size:
            x[i] = i

    fill[1, 256](a)
    assert rt.busy
    np.testing.assert_array_equal(a.copy_to_host(), np.arange(256, dtype=np.float32))
    gpux.synchronize()
    assert not rt.busy
    ev = rt.record_event()
    rt.event_synchronize(ev)
    assert rt.event_query(ev)


# ------------------------------------------------------------ grid synchronization

def _grid_relay(data, rounds):
    i = gpux.grid(1)
    n = data.shape[1]
    g = gpux.this_grid()
    for r in range(rounds):
        data[r + 1, i] = data[r, (i + gpux.block_dim.x) % n] + 1
        g.sync()


@cuda
def test_cooperative_limit_is_the_drivers_occupancy_times_multiprocessors(cuda_device):
    from cuda.bindings import driver as drv

    from numba.core import types

    kernel = gpux.jit(_grid_relay)
    sig = (types.int32[:, ::1], types.int64)
    limit = kernel.max_cooperative_grid_blocks(256, signature=sig)
    shim = kernel._shims[(sig, cuda_device, ())]  # (argtypes, device, stride facts)
    err, per_sm = drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(shim.kernel.function, 256, 0)
    assert err == drv.CUresult.CUDA_SUCCESS
    sms = cuda_device.runtime.device_attribute("MULTIPROCESSOR_COUNT")
    assert limit == per_sm * sms > 0


@cuda
def test_cooperative_launch_fills_the_device(cuda_device):
    from numba.core import types

    kernel = gpux.jit(_grid_relay)
    sig = (types.int32[:, ::1], types.int64)
    blocks = kernel.max_cooperative_grid_blocks(256, signature=sig)
    rounds = 16
    data = gpux.to_device(np.zeros((rounds + 1, blocks * 256), np.int32))
    kernel[blocks, 256](data, rounds)  # cuLaunchCooperativeKernel: all blocks resident
    want = np.repeat(np.arange(rounds + 1, dtype=np.int32)[:, None], blocks * 256, axis=1)
    np.testing.assert_array_equal(data.copy_to_host(), want)
    with pytest.raises(gpux.LaunchError, match="all its blocks must run at once"):
        kernel[blocks + 1, 256](data, rounds)


@cuda
def test_grid_sync_that_cannot_complete_is_reported_on_cuda(cuda_device, monkeypatch):
    monkeypatch.setenv("NUMBA_GPUX_GRID_SYNC_SPINS", str(1 << 16))

    @gpux.jit
    def early(out):
        if gpux.block_idx.x == 0:
            return
        gpux.this_grid().sync()
        out[gpux.grid(1)] = 1

    out = gpux.to_device(np.zeros(4 * 64, np.int32))
    with pytest.raises(gpux.GridSyncError, match="did not complete"):
        early[4, 64](out)
    K.block_reverse[1, 128](gpux.to_device(np.arange(128, dtype=np.float32)),
                            gpux.device_array(128, np.float32))
    gpux.synchronize()  # the context is still usable


@cuda
def test_memset_memory_info_and_managed_memory(cuda_device):
    rt = cuda_device.runtime
    free, total = rt.memory_info()
    assert 0 < free <= total
    d = gpux.to_device(np.arange(16, dtype=np.uint8))
    rt.memset(d.handle, 4, 0xAB, 8)
    assert d.copy_to_host().tolist() == list(range(4)) + [0xAB] * 8 + list(range(12, 16))
    handle, address, keep = rt.alloc_managed(64)
    try:
        assert handle == address and keep is None
        host = np.ctypeslib.as_array((ctypes.c_ubyte * 64).from_address(address))
        rt.memset(handle, 0, 7, 64)
        assert (host == 7).all()  # the host reads the device's write in place
    finally:
        rt.free(handle)


@cuda
def test_registered_host_memory_is_mapped_for_kernels(cuda_device):
    rt = cuda_device.runtime
    host = np.zeros(4096, np.uint8)
    token, buf = rt.host_register(host.ctypes.data, host.nbytes, mapped=True)
    try:
        assert buf is not None
        rt.memset(buf, 16, 5, 32)
        assert (host[16:48] == 5).all() and host[:16].sum() == 0 and host[48:].sum() == 0
    finally:
        rt.host_unregister(token)
    token, buf = rt.host_register(host.ctypes.data, host.nbytes)  # pinned, not mapped
    rt.host_unregister(token)
    assert buf is None


@cuda
def test_facade_driver_memory_on_cuda(cuda_device):
    from numba_gpux import cuda as ncuda
    from numba_gpux.cuda.cudadrv import driver

    ctx = ncuda.current_context()
    m = ctx.memalloc(256)
    assert int(m.handle) == m.device_ctypes_pointer.value
    driver.device_memset(m, 1, 256)
    out = np.zeros(256, np.uint8)
    driver.device_to_host(out, m, 256)
    assert (out == 1).all()
    mapped = ctx.memhostalloc(64, mapped=True)
    host = np.ndarray(64, np.uint8, buffer=mapped)
    driver.device_memset(mapped, 9, 64)
    assert (host == 9).all()
    managed = np.ndarray(8, np.float64, buffer=ctx.memallocmanaged(64))
    managed[:] = 2.0
    arr = ncuda.managed_array(8)
    arr[:] = 1.0
    assert driver.device_memory_size(arr) >= 64
    with ncuda.mapped(np.arange(4.0)) as d:
        assert d.copy_to_host().tolist() == [0.0, 1.0, 2.0, 3.0]


@cuda
def test_facade_array_interface_streams_and_empty_arrays(cuda_device):
    from numba_gpux import cuda as ncuda

    s = ncuda.stream()
    d = ncuda.device_array(10, stream=s)
    assert d.__cuda_array_interface__["stream"] == int(s.handle) != 0
    assert ncuda.device_array(10).__cuda_array_interface__["stream"] is None
    assert ncuda.device_array(0).__cuda_array_interface__["data"][0] == 0
    m = ncuda.mapped_array(4, stream=s)
    assert m.__cuda_array_interface__["stream"] == int(s.handle)
    assert ncuda.managed_array(4).__cuda_array_interface__["stream"] is None

    class Foreign:
        def __init__(self, arr):
            self.arr = arr
            self.__cuda_array_interface__ = arr.__cuda_array_interface__

    got = ncuda.as_cuda_array(Foreign(d))
    assert got.stream.external and int(got.stream.handle) == int(s.handle)
    assert got.gpu_data.device_pointer == d.gpu_data.device_pointer
    assert ncuda.as_cuda_array(Foreign(ncuda.device_array(3))).stream == 0
    masked = dict(d.__cuda_array_interface__, mask=d)
    with pytest.raises(NotImplementedError, match="Masked arrays are not supported"):
        ncuda.from_cuda_array_interface(masked)


@cuda
def test_streams_and_events_are_released(cuda_device):
    rt = cuda_device.runtime
    q = rt.new_queue()
    ev = rt.record_event(q)
    rt.event_synchronize(ev)
    rt.release_event(ev)
    rt.release_queue(q)
    from numba_gpux import cuda as ncuda

    for _ in range(200):  # each stream and event is destroyed when its object goes
        s = ncuda.stream()
        e = ncuda.event()
        e.record(s)
        e.record(s)  # the first recording's event is released
        e.synchronize()
        assert e.query()
    del s, e
    gc.collect()
    ncuda.synchronize()
