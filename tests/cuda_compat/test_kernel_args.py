"""Kernel arguments as numba.cuda code passes them: tuples (also nested) of host
arrays and scalars, copied to the device and back like top-level host arrays."""

from collections import namedtuple

import numpy as np
import pytest

from numba_gpux import cuda


def test_tuple_of_host_arrays(device):
    @cuda.jit
    def add(x):
        i = cuda.grid(1)
        if i < len(x[0]):
            x[0][i] = x[1][i] + x[2][i]

    x0 = np.zeros(10)
    x1 = np.arange(10.0)
    x2 = np.full(10, 3.0)
    add[1, 16]((x0, x1, x2))
    np.testing.assert_equal(x0, x1 + x2)
    np.testing.assert_equal(x1, np.arange(10.0))


def test_nested_tuple_of_arrays_and_scalars(device):
    @cuda.jit
    def unpack(r, x):
        r[0] = x[0][0]
        r[1] = x[0][1]
        r[2] = x[1]
        r[3] = x[2][0]
        r[4] = x[2][1][0]
        x[2][1][0] = 99

    inner = np.array([7], dtype=np.int64)
    r = np.zeros(5, dtype=np.int64)
    unpack[1, 1](r, (np.array([5, 6], dtype=np.int64), 10, (4, inner)))
    np.testing.assert_equal(r, [5, 6, 10, 4, 7])
    np.testing.assert_equal(inner, [99])     # written on the device, copied back


def test_tuple_mixing_device_and_host_arrays(device):
    @cuda.jit
    def copy(pair):
        i = cuda.grid(1)
        if i < pair[0].size:
            pair[1][i] = 2 * pair[0][i]

    src = cuda.to_device(np.arange(8, dtype=np.float32))
    dst = np.zeros(8, dtype=np.float32)
    copy[1, 8]((src, cuda.Out(dst)))
    np.testing.assert_equal(dst, 2 * np.arange(8, dtype=np.float32))


def test_namedtuple_of_host_arrays(device):
    Pair = namedtuple("Pair", "a b")

    @cuda.jit
    def neg(p):
        i = cuda.grid(1)
        if i < p.a.size:
            p.b[i] = -p.a[i]

    a = np.arange(6, dtype=np.int32)
    b = np.zeros(6, dtype=np.int32)
    neg[1, 8](Pair(a, b))
    np.testing.assert_equal(b, -a)


def test_ints_narrowed_to_an_eager_signature_wrap_around(device):
    # a Python int reaching an int32/uint8 parameter of an eager signature is cast
    # as C (and numba.cuda) casts it: modulo 2**bits, not an error
    @cuda.jit("void(int64[::1], int32, uint8)")
    def store(out, a, b):
        out[0] = a
        out[1] = b

    out = np.zeros(2, np.int64)
    store[1, 1](out, 0xFFFFFFFF, 300)
    np.testing.assert_equal(out, [-1, 300 % 256])
    store[1, 1](out, 0x80000000, -1)
    np.testing.assert_equal(out, [-(2 ** 31), 255])
    store[1, 1](out, 7, 9)            # in range: unchanged
    np.testing.assert_equal(out, [7, 9])


def test_read_only_array_in_a_tuple_is_refused_before_the_launch(device):
    import pytest

    from numba_gpux import LaunchError

    @cuda.jit
    def write_first(x):
        i = cuda.grid(1)
        if i < len(x[0]):
            x[0][i] = 1.0

    frozen = np.zeros(4)
    frozen.setflags(write=False)
    with pytest.raises(LaunchError, match="an array in a tuple argument is a read-only"):
        write_first[1, 4]((frozen,))
    np.testing.assert_equal(frozen, np.zeros(4))


class _CopyInOnly:
    """An extension that passes host arrays as inputs only (no copy back)."""

    def __init__(self):
        self.seen = []

    def prepare_args(self, ty, val, stream=None, retr=None):
        self.seen.append(str(ty))
        return ty, cuda.args.wrap_arg(val, default=cuda.In)


def test_extensions_prepare_every_argument_before_the_launch(device):
    ext = _CopyInOnly()

    @cuda.jit(extensions=[ext])
    def set3(a, n):
        a[0] = n

    host = np.zeros(2, dtype=np.int64)
    set3[1, 1](host, 3)
    np.testing.assert_equal(host, [0, 0])            # In: not copied back
    assert ext.seen == ["array(int64, 1d, C)", "int64"]
    set3[1, 1](cuda.InOut(host), 3)                  # a hint given by the caller stays
    np.testing.assert_equal(host, [3, 0])


def test_extension_added_after_launches_applies_to_the_next_one(device):
    @cuda.jit
    def set3(a):
        a[0] = 3

    d = cuda.to_device(np.zeros(1, dtype=np.int64))
    set3[1, 1](d)
    set3[1, 1](d)                                    # known by its launch key now
    other = cuda.to_device(np.zeros(1, dtype=np.int64))
    done = []

    class Redirect:
        def prepare_args(self, ty, val, stream=None, retr=None):
            retr.append(lambda: done.append(other.copy_to_host()[0]))
            return ty, other

    set3.extensions.append(Redirect())
    d2 = cuda.to_device(np.zeros(1, dtype=np.int64))
    set3[1, 1](d2)
    assert d2.copy_to_host()[0] == 0                 # the extension replaced it
    assert done == [3]                               # retr callbacks run after the launch


def test_hints_on_scalars_and_tuples_pass_them_as_without_one(device):
    @cuda.jit
    def put(a, n, t):
        a[0] = n + t[1]

    a = np.zeros(1, dtype=np.int64)
    put[1, 1](a, cuda.In(5), cuda.In((1, 2)))
    assert a[0] == 7


def test_one_signature_views_integer_arrays_of_its_width(device):
    def dec(a):
        i, j = cuda.grid(2)
        a[i, j] -= 1

    one = cuda.jit("void(int32[:,:])")(dec)
    a = np.arange(32, dtype=np.uint32).reshape(4, 8) + 5
    one[1, (4, 8)](a)                       # uint32 data, viewed as int32
    np.testing.assert_equal(a, np.arange(32).reshape(4, 8) + 4)
    with pytest.raises(TypeError, match="No matching definition"):
        one[1, (4, 8)](np.zeros((4, 8), dtype=np.int64))    # another width
    with pytest.raises(TypeError, match="No matching definition"):
        one[1, (4, 8)](np.zeros((4, 8), dtype=np.float32))  # not an integer
    listed = cuda.jit(["void(int32[:,:])"])(dec)            # a list: types must match
    with pytest.raises(TypeError, match="No matching definition"):
        listed[1, (4, 8)](a)


def test_extensions_apply_last_added_first(device):
    order = []

    class Tag:
        def __init__(self, name):
            self.name = name

        def prepare_args(self, ty, val, stream=None, retr=None):
            order.append(self.name)
            return ty, val

    @cuda.jit(extensions=[Tag("first"), Tag("second")])
    def k(n):
        pass

    k[1, 1](1)
    assert order == ["second", "first"]


def _add(r, x, y):
    r[0] = x + y


def test_several_signatures_take_the_best_conversion(device):
    f = cuda.jit(["(float64[::1], float32, float32)", "(float64[::1], float64, float64)"])(_add)
    r = np.zeros(1)
    f[1, 1](r, np.float32(1), np.float32(2 ** -25))
    assert r[0] == 1.0                        # float32 arithmetic: the small part is lost
    f[1, 1](r, 1, 2 ** -25)                   # int64, float64: the float64 signature
    assert r[0] == 1.0 + 2 ** -25


def test_a_tie_between_the_best_signatures_is_a_type_error(device):
    f = cuda.jit(["(float64[::1], float32, float64)", "(float64[::1], float64, float32)",
                  "(float64[::1], int64, int64)"])(_add)
    with pytest.raises(TypeError, match=r"Ambiguous overloading .*\n.*float32, float64.*\n"
                                        r".*float64, float32") as e:
        f[1, 1](np.zeros(1), 1.0, 2.0)
    assert "int64" not in str(e.value)


def test_specialize_keeps_one_kernel_per_argument_types(device):
    from numba import float32, int32

    @cuda.jit
    def f(x):
        x[0] = 7

    assert f.specializations == {}
    a = f.specialize(float32[::1])
    assert f.specialize(float32[::1]) is a
    b = f.specialize(np.zeros(3, np.int32))      # a value: its type
    assert b is f.specialize(int32[::1]) and b is not a
    assert len(f.specializations) == 2
    x = np.zeros(2, np.float32)
    a[1, 1](x)
    assert x[0] == 7
    with pytest.raises(Exception, match="specialized for"):
        a[1, 1](np.zeros(2, np.int32))
    for restricted in (a, cuda.jit("void(float32[::1])")(f.py_func)):
        with pytest.raises(RuntimeError, match="Dispatcher already specialized"):
            restricted.specialize(float32[::1])
