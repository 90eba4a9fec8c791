"""``fastmath=True`` float32 math on CUDA: libdevice's fast versions (``sin.approx.f32``
and friends), approximate division, square root and tanh, float32 denormals flushed
to zero, as numba.cuda's fastmath gives; without fastmath, and for float64, the
precise functions.  Other targets compute the same calls precisely."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux.language.helpers import portable_math

SIG = "void(float32[::1], float32[::1])"
CASES = {  # function: PTX instruction(s) of its fast version (denormals flushed)
    "sin": ["sin.approx.ftz.f32"], "cos": ["cos.approx.ftz.f32"],
    "tan": ["sin.approx.ftz.f32", "cos.approx.ftz.f32", "div.approx.ftz.f32"],
    "exp": ["ex2.approx.ftz.f32"], "log": ["lg2.approx.ftz.f32"],
    "log2": ["lg2.approx.ftz.f32"], "log10": ["lg2.approx.ftz.f32"],
}


def _kernel(fn, fastmath):
    ns = {"gpux": gpux, "math": math}
    exec(f"def k(r, x):\n    i = gpux.grid(1)\n    if i < x.size:\n"
         f"        r[i] = math.{fn}(x[i])\n", ns)
    return gpux.jit(fastmath=fastmath)(ns["k"])


@pytest.mark.parametrize("fn", sorted(CASES))
def test_fastmath_uses_the_fast_versions_and_plain_code_does_not(fn):
    fast = gpux.compile(_kernel(fn, True), SIG, target="cuda", cubin=False).text
    plain = gpux.compile(_kernel(fn, False), SIG, target="cuda", cubin=False).text
    for ins in CASES[fn]:
        assert ins in fast, fast
    assert ".approx.f32" not in plain, plain


def test_pow_and_float64_and_a_precise_device_function():
    @gpux.jit(device=True)
    def precise(x):
        return math.sin(x)

    @gpux.jit(fastmath=True)
    def k(r, x, d):
        r[0] = math.pow(x[0], x[1]) + precise(x[2])
        d[0] = math.sin(d[1])

    ptx = gpux.compile(k, "void(float32[::1], float32[::1], float64[::1])", target="cuda",
                       cubin=False).text
    assert "lg2.approx.ftz.f32" in ptx and "ex2.approx.ftz.f32" in ptx  # __nv_fast_powf
    # the device function was compiled without fastmath, float64 has no fast version
    assert ptx.count("sin.approx") == 0


def test_only_calls_whose_flags_allow_approximation_change():
    text = ("  %a = call fast float @llvm.sin.f32(float %x)\n"
            "  %b = call nnan afn float @llvm.cos.f32(float %x)\n"
            "  %c = call nnan float @llvm.exp.f32(float %x)\n"
            "  %d = call fast double @llvm.sin.f64(double %y)\n"
            "  %e = call float @llvm.sin.f32(float %x)\n"
            "declare float @llvm.sin.f32(float)\n")
    out = portable_math(text)
    assert "call fast float @__gpux_sin_f32_approx(float %x)" in out
    assert "call nnan afn float @__gpux_cos_f32_approx(float %x)" in out
    assert "call nnan float @__gpux_exp_f32(float %x)" in out
    assert "call fast double @__gpux_sin_f64(double %y)" in out
    assert "%e = call float @__gpux_sin_f32(float %x)" in out
    assert "declare float @__gpux_sin_f32_approx(float)" in out
    assert "declare float @__gpux_cos_f32_approx(float)" in out
    assert "_approx" not in portable_math(text.replace("fast", "nsz").replace("afn", "ninf"))


def test_fastmath_math_is_close_on_every_device(device):
    x = np.linspace(0.1, 3.0, 200).astype(np.float32)
    for fn in sorted(CASES):
        r = gpux.to_device(np.zeros_like(x))
        _kernel(fn, True)[2, 128](r, gpux.to_device(x))
        want = getattr(np, fn)(x.astype(np.float64))
        got = r.copy_to_host()
        # sin.approx and cos.approx are accurate to about 2**-21 absolute; tan = sin / cos
        # magnifies that by (1 + |tan|) / |cos| near its pole at pi / 2
        cond = (1 + np.abs(want)) * np.sqrt(1 + want * want) if fn == "tan" else 0 * want
        bound = 1e-5 + 1e-5 * np.abs(want) + 2.0**-20 * cond
        bad = np.abs(got - want) > bound
        assert not bad.any(), (fn, x[bad], got[bad], want[bad])


def _ptx(fn, sig, fastmath, cc=None):
    opts = {} if cc is None else {"cc": cc}
    return gpux.compile(gpux.jit(fastmath=fastmath)(fn), sig, target="cuda", cubin=False,
                        **opts).text


def _arith(r, x, y):
    i = gpux.grid(1)
    if i < x.size:
        r[i] = math.sqrt(x[i]) + x[i] / y[i] + math.exp2(y[i])


_SIG3 = "void(float32[::1], float32[::1], float32[::1])"


@pytest.mark.skipif(not hasattr(math, "exp2"), reason="math.exp2 is new in Python 3.11")
def test_fastmath_flushes_float32_denormals_as_numba_cuda_does(ptxas):
    """fastmath is NVVM's -ftz=1 -prec-div=0 -prec-sqrt=0: the .ftz forms, approximate
    division and square root, and libdevice's FTZ paths (exp2f: ex2.approx.ftz.f32);
    without fastmath none of it (exp2f: ex2.approx.f32, IEEE denormals)."""
    from numba_gpux.targets.cuda import toolkit

    fast = _ptx(_arith, _SIG3, True, cc=(9, 0))
    plain = _ptx(_arith, _SIG3, False, cc=(9, 0))
    for ins in ("sqrt.approx.ftz.f32 ", "div.approx.ftz.f32 ", "ex2.approx.ftz.f32 ",
                "add.ftz.f32 "):
        assert ins in fast, fast
    assert ".ftz." not in plain and "ex2.approx.f32 " in plain, plain
    assert "sqrt.rn.f32 " in plain and "div.rn.f32 " in plain, plain
    for ptx in (fast, plain):
        ok, messages = toolkit.ptxas_check(ptx, (9, 0))
        assert ok, messages


def test_fastmath_code_inlines_libdevice_and_device_functions():
    """Every function the module defines gets the kernel's denormal mode: LLVM would not
    inline a callee whose mode differs, and the PTX would keep calls."""
    @gpux.jit(device=True)
    def helper(x):
        return math.erf(x) * gpux.cbrt(x)

    def k(r, x):
        i = gpux.grid(1)
        if i < x.size:
            r[i] = helper(x[i]) + math.lgamma(x[i])

    for fastmath in (True, False):
        ptx = _ptx(k, SIG, fastmath)
        assert "call.uni" not in ptx and ".func " not in ptx, ptx
    assert ".ftz.f32 " in _ptx(k, SIG, True)


def test_tanh_is_the_approximate_instruction_where_the_ptx_isa_has_it():
    def k(r, x):
        r[0] = math.tanh(x[0])

    assert "tanh.approx.f32 " in _ptx(k, SIG, True, cc=(9, 0))
    assert "tanh.approx.f32 " not in _ptx(k, SIG, False, cc=(9, 0))
    # sm_75 at its default PTX ISA 6.3: no tanh.approx (it needs 7.0): libdevice's tanhf
    assert "tanh.approx" not in _ptx(k, SIG, True, cc=(7, 5))


def test_fastmath_sqrt_and_tanh_are_close_on_every_device(device):
    x = np.linspace(0.1, 3.0, 200).astype(np.float32)
    for fn in ("sqrt", "tanh"):
        r = gpux.to_device(np.zeros_like(x))
        _kernel(fn, True)[2, 128](r, gpux.to_device(x))
        want = getattr(np, fn)(x.astype(np.float64))
        np.testing.assert_allclose(r.copy_to_host(), want, rtol=2e-3, err_msg=fn)


def _hypot(r, x, y):
    i = gpux.grid(1)
    if i < x.size:
        r[i] = math.hypot(x[i], y[i])


def test_libdevice_square_roots_round_as_nvvms_do():
    # libdevice's hypotf asks __nvvm_reflect("__CUDA_PREC_SQRT"); NVVM answers 1 unless
    # -prec-sqrt=0, so numba.cuda's hypot rounds its square root (one ulp from approx)
    plain = _ptx(_hypot, _SIG3, False)
    assert "sqrt.rn.f32" in plain and "sqrt.approx" not in plain
    assert "__nvvm_reflect" not in plain
