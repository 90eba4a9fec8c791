"""What a compile loads and how it runs: the costs kept out of a first compile and out
of each device function (benchmarks/bench_compile.py), each next to the behaviour it
must leave as it was."""

import math
import subprocess
import sys

import pytest
from numba.core import types
from numba.core.errors import TypingError

import numba_gpux as gpux

SIG = "void(float32[::1], float32[::1])"


def _fresh(code: str) -> str:
    """Run *code* in a new interpreter (nothing of this process loaded); its stdout."""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


# ------------------------------------------------------------------ what loads
_PROBE = """
import sys, math
import numpy as np
import numba_gpux as gpux

def k(out, x):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = math.sin(x[i]) * 2.0 + 1.0

gpux.compile(k, "void(float32[::1], float32[::1])", target="opencl")
print(sorted(m for m in ("cffi", "pycparser", "numba.np.arraymath",
                         "numba.core.inline_closurecall") if m in sys.modules))
"""


def test_a_first_kernel_loads_neither_cffi_nor_numpy_array_math():
    # Numba's typeof of a module or function imports cffi (for its check of cffi
    # objects); numba.np.arraymath loads when a kernel first needs it, Numba's inliner
    # when a function has something to inline
    assert _fresh(_PROBE).split("\n")[0] == "[]"


def test_sequence_operations_on_tuples_in_a_first_kernel():
    # `x in (2, 3)` lowers through Numba's list module, which a first kernel no longer
    # loads by the way (Numba's inliner imported it); the context installs it
    out = _fresh("""
import numpy as np
import numba_gpux as gpux

def k(a, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = 1 if a[i] in (2, 3) else 0

a = np.arange(6, dtype=np.int32)
out = np.zeros(6, np.int32)
gpux.jit(k)[1, 6](a, out)
print(out.tolist())
""")
    assert out.strip() == "[0, 0, 1, 1, 0, 0]"


def test_axis_forms_after_array_math_loads_late():
    # the kernel language's axis= forms (language/arrayaxis.py: Numba's word the axis
    # check with an f-string, which kernels cannot build) are installed when array math
    # loads in the middle of a process's compiles, and when something else loaded it
    axis_kernel = """
def s(a, out):
    m = a.reshape((2, 3))
    c = np.cumsum(m, axis=1)
    t = m.sum(axis=0)
    out[0] = c[1, 2] + t[2]

import numba_gpux.language.arrayaxis as ax
gpux.compile(s, "void(float64[::1], float64[::1])", target="opencl")
print("numba.np.arraymath" in sys.modules)
"""
    assert _fresh(_PROBE + axis_kernel).split("\n")[:2] == ["[]", "True"]
    # Numba's CPU target (an @njit function) loaded it before the first kernel
    first = "import numba.np.arraymath\n"
    assert _fresh(first + _PROBE + axis_kernel).split("\n")[1] == "True"


def test_module_and_function_globals_type_as_numba_types_them():
    import math

    from numba_gpux.context import typing_context

    tctx = typing_context()
    assert tctx.resolve_value_type(math) == types.Module(math)
    assert tctx.resolve_value_type(gpux) == types.Module(gpux)
    fnty = tctx.resolve_value_type(math.sin)
    assert isinstance(fnty, types.Function) and fnty.typing_key is math.sin
    with pytest.raises(ValueError):
        tctx.resolve_value_type(object())


# ------------------------------------------------------------------ the pass pipeline
# Numba's passes for closures run only for functions whose bytecode makes one
# (language/checks.py's GpuxCompiler): the closures below need them


@gpux.jit(device=True)
def _apply(f, v):
    return f(v)


def test_closures_called_in_a_kernel(opencl_device):
    import numpy as np

    @gpux.jit
    def k(out, x):
        i = gpux.grid(1)

        def scale(v):
            return v * 3.0
        if i < out.size:
            c = 2.0
            out[i] = scale(x[i]) + (lambda v: v + c)(x[i])

    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)
    k[1, 8](out, x)
    np.testing.assert_array_equal(out, x * 3 + x + 2)


def test_a_closure_passed_to_a_device_function(opencl_device):
    import numpy as np

    @gpux.jit
    def k(out, x):
        i = gpux.grid(1)
        c = 5.0

        def add(v):
            return v + c
        if i < out.size:
            out[i] = _apply(add, x[i])

    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)
    k[1, 8](out, x)
    np.testing.assert_array_equal(out, x + 5)


def test_the_pipeline_is_made_once_and_fits_the_function():
    from numba.core.untyped_passes import MakeFunctionToJitFunction, WithLifting

    from numba_gpux.language import checks

    @gpux.jit(device=True)
    def plain(x):
        return x + 1.0

    @gpux.jit(device=True)
    def closure(x):
        return (lambda v: v * 2.0)(x)

    pipelines = {}
    real = checks.GpuxCompiler.define_pipelines

    def spy(self):
        pms = real(self)
        pipelines[self.state.func_id.func_name] = [p for p, _ in pms[0].passes]
        return pms

    checks.GpuxCompiler.define_pipelines = spy
    try:
        plain.neutral((types.float64,))
        closure.neutral((types.float64,))
    finally:
        checks.GpuxCompiler.define_pipelines = real
    assert MakeFunctionToJitFunction not in pipelines["plain"]
    assert WithLifting not in pipelines["plain"]
    assert MakeFunctionToJitFunction in pipelines["closure"]
    assert len(checks._pipelines) == 1


def test_pass_events_timings_and_error_context_as_numba_gives_them():
    from numba.core import event

    @gpux.jit(device=True)
    def listened(x):
        return x - 1.0

    @gpux.jit(device=True)
    def unlistened(x):
        return x - 2.0

    with event.install_recorder("numba:run_pass") as rec:
        listened.neutral((types.float64,))
    names = {e.data["name"].split(" [")[0] for _, e in rec.buffer}
    assert {"nopython_type_inference", "native_lowering"} <= names
    res = unlistened.neutral((types.float64,))
    times = res.cres.metadata["pipeline_times"]["nopython"]
    assert any(k.endswith("_nopython_type_inference") for k in times)
    assert all(v.run >= 0 for v in times.values())

    def bad(out, x):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = x[i] + "text"

    with pytest.raises(TypingError, match="During: Pass nopython_type_inference"):
        gpux.compile(bad, SIG, target="opencl")


# ------------------------------------------------------------------ device arrays read
# from globals: a device function that reads one is inlined into its kernel's IR
# (dispatcher.targetoptions); the search runs once per function within a compile


def test_a_chain_is_searched_for_global_device_arrays_once_per_function(opencl_device):
    import numpy as np

    from numba_gpux.language import checks

    table = gpux.to_device(np.array([10.0, 20.0, 30.0, 40.0], np.float64))
    ns = {"gpux": gpux, "table": table}
    src = ["@gpux.jit(device=True)\ndef g0(i):\n    return table[i % 4]\n"]
    n = 16
    for i in range(1, n):
        src.append(f"@gpux.jit(device=True)\ndef g{i}(i):\n    return g{i - 1}(i) + 1.0\n")
    src.append(f"@gpux.jit\ndef k(out):\n    i = gpux.grid(1)\n    if i < out.size:\n"
               f"        out[i] = g{n - 1}(i)\n")
    exec("\n".join(src), ns)
    calls = []
    real = checks._reads_device_arrays

    def counted(py_func, seen):
        calls.append(py_func.__name__)  # (each search of a function)
        return real(py_func, seen)

    checks._reads_device_arrays = counted
    try:
        out = np.zeros(8)
        ns["k"][1, 8](out)
    finally:
        checks._reads_device_arrays = real
    np.testing.assert_array_equal(out, np.resize([10.0, 20.0, 30.0, 40.0], 8) + (n - 1))
    assert len(calls) <= 3 * n, len(calls)  # a search per caller: n * n / 2


# ------------------------------------------------------------------ passes left out
# (language/checks.py's _IDLE): the code is the same as with them


def _scalar_loop(x, n):
    s = 0.0
    for i in range(n):
        if i % 3 == 0:
            s += x * i
        else:
            s -= (x, 2.0)[1]
    return s


def _array_expression(a, b):
    return (a + b * 2.0)[0]


def _branches_and_math(x, n):
    t = (x, x + 1.0)
    if n > 2:
        return math.sin(t[0]) * n
    elif n < -2:
        return -t[1] if x > 0 else abs(x)
    return t[n % 2]


def _while_loop(x, n):
    i = 0
    while i < n:
        x = x * 0.5
        i += 1
    return x


def _closure_and_tuple(x, n):
    t = (x, x + 1.0, n)

    def pick(k):
        return t[k] * 2.0
    return pick(0) + pick(1) + t[2]


@pytest.mark.parametrize("fn, argtypes", [
    (_scalar_loop, (types.float64, types.int64)),
    (_branches_and_math, (types.float64, types.int64)),
    (_closure_and_tuple, (types.float32, types.int32)),
])
def test_passes_left_out_leave_the_same_code(fn, argtypes):
    from numba_gpux.language import checks

    def neutral_text():
        import re

        text = gpux.jit(fn, device=True).neutral(argtypes).library.neutral_ir()
        # (each compile's own: the version in mangled names, addresses in generated ones)
        return re.sub(r"0x[0-9a-f]+", "0x", re.sub(r"B\d+v\d+B", "BvB", text))

    lean = neutral_text()
    idle = dict(checks._IDLE)
    checks._IDLE.clear()
    try:
        full = neutral_text()
    finally:
        checks._IDLE.update(idle)
    assert lean == full


def test_typed_rewrites_run_where_they_may_apply():
    def ran(fn, argtypes):
        res = gpux.jit(fn, device=True).neutral(argtypes)
        return any(k.endswith("_nopython_rewrites")
                   for k in res.cres.metadata["pipeline_times"]["nopython"])

    assert ran(_array_expression, (types.float64[::1], types.float64[::1]))
    assert not ran(_scalar_loop, (types.float64, types.int64))


def test_closure_inlining_runs_where_it_may_apply():
    def ran(fn, argtypes):
        res = gpux.jit(fn, device=True).neutral(argtypes)
        return any(k.endswith("_inline_closure_likes")
                   for k in res.cres.metadata["pipeline_times"]["nopython"])

    assert ran(_scalar_loop, (types.float64, types.int64))  # a loop
    assert ran(_while_loop, (types.float64, types.int64))
    assert ran(_closure_and_tuple, (types.float32, types.int32))  # a closure
    assert not ran(_branches_and_math, (types.float64, types.int64))


def _cost_model(calls):
    def consult(expr, caller, callee):
        calls.append(expr)
        return True
    return consult


_NJIT_CONSULTED: list = []
_OVERLOAD_CONSULTED: list = []


def _inline_me(x):
    raise NotImplementedError


def _overloaded_inline(x):
    raise NotImplementedError


def _register_inline_overload():
    from numba.core.extending import overload

    @overload(_overloaded_inline, target="gpux", inline=_cost_model(_OVERLOAD_CONSULTED))
    def impl(x):
        return lambda x: x * 3.0


def test_inliners_run_where_something_may_be_inlined():
    """Numba's two inlining passes run for a function that calls something jitted with
    ``inline`` (a cost model, here, which records that the pass asked it) and are left
    out of one that calls nothing such (language/checks.py's ``_IDLE``)."""
    import numba

    _register_inline_overload()
    njit_inline = numba.njit(inline=_cost_model(_NJIT_CONSULTED))(lambda x: x + 1.0)

    def calls_njit(x):
        return njit_inline(x) * 2.0

    def calls_overload(x):
        return _overloaded_inline(x) + 1.0

    def passes(fn):
        res = gpux.jit(fn, device=True).neutral((types.float64,))
        return {k.split("_", 1)[1] for k in res.cres.metadata["pipeline_times"]["nopython"]}

    assert "inline_inlinables" in passes(calls_njit) and _NJIT_CONSULTED
    assert "inline_overloads" in passes(calls_overload) and _OVERLOAD_CONSULTED
    assert not {"inline_inlinables", "inline_overloads"} & passes(lambda x: math.sin(x) * 2.0)
    dev_njit, dev_overload = (gpux.jit(f, device=True) for f in (calls_njit, calls_overload))

    @gpux.jit
    def k(out, x):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = dev_njit(x[i]) + dev_overload(x[i])

    import numpy as np
    x = np.arange(8, dtype=np.float64)
    out = np.zeros_like(x)
    k[1, 8](out, x)
    np.testing.assert_array_equal(out, (x + 1.0) * 2.0 + x * 3.0 + 1.0)


# ------------------------------------------------------------------ typed calls
def _scaled_sum(out, x):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = x[i] * 1.5 + x[i] * 2.5


def test_calls_typed_once_until_a_registry_changes():
    """A global function's call with the same argument types is typed once (every
    function compiled after, and the lowering of each operator, find the signature),
    and the signatures found are those typing gives; a registration that a later
    compile installs empties what was kept."""
    import operator

    from numba.core.extending import overload

    from numba_gpux.context import typing_context

    # (a first compile in a process may load and install registries as it goes: the
    # second one's calls are kept)
    for _ in range(2):
        gpux.compile(gpux.jit(_scaled_sum), SIG, target="opencl")
    ctx = typing_context()
    kept = {k: sig for k, sig in ctx._typed_calls.items()
            if getattr(k[0], "typing_key", None) is operator.mul}
    assert kept, ctx._typed_calls
    for (fnty, semantics, *args), sig in kept.items():
        assert semantics == gpux.compiler.Semantics()  # (gpux.jit's, outside a compile)
        fresh = type(ctx).__mro__[1].resolve_function_type(ctx, fnty, tuple(args), {})
        assert fresh == sig, (args, fresh, sig)
        assert ctx.resolve_function_type(fnty, tuple(args), {}) is sig

    def _typed_calls_marker(x):  # registered now: the next compile's refresh installs it
        return x

    @overload(_typed_calls_marker, target="gpux")
    def _ov(x):
        return lambda x: x

    def plain(out, x):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = _typed_calls_marker(x[i])

    gpux.compile(gpux.jit(plain), SIG, target="opencl")
    assert not any(getattr(k[0], "typing_key", None) is operator.mul
                   for k in ctx._typed_calls), ctx._typed_calls


# ------------------------------------------------------------------ private arrays
def test_a_private_array_is_zeroed_by_one_memset(opencl_device):
    """``local.array`` starts zeroed (as Numba's ``alloca_once`` leaves it) by a memset,
    not by a store of a zero aggregate, which SROA and InstCombine split element by
    element in time that grew with the square of its length (20,000 floats: minutes)."""
    import numpy as np

    n = 20000

    def k(out, m):
        t = gpux.local.array(n, np.float32)
        for j in range(m):
            t[j] = j + 1.0
        out[0] = t[m - 1]
        out[1] = t[m]  # never written: zero

    fn = gpux.jit(k)
    text = fn.neutral((types.float32[::1], types.int64)).library.neutral_ir()
    assert "llvm.memset" in text and f"[{n} x float] zeroinitializer" not in text
    out = np.full(2, -1.0, np.float32)
    fn[1, 1](out, 100)
    np.testing.assert_array_equal(out, [100.0, 0.0])
