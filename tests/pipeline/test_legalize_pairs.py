"""legalize_pairs.paired_accesses: neighbouring scalar loads and stores as one access of
a two-element vector, only where nothing between them can observe the difference."""

import numpy as np
import pytest
from llvmlite import binding as ll

import numba_gpux as gpux
from numba_gpux.legalize_pairs import paired_accesses

PAIRS = """
declare void @g()

define void @k(ptr addrspace(1) %pa, ptr addrspace(1) %oa, ptr addrspace(1) %ra, double %s,
               i64 %n) {
entry:
  %p = getelementptr { double, double }, ptr addrspace(1) %pa, i64 %n
  %o = getelementptr [16 x i8], ptr addrspace(1) %oa, i64 %n
  %r = getelementptr { i32, i32 }, ptr addrspace(1) %ra, i64 %n
  %a = load double, ptr addrspace(1) %p, align 8, !tbaa !0
  %q = getelementptr inbounds nuw i8, ptr addrspace(1) %p, i64 8
  %b = load double, ptr addrspace(1) %q, align 8
  %m = fmul double %a, %b
  store double %m, ptr addrspace(1) %o, align 8
  %o8 = getelementptr inbounds i8, ptr addrspace(1) %o, i64 8
  store double 1.500000e+00, ptr addrspace(1) %o8, align 8
  %i = load i32, ptr addrspace(1) %r, align 4
  %r4 = getelementptr i8, ptr addrspace(1) %r, i64 4
  store i32 %i, ptr addrspace(1) %r, align 4
  %j = load i32, ptr addrspace(1) %r4, align 4
  %f = load float, ptr addrspace(1) %p, align 4
  %p4 = getelementptr i8, ptr addrspace(1) %p, i64 4
  call void @g()
  %h = load float, ptr addrspace(1) %p4, align 4
  %v = load volatile double, ptr addrspace(1) %r, align 8
  %r8 = getelementptr i8, ptr addrspace(1) %r, i64 8
  %w = load double, ptr addrspace(1) %r8, align 8
  %x = load i64, ptr addrspace(1) %o, align 8
  br label %next

next:
  %o16 = getelementptr i8, ptr addrspace(1) %o, i64 16
  %y = load i64, ptr addrspace(1) %o8, align 8
  store double %s, ptr addrspace(1) %o16, align 8
  %o24 = getelementptr i8, ptr addrspace(1) %o, i64 24
  %z = load double, ptr addrspace(1) %r, align 8
  store double %s, ptr addrspace(1) %o24, align 8
  %l = load <2 x double>, ptr addrspace(1) %o, align 8
  %t = fadd double %w, %z
  ret void
}

!0 = !{!"double"}
"""


def test_pairs_of_loads_and_stores_become_vector_accesses():
    out = paired_accesses(PAIRS)
    ll.parse_assembly(out).verify()
    # the doubles at %p and %p + 8: one vector load where the first was
    assert "%gpux.pair.0 = load <2 x double>, ptr addrspace(1) %p, align 8" in out
    assert "%a = extractelement <2 x double> %gpux.pair.0, i64 0" in out
    assert "%b = extractelement <2 x double> %gpux.pair.0, i64 1" in out
    assert out.index("%gpux.pair.0 = load") < out.index("%q = getelementptr")
    # the stores to %o and %o + 8 (a constant second value): one store where the second was
    assert "insertelement <2 x double> poison, double %m, i64 0" in out
    assert "double 1.500000e+00, i64 1" in out
    assert "store <2 x double> %gpux.pair.2, ptr addrspace(1) %o, align 8" in out
    assert "store double %m" not in out
    # what may not move: a load past a store to the same bytes (%j after the store to
    # %r), a load past a call (%h), a volatile load (%v), pairs across blocks (%x/%y),
    # a store past a load (%o16 / %o24 around %z)
    for kept in ("%j = load i32", "%h = load float", "%f = load float", "%v = load volatile",
                 "%w = load double", "%x = load i64", "%y = load i64",
                 "store double %s, ptr addrspace(1) %o16", "store double %s, ptr addrspace(1) %o24",
                 "%l = load <2 x double>"):
        assert kept in out, kept
    assert out.count("load <2 x double>") == 2 and out.count("store <2 x double>") == 1


def test_offsets_and_types_must_match():
    text = """
define void @k(ptr %p) {
  %a = load double, ptr %p, align 8
  %q = getelementptr i8, ptr %p, i64 4
  %b = load double, ptr %q, align 8
  %c = load float, ptr %p, align 4
  %q4 = getelementptr i8, ptr %p, i64 4
  %d = load i32, ptr %q4, align 4
  ret void
}
"""
    assert paired_accesses(text) == text


def test_a_string_that_looks_like_a_pair_is_left_alone():
    text = ('@s = constant [60 x i8] c"load double, ptr %p, align 8 getelementptr i8, '
            'ptr %p, i64 8"\n' + PAIRS)
    out = paired_accesses(text)
    assert out.startswith(text.split("\n")[0])
    ll.parse_assembly(out).verify()


@pytest.mark.parametrize("dtype", [np.complex128, np.complex64])
def test_complex_kernels_load_pairs_and_give_numpys_answers(opencl_device, dtype):
    @gpux.jit
    def cmul(x, y, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = x[i] * y[i] + x[i].conjugate()

    n = 1001
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    y = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(dtype)
    out = gpux.device_array(n, dtype)
    cmul[(n + 127) // 128, 128](gpux.to_device(x), gpux.to_device(y), out)
    tol = 1e-12 if dtype == np.complex128 else 1e-5
    np.testing.assert_allclose(out.copy_to_host(), x * y + x.conjugate(), rtol=tol, atol=tol)
    sig = "void({0}[::1], {0}[::1], {0}[::1])".format(np.dtype(dtype).name)
    ir = gpux.compile(cmul, sig, target="opencl").llvm_ir
    elem = "double" if dtype == np.complex128 else "float"
    assert f"load <2 x {elem}>" in ir and f"store <2 x {elem}>" in ir


def test_pairs_at_offsets_from_one_base():
    """Reads of neighbouring complex elements (offsets 8, 16, 24 from one element's
    address, the offset 32 through a chain) pair two by two; neighbouring doubles of an
    array of doubles do not (each load is already contiguous across work-items)."""
    text = """
define double @k(ptr addrspace(1) %x, i64 %i) {
  %p = getelementptr { double, double }, ptr addrspace(1) %x, i64 %i
  %q = getelementptr double, ptr addrspace(1) %x, i64 %i
  %g = load double, ptr addrspace(1) %q, align 8
  %q8 = getelementptr inbounds i8, ptr addrspace(1) %q, i64 8
  %h = load double, ptr addrspace(1) %q8, align 8
  %a = load double, ptr addrspace(1) %p, align 8
  %p8 = getelementptr inbounds i8, ptr addrspace(1) %p, i64 8
  %b = load double, ptr addrspace(1) %p8, align 8
  %p16 = getelementptr inbounds i8, ptr addrspace(1) %p, i64 16
  %c = load double, ptr addrspace(1) %p16, align 8
  %p24 = getelementptr inbounds i8, ptr addrspace(1) %p, i64 24
  %d = load double, ptr addrspace(1) %p24, align 8
  %p32 = getelementptr inbounds i8, ptr addrspace(1) %p16, i64 16
  %e = load double, ptr addrspace(1) %p32, align 8
  %p40 = getelementptr inbounds i8, ptr addrspace(1) %p, i64 40
  %f = load double, ptr addrspace(1) %p40, align 8
  %s1 = fadd double %a, %b
  %s2 = fadd double %c, %d
  %s3 = fadd double %e, %f
  %s4 = fadd double %s1, %s2
  %s5 = fadd double %s3, %s4
  %s6 = fadd double %g, %h
  %s = fadd double %s5, %s6
  ret double %s
}
"""
    out = paired_accesses(text)
    ll.parse_assembly(out).verify()
    assert out.count("load <2 x double>") == 3 and out.count(" load double") == 2
    assert "load <2 x double>, ptr addrspace(1) %p16, align 8" in out
    assert "load <2 x double>, ptr addrspace(1) %p32, align 8" in out
