"""Arrays of 1 to 3 dimensions in every layout (C, F, strided views) on the device."""

import warnings

import numpy as np
import pytest

import numba_gpux as gpux


@gpux.jit
def copy1(a, out):
    i = gpux.grid(1)
    if i < a.shape[0]:
        out[i] = a[i] + 1


@gpux.jit
def copy2(a, out):
    i, j = gpux.grid(2)
    if i < a.shape[0] and j < a.shape[1]:
        out[i, j] = a[i, j] * 2 + i - j


@gpux.jit
def copy3(a, out):
    i, j, k = gpux.grid(3)
    if i < a.shape[0] and j < a.shape[1] and k < a.shape[2]:
        out[i, j, k] = a[i, j, k] + i * 100 + j * 10 + k


def _views(rng):
    base2 = rng.integers(0, 100, (13, 17)).astype(np.float64)
    base3 = rng.integers(0, 100, (6, 7, 9)).astype(np.float32)
    return {
        "1d-C": rng.integers(0, 100, 29).astype(np.int32),
        "1d-step": rng.integers(0, 100, 60).astype(np.int32)[3:50:4],
        "1d-reversed": rng.integers(0, 100, 20).astype(np.int32)[::-1],
        "2d-C": base2,
        "2d-F": np.asfortranarray(base2),
        "2d-slice": base2[2:11:3, 1::2],
        "2d-transposed": base2.T,
        "3d-C": base3,
        "3d-F": np.asfortranarray(base3),
        "3d-strided": base3[::2, 1:, ::3],
    }


@pytest.mark.parametrize("name", ["1d-C", "1d-step", "1d-reversed", "2d-C", "2d-F", "2d-slice",
                                  "2d-transposed", "3d-C", "3d-F", "3d-strided"])
def test_layouts_through_device_views(device, name, rng):
    host = _views(rng)[name]
    # a device view with the same shape and strides as the host view
    if host.flags.c_contiguous or host.flags.f_contiguous:
        d = gpux.to_device(host)
    else:
        base = host.base if host.base is not None else host
        while base.base is not None:
            base = base.base
        dbase = gpux.to_device(base)
        offset = host.__array_interface__["data"][0] - base.__array_interface__["data"][0]
        d = dbase.view_as(host.shape, host.strides, offset)
    assert d.layout == ("C" if host.flags.c_contiguous else "F" if host.flags.f_contiguous else "A")
    np.testing.assert_array_equal(d.copy_to_host(), host)
    out = gpux.device_array(host.shape, host.dtype)
    if host.ndim == 1:
        copy1[(host.shape[0] + 31) // 32, 32](d, out)
        want = host + 1
    elif host.ndim == 2:
        copy2[(4, 4), (8, 8)](d, out)
        i, j = np.indices(host.shape)
        want = host * 2 + i - j
    else:
        copy3[(2, 2, 3), (4, 4, 4)](d, out)
        i, j, k = np.indices(host.shape)
        want = host + i * 100 + j * 10 + k
    np.testing.assert_array_equal(out.copy_to_host(), want.astype(host.dtype))


def test_slicing_device_arrays_gives_strided_views(device):
    a = np.arange(60, dtype=np.int64).reshape(6, 10)
    d = gpux.to_device(a)
    v = d[1:5, ::3]
    assert v.shape == (4, 4) and v.strides == (80, 24) and v.layout == "A"
    np.testing.assert_array_equal(v.copy_to_host(), a[1:5, ::3])
    out = gpux.device_array(v.shape, v.dtype)
    copy2[(1, 1), (8, 8)](v, out)
    i, j = np.indices(v.shape)
    np.testing.assert_array_equal(out.copy_to_host(), a[1:5, ::3] * 2 + i - j)
    # writes through a view land in the parent
    v.copy_to_device(np.zeros((4, 4), np.int64))
    host = d.copy_to_host()
    assert (host[1:5, ::3] == 0).all() and host[0, 0] == 0 and host[0, 1] == 1
    assert d[2, 4] == a[2, 4] and d[2, 3] == 0
    np.testing.assert_array_equal(d[-1].copy_to_host(), a[-1])


def test_numpy_arguments_are_copied_both_ways_with_one_warning(device):
    import numba_gpux.launch as launch_mod

    launch_mod._warned_numpy = False
    a = np.arange(20, dtype=np.float32)
    out = np.zeros(20, np.float32)
    with pytest.warns(gpux.NumpyArgumentWarning):
        copy1[1, 32](a, out)
    np.testing.assert_array_equal(out, a + 1)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        copy1[1, 32](a, out)  # no second warning


def test_device_array_helpers(device):
    d = gpux.device_array((3, 4), np.float32)
    assert d.shape == (3, 4) and d.dtype == np.float32 and d.nbytes == 48 and d.ndim == 2
    f = np.asfortranarray(np.ones((3, 4)))
    like = gpux.device_array_like(f)
    assert like.layout == "F" and like.shape == (3, 4)
    d2 = gpux.to_device(np.arange(12.0).reshape(3, 4))
    np.testing.assert_array_equal(d2.reshape(4, 3).copy_to_host(), np.arange(12.0).reshape(4, 3))
    np.testing.assert_array_equal(d2.ravel().copy_to_host(), np.arange(12.0))
    out = np.empty((3, 4))
    assert d2.copy_to_host(out) is out and out[2, 3] == 11.0
    assert gpux.is_device_array(d2) and not gpux.is_device_array(out)
    empty = gpux.to_device(np.zeros((0, 5)))
    assert empty.copy_to_host().shape == (0, 5)


def _reshape_into(a, shape, out):
    y = a.reshape(shape)
    flat = out.reshape(out.size)
    n = 0
    for i in range(y.shape[0]):
        for j in range(y.shape[1]):
            for k in range(y.shape[2]):
                flat[n] = y[i, j, k]
                n += 1


@pytest.mark.parametrize("shape, new", [
    ((24,), (2, 3, 4)), ((1, 8, 1, 1, 3, 1), (8, 1, 3)), ((5, 5), (5, -1, 1)),
    ((4, 6), (-1, 2, 3)), ((0,), (1, 0, 2)), ((2, 1, 12), (1, 24, 1)),
])
def test_reshape_in_a_kernel(device, shape, new):
    a = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    want = a.reshape(new)
    out = gpux.to_device(np.full(want.size, -1, dtype=np.int64))
    gpux.jit(_reshape_into)[1, 1](gpux.to_device(a), new, out)
    np.testing.assert_equal(out.copy_to_host(), want.ravel())


_UFUNC_CASES = [("sin", np.float32, 1), ("exp", np.float64, 1), ("log1p", np.float32, 1),
                ("sqrt", np.float64, 1), ("arctan2", np.float64, 2), ("power", np.float32, 2),
                ("floor_divide", np.int64, 2), ("absolute", np.int32, 1), ("hypot", np.float64, 2),
                ("isnan", np.float64, 1)]


def _ufunc_kernel(name, nin):
    src = (f"def k(out, a):\n    np.{name}(a, out)\n" if nin == 1
           else f"def k(out, a, b):\n    np.{name}(a, b, out)\n")
    g = {"np": np}
    exec(src, g)
    return g["k"]


@pytest.mark.parametrize("name, dtype, nin", _UFUNC_CASES)
def test_numpy_ufuncs_on_arrays_with_an_output(device, name, dtype, nin):
    rng = np.random.default_rng(3)
    if np.issubdtype(dtype, np.integer):
        args = [rng.integers(-20, 20, 33).astype(dtype) for _ in range(nin)]
        if name == "floor_divide":
            args[1][args[1] == 0] = 7
    else:
        args = [(rng.random(33) * 4 + 0.25).astype(dtype) for _ in range(nin)]
    ufunc = getattr(np, name)
    want = ufunc(*args)
    out = np.zeros_like(want)
    gpux.jit(_ufunc_kernel(name, nin))[1, 1](out, *args)
    np.testing.assert_allclose(out, want, rtol=4e-7 if dtype == np.float32 else 1e-14)


@pytest.mark.parametrize("name, dtype, nin", _UFUNC_CASES)
def test_numpy_ufuncs_on_arrays_compile_for_every_target(name, dtype, nin):
    from numba import typeof
    from numba.core import types

    arr = np.ones(4, dtype=dtype)
    out = getattr(np, name)(*[arr] * nin)
    sig = types.void(typeof(out), *[typeof(arr)] * nin)
    for target in ("cuda", "opencl"):
        art = gpux.compile(_ufunc_kernel(name, nin), sig, target=target)
        assert art.kernels


def test_in_place_array_arithmetic(device):
    @gpux.jit
    def k(a, b):
        a += b
        a *= 2.0

    a = np.arange(6.0)
    k[1, 1](a, np.ones(6))
    np.testing.assert_equal(a, (np.arange(6.0) + 1) * 2)


def test_array_expressions_make_arrays(device):
    """A ufunc without its output and arithmetic on whole arrays make new arrays in the
    kernel (from the device heap: language/heap.py), as on the CPU."""
    @gpux.jit
    def expressions(r, x):
        t = np.sin(x)
        u = x + x
        r[0] = t[1] + u[2]

    r = gpux.to_device(np.zeros(1))
    expressions[1, 1](r, np.arange(4.0))
    np.testing.assert_allclose(r.copy_to_host(), [np.sin(1.0) + 4.0])


def test_zero_dimensional_arrays_as_arguments(device):
    """0-d arrays (device and host) are kernel arguments, read and written with
    ``x[()]``, as in numba.cuda."""
    @gpux.jit
    def twice_plus_one(out, x):
        out[()] = x[()] * 2 + 1

    out = gpux.to_device(np.zeros((), np.float32))
    twice_plus_one[1, 1](out, gpux.to_device(np.array(3.0, np.float32)))
    assert out.shape == () and out.copy_to_host() == 7.0
    host = np.zeros((), np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", gpux.NumpyArgumentWarning)
        twice_plus_one[1, 1](host, np.array(5))
    assert host == 11
