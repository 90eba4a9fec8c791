"""Kernels, device functions, launch configurations, cuda.vectorize/guvectorize objects,
devices and device arrays pickle.

A jitted function travels as what to compile: by reference (module and name)
where it can be imported, else by value (its Python code, closure and globals,
with Numba's cloudpickle, also under plain pickle).  The other process compiles
it there, or loads it from the disk cache (``cache=True``).  Device arrays
pickle as their host data.
"""

import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numba_gpux as gpux

cloudpickle = pytest.importorskip("cloudpickle", reason="cloudpickle is not installed "
                                  "(pip install 'numba-gpux[dask]')")

PICKLERS = [pytest.param(pickle, id="pickle"), pytest.param(cloudpickle, id="cloudpickle")]
OFFSET = 0.5  # a module global the by-value kernels read


@gpux.jit(device=True)
def triple(v):
    return 3.0 * v


@gpux.jit
def by_name(x, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = triple(x[i]) + OFFSET


def make_closure(k):
    @gpux.jit
    def scaled(x, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = triple(x[i]) * k + OFFSET
    return scaled


def _run(kernel_or_cfg, x):
    d = gpux.device_array(x.shape, x.dtype)
    if isinstance(kernel_or_cfg, gpux.LaunchConfig):
        kernel_or_cfg(gpux.to_device(x), d)
    else:
        kernel_or_cfg[1, x.size](gpux.to_device(x), d)
    return d.copy_to_host()


@pytest.mark.parametrize("pk", PICKLERS)
def test_module_level_kernel_pickles_by_reference(pk, opencl_device):
    data = pk.dumps(by_name)
    assert b"make_closure" not in data and len(data) < 200  # a name, not code
    assert pickle.loads(data) is by_name
    assert pickle.loads(pk.dumps(triple)) is triple


@pytest.mark.parametrize("pk", PICKLERS)
def test_closure_kernel_pickles_by_value_and_runs(pk, opencl_device):
    k = make_closure(5.0)
    x = np.arange(8.0)
    want = 3.0 * x * 5.0 + OFFSET
    np.testing.assert_allclose(_run(k, x), want)
    data = pk.dumps(k)
    # in this process the same object comes back, with its compiled code
    assert pickle.loads(data) is k
    assert k.stats["neutral_compiles"] == 1


@pytest.mark.parametrize("pk", PICKLERS)
def test_launch_configuration_pickles(pk, opencl_device):
    cfg = by_name[2, 4]
    back = pickle.loads(pk.dumps(cfg))
    assert back.dispatcher is by_name and back.griddim == (2, 1, 1) and back.blockdim == (4, 1, 1)
    x = np.arange(8.0)
    np.testing.assert_allclose(_run(back, x), 3.0 * x + OFFSET)
    on = pickle.loads(pk.dumps(by_name[(2, 1), (4, 1), opencl_device]))
    assert on.device is opencl_device and on.griddim == (2, 1, 1) and on.ndim == 2


def test_launch_configuration_with_a_queue_is_refused(opencl_device):
    q = opencl_device.runtime.new_queue()
    with pytest.raises(gpux.GpuxUserError, match="queue"):
        pickle.dumps(by_name[1, 8, q])


def test_device_pickles_as_its_spec(opencl_device):
    assert pickle.loads(pickle.dumps(opencl_device)) is opencl_device


def test_device_array_pickles_as_host_data(opencl_device):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    d = gpux.to_device(a)
    back = pickle.loads(pickle.dumps(d))
    assert isinstance(back, gpux.DeviceArray) and back is not d
    assert back.device is opencl_device
    np.testing.assert_array_equal(back.copy_to_host(), a)
    view = pickle.loads(cloudpickle.dumps(d[::2, 1:4]))  # a strided view comes back contiguous
    assert view.is_c_contiguous()
    np.testing.assert_array_equal(view.copy_to_host(), a[::2, 1:4])


def test_unpicklable_python_function_is_a_clear_error(opencl_device):
    lock = __import__("threading").Lock()

    @gpux.jit
    def holds_a_lock(out):
        if lock.locked():
            out[0] = 1.0

    with pytest.raises(gpux.GpuxUserError, match="cannot pickle"):
        pickle.dumps(holds_a_lock)


CHILD = textwrap.dedent("""
    import json, pickle, sys
    import numpy as np
    import numba_gpux as gpux
    from numba_gpux import cache

    x = np.arange(8.0)
    out = {}
    for name, path in json.loads(sys.argv[1]).items():
        obj = pickle.load(open(path, "rb"))
        fn = getattr(obj, "dispatcher", obj)
        # compiled (typed) before any launch: eager signatures and specializations
        out[name.split("_")[0] + "_signatures"] = len(fn.signatures)
        d = gpux.device_array(x.shape)
        if isinstance(obj, gpux.LaunchConfig):
            obj(gpux.to_device(x), d)
        else:
            obj[1, 8](gpux.to_device(x), d)
        out[name] = d.copy_to_host().tolist()
    out["stats"] = dict(cache.stats)
    print("RESULT" + json.dumps(out))
""")


def _child(tmp_path, objs, env_extra=None):
    paths = {}
    for name, data in objs.items():
        p = tmp_path / f"{name}.pkl"
        p.write_bytes(data)
        paths[name] = str(p)
    env = dict(os.environ, **(env_extra or {}))
    # the tests folder, so that the by-reference kernels' module imports there
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(__file__), env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", CHILD, json.dumps(paths)], capture_output=True,
                         text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


def test_unpickled_in_another_process_compiles_there(tmp_path, opencl_device):
    x = np.arange(8.0)
    objs = {
        "by_name_pickle": pickle.dumps(by_name),
        "closure_pickle": pickle.dumps(make_closure(2.0)),
        "closure_cloudpickle": cloudpickle.dumps(make_closure(7.0)),
        "config_cloudpickle": cloudpickle.dumps(make_closure(-1.0)[2, 4]),
        "nested_pickle": pickle.dumps(make_nested(4.0)),
        "eager_pickle": pickle.dumps(make_eager()),
        "specialized_cloudpickle": cloudpickle.dumps(
            make_closure(0.5).specialize(gpux.to_device(x), gpux.device_array(8))),
    }
    got = _child(tmp_path, objs)
    np.testing.assert_allclose(got["by_name_pickle"], 3 * x + OFFSET)
    np.testing.assert_allclose(got["closure_pickle"], 3 * x * 2.0 + OFFSET)
    np.testing.assert_allclose(got["closure_cloudpickle"], 3 * x * 7.0 + OFFSET)
    np.testing.assert_allclose(got["config_cloudpickle"], 3 * x * -1.0 + OFFSET)
    np.testing.assert_allclose(got["nested_pickle"], x * x + 4.0)
    np.testing.assert_allclose(got["eager_pickle"], -x)
    np.testing.assert_allclose(got["specialized_cloudpickle"], 3 * x * 0.5 + OFFSET)
    assert got["eager_signatures"] == 1 and got["specialized_signatures"] == 1
    assert got["closure_signatures"] == 0  # lazily compiled ones compile on the first launch


def make_eager():
    @gpux.jit("void(float64[::1], float64[::1])")
    def negate(x, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = -x[i]
    return negate


def make_nested(c):
    """A kernel calling a device function that is itself a closure (both by value)."""
    @gpux.jit(device=True)
    def square_plus(v):
        return v * v + c

    @gpux.jit
    def nested(x, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = square_plus(x[i])
    return nested


def test_unpickled_cached_kernel_loads_from_the_disk_cache(tmp_path, opencl_device):
    def make():
        @gpux.jit(cache=True)
        def cached(x, out):
            i = gpux.grid(1)
            if i < out.size:
                out[i] = x[i] - 1.0
        return cached

    data = {"cached": cloudpickle.dumps(make())}
    env = {"NUMBA_GPUX_CACHE_DIR": str(tmp_path / "cache")}
    first = _child(tmp_path, data, env)
    second = _child(tmp_path, data, env)
    np.testing.assert_allclose(first["cached"], np.arange(8.0) - 1.0)
    np.testing.assert_allclose(second["cached"], np.arange(8.0) - 1.0)
    assert first["stats"]["misses"] >= 1
    loaded = second["stats"]["disk_hits"] + second["stats"].get("index_hits", 0)
    assert loaded >= 1 and second["stats"]["misses"] == 0, second["stats"]


def make_ufuncs(c):
    from numba_gpux import cuda

    @cuda.vectorize(["float64(float64, float64)"])
    def axpc(a, b):
        return a * b + c

    @cuda.guvectorize(["void(float64[:], float64[:])"], "(n)->(n)")
    def scaled_cumsum(x, out):
        acc = 0.0
        for i in range(x.shape[0]):
            acc += x[i] * c
            out[i] = acc

    @cuda.vectorize
    def lazy(a):
        return a + c

    return axpc, scaled_cumsum, lazy


UFUNC_CHILD = textwrap.dedent("""
    import json, pickle, sys
    import numpy as np

    axpc, cums, lazy = pickle.load(open(sys.argv[1], "rb"))
    x = np.arange(6.0)
    print("RESULT" + json.dumps({"sigs": len(axpc._sigs), "layout": cums.layout,
                                 "axpc": axpc(x, x).tolist(), "cums": cums(x).tolist(),
                                 "lazy": lazy(x).tolist()}))
""")


@pytest.mark.parametrize("pk", PICKLERS)
def test_vectorize_and_guvectorize_objects_pickle(pk, tmp_path, opencl_device):
    ufuncs = make_ufuncs(3.0)
    for u in ufuncs:
        assert pickle.loads(pk.dumps(u)) is u
    path = tmp_path / "ufuncs.pkl"
    path.write_bytes(pk.dumps(ufuncs))
    res = subprocess.run([sys.executable, "-c", UFUNC_CHILD, str(path)], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    got = json.loads([ln for ln in res.stdout.splitlines() if ln.startswith("RESULT")][-1][6:])
    x = np.arange(6.0)
    assert got["sigs"] == 1 and got["layout"] == "(n)->(n)"
    np.testing.assert_allclose(got["axpc"], x * x + 3.0)
    np.testing.assert_allclose(got["cums"], np.cumsum(x * 3.0))
    np.testing.assert_allclose(got["lazy"], x + 3.0)


class DoubleFirst:
    """A kernel extension (numba.cuda's prepare_args protocol): doubles scalar args."""

    def prepare_args(self, ty, val, stream=None, retr=None):
        if isinstance(val, int):
            return ty, 2 * val
        return ty, val


def make_facade_kernel():
    from numba_gpux import cuda

    @cuda.jit("void(int32[::1], int64)", extensions=[DoubleFirst()])
    def put(a, v):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = v + i
    return put


CHILD_FACADE = textwrap.dedent("""
    import json, pickle, sys
    import numpy as np
    from numba_gpux import cuda

    k = pickle.load(open(sys.argv[1], "rb"))
    a = cuda.to_device(np.zeros(4, np.uint32))  # the single signature's int32: a view
    k[1, 4](a, 5)
    print("RESULT" + json.dumps({"ext": [type(e).__name__ for e in k.extensions],
                                 "bitcast": k.bitcast_arrays,
                                 "out": a.copy_to_host().tolist()}))
""")


def test_a_facade_kernel_keeps_its_extensions_and_signature_rule(tmp_path, opencl_device):
    p = tmp_path / "k.pkl"
    p.write_bytes(cloudpickle.dumps(make_facade_kernel()))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([os.path.dirname(__file__), env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-c", CHILD_FACADE, str(p)], capture_output=True,
                         text=True, timeout=300, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT")][-1]
    got = json.loads(line[len("RESULT"):])
    assert got == {"ext": ["DoubleFirst"], "bitcast": True, "out": [10, 11, 12, 13]}


def test_a_facade_array_pickles_as_one(opencl_device):
    from numba_gpux import cuda
    from numba_gpux.cuda.cudadrv.devicearray import DeviceNDArray

    d = cuda.to_device(np.arange(6.0).reshape(2, 3))
    back = pickle.loads(pickle.dumps(d))
    assert type(back) is DeviceNDArray
    np.testing.assert_array_equal(back.T.copy_to_host(), np.arange(6.0).reshape(2, 3).T)
    assert back.T.is_c_contiguous()
    assert type(pickle.loads(pickle.dumps(gpux.to_device(np.zeros(2))))) is gpux.DeviceArray
