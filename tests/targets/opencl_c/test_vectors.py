"""LLVM vector values through the C-family emitter: one scalar per lane.

Kernels using a Numba extension type whose data model is an LLVM vector (built with
``insertelement`` on ``undef``, read with ``extractelement``, carried through phis,
shuffled, added to constant vectors) run on the OpenCL C route and are checked
against NumPy; hand-written IR with what only the optimizer makes (vector loads and
stores, bit casts to and from vectors, reductions, swapped vector phis) is written as
OpenCL C and MSL, and the OpenCL C run through pyopencl on the drivers here."""

from __future__ import annotations

import functools
import importlib.util
import os

import numpy as np
import pytest
from llvmlite import ir
from numba import types
from numba.extending import intrinsic, models, register_model
from numba.np.numpy_support import from_dtype

import numba_gpux as gpux

_spec = importlib.util.spec_from_file_location(
    "gpux_opencl_c_route", os.path.join(os.path.dirname(__file__), "test_route.py"))
_R = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_R)
cdev = _R.cdev

DTYPES = [np.int32, np.int64, np.float32, np.float64]


class TestVec(types.Type):
    """An extension type modelled as the LLVM vector ``<n x scalar>``."""

    def __init__(self, n, scalar):
        self.n, self.scalar = n, scalar
        super().__init__(name=f"TestVec{n}x{scalar}")


@register_model(TestVec)
class _TestVecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, ir.VectorType(
            dmm.lookup(fe_type.scalar).get_value_type(), fe_type.n))


# (the type at module level, and no plain Python helpers in the code generators: the
# disk cache keys every library's intrinsics, and one it cannot key leaves every later
# kernel of the test process without a key)
@functools.lru_cache(maxsize=None)
def vector_ops(dtype, n: int):
    """Intrinsics on an extension type modelled as the LLVM vector ``<n x dtype>``."""
    scalar = from_dtype(np.dtype(dtype))
    floating = isinstance(scalar, types.Float)

    vec = TestVec(n, scalar)

    @intrinsic
    def make3(typingctx, a, b, c):
        def codegen(context, builder, sig, args):
            v = ir.VectorType(context.get_value_type(scalar), n)(ir.Undefined)
            for k, x in enumerate(args):
                v = builder.insert_element(v, context.cast(builder, x, sig.args[k], scalar),
                                           ir.Constant(ir.IntType(32), k))
            return v
        return vec(a, b, c), codegen

    @intrinsic
    def splat(typingctx, x):
        def codegen(context, builder, sig, args):
            vt = ir.VectorType(context.get_value_type(scalar), n)
            one = builder.insert_element(vt(ir.Undefined), context.cast(builder, args[0], sig.args[0], scalar),
                                         ir.Constant(ir.IntType(32), 0))
            return builder.shuffle_vector(one, vt(ir.Undefined),
                                          ir.Constant(ir.VectorType(ir.IntType(32), n), [0] * n))
        return vec(x), codegen

    @intrinsic
    def get(typingctx, v, i):
        def codegen(context, builder, sig, args):
            return builder.extract_element(args[0], context.cast(builder, args[1], sig.args[1], types.int32))
        return scalar(v, i), codegen

    @intrinsic
    def put(typingctx, v, i, x):
        def codegen(context, builder, sig, args):
            return builder.insert_element(args[0], context.cast(builder, args[2], sig.args[2], scalar),
                                          context.cast(builder, args[1], sig.args[1], types.int32))
        return vec(v, i, x), codegen

    @intrinsic
    def add(typingctx, v, w):
        def codegen(context, builder, sig, args):
            return (builder.fadd if floating else builder.add)(*args)
        return vec(v, w), codegen

    @intrinsic
    def rev_plus_iota(typingctx, v):
        """The lanes reversed (taken from both shuffle inputs) plus the constant <0, 1, ...>."""
        def codegen(context, builder, sig, args):
            mask = [n - 1 - k + (n if k % 2 else 0) for k in range(n)]
            r = builder.shuffle_vector(args[0], args[0],
                                       ir.Constant(ir.VectorType(ir.IntType(32), n), mask))
            iota = ir.Constant(ir.VectorType(context.get_value_type(scalar), n),
                               [float(k) if floating else k for k in range(n)])
            return (builder.fadd if floating else builder.add)(r, iota)
        return vec(v), codegen

    return make3, splat, get, put, add, rev_plus_iota


@functools.lru_cache(maxsize=None)
def vector_kernels(dtype, n: int = 4):
    make3, splat, get, put, add, rev_plus_iota = vector_ops(dtype, 3)
    _, splat_n, get_n, put_n, add_n, rev_n = vector_ops(dtype, n)

    @gpux.jit
    def loop_phi(x, out, m):
        """The vector first assigned inside a branch of the loop: a phi with an undef."""
        i = gpux.grid(1)
        if i < x.size:
            first = True
            acc = x[i] - x[i]
            for j in range(m):
                if first:
                    v = make3(x[i], j, 2)
                    first = False
                acc += get(v, 0) + get(v, 1) + get(v, 2)
                v = make3(get(v, 0) + get(v, 2), get(v, 1), get(v, 2))
            out[i] = acc

    @gpux.jit
    def dynamic_lanes(x, out, m):
        i = gpux.grid(1)
        if i < x.size:
            v = splat_n(x[i])
            for j in range(m):
                v = put_n(v, (i + j) % n, get_n(v, (i + 2 * j) % n) + get_n(v, j % n))
            s = x[i] - x[i]
            for k in range(n):
                s = get_n(v, k) - s
            out[i] = s

    @gpux.jit
    def shuffled(x, out, m):
        i = gpux.grid(1)
        if i < x.size:
            v = splat_n(x[i])
            for j in range(m):
                v = add_n(rev_n(v), splat_n(j))
            out[i] = get_n(v, i % n)

    return loop_phi, dynamic_lanes, shuffled


def _want_dynamic(x, m, n):
    out = []
    for i, xi in enumerate(x):
        v = [xi] * n
        for j in range(m):
            v[(i + j) % n] = v[(i + 2 * j) % n] + v[j % n]
        s = 0
        for k in range(n):
            s = v[k] - s
        out.append(s)
    return np.array(out, x.dtype)


def _want_shuffled(x, m, n):
    out = []
    for i, xi in enumerate(x):
        v = [xi] * n
        for j in range(m):
            v = [v[n - 1 - k] + k + j for k in range(n)]
        out.append(v[i % n])
    return np.array(out, x.dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
def test_vector_through_a_loop_phi(cdev, dtype):
    loop_phi, _, _ = vector_kernels(dtype)
    x = np.arange(-3, 13).astype(dtype)
    out = gpux.device_array(x.size, dtype)
    loop_phi[1, 16](gpux.to_device(x), out, 5)
    m = 5
    np.testing.assert_array_equal(out.copy_to_host(), (m * x + m * (m - 1) + 2 * m).astype(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda t: np.dtype(t).name)
def test_vector_lanes_at_run_time_indices(cdev, dtype):
    _, dynamic_lanes, _ = vector_kernels(dtype)
    x = np.arange(1, 17).astype(dtype)
    out = gpux.device_array(x.size, dtype)
    dynamic_lanes[1, 16](gpux.to_device(x), out, 6)
    np.testing.assert_array_equal(out.copy_to_host(), _want_dynamic(x, 6, 4))


@pytest.mark.parametrize("dtype, n", [(np.int32, 3), (np.float32, 4), (np.int64, 8),
                                      (np.float64, 16), (np.int32, 5)],
                         ids=lambda p: np.dtype(p).name if isinstance(p, type) else str(p))
def test_vector_shuffles_and_constant_vectors(cdev, dtype, n):
    _, _, shuffled = vector_kernels(dtype, n)
    x = np.arange(0, 24).astype(dtype)
    out = gpux.device_array(x.size, dtype)
    shuffled[1, 24](gpux.to_device(x), out, 7)
    np.testing.assert_array_equal(out.copy_to_host(), _want_shuffled(x, 7, n))


def test_vector_source_is_scalar_lanes():
    """The optimized IR keeps the vectors (phis of <4 x float>, shuffles); the source
    has one variable per lane and no vector type."""
    _, dynamic_lanes, shuffled = vector_kernels(np.float32, 4)
    for k in (dynamic_lanes, shuffled):
        art = gpux.compile(k, "void(float32[::1], float32[::1], int64)", target="opencl-c")
        assert "phi <4 x float>" in art.llvm_ir
        body = art.text[art.text.index("__kernel"):]
        assert "float4" not in body and "goto" not in body
        assert "_3 = " in body  # lane 3 of a vector variable is assigned
    art = gpux.compile(dynamic_lanes, "void(float32[::1], float32[::1], int64)", target="opencl-c")
    assert "extractelement <4 x float>" in art.llvm_ir and "select(" in art.text


# -- hand-written IR: what the optimizer may make of vectors ------------------------------

VECTOR_IR = """
define void @vk(ptr addrspace(1) %a, ptr addrspace(1) %o, i32 %sel) {
entry:
  %v = load <4 x float>, ptr addrspace(1) %a, align 4
  %w = fadd <4 x float> %v, splat (float 1.0)
  %r = shufflevector <4 x float> %w, <4 x float> zeroinitializer, <4 x i32> <i32 3, i32 2, i32 5, i32 poison>
  store <4 x float> %r, ptr addrspace(1) %o, align 4
  %e = extractelement <4 x float> %w, i32 %sel
  %o16 = getelementptr i8, ptr addrspace(1) %o, i64 16
  store float %e, ptr addrspace(1) %o16, align 4
  %a16 = getelementptr i8, ptr addrspace(1) %a, i64 16
  %iv = load <4 x i16>, ptr addrspace(1) %a16, align 2
  %q = bitcast <4 x i16> %iv to i64
  %q1 = add i64 %q, 1
  %u = bitcast i64 %q1 to <2 x i32>
  %c = icmp ugt <2 x i32> %u, <i32 5, i32 70000>
  %s = select <2 x i1> %c, <2 x i32> %u, <2 x i32> <i32 9, i32 8>
  %mask = bitcast <2 x i1> %c to i2
  %mz = zext i2 %mask to i32
  %sum = call i32 @llvm.vector.reduce.add.v2i32(<2 x i32> %s)
  %tot = add i32 %sum, %mz
  %o20 = getelementptr i8, ptr addrspace(1) %o, i64 20
  store i32 %tot, ptr addrspace(1) %o20, align 4
  %ins = insertelement <2 x i32> %s, i32 %sel, i32 %sel
  %o24 = getelementptr i8, ptr addrspace(1) %o, i64 24
  store <2 x i32> %ins, ptr addrspace(1) %o24, align 4
  %fi = bitcast <4 x float> %v to <4 x i32>
  %fx = extractelement <4 x i32> %fi, i64 2
  br label %loop
loop:
  %k = phi i32 [ 0, %entry ], [ %k1, %loop ]
  %x = phi <2 x i32> [ <i32 1, i32 2>, %entry ], [ %y1, %loop ]
  %y = phi <2 x i32> [ zeroinitializer, %entry ], [ %x, %loop ]
  %y1 = add <2 x i32> %y, splat (i32 10)
  %k1 = add i32 %k, 1
  %more = icmp ult i32 %k1, 3
  br i1 %more, label %loop, label %done
done:
  %o32 = getelementptr i8, ptr addrspace(1) %o, i64 32
  store <2 x i32> %x, ptr addrspace(1) %o32, align 4
  %o40 = getelementptr i8, ptr addrspace(1) %o, i64 40
  store <2 x i32> %y, ptr addrspace(1) %o40, align 4
  %o48 = getelementptr i8, ptr addrspace(1) %o, i64 48
  store i32 %fx, ptr addrspace(1) %o48, align 4
  ret void
}

declare i32 @llvm.vector.reduce.add.v2i32(<2 x i32>)
"""


def _emit(ir_text, dialect="opencl-c"):
    from llvmlite import binding as ll

    from numba_gpux.targets.cfamily import emit_source, get_dialect
    import numba_gpux.targets.metal.msl  # noqa: F401  (registers the dialects)
    import numba_gpux.targets.opencl_c.target  # noqa: F401

    return emit_source(ll.parse_assembly(ir_text), ("vk",), get_dialect(dialect), lambda n: None)


def _vector_ir_want(a_f, a_h, sel):
    w = a_f + np.float32(1)
    want = np.zeros(13, np.uint32)
    want[0:4] = np.array([w[3], w[2], 0, 0], np.float32).view(np.uint32)  # lane 3 is poison
    want[4] = np.float32(w[sel]).view(np.uint32)
    q = int(a_h.view(np.uint64)[0]) + 1
    u = [q & 0xFFFFFFFF, q >> 32]
    c = [u[0] > 5, u[1] > 70000]
    s = [u[k] if c[k] else (9, 8)[k] for k in range(2)]
    want[5] = (s[0] + s[1] + c[0] + 2 * c[1]) & 0xFFFFFFFF
    want[6:8] = [sel if sel == k else s[k] for k in range(2)]
    x, y = [1, 2], [0, 0]
    for _ in range(2):  # the loop runs three times; the last leaves by the exit
        x, y = [t + 10 for t in y], x
    want[8:10], want[10:12] = x, y
    want[12] = a_f[2:3].view(np.uint32)[0]
    return want


def test_vector_ir_written_as_lanes():
    text = _emit(VECTOR_IR)
    body = text[text.index("__kernel"):]
    assert not any(t in body for t in ("float4", "uint2", "ushort4", "bool2"))
    # a load of <4 x float> is four loads, one per lane; a run-time index selects among
    # the lanes; the swapped vector phis go through temporaries, lane by lane
    assert "v_3 = *((__global float*)(a + 12));" in body
    assert "select(w_3, w_2, (uint)(sel == 2u))" in body
    assert "x_1_in = y1_1;" in body and "y_1_in = x_1;" in body
    # the same IR as MSL: the same lanes, in Metal's spelling
    msl = _emit(VECTOR_IR, "msl")
    assert "v_3 = *((device float*)(a + 12));" in msl and "as_type<uint>(v_2)" in msl


@pytest.mark.parametrize("sel", [0, 1, 3])
def test_vector_ir_runs_on_the_drivers(cdev, sel):
    """The OpenCL C of VECTOR_IR built and run with pyopencl on the driver of *cdev*."""
    cl = pytest.importorskip("pyopencl")
    devices = [d for p in cl.get_platforms() if p.name == cdev.platform for d in p.get_devices()
               if d.name == cdev.name]
    assert devices, f"pyopencl does not list {cdev.name} of {cdev.platform}"
    text = _emit(VECTOR_IR)
    a_f = np.array([1.5, -2.0, 3.25, 8.0], np.float32)
    a_h = np.array([0xFFFF, 0xFFFF, 3, 0], np.uint16)  # the add carries across lanes
    host = np.concatenate([a_f.view(np.uint8), a_h.view(np.uint8)])
    want = _vector_ir_want(a_f, a_h, sel)
    for dev in devices:
        ctx = cl.Context([dev])
        q = cl.CommandQueue(ctx)
        prg = cl.Program(ctx, text).build()
        mf = cl.mem_flags
        a = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=host)
        res = np.zeros(13, np.uint32)
        o = cl.Buffer(ctx, mf.WRITE_ONLY | mf.COPY_HOST_PTR, hostbuf=res)
        prg.vk(q, (1,), (1,), a, o, np.uint32(sel))
        cl.enqueue_copy(q, res, o)
        q.finish()
        want[3] = res[3]  # lane 3 of the shuffle is poison: any value
        np.testing.assert_array_equal(res, want, err_msg=f"{dev.platform.name}\n{text}")


def test_vector_errors_name_the_kernel_and_the_construct():
    from numba_gpux.targets.cfamily import SourceEmitError

    ir_text = """
define void @vk(ptr addrspace(1) %p, <2 x i64> %i) {
entry:
  %ps = getelementptr i32, ptr addrspace(1) %p, <2 x i64> %i
  %q = extractelement <2 x ptr addrspace(1)> %ps, i64 1
  store i32 1, ptr addrspace(1) %q
  ret void
}"""
    with pytest.raises(SourceEmitError, match=r"kernel vk: .*vector"):
        _emit(ir_text)
    ir_text = """
define void @vk(ptr addrspace(1) %p, i32 %x) {
entry:
  %v = insertelement <2 x i32> poison, i32 %x, i64 0
  %s = call i32 @llvm.vector.reduce.mul.v2i32(<2 x i32> %v)
  %b = call <2 x i32> @llvm.masked.load.v2i32.p1(ptr addrspace(1) %p, i32 4, <2 x i1> <i1 true, i1 false>, <2 x i32> %v)
  %e = extractelement <2 x i32> %b, i64 0
  store i32 %e, ptr addrspace(1) %p
  ret void
}
declare i32 @llvm.vector.reduce.mul.v2i32(<2 x i32>)
declare <2 x i32> @llvm.masked.load.v2i32.p1(ptr addrspace(1), i32, <2 x i1>, <2 x i32>)
"""
    with pytest.raises(SourceEmitError, match=r"kernel vk: .*llvm\.masked\.load"):
        _emit(ir_text)
