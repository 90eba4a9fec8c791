"""numba_gpux.dask on a real distributed.LocalCluster: two worker processes, each pinned
to the OpenCL CPU device, running kernels over the blocks of dask arrays.

One cluster serves the whole module; every wait is bounded, and the module
checks that no worker process outlives it.
"""

import logging
import os
import signal
import sys
import time

import numpy as np
import pytest

import numba_gpux as gpux

pytest.importorskip("dask.array", reason="dask is not installed (pip install 'numba-gpux[dask]')")
distributed = pytest.importorskip(
    "distributed", reason="distributed is not installed (pip install 'numba-gpux[dask]')")
cloudpickle = pytest.importorskip("cloudpickle")
psutil = pytest.importorskip("psutil")

import dask.array as da  # noqa: E402

import numba_gpux.dask as gd  # noqa: E402

TIMEOUT = 120  # seconds, for any one result

# the kernels below travel to the workers by value: the workers need not import this module
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@gpux.jit(cache=True)
def blur3x3(x, out):
    i, j = gpux.grid(2)
    n, m = out.shape
    if i < n and j < m:
        acc = 0.0
        for di in range(-1, 2):
            for dj in range(-1, 2):
                ii = min(max(i + di, 0), n - 1)
                jj = min(max(j + dj, 0), m - 1)
                acc += x[ii, jj]
        out[i, j] = acc / 9.0


@gpux.jit
def sum_squares(x, out):
    i = gpux.grid(1)
    if i < x.size:
        gpux.atomic.add(out, 0, x[i] * x[i])


@gpux.jit
def heavy(x, iters, out):
    i = gpux.grid(1)
    if i < out.size:
        v = x[i]
        acc = 0.0
        for k in range(iters):
            acc = acc * 0.999 + v * 1e-3 + k * 1e-9
        out[i] = acc


def heavy_numpy(x, iters):
    acc = np.zeros_like(x)
    for k in range(iters):
        acc = acc * 0.999 + x * 1e-3 + k * 1e-9
    return acc


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    devs = [d for d in gpux.devices() if d.target_name == "opencl"]
    if not devs:
        pytest.skip("no SPIR-V capable OpenCL device (pip install 'numba-gpux[cpu]')")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    cache = tmp_path_factory.mktemp("gpux-dask-cache")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=logging.ERROR)
    c = distributed.Client(cluster, timeout=TIMEOUT)
    try:
        c.wait_for_workers(2, timeout=TIMEOUT)
        c.register_plugin(gd.DevicePlugin(devices=[devs[0].spec], cache_dir=str(cache)))
        c.gpux_spec = devs[0].spec
        c.gpux_cache = str(cache)
        yield c
    finally:
        c.close(timeout=30)
        cluster.close(timeout=30)
    deadline = time.monotonic() + 30
    while True:
        left = [(p.pid, " ".join(p.cmdline())[:200]) for p in _children(before)]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert not left, f"worker processes left behind: {left}"


def _children(before):
    """Live child processes not there before the cluster, except multiprocessing's
    resource tracker (started once, with the first spawned process; it lives as long
    as this process)."""
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.pid in before or p.status() == psutil.STATUS_ZOMBIE:
                continue
            if "resource_tracker" in " ".join(p.cmdline()):
                continue
        except psutil.NoSuchProcess:
            continue
        out.append(p)
    return out


def _result(c, x):
    return c.compute(x).result(timeout=TIMEOUT)


def _stats(c):
    from numba_gpux import cache

    return c.run(lambda: dict(cache.stats))


def test_dask_counts_the_device_memory_of_device_arrays():
    # Dask's memory accounting (sizeof) of a device array, in both APIs: its bytes,
    # not the Python object's few dozen
    from dask.sizeof import sizeof

    from numba_gpux import cuda

    for x in (gpux.to_device(np.zeros(1000)), cuda.to_device(np.zeros((10, 100), np.float32))):
        assert x.nbytes <= sizeof(x) < x.nbytes + 1024
        assert sys.getsizeof(x) >= x.nbytes


def test_each_worker_is_pinned_to_its_device(client):
    got = client.run(lambda: (gd.worker_device().spec, gpux.default_device().spec,
                              os.environ.get("NUMBA_GPUX_DEVICE"),
                              os.environ.get("NUMBA_GPUX_VISIBLE_DEVICES"),
                              os.environ.get("NUMBA_GPUX_CACHE_DIR")))
    assert len(got) == 2
    for spec, current, env, visible, cache in got.values():
        assert spec == current == env == visible == client.gpux_spec
        assert cache == client.gpux_cache


def test_stencil_with_halos_matches_numpy(client):
    rng = np.random.default_rng(7)
    a = rng.random((300, 200))
    x = da.from_array(a, chunks=(100, 80))  # 3 x 3 blocks, uneven at the edge
    y = gd.map_overlap(blur3x3, x, depth=1, boundary="reflect")
    assert isinstance(y, da.Array) and y.chunks == x.chunks
    got = _result(client, y)
    p = np.pad(a, 1, mode="symmetric")  # dask's 'reflect' repeats the edge element
    want = sum(p[1 + di:p.shape[0] - 1 + di, 1 + dj:p.shape[1] - 1 + dj]
               for di in (-1, 0, 1) for dj in (-1, 0, 1)) / 9.0
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_reduction_matches_numpy(client):
    a = np.random.default_rng(8).standard_normal(100_000)
    x = da.from_array(a, chunks=12_500)
    partial = gd.map_blocks(sum_squares, x, out_shape=(1,), fill=0.0)
    assert partial.shape == (8,)
    got = _result(client, partial.sum())
    np.testing.assert_allclose(got, np.sum(a * a), rtol=1e-10)


def test_kernel_pickled_here_runs_on_the_workers(client):
    def make(k):
        @gpux.jit
        def scaled(x, out):
            i = gpux.grid(1)
            if i < out.size:
                out[i] = x[i] * k
        return scaled

    data = cloudpickle.dumps(make(3.0)[4, 64])  # a launch configuration, kernel inside

    def run(blob, x):
        import pickle

        cfg = pickle.loads(blob)
        out = gpux.device_array(x.shape)
        cfg(gpux.to_device(x), out)
        return out.copy_to_host(), gpux.default_device().spec, os.getpid()

    x = np.arange(256.0)
    futs = [client.submit(run, data, x, workers=[w], pure=False)
            for w in client.scheduler_info()["workers"]]
    results = client.gather(futs)
    assert len({pid for _, _, pid in results}) == 2  # two processes ran it
    for out, spec, _ in results:
        assert spec == client.gpux_spec
        np.testing.assert_allclose(out, 3.0 * x)


def test_cached_kernel_is_compiled_by_one_worker(client):
    def make():
        @gpux.jit(cache=True)
        def offset(x, out):
            i = gpux.grid(1)
            if i < out.size:
                out[i] = x[i] + 41.0
        return offset

    k = make()
    workers = list(client.scheduler_info()["workers"])
    before = _stats(client)
    rng = np.random.default_rng(9)
    arrays = [rng.random(4000) for _ in workers]
    # the same kernel and signature at once on both workers (different data: different tasks)
    futs = [client.compute(gd.map_blocks(k, da.from_array(a, chunks=1000)), workers=[w])
            for a, w in zip(arrays, workers)]
    for f, a in zip(futs, arrays):
        np.testing.assert_allclose(f.result(timeout=TIMEOUT), a + 41.0)
    after = _stats(client)
    misses = sum(after[w]["misses"] - before[w]["misses"] for w in workers)
    # loaded from the shared disk cache: by its key after typing, or found before typing
    disk = sum(after[w][k] - before[w][k] for w in workers for k in ("disk_hits", "index_hits")
               if k in after[w])
    assert (misses, disk) == (1, 1), (before, after)


def test_killed_worker_does_not_change_the_result(client):
    iters = 3000
    a = np.random.default_rng(10).random(24 * 2048)
    x = da.from_array(a, chunks=2048)
    y = gd.map_blocks(heavy, x, iters).persist()
    futs = distributed.futures_of(y)
    distributed.wait(futs, timeout=TIMEOUT, return_when="FIRST_COMPLETED")
    who_has = client.who_has(futs)
    victim = next(iter(who_has[next(k for k, ws in who_has.items() if ws)]))
    lost = [k for k, ws in who_has.items() if victim in ws]  # finished blocks it holds
    pid = client.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)
    got = client.compute(y).result(timeout=TIMEOUT)
    assert lost, "the killed worker held no finished block"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    np.testing.assert_allclose(got, heavy_numpy(a, iters), rtol=1e-9)
    client.wait_for_workers(2, timeout=TIMEOUT)  # the nanny restarts it, pinned again
    assert set(client.run(lambda: gd.worker_device().spec).values()) == {client.gpux_spec}
