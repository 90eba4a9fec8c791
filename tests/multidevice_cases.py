"""Two devices in one process (run by test_multidevice.py in a child process of its own).

Uses two real devices: on the test machines, the Intel OpenCL CPU driver
(``opencl``, SPIR-V) and PoCL (``opencl-c``, OpenCL C source), which are
separate OpenCL devices with separate contexts and memory.  The two share no
memory, so everything here that crosses devices goes through the host.
"""

import threading

import numpy as np
import pytest

import numba_gpux as gpux


@gpux.jit
def affine(x, out, a):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a * x[i] + 1.0


@pytest.fixture(scope="module")
def two():
    devs = gpux.devices()
    if len(devs) < 2:
        pytest.skip(f"needs two devices; found {[d.spec for d in devs]}")
    prev = gpux.default_device()
    yield devs[0], devs[1]
    gpux.select_device(prev)


def test_device_per_launch_and_one_kernel_per_device(two):
    a, b = two
    x = np.arange(32.0)
    outs = []
    for dev in (a, b, a, b):
        d = gpux.device_array(32, device=dev)
        affine[1, 32, dev](gpux.to_device(x, device=dev), d, 2.0)
        assert d.device is dev
        outs.append(d.copy_to_host())
    for o in outs:
        np.testing.assert_allclose(o, 2.0 * x + 1.0)
    # typed and lowered once; the per-target tail once per device's target
    assert affine.stats["neutral_compiles"] == 1
    targets = {a.target.fingerprint, b.target.fingerprint}
    assert affine.stats["target_compiles"] == len(targets)
    assert {key[1] for key in affine._shims} == {a, b}  # (argtypes, device, strides)


def test_device_given_by_spec_in_the_launch(two):
    a, b = two
    x = np.arange(16.0)
    d = gpux.device_array(16, device=b)
    cfg = affine[1, 16, b.spec]
    assert cfg.device is b
    cfg(gpux.to_device(x, device=b), d, 3.0)
    np.testing.assert_allclose(d.copy_to_host(), 3.0 * x + 1.0)


def test_use_device_scopes_nest_and_restore(two):
    a, b = two
    gpux.select_device(a)
    with gpux.use_device(b) as dev:
        assert dev is b and gpux.default_device() is b
        x = gpux.to_device(np.arange(8.0))
        out = gpux.device_array(8)
        assert x.device is b and out.device is b
        affine[1, 8](x, out, 4.0)  # launches on the scope's device
        with gpux.use_device(a.spec):
            assert gpux.default_device() is a
        assert gpux.default_device() is b
    assert gpux.default_device() is a
    np.testing.assert_allclose(out.copy_to_host(), 4.0 * np.arange(8.0) + 1.0)


def test_use_device_is_per_thread(two):
    a, b = two
    gpux.select_device(a)
    seen = {}
    barrier = threading.Barrier(2, timeout=60)

    def work(dev, factor):
        with gpux.use_device(dev):
            barrier.wait()  # both scopes open at once
            x = gpux.to_device(np.arange(64.0))
            out = gpux.device_array(64)
            for _ in range(5):
                affine[1, 64](x, out, factor)
            seen[dev.spec] = (gpux.default_device(), x.device, out.copy_to_host())

    ts = [threading.Thread(target=work, args=(a, 2.0)),
          threading.Thread(target=work, args=(b, 5.0))]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    assert gpux.default_device() is a
    for dev, f in ((a, 2.0), (b, 5.0)):
        cur, where, res = seen[dev.spec]
        assert cur is dev and where is dev
        np.testing.assert_allclose(res, f * np.arange(64.0) + 1.0)


def test_copy_between_devices(two):
    a, b = two
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    da_ = gpux.to_device(host, device=a)
    assert gpux.to_device(da_) is da_ and gpux.to_device(da_, device=a) is da_
    db = gpux.to_device(da_, device=b)
    assert db.device is b and db is not da_
    np.testing.assert_array_equal(db.copy_to_host(), host)
    view = gpux.to_device(da_[:, 1:3], device=b.spec)  # a strided view, copied as its data
    np.testing.assert_array_equal(view.copy_to_host(), host[:, 1:3])
    back = gpux.device_array_like(da_, device=a)
    back.copy_to_device(db)  # device to device, through the host
    np.testing.assert_array_equal(back.copy_to_host(), host)


def test_array_of_another_device_is_refused_before_the_launch(two):
    a, b = two
    x_a = gpux.to_device(np.arange(8.0), device=a)
    out_a = gpux.to_device(np.zeros(8), device=a)
    affine[1, 8, a](x_a, out_a, 1.0)  # this signature's fast launch path is entered
    x_b = gpux.to_device(np.arange(8.0), device=b)
    out_keep = gpux.to_device(np.full(8, -3.0), device=a)
    for args in ((x_b, out_keep, 1.0), (x_a, gpux.device_array(8, device=b), 1.0)):
        with pytest.raises(gpux.LaunchError, match=f"on {b.spec}.*launches on {a.spec}"):
            affine[1, 8, a](*args)
    np.testing.assert_array_equal(out_keep.copy_to_host(), np.full(8, -3.0))
    from numba_gpux.memory import InOut

    with pytest.raises(gpux.LaunchError,
                       match=f"argument 1( \\(InOut\\))? is a device array on {b.spec}"):
        affine[1, 8, a](x_a, InOut(gpux.device_array(8, device=b)), 1.0)


def test_algorithms_run_on_their_arrays_device(two):
    """numba_gpux.algorithms on device arrays of the device that is not current, and
    with ``device=`` given as a spec: each launches on that device (before, each of
    map, reduce, scan and sort launched on the current device and was refused)."""
    from numba_gpux import algorithms as alg

    a, b = two
    gpux.select_device(a)
    x = np.random.default_rng(5).integers(-50, 50, 4000).astype(np.int64)
    d = gpux.to_device(x, device=b)
    assert alg.reduce(d) == x.sum()
    assert alg.reduce(d, "max") == x.max()
    np.testing.assert_array_equal(alg.scan(d).copy_to_host(), np.cumsum(x))
    np.testing.assert_array_equal(alg.sort(d).copy_to_host(), np.sort(x))
    m = alg.map(lambda v: v * 2, d)
    assert m.device is b
    np.testing.assert_array_equal(m.copy_to_host(), x * 2)
    x2 = x.reshape(100, 40)
    for ax in (0, 1):
        r = alg.reduce(gpux.to_device(x2, device=b), axis=ax)
        assert r.device is b
        np.testing.assert_array_equal(r.copy_to_host(), x2.sum(axis=ax))
    # a host array and the device named by its spec: the result is NumPy's
    assert alg.reduce(x, device=b.spec) == x.sum()
    np.testing.assert_array_equal(alg.reduce(x2, axis=0, device=b.spec), x2.sum(axis=0))
    assert gpux.default_device() is a  # (the current device is left as it was)
