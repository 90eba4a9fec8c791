"""NUMBA_GPUX_VERIFY_REWRITES=1: LLVM's parser and verifier check each of the project's
IR rewrites, and one that makes invalid IR is named in an internal compiler error."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import legalize
from numba_gpux.devices import resolve_target
from numba_gpux.errors import InternalCompilerError
from numba_gpux.irverify import checked, verify_text

VALID = "define i32 @f(i32 %a) {\n  %b = add i32 %a, 1\n  ret i32 %b\n}\n"


@checked
def swap_operands_badly(text: str) -> str:
    """A rewrite that uses a value before it is defined."""
    return text.replace("%b = add i32 %a, 1", "%b = add i32 %b, 1")


@pytest.fixture
def verify_on(monkeypatch):
    monkeypatch.setenv("NUMBA_GPUX_VERIFY_REWRITES", "1")


def test_a_rewrite_that_breaks_ir_is_named(verify_on):
    with pytest.raises(InternalCompilerError, match=r"the IR rewrite "
                       r"test_verify_rewrites\.swap_operands_badly made invalid IR"):
        swap_operands_badly(VALID)


def test_switch_off_leaves_rewrites_unchecked(monkeypatch):
    monkeypatch.delenv("NUMBA_GPUX_VERIFY_REWRITES", raising=False)
    out = swap_operands_badly(VALID)
    assert verify_text(out) is not None  # invalid, and nobody looked


def test_a_fragment_that_does_not_parse_alone_is_not_checked(verify_on):
    assert swap_operands_badly("  %b = add i32 %a, 1\n") == "  %b = add i32 %b, 1\n"


@gpux.jit
def busy(a, out, bins):
    sh = gpux.shared.array(32, np.float32)
    t = gpux.thread_idx.x
    i = gpux.grid(1)
    sh[t] = a[i] * 2
    gpux.barrier()
    gpux.atomic.add(bins, i % 4, sh[31 - t])
    gpux.atomic.add(bins, (i + 1) % 4, sh[t])
    if i == 0:
        print("a ptr addrspace(1) string", out.size)
    out[i] = sh[t] + np.float32(i >> (t & 7))


SIG = "void(float32[::1], float32[::1], float32[::1])"


@pytest.mark.parametrize("route", ["opencl", "opencl-c", "cuda"])
@pytest.mark.parametrize("opt", [0, 1, 3])
def test_every_rewrite_of_every_route_verifies(verify_on, route, opt):
    assert gpux.compile(busy, SIG, target=route, opt=opt).text


def test_a_target_rewrite_that_breaks_ir_is_named(verify_on, monkeypatch):
    def breaks(text):  # drops every kernel's terminators
        return "\n".join(ln for ln in text.split("\n") if ln.strip() != "ret void")

    monkeypatch.setitem(legalize.REWRITES, "drop_returns", breaks)
    base = resolve_target("opencl")
    t = dataclasses.replace(base, ir_rewrites=base.ir_rewrites + ("drop_returns",))
    with pytest.raises(InternalCompilerError,
                       match=r"the IR rewrite legalize\.drop_returns made invalid IR"):
        gpux.compile(busy, SIG, target=t)
