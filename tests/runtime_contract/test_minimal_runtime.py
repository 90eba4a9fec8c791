"""The contract test for new back ends: a runtime that implements only the required
part of ``numba_gpux.interface.Runtime`` (minimal_runtime.py, over pyopencl), registered
as a target's devices, runs the conformance kernels that need no optional feature:
indexing, barriers, shared (static and dynamic), local and constant memory, device
functions, atomics, reductions, complex numbers, records, datetimes, bit operations
and debug-mode errors.

The conformance tests are imported and collected here with this module's ``device``
fixture (the minimal device); they run against the real OpenCL runtime in their own
modules."""

from __future__ import annotations

import importlib
import inspect
import os
import sys

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux.errors import UnsupportedError
from numba_gpux.interface import Runtime

devmod = importlib.import_module("numba_gpux.devices")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "conformance"),
                os.path.dirname(HERE)]

from minimal_runtime import REQUIRED, MinimalRuntime, target_entry  # noqa: E402
from test_api import test_barrier, test_indices_and_sizes  # noqa: E402,F401
from test_atomics import test_cas, test_contended  # noqa: E402,F401
from test_bits import test_popc_clz_ffs, test_select  # noqa: E402,F401
from test_datetime import test_arrays_of_dates_subtract_to_timedeltas  # noqa: E402,F401
from test_errors import test_out_of_bounds, test_raise_in_device_function  # noqa: E402,F401
from test_memory import (test_const_arrays, test_local_arrays,  # noqa: E402,F401
                         test_shared_dynamic_aliasing, test_shared_in_device_function,
                         test_shared_static_1d, test_shared_static_2d_3d)
from test_reductions import (test_min_max_of_each_element_type,  # noqa: E402,F401
                             test_numbas_sums_and_moments)
from test_types import test_complex, test_record_fields, test_record_strided  # noqa: E402,F401

pytestmark = pytest.mark.skipif(
    not any(d.target_name == "opencl" for d in gpux.devices()),
    reason="no SPIR-V capable OpenCL device (pip install 'numba-gpux[cpu]')")


@pytest.fixture(scope="module")
def minimal_device():
    """The first ``minimal`` device, registered as a target for this module (probed
    like any other device before it is listed)."""
    prev = devmod._selected
    devmod.register_target(target_entry())
    try:
        found = [d for d in gpux.devices() if d.target_name == "minimal"]
        if not found:
            bad = [d.unusable_reason for d in devmod.unusable_devices()
                   if d.target_name == "minimal"]
            pytest.fail(f"no usable minimal device: {bad or 'none found'}")
        yield found[0]
    finally:
        devmod.rescan()  # the hand-registered target is forgotten
        devmod._selected = prev


@pytest.fixture
def device(minimal_device):
    """The conformance tests' device: the minimal one, selected as the default; each
    test that takes it must have launched a kernel on it."""
    from gpux_testing import selected

    before = minimal_device.runtime.launches
    with selected(minimal_device) as dev:
        yield dev
    assert minimal_device.runtime.launches > before, "no kernel ran on the minimal runtime"


def test_the_minimal_runtime_implements_only_the_required_part():
    own = {name for name, _ in inspect.getmembers(MinimalRuntime, inspect.isfunction)
           if name in vars(MinimalRuntime) and not name.startswith("_")}
    assert own == set(REQUIRED)
    for name in REQUIRED:  # the base declares each of them, and cannot do it
        assert callable(getattr(Runtime, name))
    with pytest.raises(NotImplementedError):
        Runtime().alloc(16)
    with pytest.raises(NotImplementedError):
        Runtime().launch(None, (1, 1, 1), (1, 1, 1), [], 0, None)


def test_optional_operations_have_their_defaults(minimal_device):
    """What a runtime without the optional part answers (the core's callers rely on it)."""
    rt = minimal_device.runtime
    assert rt.prepare(None, []) is None
    assert rt.kernel_attributes(None) == {}
    assert rt.binary_identity() is None and rt.program_binary(None) is None
    assert rt.foreign_array(np.zeros(3)) is None
    assert rt.device_attribute("WARP_SIZE") is None and rt.memory_info() is None
    assert not rt.can_access_peer(rt)
    assert rt.idle() is False  # (cannot tell: every wait may be a long one)
    assert not rt.buffers_are_addresses and not rt.pointer_includes_offset
    with pytest.raises(UnsupportedError, match="new_queue"):
        rt.new_queue()


def test_copy_between_buffers_defaults_to_a_trip_through_the_host(minimal_device):
    a = gpux.to_device(np.arange(8, dtype=np.int32), device=minimal_device)
    b = gpux.device_array(8, np.int32, device=minimal_device)
    minimal_device.runtime.copy(b._alloc.handle, 0, a._alloc.handle, 8, 24)
    assert b.copy_to_host()[:6].tolist() == [2, 3, 4, 5, 6, 7]


def test_idle_says_true_only_once_the_queued_work_has_completed(opencl_device):
    """``Runtime.idle`` answers without waiting: not while a kernel runs, yes once the
    queue's work is done."""
    @gpux.jit
    def spin(out, n):
        if gpux.grid(1) == 0:
            acc = 0
            for k in range(n):
                acc = (acc * 31 + k) % 1000003
            out[0] = acc

    out = gpux.device_array(1, np.int64)
    spin[1, 1](out, 10)
    rt = opencl_device.runtime
    rt.synchronize()
    if not rt.idle():
        pytest.skip("this runtime does not say when its queue is done (more than one "
                    "queue in use)")
    spin[1, 1](out, 50_000_000)  # a dependent chain of divisions: well over 10 ms
    assert rt.idle() is False
    rt.synchronize()
    assert rt.idle() is True


def test_launches_with_changing_arguments(device):
    """Every launch sets every argument: scalars, other arrays and views."""
    @gpux.jit
    def axpy(a, x, y):
        i = gpux.grid(1)
        if i < y.size:
            y[i] += a * x[i]

    x = gpux.to_device(np.arange(64, dtype=np.float32))
    ys = [gpux.to_device(np.zeros(64, np.float32)) for _ in range(2)]
    for a in (np.float32(1), np.float32(-0.0), np.float32(2)):
        for y in ys:
            axpy[2, 32](a, x, y)
    axpy[1, 32](np.float32(1), x[32:], ys[0][:32])
    want = np.arange(64, dtype=np.float32) * 3
    want[:32] += np.arange(32, 64)
    np.testing.assert_array_equal(ys[0].copy_to_host(), want)
    np.testing.assert_array_equal(ys[1].copy_to_host(), np.arange(64, dtype=np.float32) * 3)


def test_streams_on_a_runtime_without_queues_are_a_clear_error(minimal_device):
    from gpux_testing import selected

    from numba_gpux import cuda

    with selected(minimal_device), pytest.raises(UnsupportedError,
                                                 match="MinimalRuntime has no queues/events"):
        cuda.stream()


def test_a_device_whose_runtime_is_not_a_runtime_is_left_out_with_a_warning(minimal_device):
    """A target written against no contract (a runtime that does not subclass
    interface.Runtime) loses its devices, with a warning naming it, not the process."""
    import dataclasses

    from numba_gpux.interface import TargetEntry

    class Duck:
        def launch(self, *args):
            pass

    entry = target_entry()
    bad = TargetEntry(name="duck", make_target=entry.make_target, priority=-200,
                      discover=lambda: [dataclasses.replace(minimal_device, target_name="duck",
                                                            runtime=Duck(), _target=None)])
    devmod.register_target(bad)
    try:
        with pytest.warns(UserWarning, match="target 'duck' .* does not subclass"):
            found = gpux.devices()
        assert not any(d.target_name == "duck" for d in found)
        assert any(d.target_name == "minimal" for d in found)
    finally:
        devmod.targets().pop("duck", None)
        gpux.devices(refresh=True)


def test_host_memory_defaults_and_the_facade_on_a_runtime_without_them(minimal_device):
    """Without the optional host-memory operations: memset goes through ``write``,
    registering host memory pins nothing and works, mapping it or managed memory is a
    NotImplementedError naming the runtime (and algorithms read their results back); the facade's mapped and managed arrays are
    then ordinary host arrays."""
    from gpux_testing import selected

    from numba_gpux import cuda
    from numba_gpux.cuda.cudadrv import driver

    rt = minimal_device.runtime
    a = gpux.to_device(np.arange(8, dtype=np.uint8), device=minimal_device)
    rt.memset(a._alloc.handle, 2, 0xEE, 3)
    assert a.copy_to_host().tolist() == [0, 1, 0xEE, 0xEE, 0xEE, 5, 6, 7]
    assert rt.host_register(0x1000, 64) == (None, None)
    with pytest.raises(NotImplementedError, match="MinimalRuntime cannot map"):
        rt.host_register(0x1000, 64, mapped=True)
    with pytest.raises(NotImplementedError, match="MinimalRuntime has no managed"):
        rt.alloc_managed(64)
    # nor memory the host reads in place: a reduce reads its kernels' values back
    assert rt.shares_host_memory() is False
    from numba_gpux import algorithms as alg
    from numba_gpux import hooks

    x = np.arange(1, 5001, dtype=np.float64) % 97
    with hooks.trial({"algorithms.reduce_variant": "chunks"}):
        assert alg.reduce(x, "max", device=minimal_device) == x.max()
        assert alg.reduce(x, lambda a, b: a + b, device=minimal_device) == x.sum()
    with selected(minimal_device):
        ctx = cuda.current_context()
        assert ctx.device.gpux_device is minimal_device
        pinned = np.ndarray(4, np.uint32, buffer=ctx.memhostalloc(16))
        pinned[:] = 9
        d = ctx.memalloc(16)
        driver.host_to_device(d, pinned, 16)
        driver.device_memset(d.view(4, 8), 1, 4)
        out = np.zeros(4, np.uint32)
        driver.device_to_host(out, d, 16)
        assert out.tolist() == [9, 0x01010101, 9, 9]
        with pytest.raises(NotImplementedError):
            ctx.memhostalloc(16, mapped=True)
        m = cuda.mapped_array(4)
        assert type(m) is np.ndarray and m.base is None
        assert type(cuda.managed_array(4)) is np.ndarray
