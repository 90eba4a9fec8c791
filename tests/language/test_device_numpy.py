"""NumPy inside kernels against Numba's CPU ``@njit``: each cell runs one Python
function as a kernel (one work-item) and as ``@njit`` on the same inputs and
compares what both wrote.  Kernels make arrays through the device runtime
(numba_gpux/language/heap.py).

The functions write every value they make into output arrays: the elements of an
array result as rows of a float64 array, its itemsize (the dtype NumPy's or Numba's
promotion chose) next to them.  Several cells share a kernel where that keeps a
failure readable, since each compile costs seconds.

The operator matrix (+ - * / // % ** and the comparisons and bitwise operators,
array with broadcast array and array with scalar) makes one kernel per dtype pair;
each costs 20-50 s to compile here (Numba's typing and lowering of some 30 array
expressions, our pipeline, then the OpenCL driver's build of the kernel), so the
default run takes the pairs in :data:`QUICK_PAIRS` and ``GPUX_TEST_NUMPY_MATRIX=all``
takes all 81.
"""

import os

import numba
import numpy as np
import pytest
from numba import njit

import numba_gpux as gpux


def _arg(x):
    return gpux.to_device(x) if isinstance(x, np.ndarray) else x


def run_both(fn, inputs, outputs, reference=njit):
    """(what the kernel wrote, what ``reference(fn)`` wrote) into copies of *outputs*;
    each gets its own copy of *inputs* (functions may write to them)."""
    want = [o.copy() for o in outputs]
    with np.errstate(all="ignore"):
        reference(fn)(*[x.copy() if isinstance(x, np.ndarray) else x for x in inputs], *want)
    got = [gpux.to_device(o.copy()) for o in outputs]
    gpux.jit(fn)[1, 1](*[_arg(x) for x in inputs], *got)
    return [g.copy_to_host() for g in got], want


def check(fn, inputs, outputs, rtol=0.0):
    got, want = run_both(fn, inputs, outputs)
    for g, w in zip(got, want):
        if rtol:
            np.testing.assert_allclose(g, w, rtol=rtol, atol=0, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)


def rows(n=4, width=8):
    """A float64 output of *n* rows and an int64 array of sizes."""
    return [np.full((n, width), -7.0), np.full(8, -7, np.int64)]


# ------------------------------------------------------------------ 1. creation
def creation(a, out, size):
    e = np.empty((2, 3), np.int16)
    size[0] = e.itemsize
    size[1] = e.size
    size[2] = e.ndim
    el = np.empty_like(a)
    size[3] = el.itemsize
    size[4] = el.size
    z = np.zeros((2, 3), np.int32).ravel()
    o = np.ones(5)
    f = np.full(4, 2.5, np.float32)
    for i in range(z.size):
        out[0, i] = z[i]
    for i in range(o.size):
        out[1, i] = o[i]
    for i in range(f.size):
        out[2, i] = f[i]
    size[5] = z.itemsize * 100 + o.itemsize * 10 + f.itemsize


def ranges(a, out, size):
    x = np.arange(2, 11, 3)
    y = np.arange(0.5, 3.0, 0.5)
    s = np.linspace(0.0, 1.0, 7)
    r = np.arange(a.size)
    for i in range(x.size):
        out[0, i] = x[i]
    for i in range(y.size):
        out[1, i] = y[i]
    for i in range(s.size):
        out[2, i] = s[i]
    for i in range(r.size):
        out[3, i] = r[i]
    size[0] = x.size
    size[1] = y.size
    size[2] = x.itemsize


def likes_and_copies(a, out, size):
    z = np.zeros_like(a)
    o = np.ones_like(a)
    f = np.full_like(a, 7)
    c = np.copy(a)
    m = a.copy()
    a[0] = 99  # the copies keep what a held
    m[1] = 55  # and a keeps what it holds
    for i in range(a.size):
        out[0, i] = z[i]
        out[1, i] = o[i] + f[i] * 10
        out[2, i] = c[i]
        out[3, i] = m[i]
    size[0] = z.itemsize
    size[1] = f.itemsize
    size[2] = a[1]


@pytest.mark.parametrize("cell", [creation, ranges, likes_and_copies])
def test_creation(device, cell):
    check(cell, [np.arange(1, 7, dtype=np.int8)], rows())


def two_d(out):
    z = np.zeros((2, 3))  # a 2-D allocation multiplies its shape with overflow checks
    z[1, 2] = 5.0
    o = np.ones((3, 2), np.int64)
    out[0] = z.sum()
    out[1] = o.sum()


def test_a_two_dimensional_array_loads_on_opencl(opencl_device):
    """Numba checks an array's size with llvm.smul.with.overflow, which LLVM's SPIR-V
    back end writes as OpSMulExtended: the Intel CPU driver fails to link that, so the
    OpenCL target writes the check out as plain integer operations."""
    art = gpux.compile(two_d, "void(float64[::1])")
    assert "SMulExtended" not in art.text and "UMulExtended" not in art.text
    check(two_d, [], [np.zeros(2)])


# ------------------------------------------------------------------ 2. operators
DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint32", "float16", "float32",
          "float64")
OPS = ("+", "-", "*", "/", "//", "%", "**", "<", "<=", "==", "!=", ">", ">=", "&", "|", "^")
#: float results of these may differ in their last bits (division and pow are
#: computed by the device's built-ins); every other result compares exactly
INEXACT = ("/", "**")
#: the pairs of the default run (each costs 10-40 s here, most of it the OpenCL CPU
#: driver building the kernel): an int8 + int8 that wraps around, signed with unsigned
#: promoted to a wider type, integer with float, float16 with an integer that NumPy
#: promotes to float64; ``GPUX_TEST_NUMPY_MATRIX=all`` runs every pair
QUICK_PAIRS = (("int8", "int8"), ("int32", "uint32"), ("uint8", "float64"),
               ("float16", "int64"))
ALL_PAIRS = tuple((x, y) for x in DTYPES for y in DTYPES)


def _ops_for(dt1: str, dt2: str):
    floats = "float" in dt1 or "float" in dt2
    return tuple(op for op in OPS if not (floats and op in "&|^"))  # NumPy rejects them


def operator_kernel(dt1: str, dt2: str):
    """One function doing every operator on (a (2, 4) array, a (4,) array) and on
    (the array, a scalar): row r of out holds result r's elements, size[r] its itemsize."""
    ops = _ops_for(dt1, dt2)
    lines = [f"def ops_{dt1}_{dt2}(a, b, s, out, size):"]
    r = 0
    for rhs in ("b", "s"):
        for op in ops:
            lines += [f"    x = a {op} {rhs}", f"    size[{r}] = x.itemsize",
                      "    y = x.ravel()", "    for i in range(y.size):",
                      f"        out[{r}, i] = y[i]"]
            r += 1
    ns = {"np": np}
    exec(compile("\n".join(lines), f"<operators {dt1} {dt2}>", "exec"), ns)
    return ns[f"ops_{dt1}_{dt2}"], ops


def operands(dt1: str, dt2: str):
    """Values every dtype holds (0..127), no zero divisor, exponents that stay small,
    with sums and products past int8's range (100 + 127, 120 * 127) to show
    wrap-around and promotion."""
    a = np.array([[1, 2, 3, 100], [7, 120, 5, 9]], dt1)
    b = np.array([3, 127, 2, 4], dt2)
    return a, b, np.dtype(dt2).type(3)


def _pairs():
    every = os.environ.get("GPUX_TEST_NUMPY_MATRIX") == "all"
    return [pytest.param(p, id=f"{p[0]}-{p[1]}") for p in (ALL_PAIRS if every else QUICK_PAIRS)]


@pytest.mark.parametrize("pair", _pairs())
def test_operators_broadcasting_and_promotion(device, pair):
    dt1, dt2 = pair
    if "float16" in pair and not device.target.has("fp16"):
        pytest.skip(f"{device.spec} lacks the device feature 'fp16'")
    fn, ops = operator_kernel(dt1, dt2)
    a, b, s = operands(dt1, dt2)
    n = 2 * len(ops)
    # Numba's CPU target has no float16 (no data model for it): there the reference is
    # the function run by NumPy itself, whose loops and promotion the kernel language
    # follows for float16 operands (numba_gpux/language/half_ufuncs.py)
    reference = (lambda f: f) if "float16" in pair else njit
    (got, got_size), (want, want_size) = run_both(
        fn, [a, b, s], [np.full((n, 8), -7.0), np.zeros(n, np.int64)], reference)
    for r in range(n):
        op, rhs = ops[r % len(ops)], ("array", "scalar")[r // len(ops)]
        what = f"{dt1} array {op} {dt2} {rhs}"
        assert got_size[r] == want_size[r], f"{what}: itemsize {got_size[r]}, njit's {want_size[r]}"
        if op in INEXACT:
            rtol = {2: 1e-3, 4: 1e-6}.get(int(want_size[r]), 1e-14)
            np.testing.assert_allclose(got[r], want[r], rtol=rtol, atol=0, err_msg=what)
        else:
            np.testing.assert_array_equal(got[r], want[r], err_msg=what)


# ------------------------------------------------------------------ 3. ufuncs
@njit
def put(out, r, x):
    """The elements of *x* into row *r* of *out* (a @numba.njit function: kernels call
    it as a device function)."""
    y = x.ravel()
    for i in range(y.size):
        out[r, i] = y[i]


def ufuncs(a, out, size):
    b = a[::-1]
    put(out, 0, np.sqrt(a))
    put(out, 1, np.exp(a))
    put(out, 2, np.log(a))
    put(out, 3, np.sin(a))
    put(out, 4, np.cos(a))
    put(out, 5, np.abs(b - a))
    put(out, 6, np.minimum(a, b))
    put(out, 7, np.maximum(a, b))


def where(a, out, size):
    b = a[::-1]
    w = np.where(a > 3, a, b * 10)
    for i in range(w.size):
        out[0, i] = w[i]
    w2 = np.where(a.reshape((2, 3)) > 2, a[:3], -1.0).ravel()  # broadcast, a scalar
    for i in range(w2.size):
        out[1, i] = w2[i]


def test_ufuncs_on_arrays(device):
    check(ufuncs, [np.arange(1, 7, dtype=np.float64)], [np.zeros((8, 6)), np.zeros(1)],
          rtol=1e-14)
    check(ufuncs, [np.arange(1, 7, dtype=np.float32)], [np.zeros((8, 6)), np.zeros(1)],
          rtol=1e-6)


#: float16 arrays in NumPy's ufuncs (numba_gpux/language/half_ufuncs.py): each row an
#: expression on ``a`` (float16, 1..6) and ``b`` (``a`` reversed)
HALF_UFUNCS = ("np.sqrt(a)", "np.exp(a)", "np.log(a)", "np.sin(a)", "np.cos(a)",
               "np.abs(b - a)", "np.minimum(a, b)", "np.maximum(a, b)",
               "np.sqrt(a) * 2 + a", "-a", "a / 7", "np.sqrt(a * a.astype(np.int8))",
               "a + np.float16(0.1)")
#: np.where in a kernel of its own: with the rows above in one kernel (float32 as much
#: as float16) LLVM's SPIR-V back end meets llvm.stackrestore and aborts the process
HALF_WHERE = ("np.where(a > 3, a, b * 10)", "np.where(a > 2, a, np.float16(-1))")


def half_ufunc_kernel(exprs=HALF_UFUNCS, scalars=True):
    lines = ["def half_ufuncs(a, out, size):", "    b = a[::-1]"]
    for r, e in enumerate(exprs):
        lines += [f"    x = {e}", f"    size[{r}] = x.itemsize",
                  "    for i in range(x.size):", f"        out[{r}, i] = x[i]"]
    r = len(exprs)  # ufuncs of float16 scalars are float16 scalars; in-place operators
    if scalars:
        lines += [f"    out[{r}, 0] = np.sqrt(a[1])", f"    out[{r}, 1] = np.exp(a[2]) - a[0]",
                  "    c = a.copy()", "    c += np.float16(0.1)", "    c *= b",
                  "    c -= b.astype(np.int64)", f"    out[{r}, 2] = c[0]",
                  f"    out[{r}, 3] = c[5]", "    o = np.zeros(6, np.float32)",
                  "    np.divide(a, 7, o)",  # rounded to float16, then float32
                  f"    out[{r}, 4] = o[1]", f"    out[{r}, 5] = o[4]"]
    ns = {"np": np}
    exec(compile("\n".join(lines), "<float16 ufuncs>", "exec"), ns)
    return ns["half_ufuncs"]


@pytest.mark.parametrize("exprs", [HALF_UFUNCS, HALF_WHERE], ids=["ufuncs", "where"])
def test_ufuncs_on_float16_arrays(device, exprs):
    """NumPy's loops and promotion on float16: each result float16 (float16 with int8
    too, and with an integer literal), computed in float32 and rounded to float16 as
    NumPy's float16 loops do, so equal to NumPy's result."""
    if not device.target.has("fp16"):
        pytest.skip(f"{device.spec} lacks the device feature 'fp16'")
    n = len(exprs) + 1
    # Numba's CPU target has no float16: the reference is NumPy
    (got, got_size), (want, want_size) = run_both(
        half_ufunc_kernel(exprs, exprs is HALF_UFUNCS), [np.arange(1, 7, dtype=np.float16)],
        [np.full((n, 6), -7.0), np.zeros(n, np.int64)], reference=lambda f: f)
    np.testing.assert_array_equal(want_size[:n - 1], 2)
    np.testing.assert_array_equal(got_size, want_size)
    for r, e in enumerate(exprs + ("float16 scalars, in-place operators, an explicit "
                                   "float32 output",)):
        exact = not any(f in e for f in ("exp", "log", "sin", "cos"))
        # the device's float32 exp/log/sin/cos may differ from the C library's by an
        # ulp of float32, which may move the float16 result by one ulp of float16
        np.testing.assert_allclose(got[r], want[r], rtol=0 if exact else 2 ** -10,
                                   err_msg=e)


def test_njit_is_unchanged_after_a_float16_kernel(opencl_device):
    """The float16 loops are the kernel language's: Numba's CPU typing keeps its own
    choices in the same process after a kernel used them."""
    def k(a, out):
        x = np.sqrt(a) + a * 2
        for i in range(x.size):
            out[i] = x[i]

    a = np.arange(1, 4, dtype=np.float16)
    out = gpux.to_device(np.zeros(3, np.float16))
    gpux.jit(k)[1, 1](gpux.to_device(a), out)
    np.testing.assert_array_equal(out.copy_to_host(), np.sqrt(a) + a * 2)

    @njit
    def cpu(a, b):
        return np.sqrt(a), a + b, a * 2

    r, s, t = cpu(np.arange(1, 4, dtype=np.int8), np.arange(3, dtype=np.float32))
    # Numba's loop choices (NumPy's would be float16, float32, int8)
    assert (r.dtype, s.dtype, t.dtype) == (np.float32, np.float32, np.int64)
    with pytest.raises(NotImplementedError):  # no float16 on Numba's CPU target
        njit(lambda x: np.sqrt(x))(np.ones(2, np.float16))


def test_float16_arrays_need_the_fp16_feature():
    """Compiled for a device without float16, a float16 array operation is the
    validation error naming the feature and the line, not a result."""
    import dataclasses

    from numba_gpux.devices import resolve_target

    def k(a, out):
        x = np.sqrt(a)
        for i in range(x.size):
            out[i] = x[i]

    base = resolve_target("opencl")
    t = dataclasses.replace(base, features=base.features - {"fp16"},
                            type_features=(("half", "fp16", "float16 (half precision)"),))
    with pytest.raises(gpux.ValidationError, match="lacks the feature 'fp16'"):
        gpux.compile(k, "void(float16[::1], float16[::1])", target=t)
    t16 = dataclasses.replace(t, features=base.features | {"fp16"})
    assert gpux.compile(k, "void(float16[::1], float16[::1])", target=t16).text


def test_float16_array_operations_assemble_as_ptx(ptxas):
    from numba_gpux.targets.cuda import toolkit

    fn, _ = operator_kernel("float16", "int64")
    art = gpux.compile(fn, "void(float16[:, ::1], int64[::1], int64, float64[:, ::1], "
                       "int64[::1])", target="cuda", cubin=False)
    ok, messages = toolkit.ptxas_check(art.text, (8, 0))
    assert ok, messages
    art = gpux.compile(half_ufunc_kernel(), "void(float16[::1], float64[:, ::1], int64[::1])",
                       target="cuda", cubin=False)
    ok, messages = toolkit.ptxas_check(art.text, (8, 0))
    assert ok, messages


@njit
def same(x):
    """Its argument array: a function that makes no array, returning one it was given."""
    return x


def returned_argument(a, out, size):
    c = a > 3
    d = same(c)  # c dies here: only d refers to its memory
    y = -a  # the next allocation
    for i in range(6):
        out[0, i] = d[i] + y[i] * 10


def broadcast_view(a, out, size):
    c = a > 3
    d = np.broadcast_to(c, (2, 6))  # through np.asarray(c), which returns c
    y = -a
    for i in range(6):
        out[0, i] = d[1, i] + y[i] * 10


@pytest.mark.parametrize("cell", [returned_argument, broadcast_view])
def test_an_array_returned_by_a_function_stays_alive(device, cell):
    """A function returning an array it was given takes a reference for its caller."""
    check(cell, [np.arange(1, 7, dtype=np.float64)], rows())


def test_where(device):
    check(where, [np.arange(1, 7, dtype=np.float64)], rows())


# ------------------------------------------------------------------ 4. reductions
def whole_reductions(a, out, size):
    out[0, 0] = a.sum()
    out[0, 1] = a.prod()
    out[0, 2] = a.mean()
    out[0, 3] = a.min()
    out[0, 4] = a.max()
    out[0, 5] = a.argmin()
    out[0, 6] = a.argmax()
    out[0, 7] = np.any(a > 5)
    out[1, 0] = np.all(a > 0)
    out[1, 1] = np.sum(a)
    out[1, 2] = np.prod(a)
    out[1, 3] = np.mean(a)
    out[1, 4] = np.min(a)
    out[1, 5] = np.max(a)
    out[1, 6] = np.argmin(a)
    out[1, 7] = np.argmax(a)
    c = np.cumsum(a)
    d = a.cumsum()
    for i in range(c.size):
        out[2, i] = c[i]
        out[3, i] = d[i]
    m = a.reshape((2, 3))  # whole-array forms of a 2-D array
    size[0] = m.sum() * 1000 + m.argmax() * 10 + m.argmin()
    size[1] = np.all(m > 1) * 10 + (m > 5).any()


def sum_axis(a, out, size):
    m = a.reshape((2, 3))
    s0 = m.sum(axis=0)
    s1 = np.sum(m, axis=1)
    for i in range(s0.size):
        out[0, i] = s0[i]
    for i in range(s1.size):
        out[1, i] = s1[i]


def cumsum_axis(a, out, size):
    m = a.reshape((2, 3))
    put(out, 0, np.cumsum(m, axis=0))
    put(out, 1, np.cumsum(m, axis=1))
    put(out, 2, np.cumsum(m, axis=-1))


def cumsum_axis_method(a, out, size):
    put(out, 0, a.reshape((2, 3)).cumsum(axis=1))


def arg_axis(a, out, size):
    m = a.reshape((2, 3))
    put(out, 0, np.argmin(m, axis=0))
    put(out, 1, np.argmax(m, axis=1))
    put(out, 2, np.argmax(m, axis=-2))


def arg_axis_method(a, out, size):
    m = a.reshape((2, 3))
    put(out, 0, m.argmin(axis=0))
    put(out, 1, m.argmax(axis=1))


def transposes(a, out, size):
    m = a.reshape((1, 2, 3))
    put(out, 0, m.transpose((2, 0, 1)))  # a view: put copies it in C order
    put(out, 1, m.transpose(1, 2, 0))
    put(out, 2, np.transpose(m, (0, 2, 1)))
    size[0] = m.transpose((2, 0, -2)).shape[0]


#: values with repeats and a minimum and maximum inside (argmin/argmax take the first)
REDUCE_IN = np.array([4.0, 1.0, 6.0, 1.0, 6.0, 2.5])


def test_whole_array_reductions(device):
    check(whole_reductions, [REDUCE_IN], rows(), rtol=1e-15)
    check(whole_reductions, [np.array([3, 1, 4, 1, 5, 2], np.int32)], rows())


@pytest.mark.parametrize("cell", [sum_axis, cumsum_axis, arg_axis, transposes,
                                  cumsum_axis_method, arg_axis_method])
def test_reductions_along_an_axis(device, cell):
    check(cell, [REDUCE_IN], rows())


NJIT_REJECTS = ("prod", "mean", "min", "max", "any", "all")


@pytest.mark.parametrize("name", NJIT_REJECTS)
def test_axis_forms_njit_rejects_are_rejected(device, name):
    """prod, mean, min, max, any and all take no axis= in Numba's CPU target either:
    a kernel using one is a typing error, as with @njit (not a crash, not a result)."""
    arg = "m > 2" if name in ("any", "all") else "m"
    ns = {"np": np}
    exec(f"def f(m, out):\n    r = np.{name}({arg}, axis=0)\n    out[0] = r[0]\n", ns)
    m = np.arange(6.0).reshape(2, 3)
    with pytest.raises(numba.core.errors.TypingError):
        njit(ns["f"])(m, np.zeros(3))
    with pytest.raises(numba.core.errors.TypingError):
        gpux.jit(ns["f"])[1, 1](gpux.to_device(m), gpux.to_device(np.zeros(3)))


# ------------------------------------------------------------------ 5. methods
def sorting(a, out, size):
    b = a[::-1].copy()
    b.sort()
    s = np.sort(a[::-1])
    i1 = a[::-1].argsort()
    i2 = np.argsort(a)
    for i in range(a.size):
        out[0, i] = b[i]
        out[1, i] = s[i]
        out[2, i] = i1[i]
        out[3, i] = i2[i]
    size[0] = np.median(a[::-1]) * 100
    size[1] = np.median(a[:5]) * 100


def shapes(a, out, size):
    m = a.reshape((2, 3))
    t = m.T.ravel()  # a copy in C order: the transpose is not C-contiguous
    for i in range(t.size):
        out[0, i] = t[i]
    tt = m.transpose()
    out[1, 0] = tt[2, 1]
    size[0] = tt.shape[0] * 10 + tt.shape[1]
    r = np.ravel(m)
    for i in range(r.size):
        out[2, i] = r[i]
    f = m.astype(np.float32)
    size[1] = f.itemsize
    f.fill(2.5)
    out[1, 1] = f[1, 2]
    out[1, 2] = m[1, 2]  # astype copied: m keeps its values
    g = a.astype(np.int16)
    for i in range(g.size):
        out[3, i] = g[i]
    size[2] = g.itemsize


def test_sort_argsort_median(device):
    check(sorting, [np.array([3.5, -1.0, 7.0, 3.5, 0.25, 2.0])], rows())


def test_reshape_ravel_transpose_astype_fill(device):
    check(shapes, [np.array([1.5, 2.0, 3.25, 4.0, 5.0, 6.75])], rows())


# ------------------------------------------------------------------ 6. indexing
def fancy(a, idx, out, size):
    x = a[idx]
    x[0] = 100  # a copy: a keeps its values
    for i in range(x.size):
        out[0, i] = x[i]
    m = a > 3
    y = a[m]
    y[0] = 200
    for i in range(y.size):
        out[1, i] = y[i]
    size[0] = x.size
    size[1] = y.size
    out[2, 0] = a[idx[0]]
    out[2, 1] = a[4]


def fancy_2d(a, idx, out, size):
    m = a.reshape((2, 3))
    rowsel = m[idx % 2]  # rows picked by an index array
    r = rowsel.ravel()
    for i in range(r.size):
        out[0, i] = r[i]
    size[0] = rowsel.shape[0]
    size[1] = rowsel.shape[1]
    sel = m[m[:, 0] > 2.0]  # the rows a mask picks
    sel[0, 0] = 100.0
    put(out, 1, sel)
    size[2] = sel.shape[0]
    out[1, 11] = m[1, 0]


def test_fancy_and_boolean_indexing_copy(device):
    a = np.array([1.0, 5.0, 2.0, 7.0, 4.0, 0.5])
    idx = np.array([4, 0, 2, 4], np.int64)
    check(fancy, [a, idx], rows())
    check(fancy_2d, [a, idx], [np.full((2, 12), -7.0), np.zeros(3, np.int64)])


class _WithoutResolve:
    """A ufunc seen as NumPy before 1.24 sees it: its loops, no ``resolve_dtypes``."""

    def __init__(self, ufunc):
        self.types, self.nin, self.nout, self.__name__ = (ufunc.types, ufunc.nin, ufunc.nout,
                                                         ufunc.__name__)


@pytest.mark.quick
def test_float16_loops_are_numpys_without_resolve_dtypes():
    """The loop a float16 ufunc call takes is the one NumPy computes with on arrays of
    those dtypes, with NumPy's own resolve_dtypes (1.24 and newer) and with the search
    used before it (every NumPy the project supports runs this test)."""
    from numba_gpux.language.half_ufuncs import _numpy_loop

    dts = [np.float16, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32,
           np.float32, np.float64, np.bool_]
    for uf in (np.add, np.multiply, np.true_divide, np.maximum, np.less, np.power):
        for other in dts:
            ops = (np.ones(2, np.float16), np.ones(2, other))
            want = uf(*ops).dtype
            for u in ((uf, _WithoutResolve(uf)) if hasattr(uf, "resolve_dtypes")
                      else (_WithoutResolve(uf),)):
                got = _numpy_loop(u, [np.dtype(np.float16), np.dtype(other)], [True, True])
                assert got[-1] == want, (uf.__name__, other, got)
    for uf in (np.sqrt, np.exp, np.negative):
        got = _numpy_loop(_WithoutResolve(uf), [np.dtype(np.float16)], [True])
        assert got[-1] == uf(np.ones(2, np.float16)).dtype
    # a scalar beside arrays counts by its kind (before NumPy 1.24): float16 + int64 scalar
    assert _numpy_loop(_WithoutResolve(np.add), [np.dtype(np.float16), np.dtype(np.int64)],
                       [True, False])[-1] == np.float16


def test_searchsorted_sides_and_digitize_right(device):
    """Numba chooses searchsorted's code by its literal ``side``: both sides in one kernel,
    and np.digitize(right=True), which calls both, as njit and NumPy."""
    def sides(s, x, out):
        for i in range(x.size):
            out[0, i] = np.searchsorted(s, x[i], side="left")
            out[1, i] = np.searchsorted(s, x[i], side="right")
        r = np.digitize(x, s, right=True)
        lo = np.digitize(x, s)
        for i in range(x.size):
            out[2, i] = r[i]
            out[3, i] = lo[i]

    s = np.array([-2.0, 0.0, 0.0, 2.5, 5.0])
    x = np.array([-3.0, 0.0, 2.5, 3.0, 5.0, 6.0])
    want = np.array([np.searchsorted(s, x, "left"), np.searchsorted(s, x, "right"),
                     np.digitize(x, s, right=True), np.digitize(x, s)])
    ref = np.zeros((4, x.size), np.int64)
    njit(sides)(s, x, ref)
    np.testing.assert_array_equal(ref, want)
    out = gpux.to_device(np.zeros((4, x.size), np.int64))
    gpux.jit(sides)[1, 1](gpux.to_device(s), gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), want)


def _unique_partition(a, m, out, n):
    u = np.unique(a)
    n[0] = u.size
    for i in range(u.size):
        out[0, i] = u[i]
    p = np.partition(a, 2)
    q = np.argpartition(a, 3)
    for i in range(a.size):
        out[1, i] = p[i]
        out[2, i] = q[i]
    np.fill_diagonal(m, 5.0)
    w = np.unique(m)   # 2-D: flattened
    n[1] = w.size
    n[2] = np.unique(a[:0]).size


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_unique_partition_and_fill_diagonal_as_njit(device, dtype):
    """Numba's np.unique builds Python lists, and np.partition/argpartition call it;
    np.fill_diagonal reads a scalar as a 1-element array of a dtype read from NumPy."""
    a = np.array([3, 1, 7, 2, 1, 7, 0, 3, -4], dtype)
    if dtype == np.float64:
        a[[2, 5]] = np.nan
    m = np.arange(12.0).reshape(3, 4) % 5
    want = [np.zeros((3, a.size)), np.zeros(3, np.int64), m.copy()]
    njit(_unique_partition)(a, want[2], want[0], want[1])
    assert want[1][0] == np.unique(a).size and want[1][2] == 0
    got = [gpux.to_device(np.zeros((3, a.size))), gpux.to_device(np.zeros(3, np.int64)),
           gpux.to_device(m.copy())]
    gpux.jit(_unique_partition)[1, 1](gpux.to_device(a), got[2], got[0], got[1])
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.copy_to_host(), w)


def _correlations(a, v, out):
    rows = (np.convolve(a, v), np.convolve(a, v, "same"), np.convolve(v, a, "valid"),
            np.correlate(a, v, "full"), np.correlate(v, a), np.correlate(a, v, "same"))
    for r in range(len(rows)):
        x = rows[r]
        for i in range(x.size):
            out[r, i] = x[i]


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64])
def test_convolve_and_correlate_sum_without_blas(device, dtype, monkeypatch):
    """Numba's np.convolve/np.correlate call BLAS's dot for floats where SciPy is
    installed (here as if it were): kernels sum the products themselves, as NumPy."""
    from numba.np import arraymath

    if dtype == np.complex128 and not device.target.has("fp64"):
        pytest.skip("no float64 on this device")
    monkeypatch.setattr(arraymath, "_HAVE_BLAS", True)
    a = (np.arange(7) * 1.5 - 3).astype(dtype)
    v = np.array([2, -1, 3]).astype(dtype)
    if dtype == np.complex128:
        a = a + 1j * np.arange(7)
        v = v - 0.5j
    want = np.zeros((6, 9), dtype)
    for r, x in enumerate((np.convolve(a, v), np.convolve(a, v, "same"),
                           np.convolve(v, a, "valid"), np.correlate(a, v, "full"),
                           np.correlate(v, a), np.correlate(a, v, "same"))):
        want[r, :x.size] = x
    out = gpux.to_device(np.zeros((6, 9), dtype))
    gpux.jit(_correlations)[1, 1](gpux.to_device(a), gpux.to_device(v), out)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=tol, atol=tol)


def _crosses(a, b, c, d, out):
    x = np.cross(a, b)
    y = np.cross(c, d)
    for i in range(3):
        out[0, i] = x[i]
    for r in range(y.shape[0]):
        for i in range(3):
            out[1 + r, i] = y[r, i]


def test_cross_products_as_numpy(device):
    """Numba's np.cross words an error with an f-string, typed with the rest."""
    a, b = np.array([1.0, 2.0, 3.0]), np.array([-1.0, 0.5, 2.0])
    c, d = np.arange(6.0).reshape(2, 3), np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 2.0]])
    want = np.zeros((3, 3))
    want[0], want[1:] = np.cross(a, b), np.cross(c, d)
    out = gpux.to_device(np.zeros((3, 3)))
    gpux.jit(_crosses)[1, 1](*(gpux.to_device(v) for v in (a, b, c, d)), out)
    np.testing.assert_array_equal(out.copy_to_host(), want)


def _set_functions(a, b, out, n):
    rows = (np.union1d(a, b), np.setdiff1d(a, b))
    for r in range(len(rows)):
        x = rows[r]
        n[r] = x.size
        for i in range(x.size):
            out[r, i] = x[i]


def test_set_functions_through_unique(device):
    """Numba's set functions call np.unique, which kernels have without Python lists
    (intersect1d, setxor1d and isin too: checked by hand, left out here for time)."""
    a, b = np.array([3.0, 1.0, 2.0, 1.0, 7.0]), np.array([2.0, 5.0, 1.0, 9.0])
    rows = (np.union1d(a, b), np.setdiff1d(a, b))
    out = gpux.to_device(np.zeros((2, 9)))
    n = gpux.to_device(np.zeros(2, np.int64))
    gpux.jit(_set_functions)[1, 1](gpux.to_device(a), gpux.to_device(b), out, n)
    got, sizes = out.copy_to_host(), n.copy_to_host()
    for r, want in enumerate(rows):
        np.testing.assert_array_equal(got[r, :sizes[r]], want)


def _clips(a, lo, hi, out):
    r = np.clip(a, lo, hi)
    q = np.clip(a, 0.5, hi)
    w = a.clip(lo, 2.0)
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            out[0, i, j] = r[i, j]
            out[1, i, j] = q[i, j]
            out[2, i, j] = w[i, j]


def test_clip_with_array_bounds_broadcasts_as_numpy(device):
    """Numba's np.clip broadcasts array bounds through np.broadcast_arrays (a list)."""
    a = np.array([[0.0, 1.0, 2.5, np.nan], [3.0, -1.0, 1.5, 0.7]])
    lo, hi = np.array([0.2, 0.5, 1.0, 0.0]), np.array([[1.0], [2.0]])
    want = np.stack([np.clip(a, lo, hi), np.clip(a, 0.5, hi), a.clip(lo, 2.0)])
    out = gpux.to_device(np.zeros((3, 2, 4)))
    gpux.jit(_clips)[1, 1](gpux.to_device(a), gpux.to_device(lo), gpux.to_device(hi), out)
    np.testing.assert_array_equal(out.copy_to_host(), want)


def _allcloses(a, b, out):
    out[0] = np.allclose(a, b)
    out[1] = np.allclose(a, b, equal_nan=True)
    out[2] = np.allclose(a, b, 1e-3, 0.0)


@pytest.mark.parametrize("a, b", [
    ([1.0, 2.0, np.nan], [1.0, 2.0 + 1e-9, np.nan]), ([1.0, np.inf, 3.0], [1.0, np.inf, 3.0001]),
    ([[1.0, 2.0], [3.0, 4.0]], [1.0, 2.0]), ([[1.0, 2.0], [1.0, 2.0]], [1.0, 2.0 + 1e-7])])
def test_allclose_of_arrays_as_numpy(device, a, b):
    """Numba's np.allclose broadcasts two arrays through np.broadcast_arrays (a list)."""
    a, b = np.array(a), np.array(b)
    want = [np.allclose(a, b), np.allclose(a, b, equal_nan=True), np.allclose(a, b, 1e-3, 0.0)]
    out = gpux.to_device(np.zeros(3, np.int64))
    gpux.jit(_allcloses)[1, 1](gpux.to_device(a), gpux.to_device(b), out)
    np.testing.assert_array_equal(out.copy_to_host(), want)
