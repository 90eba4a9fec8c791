"""``cuda.vectorize`` / ``cuda.guvectorize`` on every device: signatures given or taken
from the call, broadcasting, scalars, ``out=``, ``stream=``, device arrays in and out,
gufunc layouts, checked against NumPy."""

import math

import numpy as np
import pytest

from numba_gpux import cuda


@pytest.fixture(scope="module")
def add():
    @cuda.vectorize(["float32(float32, float32)", "float64(float64, float64)",
                     "int64(int64, int64)"])
    def add(a, b):
        return a + b

    return add


def test_eager_signatures_pick_by_dtype(device, add):
    x32 = np.arange(10, dtype=np.float32)
    r = add(x32, x32)
    assert isinstance(r, np.ndarray) and r.dtype == np.float32
    np.testing.assert_array_equal(r, 2 * x32)
    i = np.arange(5)
    assert add(i, i).dtype == np.int64
    # as NumPy's loop resolution: the first signature the inputs cast to safely
    assert add(np.arange(3, dtype=np.int32), np.arange(3, dtype=np.int32)).dtype == np.float64
    with pytest.raises(TypeError, match="no matching signature"):
        add(np.ones(2, np.complex128), np.ones(2, np.complex128))


def test_broadcasting_and_scalars(device, add):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    np.testing.assert_array_equal(add(a, np.arange(4.0)), a + np.arange(4.0))
    np.testing.assert_array_equal(add(a, np.arange(3.0)[:, None]), a + np.arange(3.0)[:, None])
    np.testing.assert_array_equal(add(a, 1.5), a + 1.5)
    np.testing.assert_array_equal(add(2.0, a[:, ::2]), 2.0 + a[:, ::2])
    # only scalars: a one-element array, as numba.cuda gives (each scalar made a
    # one-element array); a 0-d array operand stays 0-d
    r = add(2.0, np.float64(3.0))
    assert isinstance(r, np.ndarray) and r.shape == (1,) and r.tolist() == [5.0]
    assert add(np.array(2.0), 3.0) == 5.0 and np.ndim(add(np.array(2.0), 3.0)) == 0
    with pytest.raises(ValueError):
        add(a, np.arange(5.0))



def test_scalars_take_the_signature_the_arrays_match(device):
    """numba.cuda's rule for scalar operands: a signature all inputs match exactly, else
    the one the arrays match exactly, the scalars converted to its types (a float
    threshold given to an int16 ufunc, as a numba.cuda tutorial does)."""
    @cuda.vectorize(["int16(int16, int16)", "float64(float64, float64)"])
    def suppress(w, t):
        return 0 if w < t else w

    w = np.array([3, 20, -5, 100, 15], np.int16)
    r = suppress(w, 15.0)   # float64 scalar: int16, as the array, not float64
    assert r.dtype == np.int16
    np.testing.assert_array_equal(r, [0, 20, 0, 100, 15])
    assert suppress(w, 15.7).tolist() == [0, 20, 0, 100, 15]  # 15.7 converted to 15
    assert suppress(w.astype(np.float64), 15).dtype == np.float64
    # only scalars, none matching one signature exactly: numba.cuda's TypeError
    with pytest.raises(TypeError, match="ambiguous signature"):
        suppress(np.float32(1), 2.0)
    # where numba.cuda finds no signature (an int32 array), the first the inputs cast
    # to safely, as before
    assert suppress(w.astype(np.int32), 15).dtype == np.float64

def test_arrays_of_any_rank_and_layout_give_numpys_results(device, add):
    """Elementwise loops over C-ordered arrays run as one flat loop, whatever their rank
    (views with an offset included); F order, broadcast operands, strided views and
    strided outputs keep the loop's own indices."""
    rng = np.random.default_rng(3)
    big = rng.standard_normal((5, 6, 7))
    other = rng.standard_normal((5, 6, 7))
    cases = [
        (big, other),                                  # C, rank 3
        (big[1:4], other[2:5]),                        # C views with offsets
        (np.asfortranarray(big), other),               # F against C
        (big, other[:, :1, :]),                        # broadcast along an axis
        (big[:, ::2, :], other[:, 1::2, :]),           # strided views
        (big[0], 2.5),                                 # rank 2 and a scalar
    ]
    for a, b in cases:
        np.testing.assert_array_equal(add(a, b), a + b)
        d = add(cuda.to_device(np.ascontiguousarray(a)), b)
        np.testing.assert_array_equal(d.copy_to_host(), np.ascontiguousarray(a) + b)
    # rows of 64 or more: the two-dimensional launch, also over more rows than one
    # launch's y extent (65,535) holds
    wide_a = rng.standard_normal((300, 70))
    deep = rng.standard_normal((3, 5, 130))
    tall = rng.standard_normal((70_001, 64))
    for a, b in ((wide_a, wide_a[0]), (wide_a, wide_a[:, :1]),
                 (np.asfortranarray(wide_a), wide_a), (deep, deep[:, :1, :]),
                 (deep[:, :, ::-1], 1.0), (tall, tall[:1, :] * 0 + 3.0)):
        np.testing.assert_array_equal(add(a, b), a + b)
    # outputs: a C-ordered view with an offset, and a strided one
    out = cuda.to_device(np.zeros((7, 6, 7)))
    add(big, other, out=out[2:7])
    host = out.copy_to_host()
    np.testing.assert_array_equal(host[2:7], big + other)
    assert not host[:2].any()
    wide = cuda.to_device(np.zeros((5, 12, 7)))
    add(big, other, out=wide[:, ::2, :])
    host = wide.copy_to_host()
    np.testing.assert_array_equal(host[:, ::2, :], big + other)
    assert not host[:, 1::2, :].any()


def test_lazy_signature_from_the_call(device):
    @cuda.vectorize
    def hyp(a, b):
        return math.sqrt(a * a + b * b)

    r = hyp(np.array([3.0, 5.0]), np.array([4.0, 12.0]))
    np.testing.assert_allclose(r, [5.0, 13.0])
    r32 = hyp(np.array([3.0], np.float32), np.array([4.0], np.float32))
    assert r32.dtype == np.float32 and r32[0] == 5.0

    @cuda.vectorize()
    def twice(a):
        return 2 * a

    assert twice(np.arange(3)).tolist() == [0, 2, 4]


def test_device_arrays_stay_on_device_and_out(device, add):
    x = np.arange(8, dtype=np.float32)
    d = cuda.to_device(x)
    r = add(d, d)
    assert isinstance(r, cuda.DeviceNDArray)
    np.testing.assert_array_equal(r.copy_to_host(), 2 * x)
    r2 = add(r, x)  # one device operand: the result stays on the device
    assert isinstance(r2, cuda.DeviceNDArray)
    np.testing.assert_array_equal(r2.copy_to_host(), 3 * x)
    out = cuda.device_array_like(x)
    assert add(x, x, out=out) is out
    np.testing.assert_array_equal(out.copy_to_host(), 2 * x)
    host_out = np.empty_like(x)
    assert add(x, 1.0, host_out) is host_out  # out given positionally
    np.testing.assert_array_equal(host_out, x + 1)
    with pytest.raises(ValueError, match="out has shape"):
        add(x, x, out=cuda.device_array(3, np.float32))


def test_stream(device, add):
    s = cuda.stream()
    x = np.arange(1000, dtype=np.float64)
    d = cuda.to_device(x, stream=s)
    r = add(d, d, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(r.copy_to_host(), 2 * x)
    with s.auto_synchronize():
        host = add(x, x, stream=s)
    np.testing.assert_array_equal(host, 2 * x)


def test_gufunc_layouts(device):
    @cuda.guvectorize(["void(float32[:], float32, float32[:])",
                       "void(float64[:], float64, float64[:])"], "(n),()->(n)")
    def axpy(x, a, out):
        for i in range(x.shape[0]):
            out[i] = a * x[i]

    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    r = axpy(x, np.float32(2))
    assert r.dtype == np.float32
    np.testing.assert_array_equal(r, 2 * x)
    np.testing.assert_array_equal(axpy(x, np.arange(3, dtype=np.float32)[:, None][:, 0]),
                                  x * np.arange(3)[:, None])

    @cuda.guvectorize(["void(float64[:,:], float64[:,:], float64[:,:])"], "(m,n),(n,p)->(m,p)")
    def matmul(a, b, c):
        for i in range(c.shape[0]):
            for j in range(c.shape[1]):
                t = 0.0
                for k in range(a.shape[1]):
                    t += a[i, k] * b[k, j]
                c[i, j] = t

    rng = np.random.default_rng(7)
    a, b = rng.random((5, 2, 3)), rng.random((3, 4))
    np.testing.assert_allclose(matmul(a, b), a @ b)
    da = cuda.to_device(a)
    dr = matmul(da, b)
    assert isinstance(dr, cuda.DeviceNDArray)
    np.testing.assert_allclose(dr.copy_to_host(), a @ b)
    with pytest.raises(ValueError, match="core dimension 'n'"):
        matmul(a, rng.random((4, 4)))

    @cuda.guvectorize(["void(int64[:], int64[:])"], "(n)->()")
    def total(x, res):
        s = 0
        for v in x:
            s += v
        res[0] = s

    m = np.arange(20).reshape(4, 5)
    np.testing.assert_array_equal(total(m), m.sum(axis=1))
    out = cuda.device_array(4, np.int64)
    total(cuda.to_device(m), out=out)
    np.testing.assert_array_equal(out.copy_to_host(), m.sum(axis=1))


def test_lazy_gufunc_takes_outputs(device):
    @cuda.guvectorize("(n)->(n)")
    def cumsum(x, out):
        s = x[0] * 0
        for i in range(x.shape[0]):
            s += x[i]
            out[i] = s

    x = np.arange(10.0).reshape(2, 5)
    out = np.empty_like(x)
    cumsum(x, out)
    np.testing.assert_array_equal(out, np.cumsum(x, axis=1))
    with pytest.raises(TypeError, match="without signatures"):
        cumsum(x)


def test_generated_kernels_compile_for_cuda(ptxas, device, add):
    import numba_gpux

    add(np.ones(4, np.float32), np.float32(1))
    from numba.core import types

    kernel = add._kernels.kernels[(1, (False, True), (types.float32, types.float32), False)]
    sig = "void(int64, float32[:], float32, float32[:])"
    res = numba_gpux.compile(kernel.py_func, sig, target="cuda")
    assert ".entry" in res.text
    # a broadcast operand over rows of 128: the two-dimensional launch's kernel
    add(np.ones((3, 128), np.float32), np.ones(128, np.float32))
    rows = add._kernels.kernels[(2, (False, False), (types.float32, types.float32), True)]
    sig = "void(int64, float32[:, :], float32[:, :], float32[:, :])"
    res = numba_gpux.compile(rows.py_func, sig, target="cuda")
    assert ".entry" in res.text


@pytest.fixture
def numba_target():
    """The facade's builders registered with ``numba.vectorize``/``numba.guvectorize``
    under a name of their own, as numba registers numba.cuda's under ``"cuda"``."""
    from numba.np.ufunc.decorators import GUVectorize, Vectorize

    from numba_gpux.cuda.vectorizers import CUDAGUFuncVectorize, CUDAVectorize

    name = "gpux_facade_test"
    Vectorize.target_registry.ondemand[name] = lambda: CUDAVectorize
    GUVectorize.target_registry.ondemand[name] = lambda: CUDAGUFuncVectorize
    yield name
    for reg in (Vectorize.target_registry, GUVectorize.target_registry):
        reg.ondemand.pop(name, None)
        reg.pop(name, None)


def test_numba_vectorize_builds_through_the_facade(device, numba_target):
    import numba

    @numba.vectorize(["float64(float64, float64)", "int64(int64, int64)"],
                     target=numba_target)
    def mul(a, b):
        return a * b

    assert isinstance(mul, cuda.vectorizers.CUDAUFunc)
    np.testing.assert_array_equal(mul(np.arange(5.0), 3.0), np.arange(5.0) * 3.0)
    assert mul(np.arange(4), np.arange(4)).dtype == np.int64

    @numba.guvectorize(["void(float64[:], float64[:])"], "(n)->()", target=numba_target)
    def norm2(x, res):
        s = 0.0
        for v in x:
            s += v * v
        res[0] = s

    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(norm2(x), (x * x).sum(axis=1))


def test_vectorize_options_checked_as_numba_cuda(device, numba_target):
    import numba

    def f(a):
        return a

    with pytest.raises(TypeError, match="caching is not supported"):
        cuda.vectorize(["float64(float64)"], cache=True)(f)
    with pytest.raises(KeyError, match="does not support option: 'fastmath_x'"):
        cuda.vectorize(["float64(float64)"], fastmath_x=True)(f)
    with pytest.warns(RuntimeWarning, match="nopython kwarg for cuda target is redundant"):
        g = numba.vectorize(["float64(float64)"], target=numba_target, nopython=True)(f)
    np.testing.assert_array_equal(g(np.arange(3.0)), np.arange(3.0))
    with pytest.raises(TypeError, match="caching is not supported"):
        numba.vectorize(["float64(float64)"], target=numba_target, cache=True)(f)

    def h(x, out):
        out[0] = x[0]

    sig, layout = ["void(float64[:], float64[:])"], "(n)->()"
    with pytest.raises(TypeError, match="caching is not supported"):
        cuda.guvectorize(sig, layout, cache=True)(h)
    with pytest.raises(TypeError, match="writable_args are not supported"):
        numba.guvectorize(sig, layout, target=numba_target, writable_args=(0,))(h)
    with pytest.raises(TypeError, match="nopython flag must be True"):
        cuda.guvectorize(sig, layout, nopython=False)(h)
    with pytest.raises(TypeError, match="not supported: 'bogus'"):
        cuda.guvectorize(sig, layout, bogus=1)(h)


def test_gufunc_call_errors(device):
    with pytest.raises(TypeError, match="cannot return values.*float64 return type"):
        @cuda.guvectorize(["float64(float64[:], float64[:])"], "(n)->()")
        def bad(x, out):
            out[0] = x[0]

    @cuda.guvectorize(["void(float64[:], float64[:], float64[:])"], "(n),(n)->(n)")
    def addv(a, b, out):
        for i in range(a.shape[0]):
            out[i] = a[i] + b[i]

    a = np.arange(4.0)
    with pytest.raises(TypeError, match=r"^gufunc accepts 2 positional arguments \(the inputs\) "
                                        r"or 3 positional arguments \(inputs and outputs\)\. "
                                        r"Got 1 positional argument\. \(gufunc addv\)$"):
        addv(a)
    out = np.empty(4)
    with pytest.raises(ValueError, match="'out' as both positional and keyword"):
        addv(a, a, out, out=out)
    addv(a, a, out=out)
    np.testing.assert_array_equal(out, 2 * a)


def test_datetime_ufuncs_and_signatures_of_argument_types_only(device):
    from numba.np.numpy_support import from_dtype

    day, span = from_dtype(np.dtype("datetime64[D]")), from_dtype(np.dtype("timedelta64[D]"))

    @cuda.vectorize([(day, day)])   # argument types only: the result type is typing's
    def timediff(start, end):
        return end - start

    @cuda.vectorize([(day, span)])
    def later(d, by):
        return d + by

    @cuda.guvectorize([(day, day, span[:])], "(),()->()")
    def gtimediff(start, end, out):
        out[0] = end - start

    start = np.arange("2005-02", "2006-02", dtype="datetime64[D]")
    end = start + np.arange(start.size) * 7
    for f in (timediff, gtimediff):
        got = f(start, end)
        assert got.dtype == np.dtype("timedelta64[D]")
        np.testing.assert_array_equal(got, end - start)
    assert timediff.types == ["MM->m"]
    # scalars keep their unit: a datetime64 scalar is not turned into a datetime.date
    np.testing.assert_array_equal(later(start, np.timedelta64(3, "D")), start + 3)
    assert later(np.datetime64("2005-02-01"), np.timedelta64(3, "D")) == \
        np.datetime64("2005-02-04")

    from numba import types

    @cuda.vectorize([(types.float32, types.float32)])
    def sub(a, b):
        return a - b

    r = sub(np.float32(5), np.arange(3, dtype=np.float32))
    assert r.dtype == np.float32 and sub.types == ["ff->f"]
    np.testing.assert_array_equal(r, 5 - np.arange(3, dtype=np.float32))


def test_ufunc_reduce_folds_pairwise_and_leaves_its_input(device):
    @cuda.vectorize(["int32(int32, int32)", "float64(float64, float64)"])
    def add(a, b):
        return a + b

    @cuda.vectorize(["int64(int64, int64)"])
    def sub(a, b):
        return a - b

    for n in (1, 2, 3, 7, 64, 1001):
        x = np.arange(n, dtype=np.int32)
        r = add.reduce(x)
        assert r == x.sum() and r.dtype == np.int32
        d = cuda.to_device(x)
        assert add.reduce(d, stream=cuda.stream()) == x.sum()
        np.testing.assert_array_equal(d.copy_to_host(), x)  # not folded in place
    assert add.reduce(np.arange(5.0)) == 10.0
    # numba.cuda's order: element i with i + n/2 over the first n - 1, the odd one last
    assert sub.reduce(np.array([1, 2, 4, 8, 16])) == ((1 - 4) - (2 - 8)) - 16
    with pytest.raises(TypeError, match="Reduction on an empty array"):
        add.reduce(np.zeros(0, np.int32))
    with pytest.raises(ValueError, match="must be 1-d"):
        add.reduce(np.zeros((2, 2), np.int32))

    @cuda.vectorize(["float64(float64)"])
    def neg(a):
        return -a

    with pytest.raises(TypeError, match="two arguments"):
        neg.reduce(np.ones(3))


def test_gufunc_scalar_core_given_as_a_one_element_array():
    """The old style: a "()" input passed as a 1-element array, and an output given
    without the loop's axis of size 1, as numba.cuda fills it."""
    import warnings

    from numba_gpux.cuda import guvectorize

    @guvectorize(["void(int32[:], int32[:], int32[:])"], "(n),()->(n)", target="cuda")
    def plus_first(x, y, res):
        for i in range(x.shape[0]):
            res[i] = x[i] + y[0]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = np.zeros(4, np.int32)
        plus_first(np.arange(1, 5, dtype=np.int32), np.array([2], np.int32), out=res)
        np.testing.assert_array_equal(res, np.arange(3, 7))
        res2 = np.zeros((2, 4), np.int32)
        a = np.tile(np.arange(1, 5, dtype=np.int32), (2, 1))
        plus_first(a, np.array([2, 10], np.int32), res2)
        np.testing.assert_array_equal(res2, a + np.array([[2], [10]]))


def test_gufunc_device_array_of_another_dtype_is_numba_cudas_type_error():
    import warnings

    from numba_gpux import cuda
    from numba_gpux.cuda import guvectorize

    @guvectorize(["void(int32, int32[:], int32[:])"], "(),(t)->(t)", target="cuda")
    def scale(a, b, out):
        for i in range(b.size):
            out[i] = a * b[i]

    b = np.arange(10, dtype=np.int32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_array_equal(scale(np.int64(2), b), 2 * b)  # host: cast
        with pytest.raises(TypeError, match=r"does not support \.astype\(\)"):
            scale(cuda.to_device(np.array(np.int64(2))), b)


def test_numpy_keywords_are_ignored_as_numba_cuda_does(device, add):
    """NumPy's other ufunc keywords (``casting=``, ``where=``...) are numba.cuda's
    "unrecognized keywords": a warning, and the call computes as without them; a
    gufunc ignores them (``axis=``), as numba.cuda's does."""
    @cuda.guvectorize(["void(float32[:], float32[:])"], "(n)->(n)")
    def copy(x, out):
        for i in range(x.shape[0]):
            out[i] = x[i]

    a = np.arange(4, dtype=np.float32)
    with pytest.warns(UserWarning, match="unrecognized keywords: casting"):
        r = add(a, a, casting="same_kind")
    np.testing.assert_array_equal(r, 2 * a)
    np.testing.assert_array_equal(copy(a.reshape(2, 2), axis=-1), a.reshape(2, 2))
