"""The OpenCL C route: kernels written as OpenCL C, built from source and run on the
real drivers (PoCL from pip, which has no SPIR-V; the Intel CPU driver through
source_device), checked against NumPy."""

from __future__ import annotations

import importlib.util
import math
import os

import numpy as np
import pytest

import numba_gpux as gpux

_spec = importlib.util.spec_from_file_location(
    "gpux_metal_kernels", os.path.join(os.path.dirname(__file__), "..", "metal", "kernels.py"))
K = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(K)


def _route_devices():
    out = []
    from gpux_testing import testable_here

    for d in gpux.devices():
        if d.target_name == "opencl-c" and testable_here(d):
            out.append(pytest.param(d, id=f"{d.spec}-{d.platform.split()[0]}"))
    spirv = [d for d in gpux.devices() if d.target_name == "opencl" and testable_here(d)]
    if spirv:
        from numba_gpux.targets.opencl_c.target import source_device

        out.append(pytest.param(source_device(spirv[0]), id=f"source-of-{spirv[0].spec}"))
    if not out:
        out.append(pytest.param(None, marks=pytest.mark.skip(reason="no OpenCL device")))
    return out


@pytest.fixture(params=_route_devices())
def cdev(request):
    from gpux_testing import selected

    with selected(request.param) as dev:
        yield dev


def test_saxpy(cdev, rng):
    x = rng.random(1000).astype(np.float32)
    y = rng.random(1000).astype(np.float32)
    out = gpux.to_device(np.zeros(1000, np.float32))
    K.saxpy[8, 128](np.float32(2.5), gpux.to_device(x), gpux.to_device(y), out)
    np.testing.assert_allclose(out.copy_to_host(), 2.5 * x + np.sin(y), rtol=1e-5)


def test_matmul_strided(cdev, rng):
    a = rng.random((13, 7)).astype(np.float32)
    b = np.asfortranarray(rng.random((7, 9)).astype(np.float32))
    c = gpux.to_device(np.zeros((13, 9), np.float32))
    K.matmul[(2, 2), (8, 8)](gpux.to_device(a), gpux.to_device(b), c)
    np.testing.assert_allclose(c.copy_to_host(), a @ b, rtol=1e-5)


def test_loops_break_continue(cdev):
    out = gpux.device_array(50, np.int64)
    K.loops[1, 64](7, out)
    want = []
    for i in range(50):
        acc = sum(range(i))
        j = 0
        while j < 7:
            if j == 3:
                j += 1
                continue
            if acc > 1000:
                break
            acc += 1
            j += 1
        want.append(acc)
    np.testing.assert_array_equal(out.copy_to_host(), want)


def test_shared_memory_and_barrier(cdev, rng):
    x = rng.random(256).astype(np.float32)
    out = gpux.to_device(np.zeros(256, np.float32))
    K.block_reverse[4, 64](gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), x.reshape(4, 64)[:, ::-1].ravel())


def test_math_helpers(cdev, rng):
    x = (rng.random(200) * 3 + 0.1).astype(np.float32)
    out = gpux.to_device(np.zeros(200, np.float32))
    K.math_f32[2, 128](gpux.to_device(x), out)
    v = x.astype(np.float64)
    want = (np.exp(v) + np.log1p(v) + np.expm1(v) + np.cbrt(v) + np.hypot(v, 2.0)
            + np.arctan2(v, 3.0) + np.fmod(v, 0.7) + np.floor(v) + np.abs(v) + v ** 2.5)
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-4)


def test_float64_and_wide_integer_closed_forms(cdev):
    if not cdev.target.has("fp64"):
        pytest.skip("device without fp64")

    @gpux.jit
    def k(n, out):
        i = gpux.grid(1)
        if i < out.size:
            s = 0
            for j in range(i * n):  # LLVM folds this sum into 65-bit arithmetic
                s += j
            out[i] = s * 0.5

    out = gpux.to_device(np.zeros(64, np.float64))
    k[1, 64](3, out)
    np.testing.assert_array_equal(out.copy_to_host(), [sum(range(i * 3)) * 0.5 for i in range(64)])


def test_source_text_has_no_goto():
    art = gpux.compile(K.loops, "void(int64, int64[::1])", target="opencl-c")
    assert art.kind == "opencl-c" and art.binary is None
    assert "__kernel void loops" in art.text and "goto" not in art.text
    assert "__global uchar*" in art.text


def test_irreducible_cfg_falls_back_to_state_machine():
    """A CFG with two entries into one cycle has no structured form: a state machine."""
    from llvmlite import binding as ll

    from numba_gpux.targets.cfamily import emit_source, get_dialect
    import numba_gpux.targets.opencl_c.target  # noqa: F401  (registers the dialect)

    ir_text = """
define void @k(ptr addrspace(1) %p, i1 %c) {
entry:
  br i1 %c, label %a, label %b
a:
  %x = phi i64 [ 0, %entry ], [ %y1, %b ]
  %x1 = add i64 %x, 1
  %t = icmp ult i64 %x1, 10
  br i1 %t, label %b, label %done
b:
  %y = phi i64 [ 100, %entry ], [ %x1, %a ]
  %y1 = add i64 %y, 2
  %u = icmp ult i64 %y1, 10
  br i1 %u, label %a, label %done
done:
  %r = phi i64 [ %x1, %a ], [ %y1, %b ]
  store i64 %r, ptr addrspace(1) %p
  ret void
}"""
    text = emit_source(ll.parse_assembly(ir_text), ("k",), get_dialect("opencl-c"), lambda n: None)
    assert "switch (_gpux_state)" in text and "goto" not in text


# -- atomics, predicates, dynamic shared memory, print and debug errors through source ------

def test_atomics_text_uses_builtins_and_cas_loops():
    from numba import float32

    @gpux.jit
    def k(a, f, u):
        i = gpux.grid(1)
        s = gpux.shared.array(4, float32)
        gpux.atomic.add(a, 0, 1)
        gpux.atomic.nanmax(f, 0, f[1])
        gpux.atomic.add(s, 0, np.float32(1))
        gpux.atomic.inc(u, 0, np.uint64(i))

    text = gpux.compile(k, "void(int32[::1], float32[::1], uint64[::1])", target="opencl-c").text
    assert "atomic_add((volatile __global int*)" in text
    # float min/max and CUDA's wrapping inc are compare-and-swap loops, one per address space
    assert "_gpux_atomic_nanmax_f32_g(" in text and "_gpux_atomic_add_f32_l(" in text
    assert "atom_cmpxchg(p, old" in text and "cl_khr_int64_base_atomics : enable" in text


def test_atomic_on_private_memory_is_a_clear_error():
    from numba import int32

    from numba_gpux.targets.cfamily import SourceEmitError

    @gpux.jit
    def k(out):
        t = gpux.local.array(2, int32)
        t[0] = 0
        gpux.atomic.add(t, 0, 1)
        out[0] = t[0]

    with pytest.raises(SourceEmitError, match="private"):
        gpux.compile(k, "void(int32[::1])", target="opencl-c")


def test_raw_atomics_use_the_atomic_definitions():
    """atomicrmw/cmpxchg written in the IR (the debug wrapper's cmpxchg) go through the
    source definitions of the matching portable intrinsics."""
    from llvmlite import binding as ll

    from numba_gpux.targets.cfamily import emit_source, get_dialect
    from numba_gpux.targets.opencl_c.target import make_target

    ir_text = """
define void @k(ptr addrspace(1) %p, ptr addrspace(1) %q, ptr addrspace(1) %f) {
entry:
  %pair = cmpxchg ptr addrspace(1) %p, i32 0, i32 1 monotonic monotonic
  %old = extractvalue { i32, i1 } %pair, 0
  %ok = extractvalue { i32, i1 } %pair, 1
  %z = zext i1 %ok to i32
  %s = add i32 %old, %z
  store i32 %s, ptr addrspace(1) %q
  %m = atomicrmw fmax ptr addrspace(1) %f, float 1.0 monotonic
  %u = atomicrmw umin ptr addrspace(1) %q, i32 7 monotonic
  %l = load atomic i32, ptr addrspace(1) %p monotonic, align 4
  ret void
}"""
    tgt = make_target()
    text = emit_source(ll.parse_assembly(ir_text), ("k",), get_dialect("opencl-c"),
                       tgt.lookup_source, tgt.features)
    assert "atomic_cmpxchg((volatile __global int*)" in text
    assert "_gpux_atomic_nanmax_f32_g(" in text  # LLVM's fmax is numpy.fmax
    assert "atomic_min((volatile __global uint*)" in text
    assert "volatile __global uint*" in text


def test_barrier_count_and_dynamic_shared(cdev):
    from numba import int32

    @gpux.jit
    def k(x, out):
        buf = gpux.shared.array(0, int32)
        t = gpux.thread_idx.x
        buf[t] = x[gpux.grid(1)]
        n = gpux.barrier_count(buf[t] > 10)
        a = gpux.barrier_and(buf[t] >= 0)
        o = gpux.barrier_or(buf[t] > 90)
        out[gpux.grid(1)] = n * 100 + a * 10 + o + buf[gpux.block_dim.x - 1 - t] * 1000

    from gpux_testing import is_pocl

    # PoCL 3.0 gives wrong predicate counts when work-groups run at once (see
    # tests/conformance/skiplist.py): one work-group there, two elsewhere
    groups = 1 if is_pocl(cdev) else 2
    x = np.arange(32 * groups, dtype=np.int32) * 3 % 100
    out = gpux.to_device(np.zeros(32 * groups, np.int32))
    k[groups, 32, 0, 32 * 4](gpux.to_device(x), out)
    xb = x.reshape(groups, 32)
    want = ((xb > 10).sum(1)[:, None] * 100 + 10 * (xb >= 0).all(1)[:, None]
            + (xb > 90).any(1)[:, None] + xb[:, ::-1] * 1000)
    np.testing.assert_array_equal(out.copy_to_host(), want.ravel())


def test_printf_format_is_a_string_literal():
    @gpux.jit
    def k(a):
        print("quote \" backslash \\ tab\t", a[0])

    text = gpux.compile(k, "void(int64[::1])", target="opencl-c").text
    assert 'printf("quote \\" backslash \\\\ tab\\t %ld\\n", (long)' in text


def test_float16_needs_the_device_feature():
    from numba_gpux.targets.opencl_c.target import make_target

    @gpux.jit
    def k(a, s):
        a[0] = a[0] * s

    with pytest.raises(gpux.errors.ValidationError, match="float16"):
        gpux.compile(k, "void(float16[::1], float16)", target=make_target(features={"fp64"}))
    text = gpux.compile(k, "void(float16[::1], float16)",
                        target=make_target(features={"fp64", "fp16"})).text
    assert "cl_khr_fp16 : enable" in text and "half " in text


def test_type_names_inside_strings_need_no_extension(cdev):
    """Whether a kernel uses float16 or float64 is read from the types of its values:
    a string that spells ``half`` or ``double`` neither fails validation on a device
    without float16 nor asks for an extension."""
    from numba_gpux.targets.opencl_c.target import make_target

    @gpux.jit
    def k(x, out):
        print("half time; double check")
        out[0] = x[0] * 2

    sig = "void(float32[::1], float32[::1])"
    text = gpux.compile(k, sig, target=make_target(features={"fp64"})).text
    assert "cl_khr_fp16" not in text and "cl_khr_fp64" not in text
    assert 'printf("half time; double check\\n")' in text
    out = gpux.to_device(np.zeros(1, np.float32))
    k[1, 1](gpux.to_device(np.full(1, 2.5, np.float32)), out)
    assert out.copy_to_host()[0] == 5.0


def test_subgroup_match_and_masked_forms(cdev):
    """The shared definitions of match_any/match_all and of the masked sub-group forms
    (IR calling the sub-group intrinsics, which the C route writes by name)."""
    if "subgroups" not in cdev.target_features:
        pytest.skip(f"{cdev.spec} has no sub-groups")
    sg = gpux.subgroup

    @gpux.jit
    def k(v, out):
        i = gpux.grid(1)
        x = v[i]
        out[i, 0] = sg.lane_id()
        out[i, 1] = sg.size()
        out[i, 2] = sg.match_any(x)
        out[i, 3] = sg.match_all(x, 0xFFFFFFFF)
        out[i, 4] = sg.shuffle_xor(x, 1, 0xFFFFFFFF)
        out[i, 5] = sg.ballot(x == 1, 0xFFFFFFFF)

    n = 64
    v = (np.arange(n) % 3).astype(np.int64)
    v[32:] = 1
    out = gpux.to_device(np.zeros((n, 6), np.int64))
    k[1, n](gpux.to_device(v), out)
    h = out.copy_to_host()
    for i in range(n):
        lane, size = int(h[i, 0]), int(h[i, 1])
        base = i - lane
        vals = v[base:base + size]
        assert h[i, 2] == sum(1 << j for j, x in enumerate(vals) if x == v[i] and j < 64)
        assert h[i, 3] == (vals == vals[0]).all()
        assert h[i, 4] == (v[base + (lane ^ 1)] if (lane ^ 1) < size else v[i])
        assert h[i, 5] == sum(1 << j for j, x in enumerate(vals) if x == 1 and j < 64)


def test_float_classification(cdev):
    # the optimizer turns such tests into llvm.is.fpclass, which the route writes with
    # OpenCL's classification builtins
    @gpux.jit(device=True)
    def zero_or_special(v):
        if v == 0.0 or not math.isfinite(v):
            return 1
        return 0

    @gpux.jit(device=True)
    def plus_inf_or_nan(v):
        if v == math.inf or math.isnan(v):
            return 1
        return 0

    @gpux.jit
    def classify(x, out):
        i = gpux.thread_idx.x
        if i < x.shape[0]:
            out[i, 0] = zero_or_special(x[i])
            out[i, 1] = plus_inf_or_nan(x[i])

    x = np.array([0.0, -0.0, 1.5, -2.0, 5e-324, math.inf, -math.inf, math.nan])
    out = gpux.to_device(np.zeros((x.size, 2), np.int32))
    classify[1, 8](gpux.to_device(x), out)
    want = np.stack([(x == 0) | ~np.isfinite(x), (x == math.inf) | np.isnan(x)],
                    axis=1).astype(np.int32)
    np.testing.assert_array_equal(out.copy_to_host(), want)


def _nan_skipping_sum(x, out, n):
    i = gpux.grid(1)
    if i < x.size:
        acc = 0.0
        for j in range(n):
            v = x[(i + j) % x.size]
            if v == 1.0:
                acc += 2.0
            elif not math.isnan(v):
                acc += v
        out[i] = acc


def test_source_has_nothing_compilers_warn_of():
    """PoCL prints clang's warnings as it builds a program: the text has no
    ``if ((a == b))`` and no ``&&``/``||`` with a constant operand (``fcmp uno %v, 0.0``
    is just ``v != v``)."""
    import re

    art = gpux.compile(_nan_skipping_sum, "void(float64[::1], float64[::1], int64)",
                       target="opencl-c")
    body = art.text[art.text.index("__kernel"):]
    assert "if (" in body and re.search(r"\(v_\w+ != v_\w+\)", body)
    assert not re.search(r"\bif \(\([^()]*\)\) \{", body)
    assert not re.search(r"(&&|\|\|) \(0x[0-9a-fp.+-]+ [!=]= 0x", body)


def test_nan_skipping_sum(cdev):
    x = np.array([1.0, math.nan, 2.5, -1.0, math.nan, 1.0, 4.0])
    out = gpux.device_array(x.size, np.float64)
    gpux.jit(_nan_skipping_sum)[1, 8](gpux.to_device(x), out, 5)
    want = [sum(2.0 if v == 1.0 else (0.0 if math.isnan(v) else v)
                for v in (x[(i + j) % x.size] for j in range(5))) for i in range(x.size)]
    np.testing.assert_allclose(out.copy_to_host(), want)



_bspec = importlib.util.spec_from_file_location(
    "gpux_barrier_exits",
    os.path.join(os.path.dirname(__file__), "..", "..", "conformance", "test_barrier_exits.py"))
_B = importlib.util.module_from_spec(_bspec)
_bspec.loader.exec_module(_B)


def test_returned_work_items_and_a_barrier(cdev, rng):
    """A kernel whose work-items past the data return before a barrier, rewritten for
    the target (numba_gpux/converge.py) and written as OpenCL C."""
    x = rng.random(100).astype(np.float32)
    out = gpux.to_device(np.zeros(100, np.float32))
    _B.pair_sums[2, _B.TPB](gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), _B._pair_sums_want(x, _B.TPB))


def test_bit_reversals_of_odd_widths(cdev):
    """InstCombine writes a bit-reversal loop of a constant count as llvm.bitreverse at
    that width (i7, i10, i20, i40): written in OpenCL C as a reversal of 32 or 64 bits
    shifted down (it was refused: "on an odd-width integer ... yet")."""
    for width in (7, 10, 20, 40):
        src = (f"def k(y):\n    i = gpux.grid(1)\n    if i < y.size:\n        r = 0\n"
               f"        v = i\n        for _ in range({width}):\n"
               f"            r = (r << 1) | (v & 1)\n            v >>= 1\n        y[i] = r\n")
        ns = {"gpux": gpux}
        exec(compile(src, f"<reverse {width}>", "exec"), ns)
        n = 1 << min(width, 10)
        y = gpux.to_device(np.zeros(n, np.int64))
        gpux.jit(ns["k"])[(n + 63) // 64, 64](y)
        want = [int(format(i, f"0{width}b")[::-1], 2) for i in range(n)]
        assert y.copy_to_host().tolist() == want, width
