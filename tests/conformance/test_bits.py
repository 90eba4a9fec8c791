"""Integer and float intrinsics: popc, clz, ffs, brev, fma, cbrt, select, round()."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import numba_gpux as gpux

INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@gpux.jit
def bit_counts(x, pc, lz, fs):
    i = gpux.grid(1)
    if i < x.size:
        pc[i] = gpux.popc(x[i])
        lz[i] = gpux.clz(x[i])
        fs[i] = gpux.ffs(x[i])


@gpux.jit
def bit_reverse(x, out):
    i = gpux.grid(1)
    if i < x.size:
        out[i] = gpux.brev(x[i])


@gpux.jit
def float_ops(a, b, c, f, r):
    i = gpux.grid(1)
    if i < a.size:
        f[i] = gpux.fma(a[i], b[i], c[i])
        r[i] = gpux.cbrt(a[i])


@gpux.jit
def selects(cond, a, b, out, outf):
    i = gpux.grid(1)
    if i < a.size:
        out[i] = gpux.select(cond[i], a[i], b[i])
        outf[i] = gpux.select(a[i] > b[i], 1.5, 2.5)


@gpux.jit
def rounding(x, r0, r1, r2):
    i = gpux.grid(1)
    if i < x.size:
        r0[i] = round(x[i])
        r1[i] = round(x[i], 1)
        r2[i] = round(x[i], -1)


def _ints(dtype, rng, n=200):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    special = [0, 1, info.max, info.min, 2, 3]
    if info.min < 0:
        special.append(-1)
    x[: len(special)] = np.array(special, dtype=dtype)
    return x


def _ref_counts(x):
    bits = x.dtype.itemsize * 8
    u = [int(v) & ((1 << bits) - 1) for v in x.tolist()]
    pc = [bin(v).count("1") for v in u]
    lz = [bits - v.bit_length() for v in u]
    fs = [(v & -v).bit_length() for v in u]
    return pc, lz, fs


@pytest.mark.feature("popc", "clz", "ffs")
@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_popc_clz_ffs(device, dtype, rng):
    x = _ints(dtype, rng)
    outs = [gpux.to_device(np.zeros(len(x), t)) for t in (dtype, dtype, np.uint32)]
    bit_counts[4, 64](gpux.to_device(x), *outs)
    pc, lz, fs = _ref_counts(x)
    np.testing.assert_array_equal(outs[0].copy_to_host(), np.array(pc).astype(dtype))
    np.testing.assert_array_equal(outs[1].copy_to_host(), np.array(lz).astype(dtype))
    np.testing.assert_array_equal(outs[2].copy_to_host(), np.array(fs, np.uint32))


@pytest.mark.feature("brev")
@pytest.mark.parametrize("dtype", ["int32", "uint32", "int64", "uint64"])
def test_brev(device, dtype, rng):
    x = _ints(dtype, rng)
    out = gpux.to_device(np.zeros_like(x))
    bit_reverse[4, 64](gpux.to_device(x), out)
    bits = x.dtype.itemsize * 8
    udt = np.dtype(f"uint{bits}")
    want = [int(format(int(v) & ((1 << bits) - 1), f"0{bits}b")[::-1], 2) for v in x.tolist()]
    np.testing.assert_array_equal(out.copy_to_host().view(udt), np.array(want, dtype=udt))


@pytest.mark.feature("fma", "cbrt")
@pytest.mark.parametrize("dtype", ["float32", pytest.param("float64", marks=pytest.mark.needs("fp64"))])
def test_fma_cbrt(device, dtype, rng):
    n = 256
    a = rng.standard_normal(n).astype(dtype) * 100
    b = rng.standard_normal(n).astype(dtype)
    c = rng.standard_normal(n).astype(dtype)
    a[:3] = [27, -8, 0]
    f, r = gpux.to_device(np.zeros(n, dtype)), gpux.to_device(np.zeros(n, dtype))
    float_ops[4, 64](gpux.to_device(a), gpux.to_device(b), gpux.to_device(c), f, r)
    # fma rounds once: the exact a*b+c, rounded to the dtype
    exact = [Fraction(float(p)) * Fraction(float(q)) + Fraction(float(s))
             for p, q, s in zip(a, b, c)]
    if dtype == "float64":
        np.testing.assert_array_equal(f.copy_to_host(), np.array([float(e) for e in exact]))
    else:
        np.testing.assert_allclose(f.copy_to_host(), np.array([float(e) for e in exact]),
                                   rtol=6e-8, atol=1e-37)
    got = r.copy_to_host()
    np.testing.assert_allclose(got, np.cbrt(a), rtol=4e-7 if dtype == "float32" else 1e-15)
    assert got[:3].tolist() == [3, -2, 0]


@pytest.mark.feature("select")
@pytest.mark.parametrize("dtype", ["int32", "uint64", "float32"])
def test_select(device, dtype, rng):
    n = 128
    cond = rng.integers(0, 2, n).astype(np.bool_)
    a = rng.integers(0, 100, n).astype(dtype)
    b = rng.integers(0, 100, n).astype(dtype)
    out, outf = gpux.to_device(np.zeros(n, dtype)), gpux.to_device(np.zeros(n, np.float64))
    selects[2, 64](gpux.to_device(cond), gpux.to_device(a), gpux.to_device(b), out, outf)
    np.testing.assert_array_equal(out.copy_to_host(), np.where(cond, a, b))
    np.testing.assert_array_equal(outf.copy_to_host(), np.where(a > b, 1.5, 2.5))


@pytest.mark.feature("round")
@pytest.mark.parametrize("dtype", ["float32", pytest.param("float64", marks=pytest.mark.needs("fp64"))])
def test_round(device, dtype, rng):
    x = np.concatenate([np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.25, 0.35, 15.0, 25.0, 3.7]),
                        rng.uniform(-1000, 1000, 100)]).astype(dtype)
    r0 = gpux.to_device(np.zeros(len(x), np.int64))
    r1, r2 = gpux.to_device(np.zeros(len(x), dtype)), gpux.to_device(np.zeros(len(x), dtype))
    rounding[2, 64](gpux.to_device(x), r0, r1, r2)
    # Python semantics: halves to even, one argument -> int
    np.testing.assert_array_equal(r0.copy_to_host(), [round(float(v)) for v in x])
    # round(x, n): x * 10**n rounded half to even in double precision, also for float32
    # (as numba.cuda; NumPy's float32 np.round rounds the product to float32 first)
    wide = x.astype(np.float64)
    np.testing.assert_allclose(r1.copy_to_host(), np.round(wide, 1).astype(dtype), rtol=1e-6)
    np.testing.assert_allclose(r2.copy_to_host(), np.round(wide, -1).astype(dtype), rtol=1e-6)


def test_bit_typing_errors():
    from numba.core.errors import TypingError

    def popc_float(x):
        gpux.popc(x)

    def brev_float(x):
        gpux.brev(x)

    with pytest.raises(TypingError, match="popc\\(x\\) needs an integer"):
        gpux.compile(popc_float, "void(float32)", target="opencl")
    with pytest.raises(TypingError, match="brev\\(x\\) needs an integer"):
        gpux.compile(brev_float, "void(float64)", target="opencl")


@pytest.mark.feature("brev")
def test_brev_of_a_small_integer_reverses_it_as_a_uint32(device):
    # numba.cuda's brev takes uint32 or uint64: an int16 converts to uint32 first
    @gpux.jit
    def k(x, out):
        out[0] = gpux.brev(x[0])
        out[1] = gpux.brev(x[1])

    out = gpux.device_array(2, np.uint64)
    k[1, 1](gpux.to_device(np.array([1, -1], np.int16)), out)
    assert out.copy_to_host().tolist() == [2 ** 31, 2 ** 32 - 1]


CONFORMANCE_KERNELS = (
    [(bit_counts, f"void({d}[::1], {d}[::1], {d}[::1], uint32[::1])") for d in INT_DTYPES]
    + [(bit_reverse, f"void({d}[::1], {d}[::1])") for d in ("int32", "uint32", "int64", "uint64")]
    + [(float_ops, f"void({d}[::1], {d}[::1], {d}[::1], {d}[::1], {d}[::1])")
       for d in ("float32", "float64")]
    + [(selects, "void(boolean[::1], float32[::1], float32[::1], float32[::1], float64[::1])"),
       (rounding, "void(float64[::1], int64[::1], float64[::1], float64[::1])")]
)
