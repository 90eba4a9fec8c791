"""The IR rewrites for back ends that mistranslate valid IR (numba_gpux/legalize.py):
each rewrite on its smallest IR, and what reaches LLVM's SPIR-V back end."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest
from llvmlite import binding as ll

import numba_gpux as gpux
from numba_gpux import irlex, irtext, legalize
from numba_gpux.legalize_bits import widen_bitreverse
from numba_gpux.targets.opencl.target import make_target

SITOFP = """
define void @k(ptr addrspace(1) %out, i32 %x) {
  %c = icmp sgt i32 %x, 0
  %f = sitofp i1 %c to double
  %g = sitofp i32 %x to float
  store double %f, ptr addrspace(1) %out
  ret void
}
"""

ALLOCA = """
define double @k(i64 %i, i1 %c, double %x) {
  %a = alloca [8 x double], align 8
  %b = alloca [2 x [3 x i32]]
  %s = alloca { i64, double }, align 8
  %p = getelementptr double, ptr %a, i64 %i
  store double %x, ptr %p, align 8
  %v = load double, ptr %p, align 8
  %bk = getelementptr [3 x i32], ptr %b, i64 %i, i64 1
  store i32 1, ptr %bk, align 4
  %t = alloca [4 x float], align 4
  %t1 = getelementptr inbounds nuw i8, ptr %t, i64 4
  store float 1.0, ptr %t1, align 4
  %t2 = getelementptr inbounds nuw i8, ptr %t, i64 12
  store float 2.0, ptr %t2, align 4
  %tk = getelementptr float, ptr %t, i64 %i
  %tv = load float, ptr %tk, align 4
  %u = alloca [4 x float], align 4
  %u1 = getelementptr inbounds i8, ptr %u, i64 4
  %uk = getelementptr float, ptr %u1, i64 %i
  store float 3.0, ptr %uk, align 4
  %w = alloca [4 x float], align 4
  %w1 = getelementptr inbounds i8, ptr %w, i64 2
  store float 3.0, ptr %w1, align 2
  %y = alloca [4 x float], align 4
  %y1 = getelementptr inbounds i8, ptr %y, i64 4
  %yp = select i1 %c, ptr %y, ptr %y1
  store float 3.0, ptr %yp, align 4
  %z = alloca [4 x float], align 4
  %zk = getelementptr inbounds i8, ptr %z, i64 %i
  %zv = load float, ptr %zk, align 4
  %tvd = fpext float %tv to double
  %r = fadd double %v, %tvd
  ret double %r
}
"""


def test_sitofp_of_a_bool_becomes_a_select_of_minus_one():
    out = legalize.sitofp_i1(SITOFP)
    assert "select i1 %c, double -1.000000e+00, double 0.000000e+00" in out
    assert "sitofp i32 %x to float" in out  # other conversions stay
    ll.parse_assembly(out).verify()


def test_array_allocas_become_byte_arrays_of_the_same_size_and_alignment():
    """A private array stored to at an index known at run time (the driver's fault), or
    reached through pointers the rewrite does not follow (a select), a byte offset that
    is not a whole element or one computed at run time, becomes bytes; one only read at
    such an index keeps its type, its constant byte offsets written as element indices
    (as bytes it runs 5-7x slower on the Intel driver)."""
    out = legalize.byte_allocas(ALLOCA)
    assert "%a = alloca [64 x i8], align 8" in out
    assert "%b = alloca [24 x i8], align 4" in out  # natural alignment made explicit
    assert "%s = alloca { i64, double }, align 8" in out  # structs stay
    assert "%t = alloca [4 x float], align 4" in out
    assert "%t1 = getelementptr inbounds nuw float, ptr %t, i64 1" in out
    assert "%t2 = getelementptr inbounds nuw float, ptr %t, i64 3" in out
    for name in "uwyz":  # a store at a run-time index through a derived pointer, ...
        assert f"%{name} = alloca [16 x i8], align 4" in out, name
    assert "%u1 = getelementptr inbounds i8, ptr %u, i64 4" in out  # (left as it was)
    ll.parse_assembly(out).verify()


SELECTS = """
@msg = private constant [21 x i8] c"select i1 %a, i1 true"
define i32 @k(i64 %i, i64 %n, <2 x i1> %va, <2 x i1> %vb, i32 %x, i32 %y) {
  %c0 = icmp sgt i64 %i, 0
  %c1 = icmp slt i64 %i, %n
  %both = select i1 %c0, i1 %c1, i1 false, !prof !0, !annotation !1
  %either = select i1 %c0, i1 true, i1 %c1
  %pick = select i1 %c0, i1 %c1, i1 %both
  %vec = select <2 x i1> %va, <2 x i1> %vb, <2 x i1> zeroinitializer
  %v = select i1 %either, i32 %x, i32 %y
  %w = select i1 %pick, i32 %v, i32 0
  ret i32 %w
}
!0 = !{!"branch_weights", i32 1, i32 2}
!1 = !{!"kept"}
"""


def test_logical_selects_become_and_and_or():
    out = legalize.logical_selects(SELECTS)
    assert "%both = and i1 %c0, %c1, !annotation !1" in out  # branch weights go
    assert "%either = or i1 %c0, %c1" in out
    # a select between two conditions, vectors of bools and non-bool values stay
    for kept in ("%pick = select i1 %c0, i1 %c1, i1 %both",
                 "%vec = select <2 x i1> %va, <2 x i1> %vb", "%v = select i1 %either, i32",
                 'c"select i1 %a, i1 true"'):
        assert kept in out, out
    ll.parse_assembly(out).verify()
    for c0 in (False, True):  # the same truth table as the selects
        for c1 in (False, True):
            assert (c0 and c1) == (c1 if c0 else False)
            assert (c0 or c1) == (True if c0 else c1)


BOOL_BITS = """
define i1 @k(<4 x i1> %v, <2 x i1> %w, <8 x i1> %e, <4 x i1> %z) {
  %any = bitcast <4 x i1> %v to i4
  %found = icmp ne i4 %any, 0
  %all = icmp eq i4 %any, -1
  %b = bitcast <2 x i1> %w to i2, !dbg !3
  %second = icmp eq i2 %b, -2, !dbg !3
  %byte = bitcast <8 x i1> %e to i8
  %eight = icmp ne i8 %byte, 0
  %kept = bitcast <4 x i1> %z to i4
  %sum = add i4 %kept, 1
  %t = icmp ult i4 %sum, 3
  %r0 = and i1 %found, %all
  %r1 = and i1 %second, %eight
  %r2 = and i1 %r0, %r1
  %r = and i1 %r2, %t
  ret i1 %r
}
!llvm.module.flags = !{!0}
!llvm.dbg.cu = !{!1}
!0 = !{i32 2, !"Debug Info Version", i32 3}
!1 = distinct !DICompileUnit(language: DW_LANG_Python, file: !2, emissionKind: LineTablesOnly)
!2 = !DIFile(filename: "k.py", directory: "/")
!3 = !DILocation(line: 1, scope: !4)
!4 = distinct !DISubprogram(name: "k", scope: !2, file: !2, line: 1, unit: !1, spFlags: DISPFlagDefinition)
"""


def test_any_and_all_of_bool_vectors_are_tested_on_legal_widths():
    out = legalize.bool_vector_bits(BOOL_BITS)
    assert "%any.bytes = zext <4 x i1> %v to <4 x i8>" in out
    assert "%any.wide = bitcast <4 x i8> %any.bytes to i32" in out
    assert "%found = icmp ne i32 %any.wide, 0" in out
    assert "%all = icmp eq i32 %any.wide, 16843009" in out  # byte k = bit k: 0x01010101
    assert "%b.wide = bitcast <2 x i8> %b.bytes to i16, !dbg !3" in out
    assert "%second = icmp eq i16 %b.wide, 256, !dbg !3" in out  # i2 -2 is 0b10
    # a legal width stays, and so does an odd one with a use that is not such a test
    assert "%byte = bitcast <8 x i1> %e to i8" in out
    assert "%kept = bitcast <4 x i1> %z to i4" in out and "%sum = add i4 %kept, 1" in out
    ll.parse_assembly(out).verify()
    # the same truth tables: the i4 equals c exactly when its bytes equal c's bytes
    for bits in range(16):
        wide = sum(1 << (8 * k) for k in range(4) if bits >> k & 1)
        for c in range(16):
            cw = sum(1 << (8 * k) for k in range(4) if c >> k & 1)
            assert (bits == c) == (wide == cw)


def test_a_flag_set_in_a_loop_compiles_and_matches_numpy(opencl_device):
    """A kernel that sets a flag in a loop of a run-time trip count (the any() of a row):
    the loop vectorizer's any-of reduction reached validation as an i4 on OpenCL."""
    import importlib.util
    import os

    spec = importlib.util.spec_from_file_location(
        "gpux_cuda_test_kernels",
        os.path.join(os.path.dirname(__file__), "..", "targets", "cuda", "kernels.py"))
    kernels = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kernels)
    any_row = kernels.any_in_row

    @gpux.jit
    def all_row(d, out):
        i = gpux.grid(1)
        every = True
        for j in range(d.shape[1]):
            if d[i, j] == 0:
                every = False
        out[i] = every

    rng = np.random.default_rng(5)
    for cols in (1, 2, 3, 4, 5, 8, 9, 31, 100):
        x = (rng.random((64, cols)) < 0.03).astype(np.int8)
        got = gpux.to_device(np.zeros(64, np.int8), device=opencl_device)
        any_row[1, 64](gpux.to_device(x, device=opencl_device), got)
        assert np.array_equal(got.copy_to_host(), x.any(1)), cols
        all_row[1, 64](gpux.to_device(1 - x, device=opencl_device), got)
        assert np.array_equal(got.copy_to_host(), (1 - x).all(1)), cols


def test_opencl_lists_its_rewrites_and_they_exist():
    names = make_target().ir_rewrites
    assert names and set(names) <= set(legalize.REWRITES)


def _kernel(x, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = (np.int64(x[i] > 0.0) - 1) * 2.5


def test_spirv_of_bool_to_float_has_no_signed_conversion_of_a_0_1_select(spirv_val, tmp_path):
    from numba import types

    art = gpux.compile(_kernel, (types.float64[::1], types.float64[::1]), target="opencl")
    assert "sitofp i1" not in art.llvm_ir
    path = tmp_path / "k.spv"
    path.write_bytes(art.binary)
    assert subprocess.run([spirv_val, str(path)], capture_output=True).returncode == 0


REMAT = """
declare i64 @lid(i32)
declare void @wait(i32)

define void @k(ptr addrspace(1) %a, i64 %n) {
entry:
  %t = tail call noundef range(i64 0, 1024) i64 @lid(i32 0)
  %p = getelementptr float, ptr addrspace(1) %a, i64 %t
  %q = getelementptr i8, ptr addrspace(1) %p, i64 64
  %other = load float, ptr addrspace(1) %q
  br label %loop

loop:
  %k = phi i64 [ 0, %entry ], [ %k1, %loop ]
  %r = getelementptr float, ptr addrspace(1) %q, i64 %k
  store float 1.0, ptr addrspace(1) %r
  tail call void @wait(i32 3)
  %v = load float, ptr addrspace(1) %p
  store float %v, ptr addrspace(1) %r
  %k1 = add i64 %k, 1
  %done = icmp eq i64 %k1, %n
  br i1 %done, label %exit, label %loop

exit:
  ret void
}
"""


def test_index_math_is_recomputed_in_each_block_and_after_each_barrier():
    out = legalize.rematerialize_index_math(REMAT)
    ll.parse_assembly(out).verify()
    loop = out.split("loop:", 1)[1].split("exit:", 1)[0]
    head, after = loop.split("call void @wait", 1)
    # the loop's first region recomputes the index and both addresses after the phi
    assert re.search(r"%gpux\.rm\d+\.t = ", head) and re.search(r"%gpux\.rm\d+\.q = ", head)
    assert head.index("phi") < head.index(".t = ")
    # after the barrier: %p again (its use there); %r (made from the phi) is not pure
    assert re.search(r"%gpux\.rm\d+\.p = ", after) and re.search(r"%gpux\.rm\d+\.t = ", after)
    assert not re.search(r"\.r = ", out)
    assert re.search(r"load float, ptr addrspace\(1\) %gpux\.rm\d+\.p\n", after)
    # nothing that reads memory or a phi is copied, and the entry is left as it was
    assert ".other = " not in out and ".k = " not in out
    assert out.split("loop:", 1)[0] == REMAT.split("loop:", 1)[0]


def test_rematerialized_tiled_kernel_is_right(opencl_device):
    from numba import float32

    T = 8
    BOTH = 2 * T * T

    @gpux.jit
    def tiled(a, b, c):
        # one flat shared buffer holding both tiles, indices computed from the thread
        tiles = gpux.shared.array(BOTH, float32)
        lx, ly = gpux.thread_idx.x, gpux.thread_idx.y
        gx, gy = gpux.grid(2)
        total = float32(0.0)
        steps = a.shape[1] // T
        t = 0
        while t < steps:
            tiles[ly * T + lx] = a[gy, t * T + lx]
            tiles[T * T + ly * T + lx] = b[t * T + ly, gx]
            gpux.barrier()
            for k in range(T):
                total += tiles[ly * T + k] * tiles[T * T + k * T + lx]
            gpux.barrier()
            t += 1
        c[gy, gx] = total

    n = 32
    rng = np.random.default_rng(1)
    a = rng.integers(-4, 4, (n, n)).astype(np.float32)
    b = rng.integers(-4, 4, (n, n)).astype(np.float32)
    dc = gpux.device_array((n, n), np.float32)
    tiled[(n // T, n // T), (T, T)](gpux.to_device(a), gpux.to_device(b), dc)
    np.testing.assert_array_equal(dc.copy_to_host(), a @ b)
    art = gpux.compile(tiled, "void(float32[:, ::1], float32[:, ::1], float32[:, ::1])",
                       target="opencl")
    assert "%gpux.rm" in art.llvm_ir


def test_rematerialization_handles_quoted_names():
    text = REMAT.replace("%t", '%"t x"').replace("loop:", '"loop 1":').replace(
        "label %loop", 'label %"loop 1"').replace("%loop ]", '%"loop 1" ]')
    out = legalize.rematerialize_index_math(text)
    ll.parse_assembly(out).verify()
    assert re.search(r'%"gpux\.rm\d+\.t x" = ', out)


def test_rematerialization_renames_numbered_values():
    text = REMAT.replace("%t", "%0").replace("%p", "%1")
    out = legalize.rematerialize_index_math(text)
    ll.parse_assembly(out).verify()
    assert re.search(r"%gpux\.rm\d+\.0 = ", out) and re.search(r"%gpux\.rm\d+\.1 = ", out)


@pytest.mark.parametrize("rhs, query", [
    ("call noundef range(i64 0, 1024) i64 @_Z12get_local_idj(i32 0)", True),
    ("tail call noundef range(i64 0, 1024) i64 @_Z12get_local_idj(i32 2) #3", True),
    ('call noundef range(i64 0, 65536) i64 @"q.x"(i32 1)', True),
    ("call noundef range(i64 -1, 1024) i64 @f(i32 0)", False),   # not a range we write
    ("call noundef range(i64 0, 1024) i64 @f(i32 12)", False),   # not a dimension
    ("call noundef range(i64 0, 1024) i64 @f(i32 %d)", False),   # a dynamic dimension
    ("call noundef range(i64 0, 1024) i64 @f(i32 0) #", False),
    ("call i64 @f(i32 0)", False),                              # no range: not ours
    ("musttail call noundef range(i64 0, 8) i64 @f(i32 0)", False),
    ("add i64 %a, 1", True),
    ("load i64, ptr %p", False),
    ('call i64 @"call noundef range(i64 0, 8) i64 @f(i32 0)"(i32 0)', False),  # a name
])
def test_only_annotated_index_queries_count_as_pure(rhs, query):
    """The rematerialization recomputes an index query (a call our pipeline gave a
    result range) like arithmetic; any other call stays where it is."""
    c = irlex.code(irlex.line_tokens("  %x = " + rhs))
    op_at = 3 if c[2] in ("tail", "musttail") else 2
    assert legalize._pure(c, op_at) is query


@pytest.mark.parametrize("line, boundary", [
    ("  tail call void @_Z7barrierj(i32 3)", True),
    ("  call void @f()", True),
    ('  call void @"a b"(i32 1)', True),
    ("  call void @llvm.assume(i1 true)", False),
    ("  %r = call i64 @f()", False),
    ("  store i64 1, ptr %p", False),
])
def test_barrier_calls_cut_regions(line, boundary):
    assert legalize._is_boundary(irlex.code(irlex.line_tokens(line))) is boundary


AGG_PHI = """
define spir_kernel void @k(ptr addrspace(1) %p, i1 %c, float %a) {
entry:
  %x = insertvalue { float, float } undef, float %a, 0
  %y = insertvalue { float, float } %x, float 2.0, 1
  br i1 %c, label %other, label %end
other:
  %q = load { float, float }, ptr addrspace(1) %p
  br label %end
end:
  %v = phi { float, float } [ %y, %entry ], [ %q, %other ], [ { float 1.0, float 3.0 }, %loop ]
  %e = extractvalue { float, float } %v, 1
  %f = extractvalue { float, float } %v, 0
  %s = fadd float %e, %f
  store float %s, ptr addrspace(1) %p
  store { float, float } %v, ptr addrspace(1) %p
  br i1 %c, label %loop, label %exit
loop:
  br label %end
exit:
  ret void
}
"""


def test_aggregate_phis_become_one_phi_per_element():
    out = legalize.split_aggregate_phis(AGG_PHI)
    assert " = phi {" not in out
    # constants split, the insertvalue chain read through, other values extracted
    assert "%v.gpux.e0 = phi float [ %a, %entry ], [ %gpux.pe.q.0, %other ], [ 1.0, %loop ]" in out
    assert "%v.gpux.e1 = phi float [ 2.0, %entry ], [ %gpux.pe.q.1, %other ], [ 3.0, %loop ]" in out
    assert ("%gpux.pe.q.0 = extractvalue { float, float } %q, 0\n"
            "  %gpux.pe.q.1 = extractvalue { float, float } %q, 1\n  br label %end") in out
    # extractvalues of the phi are its elements; the aggregate is rebuilt for other uses
    assert "%s = fadd float %v.gpux.e1, %v.gpux.e0" in out
    assert "%v = insertvalue { float, float } %v.gpux.b0, float %v.gpux.e1, 1" in out
    mod = ll.parse_assembly(out)
    mod.verify()


def test_split_aggregate_phis_emits_through_the_spirv_back_end():
    # the original aborts the process inside LLVM (SPIRVEmitIntrinsics)
    out = irtext.drop_unused_values(legalize.split_aggregate_phis(AGG_PHI.replace(
        "  store { float, float } %v, ptr addrspace(1) %p\n", "")))
    assert " = insertvalue " not in out  # nothing left uses the aggregate
    mod = ll.parse_assembly('target triple = "spirv64-unknown-unknown"\n' + out)
    ll.initialize_all_targets()
    ll.initialize_all_asmprinters()
    tm = ll.Target.from_triple("spirv64-unknown-unknown").create_target_machine(opt=0)
    assert tm.emit_object(mod)[:4] == b"\x03\x02\x23\x07"  # the SPIR-V magic number


@pytest.mark.parametrize("phi", [
    "%v = phi { <{ float, float }>, i32 } [ zeroinitializer, %a ], [ %w, %b ]",  # packed
    "%7 = phi { float, float } [ zeroinitializer, %a ], [ %w, %b ]",  # numbered
    "%v = phi float [ 1.0, %a ], [ %w, %b ]",  # not an aggregate
])
def test_phis_the_split_leaves_alone(phi):
    body = ["a:", "  br label %c", "b:", "  br label %c", "c:", f"  {phi}", "  ret void"]
    assert legalize._split_phis_in(body) == body


# a phi of a part of another split phi, and of a part an extractvalue took out of an
# argument: the leaves come from the other phi's leaf phis and from the argument
# itself (one extractvalue with the whole path), never from an extracted part
NESTED_THROUGH_PARTS = """
define spir_kernel void @k(ptr addrspace(1) %p, i1 %c, { i64, { i64, i64 } } %s, { i64, { i64, i64 } } %t) {
entry:
  %inner = extractvalue { i64, { i64, i64 } } %s, 1
  br i1 %c, label %a, label %b
a:
  br label %m
b:
  br label %m
m:
  %v = phi { i64, { i64, i64 } } [ %s, %a ], [ %t, %b ]
  %part = extractvalue { i64, { i64, i64 } } %v, 1
  %"q r" = insertvalue { i64, i64 } %part, i64 7, 0
  br i1 %c, label %n, label %o
n:
  br label %j
o:
  br label %j
j:
  %w = phi { i64, i64 } [ %"q r", %n ], [ %inner, %o ]
  %x = extractvalue { i64, i64 } %w, 1
  %y = extractvalue { i64, i64 } %w, 0
  %z = add i64 %x, %y
  store i64 %z, ptr addrspace(1) %p
  ret void
}
"""

_EMIT_CHILD = """
import sys
import llvmlite.binding as ll
ll.initialize_all_targets()
ll.initialize_all_asmprinters()
m = ll.parse_assembly(sys.stdin.read())
tm = ll.Target.from_triple("spirv64-unknown-unknown").create_target_machine(opt=2)
sys.stdout.write(tm.emit_object(m)[:4].hex())
"""


def test_nested_phis_read_leaves_through_parts_of_other_phis():
    from numba_gpux.targets.opencl.backend_guard import abort_shapes

    ll.parse_assembly(NESTED_THROUGH_PARTS).verify()
    out = irtext.drop_unused_values(legalize.split_aggregate_phis(NESTED_THROUGH_PARTS))
    mod = ll.parse_assembly('target triple = "spirv64-unknown-unknown"\n' + out)
    mod.verify()
    assert " = phi {" not in out and "insertvalue" not in out and "%inner" not in out
    assert "%w.gpux.e0 = phi i64 [ 7, %n ], [ %gpux.pe.inner.0, %o ]" in out
    assert "%w.gpux.e1 = phi i64 [ %v.gpux.e2, %n ], [ %gpux.pe.inner.1, %o ]" in out
    assert "%gpux.pe.inner.1 = extractvalue { i64, { i64, i64 } } %s, 1, 1\n  br label %j" in out
    assert "%z = add i64 %w.gpux.e1, %w.gpux.e0" in out
    assert abort_shapes(mod, str(mod)) == []
    res = subprocess.run([sys.executable, "-c", _EMIT_CHILD], capture_output=True, text=True,
                         input='target triple = "spirv64-unknown-unknown"\n' + out, timeout=120)
    assert res.returncode == 0 and res.stdout == "03022307", res.stderr[-2000:]


# a block may be written before the block that dominates it: the copies of a value
# and of the values it reads follow the operands, not the order of the text
REMAT_OUT_OF_ORDER = """
declare i64 @lid(i32)

define void @k(ptr addrspace(1) %a, i64 %n) {
entry:
  br label %late
early:
  %q = getelementptr float, ptr addrspace(1) %a, i64 %t
  br label %use
use:
  store float 1.0, ptr addrspace(1) %q
  ret void
late:
  %t = tail call noundef range(i64 0, 1024) i64 @lid(i32 0)
  br label %early
}
"""


def test_recomputed_values_follow_their_operands_not_the_text_order():
    ll.parse_assembly(REMAT_OUT_OF_ORDER).verify()
    out = legalize.rematerialize_index_math(REMAT_OUT_OF_ORDER)
    ll.parse_assembly(out).verify()
    use = out.split("use:", 1)[1].split("late:", 1)[0]
    assert use.index(".t = ") < use.index(".q = ") < use.index("store")


# what a user writes (a printed string, a function's name) is data, never code
USER_TEXT = r"""
@s = internal constant [57 x i8] c"%f = sitofp i1 %c to double; %a = alloca [8 x double] \22\5C\00"

declare void @"%v = phi { float, float } [ %x, %entry ] alloca [2 x i32]"(ptr)

define void @k(ptr addrspace(1) %out, i32 %x) {
entry:
  %c = icmp sgt i32 %x, 0
  %f = sitofp i1 %c to double
  store double %f, ptr addrspace(1) %out
  call void @"%v = phi { float, float } [ %x, %entry ] alloca [2 x i32]"(ptr @s)
  ret void
}
"""


def test_rewrites_leave_strings_and_names_as_written():
    out = legalize.apply_rewrites(USER_TEXT, tuple(legalize.REWRITES))
    ll.parse_assembly(out).verify()
    assert "select i1 %c, double -1.000000e+00, double 0.000000e+00" in out
    for line in USER_TEXT.split("\n"):
        if line.startswith(("@s", "declare")):
            assert line in out
    assert out.count('@"%v = phi { float, float } [ %x, %entry ] alloca [2 x i32]"') == 2


STACK = """
define void @k(ptr %out, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %j, %loop ]
  %s = call ptr @llvm.stacksave.p0()
  %t = alloca [4 x double], align 8
  %u = alloca i64, i32 2, align 8
  store double 1.0, ptr %t, align 8
  store i64 %i, ptr %u, align 8
  call void @llvm.stackrestore.p0(ptr %s)
  %j = add i64 %i, 1
  %c = icmp slt i64 %j, %n
  br i1 %c, label %loop, label %done
done:
  ret void
}
declare ptr @llvm.stacksave.p0()
declare void @llvm.stackrestore.p0(ptr)
"""


def test_stack_saves_go_and_fixed_allocas_move_to_the_entry_block():
    new = legalize.static_stack(STACK)
    ll.parse_assembly(new).verify()
    body = new.split("entry:", 1)[1].split("loop:", 1)[0]
    assert "alloca [4 x double], align 8" in body and "alloca i64, i32 2, align 8" in body
    assert "call ptr @llvm.stacksave" not in new and "call void @llvm.stackrestore" not in new
    assert legalize.needed(("static_stack",), ll.parse_assembly(STACK)) == ("static_stack",)
    plain = ll.parse_assembly(ALLOCA)
    assert legalize.needed(("static_stack", "byte_allocas"), plain) == ("byte_allocas",)


def test_a_run_time_sized_alloca_keeps_its_stack_saves():
    dynamic = STACK.replace("alloca i64, i32 2,", "alloca i64, i64 %i,")
    assert legalize.static_stack(dynamic) == dynamic


CONTRACTED = """
define float @f(float %a, float %b, float %c, float %d) {
entry:
  %m = fmul contract float %a, %b
  %r = fadd contract float %m, %c
  %m2 = fmul contract float %c, %d
  %s = fsub contract float %a, %m2
  %m3 = fmul contract float %c, %d
  %u = fadd contract float %m3, %m3
  %m4 = fmul float %a, %a
  %v = fadd contract float %m4, %a
  %m5 = fmul contract float %a, %d
  br label %next
next:
  %x = fadd contract float %m5, %b
  %w = fadd float %r, %s
  %w2 = fadd float %w, %u
  %w3 = fadd float %w2, %v
  %w4 = fadd float %w3, %x
  ret float %w4
}
"""


def test_contracted_multiply_adds_become_fma_calls():
    out = legalize.fuse_contracted(CONTRACTED)
    ll.parse_assembly(out).verify()
    assert "%r = call contract float @llvm.fma.f32(float %a, float %b, float %c)" in out
    # x - c * d is fma(-c, d, x)
    assert "%s.gpux.neg = fneg contract float %c" in out
    assert "%s = call contract float @llvm.fma.f32(float %s.gpux.neg, float %d, float %a)" in out
    # an add of a product with itself fuses once and keeps the product for the addend
    assert "%u = call contract float @llvm.fma.f32(float %c, float %d, float %m3)" in out
    assert "%m3 = fmul contract float %c, %d" in out
    # left: a product without the flag, one in another block
    for kept in ("%v = fadd contract float %m4, %a", "%x = fadd contract float %m5, %b"):
        assert kept in out
    assert "%m = " not in out and "%m2 = " not in out
    assert out.count("declare float @llvm.fma.f32(float, float, float)") == 1
    # code without the flag is left as it is
    plain = CONTRACTED.replace(" contract", "")
    assert legalize.fuse_contracted(plain) == plain


#: products used more than once, and adds of two products (stores keep every value)
SHARED_PRODUCTS = """
define void @f(float %a, float %b, float %c, float %d, float %e, float* %o) {
entry:
  %p1 = fmul contract float %a, %b
  %p2 = fmul contract float %c, %d
  %s2 = fadd contract float %p1, %e
  %s1 = fadd contract float %p1, %p2
  store volatile float %s1, float* %o
  store volatile float %s2, float* %o
  %t1 = fmul contract float %a, %c
  %t2 = fmul contract float %b, %d
  %s3 = fadd contract float %t1, %t2
  store volatile float %s3, float* %o
  %u1 = fmul contract float %a, %e
  %s4 = fsub contract float %u1, %b
  %s5 = fadd contract float %u1, %c
  store volatile float %s4, float* %o
  store volatile float %s5, float* %o
  store volatile float %u1, float* %o
  ret void
}
"""


def test_contracted_products_fuse_where_nvptx_fuses_them():
    """The facade's kernels round as on the CUDA target (and numba.cuda's NVVM): a
    product fuses into each add of its block, other uses or not, and of two products
    the one with fewer uses fuses, the first on a tie. LLVM's NVPTX back end is the
    reference: it writes the same number of fma and mul instructions for this code."""
    out = legalize.fuse_contracted(SHARED_PRODUCTS)
    ll.parse_assembly(out).verify()
    fma = "call contract float @llvm.fma.f32"
    assert f"%s2 = {fma}(float %a, float %b, float %e)" in out
    assert f"%s1 = {fma}(float %c, float %d, float %p1)" in out  # p1 has two uses
    assert f"%s3 = {fma}(float %a, float %c, float %t2)" in out  # a tie: the first
    assert f"%s4 = {fma}(float %a, float %e, float %s4.gpux.neg)" in out
    assert f"%s5 = {fma}(float %a, float %e, float %c)" in out
    # kept: p1 (an addend), t2 (an addend), u1 (stored); p2 and t1 went into fmas
    kept = sorted(ln.split()[0] for ln in out.splitlines() if " = fmul " in ln)
    assert kept == ["%p1", "%t2", "%u1"]

    ll.initialize_all_targets()
    ll.initialize_all_asmprinters()
    nvptx = ll.Target.from_triple("nvptx64-nvidia-cuda").create_target_machine(
        cpu="sm_80", opt=2)
    ptx = nvptx.emit_assembly(ll.parse_assembly(SHARED_PRODUCTS))
    assert ptx.count("fma.rn.f32") == out.count(fma) == 5
    assert ptx.count("mul.f32") + ptx.count("mul.rn.f32") == len(kept)


def test_fneg_is_an_xor_of_the_sign_bit():
    """``fneg`` of half, float, double and vectors of them, with fast-math flags and a
    debug location, as bitcast / xor of the sign bit / bitcast (Intel's CPU driver gave
    every work-item one work-item's negation kept across a barrier); the result keeps
    its name and LLVM's verifier accepts the module."""
    import llvmlite.binding as llb

    from numba_gpux.legalize import REWRITES

    text = """define void @k(float %x, double %y, <2 x half> %v, ptr %p) !dbg !3 {
entry:
  %a = fneg float %x, !dbg !5
  %b = fneg nnan nsz double %y
  %c = fneg <2 x half> %v
  store float %a, ptr %p
  store double %b, ptr %p
  store <2 x half> %c, ptr %p
  ret void
}
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!6}
!0 = distinct !DICompileUnit(language: DW_LANG_C, file: !1, emissionKind: FullDebug)
!1 = !DIFile(filename: "k.py", directory: "/")
!2 = !DISubroutineType(types: !{})
!3 = distinct !DISubprogram(name: "k", scope: !1, file: !1, line: 1, type: !2, unit: !0, spFlags: DISPFlagDefinition)
!5 = !DILocation(line: 2, scope: !3)
!6 = !{i32 2, !"Debug Info Version", i32 3}
"""
    out = REWRITES["fneg_sign_bits"](text)
    assert " = fneg " not in out
    assert "xor i32 %gpux.fneg1.b, -2147483648" in out
    assert "%a = bitcast i32 %gpux.fneg1.x to float, !dbg !5" in out
    assert "xor i64 %gpux.fneg2.b, -9223372036854775808" in out
    assert "xor <2 x i16> %gpux.fneg3.b, <i16 -32768, i16 -32768>" in out
    llb.parse_assembly(out).verify()


BITREVERSE = """
define i32 @rz(i64 %v) {
  %t = trunc i64 %v to i10
  %r = tail call i10 @llvm.bitreverse.i10(i10 %t)
  %z = zext i10 %r to i32
  ret i32 %z
}
define i64 @rs(i64 %v) {
  %t = trunc i64 %v to i10
  %r = call i10 @llvm.bitreverse.i10(i10 %t)
  %s = sext i10 %r to i16
  %w = sext i16 %s to i64
  ret i64 %w
}
define i64 @rt(i64 %v) {
  %t = trunc i64 %v to i12
  %r = call i12 @llvm.bitreverse.i12(i12 %t)
  %s = trunc i12 %r to i8
  %w = zext i8 %s to i64
  ret i64 %w
}
define i64 @r20(i64 %v) {
  %t = trunc i64 %v to i20
  %r = call i20 @llvm.bitreverse.i20(i20 %t)
  %z = zext i20 %r to i64
  ret i64 %z
}
define i10 @kept(i10 %x) {
  %r = call i10 @llvm.bitreverse.i10(i10 %x)
  ret i10 %r
}
declare i10 @llvm.bitreverse.i10(i10)
declare i12 @llvm.bitreverse.i12(i12)
declare i20 @llvm.bitreverse.i20(i20)
"""


def _host_functions(text: str, names):
    import ctypes

    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    mod = ll.parse_assembly(text)
    mod.verify()
    engine = ll.create_mcjit_compiler(mod, ll.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    return engine, {n: ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(
        engine.get_function_address(n)) for n in names}


def test_bit_reversals_at_odd_widths_are_done_at_a_legal_one():
    """InstCombine writes a bit-reversal loop of a constant count (an FFT's index) as
    ``llvm.bitreverse.i10`` between a trunc and a zext; on a target without odd widths
    the reversal is done at the next legal width and shifted, with the same values
    (both modules run on the host for every 12-bit input and some wider ones)."""
    out = widen_bitreverse(BITREVERSE, (8, 16, 32, 64))
    ll.parse_assembly(out).verify()
    for dead in ("i10 %t", "i12 %t", "i20 %t", "@llvm.bitreverse.i12", "@llvm.bitreverse.i20"):
        assert dead not in out, dead
    assert "call i16 @llvm.bitreverse.i16(i16 %r.in)" in out
    assert "call i32 @llvm.bitreverse.i32(i32 %r.in)" in out
    # an operand that is no truncation stays, with its declaration
    assert "%r = call i10 @llvm.bitreverse.i10(i10 %x)" in out
    assert "declare i10 @llvm.bitreverse.i10(i10)" in out
    names = ("rz", "rs", "rt", "r20")
    keep = [_host_functions(BITREVERSE, names), _host_functions(out, names)]
    (_, want), (_, got) = keep
    rng = np.random.default_rng(1)
    values = list(range(1 << 12)) + rng.integers(-(1 << 62), 1 << 62, 2000).tolist()
    for n in names:
        assert [got[n](v) for v in values] == [want[n](v) for v in values], n


def test_a_bit_reversal_loop_of_a_constant_count_runs_on_opencl(opencl_device):
    """The loop of a constant count compiled (it was refused: integer width 10, and no
    definition of the reversal at that width on OpenCL)."""
    from numba_gpux import cuda

    for count in (4, 10, 16, 20):
        @cuda.jit
        def rev(y):
            i = cuda.grid(1)
            if i < y.size:
                r = 0
                v = i
                for _ in range(count):
                    r = (r << 1) | (v & 1)
                    v >>= 1
                y[i] = r

        n = 1 << min(count, 12)
        y = cuda.device_array(n, np.int64)
        rev[(n + 127) // 128, 128](y)
        want = [int(format(i, f"0{count}b")[::-1], 2) for i in range(n)]
        assert y.copy_to_host().tolist() == want, count
