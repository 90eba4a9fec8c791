"""Device-function calls as numba.cuda code writes them: functions and atomics passed
as arguments, constants that must reach the callee as literals, conditional
expressions as arguments, and numba.cuda's compare-and-swap spellings."""

import numpy as np
import pytest

from numba_gpux import cuda


def test_conditional_expression_argument(device):
    # a device function whose argument is a conditional expression: the
    # arguments are phis in Numba's IR, so the callee is held in a variable
    @cuda.jit(device=True)
    def h(x, y):
        return x + y

    @cuda.jit
    def kernel(a, g, out):
        i = cuda.grid(1)
        if i < a.size:
            out[i] = h(a[i], g[i] if g[i] == g[i] else 0.0)

    a = np.arange(6.0)
    g = np.array([1.0, np.nan, 2.0, np.nan, 3.0, 4.0])
    out = cuda.device_array(6)
    kernel[1, 8](cuda.to_device(a), cuda.to_device(g), out)
    np.testing.assert_equal(out.copy_to_host(), a + np.nan_to_num(g, nan=0.0))


def test_device_function_chosen_at_run_time_is_a_clear_error():
    from numba.core.errors import TypingError

    @cuda.jit(device=True)
    def twice(x):
        return 2 * x

    @cuda.jit(device=True)
    def negate(x):
        return -x

    @cuda.jit
    def kernel(a):
        i = cuda.grid(1)
        f = twice if i % 2 == 0 else negate
        a[i] = f(a[i])

    with pytest.raises(TypingError, match="one of several device functions"):
        kernel.compile_neutral_sig("void(float64[::1])")


def test_device_function_passed_as_argument(device):
    @cuda.jit(device=True)
    def square(x):
        return x * x

    @cuda.jit(device=True)
    def plus_one(x):
        return x + 1

    @cuda.jit(device=True)
    def apply_twice(f, x):
        return f(f(x))

    @cuda.jit
    def kernel(a, out):
        i = cuda.grid(1)
        if i < a.size:
            out[i, 0] = apply_twice(square, a[i])
            out[i, 1] = apply_twice(plus_one, a[i])

    a = np.arange(5, dtype=np.int64)
    out = cuda.device_array((5, 2), np.int64)
    kernel[1, 8](cuda.to_device(a), out)
    np.testing.assert_equal(out.copy_to_host(), np.stack([a ** 4, a + 2], axis=1))


def test_atomic_passed_as_argument(device):
    @cuda.jit(device=True)
    def update(op, ary, idx, value):
        return op(ary, idx, value)

    @cuda.jit
    def kernel(counts):
        update(cuda.atomic.add, counts, 0, 1)
        update(cuda.atomic.max, counts, 1, cuda.grid(1))
        update(cuda.atomic.sub, counts, 2, 2)

    counts = cuda.to_device(np.array([0, 0, 100], dtype=np.int32))
    kernel[2, 16](counts)
    np.testing.assert_equal(counts.copy_to_host(), [32, 31, 100 - 64])


def test_constant_arguments_reach_shared_array_as_literals(device):
    # shared.array needs its shape and dtype as constants: the device function
    # gets them as literals when its non-literal types do not type
    @cuda.jit(device=True)
    def block_reverse(ary, n, shape, dtype):
        buf = cuda.shared.array(shape, dtype)
        small = cuda.shared.array(n, dtype)
        i = cuda.threadIdx.x
        buf[i, 0] = ary[i]
        small[i] = ary[i]
        cuda.syncthreads()
        ary[i] = buf[n - 1 - i, 0] + small[i]

    @cuda.jit
    def kernel(ary):
        block_reverse(ary, 16, (16, 2), np.int32)

    @cuda.jit
    def kernel8(ary):
        block_reverse(ary, 8, (8, 1), np.int32)

    a = np.arange(16, dtype=np.int32)
    d = cuda.to_device(a)
    kernel[1, 16](d)
    np.testing.assert_equal(d.copy_to_host(), a[::-1] + a)
    b = np.arange(8, dtype=np.int32)
    d = cuda.to_device(b)
    kernel8[1, 8](d)
    np.testing.assert_equal(d.copy_to_host(), b[::-1] + b)


def test_non_literal_specialization_preferred():
    # a callee that types with plain int64 is compiled once for every value
    @cuda.jit(device=True)
    def add(x, k):
        return x + k

    @cuda.jit
    def kernel(a):
        a[0] = add(a[0], 3)
        a[1] = add(a[1], 5)

    kernel.compile_neutral_sig("void(int64[::1])")
    sigs = [tuple(map(str, s)) for s in add.signatures]
    assert sigs == [("int64", "int64")]


def test_untypable_callee_still_reports_its_error():
    from numba.core.errors import TypingError

    @cuda.jit(device=True)
    def bad(x, n):
        return x.no_such_attribute + n

    @cuda.jit
    def kernel(a):
        a[0] = bad(a[0], 2)

    with pytest.raises(TypingError, match="no_such_attribute"):
        kernel.compile_neutral_sig("void(int64[::1])")


def test_atomic_float_tuple_index_truncates(device):
    # numba.cuda converts any real index of an atomic to an integer; code
    # relies on it when a tuple index unifies to floats across branches
    @cuda.jit
    def kernel(ary, flip):
        i = cuda.threadIdx.x
        j = cuda.threadIdx.y
        idx = (i, np.uint64(j))
        if flip:
            idx = (idx[0] % 4, idx[1] % 2)
        cuda.atomic.add(ary, idx, 1)

    ary = cuda.to_device(np.zeros((4, 2), np.int32))
    kernel[1, (4, 2)](ary, False)
    np.testing.assert_equal(ary.copy_to_host(), np.ones((4, 2), np.int32))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint32, np.uint64])
def test_compare_and_swap(device, dtype):
    @cuda.jit
    def kernel(res, old, ary, fill):
        i = cuda.grid(1)
        if i < res.size:
            old[i] = cuda.atomic.compare_and_swap(res[i:], fill, ary[i])

    @cuda.jit
    def kernel_element(res, old, ary, fill):
        i = cuda.grid(1)
        if i < res.size:
            old[i] = cuda.atomic.compare_and_swap_element(res, i, fill, ary[i])

    n = 40
    rng = np.random.default_rng(7)
    fill, unfill = dtype(9), dtype(2)
    for k in (kernel, kernel_element):
        res = np.where(rng.random(n) < 0.5, fill, unfill).astype(dtype)
        ary = np.arange(n, dtype=dtype) + 20
        old = cuda.device_array(n, dtype)
        d_res = cuda.to_device(res)
        k[2, 32](d_res, old, cuda.to_device(ary), fill)
        np.testing.assert_equal(old.copy_to_host(), res)
        np.testing.assert_equal(d_res.copy_to_host(), np.where(res == fill, ary, res))


def test_int_bit_count(device):
    @cuda.jit
    def count(a, out):
        i = cuda.grid(1)
        if i < a.size:
            out[i] = a[i].bit_count()

    a = np.array([0, 1, 5, 255, 2 ** 40 + 3, -7, -(2 ** 63)], np.int64)
    out = cuda.device_array(a.size, np.int64)
    count[1, 8](cuda.to_device(a), out)
    np.testing.assert_equal(out.copy_to_host(), [int(v).bit_count() for v in a])
    u = np.array([0xFFFFFFFF, 3, 0], np.uint32)
    out = cuda.device_array(u.size, np.uint32)
    count[1, 4](cuda.to_device(u), out)
    np.testing.assert_equal(out.copy_to_host(), [32, 2, 0])


def test_grid_with_a_variable_names_the_literal_requirement():
    from numba.core.errors import TypingError

    def kernel(n):
        cuda.grid(n)

    with pytest.raises(TypingError, match="RequireLiteralValue.*constant 1, 2 or 3"):
        cuda.jit("void(int32)")(kernel)


def test_eager_device_signature_casts_arguments(device):
    # a device function with a signature converts its arguments to it (numba.cuda),
    # rather than compiling a float32 specialization its body cannot type
    @cuda.jit("int32(int32, int32, int32, int32)", device=True)
    def rgba(r, g, b, a):
        return ((r & 0xFF) << 16) | ((g & 0xFF) << 8) | (b & 0xFF) | ((a & 0xFF) << 24)

    @cuda.jit
    def caller(x, channels):
        x[0] = rgba(channels[0], channels[1], channels[2], channels[3])

    x = cuda.device_array(1, dtype=np.int32)
    caller[1, 1](x, cuda.to_device(np.array([1.0, 2.0, 3.0, 4.0], np.float32)))
    assert x.copy_to_host()[0] == 0x04010203
    assert len(rgba.signatures) == 1


def test_launching_a_device_function_is_a_runtime_error():
    @cuda.jit(device=True)
    def f():
        pass

    with pytest.raises(RuntimeError, match="Cannot compile a device function as a kernel"):
        f[1, 1]()


def test_cpu_jit_functions_called_from_a_kernel(device):
    import numba
    from numba.core.errors import TypingError

    @numba.jit
    def add(a, b):
        return a + b

    @cuda.jit
    def k(ary):
        i = cuda.grid(1)
        if i < ary.size:
            ary[i] = add(ary[i], 1)

    a = np.arange(10)
    k[1, 16](a)
    np.testing.assert_equal(a, np.arange(10) + 1)

    @numba.jit("(i4, i4)")
    def add_sig(a, b):
        return a + b

    @cuda.jit
    def k2(ary):
        ary[0] = add_sig(ary[0], 1)

    with pytest.raises(TypingError, match="Untyped global name 'add_sig':.*using cpu "
                                          "function on device.*explicit signatures"):
        k2[1, 1](np.arange(3, dtype=np.int32))


def test_kernel_called_from_a_kernel_compiles_as_a_device_function(device):
    # numba.cuda compiles a @cuda.jit kernel called from device code as a device
    # function: for the call's argument types, returning what its source returns
    @cuda.jit
    def set_first(a, v):
        a[0] = v

    @cuda.jit
    def bump(x):
        return x + 1

    @cuda.jit
    def caller(a, out):
        set_first(a, 5)
        out[0] = bump(a[1])
        out[1] = bump(2.5)

    a = np.ones(3, dtype=np.int32)
    out = np.zeros(2)
    caller[1, 1](a, out)
    np.testing.assert_equal(a, [5, 1, 1])
    np.testing.assert_equal(out, [2.0, 3.5])
    # the kernel itself still launches, and was never compiled as a kernel by the call
    assert set_first.signatures == []
    set_first[1, 1](a, 9)
    np.testing.assert_equal(a, [9, 1, 1])
    assert set_first.device_function.is_device and not set_first.is_device


def test_kernel_with_eager_signature_called_from_a_kernel_converts_arguments(device):
    @cuda.jit("void(float32[::1], float32)")
    def put(a, v):
        a[0] = v

    @cuda.jit
    def caller(a):
        put(a, 7)  # an int literal: converted to the signature's float32

    a = np.zeros(2, dtype=np.float32)
    caller[1, 1](a)
    np.testing.assert_equal(a, [7.0, 0.0])
    twin = put.device_function
    assert [tuple(map(str, s)) for s in twin.signatures] == [("array(float32, 1d, C)",
                                                              "float32")]


def test_a_jitted_function_jitted_again_compiles_its_python_function(device):
    """``cuda.jit(device=True)(already_jitted)``, as a molecular-dynamics package wraps
    its device functions: numba.cuda compiles the inner Python function with the outer
    options (its dispatchers name ``py_func`` in ``__numba__``, which Numba's bytecode
    reader follows); a kernel made from a device function's dispatcher too."""
    import numba_gpux as gpux

    def twice(x):
        return x * 2

    inner = cuda.jit(device=True)(twice)
    outer = cuda.jit(device=True)(inner)
    assert outer.py_func is twice and inner.__numba__ == "py_func"

    @cuda.jit
    def k(a):
        a[0] = outer(a[0]) + inner(1.0)

    a = cuda.to_device(np.array([20.0]))
    k[1, 1](a)
    assert a.copy_to_host()[0] == 42.0

    def store(out, v):
        out[cuda.grid(1)] = v

    as_kernel = cuda.jit(cuda.jit(device=True)(store))  # a kernel from a device function
    out = cuda.device_array(4)
    as_kernel[1, 4](out, 2.5)
    np.testing.assert_equal(out.copy_to_host(), 2.5)
    portable = gpux.jit(device=True)(gpux.jit(device=True)(twice))
    assert portable.py_func is twice
