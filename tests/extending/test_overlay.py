"""Per-target overlays (gpux.overlay) and typing-level extensions shared by all targets."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from numba.core import types
from numba.extending import intrinsic, overload, register_jitable

import numba_gpux as gpux
from numba_gpux import cache, extending
from numba_gpux.devices import resolve_target, targets


def _exp_kernel():
    @gpux.jit
    def k(x, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = math.exp(x[i])
    return k


X = np.array([-30.0, -12.0, -1.0, 0.0, 0.5, 2.0], dtype=np.float32)


def _run(k, x):
    d = gpux.to_device(x)
    o = gpux.device_array(x.shape, x.dtype)
    k[1, 32](d, o)
    return o.copy_to_host()


def test_python_overlay_replaces_exp_on_one_target(opencl_device):
    k = _exp_kernel()
    np.testing.assert_allclose(_run(k, X), np.exp(X), rtol=1e-6)
    argtypes = (numba.typeof(gpux.to_device(X)),) * 2
    sym, text = k.kernel_ir(argtypes)
    key0 = cache.cache_key(text, opencl_device.target, k.options)
    cuda_fp0 = resolve_target("cuda").fingerprint if "cuda" in targets() else None

    @gpux.overlay(math.exp, target="opencl")
    def flush_exp(x):            # a "fast" exp: flushes to zero below -10
        if x < -10:
            return 0.0
        return 2.0 ** (x * 1.4426950408889634)

    try:
        assert k.stats["target_compiles"] == 1
        got = _run(k, X)         # the same kernel object: recompiled, not reused
        assert k.stats["target_compiles"] == 2
        assert got[0] == 0.0 and got[1] == 0.0
        np.testing.assert_allclose(got[2:], np.exp(X[2:]), rtol=1e-5)
        key1 = cache.cache_key(text, opencl_device.target, k.options)
        assert key1 != key0 and key1 in cache._mem
        if cuda_fp0 is not None:  # other targets are untouched
            assert resolve_target("cuda").fingerprint == cuda_fp0
        # the float64 variant is overlaid too
        x64 = X.astype(np.float64)
        assert _run(_exp_kernel(), x64)[1] == 0.0
    finally:
        extending.remove_overlay(math.exp, "opencl")
    # back to the defaults: the first compiled code is valid again (same key), no compile
    assert cache.cache_key(text, opencl_device.target, k.options) == key0
    np.testing.assert_allclose(_run(k, X), np.exp(X), rtol=1e-6)
    assert k.stats["target_compiles"] == 2


def test_ir_overlay_of_an_intrinsic(opencl_device):
    ir = ("define float @__gpux_sqrt_f32(float %x) alwaysinline nounwind {\n"
          "  %r = fmul float %x, 2.000000e+00\n  ret float %r\n}")
    gpux.overlay("__gpux_sqrt_f32", target="opencl", ir=ir)
    try:
        @gpux.jit
        def k(x, out):
            i = gpux.grid(1)
            if i < out.size:
                out[i] = math.sqrt(x[i])
        x = np.array([1.0, 4.0, 9.0], np.float32)
        np.testing.assert_array_equal(_run(k, x), x * 2)
        x64 = x.astype(np.float64)          # f64 keeps the target's default
        np.testing.assert_allclose(_run(k, x64), np.sqrt(x64))
    finally:
        extending.remove_overlay("__gpux_sqrt_f32", "opencl")


def test_overlay_errors():
    with pytest.raises(gpux.GpuxUserError, match="overload"):
        gpux.overlay(np.linalg.norm, target="opencl")
    with pytest.raises(gpux.GpuxUserError, match="give ir= as a dict"):
        gpux.overlay(math.exp, target="opencl", ir="define float @x() { ret float 0.0 }")
    with pytest.raises(gpux.GpuxUserError, match="does not define @__gpux_exp_f32"):
        gpux.overlay(math.exp, target="opencl", ir={"__gpux_exp_f32": "declare float @y(float)"})
    with pytest.raises(gpux.GpuxUserError, match="not a portable intrinsic"):
        gpux.overlay("exp", target="opencl", ir="")
    with pytest.raises(gpux.GpuxUserError, match="target must be"):
        gpux.overlay(math.exp, target=3)


def clamp(x, lo, hi):
    """A host function with no device implementation of its own."""
    return min(max(x, lo), hi)


@overload(clamp, target="gpux")
def _ol_clamp(x, lo, hi):
    if isinstance(x, types.Float):
        def impl(x, lo, hi):
            if x < lo:
                return lo
            if x > hi:
                return hi
            return x
        return impl


@intrinsic(target="gpux")
def _twice(typingctx, x):
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, sig, args):
        return builder.fadd(args[0], args[0])
    return x(x), codegen


@register_jitable
def _square(x):
    return x * x


def test_typing_level_extensions_work_in_kernels(opencl_device):
    @gpux.jit
    def k(x, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = clamp(_twice(x[i]), np.float32(-1), np.float32(1)) + _square(x[i])

    x = np.linspace(-2, 2, 17).astype(np.float32)
    np.testing.assert_allclose(_run(k, x), np.clip(2 * x, -1, 1) + x * x, rtol=1e-6)


def _answer():
    raise NotImplementedError


@overload(_answer, target="gpux", inline="always")
def _answer_inline():
    def impl():
        a = gpux.local.array(1, dtype=np.float32)
        a[0] = 42.0
        return a[0]
    return impl


def _offset(x, y):
    raise NotImplementedError


@overload(_offset, target="gpux", inline=lambda expr, caller, callee: True)
def _offset_cost_model(x, y):
    def impl(x, y):
        return x + y
    return impl


def _seven():
    raise NotImplementedError


@overload(_seven, target="cuda", inline="always")   # written for numba.cuda
def _seven_for_numba_cuda():
    def impl():
        return 7
    return impl


def _three():
    raise NotImplementedError


@overload(_three, target="cuda")
def _three_for_numba_cuda():
    def impl():
        return 3
    return impl


@overload(_three, target="gpux")   # the more specific target's wins
def _three_here():
    def impl():
        return 30
    return impl


def test_inlined_overloads_and_numba_cuda_extensions(opencl_device):
    """``@overload(inline="always")`` or with a cost model is inlined at Numba's IR
    level (it reads the dispatcher's front end); numba.extending's ``target="cuda"``
    overloads, as numba.cuda code writes them, apply here too, and one for "gpux" is
    chosen over one for "cuda"."""
    @gpux.jit
    def k(out):
        out[0] = _answer()
        out[1] = _offset(out[0], np.float32(1))
        out[2] = _seven()
        out[3] = _three()

    out = gpux.to_device(np.zeros(4, np.float32))
    k[1, 1](out)
    np.testing.assert_array_equal(out.copy_to_host(), [42, 43, 7, 30])
    # Numba's CPU target does not take them
    with pytest.raises(numba.core.errors.NumbaError, match="current target"):
        numba.njit(lambda: _seven())()


def _pick(x, mode):
    return x + 1 if mode == "add" else x * 100


@overload(_pick, target="gpux")
def _ol_pick(x, mode):
    # the implementation is chosen by the literal string, as Numba's np.searchsorted's
    # by its side=: each literal gets its own implementation
    if not isinstance(mode, types.StringLiteral):
        return None
    if mode.literal_value == "add":
        return lambda x, mode: x + 1
    return lambda x, mode: x * 100


def test_an_overload_chosen_by_a_literal_argument_keeps_each_choice(opencl_device):
    @gpux.jit
    def k(out):
        out[0] = _pick(out[2], "add")
        out[1] = _pick(out[2], "mul")

    out = gpux.to_device(np.array([0.0, 0.0, 0.5]))
    k[1, 1](out)
    np.testing.assert_array_equal(out.copy_to_host(), [1.5, 50.0, 0.5])
