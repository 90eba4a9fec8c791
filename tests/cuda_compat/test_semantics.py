"""Built-in operations whose meaning differs between Python and numba.cuda: kernels of
the numba.cuda facade follow numba.cuda, ``numba_gpux.jit`` kernels follow Python
(numba_gpux/language/semantics.py; docs/migration.md)."""

import warnings

import numpy as np
import pytest
from numba.core.errors import NumbaWarning

import numba_gpux as gpux
from numba_gpux import cuda
from numba_gpux.compiler import Options, Semantics
from numba_gpux.cuda.decorators import NUMBA_CUDA_SEMANTICS
from numba_gpux.errors import GpuxUserError

nan = float("nan")


def _minmax(a, b, out):
    out[0] = max(a[0], b[0])
    out[1] = min(a[0], b[0])
    out[2] = max(b[0], a[0])
    out[3] = min(b[0], a[0])


def _run_minmax(jit, a, b, dtype_a, dtype_b):
    k = jit(_minmax)
    out_dtype = np.result_type(dtype_a, dtype_b)
    out = cuda.device_array(4, out_dtype)
    k[1, 1](cuda.to_device(np.array([a], dtype_a)), cuda.to_device(np.array([b], dtype_b)), out)
    return out.copy_to_host()


@pytest.mark.parametrize("ta, tb", [(np.float32, np.float32), (np.float64, np.float64),
                                    (np.float32, np.float64)])
def test_facade_min_max_skip_a_nan_operand(device, ta, tb):
    # libdevice's fmax/fmin, which numba.cuda calls: the other operand
    np.testing.assert_equal(_run_minmax(cuda.jit, nan, 1.5, ta, tb), [1.5, 1.5, 1.5, 1.5])
    np.testing.assert_equal(_run_minmax(cuda.jit, -2.0, 1.5, ta, tb), [1.5, -2.0, 1.5, -2.0])
    assert np.isnan(_run_minmax(cuda.jit, nan, nan, ta, tb)).all()


@pytest.mark.parametrize("ta, tb", [(np.float32, np.float32), (np.float64, np.float64)])
def test_portable_min_max_follow_python(device, ta, tb):
    got = _run_minmax(gpux.jit, nan, 1.5, ta, tb)
    want = [max(nan, 1.5), min(nan, 1.5), max(1.5, nan), min(1.5, nan)]
    np.testing.assert_equal(got, want)   # nan, nan, 1.5, 1.5
    assert np.isnan(got[0]) and got[2] == 1.5


def test_facade_device_function_follows_numba_cuda(device):
    @cuda.jit(device=True)
    def biggest(x, y):
        return max(x, y)

    @cuda.jit
    def k(a, out):
        out[0] = biggest(a[0], a[1])

    out = cuda.device_array(1, np.float32)
    k[1, 1](cuda.to_device(np.array([nan, 3.0], np.float32)), out)
    assert out.copy_to_host()[0] == 3.0


def test_facade_ufuncs_and_reductions_follow_numba_cuda(device):
    @cuda.vectorize(["float32(float32, float32)"])
    def vmax(x, y):
        return max(x, y)

    got = vmax(np.array([nan, 1.0, 2.0], np.float32), np.array([1.0, nan, 3.0], np.float32))
    np.testing.assert_equal(got, [1.0, 1.0, 3.0])

    @cuda.reduce
    def rmax(x, y):
        return max(x, y)

    assert rmax(np.array([1.0, nan, 4.0, 2.0])) == 4.0


def test_the_rules_are_part_of_the_options():
    # the cache keys (memory and disk) hash the options: the two APIs never share code
    fk, gk = cuda.jit(_minmax), gpux.jit(_minmax)
    assert fk.options.semantics == NUMBA_CUDA_SEMANTICS
    assert gk.options.semantics == Semantics()
    assert fk.options != gk.options and repr(fk.options) != repr(gk.options)


def test_compile_ptx_uses_numba_cuda_rules():
    def mx(a, b):
        return max(a, b)

    ptx, _ = cuda.compile_ptx(mx, "float32(float32, float32)", device=True)
    assert "max.f32" in ptx          # maxNum: PTX's max returns the non-NaN operand
    portable = gpux.compile(mx, "float32(float32, float32)", target="cuda", device=True).text
    assert "max.f32" not in portable


def test_facade_multiply_adds_fuse_as_numba_cuda_s():
    """numba.cuda compiles with NVVM's default -fma=1, which fuses ``a * b + c`` into one
    fma (one rounding); the facade's kernels do, and the portable API's round each
    operation, as Numba's CPU target does."""
    def k(a, b, c, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] * b[i] + c[i]

    sig = "void(float32[::1], float32[::1], float32[::1], float32[::1])"
    ptx, _ = cuda.compile_ptx(k, sig)
    assert "fma.rn.f32" in ptx and "mul.rn.f32" not in ptx
    portable = gpux.compile(k, sig, target="cuda").text
    assert "fma.rn.f32" not in portable and "mul.rn.f32" in portable
    # fastmath still fuses (and flushes denormals), as numba.cuda's fastmath=True
    fast, _ = cuda.compile_ptx(k, sig, fastmath=True)
    assert "fma.rn.ftz.f32" in fast


@pytest.mark.usefixtures("opencl_device")
def test_facade_multiply_adds_fuse_on_the_spirv_route():
    """On the SPIR-V route (whose back end neither fuses nor says a driver may) the
    facade's ``a * b + c`` is one fma, rounded once, as numba.cuda's on a GPU; the
    portable API's rounds the product first, as Numba's CPU target."""
    def k(a, b, c, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] * b[i] + c[i]

    # (1 + 2**-12)**2 - (1 + 2**-11) is 2**-24 exactly, and 0 once the product is rounded
    a = np.array([1 + 2.0 ** -12], np.float32)
    c = np.array([-(1 + 2.0 ** -11)], np.float32)
    fused = cuda.device_array(1, np.float32)
    cuda.jit(k)[1, 1](cuda.to_device(a), cuda.to_device(a), cuda.to_device(c), fused)
    assert fused.copy_to_host()[0] == np.float32(2.0 ** -24)
    rounded = gpux.device_array(1, np.float32)
    gpux.jit(k)[1, 1](gpux.to_device(a), gpux.to_device(a), gpux.to_device(c), rounded)
    assert rounded.copy_to_host()[0] == 0


def test_semantics_values_are_checked():
    with pytest.raises(GpuxUserError, match="float_minmax"):
        Semantics(float_minmax="fast")
    with pytest.raises(GpuxUserError, match="semantics"):
        Options(semantics="numba.cuda")
    with pytest.raises(GpuxUserError, match="print_float"):
        Semantics(print_float="%d")


# ------------------------------------------------------------- float16 to integer
_HALVES = np.array([12.3, 12.5, 13.5, 12.7, -12.7, -0.5, 300.0, -300.0, np.inf, -np.inf,
                    np.nan, 65504.0], np.float16)


def _to_ints(x, i8, i32, u16, i64):
    i = cuda.grid(1)
    if i < x.size:
        i8[i] = np.int8(x[i])
        i32[i] = np.int32(x[i])
        u16[i] = np.uint16(x[i])
        i64[i] = np.int64(x[i])


def _convert(jit, x):
    n = len(x)
    outs = [cuda.device_array(n, t) for t in (np.int8, np.int32, np.uint16, np.int64)]
    jit(_to_ints)[1, n](cuda.to_device(x), *outs)
    return [o.copy_to_host() for o in outs]


@pytest.mark.needs("fp16")
def test_facade_float16_to_int_rounds_to_nearest_and_saturates(device):
    i8, i32, u16, i64 = _convert(cuda.jit, _HALVES)
    # ties to even; out of range clamps; NaN is 0 (PTX cvt.rni, as numba.cuda)
    np.testing.assert_equal(i8, [12, 12, 14, 13, -13, 0, 127, -128, 127, -128, 0, 127])
    np.testing.assert_equal(i32, [12, 12, 14, 13, -13, 0, 300, -300, 2**31 - 1, -2**31, 0,
                                  65504])
    np.testing.assert_equal(u16, [12, 12, 14, 13, 0, 0, 300, 0, 65535, 0, 0, 65504])
    np.testing.assert_equal(i64, [12, 12, 14, 13, -13, 0, 300, -300, 2**63 - 1, -2**63, 0,
                                  65504])


@pytest.mark.needs("fp16")
def test_portable_float16_to_int_truncates(device):
    inside = _HALVES[[0, 1, 2, 3, 4, 5, 6, 7, 11]]
    _, i32, _, i64 = _convert(gpux.jit, inside)
    np.testing.assert_equal(i32, inside.astype(np.int32))   # NumPy's: toward zero
    np.testing.assert_equal(i64, inside.astype(np.int64))


def _int_of_half(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = int(x[i])


@pytest.mark.needs("fp16")
def test_int_of_a_float16_converts_as_the_kernels_other_conversions(device):
    """``int(x)`` of a float16 rounds to the nearest in the facade (as numba.cuda's, whose
    int() casts as ``int32(x)`` does) and truncates in the portable API (NumPy's):
    Numba's ``int`` overload is compiled on its own, without the kernel's rules, and
    truncated in both."""
    x = np.array([1.5, 2.5, -1.5, 0.75, -0.25], np.float16)
    out = cuda.device_array(x.size, np.int64)
    cuda.jit(_int_of_half)[1, x.size](cuda.to_device(x), out)
    np.testing.assert_equal(out.copy_to_host(), [2, 2, -2, 1, 0])
    gpux.jit(_int_of_half)[1, x.size](cuda.to_device(x), out)
    np.testing.assert_equal(out.copy_to_host(), [1, 2, -1, 0, 0])


@pytest.mark.needs("fp16")
def test_abs_of_a_float16_is_a_float16(device):
    """``abs(x)`` of a float16 is a float16, so what follows rounds as half precision
    (NumPy's and numba.cuda's answer), not as float32."""
    @cuda.jit
    def k(x, out):
        out[0] = abs(x[0]) + np.float16(2.0 ** -12)

    out = cuda.device_array(1, np.float64)
    k[1, 1](cuda.to_device(np.array([-1.0], np.float16)), out)
    assert out.copy_to_host()[0] == np.float16(1.0) + np.float16(2.0 ** -12) == 1.0


@pytest.mark.needs("fp16")
def test_fp16_max_and_min_follow_cudas_hmax_and_hmin(device):
    """``cuda.fp16.hmax``/``hmin``: a NaN operand gives the other operand, and +0.0 is
    above -0.0 (CUDA's ``__hmax``/``__hmin``, which numba.cuda calls)."""
    @cuda.jit
    def k(a, b, mx, mn):
        i = cuda.grid(1)
        if i < a.size:
            mx[i] = cuda.fp16.hmax(a[i], b[i])
            mn[i] = cuda.fp16.hmin(a[i], b[i])

    a = np.array([3.0, np.nan, -0.0, 0.0, 1.0, 2.0, np.nan], np.float16)
    b = np.array([np.nan, 3.0, 0.0, -0.0, 2.0, 1.0, np.nan], np.float16)
    mx, mn = (cuda.device_array(a.size, np.float16) for _ in range(2))
    k[1, a.size](cuda.to_device(a), cuda.to_device(b), mx, mn)
    mx, mn = mx.copy_to_host(), mn.copy_to_host()
    np.testing.assert_equal(mx, [3, 3, 0, 0, 2, 2, np.nan])
    np.testing.assert_equal(np.signbit(mx[2:4]), [False, False])
    np.testing.assert_equal(mn, [3, 3, 0, 0, 1, 1, np.nan])
    np.testing.assert_equal(np.signbit(mn[2:4]), [True, True])


# ------------------------------------------------------------------------ print

@pytest.mark.feature("print")
def test_facade_prints_floats_as_numba_cuda(device, capfd):
    @cuda.jit
    def show(a):
        print(a[0], 3.0, np.float32(34.75), np.int64(-2**40), np.uint64(2**63), a[0] > 0)

    show[1, 1](cuda.to_device(np.array([1.5])))
    assert capfd.readouterr().out.splitlines() == [
        f"1.500000 3.000000 34.750000 {-2**40} {2**63} True"]


@pytest.mark.feature("print")
def test_portable_prints_floats_shortest(device, capfd):
    @gpux.jit
    def show(a):
        print(a[0], 3.0, np.float32(34.75))

    show[1, 1](gpux.to_device(np.array([1.5])))
    assert capfd.readouterr().out.splitlines() == ["1.5 3 34.75"]


def _print33(r):
    print(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12],
          r[13], r[14], r[15], r[16], r[17], r[18], r[19], r[20], r[21], r[22], r[23], r[24],
          r[25], r[26], r[27], r[28], r[29], r[30], r[31], r[32] > 0.0)


@pytest.mark.feature("print")
def test_facade_print_of_more_than_32_values_prints_its_format(device, capfd):
    k = cuda.jit(_print33)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        k[1, 1](cuda.to_device(np.arange(33, dtype=np.float64)))
    assert any(issubclass(w.category, NumbaWarning)
               and "cannot print more than 32 items" in str(w.message) for w in got)
    assert capfd.readouterr().out.splitlines() == [" ".join(["%f"] * 32 + ["%s"])]


@pytest.mark.feature("print")
def test_portable_print_of_more_than_32_values_is_an_error(device):
    with pytest.raises(Exception, match="at most 32"):
        gpux.jit(_print33)[1, 1](gpux.to_device(np.arange(33, dtype=np.float64)))


def _print_array_slice(a):
    c = a[0:3]
    print(c)


@pytest.mark.feature("print")
def test_print_of_an_array_raises_numba_cudas_not_implemented_error(device):
    # numba.cuda raises the builtin NotImplementedError for a value print() cannot take;
    # the error is also Numba's, at the line
    from numba.core.errors import NumbaError

    for jit in (cuda.jit, gpux.jit):
        with pytest.raises(NotImplementedError, match=r"not array\(uint8, 1d, C\)") as got:
            jit(_print_array_slice)[1, 1](gpux.to_device(np.arange(8, dtype=np.uint8)))
        assert isinstance(got.value, NumbaError)
        assert 'print(c)' in str(got.value)
