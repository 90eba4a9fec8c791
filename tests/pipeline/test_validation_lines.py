"""Validation names the user's source line, not the IR: "uses float64 ... at file.py:12"."""

from __future__ import annotations

import inspect
import os

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux.validation import first_located
from numba_gpux.devices import resolve_target

HERE = os.path.basename(__file__)


@gpux.jit
def scales_by_a_double(a, out):
    i = gpux.grid(1)
    if i < a.size:
        x = a[i] * np.float32(2)
        print("double check")
        y = x * 0.1  # 0.1 is a float64: float64 arithmetic here
        out[i] = y


def _line_of(fn, text: str) -> int:
    src, start = inspect.getsourcelines(fn.py_func)
    return start + next(k for k, ln in enumerate(src) if text in ln)


SIG = "void(float32[::1], float32[::1])"


@pytest.mark.parametrize("lineinfo", [False, True])
def test_float64_is_reported_at_its_line(lineinfo):
    t = resolve_target("opencl", features=frozenset())
    # without line information the kernel is compiled again with it to find the line
    kernel = gpux.jit(lineinfo=True)(scales_by_a_double.py_func) if lineinfo else \
        scales_by_a_double
    with pytest.raises(gpux.ValidationError) as err:
        gpux.compile(kernel, SIG, target=t)
    line = _line_of(scales_by_a_double, "y = x * 0.1")
    assert f"uses float64 (double precision) at {HERE}:{line}," in str(err.value)


def test_the_same_kernel_compiles_where_fp64_is_supported():
    assert gpux.compile(scales_by_a_double, SIG, target="opencl").text


IR = '''define void @k(ptr %p, i32 %a) !dbg !3 {
entry:
  %s = add i32 %a, 1, !dbg !8
  %"double" = trunc i32 %s to i24, !dbg !9
  store i24 %"double", ptr %p, align 4, !dbg !10
  ret void
}
!0 = !DIFile(filename: "/src/my kernel.py", directory: "/src")
!3 = distinct !DISubprogram(name: "k", scope: !0, file: !0, line: 10)
!5 = distinct !DILexicalBlock(scope: !3, line: 11, column: 1)
!8 = !DILocation(line: 11, column: 5, scope: !3)
!9 = !DILocation(line: 12, column: 7, scope: !5)
!10 = !DILocation(line: 13, column: 7, scope: !5)
'''


def test_first_located_reads_locations_through_scopes():
    assert first_located(IR, lambda w, words: 24 in w) == ("/src/my kernel.py", 12)
    # a name that spells a type is a name: the first real double is nowhere
    assert first_located(IR, lambda w, words: "double" in words) is None
    assert first_located(IR, lambda w, words: "add" in words) == ("/src/my kernel.py", 11)
    assert first_located(IR.replace(", !dbg !9", ""), lambda w, words: 24 in w) == \
        ("/src/my kernel.py", 13)


@gpux.jit
def halves(a, out):
    i = gpux.grid(1)
    if i < a.size:
        print("half time")
        out[i] = a[i] * np.float16(3)


def test_float16_is_reported_at_its_line_where_the_target_names_the_feature():
    import dataclasses

    base = resolve_target("opencl", features=frozenset({"fp64"}))
    t = dataclasses.replace(base, type_features=(("half", "fp16", "float16 (half precision)"),))
    with pytest.raises(gpux.ValidationError) as err:
        gpux.compile(halves, "void(float16[::1], float16[::1])", target=t)
    line = _line_of(halves, "np.float16(3)")
    assert f"uses float16 (half precision) at {HERE}:{line}, which this device does not " \
           f"support (it lacks the feature 'fp16')" in str(err.value)
    # a device with the feature compiles it; a string that says "half" needs nothing
    t16 = dataclasses.replace(t, features=frozenset({"fp64", "fp16"}))
    assert gpux.compile(halves, "void(float16[::1], float16[::1])", target=t16).text

    @gpux.jit
    def says_half(out):
        print("half time")
        out[0] = 5

    assert gpux.compile(says_half, "void(float32[::1])", target=t).text


def test_the_line_is_found_again_for_a_second_target():
    line = _line_of(scales_by_a_double, "y = x * 0.1")
    for name in ("opencl", "opencl-c"):
        t = resolve_target(name, features=frozenset())
        with pytest.raises(gpux.ValidationError, match=f"at {HERE}:{line},"):
            gpux.compile(scales_by_a_double, SIG, target=t, opt=2)
