"""``kernel.inspect_asm()``, ``kernel.inspect_llvm()`` and ``kernel.inspect_types()``:
numba.cuda's way to look at the code of a kernel or device function (PTX, the LLVM IR
lowered from Python, Numba's typed annotation), and the same methods on
``numba_gpux.jit`` functions (any target's code)."""

import numpy as np
import pytest
from numba import types

import numba_gpux as gpux
from numba_gpux import cuda

F32 = types.float32[::1]


def test_kernel_asm_is_ptx_for_each_signature_compiled(device):
    @cuda.jit
    def scale(a, s):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = a[i] * s

    a = cuda.to_device(np.ones(4, dtype=np.float32))
    scale[1, 4](a, np.float32(2.0))
    scale[1, 4](cuda.to_device(np.ones(4)), 3.0)
    by_sig = scale.inspect_asm()
    assert set(by_sig) == set(scale.signatures) and len(by_sig) == 2
    one = scale.inspect_asm((F32, types.float32))
    assert one == by_sig[(F32, types.float32)]
    assert ".visible .entry" in one and ".target sm_" in one
    # (numba.cuda's multiplies may fuse with an add: mul.f32, not mul.rn.f32)
    assert "mul.f32" in one and "mul.f64" in by_sig[(types.float64[::1], types.float64)]
    np.testing.assert_equal(a.copy_to_host(), [2.0] * 4)


def test_signature_strings_and_device_functions():
    @cuda.jit(device=True)
    def inc(x):
        return x + 1

    ptx = inc.inspect_asm("float32(float32)")
    assert ".func" in ptx and "add.f32" in ptx and ".entry" not in ptx
    ir = inc.inspect_llvm("float32(float32)")
    # before the optimizer: Numba adds float32 + int64 in float64, then rounds (the
    # facade's float operations may contract, as numba.cuda's under NVVM's -fma=1)
    assert "fadd contract double" in ir and "fptrunc double" in ir and "define" in ir

    @cuda.jit("void(float32[::1])")
    def k(a):
        a[0] = inc(a[0])

    ir = k.inspect_llvm("void(float32[::1])")
    # the lowered IR, before any optimizer: the entry wrapper calls the kernel body
    assert k.inspect_llvm() == {(F32,): ir}
    assert ir.count("define ") >= 2 and "call " in ir


def test_gpux_jit_asm_is_the_default_devices_code_or_the_named_targets(device):
    @gpux.jit
    def fill(a, v):
        i = gpux.grid(1)
        if i < a.size:
            a[i] = v

    fill[1, 4](gpux.to_device(np.zeros(4, dtype=np.float32)), np.float32(1.0))
    sig = (F32, types.float32)
    mine = fill.inspect_asm(sig)
    assert mine == gpux.compile(fill, "void(float32[::1], float32)", target=device).text
    assert ".visible .entry" in fill.inspect_asm(sig, target="cuda")


def test_inspecting_a_signature_that_does_not_type_raises():
    from numba.core.errors import TypingError

    @cuda.jit
    def k(a):
        a[0] = a.nope

    with pytest.raises(TypingError):
        k.inspect_asm((F32,))
    assert k.inspect_asm() == {}


def test_inspect_types_prints_each_signatures_annotation(capsys):
    import io

    @cuda.jit([(types.float32, types.int32), (types.float64, types.int64)])
    def foo(x, y):
        z = x + y  # noqa: F841 - typed in the annotation

    out = io.StringIO()
    assert foo.inspect_types(file=out) is None
    text = out.getvalue()
    assert "foo (float32, int32)" in text and "foo (float64, int64)" in text
    assert ":: float32" in text and ":: float64" in text   # the typed variables
    foo.inspect_types(signature=(types.float64, types.int64))   # to stdout, one signature
    printed = capsys.readouterr().out
    assert "foo (float64, int64)" in printed and "float32, int32" not in printed
    with pytest.raises(gpux.GpuxUserError, match="pretty"):
        foo.inspect_types(pretty=True)


def test_compile_now_and_the_overloads_views(device):
    """``kernel.compile(sig)`` (numba.cuda's and Numba's): typing, lowering and the
    current device's code now, errors included; it and ``overloads`` give one compiled
    signature with its own inspect methods."""
    @cuda.jit
    def fill(a, v):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = v

    sig = "void(float32[::1], float32)"
    ov = fill.compile(sig)
    assert fill.stats["target_compiles"] == 1  # code for the current device exists
    a = cuda.to_device(np.zeros(8, np.float32))
    fill[1, 8](a, np.float32(4))  # launches with that code
    assert fill.stats["target_compiles"] == 1 and (a.copy_to_host() == 4).all()
    assert ov.signature.args == (F32, types.float32) and ov.argtypes == ov.signature.args
    assert fill.overloads[ov.argtypes].signature == ov.signature
    assert ov.inspect_asm() == fill.inspect_asm(sig)
    assert ov.inspect_llvm() == fill.inspect_llvm(sig)
    assert ov.py_func is fill.py_func and "fill" in repr(ov)

    @cuda.jit(device=True)
    def twice(x):
        return 2 * x

    assert twice.compile("int32(int32)").signature.return_type == types.int32

    @cuda.jit
    def bad(a):
        a[0] = undefined_name  # noqa: F821

    with pytest.raises(Exception, match="undefined_name"):
        bad.compile("void(float32[::1])")
