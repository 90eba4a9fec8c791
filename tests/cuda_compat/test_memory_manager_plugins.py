"""numba.cuda's External Memory Management plug-ins: ``set_memory_manager`` checks the
interface version and gives contexts made afterwards an instance; a context with a
plug-in (also one assigned to ``context.memory_manager``) initializes it before use
and after ``reset``, and hands it memory calls, device arrays' allocations among
them; memory it returns that no kernel can address on the device is a clear error."""

from __future__ import annotations

import contextlib
import ctypes

import numpy as np
import pytest

from numba_gpux import cuda
from numba_gpux.cuda import api
from numba_gpux.cuda.cudadrv import driver


class CountingPlugin(cuda.HostOnlyCUDAMemoryManager):
    """Device memory from the facade's own manager, with every call recorded."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []
        self.live = {}
        self._own = driver.NumbaCUDAMemoryManager(context=self.context)

    def memalloc(self, size):
        self.calls.append(("memalloc", size))
        key = len(self.calls)
        self.live[key] = size
        mem = self._own.memalloc(size)
        live = self.live

        def forget():
            live.pop(key, None)

        # the plug-in's pointer object: numba.cuda's AutoFreePointer with a finalizer
        return driver.AutoFreePointer(self.context, mem.device_pointer, size,
                                      owner=mem, finalizer=forget)

    def initialize(self):
        self.calls.append(("initialize",))

    def reset(self):
        self.calls.append(("reset",))

    def get_memory_info(self):
        self.calls.append(("get_memory_info",))
        return cuda.MemoryInfo(free=5, total=9)

    def get_ipc_handle(self, memory):
        raise NotImplementedError

    @property
    def interface_version(self):
        return 1


class ForeignPlugin(CountingPlugin):
    """Memory at made-up addresses, as a plug-in over another allocator hands out."""

    def memalloc(self, size):
        self.calls.append(("memalloc", size))
        return driver.AutoFreePointer(self.context, ctypes.c_void_p(0x7000_0000), size)


class WrongVersion(CountingPlugin):
    @property
    def interface_version(self):
        return 3


@contextlib.contextmanager
def plugged(cls):
    ctx = cuda.current_context()
    saved = ctx.memory_manager
    ctx.memory_manager = mm = cls(context=ctx)
    ctx.reset()  # initialized again at the next use
    try:
        yield ctx, mm
    finally:
        ctx.memory_manager = saved


def test_a_plugin_of_another_interface_version_is_refused():
    with pytest.raises(RuntimeError, match="version 3 - version 1 required"):
        cuda.set_memory_manager(WrongVersion)
    with pytest.raises(TypeError):  # the abstract interface itself
        cuda.set_memory_manager(cuda.BaseCUDAMemoryManager)


def test_a_manager_needs_a_context_argument():
    with pytest.raises(RuntimeError, match="requires a context"):
        CountingPlugin()


def test_contexts_made_after_set_memory_manager_get_the_plugin(device):
    cuda.set_memory_manager(CountingPlugin)
    try:
        ctx = api.Context(cuda.get_current_device())
        assert isinstance(ctx.memory_manager, CountingPlugin)
        assert ctx.memory_manager.context is ctx
    finally:
        cuda.set_memory_manager(driver.NumbaCUDAMemoryManager)  # the facade's own again
    assert not isinstance(api.Context(cuda.get_current_device()).memory_manager,
                          CountingPlugin)


def test_context_calls_go_to_the_plugin(device):
    with plugged(CountingPlugin) as (ctx, mm):
        assert cuda.current_context().memory_manager is mm
        assert mm.calls == [("reset",), ("initialize",)]
        assert ctx.get_memory_info() == (5, 9)
        ctx.reset()
        assert mm.calls[-2:] == [("get_memory_info",), ("reset",)]
        cuda.current_context()
        assert mm.calls[-1] == ("initialize",)
        with ctx.defer_cleanup():  # HostOnlyCUDAMemoryManager's: the pending frees'
            assert ctx.deallocations.is_disabled
        assert not ctx.deallocations.is_disabled


def test_device_arrays_take_the_plugins_memory_and_kernels_use_it(device):
    @cuda.jit
    def double(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] *= 2

    with plugged(CountingPlugin) as (ctx, mm):
        d = cuda.to_device(np.arange(6, dtype=np.int32))
        e = cuda.device_array((3, 2), np.float64, order="F")
        f = cuda.device_array_like(np.zeros(5, np.int16))
        assert [c for c in mm.calls if c[0] == "memalloc"] == [
            ("memalloc", 24), ("memalloc", 48), ("memalloc", 10)]
        assert e.strides == (8, 24)
        double[1, 8](d)
        np.testing.assert_array_equal(d.copy_to_host(), np.arange(6) * 2)
        assert len(mm.live) == 3
        del d
        assert len(mm.live) == 2  # the plug-in's finalizer ran with the last reference
        del e, f
        assert not mm.live


def test_memory_no_kernel_can_address_is_a_clear_error(device):
    with plugged(ForeignPlugin) as (ctx, mm):
        if device.runtime.buffers_are_addresses:  # CUDA: the array borrows the address
            arr = cuda.device_array(4)
            assert arr.gpu_data.device_pointer == 0x7000_0000
        else:
            with pytest.raises(NotImplementedError, match=device.spec):
                cuda.device_array(4)
        assert mm.calls[-1] == ("memalloc", 32)
