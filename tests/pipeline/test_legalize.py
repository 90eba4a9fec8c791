"""The IR rewrites for back ends that mistranslate valid IR (numba_gpux/legalize.py):
each rewrite on its smallest IR, and what reaches LLVM's SPIR-V back end."""

from __future__ import annotations

import subprocess

import numpy as np
from llvmlite import binding as ll

import numba_gpux as gpux
from numba_gpux import legalize
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
define double @k(i64 %i) {
  %a = alloca [8 x double], align 8
  %b = alloca [2 x [3 x i32]]
  %s = alloca { i64, double }, align 8
  %p = getelementptr double, ptr %a, i64 %i
  %v = load double, ptr %p, align 8
  ret double %v
}
"""


def test_sitofp_of_a_bool_becomes_a_select_of_minus_one():
    out = legalize.sitofp_i1(SITOFP)
    assert "select i1 %c, double -1.000000e+00, double 0.000000e+00" in out
    assert "sitofp i32 %x to float" in out  # other conversions stay
    ll.parse_assembly(out).verify()


def test_array_allocas_become_byte_arrays_of_the_same_size_and_alignment():
    out = legalize.byte_allocas(ALLOCA)
    assert "%a = alloca [64 x i8], align 8" in out
    assert "%b = alloca [24 x i8], align 4" in out  # natural alignment made explicit
    assert "%s = alloca { i64, double }, align 8" in out  # structs stay
    ll.parse_assembly(out).verify()


def test_opencl_lists_its_rewrites_and_they_exist():
    names = make_target().option("ir_rewrites")
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
