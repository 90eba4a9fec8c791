"""What kernels written for numba-cuda-mlir contain, run through ``numba_gpux.cuda`` (and
its numba-cuda-mlir dialect module) on every device: arithmetic on vector types,
``*args``, ``cuda.experimental``'s compile-time evaluation, two-argument complex
constructors, shared arrays declared after control flow, a captured dtype's
attributes, ``ravel()`` of a captured array, and debug kernels' messages.  Each result
is compared with NumPy or plain Python on the same inputs."""

import os

import numpy as np
import pytest
from numba import complex64, complex128
from numba.core.errors import TypingError

import numba_gpux as gpux
from numba_gpux import cuda
from numba_gpux.cuda import mlir_dialect
from numba_gpux.errors import UnsupportedError


# ---------------------------------------------------------------- vector arithmetic
def test_vector_arithmetic_matches_numpy(device):
    @cuda.jit
    def k(out, a, b, s):
        v = cuda.float32x4(a[0], a[1], a[2], a[3])
        w = cuda.float32x4(b[0], b[1], b[2], b[3])
        results = (v + w, v - w, v * w, v / w, v * s, s * v, v - s, s - v, v / s, s / v, -v,
                   abs(w))
        j = 0
        for r in results:
            out[j], out[j + 1], out[j + 2], out[j + 3] = r.x, r.y, r.z, r.w
            j += 4

    a = np.array([1.5, -2.0, 3.25, 8.0], np.float32)
    b = np.array([0.5, 4.0, -1.25, 3.0], np.float32)
    s = np.float32(2.5)
    out = np.zeros(48, np.float32)
    k[1, 1](out, a, b, s)
    want = np.concatenate([a + b, a - b, a * b, a / b, a * s, s * a, a - s, s - a, a / s,
                           s / a, -a, np.abs(b)])
    np.testing.assert_allclose(out, want, rtol=1e-6)


def test_vector_in_place_integer_and_result_types(device):
    @cuda.jit
    def k(out, fout, a):
        v = cuda.int32x3(a[0], a[1], a[2])
        w = cuda.int32x3(3, -4, 5)
        v += w          # in place
        q = v // w      # Python's floor division, element by element
        m = v % w
        h = v / 2       # integers divided: floats
        out[0], out[1], out[2] = v.x, v.y, v.z
        out[3], out[4], out[5] = q.x, q.y, q.z
        out[6], out[7], out[8] = m.x, m.y, m.z
        fout[0], fout[1], fout[2] = h.x, h.y, h.z

    a = np.array([7, 9, -13], np.int32)
    w = np.array([3, -4, 5], np.int32)
    out = np.zeros(9, np.int64)
    fout = np.zeros(3, np.float64)
    k[1, 1](out, fout, a)
    v = a + w
    np.testing.assert_array_equal(out, np.concatenate([v, v // w, v % w]))
    np.testing.assert_allclose(fout, v / 2)


def test_vector_arithmetic_types():
    from numba.core import types
    from numba_gpux.cuda.vector_types import vector_types as vt

    @cuda.jit(device=True)
    def ops(v, w, s):
        return v + w, v * s, s / v, -v

    # float32 vectors with a float32 scalar stay float32; with float64, float64
    got = {}
    for sty in (types.float32, types.float64):
        res = ops.compile_neutral_sig((vt["float32x2"], vt["float32x2"], sty))
        got[sty] = res.return_type
    assert got[types.float32] == types.Tuple([vt["float32x2"]] * 4)
    assert got[types.float64] == types.Tuple([vt["float32x2"], vt["float64x2"],
                                              vt["float64x2"], vt["float32x2"]])


def test_vector_length_mismatch_is_a_typing_error(device):
    @cuda.jit
    def k(out):
        v = cuda.float32x2(1, 2) + cuda.float32x3(1, 2, 3)
        out[0] = v.x

    with pytest.raises(TypingError, match="float32x2"):
        k[1, 1](np.zeros(1, np.float32))


# ---------------------------------------------------------------- *args
@cuda.jit(device=True)
def _total(*xs):
    t = 0.0
    for x in xs:
        t += x
    return t


def test_kernel_and_device_function_star_args(device):
    @cuda.jit
    def k(out, scale, *args):
        out[0] = scale * _total(*args)
        out[1] = len(args)
        out[2] = _total(args[0], 1.5)

    out = np.zeros(3)
    k[1, 1](out, 2.0, 1.0, 2.0, 4.0)
    np.testing.assert_array_equal(out, [2.0 * 7.0, 3, 2.5])
    k[1, 1](out, 3.0, 5.0)
    np.testing.assert_array_equal(out, [15.0, 1, 6.5])


def test_star_args_with_arrays_and_keywords(device):
    @cuda.jit
    def k(n, *arrays):
        i = cuda.grid(1)
        if i < n:
            arrays[2][i] = arrays[0][i] * arrays[1][i]

    a, b = np.arange(8.0), np.arange(8.0) + 1
    out = cuda.to_device(np.zeros(8))
    k[1, 8](8, a, b, out)
    np.testing.assert_array_equal(out.copy_to_host(), a * b)
    for dialect in (cuda, mlir_dialect):
        @dialect.jit
        def none(out, *args):
            out[0] = len(args)

        res = np.full(1, 7.0)
        none[1, 1](res)
        assert res[0] == 0


def test_star_args_eager_signature_takes_the_tuple(device):
    def k(out, *args):
        out[0] = len(args)
        for a in args:
            out[1] += a

    kernel = cuda.jit("void(float64[:], UniTuple(float64, 2))")(k)
    for args in ((1.0, 2.5), (1, 2)):  # integers convert to the signature's floats
        out = np.zeros(2)
        kernel[1, 1](out, *args)
        np.testing.assert_array_equal(out, [2, sum(args)])


# ---------------------------------------------------------------- complex(re, im)
def test_two_argument_complex_constructors(device):
    @cuda.jit
    def k(out, a):
        i = cuda.grid(1)
        if i < a.size - 1:
            out[0, i] = complex64(a[i], a[i + 1])
            out[1, i] = complex128(a[i + 1], a[i])
            out[2, i] = cuda.types.complex64(i, 2)       # ints convert
            out[3, i] = complex128(a[i])                  # the one-argument form stays

    a = np.array([0.5, -1.25, 3.0, 7.5])
    out = np.zeros((4, 3), np.complex128)
    k[1, 4](out, a)
    re, im = a[:-1], a[1:]
    np.testing.assert_allclose(out[0], (re + 1j * im).astype(np.complex64))
    np.testing.assert_allclose(out[1], im + 1j * re)
    np.testing.assert_allclose(out[2], np.arange(3) + 2j)
    np.testing.assert_allclose(out[3], re + 0j)


# ---------------------------------------------------------------- shared arrays
def test_dynamic_shared_array_after_control_flow(device):
    @cuda.jit
    def k(inp, out):
        if cuda.threadIdx.x != 0:
            return
        buf = cuda.shared.array(0, dtype=np.float32)
        for i in range(inp.size):
            buf[i] = inp[i]
        for i in range(inp.size):
            out[i] = buf[inp.size - 1 - i] + buf.size

    inp = np.arange(1, 9, dtype=np.float32)
    for dialect in (cuda, mlir_dialect):
        out = np.zeros(8, np.float32)
        dialect.jit(k.py_func)[1, 4, 0, 10 * 4](inp, out)
        np.testing.assert_array_equal(out, inp[::-1] + 10)


def test_runtime_shaped_shared_arrays_in_the_mlir_dialect(device):
    c = mlir_dialect
    assert c.shared_array is c.shared.array

    @c.jit
    def k(sizes, flag, out_i, out_f, info):
        t = cuda.threadIdx.x
        n = sizes[0]
        if flag[0] != 0:  # declared after control flow, shapes from an argument
            ints = c.shared.array(n, dtype=np.int32)          # bytes 0..4n
            grid = c.shared_array((sizes[1], 2), np.float64, alignas=16)  # 16-aligned
            if t < n:
                ints[t] = t * 3
            if t < sizes[1]:
                grid[t, 0] = t + 0.5
                grid[t, 1] = -t
            rest = c.shared.array(0, dtype=np.int8)           # what is left after them
            again = c.shared.array(0, dtype=np.int8)          # the same memory
            cuda.syncthreads()
            if t < n:
                out_i[t] = ints[n - 1 - t]
            if t < sizes[1]:
                out_f[t, 0], out_f[t, 1] = grid[t, 0], grid[t, 1]
            if t == 0:
                info[0], info[1], info[2] = grid.shape[0], grid.shape[1], rest.size
                rest[0] = 7
                info[3] = again[0]

    n, m, nbytes = 5, 3, 128
    out_i, out_f, info = np.zeros(n, np.int32), np.zeros((m, 2)), np.zeros(4, np.int64)
    k[1, 8, 0, nbytes](np.array([n, m]), np.array([1]), out_i, out_f, info)
    np.testing.assert_array_equal(out_i, np.arange(n)[::-1] * 3)
    np.testing.assert_array_equal(out_f, np.stack([np.arange(m) + 0.5, -np.arange(m)], 1))
    grid_end = -(-4 * n // 16) * 16 + 8 * m * 2
    np.testing.assert_array_equal(info, [m, 2, nbytes - grid_end, 7])


def test_mlir_shared_array_alignas_and_constant_shapes(device):
    c = mlir_dialect

    @c.jit
    def k(out, n):
        static = c.shared.array((2, 3), np.int32, alignas=16)   # the facade's static array
        run = c.shared.array(n, np.int8)
        after = c.shared.array(n, np.float32, alignment=8)
        static[1, 2] = 5
        run[0] = 1
        after[0] = 2.5
        out[0] = static[1, 2] + run[0] + after[0] + static.size

    out = np.zeros(1)
    k[1, 1, 0, 64](out, 3)
    assert out[0] == 5 + 1 + 2.5 + 6
    with pytest.raises(TypingError, match="not both"):
        @c.jit("void(int32)")
        def both(n):
            c.shared.array(n, np.int8, alignment=8, alignas=8)


def test_facade_keeps_numba_cuda_constant_shapes():
    def k(a):
        sm = cuda.shared.array(a[0], dtype=np.float32)
        a[0] = sm.size

    with pytest.raises(TypingError, match="shape must be an int or a tuple of ints known"):
        cuda.jit("void(int32[:])")(k)

    def k_mlir(a):  # the same code written for numba-cuda-mlir's cuda module
        sm = mlir_dialect.shared.array(a[0], dtype=np.float32)
        a[0] = sm.size

    mlir_dialect.jit("void(int32[:])")(k_mlir)


# ---------------------------------------------------------------- dtype attributes
SCALAR_DT = np.dtype(np.int16)
RECORD_DT = np.dtype([("x", np.int32), ("y", np.float64), ("z", np.uint8)], align=True)


def test_captured_dtype_attributes(device):
    f64 = np.dtype(np.float64)

    @cuda.jit
    def k(out):
        out[0] = SCALAR_DT.itemsize
        out[1] = RECORD_DT.itemsize
        out[2] = len(RECORD_DT.names)
        out[3] = f64.itemsize
        out[4] = RECORD_DT.alignment
        out[5] = SCALAR_DT.names is None
        out[6] = RECORD_DT.isalignedstruct
        out[7] = f64.num
        out[8] = SCALAR_DT.isnative

    out = np.zeros(9, np.int64)
    k[1, 1](out)
    np.testing.assert_array_equal(out, [SCALAR_DT.itemsize, RECORD_DT.itemsize,
                                        len(RECORD_DT.names), f64.itemsize,
                                        RECORD_DT.alignment, SCALAR_DT.names is None,
                                        RECORD_DT.isalignedstruct, f64.num,
                                        SCALAR_DT.isnative])


def test_record_dtype_names_and_array_dtype(device):
    @cuda.jit
    def k(out, arr):
        out[0] = RECORD_DT.names[0] == "x"
        out[1] = RECORD_DT.names[2] == "y"
        out[2] = arr.dtype.itemsize
        out[3] = len(arr.dtype.names)
        out[4] = SCALAR_DT.char == "h"
        out[5] = SCALAR_DT.name == "int32"
        out[6] = len(SCALAR_DT.shape) + SCALAR_DT.base.itemsize

    out = np.zeros(7, np.int64)
    k[1, 1](out, np.zeros(3, RECORD_DT))
    np.testing.assert_array_equal(out, [1, 0, RECORD_DT.itemsize, 3, SCALAR_DT.char == "h",
                                        SCALAR_DT.name == "int32",
                                        len(SCALAR_DT.shape) + SCALAR_DT.base.itemsize])


# ---------------------------------------------------------------- ravel
GRID = np.arange(12.0).reshape(3, 4) * 1.5


def test_ravel_of_captured_global_array(device):
    @cuda.jit
    def k(out):
        flat = GRID.ravel()
        for i in range(flat.size):
            out[i] = flat[i] + flat.shape[0]

    out = np.zeros(12)
    k[1, 1](out)
    np.testing.assert_array_equal(out, GRID.ravel() + 12)


def test_ravel_of_argument_is_a_view(device):
    @cuda.jit
    def k(a):
        flat = a.ravel()
        flat[5] = -1.0

    a = np.arange(12.0).reshape(3, 4)
    k[1, 1](a)
    assert a[1, 1] == -1.0 and (a.ravel()[:5] == np.arange(5)).all()


def test_ravel_of_a_strided_array_copies_it(device):
    """As NumPy: a copy in the kernel (the device runtime), in C order."""
    @cuda.jit
    def k(out, a):
        flat = a.ravel()
        for i in range(flat.shape[0]):
            out[i] = flat[i]

    host = np.arange(12.0).reshape(3, 4)
    out = np.zeros(6)
    if not device.target.device_heap:  # (the C-source routes: docs/device-runtime.md)
        with pytest.raises(gpux.ValidationError, match="device heap"):
            k[1, 1](out, cuda.to_device(host)[:, ::2])
        return
    k[1, 1](out, cuda.to_device(host)[:, ::2])
    np.testing.assert_array_equal(out, host[:, ::2].ravel())


# ---------------------------------------------------------------- cuda.experimental
@pytest.mark.parametrize("x, y", [((1, 2), (3, 4, 5)), ((1, 2.5), (3, 4.5)),
                                  ((1, 2, 3), (4, 5.5)), ((1, 2.5), (3, 4, 5))])
def test_consteval_unrolls_over_a_concatenated_tuple(device, x, y):
    from numba_gpux.cuda.experimental import consteval

    n = len(x + y)

    @cuda.jit
    def k(r, x, y):
        t = x + y
        for i in consteval(range(n)):
            r[i] = t[i]

    r = np.zeros(n)
    k[1, 1](r, x, y)
    np.testing.assert_array_equal(r, x + y)


WEIGHTS = (0.5, -2.0, 4.0)
LIMIT = 6


def test_consteval_expressions_blocks_and_nested_loops(device):
    import numba_gpux.cuda.experimental as experimental

    offset = 3

    @mlir_dialect.jit
    def k(out, a):
        i = cuda.threadIdx.x
        limit = experimental.consteval(LIMIT * 2)
        with experimental.consteval():
            table = tuple(w * offset for w in WEIGHTS)
            total = sum(table)
        if i < limit:
            acc = 0.0
            for j, w in experimental.consteval(tuple(enumerate(table))):
                acc += w * a[j]
            out[i] = acc + total + i
        if i == 0:
            for p in experimental.consteval(range(2)):
                for q in experimental.consteval(range(p + 1, 3)):
                    out[limit + experimental.consteval(p * 3 + q)] = p * 10 + q

    a = np.array([1.0, 2.0, 3.0])
    out = np.zeros(20)
    k[1, 16](out, a)
    table = [w * offset for w in WEIGHTS]
    want = np.zeros(20)
    want[:12] = np.dot(table, a) + sum(table) + np.arange(12)
    for p in range(2):
        for q in range(p + 1, 3):
            want[12 + p * 3 + q] = p * 10 + q
    np.testing.assert_array_equal(out, want)


def test_consteval_parameter_types_and_target_options(device):
    from numba.core import types

    from numba_gpux.cuda.experimental import consteval, current_target_options

    @cuda.jit(device=True)
    def width(v):
        vt = consteval(v)
        return consteval(getattr(vt, "bitwidth", 0))

    @cuda.jit(fastmath=True)
    def k(out, v):
        out[0] = width(v)
        out[1] = consteval(current_target_options()["fastmath"])
        out[2] = consteval(isinstance(v, types.Float))

    out = np.zeros(3, np.int64)
    k[1, 1](out, np.int32(5))
    np.testing.assert_array_equal(out, [32, 1, 0])
    k[1, 1](out, 5.0)
    np.testing.assert_array_equal(out, [64, 1, 1])


def test_consteval_in_a_device_function_inlined_from_its_source(device):
    """A device function that reads a captured device array is inlined into its
    caller's IR from its Python source, unrewritten: its consteval loop runs as a loop."""
    from numba_gpux.cuda.experimental import consteval

    table = cuda.to_device(np.arange(4.0) * 3)

    @cuda.jit(device=True)
    def copy3(out):
        for i in consteval(range(3)):
            out[i] = table[i] + consteval(10)

    @cuda.jit
    def k(out):
        copy3(out)

    out = np.zeros(3)
    k[1, 1](out)
    np.testing.assert_array_equal(out, np.arange(3) * 3 + 10)


def test_consteval_on_the_host_is_the_value():
    from numba_gpux.cuda.experimental import consteval, current_target_options

    assert consteval(range(3)) == range(3) and current_target_options() == {}
    with consteval():
        ran = True
    assert ran


def test_consteval_errors_name_the_line(device):
    from numba_gpux.cuda.experimental import ConstevalError, consteval

    @cuda.jit
    def undefined(out):
        out[0] = consteval(NOT_DEFINED_ANYWHERE + 1)  # noqa: F821

    @cuda.jit
    def breaks(out):
        for i in consteval(range(3)):
            if out[0] > i:
                break
            out[i] = i

    @cuda.jit
    def reassigns(out):
        for i in consteval(range(3)):
            i = i + 1
            out[0] = i

    import inspect

    for kernel, text, where in (
            (undefined, "NameError", "out[0] = consteval(NOT_DEFINED"),
            (breaks, "`break` in a consteval loop", "break"),
            (reassigns, "assigns to its loop variable 'i'", "for i in consteval")):
        with pytest.raises(ConstevalError, match=text) as e:
            kernel[1, 1](np.zeros(3))
        lines, start = inspect.getsourcelines(kernel.py_func)
        line = start + next(n for n, src in enumerate(lines) if src.strip().startswith(where))
        assert f"line {line}" in str(e.value), str(e.value)


def test_experimental_names():
    import importlib.util

    import numba_gpux.cuda.experimental as experimental

    for name in ("consteval", "current_target_options", "inline_ptx", "intrin",
                 "local_array_from", "struct", "tcgen05_descriptors", "union"):
        assert name in experimental.__all__ and name in dir(experimental)
    for name in ("struct", "union", "local_array_from"):
        with pytest.raises(UnsupportedError, match=f"cuda.experimental.{name}"):
            getattr(experimental, name)(None)
    with pytest.raises(AttributeError):
        experimental.no_such_name  # noqa: B018
    if importlib.util.find_spec("numba_gpux.cuda.intrin") is None:
        with pytest.raises(ImportError, match="numba_gpux.cuda.intrin"):
            experimental.intrin  # noqa: B018
    else:
        assert experimental.intrin is importlib.import_module("numba_gpux.cuda.intrin")


def test_experimental_names_from_the_intrinsics_module(monkeypatch):
    """What cuda.experimental serves from numba_gpux.cuda.intrin (a stand-in module
    here, where that module may not be installed): its names, and a clear ImportError
    for one it lacks."""
    import sys
    import types as pytypes

    import numba_gpux.cuda.experimental as experimental

    stand_in = pytypes.ModuleType("numba_gpux.cuda.intrin")
    stand_in.inline_ptx = object()
    monkeypatch.setitem(sys.modules, "numba_gpux.cuda.intrin", stand_in)
    assert experimental.intrin is stand_in
    assert experimental.inline_ptx is stand_in.inline_ptx
    with pytest.raises(ImportError, match="numba_gpux.cuda.intrin has no tcgen05_descriptors"):
        experimental.tcgen05_descriptors  # noqa: B018


def test_unsupported_experimental_names_in_a_kernel(device):
    import numba_gpux.cuda.experimental as experimental

    @cuda.jit
    def k(out):
        out[0] = experimental.local_array_from(1, np.float32)

    with pytest.raises(Exception, match="local_array_from"):
        k[1, 1](np.zeros(1))


# ---------------------------------------------------------------- debug kernels' errors
class _OwnError(Exception):
    pass


def _debug_kernels(dialect):
    @dialect.jit(debug=True, opt=False)
    def tuple_index(out, idx):
        t = (10, 20, 30)
        out[0] = t[idx]

    @dialect.jit(debug=True, opt=False)
    def array_index(out, idx):
        out[idx] = 1

    @dialect.jit(debug=True, opt=False)
    def raises(out, which):
        if which == 0:
            raise RuntimeError("Error")
        if which == 1:
            raise _OwnError("mine")
        if which == 2:
            raise ValueError("bad")
        if which == 3:  # (pytest rewrites assert statements in this file)
            raise AssertionError
        out[0] = 1 // (which - 4)

    return tuple_index, array_index, raises


def test_debug_exceptions_in_numba_cuda_mlir_form(device):
    tuple_index, array_index, raises = _debug_kernels(mlir_dialect)
    out = cuda.to_device(np.zeros(3, np.int32))
    tuple_index[1, 1](out, 2)
    assert out.copy_to_host()[0] == 30
    cases = ((tuple_index, (out, 5), IndexError, "Index out of bounds in kernel"),
             (array_index, (out, 7), IndexError, "Index out of bounds in kernel"),
             (raises, (out, 0), RuntimeError, "Runtime error in kernel"),
             (raises, (out, 1), RuntimeError, "Runtime error in kernel"),
             (raises, (out, 2), ValueError, "Invalid value in kernel"),
             (raises, (out, 3), AssertionError, "Kernel assertion failed"),
             (raises, (out, 4), ZeroDivisionError, "Division by zero in kernel"))
    for kernel, args, cls, text in cases:
        with pytest.raises(cls) as e:
            kernel[1, 1](*args)
        assert type(e.value) is cls and str(e.value).startswith(text), str(e.value)
        assert f"In function '{kernel.__name__}'" in str(e.value)  # the facade's details
    raises[1, 1](out, 5)  # no error: nothing raised


def test_facade_keeps_numba_cuda_exceptions(device):
    tuple_index, array_index, raises = _debug_kernels(cuda)
    out = cuda.to_device(np.zeros(3, np.int32))
    with pytest.raises(IndexError) as e:
        array_index[1, 1](out, 7)
    assert "in kernel" not in str(e.value).split("[")[0] and \
        "index is out of bounds" in str(e.value)
    with pytest.raises(_OwnError, match="mine"):
        raises[1, 1](out, 1)
    with pytest.raises(RuntimeError) as e:
        raises[1, 1](out, 0)
    assert "Runtime error in kernel" not in str(e.value) and "Error" in str(e.value)


# ---------------------------------------------------------------- the CUDA target
def test_what_this_file_compiles_is_valid_ptx(ptxas, tmp_path):
    """The same constructs compile for CUDA (PTX checked by ptxas): nothing above is
    OpenCL's alone."""
    import subprocess

    from numba.core import types

    from numba_gpux.cuda.experimental import consteval

    def vectors(out, a, s):
        v = cuda.float32x4(a[0], a[1], a[2], a[3])
        w = (v * s + v) / 2 - (-v)
        out[0], out[1], out[2], out[3] = w.x, w.y, w.z, w.w

    def shared(out, n):
        x = mlir_dialect.shared.array(n, dtype=np.float32)
        y = mlir_dialect.shared.array(0, dtype=np.float32)
        x[0] = 1
        y[0] = 2
        out[0] = x[0] + y[0] + complex64(n, 1).imag + GRID.ravel()[n] + SCALAR_DT.itemsize

    def unrolled(out, t):
        for i in consteval(range(3)):
            out[i] = t[i]

    for fn, sig in ((vectors, "void(float32[:], float32[:], float32)"),
                    (shared, "void(float32[:], int32)"),
                    (unrolled, (types.float64[:],
                                types.Tuple((types.int64, types.float64, types.int32))))):
        ptx, _ = cuda.compile_ptx(fn, sig, cc=(8, 0))
        path = tmp_path / f"{fn.__name__}.ptx"
        path.write_text(ptx)
        run = subprocess.run([ptxas, "--gpu-name", "sm_80", str(path), "-o", os.devnull],
                             capture_output=True, text=True)
        assert run.returncode == 0, (fn.__name__, run.stderr)


def test_consteval_needs_the_source_and_only_ours_is_rewritten(device):
    from numba_gpux.cuda.experimental import ConstevalError

    namespace = {"cuda": cuda}
    exec("from numba_gpux.cuda.experimental import consteval\n"
         "def k(out):\n"
         "    for i in consteval(range(2)):\n"
         "        out[i] = i\n", namespace)
    with pytest.raises(ConstevalError, match="source cannot be read"):
        cuda.jit(namespace["k"])[1, 1](np.zeros(2))

    @cuda.jit(device=True)
    def consteval(x):  # the user's own function of that name: an ordinary device call
        return x * 2

    @cuda.jit
    def k2(out):
        out[0] = consteval(21)

    out = np.zeros(1)
    k2[1, 1](out)
    assert out[0] == 42
    from numba_gpux.cuda._consteval import uses_consteval

    assert not uses_consteval(k2.py_func)  # compiled as written, not rewritten


# ---------------------------------------------------------------- unchanged program
MLIR_PROGRAM = '''
import numpy as np
from numba import complex64
from numba_cuda_mlir import cuda
from numba_cuda_mlir.cuda.experimental import consteval

SCALE = (1, 2.5, 4)


@cuda.jit(device=True)
def total(*xs):
    t = 0.0
    for x in xs:
        t += x
    return t


@cuda.jit
def kernel(sizes, a, out, *extra):
    i = cuda.threadIdx.x
    if i >= a.size:
        return
    buf = cuda.shared.array(sizes[0], dtype=np.float32)
    buf[i] = a[i]
    cuda.syncthreads()
    v = cuda.float32x2(buf[i], 1) * 2 + cuda.float32x2(0.5, 0.5)
    acc = 0.0
    for k in consteval(range(len(SCALE))):
        acc += SCALE[k]
    out[i] = v.x + v.y + acc + total(*extra) + complex64_part(i)


@cuda.jit(device=True)
def complex64_part(i):
    return complex64(i, 1).imag


a = np.arange(8, dtype=np.float32)
out = np.zeros(8)
kernel[1, 8, 0, 4 * 8](np.array([8]), a, out, 1.0, 2.0)
print("out", list(out))
'''


def test_numba_cuda_mlir_program_runs_unchanged(tmp_path, opencl_device):
    import subprocess
    import sys

    script = tmp_path / "mlir_prog.py"
    script.write_text(MLIR_PROGRAM)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_GPUX_ALIAS"}
    env.update(PYTHONPATH=root, NUMBA_GPUX_DEVICE=opencl_device.spec)
    proc = subprocess.run([sys.executable, "-m", "numba_gpux.alias", str(script)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = eval(proc.stdout.split("out", 1)[1])  # noqa: S307 - the program's own list
    a = np.arange(8)
    want = (a * 2 + 0.5) + (1 * 2 + 0.5) + 7.5 + 3.0 + 1.0
    np.testing.assert_allclose(got, want)
