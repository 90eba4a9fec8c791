"""The per-target stages, driven from IR text, without a device."""

import re
import subprocess
import sys

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux.compiler import Options
from numba_gpux.stages import STAGE_NAMES, Job, run_target_stages
from numba_gpux.devices import resolve_target


@gpux.jit(device=True)
def inner(x):
    return x * 3.0 + 1.0


@gpux.jit(device=True)
def outer(x):
    return inner(x) - inner(x * 0.5)


@gpux.jit
def uses_helpers(a, out):
    i = gpux.grid(1)
    if i < a.size:
        out[i] = outer(a[i])


SIG = "void(float32[::1], float32[::1])"


@pytest.fixture(scope="module")
def art():
    return gpux.compile(uses_helpers, SIG, target="opencl")


def test_stage_list_is_ordered_and_named():
    assert STAGE_NAMES == ["map_ir", "mark_kernels", "converge", "parse", "link", "internalize", "finish",
                           "optimize", "validate", "emit"]


def test_only_kernels_stay_visible(art):
    ir = art.llvm_ir
    defined = re.findall(r"^define ([^@]*)@\"?([\w.$]+)", ir, re.M)
    visible = [name for attrs, name in defined if "internal" not in attrs and "private" not in attrs]
    assert visible == list(art.kernels)
    assert len(art.kernels) == 1


def test_no_portable_intrinsic_left(art):
    assert "__gpux_" not in art.llvm_ir


def test_device_functions_inlined_and_dropped(art):
    defined = re.findall(r"^define [^@]*@\"?([\w.$]+)", art.llvm_ir, re.M)
    assert defined == list(art.kernels)
    assert "inner" not in art.llvm_ir and "outer" not in art.llvm_ir


def test_spirv_has_one_entry_point_per_kernel(art):
    text = art.text
    assert text.count("OpEntryPoint Kernel") == 1
    assert art.binary[:4] == b"\x03\x02\x23\x07"  # SPIR-V magic, little endian


def test_spirv_passes_spirv_val(art, spirv_val, tmp_path):
    p = tmp_path / "k.spv"
    p.write_bytes(art.binary)
    res = subprocess.run([spirv_val, str(p)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr + res.stdout


def test_float32_stays_float32():
    import math

    @gpux.jit
    def f32_math(a):
        i = gpux.grid(1)
        if i < a.size:
            a[i] = math.sin(a[i]) * math.exp(a[i]) + abs(a[i]) + math.sqrt(a[i])

    art = gpux.compile(f32_math, "void(float32[::1])", target="opencl")
    assert "double" not in art.llvm_ir


def test_stages_can_start_from_ir_text():
    """Run the tail from the neutral text, stopping after optimize, then resume."""
    from numba.core import sigutils

    args, _ = sigutils.normalize_signature(SIG)
    sym, text = uses_helpers.kernel_ir(tuple(args))
    target = resolve_target("opencl")
    job = Job(target=target, options=Options(), kernels=(sym,), text=text, keep_ir=True)
    run_target_stages(job, stop="optimize")
    assert job.artifact is None and "optimize" in job.history
    run_target_stages(job, start="validate")
    assert job.artifact is not None and job.artifact.binary


def test_neutral_module_is_computed_once_per_signature():
    @gpux.jit
    def twice(a):
        i = gpux.grid(1)
        if i < a.size:
            a[i] += 1

    from numba.core import sigutils

    args, _ = sigutils.normalize_signature("void(int32[::1])")
    first = twice.neutral(tuple(args))
    again = twice.neutral(tuple(args))
    assert first is again and twice.stats["neutral_compiles"] == 1
    t1 = resolve_target("opencl")
    t2 = resolve_target("opencl", features=frozenset())  # a second description
    twice.code_for(tuple(args), t1)
    twice.code_for(tuple(args), t2)
    assert twice.stats["neutral_compiles"] == 1 and twice.stats["target_compiles"] == 2


def test_validation_rejects_fp64_on_device_without_it():
    @gpux.jit
    def needs_double(a):
        i = gpux.grid(1)
        if i < a.size:
            a[i] = a[i] * 2.0

    t = resolve_target("opencl", features=frozenset())
    with pytest.raises(gpux.ValidationError, match="float64"):
        gpux.compile(needs_double, "void(float64[::1])", target=t)


def test_validation_lists_unresolved_intrinsics_and_host_calls():
    from numba_gpux.stages import _stage_validate

    import llvmlite.binding as ll

    text = """
    target triple = "spirv64-unknown-unknown"
    declare i64 @__gpux_made_up(i32)
    declare i32 @puts(ptr)
    define spir_kernel void @k() {
      %a = call i64 @__gpux_made_up(i32 0)
      %b = call i32 @puts(ptr null)
      ret void
    }
    """
    job = Job(target=resolve_target("opencl"), options=Options(), kernels=("k",), name="k")
    job.module = ll.parse_assembly(text)
    with pytest.raises(gpux.ValidationError) as ei:
        _stage_validate(job)
    msg = str(ei.value)
    assert "__gpux_made_up" in msg and "'puts'" in msg and len(ei.value.problems) == 2


def test_recursion_is_rejected():
    @gpux.jit(device=True)
    def fact(n):
        if n <= 1:
            return 1
        return n * fact(n - 1)

    @gpux.jit
    def k(a):
        a[0] = fact(5)

    with pytest.raises(Exception, match="(?i)recurs"):
        gpux.compile(k, "void(int64[::1])", target="opencl")


def test_recursion_compiled_before_the_name_is_bound_types(tmp_path):
    """An eager signature compiles the function in its decorator, before its name is
    bound: the call of itself types as a recursive call (not an undefined name), and a
    target without a call stack refuses it, naming the target and the function."""
    path = tmp_path / "fib_module.py"
    path.write_text("import numba_gpux as gpux\n\n"
                    "@gpux.jit('int64(int64)', device=True)\n"
                    "def fib(n):\n"
                    "    return n if n < 2 else fib(n - 1) + fib(n - 2)\n")
    import importlib.util

    spec = importlib.util.spec_from_file_location("fib_module", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["fib_module"] = mod  # Numba names a recursive call by its module
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["fib_module"]
    fib = mod.fib

    @gpux.jit
    def k(a):
        a[0] = fib(a[0])

    assert str(fib.nopython_signatures[0]) == "(int64,) -> int64"
    with pytest.raises(gpux.ValidationError,
                       match="recursion is not supported on target 'opencl'.*fib -> "):
        gpux.compile(k, "void(int64[::1])", target="opencl")


def test_compile_device_function_exports_it():
    art = gpux.compile(inner, "float32(float32)", target="opencl", device=True)
    assert "OpEntryPoint" not in (art.text or "")
    assert art.llvm_ir.count("define ") == 1


def _saxpy(a, x, y, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def test_neutral_module_is_cleaned_once_at_every_opt_level(device):
    """The neutral module every target starts from has been through SROA /
    instcombine / simplifycfg (far fewer values in memory than Numba's lowering),
    at opt=0 too: LLVM's SPIR-V back end made invalid SPIR-V from the unoptimized
    form (the Intel driver rejected every opt=0 kernel)."""
    from numba.core import sigutils

    args, _ = sigutils.normalize_signature("void(float32, float32[::1], float32[::1], float32[::1])")
    args = tuple(args)
    x = np.arange(64, dtype=np.float32)
    y = np.ones(64, dtype=np.float32)
    for opt in (0, 3):
        k = gpux.jit(_saxpy, opt=opt)
        res = k.neutral(args)
        _, cleaned = k.kernel_ir(args)
        raw = res.library.neutral_ir()  # the lowered function alone, not cleaned
        assert cleaned.count(" alloca ") < raw.count(" alloca ")
        out = gpux.device_array(64, np.float32)
        k[2, 32](np.float32(2), gpux.to_device(x), gpux.to_device(y), out)
        np.testing.assert_array_equal(out.copy_to_host(), 2 * x + y)


@gpux.jit(device=True)
def _twice_at(a, i):
    return a[i] * 2


def test_opt_0_kernel_with_device_function_and_loop(device):
    @gpux.jit(opt=0)
    def k(x, out):
        i = gpux.grid(1)
        if i < out.size:
            s = 0.0
            for j in range(3):
                s += _twice_at(x, i) + j
            out[i] = s

    x = np.arange(64, dtype=np.float32)
    out = gpux.device_array(64, np.float32)
    k[2, 32](gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), 6 * x + 3)
