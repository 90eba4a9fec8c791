"""What a user writes inside a string never changes what the compiler does: kernels
whose printed text spells LLVM IR (``ptr``, ``i24``, ``double``, ``@sin(``, ``half``,
``@llvm.memcpy.p0.p0.i64``) compile on every route and print exactly their text."""

from __future__ import annotations

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux.devices import resolve_target


@gpux.jit
def k1(out):
    print("pass a ptr here")
    out[0] = 1


@gpux.jit
def k2(out):
    print("pack as i24 please")
    out[0] = 2


@gpux.jit
def k3(x, out):
    print("double check")
    out[0] = x[0]


@gpux.jit
def k4(out):
    print("call @sin(x) now")
    out[0] = 4


@gpux.jit
def k5(out):
    print("half time")
    out[0] = 5


@gpux.jit
def k6(out):
    print("tail call @llvm.memcpy.p0.p0.i64")
    out[0] = 6


@gpux.jit
def k7(out):
    print('addrspace(1) define declare !dbg #0 " \\ c"x" i128 %x = @y \u00e9\u4e2d', 7)
    out[0] = 7


KERNELS = [(k1, "pass a ptr here"), (k2, "pack as i24 please"), (k3, "double check"),
           (k4, "call @sin(x) now"), (k5, "half time"),
           (k6, "tail call @llvm.memcpy.p0.p0.i64"),
           (k7, 'addrspace(1) define declare !dbg #0 " \\ c"x" i128 %x = @y \u00e9\u4e2d 7')]
IDS = [k.__name__ for k, _ in KERNELS]


def _sig(kernel):
    return "void(float32[::1], float32[::1])" if kernel is k3 else "void(float32[::1])"


@pytest.mark.parametrize("kernel,route", [pytest.param(k, r, id=f"{r}-{k.__name__}")
                                          for r in ("opencl", "opencl-c", "cuda")
                                          for k, _ in KERNELS])
def test_compiles_on_every_route(kernel, route):
    art = gpux.compile(kernel, _sig(kernel), target=route)
    assert art.text
    if route == "cuda":  # PTX: the string is data, in a global of its own
        assert "vprintf" in art.text


@pytest.mark.parametrize("kernel,text", KERNELS, ids=IDS)
def test_ptx_of_user_strings_assembles(kernel, text, ptxas):
    from numba_gpux.targets.cuda import toolkit

    art = gpux.compile(kernel, _sig(kernel), target="cuda", cubin=False)
    ok, messages = toolkit.ptxas_check(art.text, (8, 0))
    assert ok, messages


@pytest.mark.parametrize("kernel,text", KERNELS, ids=IDS)
def test_prints_exactly_the_text_on_spirv(kernel, text, opencl_device, capfd):
    out = gpux.to_device(np.zeros(1, np.float32))
    if kernel is k3:
        kernel[1, 1](gpux.to_device(np.full(1, 3.0, np.float32)), out)
    else:
        kernel[1, 1](out)
    gpux.synchronize()
    printed = capfd.readouterr().out.splitlines()
    assert printed == [text]
    assert out.copy_to_host()[0] == (3.0 if kernel is k3 else int(kernel.__name__[1]))


def test_float32_kernel_printing_double_compiles_without_fp64():
    t = resolve_target("opencl", features=frozenset())
    art = gpux.compile(k3, "void(float32[::1], float32[::1])", target=t)
    assert art.text


def test_kernel_printing_i24_meets_spirv_integer_widths():
    t = resolve_target("opencl")
    assert t.legal_int_widths
    assert gpux.compile(k2, "void(float32[::1])", target=t).text


def test_string_constant_keeps_its_bytes_in_the_ir():
    ir = gpux.compile(k6, "void(float32[::1])", target="opencl").llvm_ir
    assert 'c"tail call @llvm.memcpy.p0.p0.i64' in ir
    assert "p4.p4" not in ir.split("c\"tail call", 1)[1].split('"', 1)[0]
