"""The checks for SPIR-V integer operations on operands of another width and for masks
widened to a legal width (targets/opencl/spirv_widths.py), and the fallback that emits
such a module again without loop strength reduction (for a target that keeps it: the
OpenCL target emits without it)."""

from __future__ import annotations

import dataclasses
import subprocess

import numpy as np
import pytest
import numba_gpux as gpux
from numba_gpux.machines import emit_in_fresh_process
from numba_gpux.targets.opencl.spirv_widths import mismatched_integer_widths, widened_masks
from numba_gpux.targets.opencl.target import TRIPLE, make_target

#: LLVM 22's SPIR-V back end writes ``OpBitwiseAnd %uchar %a %uchar_1``, %a 64 bits wide
ZEXT_OF_BOOL_TRUNC = """
define spir_kernel void @k(ptr addrspace(1) %p, i64 %a) {
  %t = trunc i64 %a to i1
  %z = zext i1 %t to i8
  store i8 %z, ptr addrspace(1) %p
  ret void
}
"""

#: the same meaning in the form InstCombine gives it, which the back end writes right
TRUNC_THEN_AND = ZEXT_OF_BOOL_TRUNC.replace(
    "%t = trunc i64 %a to i1\n  %z = zext i1 %t to i8",
    "%t = trunc i64 %a to i8\n  %z = and i8 %t, 1")

#: a loop whose trip count, 6 - (a & 1), code generation's loop strength reduction
#: expands as a zext of a trunc to i1
LSR_TRIP_COUNT = """
define spir_kernel void @k(ptr addrspace(1) %p, i64 %a) {
entry:
  %t = trunc i64 %a to i32
  %1 = and i32 %t, 1
  %o = or disjoint i32 %1, -774
  %s = sub nsw i32 0, %o
  %m = and i32 %s, 7
  %z = zext nneg i32 %m to i64
  br label %loop
loop:
  %i = phi i64 [ %z, %entry ], [ %n, %loop ]
  %n = add nsw i64 %i, -1
  %c = icmp samesign ugt i64 %i, 1
  br i1 %c, label %loop, label %e
e:
  ret void
}
"""

#: a loop that runs (a & 3) - 1 times, then adds (b << 1) & 1048574 to its counter:
#: code generation's LSR rewrites the exit value through SCEV's zext (trunc b to i19),
#: which LLVM 22's SPIR-V back end writes as a mask with 4294967295
LSR_ODD_WIDTH_MASK = """
define spir_kernel void @k(ptr addrspace(1) %p, i64 %a, i64 %b) {
entry:
  %n = and i64 %a, 3
  %z = icmp eq i64 %n, 0
  br i1 %z, label %exit, label %loop
loop:
  %j = phi i64 [ 0, %entry ], [ %j1, %loop ]
  %j1 = add nuw nsw i64 %j, 1
  %c = icmp eq i64 %j1, %n
  br i1 %c, label %done, label %loop
done:
  %s = shl i64 %b, 1
  %m = and i64 %s, 1048574
  %r = add nuw nsw i64 %j, %m
  br label %exit
exit:
  %v = phi i64 [ %a, %entry ], [ %r, %done ]
  store i64 %v, ptr addrspace(1) %p
  ret void
}
"""


def _with_lsr():
    """The OpenCL target as it would be with code generation's loop strength reduction."""
    return dataclasses.replace(make_target(), codegen_flags=())


def _spirv(text, opt=0):
    """LLVM's SPIR-V for *text* with loop strength reduction, from a fresh process (whose
    back end holds nothing of earlier modules: targets/opencl/spirv_ids.py)."""
    return emit_in_fresh_process(_with_lsr(), f'target triple = "{TRIPLE}"\n' + text, opt)


def test_the_back_end_fault_is_found():
    assert mismatched_integer_widths(_spirv(ZEXT_OF_BOOL_TRUNC))
    assert mismatched_integer_widths(_spirv(LSR_TRIP_COUNT, opt=2))
    assert mismatched_integer_widths(_spirv(TRUNC_THEN_AND)) == []
    assert mismatched_integer_widths(_spirv(LSR_TRIP_COUNT, opt=0)) == []  # no LSR at 0


def test_what_spirv_val_rejects_the_check_rejects(spirv_val, tmp_path):
    for text, opt in ((ZEXT_OF_BOOL_TRUNC, 0), (TRUNC_THEN_AND, 0), (LSR_TRIP_COUNT, 2)):
        binary = _spirv(text, opt)
        path = tmp_path / "m.spv"
        path.write_bytes(binary)
        res = subprocess.run([spirv_val, "--target-env", "spv1.4", str(path)],
                             capture_output=True, text=True)
        assert (res.returncode != 0) == bool(mismatched_integer_widths(binary)), res.stderr


def test_words_that_cannot_be_walked():
    assert mismatched_integer_widths(b"") == [-1]
    assert mismatched_integer_widths(b"\x00" * 64) == [-1]


def _count_down(a, out):
    i = gpux.grid(1)
    if i < out.size:
        m = gpux.local.array(4, np.int32)
        for j in range(4):
            m[j] = np.int32((np.int32(1) & a[i]) + (-np.int64(774)))
        x = 1.0
        left = np.int64(abs(m[3]) & 7)
        while left > 0:  # 6 - (a & 1) times
            x = x * 1.5 + 0.25  # (no closed form: the loop stays, its counter unused)
            left -= 1
        out[i] = x + m[0]  # (m[0] used as int32 keeps the count's arithmetic 32-bit)


def test_a_module_the_back_end_mistranslates_is_emitted_again_without_lsr(opencl_device):
    art = gpux.compile(_count_down, "void(int64[::1], float64[::1])", target=_with_lsr(),
                       opt=3)
    assert art.info.get("emitted_without_lsr") is True
    assert mismatched_integer_widths(art.binary) == []
    # the OpenCL target itself emits it once, without LSR, right
    art = gpux.compile(_count_down, "void(int64[::1], float64[::1])", target="opencl", opt=3)
    assert art.info.get("emitted_without_lsr") is True
    assert mismatched_integer_widths(art.binary) == []
    assert mismatched_integer_widths(emit_in_fresh_process(
        make_target(), art.llvm_ir, 3)) == []
    a = np.arange(64, dtype=np.int64)
    out = gpux.to_device(np.zeros(64))
    gpux.jit(_count_down)[1, 64](gpux.to_device(a), out)
    want = np.ones(64)
    for _ in range(5):
        want = want * 1.5 + 0.25
    want[a % 2 == 0] = want[a % 2 == 0] * 1.5 + 0.25
    want += (a & 1) - 774
    np.testing.assert_array_equal(out.copy_to_host(), want)


def test_other_modules_keep_lsr_on_a_target_that_has_it():
    def saxpy(a, x, y, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]

    sig = "void(float32, float32[::1], float32[::1], float32[::1])"
    assert "emitted_without_lsr" not in gpux.compile(saxpy, sig, target=_with_lsr()).info
    assert gpux.compile(saxpy, sig, target="opencl").info["emitted_without_lsr"] is True


def test_a_mask_widened_to_a_legal_width_is_found():
    assert widened_masks(_spirv(LSR_ODD_WIDTH_MASK, opt=1), LSR_ODD_WIDTH_MASK)
    assert widened_masks(_spirv(LSR_ODD_WIDTH_MASK, opt=2), LSR_ODD_WIDTH_MASK)
    assert widened_masks(_spirv(LSR_ODD_WIDTH_MASK, opt=0), LSR_ODD_WIDTH_MASK) == []


def test_a_mask_the_ir_wrote_is_the_users():
    text = LSR_ODD_WIDTH_MASK.replace("1048574", "4294967295")
    binary = _spirv(text, opt=1)
    assert widened_masks(binary, text) == []
    # the same binary against IR without that constant is a finding: the check reads
    # the SPIR-V's masks, and only the IR's constants excuse one
    assert widened_masks(binary, LSR_ODD_WIDTH_MASK)


def test_mask_check_on_words_that_cannot_be_walked():
    assert widened_masks(b"", "") == [-1]


def test_a_kernel_whose_mask_the_back_end_widens_runs_right():
    """Found by the fuzzer (seed 80053): without the check the SPIR-V route returned
    (b & 0xFFFFFFFF) << 1 plus the count, not (b << 1) & 1048575."""
    from gpux_testing import selected
    from numba import types as nbt

    @gpux.jit(device=True)
    def masked(a0, a2):
        # (a loop that counts down the values left, as Numba's range() iteration did:
        # the shape whose induction variables LSR folds into the widened mask)
        j0 = 0
        left = a0 & 3
        while left > 0:
            a0 = j0 + (np.int64(a2 + a2) & 1048575)
            j0 += 1
            left -= 1
        return a0

    def k(x, y, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = masked(x[i], y[i])

    for opt in (1, 3):
        art = gpux.compile(k, (nbt.int64[::1], nbt.uint64[::1], nbt.int64[::1]),
                           target=_with_lsr(), opt=opt)
        assert art.info.get("emitted_without_lsr")
        kern = gpux.jit(opt=opt)(k)
        x = np.array([696567906145, 3, 2, 0], np.int64)
        y = np.array([789642628082027547, 2 ** 63 + 12345, 7, 5], np.uint64)
        devs = [d for d in gpux.devices() if d.target_name == "opencl"]
        if not devs:
            pytest.skip("no OpenCL device with SPIR-V")
        with selected(devs[0]):
            out = gpux.to_device(np.zeros(4, np.int64))
            kern[1, 4](gpux.to_device(x), gpux.to_device(y), out)
            got = out.copy_to_host().tolist()
        want = []
        for a, b in zip(x.tolist(), y.tolist()):
            v = a
            for j in range(a & 3):
                v = j + ((2 * b % 2 ** 64) & 1048575)
            want.append(v)
        assert got == want
