"""``fastmath=True`` float32 math on CUDA: libdevice's fast versions (``sin.approx.f32``
and friends), as numba.cuda's fastmath gives; without fastmath, and for float64, the
precise functions.  Other targets compute the same calls precisely."""

from __future__ import annotations

import math

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux.language.helpers import portable_math

SIG = "void(float32[::1], float32[::1])"
CASES = {  # function: PTX instruction(s) of its fast version
    "sin": ["sin.approx.f32"], "cos": ["cos.approx.f32"],
    "tan": ["sin.approx.f32", "cos.approx.f32", "div.approx.f32"],
    "exp": ["ex2.approx.f32"], "log": ["lg2.approx.f32"], "log2": ["lg2.approx.f32"],
    "log10": ["lg2.approx.f32"],
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
    assert "lg2.approx.f32" in ptx and "ex2.approx.f32" in ptx  # __nv_fast_powf
    # the device function was compiled without fastmath, float64 has no fast version
    assert ptx.count("sin.approx.f32") == 0


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
        np.testing.assert_allclose(r.copy_to_host(), want, rtol=1e-5, atol=1e-5, err_msg=fn)
