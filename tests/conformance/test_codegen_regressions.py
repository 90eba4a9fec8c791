"""Kernels that once compiled to wrong code or did not compile on some route, each run
on every route here (the SPIR-V route, and the OpenCL C route of the same driver) and
checked against Numba on the CPU (or NumPy); CONFORMANCE_KERNELS puts them through
ptxas (tests/targets/cuda/test_ptxas.py) and the MSL syntax check as well.  The
differential fuzzer (tests/gpux_fuzz.py) found most of them; docs/pipeline.md,
"Back-end, driver and emitter workarounds", says where each is fixed."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from llvmlite import ir as llvm_ir
from numba.core import types
from numba.extending import intrinsic

import numba_gpux as gpux


def _routes():
    from gpux_testing import testable_here

    out = []
    for d in gpux.devices():
        if not testable_here(d):
            continue
        out.append(pytest.param(d, id=d.spec))
        if d.target_name == "opencl":
            from numba_gpux.targets.opencl_c.target import source_device

            out.append(pytest.param(source_device(d), id=f"source-of-{d.spec}"))
    if not out:
        out.append(pytest.param(None, marks=pytest.mark.skip(reason="no OpenCL device")))
    return out


@pytest.fixture(params=_routes())
def route(request):
    from gpux_testing import selected

    with selected(request.param) as dev:
        yield dev


OPTS = pytest.mark.parametrize("opt", [0, 1, 3])


def _on(route, fn, opt, *arrays, n=64):
    """Run *fn* (a kernel body taking arrays) at *opt* on *route*; arrays are copied back."""
    k = gpux.jit(opt=opt)(fn)
    dev = [gpux.to_device(a) for a in arrays]
    k[(n + 63) // 64, 64](*dev)
    return [d.copy_to_host() for d in dev]


# -- sitofp i1: (0 - int(a > b)) * x must be -x --

def negate_by_compare(g, c, e, x, out_i, out_f):
    i = gpux.grid(1)
    if i < out_i.size:
        out_i[i] = (0 - np.int64(g[i] > c[i])) * e[i]
        out_f[i] = (np.int64(x[i] > 0.0) - 1) * 2.5


@OPTS
def test_bool_to_signed_float(route, opt):
    n = 64
    g = np.arange(n, dtype=np.int64) - 32
    c = np.full(n, 3, np.int64)
    e = np.arange(n, dtype=np.int64) * 7 + 1
    x = np.linspace(-2.0, 2.0, n)
    oi, of = np.zeros(n, np.int64), np.zeros(n)
    oi, of = _on(route, negate_by_compare, opt, g, c, e, x, oi, of)[-2:]
    np.testing.assert_array_equal(oi, -(g > c).astype(np.int64) * e)
    np.testing.assert_array_equal(of, ((x > 0.0).astype(np.int64) - 1) * 2.5)


# -- a typed private array reached by byte offsets and by a 0/1 index --

@gpux.jit(device=True)
def _store_then_read(arr, c, g):
    arr[(np.int64(1) >> (c & 63)) & 7] = g
    return arr[(c & 63) & 7]


def local_array_in_device_function(c, g, h, out):
    i = gpux.grid(1)
    if i < out.size:
        arr = gpux.local.array(8, np.float64)
        for q in range(8):
            arr[q] = h[i]
        out[i] = _store_then_read(arr, c[i], g[i])


@OPTS
def test_local_array_stays_private_to_each_work_item(route, opt):
    n = 64
    c = np.arange(n, dtype=np.int64) % 3
    g = np.arange(n) + 100.0
    h = -np.arange(n, dtype=np.float64)
    out = _on(route, local_array_in_device_function, opt, c, g, h, np.zeros(n))[-1]
    want = [g[i] if (1 >> c[i]) & 7 == c[i] & 7 else h[i] for i in range(n)]
    np.testing.assert_array_equal(out, want)



def read_at_a_computed_index(x, y, out):
    i = gpux.grid(1)
    if i < out.size:
        a = gpux.local.array(16, np.float32)
        for j in range(16):
            a[j] = x[i] + np.float32(j)
        out[i] = a[np.int64(abs(y[i]) * np.float32(4)) & 15]


@OPTS
def test_private_array_read_at_a_computed_index(route, opt):
    """A private array written at constant indices and read at one computed at run
    time keeps its element type on the SPIR-V route (as bytes the Intel driver ran it
    5-7x slower than OpenCL C's ``float a[16]``): only a store at a computed index
    needs the byte array (the kernel above)."""
    n = 64
    rng = np.random.default_rng(1)
    x = rng.standard_normal(n).astype(np.float32)
    y = (rng.standard_normal(n) * 3).astype(np.float32)
    out = _on(route, read_at_a_computed_index, opt, x, y, np.zeros(n, np.float32))[-1]
    k = (np.abs(y) * np.float32(4)).astype(np.int64) & 15
    np.testing.assert_array_equal(out, x + k.astype(np.float32))
    if route.target_name == "opencl" and opt:
        art = gpux.compile(read_at_a_computed_index,
                           "void(float32[::1], float32[::1], float32[::1])", target="opencl",
                           opt=opt)
        assert "alloca [16 x float]" in art.llvm_ir, art.llvm_ir


# -- two stores at computed indices into one private array, then a read --

def two_computed_stores(b, x, out):
    i = gpux.grid(1)
    if i < out.size:
        m = gpux.local.array(8, np.int64)
        for q in range(8):
            m[q] = 63
        xv = np.int64(x[i])
        m[(xv & 1) if b[i] else 0] = 7
        m[0 if b[i] else 5] = 0
        out[i] = m[0] * 1000 + (xv & 3)


@OPTS
def test_second_computed_store_into_private_array(route, opt):
    """At opt=1 the OpenCL C route's kernel stores at ``select(x & 1, 0, !b)`` and then
    through a select of two pointers into one private array; the Intel CPU compiler
    misplaced the second store (37 of 64 wrong) while the array was declared as words
    (``ulong m[8]``).  Declared as bytes it is right."""
    n = 64
    rng = np.random.default_rng(0)
    b = rng.integers(0, 2, n).astype(np.bool_)
    x = rng.integers(0, 100, n).astype(np.uint64)
    out = _on(route, two_computed_stores, opt, b, x, np.zeros(n, np.int64))[-1]
    want = []
    for bi, xi in zip(b.tolist(), x.tolist()):
        m = [63] * 8
        m[(xi & 1) if bi else 0] = 7
        m[0 if bi else 5] = 0
        want.append(m[0] * 1000 + (xi & 3))
    np.testing.assert_array_equal(out, want)


def test_private_arrays_are_declared_as_bytes(route):
    if route.target_name != "opencl-c":
        pytest.skip("the declaration is OpenCL C source")

    sig = (types.boolean[::1], types.uint64[::1], types.int64[::1])
    text = gpux.compile(gpux.jit(opt=3)(two_computed_stores), sig, target=route).text
    assert "uchar gpux_local" in text and "__attribute__((aligned(8)))" in text, text
    assert "ulong gpux_local" not in text, text


# -- no contraction of a * b + c without fastmath --

def mul_add(v, g, d, x, y, out64, out32):
    i = gpux.grid(1)
    if i < out64.size:
        out64[i] = ((v[i] + v[i]) * g[i]) - d[i]
        out32[i] = x[i] * y[i] + x[i]


@pytest.mark.parametrize("opt", [0, 3])
def test_no_fused_multiply_add_without_fastmath(route, opt):
    rng = np.random.default_rng(7)
    n = 4096
    v, g, d = (rng.random(n) for _ in range(3))
    x, y = (rng.random(n).astype(np.float32) for _ in range(2))
    k = gpux.jit(opt=opt)(mul_add)
    o64, o32 = gpux.to_device(np.zeros(n)), gpux.to_device(np.zeros(n, np.float32))
    k[n // 64, 64](v, g, d, x, y, o64, o32)
    np.testing.assert_array_equal(o64.copy_to_host(), ((v + v) * g) - d)
    np.testing.assert_array_equal(o32.copy_to_host(), x * y + x)


def test_fastmath_source_may_contract(route):
    """With fastmath the OpenCL C route lets the compiler fuse (the IR allows it)."""
    if route.target_name != "opencl-c":
        pytest.skip("the contraction pragma is OpenCL C source")

    a64 = types.float64[::1]
    a32 = types.float32[::1]
    sig = (a64, a64, a64, a32, a32, a64, a32)
    plain = gpux.compile(mul_add, sig, target=route).text
    fast = gpux.compile(gpux.jit(fastmath=True)(mul_add), sig, target=route).text
    assert "#pragma OPENCL FP_CONTRACT OFF" in plain
    assert "#pragma OPENCL FP_CONTRACT ON" in fast


# -- intrinsics the optimizer makes: bitreverse.i1, usub.sat, odd widths --

def bool_or_minus(a, b, g, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = (np.int64(a[i]) | np.int64(b[i])) - g[i]


def saturating_sub(d, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = np.int64(1) - max(d[i] * d[i], np.uint64(1))


@OPTS
def test_bool_or_and_saturating_sub(route, opt):
    n = 64
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 2, n).astype(np.bool_), rng.integers(0, 2, n).astype(np.bool_)
    g = rng.integers(-50, 50, n)
    out = _on(route, bool_or_minus, opt, a, b, g, np.zeros(n, np.int64))[-1]
    np.testing.assert_array_equal(out, (a | b).astype(np.int64) - g)
    d = np.concatenate([np.array([0, 1, 2, 2 ** 32, 2 ** 63], np.uint64),
                        rng.integers(0, 1000, n - 5).astype(np.uint64)])
    out = _on(route, saturating_sub, opt, d, np.zeros(n))[-1]
    want = numba.njit(lambda d: np.array([np.int64(1) - max(x * x, np.uint64(1)) for x in d]))(d)
    np.testing.assert_array_equal(out, want)



# llvm.bitreverse.i1: InstCombine made it from the kernel above once; LLVM 22 no longer
# does, so the intrinsic is called directly (it survives the optimizer at every level)

@intrinsic(target="gpux")
def _bitreverse_bool(typingctx, x):
    if not isinstance(x, types.Boolean):
        return None

    def codegen(context, builder, sig, args):
        fn = builder.module.declare_intrinsic("llvm.bitreverse", [llvm_ir.IntType(1)])
        return builder.call(fn, [args[0]])
    return types.boolean(x), codegen


def bitreverse_bool(a, g, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = (np.int64(_bitreverse_bool(a[i]))
                  | np.int64(_bitreverse_bool(a[i] != (g[i] > 0)))) - g[i]


@OPTS
def test_bitreverse_of_a_bool(route, opt, monkeypatch):
    from numba_gpux import stages

    before = []
    real = stages._replace_intrinsics

    def watch(job):
        before.append(str(job.module))
        return real(job)

    monkeypatch.setattr(stages, "_replace_intrinsics", watch)
    n = 64
    a = np.arange(n) % 3 == 0
    g = np.arange(n, dtype=np.int64) - 20
    out = _on(route, bitreverse_bool, opt, a, g, np.zeros(n, np.int64))[-1]
    assert any("@llvm.bitreverse.i1(" in text for text in before)
    np.testing.assert_array_equal(out, (a.astype(np.int64) | (a != (g > 0)).astype(np.int64)) - g)


def floordiv_loop(x, out):
    i = gpux.grid(1)
    if i < out.size:
        v = x[i]
        n = 0
        while v > 1.0 and n < 10:
            v = v // 1.5
            n += 1
        out[i] = v + n


@OPTS
def test_float_floordiv_in_loop(route, opt):
    x = np.linspace(-3.0, 900.0, 64)
    out = _on(route, floordiv_loop, opt, x, np.zeros(64))[-1]
    np.testing.assert_array_equal(out, numba.njit(_floordiv_loop_ref)(x))


def _floordiv_loop_ref(x):
    out = np.zeros_like(x)
    for i in range(x.size):
        v = x[i]
        n = 0
        while v > 1.0 and n < 10:
            v = v // 1.5
            n += 1
        out[i] = v + n
    return out



# -- more of the shapes once reported as not compiling (never reproduced as kernels):
# a float // in while loops with computed trip counts (the optimizer once made 3-bit
# integers of such counters), and a clamped np.int32 cast reassigned in a loop (at
# opt=1 the Intel driver once rejected the SPIR-V) --

def _floordiv_countdown(v, k):
    n = k & 7
    while n > 0:
        v = (v * 3.0) // 2.0
        n -= 1
    return v


def _floordiv_break(v, k):
    n = 0
    while n < 5:
        n += 1
        if v // 3.0 > k:
            break
        v = v + 1.5
    return n * 10 + (v // 1.0)


def _int32_clamp_for(v, k):
    w = np.int32(min(max(v, -1000.0), 1000.0))
    for j in range(k & 7):
        w = np.int32(w * 3 + j)
    return w


def _int32_clamp_while(v, k):
    w = np.int32(min(max(v, -1048576.0), 1048576.0))
    j = 0
    while j < (k & 15):
        w = np.int32(w // 2) if w > 7 else np.int32(w + j)
        j += 1
    return w


_LOOP_BODIES = [_floordiv_countdown, _floordiv_break, _int32_clamp_for, _int32_clamp_while]


def _loop_kernel(body):
    dev = gpux.jit(device=True)(body)

    def loop_kernel(x, k, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = dev(x[i], k[i])
    return loop_kernel


def _loop_reference(body):
    f = numba.njit(body)
    return lambda x, k: np.array([f(a, b) for a, b in zip(x, k)], np.float64)


@pytest.mark.parametrize("body", _LOOP_BODIES, ids=lambda b: b.__name__.strip("_"))
@pytest.mark.parametrize("opt", [0, 1, 2, 3])
def test_float_floordiv_and_int32_clamp_loops(route, opt, body):
    n = 64
    x = np.concatenate([np.linspace(-5.0, 900.0, n - 4), [0.0, np.inf, -np.inf, 2.5]])
    k = np.arange(n, dtype=np.int64) * 7 - 100
    out = _on(route, _loop_kernel(body), opt, x, k, np.zeros(n))[-1]
    np.testing.assert_array_equal(out, _loop_reference(body)(x, k))


# -- control flow the OpenCL C emitter once could not read: a switch (LLVM 22 keeps
# switch case values out of the operand list), made by the optimizer from a nested
# while loop whose condition and continues test the same value --

def nested_while_continue(x, out):
    i = gpux.grid(1)
    if i < out.size:
        s = x[i]
        w = 0
        while w < 4:
            w += 1
            u = 0
            while u < 3 and s < 10:
                u += 1
                if s == 2:
                    continue
                s += w
                if s == 2:
                    continue
            s += u
            if s > 40:
                break
        out[i] = s


@OPTS
def test_nested_while_with_continue_and_break(route, opt):
    x = np.arange(64, dtype=np.int64) % 13 - 4
    out = _on(route, nested_while_continue, opt, x, np.zeros(64, np.int64))[-1]
    want = []
    for s in x.tolist():
        w = 0
        while w < 4:
            w += 1
            u = 0
            while u < 3 and s < 10:
                u += 1
                if s == 2:
                    continue
                s += w
                if s == 2:
                    continue
            s += u
            if s > 40:
                break
        want.append(s)
    np.testing.assert_array_equal(out, want)


CONFORMANCE_KERNELS = [
    (negate_by_compare, "void(int64[::1], int64[::1], int64[::1], float64[::1], int64[::1], "
                        "float64[::1])"),
    (local_array_in_device_function, "void(int64[::1], float64[::1], float64[::1], float64[::1])"),
    (two_computed_stores, "void(boolean[::1], uint64[::1], int64[::1])"),
    (mul_add, "void(float64[::1], float64[::1], float64[::1], float32[::1], float32[::1], "
              "float64[::1], float32[::1])"),
    (bool_or_minus, "void(boolean[::1], boolean[::1], int64[::1], int64[::1])"),
    (saturating_sub, "void(uint64[::1], float64[::1])"),
    (bitreverse_bool, "void(boolean[::1], int64[::1], int64[::1])"),
    (floordiv_loop, "void(float64[::1], float64[::1])"),
    (nested_while_continue, "void(int64[::1], int64[::1])"),
    *((_loop_kernel(b), "void(float64[::1], int64[::1], float64[::1])") for b in _LOOP_BODIES),
]


# -- odd integer widths: at opt=2 the optimizer made an i2 induction variable of the
# counter of `range(j & 3)` (fuzzer batch seed 20034); source has no 2-bit type --

def narrowed_counter(a, out):
    i = gpux.grid(1)
    if i < out.size:
        a0 = a[i]
        for j1 in range((a0 >> (a0 & 63)) & 7):
            for j6 in range(j1 & 3):
                a0 = 0 ^ j6
        out[i] = a0 // (((-a0) & 1048575) + 1)


@pytest.mark.parametrize("opt", [1, 2, 3])
def test_loop_counter_narrowed_to_two_bits(route, opt):
    a = np.concatenate([np.arange(-8, 40), np.array([-138010254934, 2 ** 40 + 5, 127, -1])])
    a = np.resize(a, 64).astype(np.int64)
    out = _on(route, narrowed_counter, opt, a, np.zeros(64, np.int64))[-1]
    np.testing.assert_array_equal(out, numba.njit(_narrowed_counter_ref)(a))


def _narrowed_counter_ref(a):
    out = np.zeros_like(a)
    for i in range(a.size):
        a0 = a[i]
        for j1 in range((a0 >> (a0 & 63)) & 7):
            for j6 in range(j1 & 3):
                a0 = 0 ^ j6
        out[i] = a0 // (((-a0) & 1048575) + 1)
    return out


@intrinsic(target="gpux")
def _five_bit_ops(typingctx, x, y):
    """Eight results of operations on the low 5 bits of *x* and *y* as signed 5-bit
    integers, each sign-extended to 64 bits (the SPIR-V route cannot represent i5)."""
    if not (isinstance(x, types.Integer) and isinstance(y, types.Integer)):
        return None
    tup = types.UniTuple(types.int64, 8)

    def codegen(context, builder, sig, args):
        i5, i64 = llvm_ir.IntType(5), llvm_ir.IntType(64)
        a, b = builder.trunc(args[0], i5), builder.trunc(args[1], i5)
        divisor = builder.or_(builder.and_(b, i5(7)), i5(1))  # 1..7
        vals = [
            builder.add(a, builder.mul(b, i5(3))),
            builder.sdiv(a, divisor),
            builder.srem(a, divisor),
            builder.ashr(a, builder.and_(b, i5(3))),
            builder.zext(builder.icmp_signed("<", a, b), i5),
            builder.shl(a, builder.and_(b, i5(3))),
            builder.sub(builder.xor(a, i5(-1)), b),
            builder.select(builder.icmp_signed(">", a, b), a, b),
        ]
        res = context.get_constant_undef(tup)
        for k, v in enumerate(vals):
            res = builder.insert_value(res, builder.sext(v, i64), k)
        return res
    return tup(x, y), codegen


def five_bit_ops(x, y, out):
    i = gpux.grid(1)
    if i < x.size:
        r = _five_bit_ops(x[i], y[i])
        for k in range(8):
            out[i, k] = r[k]


def _s5(v):
    v &= 31
    return v - 32 if v >= 16 else v


def _five_bit_ref(x, y):
    out = np.zeros((x.size, 8), np.int64)
    for i, (xa, yb) in enumerate(zip(x.tolist(), y.tolist())):
        a, b = _s5(xa), _s5(yb)
        d = (b & 7) | 1
        q = abs(a) // d * (1 if a >= 0 else -1)  # C division truncates
        out[i] = [_s5(a + 3 * b), q, a - q * d, a >> (b & 3), int(a < b),
                  _s5(a << (b & 3)), _s5(~a - b), max(a, b)]
    return out


@pytest.mark.parametrize("opt", [0, 3])
def test_odd_width_integer_arithmetic(route, opt):
    x = np.resize(np.arange(-40, 40, 3), 64).astype(np.int64)
    y = np.resize(np.arange(0, 64 * 7, 7), 64).astype(np.int64)
    out = np.zeros((64, 8), np.int64)
    if route.target_name == "opencl":  # SPIR-V without arbitrary-width integers
        with pytest.raises(gpux.errors.ValidationError, match=r"integer widths \[5\]"):
            _on(route, five_bit_ops, opt, x, y, out)
        return
    got = _on(route, five_bit_ops, opt, x, y, out)[-1]
    np.testing.assert_array_equal(got, _five_bit_ref(x, y))


CONFORMANCE_KERNELS += [
    (narrowed_counter, "void(int64[::1], int64[::1])"),
    (five_bit_ops, "void(int64[::1], int64[::1], int64[:, ::1])"),
]


# -- a loop over a tuple of structs (complex numbers, mixed tuples): at opt=0 the
# element read by the loop counter is a phi of the struct, which LLVM's SPIR-V back
# end cannot select (it aborted the process); legalize.split_aggregate_phis --

@numba.njit
def _struct_tuples_at(c, i, out):
    """Element *i*'s twelve values (a device function in the kernel, compiled from
    the same source for the CPU reference)."""
    j = i * 12
    for z in (complex(c[i], 1.0), 3 + 4j, complex(2.0, c[i])):
        out[j] = z.real
        out[j + 1] = z.imag
        j += 2
    for t in ((c[i], 1), (3.0, 4), (5.0, i)):
        out[j] = t[0]
        out[j + 1] = t[1]
        j += 2


def loop_over_struct_tuples(c, out):
    i = gpux.grid(1)
    if i < c.size:
        _struct_tuples_at(c, i, out)


@numba.njit
def _struct_ref(c, out):
    for i in range(c.size):
        _struct_tuples_at(c, i, out)


@OPTS
def test_loop_over_a_tuple_of_structs(route, opt):
    c = np.arange(64, dtype=np.float64) * 0.5
    out = _on(route, loop_over_struct_tuples, opt, c, np.zeros(64 * 12))[-1]
    want = np.zeros(64 * 12)
    _struct_ref(c, want)
    np.testing.assert_array_equal(out, want)


CONFORMANCE_KERNELS += [(loop_over_struct_tuples, "void(float64[::1], float64[::1])")]
