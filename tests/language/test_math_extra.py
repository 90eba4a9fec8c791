"""math.frexp / math.ldexp (on the IEEE bits, every target) and complex ``**`` /
``pow``, on every available device, against NumPy."""

import math

import numpy as np
import pytest

import numba_gpux as gpux

FLOAT_TYPES = [np.float32, pytest.param(np.float64, marks=pytest.mark.needs("fp64"))]


@gpux.jit
def frexp_kernel(x, m, e):
    i = gpux.grid(1)
    if i < x.size:
        m[i], e[i] = math.frexp(x[i])


@gpux.jit
def ldexp_kernel(x, n, out):
    i = gpux.grid(1)
    if i < x.size:
        out[i] = math.ldexp(x[i], n[i])


def _specials(dt):
    fi = np.finfo(dt)
    return [0.0, -0.0, 1.0, -3.5, 1e-3, 12345.678, fi.tiny, fi.max, -fi.max,
            np.inf, -np.inf, np.nan]


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["float32", "float64"])
def test_frexp(device, dtype, rng):
    x = np.concatenate([_specials(dtype), rng.standard_normal(40) * 1e6]).astype(dtype)
    m = gpux.device_array(x.size, dtype)
    e = gpux.device_array(x.size, np.int32)
    frexp_kernel[2, 32](gpux.to_device(x), m, e)
    em, ee = np.frexp(x)
    np.testing.assert_array_equal(m.copy_to_host(), em)
    np.testing.assert_array_equal(e.copy_to_host(), ee)


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["float32", "float64"])
def test_ldexp(device, dtype, rng):
    fi = np.finfo(dtype)
    emax = fi.maxexp
    x = np.array([1.0, 1.5, -2.0, fi.max, fi.tiny, 3.0, 0.75, np.inf, np.nan, 0.0, 1.0, 1.0,
                  fi.tiny, -5.0], dtype)
    n = np.array([3, -2, 10, -5, -3, 3 * emax, -3 * emax, 4, 4, 9, emax - 1, emax, 2, -60],
                 np.int32)
    x = np.concatenate([x, rng.standard_normal(30).astype(dtype)])
    n = np.concatenate([n, rng.integers(-40, 40, 30).astype(np.int32)])
    out = gpux.device_array(x.size, dtype)
    ldexp_kernel[2, 32](gpux.to_device(x), gpux.to_device(n), out)
    np.testing.assert_array_equal(out.copy_to_host(), np.ldexp(x, n))


@pytest.mark.needs("fp64")
def test_frexp_ldexp_subnormals(device):
    # float64 subnormal inputs and results (kept by every target's float64)
    x = np.array([np.finfo(np.float64).tiny / 8, 5e-324], np.float64)
    m = gpux.device_array(2, np.float64)
    e = gpux.device_array(2, np.int32)
    frexp_kernel[1, 2](gpux.to_device(x), m, e)
    em, ee = np.frexp(x)
    np.testing.assert_array_equal(m.copy_to_host(), em)
    np.testing.assert_array_equal(e.copy_to_host(), ee)
    out = gpux.device_array(2, np.float64)
    ldexp_kernel[1, 2](gpux.to_device(np.array([1.0, 0.75])),
                       gpux.to_device(np.array([-1074, -1075], np.int32)), out)
    np.testing.assert_array_equal(out.copy_to_host(), np.ldexp([1.0, 0.75], [-1074, -1075]))


@gpux.jit
def cpow_op(r, x, y):
    i = gpux.grid(1)
    if i < r.size:
        r[i] = x[i] ** y[i]


@gpux.jit
def cpow_builtin(r, x, y):
    i = gpux.grid(1)
    if i < r.size:
        r[i] = pow(x[i], y[i])


@gpux.jit
def cpow_inplace(r, y):
    i = gpux.grid(1)
    if i < r.size:
        r[i] **= y[i]


@pytest.mark.parametrize("dtype,rtol", [
    (np.complex64, 1e-6),
    pytest.param(np.complex128, 1e-13, marks=pytest.mark.needs("fp64")),
], ids=["complex64", "complex128"])
def test_complex_pow(device, dtype, rtol, rng):
    x = (rng.random(40) - 0.5 + 1j * (rng.random(40) - 0.5)) * 4
    y = rng.random(40) * 3 - 1 + 1j * (rng.random(40) - 0.5)
    # special cases: 0 ** 0, 1j ** 1, squares, 0 ** positive, real exponents
    x = np.concatenate([x, [0j, 1j, 2 + 3j, 0j, -1 + 0j, 2j]]).astype(dtype)
    y = np.concatenate([y, [0j, 1 + 0j, 2 + 0j, 2.5 + 0j, 0.5 + 0j, -1 + 0j]]).astype(dtype)
    want = x ** y
    for kernel in (cpow_op, cpow_builtin):
        r = gpux.device_array(x.size, dtype)
        kernel[2, 32](r, gpux.to_device(x), gpux.to_device(y))
        np.testing.assert_allclose(r.copy_to_host(), want, rtol=rtol, atol=rtol)
    d = gpux.to_device(x)
    cpow_inplace[2, 32](d, gpux.to_device(y))
    np.testing.assert_allclose(d.copy_to_host(), want, rtol=rtol, atol=rtol)


def _zero_to_powers(kernel, dtype):
    w = np.array([0.5 + 1j, 3 + 2j, 1j, -1 + 0j, 2.5 + 0j, -1 + 1j, 0j, 2 + 0j], dtype)
    r = gpux.device_array(w.size, dtype)
    kernel[1, 32](r, gpux.to_device(np.zeros(w.size, dtype)), gpux.to_device(w))
    return w, r.copy_to_host()


@pytest.mark.parametrize("dtype", [np.complex64, pytest.param(np.complex128, marks=pytest.mark.needs("fp64"))],
                         ids=["complex64", "complex128"])
def test_complex_zero_to_a_power_as_numpy_or_numba_cuda(device, dtype):
    """``0j ** w``, where CPython raises: NumPy 2's values in a ``gpux.jit`` kernel, and
    numba.cuda's (its formula's) in a facade kernel."""
    from numba_gpux import cuda

    w, got = _zero_to_powers(cpow_op, dtype)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, np.zeros(w.size, dtype) ** w)
    nan = complex(np.nan, np.nan)
    _, got = _zero_to_powers(cuda.jit(cpow_op.py_func), dtype)
    np.testing.assert_array_equal(got, np.array(
        [nan, nan, 0j, complex(np.inf, np.nan), 0j, nan, 1 + 0j, 0j], dtype))


@gpux.jit
def square_op(r, x):
    i = gpux.grid(1)
    if i < r.size:
        r[i] = x[i] ** 2


@pytest.mark.parametrize("dtype", [np.complex64, pytest.param(np.complex128, marks=pytest.mark.needs("fp64"))],
                         ids=["complex64", "complex128"])
def test_a_complex_square_multiplies_or_takes_numba_cuda_s_formula(device, dtype):
    """``z ** 2``: ``z * z`` in a ``gpux.jit`` kernel (Numba's CPU target), numba.cuda's
    polar formula in a facade kernel, as for every other power."""
    from numba_gpux import cuda

    x = np.array([1j, 1 + 1j, -2 + 0.5j, 3 + 0j], dtype)
    r = gpux.device_array(x.size, dtype)
    square_op[1, 32](r, gpux.to_device(x))
    np.testing.assert_array_equal(r.copy_to_host(), x * x)
    cuda.jit(square_op.py_func)[1, 32](r, gpux.to_device(x))
    got = r.copy_to_host()
    # the formula: |z| ** 2 and twice the phase; 1j ** 2 keeps sin(pi)'s 1.22e-16
    ft = np.float32 if dtype == np.complex64 else np.float64
    mag = np.hypot(x.real.astype(ft), x.imag.astype(ft)) ** 2
    ph = np.arctan2(x.imag.astype(ft), x.real.astype(ft)) * ft(2)
    tol = 1e-6 if dtype == np.complex64 else 1e-14
    np.testing.assert_allclose(got, mag * (np.cos(ph) + 1j * np.sin(ph)), rtol=tol, atol=tol)
    assert got[0].imag != 0 and abs(got[0].imag) < 1e-6


@gpux.jit
def remainder_kernel(a, b, out):
    i = gpux.grid(1)
    if i < a.size:
        out[i] = math.remainder(a[i], b[i])


@gpux.jit
def nextafter_kernel(a, b, out):
    i = gpux.grid(1)
    if i < a.size:
        out[i] = math.nextafter(a[i], b[i])


@gpux.jit
def modf_kernel(a, frac, whole):
    i = gpux.grid(1)
    if i < a.size:
        frac[i], whole[i] = math.modf(a[i])


def _pairs(dtype, rng):
    a = np.concatenate([rng.standard_normal(40) * 10,
                        [5.0, 7.0, -5.0, 3.0, np.inf, 1.0, np.nan, 0.0, -0.0, 4.5, 2.5]])
    b = np.concatenate([rng.standard_normal(40),
                        [2.0, 2.0, 2.0, np.inf, 1.0, 0.0, 1.0, 1.0, -1.0, 1.0, -np.inf]])
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["float32", "float64"])
def test_remainder(device, dtype, rng):
    a, b = _pairs(dtype, rng)
    out = gpux.device_array(a.size, dtype)
    remainder_kernel[2, 32](gpux.to_device(a), gpux.to_device(b), out)
    # Python's math.remainder, with NaN where it raises (y == 0, infinite x)
    want = np.array([math.remainder(x, y) if y != 0 and not math.isinf(x) else np.nan
                     for x, y in zip(a.tolist(), b.tolist())], dtype)
    np.testing.assert_array_equal(out.copy_to_host(), want)


@pytest.mark.needs("fp64")
def test_remainder_of_integers_is_float64(device):
    @gpux.jit
    def on_ints(r, x, y):
        r[0] = math.remainder(x, y)
        r[1] = math.remainder(y, x)

    r = gpux.device_array(2, np.float64)
    on_ints[1, 1](r, 7, 2)
    np.testing.assert_array_equal(r.copy_to_host(), [-1.0, 2.0])
    on_ints[1, 1](r, 0, 0)
    assert np.isnan(r.copy_to_host()).all()


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["float32", "float64"])
def test_nextafter(device, dtype, rng):
    a, b = _pairs(dtype, rng)
    out = gpux.device_array(a.size, dtype)
    nextafter_kernel[2, 32](gpux.to_device(a), gpux.to_device(b), out)
    np.testing.assert_array_equal(out.copy_to_host(), np.nextafter(a, b))


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["float32", "float64"])
def test_modf(device, dtype, rng):
    a, _ = _pairs(dtype, rng)
    a = np.concatenate([a, [-np.inf, -3.0, 1e30]]).astype(dtype)
    frac = gpux.device_array(a.size, dtype)
    whole = gpux.device_array(a.size, dtype)
    modf_kernel[2, 32](gpux.to_device(a), frac, whole)
    want_frac, want_whole = np.modf(a)
    got_frac = frac.copy_to_host()
    np.testing.assert_array_equal(got_frac, want_frac)
    np.testing.assert_array_equal(whole.copy_to_host(), want_whole)
    np.testing.assert_array_equal(np.signbit(got_frac), np.signbit(want_frac))


@pytest.mark.parametrize("value, ndigits", [(0.3425, 3), (2.5, 0), (3.5, 0), (1234.5, -1),
                                             (-0.0625, 3), (1e-30, 33), (12345.678, 40)])
def test_round_float32_to_digits_as_python_rounds_its_value(device, value, ndigits):
    @gpux.jit("void(float32[::1], float32, int32)")
    def k(out, x, n):
        out[0] = round(x, n)

    out = gpux.to_device(np.zeros(1, np.float32))
    k[1, 1](out, np.float32(value), ndigits)
    want = np.float32(round(float(np.float32(value)), ndigits))
    assert out.copy_to_host()[0] == want


# -- a float's %, // and divmod: Numba computes them with LLVM's frem, which the kernel
# language turns into the portable fmod (each target's device fmod)

@gpux.jit
def py_mod_kernel(a, b, r, q, r2, q2):
    i = gpux.grid(1)
    if i < a.size:
        r[i] = a[i] % b[i]
        q[i] = a[i] // b[i]
        q2[i], r2[i] = divmod(a[i], b[i])


def _mod_pairs(dtype, rng):
    fi = np.finfo(dtype)
    a = np.concatenate([rng.uniform(-100, 100, 40),
                        [1e20, -1e20, 1e20, fi.max, -fi.max, fi.tiny * 3, -0.0, 0.0, 7.5, -7.5,
                         np.inf, 5.0, np.nan, 5.0, 12345.678, -12345.678]])
    b = np.concatenate([rng.uniform(-9, 9, 40),
                        [3.0, 3.0, -7.0, 3.0, 0.1, fi.tiny, 3.0, -3.0, np.inf, np.inf,
                         2.0, np.nan, 2.0, 0.0, -0.25, 1e-3]])
    return a.astype(dtype), b.astype(dtype)


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["float32", "float64"])
def test_float_mod_floordiv_and_divmod_as_numpy(device, dtype, rng):
    """Python's float ``%``, ``//`` and ``divmod`` in a kernel give NumPy's values (NaN
    where Python raises, for a zero divisor), exact where the quotient is large
    (``1e20 % 3.0``: an expansion as ``x - y * trunc(x / y)`` is not)."""
    a, b = _mod_pairs(dtype, rng)
    outs = [gpux.device_array(a.size, dtype) for _ in range(4)]
    py_mod_kernel[2, 32](gpux.to_device(a), gpux.to_device(b), *outs)
    r, q, r2, q2 = (o.copy_to_host() for o in outs)
    with np.errstate(all="ignore"):
        want_q, want_r = np.divmod(a, b)
    np.testing.assert_array_equal(r, want_r)
    np.testing.assert_array_equal(r2, want_r)
    np.testing.assert_array_equal(q, want_q)
    np.testing.assert_array_equal(q2, want_q)
    if dtype == np.float64:
        assert r[40] == 1e20 % 3.0 == 1.0


@pytest.mark.parametrize("target", ["opencl", "cuda", "opencl-c"])
def test_a_float_remainder_is_the_targets_fmod(target):
    """No ``frem`` reaches a target: the neutral module calls the portable fmod, which
    the OpenCL target calls as OpenCL's ``fmod`` builtin (a driver vectorizes it; its
    ``OpFRem`` ran as a library call per lane) and CUDA's is libdevice's exact one (its
    back end's expansion of ``frem`` divides and truncates)."""
    kw = {"cubin": False} if target == "cuda" else {}
    art = gpux.compile(py_mod_kernel.py_func, "void(" + ", ".join(["float64[::1]"] * 6) + ")",
                       target=target, **kw)
    body = art.llvm_ir[art.llvm_ir.index("define "):]
    assert " frem " not in body, body
    if target == "opencl":
        assert "@_Z4fmoddd(" in body, body
    if target == "cuda":
        assert "cvt.rzi" not in art.text, art.text


def test_frem_rewrite_reads_instructions_not_strings():
    """The rewrite changes ``frem`` instructions (with flags, attachments) and nothing a
    user's string spells; the module it leaves parses and verifies."""
    import llvmlite.binding as ll

    from numba_gpux.language.helpers import portable_math

    text = "\n".join([
        '@s = internal constant [29 x i8] c"%r = frem double %a, %b\\0A\\00\\00\\00\\00\\00"',
        "define double @f(double %a, double %b, float %c, <2 x float> %v) {",
        "entry:",
        "  %r = frem double %a, %b",
        "  %s = frem fast float %c, 2.000000e+00, !dbg !3",
        "  %w = frem <2 x float> %v, %v",
        "  %t = fpext float %s to double",
        "  %u = fadd double %r, %t",
        "  ret double %u",
        "}",
        "!llvm.module.flags = !{!0}",
        '!0 = !{i32 2, !"Debug Info Version", i32 3}',
        "!1 = distinct !DISubprogram(name: \"f\", scope: !2, file: !2, unit: !4)",
        '!2 = !DIFile(filename: "k.py", directory: "/")',
        "!3 = !DILocation(line: 1, scope: !1)",
        "!4 = distinct !DICompileUnit(language: DW_LANG_Python, file: !2, "
        "producer: \"t\", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)",
    ])
    out = portable_math(text)
    assert 'c"%r = frem double %a, %b' in out
    assert "%r = call double @__gpux_fmod_f64(double %a, double %b)" in out
    assert "%s = call fast float @__gpux_fmod_f32(float %c, float 2.000000e+00), !dbg !3" in out
    assert "%w = frem <2 x float> %v, %v" in out  # vectors are left to the back end
    m = ll.parse_assembly(out)
    m.verify()
    assert {f.name for f in m.functions if f.is_declaration} == {"__gpux_fmod_f32",
                                                                  "__gpux_fmod_f64"}


@gpux.jit(device=True)
def _np_norm(a, b):
    return np.sqrt(a * a + b * b)


@gpux.jit
def math_and_numpy_of_one_function(x, z, r, c):
    # math.F and np.F of one float type reach one portable intrinsic two ways (the
    # kernel language's math call, and Numba's NumPy lowering calling libm's name)
    r[0] = math.sqrt(x[0]) + np.sqrt(x[1])
    r[1] = math.sqrt(x[0]) + _np_norm(x[0], x[1])
    r[2] = math.exp(x[0]) + np.exp(np.float32(x[1]))
    r[3] = math.sin(np.float32(x[0])) + np.sin(np.float32(x[1]))
    c[0] = np.exp(z[0]) + np.exp(x[0])
    c[1] = np.log(z[0]) + math.log(x[1])


@pytest.mark.needs("fp64")
def test_math_and_numpy_calls_of_one_function_in_one_kernel(device):
    x, z = np.array([0.5, 2.25]), np.array([0.375 + 1.0j])
    r, c = gpux.device_array(4), gpux.device_array(2, np.complex128)
    math_and_numpy_of_one_function[1, 1](gpux.to_device(x), gpux.to_device(z), r, c)
    f32 = np.float32
    want = [math.sqrt(0.5) + math.sqrt(2.25), math.sqrt(0.5) + math.sqrt(0.5 ** 2 + 2.25 ** 2),
            math.exp(0.5) + float(np.exp(f32(2.25))), float(np.sin(f32(0.5)) + np.sin(f32(2.25)))]
    np.testing.assert_allclose(r.copy_to_host(), want, rtol=1e-6)
    np.testing.assert_allclose(c.copy_to_host(), [np.exp(z[0]) + np.exp(0.5),
                                                  np.log(z[0]) + math.log(2.25)], rtol=1e-14)


@gpux.jit
def np_cbrt_kernel(x, out, arr_out):
    i = gpux.grid(1)
    if i < x.size:
        out[i] = np.cbrt(x[i])
    if i == 0:
        np.cbrt(x, arr_out)


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["float32", "float64"])
def test_np_cbrt_as_numpy_signed_zeros_included(device, dtype):
    fi = np.finfo(dtype)
    x = np.array([-0.0, 0.0, -8.0, 27.0, 0.001, -2.0, np.nan, np.inf, -np.inf, fi.tiny / 4,
                  -fi.max, fi.max], dtype)
    out, arr = gpux.device_array(x.size, dtype), gpux.device_array(x.size, dtype)
    np_cbrt_kernel[1, 32](gpux.to_device(x), out, arr)
    for got in (out.copy_to_host(), arr.copy_to_host()):
        np.testing.assert_allclose(got, np.cbrt(x), rtol=4 * fi.eps, atol=0)
        assert list(np.signbit(got)) == list(np.signbit(np.cbrt(x)))


@gpux.jit
def np_next_kernel(a, b, nxt, spc):
    i = gpux.grid(1)
    if i < a.size:
        nxt[i] = np.nextafter(a[i], b[i])
        spc[i] = np.spacing(a[i])


@pytest.mark.parametrize("dtype", FLOAT_TYPES, ids=["float32", "float64"])
def test_np_nextafter_and_spacing_as_numbas(device, dtype):
    """np.nextafter and np.spacing (Numba's loops call its C helper numba_nextafter,
    which the device gets from the kernel language's math.nextafter): NumPy's values,
    but np.spacing(-0.0), which Numba computes as nextafter(-0.0, -inf) - -0.0."""
    fi = np.finfo(dtype)
    a = np.array([1.0, -1.0, 0.0, 3.5, fi.max, fi.tiny, np.nan, np.inf, -2.0], dtype)
    b = np.array([2.0, -5.0, -1.0, 3.5, np.inf, 0.0, 1.0, 0.0, np.nan], dtype)
    nxt, spc = gpux.device_array(a.size, dtype), gpux.device_array(a.size, dtype)
    np_next_kernel[1, 32](gpux.to_device(a), gpux.to_device(b), nxt, spc)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(nxt.copy_to_host(), np.nextafter(a, b))
        np.testing.assert_array_equal(spc.copy_to_host(), np.spacing(a))


def _constant_powers(x, a, b, c, d):
    i = gpux.grid(1)
    if i < x.size:
        a[i] = x[i] ** 2.0
        b[i] = x[i] ** 0.5
        c[i] = math.pow(x[i], 0.5)
        d[i] = np.power(np.float32(x[i]), np.float32(2.0))


@pytest.mark.needs("fp64")
@pytest.mark.parametrize("fastmath", [False, True], ids=["exact", "fastmath"])
def test_powers_of_two_and_one_half_are_a_multiply_and_a_square_root(device, fastmath):
    """``x ** 2.0`` is ``x * x`` and ``x ** 0.5`` the square root, with pow's values at
    -0.0 (+0.0) and -inf (+inf): no call of the device's pow (LLVM folds ``llvm.pow``
    so on a CPU; the portable pow is opaque to it, and a device's pow is far slower)."""
    from numba.core import sigutils

    kernel = gpux.jit(_constant_powers, fastmath=fastmath)
    sig = "void(float64[::1], float64[::1], float64[::1], float64[::1], float32[::1])"
    _, text = kernel.kernel_ir(tuple(sigutils.normalize_signature(sig)[0]))
    assert not [ln for ln in text.splitlines() if " call " in ln and "@__gpux_pow_f" in ln], text
    x = np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, -2.0, 3.0, 1e-310, 1e200, -1e200, 2.25])
    outs = [gpux.device_array(x.size) for _ in range(3)] + [gpux.device_array(x.size, np.float32)]
    kernel[1, 32](gpux.to_device(x), *outs)
    half = np.where(x == -np.inf, np.inf, np.abs(np.sqrt(x)))  # C's pow(x, 0.5)
    with np.errstate(all="ignore"):
        x32 = x.astype(np.float32)
        wants = [x * x, half, half, x32 * x32]
    for out, want in zip(outs, wants):
        got = out.copy_to_host()
        np.testing.assert_array_equal(got, want)
        if not fastmath:  # (fastmath allows either zero)
            assert list(np.signbit(got)) == list(np.signbit(want))


@pytest.mark.parametrize("ta, tb", [(np.int64, np.int64), (np.int32, np.uint32),
                                    (np.int8, np.int16)])
def test_gcd_of_integers_as_python(device, ta, tb):
    @gpux.jit
    def k(a, b, out):
        for i in range(a.size):
            out[i] = math.gcd(a[i], b[i])

    a = np.array([12, -18, 0, 0, 7, -64, 127, 96], ta)
    b = np.array([18, 12, 5, 0, 13, 6, 127, 40], tb)
    out = gpux.to_device(np.zeros(a.size, np.int64))
    k[1, 1](gpux.to_device(a), gpux.to_device(b), out)
    np.testing.assert_array_equal(out.copy_to_host(),
                                  [math.gcd(int(x), int(y)) for x, y in zip(a, b)])
