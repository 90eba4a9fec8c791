"""The runtime API numba.cuda libraries touch: contexts, device lists (also in spawned
workers), device-array methods, forall and streams."""

import multiprocessing

import numpy as np
import pytest

from numba_gpux import cuda


@cuda.jit
def _add_one(x):
    i = cuda.grid(1)
    if i < x.size:
        x[i] += 1


def test_context_deallocations_and_memory_manager(device):
    ctx = cuda.current_context()
    assert ctx is cuda.current_context()  # one context per device
    before = ctx.get_memory_info()
    assert 0 <= before.free <= before.total and before.total > 0
    big = cuda.device_array(1 << 20, np.uint8)
    during = ctx.get_memory_info()
    assert during.total == before.total
    del big
    ctx.deallocations.clear()
    assert len(ctx.deallocations) == 0
    with ctx.deallocations.disable():
        pass
    assert ctx.memory_manager.get_memory_info().total == before.total
    with ctx.memory_manager.defer_cleanup():
        pass
    ctx.reset()
    cuda.reset()
    assert cuda.current_context(0) is cuda.current_context(0)


def test_device_list_entries_and_context_manager(device):
    devs = cuda.list_devices()
    assert len(devs) == len(cuda.gpus) >= 1
    for i, d in enumerate(cuda.gpus):
        assert d.id == i and isinstance(d.name, str) and d.name
        assert len(d.compute_capability) == 2
        # (numba.cuda's driver device behind the managed one: libraries read its name)
        assert d._device.name == d.name and d._device.id == i
    here = cuda.get_current_device()
    with cuda.gpus[here.id] as dev:
        assert cuda.get_current_device() == dev
        x = cuda.to_device(np.zeros(5))
        _add_one[1, 32](x)
        assert x.copy_to_host().tolist() == [1] * 5
    assert cuda.get_current_device() == here


def test_peer_access_and_copies_between_devices(device):
    """can_access_peer says whether kernels reach another device's memory directly
    (never between devices of runtimes that share nothing); a copy between devices
    works either way."""
    ctx = cuda.current_context()
    here = cuda.get_current_device()
    assert ctx.can_access_peer(here.id) and ctx.can_access_peer(here)
    hostarr = np.arange(10, dtype=np.float32)
    for other in cuda.gpus:
        if other.gpux_device != here.gpux_device:
            direct = here.gpux_device.runtime.can_access_peer(other.gpux_device.runtime)
            assert ctx.can_access_peer(other.id) == direct
            if here.gpux_device.target_name != "cuda":
                assert not direct  # an OpenCL device's kernels reach no other's memory
        with other:
            dst = cuda.to_device(np.zeros_like(hostarr))
        with cuda.gpus[here.id]:
            src = cuda.to_device(hostarr)
            dst.copy_to_device(src)
        np.testing.assert_equal(dst.copy_to_host(), hostarr)


def test_device_attributes_libraries_size_pools_by(device):
    # e.g. a stream pool of ASYNC_ENGINE_COUNT streams, indexed modulo its size
    d = cuda.get_current_device()
    assert d.ASYNC_ENGINE_COUNT >= 1 and d.MULTIPROCESSOR_COUNT >= 1
    # CUDA's limits at most, which numba.cuda code sizes shared arrays by
    assert d.MAX_THREADS_PER_BLOCK == min(device.max_threads_per_block, 1024)
    assert d.MAX_BLOCK_DIM_X <= 1024 and d.MAX_BLOCK_DIM_Y <= 1024 and d.MAX_BLOCK_DIM_Z <= 64
    with pytest.raises(AttributeError, match="NOT_AN_ATTRIBUTE"):
        d.NOT_AN_ATTRIBUTE


def _worker(devnum):
    from numba_gpux import cuda as c

    with c.gpus[devnum]:
        x = c.to_device(np.arange(4.0))

        @c.jit
        def double(a):
            i = c.grid(1)
            if i < a.size:
                a[i] *= 2

        double[1, 32](x)
        return c.get_current_device().id, x.copy_to_host().tolist()


def test_device_in_spawned_worker(device):
    devnum = cuda.get_current_device().id
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        got = pool.apply(_worker, (devnum,))
    assert got == (devnum, [0.0, 2.0, 4.0, 6.0])


def test_transpose_of_a_2d_array_is_a_contiguous_copy(device):
    """numba.cuda's DeviceNDArray.T: a new C-contiguous array (also of a strided view),
    so a kernel with a C-layout signature takes it; other ranks permute as views."""
    import numba_gpux as gpux
    from numba_gpux.cuda.cudadrv.devicearray import DeviceNDArray

    h = np.arange(120, dtype=np.float64).reshape(10, 12)
    d = cuda.to_device(h)
    assert type(d) is DeviceNDArray and type(d[::2, ::2]) is DeviceNDArray
    t = d[::2, ::2].T
    assert type(t) is DeviceNDArray
    assert t.shape == (6, 5) and t.strides == (40, 8) and t.is_c_contiguous()
    np.testing.assert_array_equal(t.copy_to_host(), h[::2, ::2].T)
    like = cuda.device_array_like(t)
    assert like.strides == (40, 8) and like.is_c_contiguous() and not like.is_f_contiguous()
    t[0, 0] = -1.0  # a copy: the source is unchanged
    assert d.copy_to_host()[0, 0] == 0.0
    assert d.transpose((0, 1)) is d
    np.testing.assert_array_equal(d.transpose((1, 0)).copy_to_host(), h.T)
    with pytest.raises(ValueError, match="invalid axes"):
        d.transpose((0, 0))

    @cuda.jit("void(float64[:, ::1], float64[::1])")
    def first_column(a, out):
        i = cuda.grid(1)
        if i < a.shape[0]:
            out[i] = a[i, 0]

    out = cuda.device_array(6)
    first_column[1, 8](t, out)
    np.testing.assert_array_equal(out.copy_to_host(), [-1.0, *h[0, 2::2]])
    # numba_gpux's own arrays keep NumPy's view semantics
    g = gpux.to_device(h)
    assert type(g) is gpux.DeviceArray and g.T.is_f_contiguous()


def test_device_array_methods(device):
    h = np.arange(24, dtype=np.float32).reshape(4, 6)
    d = cuda.to_device(h)
    assert d.nbytes == h.nbytes and d.is_c_contiguous() and not d.is_f_contiguous()
    np.testing.assert_array_equal(np.asarray(d), h)
    np.testing.assert_array_equal(d.ravel().copy_to_host(), h.ravel())
    np.testing.assert_array_equal(d.reshape(6, 4).copy_to_host(), h.reshape(6, 4))
    np.testing.assert_array_equal(d.reshape(-1, 3).copy_to_host(), h.reshape(-1, 3))
    np.testing.assert_array_equal(d.T.copy_to_host(), h.T)
    h3 = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    d3 = cuda.to_device(h3)
    with pytest.raises(NotImplementedError, match="non-2D"):  # as numba.cuda
        d3.transpose((1, 0, 2))
    assert d3.transpose((0, 1, 2)) is d3
    # the portable DeviceArray's transpose permutes any rank (a view)
    from numba_gpux import DeviceArray

    np.testing.assert_array_equal(DeviceArray.transpose(d3, (1, 0, 2)).copy_to_host(),
                                  h3.transpose(1, 0, 2))
    np.testing.assert_array_equal(DeviceArray.transpose(d3, (2, 0, 1)).copy_to_host(),
                                  h3.transpose(2, 0, 1))
    np.testing.assert_array_equal(d.view(np.int32).copy_to_host(), h.view(np.int32))
    np.testing.assert_array_equal(d.view(np.uint8).copy_to_host(), h.view(np.uint8))
    np.testing.assert_array_equal(d.view(np.float64).copy_to_host(), h.view(np.float64))
    np.testing.assert_array_equal(d.T.flatten().copy_to_host(), h.T.flatten())
    np.testing.assert_array_equal(d.flatten(order="F").copy_to_host(), h.flatten(order="F"))
    parts = cuda.to_device(np.arange(10)).split(4)
    assert [p.copy_to_host().tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    # slicing and setitem from the host
    np.testing.assert_array_equal(d[1:3, ::2].copy_to_host(), h[1:3, ::2])
    assert d[2, 3] == h[2, 3]
    d[0] = 5
    d[1:3, 2:4] = np.array([[-1, -2], [-3, -4]], np.float32)
    h2 = h.copy()
    h2[0] = 5
    h2[1:3, 2:4] = [[-1, -2], [-3, -4]]
    np.testing.assert_array_equal(d.copy_to_host(), h2)
    # copies with a stream
    s = cuda.stream()
    out = np.empty_like(h)
    d.copy_to_device(h, stream=s)
    assert d.copy_to_host(out, stream=s) is out
    s.synchronize()
    np.testing.assert_array_equal(out, h)
    with pytest.raises(Exception, match="contiguous"):
        d[:, ::2].view(np.uint8)


def test_forall_argument_checks(device):
    x = np.zeros(11)
    _add_one.forall(x.size)(x)
    assert x.tolist() == [1.0] * 11
    _add_one.forall(0)(x)  # no work: nothing runs
    assert x.tolist() == [1.0] * 11
    with pytest.raises(ValueError, match="negative task count"):
        _add_one.forall(-1)
    with pytest.raises(TypeError, match="integer"):
        _add_one.forall(2.5)


def test_forall_takes_numba_cudas_keywords(device):
    """numba.cuda's ``forall(ntasks, tpb=0, stream=0, sharedmem=0)``: its keyword names
    (the portable API's are ``queue`` and ``shared_bytes``)."""
    s = cuda.stream()
    d = cuda.to_device(np.zeros(50))
    _add_one.forall(50, tpb=16, stream=s, sharedmem=0)(d)
    s.synchronize()
    _add_one.forall(50, stream=0)(d)
    assert d.copy_to_host().tolist() == [2.0] * 50


def test_device_array_getitem_on_a_stream(device):
    """``DeviceNDArray.getitem(item, stream)``: an element copied in order on the
    stream, a view as ``d[item]``."""
    s = cuda.stream()
    d = cuda.to_device(np.arange(6.0).reshape(2, 3))
    d[1, 2] = 40.0
    assert d.getitem((1, 2), stream=s) == 40.0
    assert d.getitem((0, 1)) == 1.0
    np.testing.assert_array_equal(d.getitem(1, s).copy_to_host(), [3.0, 4.0, 40.0])


def test_forall_block_size_is_a_tuning_hook(device):
    from numba_gpux import hooks

    limit = device.max_threads_per_block
    want = min(limit, 256) if device.kind != "cpu" else limit
    assert _add_one.forall(100_000).blockdim[0] == want
    x = np.zeros(1000)
    _add_one.forall(1000)(x)
    compiles = _add_one.stats["neutral_compiles"]
    hook = hooks.get_hook("launch.forall_block_size")
    saved = dict(hook.impls)
    try:
        hooks.implement("launch.forall_block_size", target=device.target_name,
                        device_kind=device.kind, fn=lambda q: 96)
        cfg = _add_one.forall(1000)
        assert cfg.blockdim[0] == min(96, limit) and cfg.griddim[0] == -(-1000 // min(96, limit))
        cfg(x)  # another block size, the same compiled kernel
        assert x.tolist() == [2.0] * 1000
        assert _add_one.stats["neutral_compiles"] == compiles
        hooks.implement("launch.forall_block_size", target=device.target_name,
                        device_kind=device.kind, fn=lambda q: 10 ** 9)
        assert _add_one.forall(10).blockdim[0] == limit  # clamped to the device
    finally:
        hook.impls.clear()
        hook.impls.update(saved)


def test_stream_synchronize_and_auto_synchronize(device):
    s = cuda.stream()
    h = np.arange(100.0)
    with s.auto_synchronize():
        d = cuda.to_device(h, stream=s)
        _add_one[4, 32, s](d)
        out = d.copy_to_host(stream=s)
    np.testing.assert_array_equal(out, h + 1)
    _add_one[4, 32, s](d)
    s.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), h + 2)


def test_visible_devices_variable_narrows_cuda_gpus(device):
    import os
    import subprocess
    import sys

    code = ("from numba_gpux import cuda; "
            "print(len(cuda.gpus), cuda.gpus[0].gpux_device.spec, cuda.get_current_device().id)")
    env = dict(os.environ, NUMBA_GPUX_VISIBLE_DEVICES=device.spec)
    env.pop("NUMBA_GPUX_DEVICE", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", device.spec, "0"]


@pytest.mark.parametrize("shape,order,view", [
    ((10, 12), "F", np.s_[:]),
    ((10, 12, 14), "F", np.s_[:]),
    ((10, 12), "F", np.s_[::2, ::2]),
    ((10, 12), "C", np.s_[::2, ::2]),
])
def test_host_arrays_like_a_device_array_keep_its_layout(device, shape, order, view):
    # pinned/mapped_array_like of a device array: NumPy's empty_like layout, found from
    # the device array's strides (its data is not copied to the host to find out)
    d = cuda.device_array(shape, order=order)[view]
    want = np.zeros_like(np.zeros(shape, order=order)[view])
    for like in (cuda.pinned_array_like, cuda.mapped_array_like, cuda.device_array_like):
        got = like(d)
        assert got.shape == want.shape and got.strides == want.strides, like.__name__
        assert got.flags["F_CONTIGUOUS"] == want.flags["F_CONTIGUOUS"], like.__name__


def test_host_array_launches_give_numbas_performance_warning(device, monkeypatch):
    """As numba.cuda: each launch that copies a host array warns with a
    NumbaPerformanceWarning while config.CUDA_WARN_ON_IMPLICIT_COPY is set; device
    arrays do not warn, and the setting (or DISABLE_PERFORMANCE_WARNINGS) silences it."""
    import warnings

    from numba.core.errors import NumbaPerformanceWarning

    import numba_gpux as gpux

    @cuda.jit
    def bump(r, x):
        r[0] = x + 1

    host = np.zeros(4, np.float32)
    for _ in range(2):  # every launch, not once per process
        with pytest.warns(NumbaPerformanceWarning,
                          match="Host array used in CUDA kernel will incur.+copy overhead"):
            bump[1, 4](host, 3)
    assert host[0] == 4
    with pytest.warns(gpux.NumpyArgumentWarning):  # the same warning, under both names
        bump[1, 4](host, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        bump[1, 4](cuda.to_device(host), 3)
        monkeypatch.setattr(cuda.config, "CUDA_WARN_ON_IMPLICIT_COPY", False)
        bump[1, 4](host, 3)
        monkeypatch.setattr(cuda.config, "CUDA_WARN_ON_IMPLICIT_COPY", True)
        monkeypatch.setattr(cuda.config, "DISABLE_PERFORMANCE_WARNINGS", 1, raising=False)
        bump[1, 4](host, 3)


def test_detect_prints_numba_cudas_summary(device, capsys):
    assert cuda.detect() is True
    out = capsys.readouterr().out
    n = len(cuda.gpus)
    assert out.startswith(f"Found {n} CUDA devices\n")  # the words programs look for
    assert "Compute Capability: " in out and device.spec in out
    assert out.rstrip().endswith(f"{n}/{n} devices are supported")


def test_external_stream_adopts_another_librarys_opencl_queue(opencl_device):
    # the queue object itself: a raw address cannot be checked before the driver uses it
    import pyopencl as cl

    theirs = cl.CommandQueue(opencl_device.runtime.context)
    with cuda.gpus[cuda.gpus.lst.index(_facade(opencl_device))]:
        s = cuda.external_stream(theirs)

        @cuda.jit
        def inc(a):
            i = cuda.grid(1)
            if i < a.size:
                a[i] += 1

        d = cuda.to_device(np.arange(8, dtype=np.int32), stream=s)
        inc[1, 8, s](d)
        s.synchronize()
        np.testing.assert_array_equal(d.copy_to_host(stream=s), np.arange(8) + 1)
    theirs.finish()  # still theirs: usable after the stream object is gone
    del s
    theirs.finish()


def _facade(gpux_device):
    return next(g for g in cuda.gpus.lst if g.gpux_device is gpux_device)


def test_gpus_slices_to_a_list_of_devices():
    """``cuda.gpus[1:]`` (numba.cuda code iterates the other devices so): a list."""
    every = list(cuda.gpus)
    assert cuda.gpus[0:] == every and cuda.gpus[1:] == every[1:]
    assert isinstance(cuda.gpus[:1], list) and cuda.gpus[:1] == [cuda.gpus[0]]


def test_numba_disable_cuda_turns_the_facade_off():
    """NUMBA_DISABLE_CUDA=1, as in numba.cuda: no device is used, every call that needs
    one is a CudaSupportError with numba.cuda's message, which cuda_error() gives."""
    import subprocess
    import sys

    code = ("from numba_gpux import cuda\n"
            "assert not cuda.is_available()\n"
            "try:\n    cuda.device_array(1)\nexcept cuda.CudaSupportError as e:\n"
            "    print(e.msg)\n"
            "print(cuda.cuda_error())\n")
    import os

    env = dict(os.environ, NUMBA_DISABLE_CUDA="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    want = "CUDA is disabled due to setting NUMBA_DISABLE_CUDA=1"
    assert out.stdout.splitlines() == [want, want]
    assert cuda.cuda_error() is None or not cuda.is_available()  # this process: unaffected


def test_launch_mistakes_raise_numba_cudas_error_types(device):
    """A float for an integer parameter of a signature given to ``jit`` is a TypeError
    before anything runs (numba.cuda's, from ctypes; the packing's ``struct.error``
    escaped before); so are too many arguments (a TypeError, as Python's own); a
    device function called from the host is a ValueError (numba.cuda's missing launch
    configuration)."""
    @cuda.jit("void(float32[::1], int32)")
    def eager(a, n):
        a[0] = n

    @cuda.jit(device=True)
    def dev(x):
        return x

    a = cuda.to_device(np.zeros(2, np.float32))
    with pytest.raises(TypeError, match=r"argument 1 \(n\) is a float64, but its parameter "
                                        r"is int32"):
        eager[1, 1](a, 2.7)
    with pytest.raises(TypeError, match="too many positional arguments"):
        _add_one[1, 1](a, 3)
    with pytest.raises(ValueError, match="device function"):
        dev(1)
    eager[1, 1](a, 7)  # the right types still launch
    assert a.copy_to_host()[0] == 7


def test_device_primary_context_and_more_attributes(device):
    """``Device.primary_context`` (numba.cuda's, set by ``get_primary_context``) is the
    device's context, and the attributes the facade or the driver can answer are
    there: mapped and managed memory, cooperative launches, the compute mode, the
    threads and shared memory of a multiprocessor; one nothing reports is an
    AttributeError naming the device."""
    dev = cuda.get_current_device()
    ctx = dev.get_primary_context()
    assert ctx is dev.primary_context
    info = ctx.get_memory_info()
    assert 0 < info.free <= info.total
    assert dev.CAN_MAP_HOST_MEMORY == 1 and dev.MANAGED_MEMORY == 1
    assert dev.COOPERATIVE_LAUNCH == 1 and dev.COMPUTE_MODE == 0
    assert dev.MAX_THREADS_PER_MULTI_PROCESSOR >= dev.MAX_THREADS_PER_BLOCK
    assert dev.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR >= dev.MAX_SHARED_MEMORY_PER_BLOCK
    with pytest.raises(AttributeError, match="MAX_REGISTERS_PER_BLOCK"):
        dev.MAX_REGISTERS_PER_BLOCK  # noqa: B018


def test_njit_code_calling_a_device_function_is_a_typing_error(device):
    """An ``@njit`` function that calls a facade device function: a TypingError that
    names it (numba.cuda's is one too), not a KeyError from inside Numba's CPU
    lowering."""
    from numba import njit
    from numba.core.errors import TypingError

    @cuda.jit(device=True)
    def dev(a, i):
        a[i] = a[i] * 2 + 1

    def host(a):
        for i in range(a.shape[0]):
            dev(a, i)

    with pytest.raises(TypingError, match="dev is a numba_gpux device function"):
        njit("(f8[:],)")(host)
