"""Memory spaces: static and dynamic shared arrays, local arrays, constant arrays."""

from __future__ import annotations

import numpy as np
import pytest
from numba import literal_unroll
from numba.core.errors import TypingError

import numba_gpux as gpux

TPB = 32
TILE = (4, 8)
CUBE = (2, 3, 4)
TABLE = (np.arange(40, dtype=np.float64) ** 2).reshape(5, 8)
LUT = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.int32)
FLUT = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))


@gpux.jit
def shared_reverse(x, out):
    t = gpux.thread_idx.x
    sm = gpux.shared.array(TPB, x.dtype)
    sm[t] = x[t]
    gpux.barrier()
    out[t] = sm[TPB - 1 - t]


@gpux.jit
def shared_2d_3d(out2, out3):
    t = gpux.thread_idx.x
    a = gpux.shared.array(TILE, np.float32)
    b = gpux.shared.array((2, 3, 4), np.int64)
    a[t // 8, t % 8] = t
    if t < 24:
        b[t // 12, (t // 4) % 3, t % 4] = 100 + t
    gpux.barrier()
    out2[t // 8, t % 8] = a[3 - t // 8, 7 - t % 8]
    if t < 24:
        out3[t // 12, (t // 4) % 3, t % 4] = b[1 - t // 12, (t // 4) % 3, t % 4]


@gpux.jit(device=True)
def _block_sum(v):
    sm = gpux.shared.array(TPB, np.float64)
    t = gpux.thread_idx.x
    sm[t] = v
    gpux.barrier()
    s = TPB // 2
    while s > 0:
        if t < s:
            sm[t] += sm[t + s]
        gpux.barrier()
        s //= 2
    r = sm[0]
    gpux.barrier()
    return r


@gpux.jit
def shared_in_device_function(x, out):
    i = gpux.grid(1)
    first = _block_sum(x[i])
    second = _block_sum(x[i] * 2)   # a second call: its own array, same result pattern
    if gpux.thread_idx.x == 0:
        out[gpux.block_idx.x, 0] = first
        out[gpux.block_idx.x, 1] = second


@gpux.jit
def dynamic_aliasing(out, sizes):
    t = gpux.thread_idx.x
    f = gpux.shared.array(0, np.float32)
    i = gpux.shared.array(0, np.int32)   # the same memory, other type
    if t < f.size:
        f[t] = 1.0
    gpux.barrier()
    if t < i.size:
        out[t] = i[t]
    if t == 0:
        sizes[0] = f.size
        sizes[1] = i.size


@gpux.jit
def dynamic_reverse(x, out):
    t = gpux.thread_idx.x
    sm = gpux.shared.array(0, np.float64)
    n = min(sm.size, x.size)
    if t < n:
        sm[t] = x[t]
    gpux.barrier()
    if t < n:
        out[t] = sm[n - 1 - t]


@gpux.jit
def local_arrays(x, out):
    i = gpux.grid(1)
    if i < x.size:
        a = gpux.local.array(8, np.int64)
        m = gpux.local.array((2, 3), np.float32)
        for k in range(8):
            a[k] = x[i] * k
        for r in range(2):
            for c in range(3):
                m[r, c] = r * 10 + c + x[i]
        s = 0
        for k in range(8):
            s += a[k]
        out[i] = s + m[1, 2]


@gpux.jit
def const_arrays(out, out2, out3):
    i = gpux.grid(1)
    t = gpux.const.array_like(TABLE)
    lut = gpux.const.array_like(LUT)
    f = gpux.const.array_like(FLUT)
    if i < out.size:
        out[i] = t[i % 5, i % 8] + lut[i % 8]
        out2[i] = LUT[(i + 1) % 8]          # a bare global array reads the same way
        out3[i] = f[i % 3, i % 4]


@gpux.jit
def shared_dtypes(out8, outb, outu64):
    t = gpux.thread_idx.x
    a = gpux.shared.array(TPB, np.uint8)
    b = gpux.shared.array(TPB, np.bool_)
    c = gpux.shared.array(TPB, np.uint64)
    a[t] = t * 7
    b[t] = t % 3 == 0
    c[t] = np.uint64(1) << np.uint64(t + 30)
    gpux.barrier()
    out8[t] = a[TPB - 1 - t]
    outb[t] = b[TPB - 1 - t]
    outu64[t] = c[TPB - 1 - t]


@pytest.mark.feature("shared_static")
@pytest.mark.parametrize("dtype", [np.float32, np.int32, pytest.param(np.float64, marks=pytest.mark.needs("fp64"))])
def test_shared_static_1d(device, dtype, rng):
    x = rng.integers(-100, 100, TPB).astype(dtype)
    out = gpux.to_device(np.zeros(TPB, dtype))
    shared_reverse[1, TPB](gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), x[::-1])


@pytest.mark.feature("shared_static")
def test_shared_static_2d_3d(device):
    o2 = gpux.to_device(np.zeros(TILE, np.float32))
    o3 = gpux.to_device(np.zeros(CUBE, np.int64))
    shared_2d_3d[1, TPB](o2, o3)
    a = np.arange(32, dtype=np.float32).reshape(TILE)
    np.testing.assert_array_equal(o2.copy_to_host(), a[::-1, ::-1])
    b = (100 + np.arange(24)).reshape(CUBE)
    np.testing.assert_array_equal(o3.copy_to_host(), b[::-1])


@pytest.mark.feature("shared_static")
def test_shared_static_dtypes(device):
    o8, ob, o64 = (gpux.to_device(np.zeros(TPB, t)) for t in (np.uint8, np.bool_, np.uint64))
    shared_dtypes[1, TPB](o8, ob, o64)
    t = np.arange(TPB)
    np.testing.assert_array_equal(o8.copy_to_host(), ((t * 7) % 256).astype(np.uint8)[::-1])
    np.testing.assert_array_equal(ob.copy_to_host(), (t % 3 == 0)[::-1])
    np.testing.assert_array_equal(o64.copy_to_host(),
                                  (np.uint64(1) << (t + 30).astype(np.uint64))[::-1])


@pytest.mark.feature("shared_static")
def test_shared_in_device_function(device, rng):
    x = rng.integers(0, 10, 4 * TPB).astype(np.float64)
    out = gpux.to_device(np.zeros((4, 2)))
    shared_in_device_function[4, TPB](gpux.to_device(x), out)
    sums = x.reshape(4, TPB).sum(axis=1)
    np.testing.assert_array_equal(out.copy_to_host(), np.stack([sums, 2 * sums], axis=1))


@pytest.mark.feature("shared_dynamic")
@pytest.mark.parametrize("nbytes", [16, 64, 128])
def test_shared_dynamic_aliasing(device, nbytes):
    out = gpux.to_device(np.zeros(TPB, np.int32))
    sizes = gpux.to_device(np.zeros(2, np.int64))
    dynamic_aliasing[1, TPB, None, nbytes](out, sizes)
    n = nbytes // 4
    assert sizes.copy_to_host().tolist() == [n, n]
    got = out.copy_to_host()
    # the int32 view reads the bits of float32 1.0 written through the other view
    np.testing.assert_array_equal(got[:n], np.full(n, np.float32(1).view(np.int32)))
    np.testing.assert_array_equal(got[n:], 0)


@pytest.mark.feature("shared_dynamic")
@pytest.mark.needs("fp64")
def test_shared_dynamic_sized_at_launch(device, rng):
    x = rng.standard_normal(TPB)
    for n in (8, TPB):
        out = gpux.to_device(np.zeros(TPB))
        dynamic_reverse[1, TPB, None, n * 8](gpux.to_device(x), out)
        want = np.zeros(TPB)
        want[:n] = x[:n][::-1]
        np.testing.assert_array_equal(out.copy_to_host(), want)


@pytest.mark.feature("local_array")
def test_local_arrays(device, rng):
    x = rng.integers(0, 100, 100).astype(np.int64)
    out = gpux.to_device(np.zeros(100, np.float64))
    local_arrays[4, 32](gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), x * 28 + 12 + x)


@pytest.mark.feature("const_array")
@pytest.mark.needs("fp64")
def test_const_arrays(device):
    n = 50
    out, out2, out3 = (gpux.to_device(np.zeros(n, t)) for t in (np.float64, np.int32, np.float32))
    const_arrays[2, 32](out, out2, out3)
    i = np.arange(n)
    np.testing.assert_array_equal(out.copy_to_host(), TABLE[i % 5, i % 8] + LUT[i % 8])
    np.testing.assert_array_equal(out2.copy_to_host(), LUT[(i + 1) % 8])
    np.testing.assert_array_equal(out3.copy_to_host(), FLUT[i % 3, i % 4])


SCALAR_ARRAY = np.array(7.5, np.float32)      # 0-d: no shape, no strides
EMPTY = np.zeros((0, 3), np.int32)
CASES = (np.int32([1, 0, 2]), np.array(4, np.int32), np.zeros(0, np.int32))


@gpux.jit
def const_0d_and_empty(out):
    if gpux.grid(1) == 0:
        out[0] = SCALAR_ARRAY[()]
        out[1] = SCALAR_ARRAY.ndim + EMPTY.size + EMPTY.shape[1]
        i = 2
        for c in literal_unroll(CASES):   # a tuple of global arrays: a constant tuple
            out[i] = c.size * 10 + c.ndim
            i += 1


def test_const_zero_dimensional_and_empty_arrays(device):
    out = gpux.to_device(np.zeros(5, np.float32))
    const_0d_and_empty[1, 1](out)
    np.testing.assert_array_equal(out.copy_to_host(), [7.5, 3, 31, 10, 1])


@gpux.jit
def four_dims(out):
    # shared and private arrays of more than three dimensions (numba.cuda takes any
    # number; a hidden-Markov-model library keeps (N, M, M, segments) in shared memory)
    t = gpux.thread_idx.x
    sm = gpux.shared.array((2, 3, 4, 5), np.float64)
    loc = gpux.local.array((2, 2, 2, 2), np.int32)
    for a in range(2):
        for b in range(2):
            for c in range(2):
                for d in range(2):
                    loc[a, b, c, d] = a * 8 + b * 4 + c * 2 + d + t
    if t < 120:
        sm[t // 60, (t // 20) % 3, (t // 5) % 4, t % 5] = t
    gpux.barrier()
    if t < 120:
        out[t] = sm[(119 - t) // 60, ((119 - t) // 20) % 3, ((119 - t) // 5) % 4,
                    (119 - t) % 5] + loc[1, 1, 1, 1] - t


@pytest.mark.feature("shared_static", "barrier")
def test_arrays_of_four_dimensions(device):
    out = gpux.to_device(np.zeros(120))
    four_dims[1, 128](out)
    np.testing.assert_array_equal(out.copy_to_host(), 119 - np.arange(120) + 15)


def _compile(fn, sig):
    return gpux.compile(fn, sig, target="opencl")


def test_shape_errors():
    def runtime_shape(n):
        gpux.shared.array(n, np.float32)

    def no_dims(n):
        gpux.local.array((), np.float32)  # (an array has one dimension or more)

    def local_dynamic(n):
        gpux.local.array(0, np.float32)

    def bad_dtype(n):
        gpux.shared.array(4, n)

    for fn, match in [(runtime_shape, "known at compile time"), (no_dims, "tuple of ints known"),
                      (local_dynamic, "zero size"), (bad_dtype, "dtype must be")]:
        with pytest.raises(TypingError, match=match):
            _compile(fn, "void(int64)")


def test_neutral_ir_address_spaces():
    """Static shared arrays are addrspace(3) variables, constant arrays addrspace(4)
    (neutral numbering), local arrays allocas, dynamic shared memory an intrinsic."""
    sym, text = shared_reverse.kernel_ir((gpux.to_device(np.zeros(1, np.float32))._numba_type_,) * 2)
    assert "addrspace(3) global [32 x float] undef" in text
    _, ctext = const_arrays.kernel_ir(tuple(gpux.to_device(np.zeros(1, t))._numba_type_
                                            for t in (np.float64, np.int32, np.float32)))
    assert "addrspace(4) constant" in ctext
    _, dtext = dynamic_reverse.kernel_ir((gpux.to_device(np.zeros(1))._numba_type_,) * 2)
    assert "@__gpux_dynamic_shared()" in dtext and "@__gpux_dynamic_shared_bytes()" in dtext


CONFORMANCE_KERNELS = [
    (shared_reverse, "void(float32[::1], float32[::1])"),
    (shared_2d_3d, "void(float32[:, ::1], int64[:, :, ::1])"),
    (shared_in_device_function, "void(float64[::1], float64[:, ::1])"),
    (dynamic_aliasing, "void(int32[::1], int64[::1])"),
    (dynamic_reverse, "void(float64[::1], float64[::1])"),
    (local_arrays, "void(int64[::1], float64[::1])"),
    (const_arrays, "void(float64[::1], int32[::1], float32[::1])"),
    (shared_dtypes, "void(uint8[::1], boolean[::1], uint64[::1])"),
]


@pytest.mark.feature("shared_static", "local_array")
def test_array_constructors_take_keywords(device):
    """numba.cuda code writes shared.array(shape=..., dtype=...)."""
    from numba import float32

    @gpux.jit
    def kw(a):
        s = gpux.shared.array(shape=(4, 4), dtype=float32)
        t = gpux.local.array(dtype=np.int32, shape=3)
        i = gpux.thread_idx.x
        s[i, 0] = i
        t[0] = 2
        gpux.barrier()
        a[i] = s[3 - i, 0] * t[0]

    d = gpux.to_device(np.zeros(4, np.float32))
    kw[1, 4](d)
    np.testing.assert_array_equal(d.copy_to_host(), [6, 4, 2, 0])


def test_local_and_shared_arrays_take_an_alignment(device):
    # numba.cuda's alignment= keyword: the array's address is a multiple of it
    @gpux.jit
    def k(x, out, n):
        i = gpux.thread_idx.x
        loc = gpux.local.array(shape=64, dtype=np.float32, alignment=64)
        sh = gpux.shared.array(32, np.float32, alignment=256)
        dflt = gpux.shared.array(shape=(2, 16), dtype=np.float32, alignment=None)
        for j in range(64):
            loc[j] = x[j] + i
        sh[i] = loc[(i + n) % 64]
        dflt[i // 16, i % 16] = 1.0
        gpux.barrier()
        out[i] = sh[(i + 1) % 32] + dflt[(i + 1) // 16 % 2, (i + 1) % 16]

    x = np.arange(64, dtype=np.float32)
    out = gpux.to_device(np.zeros(32, dtype=np.float32))
    k[1, 32](gpux.to_device(x), out, 5)
    i = np.arange(32)
    j = (i + 1) % 32
    np.testing.assert_array_equal(out.copy_to_host(), x[(j + 5) % 64] + j + 1.0)
    sig = "void(float32[::1], float32[::1], int64)"
    ptx = gpux.compile(k, sig, target="cuda", cubin=False).text
    assert ".shared .align 256 .b8" in ptx and ".local .align 64 .b8" in ptx
    assert ".shared .align 16 .b8" in ptx  # the default: at least 16


@pytest.mark.parametrize("alignment, why", [
    ("3", "Alignment must be a positive power of 2, not 3"),
    ("0", "Alignment must be a positive power of 2, not 0"),
    ("1.5", "alignment must be a constant integer, not float64"),
    ("n", "alignment must be a constant integer, not int64"),
])
def test_a_bad_alignment_is_an_error(alignment, why):
    """A constant that is no positive power of two is numba.cuda's ValueError; a value
    that is no constant integer, a typing error."""
    from numba.core.errors import TypingError

    ns = {"gpux": gpux, "np": np}
    exec(f"def k(out, n):\n    a = gpux.local.array(4, np.float32, alignment={alignment})\n"
         f"    a[0] = n\n    out[0] = a[0]\n", ns)
    with pytest.raises(ValueError if alignment.isdigit() else TypingError, match=why):
        gpux.compile(ns["k"], "void(float32[::1], int64)", target="cuda", cubin=False)
