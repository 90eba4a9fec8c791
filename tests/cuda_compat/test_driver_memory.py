"""numba.cuda's driver-level memory API through the facade, on every device: the
memory of ``Context.memalloc``/``memhostalloc``/``mempin``/``memallocmanaged``, its
reference counts and views, the copies and ``device_memset`` of ``cudadrv.driver``,
pinned/mapped/managed arrays, and the deferred frees of ``context.deallocations``."""

from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest

from numba_gpux import cuda
from numba_gpux.cuda import config
from numba_gpux.cuda.cudadrv import driver


@cuda.jit
def _add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


def _mapping_or_skip(make):
    """*make()*, or a skip where the device cannot address host memory (the error must
    say which device)."""
    try:
        return make()
    except NotImplementedError as e:
        assert "device" in str(e)
        pytest.skip(f"this device cannot address host memory: {e}")


def test_memalloc_views_count_references_and_offset_the_pointer(device):
    ctx = cuda.current_context()
    m = ctx.memalloc(1024)
    assert driver.is_device_memory(m)
    driver.require_device_memory(m)
    assert isinstance(m.device_ctypes_pointer, ctypes.c_size_t)
    assert m.refct == 1 and m.size == 1024
    v1 = m.view(16)
    assert m.refct == 2 and v1.size == 1008
    assert int(v1.handle) - 16 == int(m.handle) == int(v1.owner.handle)
    v2 = v1.view(16, 32)
    assert m.refct == 3 and v2.size == 16
    assert int(v2.handle) - 32 == int(m.handle)
    del v2
    assert m.refct == 2
    del v1
    assert m.refct == 1
    with pytest.raises(RuntimeError):
        m.view(2000)


def test_memalloc_copies_and_memset(device):
    ctx = cuda.current_context()
    host = np.arange(100, dtype=np.uint32)
    a, b = ctx.memalloc(host.nbytes), ctx.memalloc(host.nbytes)
    driver.host_to_device(a, host, host.nbytes)
    driver.device_to_device(b, a, host.nbytes)
    back = np.zeros_like(host)
    driver.device_to_host(back, b, host.nbytes)
    np.testing.assert_array_equal(back, host)
    # a memset of a view changes only the view's bytes
    driver.device_memset(b.view(8), 0xAB, 8)
    driver.device_to_host(back, b, host.nbytes)
    expect = host.copy()
    expect[2:4] = 0xABABABAB
    np.testing.assert_array_equal(back, expect)
    with pytest.raises(Exception, match="do not fit"):
        driver.device_to_host(np.zeros(200, np.uint32), a, 800)


def test_memalloc_memory_is_freed_with_its_last_reference(device):
    ctx = cuda.current_context()
    m = ctx.memalloc(64)
    v = m.view(8)
    del m
    assert len(ctx.allocations) >= 1
    key_alive = [k for k, mem in ctx.allocations.items() if mem.size == 64]
    assert key_alive
    del v
    gc.collect()
    assert not [k for k in key_alive if k in ctx.allocations]


def test_user_memory_pointer_runs_its_finalizer_once(device):
    ctx = cuda.current_context()
    calls = []
    p = driver.MemoryPointer(context=ctx, pointer=ctypes.c_void_p(0x1000), size=40,
                             finalizer=lambda: calls.append(1))
    owned = p.own()
    del owned
    assert calls == []
    del p
    assert calls == [1]
    p = driver.MemoryPointer(ctx, 0x1000, 40, finalizer=lambda: calls.append(2))
    p.free()
    assert calls == [1, 2]
    with pytest.raises(RuntimeError, match="dead memory"):
        p.free()


def test_mapped_host_memory_is_one_memory_for_host_and_device(device):
    ctx = cuda.current_context()
    mem = _mapping_or_skip(lambda: ctx.memhostalloc(64, mapped=True))
    assert driver.is_device_memory(mem)
    host = np.ndarray(64, np.uint8, buffer=mem)
    driver.device_memset(mem, 0x5C, 64)
    assert (host == 0x5C).all()  # no copy back: the host sees the device's write
    host[:] = np.arange(64)
    got = np.empty(64, np.uint8)
    driver.device_to_host(got, mem, 64)
    np.testing.assert_array_equal(got, np.arange(64))


def test_pinned_host_memory_is_a_host_buffer(device):
    ctx = cuda.current_context()
    mem = ctx.memhostalloc(32)
    assert not driver.is_device_memory(mem)
    host = np.ndarray(8, np.uint32, buffer=mem)
    host[:] = 7
    d = ctx.memalloc(32)
    driver.host_to_device(d, mem, 32)
    out = np.zeros(8, np.uint32)
    driver.device_to_host(out, d, 32)
    np.testing.assert_array_equal(out, 7)


def test_mempin_maps_the_callers_array(device):
    ctx = cuda.current_context()
    a = np.zeros(16, np.uint8)
    mem = _mapping_or_skip(lambda: ctx.mempin(a, a.ctypes.data, a.nbytes, mapped=True))
    assert driver.is_device_memory(mem)
    driver.device_memset(mem, 3, 16)
    np.testing.assert_array_equal(a, 3)


def test_managed_memory_is_seen_by_host_and_kernels(device):
    ctx = cuda.current_context()
    mem = _mapping_or_skip(lambda: ctx.memallocmanaged(800))
    host = np.ndarray(100, np.float64, buffer=mem)
    host[:] = 1.5
    driver.device_memset(mem.view(0, 8), 0, 8)
    assert host[0] == 0.0 and host[1] == 1.5


def test_kernel_in_mapped_block_writes_host_memory_directly(device):
    _mapping_or_skip(lambda: cuda.current_context().memhostalloc(8, mapped=True))
    a = np.arange(10.0)
    with cuda.mapped(a) as d:
        _add_one[1, 16](d)
        cuda.synchronize()
        # inside the block: the host array already holds the result (no copy back yet)
        np.testing.assert_array_equal(a, np.arange(10.0) + 1)
    with cuda.mapped(a):  # unmapped at the end of the block, so it maps again
        pass


def test_mapped_and_managed_arrays_reach_driver_memset(device):
    from numba_gpux.cuda._memory_api import MappedNDArray

    m = cuda.mapped_array(10, dtype=np.uint32)
    if not isinstance(m, MappedNDArray):
        pytest.skip("this device cannot address host memory: mapped_array is a host array")
    m.fill(123)
    assert driver.device_memory_size(m) >= 40
    driver.device_memset(m, 0, 40)
    np.testing.assert_array_equal(m, 0)
    g = cuda.managed_array((4, 25), order="F")
    g.fill(2.0)
    assert g.flags.f_contiguous
    _add_one[4, 32](g.reshape(-1, order="A"))
    cuda.synchronize()
    np.testing.assert_array_equal(g, 3.0)


def test_pinned_array_like_keeps_the_layout(device):
    p = cuda.pinned_array((3, 4), dtype=np.float32, order="F")
    assert p.flags.f_contiguous and p.dtype == np.float32
    q = cuda.pinned_array_like(p)
    assert q.flags.f_contiguous and q.shape == (3, 4)
    with cuda.pinned(p, q):
        p[:] = 1
    assert (p == 1).all()


def test_host_memory_extents():
    c = np.arange(100)
    assert driver.host_memory_extents(c) == (c.ctypes.data, c.ctypes.data + 800)
    f = np.asfortranarray(np.arange(100).reshape(2, 50))
    assert driver.host_memory_size(f) == 800
    r = c[::-1]
    assert driver.host_memory_extents(r) == (c.ctypes.data, c.ctypes.data + 800)
    assert driver.host_memory_size(c[::2]) == 49 * 16 + 8
    assert driver.host_memory_size(np.asarray(np.uint32(5))) == 4

    class Pair(ctypes.Structure):
        _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_double)]

    assert driver.host_memory_size(Pair()) == ctypes.sizeof(Pair)
    assert driver.host_memory_size(ctypes.c_double(1.0)) == 8


def test_device_memory_size_of_a_device_array(device):
    d = cuda.to_device(np.ones(10, np.uint32))
    assert driver.device_memory_size(d) == 40
    driver.device_memset(d, 0, driver.device_memory_size(d))
    np.testing.assert_array_equal(d.copy_to_host(), 0)


def test_context_makes_streams_and_events(device):
    ctx = cuda.current_context()
    s = ctx.create_stream()
    e = ctx.create_event()
    d = cuda.to_device(np.zeros(8), stream=s)
    _add_one[1, 8, s](d)
    e.record(s)
    e.synchronize()
    assert e.query()
    np.testing.assert_array_equal(d.copy_to_host(stream=s), 1.0)
    assert isinstance(ctx.handle, int)


# -- deferred frees -----------------------------------------------------------------
@pytest.fixture
def no_gc():
    """Garbage of earlier tests collected now and not during the test: a collection
    in the middle would add its frees to the counts checked."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def test_frees_are_deferred_up_to_the_pending_count(device, no_gc):
    deallocs = cuda.current_context().memory_manager.deallocations
    deallocs.clear()
    assert len(deallocs) == 0
    for i in range(config.CUDA_DEALLOCS_COUNT):
        cuda.to_device(np.arange(3))
        assert len(deallocs) == i + 1
    cuda.to_device(np.arange(3))  # one more than the count: the batch is freed
    assert len(deallocs) == 0


def test_frees_are_deferred_up_to_the_pending_bytes(device, monkeypatch, no_gc):
    ctx = cuda.current_context()
    deallocs = ctx.deallocations
    deallocs.clear()
    total = ctx.get_memory_info().total
    monkeypatch.setattr(config, "CUDA_DEALLOCS_RATIO", 100_000 / total, raising=False)
    assert abs(deallocs._max_pending_bytes - 100_000) <= 1
    cuda.to_device(np.ones(60_000, np.int8))
    assert len(deallocs) == 1 and deallocs._size == 60_000
    cuda.to_device(np.ones(40_000, np.int8))
    assert len(deallocs) == 2
    cuda.to_device(np.ones(1, np.int8))  # past the bytes: the batch is freed
    assert len(deallocs) == 0


def test_defer_cleanup_holds_frees_also_when_nested_and_on_errors(device, no_gc):
    deallocs = cuda.current_context().deallocations
    keep = cuda.to_device(np.arange(5))
    deallocs.clear()
    with pytest.raises(KeyError):
        with cuda.defer_cleanup():
            with cuda.defer_cleanup():
                d = cuda.to_device(np.arange(5))
                del d
                assert len(deallocs) == 1
                deallocs.clear()
                assert len(deallocs) == 1
            deallocs.clear()
            assert len(deallocs) == 1  # still inside the outer block
            raise KeyError("leave")
    deallocs.clear()
    assert len(deallocs) == 0
    del keep
    assert len(deallocs) == 1
    deallocs.clear()
    assert len(deallocs) == 0


def test_active_context_stack_of_a_thread(device):
    drv = driver.driver
    while drv.pop_active_context() is not None:
        pass
    with drv.get_active_context() as ac:
        assert ac.context_handle is None and not ac
    with cuda.gpus[0]:
        with drv.get_active_context() as ac:
            assert ac.context_handle == cuda.current_context(0).handle and ac.devnum == 0
    assert drv.get_active_context().context_handle is None  # nothing left behind
    outer = cuda.current_context()  # made active: none was
    with cuda.gpus[0]:
        pass
    assert drv.get_active_context().context_handle == outer.handle
    ctx0 = cuda.current_context(0)
    ctx0.push()
    assert drv.get_active_context().context is ctx0
    ctx0.pop()
    assert drv.get_active_context().context is outer
    while drv.pop_active_context() is not None:
        pass
    with pytest.raises(RuntimeError, match="not the active one"):
        ctx0.pop()


def test_context_reset_makes_the_pending_frees(device, no_gc):
    ctx = cuda.current_context()
    ctx.deallocations.clear()
    cuda.to_device(np.arange(4))
    assert len(ctx.deallocations) == 1
    ctx.reset()
    assert len(ctx.deallocations) == 0
