"""A small, seeded budget of the differential fuzzer (tests/gpux_fuzz.py): random
kernels compiled on every available route and opt level must agree with numba.njit
on the CPU.  Long runs: benchmarks/fuzz.py (docs/testing.md)."""

from __future__ import annotations

import random
import warnings

import numpy as np
import pytest

import gpux_fuzz as F

SEED = 20261201
N_CASES = 10
#: the opt levels each route is run at here (benchmarks/fuzz.py runs every level)
OPTS = {"spirv": (0, 3), "opencl-c": (0, 3), "cuda-ptxas": (1,)}


def _route_params():
    routes = F.available_routes()
    if not routes:
        return [pytest.param(None, None, marks=pytest.mark.skip(
            reason="no OpenCL device with SPIR-V and no ptxas"))]
    return [pytest.param(r, o, id=f"{r}-O{o}") for r in routes for o in OPTS.get(r, (3,))]


@pytest.fixture(scope="module")
def batch_and_reference():
    batch = F.generate_batch(SEED, N_CASES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return batch, F.reference(batch)


@pytest.mark.parametrize("route, opt", _route_params())
def test_random_kernels_agree_with_numba(route, opt, batch_and_reference):
    batch, want = batch_and_reference
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        got = F.run_batch(batch, [route], opt)[route]
    if isinstance(got, Exception):
        raise AssertionError(f"{route} at opt={opt} did not compile the batch of seed {SEED}: "
                             f"{type(got).__name__}: {got}")
    if got is None:  # the CUDA compile path: ptxas accepted it
        return
    bad = F.compare(batch, got, want)
    assert not bad, "\n\n".join(
        f"{c.name} on {route} at opt={opt}, work-item {k}: got {g!r}, want {w!r}\n{c.source}"
        for c, k, g, w in bad)


def test_generator_is_seeded_and_varied():
    a = F.generate_batch(5, 6)
    b = F.generate_batch(5, 6)
    assert a.source(True) == b.source(True) and a.source(False) == b.source(False)
    assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a.inputs()[:5], b.inputs()[:5]))
    assert a.inputs()[5].tobytes() == b.inputs()[5].tobytes()
    text = "\n".join(c.source for c in F.generate_batch(11, 60).cases)
    for construct in ("for ", "while ", "if ", "break", "LOCAL_ARRAY", "math.", " >> ",
                      "np.float32(", "np.uint64(", "_h0(", " if "):
        assert construct in text, construct


def test_generator_writes_what_users_write():
    """String constants compared and passed to device functions, records read and
    written, names and prints spelled like IR, atomics with computed indices and
    barriers: all appear in a few batches."""
    batches = [F.generate_batch(seed, 4) for seed in range(40, 80)]
    gpu = "\n".join(b.source(True) for b in batches)
    for construct in (" = '", "_hs(s", "len(s", "gpux.atomic.add(", "gpux.atomic.cas(",
                      "gpux.atomic.max(", ", s + 1, ",
                      "gpux.atomic.add(AS, ", "gpux.barrier()", "gpux.shared.array(",
                      "print(", "R[i]"):
        assert construct in gpu, construct
    assert any(b.record for b in batches) and any(b.kernel_name != "kern" for b in batches)
    spelled = {t for b in batches for c in b.cases for t in F.IR_TEXTS if repr(t) in c.source}
    assert len(spelled) >= 8, spelled
    fields = [f for b in batches if b.record for f, _ in b.record]
    assert any(not f.isidentifier() for f in fields)
    assert all(b.section is None or b.section.every >= 1 for b in batches)
    # the same on the CPU side, where atomics and barriers are sequential code
    cpu = "\n".join(b.source(False) for b in batches)
    assert "gpux." not in cpu and "for t in range(64):" in cpu


def test_avoiding_known_defects_leaves_their_content_out():
    content = F.Content(avoid=True)
    assert content.texts() and content.names_() and content.fields()
    assert not any(F.known_defect(t) for t in (*content.texts(), *content.names_(),
                                               *content.fields()))
    for bad in ("a ptr b", "i24", "x i128", "call @sin(x)", "memcpy.p0.p0", "ünï"):
        assert F.known_defect(bad), bad
    for fine in ("i64", "i1 x", "double", "half", "%", '"', "", "#0"):
        assert not F.known_defect(fine), fine


def test_generated_integers_stay_clear_of_signed_overflow():
    """The interval of every generated signed expression is within int64, so
    Numba's nsw arithmetic has the same meaning on both sides."""
    rng = random.Random(3)
    g = F._Gen(rng, "t")
    g.vars["a0"] = (F.I64, -(2 ** 40), 2 ** 40)
    for _ in range(500):
        code, t, lo, hi = g.expr(F.I64, 3)
        assert -(2 ** 63) <= lo <= hi <= 2 ** 63 - 1, code


def _results(batch, oi, of):
    out = dict(zip(("OI", "OF", *F.EXTRA_OUTPUTS), (oi, of, *batch.outputs()[2:])))
    out["R"] = batch.inputs()[5]
    out["printed"] = ""
    return out


def test_compare_allows_ulps_only_for_transcendental_cases():
    exact = F.Case("e", "", [], F.F64, 0)
    approx = F.Case("a", "", [], F.F64, 4)
    batch = F.Batch([exact, approx], 0, 1)
    x = 1.0
    near = np.nextafter(np.nextafter(x, 2.0), 2.0)
    want = _results(batch, np.zeros((1, 1), np.int64), np.array([[x, x]]))
    got = _results(batch, np.zeros((1, 1), np.int64), np.array([[near, near]]))
    bad = F.compare(batch, got, want)
    assert [c.name for c, *_ in bad] == ["e"]
    nan = _results(batch, np.zeros((1, 1), np.int64), np.array([[np.nan, np.nan]]))
    assert F.compare(batch, nan, nan) == []


def test_compare_reports_kernel_level_results():
    batch = F.Batch([], 0, 2, record=[("i24", F.I64), ("%x", F.F32)], kernel_name="ptr_kern")
    want = _results(batch, np.zeros((2, 1), np.int64), np.zeros((2, 1)))
    got = _results(batch, np.zeros((2, 1), np.int64), np.zeros((2, 1)))
    got["R"] = got["R"].copy()
    got["R"]["%x"][1] = np.nan
    got["AS"] = got["AS"].copy()
    got["AS"][5] += 1
    got["printed"] = "x\n"
    names = [c.name for c, *_ in F.compare(batch, got, want)]
    assert names == ["ptr_kern:record field '%x'", "ptr_kern:AS", "ptr_kern:printed"]


def test_minimize_keeps_the_failure_and_shrinks():
    src = ("@DEV\ndef f(a0):\n    v1 = a0 + 1\n    v2 = a0 * 3\n    if a0 > 0:\n"
           "        v3 = v2 - 1\n    return v2\n")
    case = F.Case("f", src, [F.I64], F.I64)
    small = F.minimize(case, lambda c: "v2 = a0 * 3" in c.source and "return v2" in c.source)
    assert "v2 = a0 * 3" in small.source and "v1" not in small.source and "v3" not in small.source


def test_reduce_cases_finds_the_company_a_failure_needs():
    """A failure that needs cases 3 and 11 of a batch (in any order) keeps those two."""
    others = list(range(20))
    checks = []

    def still(sub):
        checks.append(len(sub))
        return 3 in sub and 11 in sub

    assert sorted(F.reduce_cases(others, still)) == [3, 11]
    assert len(checks) <= 40
    assert F.reduce_cases(others, lambda sub: True) == []
    # a budget of checks is kept: what is left still fails
    kept = F.reduce_cases(others, still, max_steps=3)
    assert 3 in kept and 11 in kept


def test_check_cases_reports_on_the_named_case():
    routes = F.available_routes()
    if not routes:
        pytest.skip("no OpenCL device with SPIR-V and no ptxas")
    batch = F.generate_batch(SEED, 3)
    inputs = [a.tolist() for a in batch.inputs()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        status, detail = F.check_cases(batch.cases, inputs, routes[0], 3, batch.cases[1].name,
                                       **F.batch_spec(batch))
    assert (status, detail) == ("ok", "")
    text = F.batch_reproducer(batch.cases, inputs, batch.cases[1].name, routes[0], 3,
                              "a test", "repro.py", "/nonexistent/tests", F.batch_spec(batch))
    compile(text, "repro.py", "exec")
    assert batch.cases[1].name in text and "check_cases" in text and "SPEC" in text


def test_minimize_keeps_the_local_array_filled():
    """Removing the fill loop would leave a read of uninitialized memory (undefined on
    both sides), which 'fails' for no reason of ours."""
    src = ("@DEV\ndef f(a0):\n    arr = LOCAL_ARRAY(8, np.int64)\n    for q in range(8):\n"
           "        arr[q] = a0\n    v1 = a0 + 1\n    return arr[a0 & 7]\n")
    case = F.Case("f", src, [F.I64], F.I64)
    small = F.minimize(case, lambda c: True)
    assert "LOCAL_ARRAY" in small.source and "arr[q] = a0" in small.source
    assert "v1" not in small.source


def test_reproducer_runs_with_infinite_inputs(tmp_path):
    import subprocess
    import sys

    routes = [r for r in F.available_routes() if r != "cuda-ptxas"]
    if not routes:
        pytest.skip("no OpenCL device with SPIR-V")
    src = "@DEV\ndef f(a0, a1):\n    return a0 + a1\n"
    case = F.Case("f", src, [F.F64, F.F64], F.F64)
    inputs = ([[0]], [[0]], [[np.inf, 1.0], [np.nan, 2.0], [-np.inf, 0.5]], [[0.0]], [[False]])
    path = tmp_path / "repro.py"
    path.write_text(F.reproducer(case, inputs, routes[0], 3, "a test", str(path)))
    p = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr


# -- the checks the fuzzer adds to every compile --

def test_verifying_rewrites_names_a_rewrite_that_makes_invalid_ir():
    """A rewrite whose result LLVM's verifier rejects (here: one that drops the `ret`
    of every function, leaving blocks without terminators) is named; valid rewrites and
    the module outside the block are left alone."""
    from numba_gpux import legalize

    ir = "define i32 @f(i32 %x) {\nentry:\n  %y = add i32 %x, 1\n  ret i32 %y\n}\n"

    def drop_returns(text):
        return "\n".join(ln for ln in text.split("\n") if not ln.strip().startswith("ret "))

    legalize.REWRITES["drop_returns_for_test"] = drop_returns
    try:
        with F.verifying_rewrites():
            assert legalize.apply_rewrites(ir, ("sitofp_i1",)) == ir
            with pytest.raises(F.VerifyError, match="legalize.drop_returns_for_test"):
                legalize.apply_rewrites(ir, ("drop_returns_for_test",))
        assert legalize.REWRITES["drop_returns_for_test"] is drop_returns
        assert "drop_returns_for_test" in legalize.apply_rewrites(ir, ()) or True
        assert "ret" not in legalize.apply_rewrites(ir, ("drop_returns_for_test",))
    finally:
        del legalize.REWRITES["drop_returns_for_test"]


def test_spirv_val_check_accepts_ours_and_rejects_a_damaged_module(spirv_val):
    import numba_gpux as gpux

    @gpux.jit
    def add_one(a):
        i = gpux.grid(1)
        if i < a.size:
            a[i] += 1

    binary = gpux.compile(add_one, "void(float32[::1])", target="opencl").binary
    F.spirv_val_check(binary)
    with pytest.raises(F.VerifyError, match="spirv-val"):
        F.spirv_val_check(binary[:len(binary) // 2])


# -- kernels that once broke a route, reduced from random and library kernels --

def _opencl():
    import numba_gpux as gpux

    devs = [d for d in gpux.devices() if d.target_name == "opencl"]
    if not devs:
        pytest.skip("no OpenCL device with SPIR-V")
    return devs[0]


def test_two_float32_atomic_adds_at_a_computed_index():
    import numba_gpux as gpux
    from gpux_testing import selected

    @gpux.jit
    def bins(a, step, every, out):
        s = step // every
        i = gpux.grid(1)
        if i < a.shape[0]:
            gpux.atomic.add(out, s, a[i])
            gpux.atomic.add(out, s + 1, a[i])

    with selected(_opencl()):
        out = gpux.to_device(np.zeros(4, np.float32))
        bins[2, 32](gpux.to_device(np.ones(64, np.float32)), 8, 4, out)
        assert out.copy_to_host().tolist() == [0, 0, 64, 64]


REPORTED_RANDOM_KERNEL = """
def f(a, b, c, d, e, f_, g, h):
    v1 = math.floor(min(max((f_ if f_ == f_ else 0.0), -1e15), 1e15))
    t2 = (h * e)
    v3 = np.int32(min(max((t2 if t2 == t2 else 0.0), -2e9), 2e9))
    arr4 = LOCAL_ARRAY(4, np.int32)
    for j5 in range(4):
        arr4[(j5) & 3] = np.int32(((np.int32(1) & v1) + (-np.int64(774))))
    v6 = np.uint32(176)
    if ((b ^ d) > (abs(v6) | (c if (v6 > v1) else np.int32(65535)))):
        for j7 in range(np.int64(abs(arr4[(v6) & 3]) & 7)):
            v8 = math.floor(min(max((h if h == h else 0.0), -1e15), 1e15))
            v9 = ((abs(v3) + (j7 ^ v3)) % (((np.int64(min(max((e if e == e else 0.0), -9e18),
                9e18)) // (((v8 + v1) & 127) + 2)) & 127) + 2))
            v10 = (-((-g) / (-(abs((v3 + e)) + 0.5))))
    return ((((t2 + v1) * v6) + arr4[((np.int32(1) >> (v6 & 63))) & 3]) + v3)
"""


def _build(decorator, local_array):
    import math

    ns = {"np": np, "math": math, "LOCAL_ARRAY": local_array}
    exec(REPORTED_RANDOM_KERNEL, ns)
    return decorator(ns["f"])


def test_random_kernel_at_opt1_is_valid_spirv_and_agrees_with_numba():
    import numba
    from numba import typeof

    from gpux_testing import selected

    import numba_gpux as gpux

    ref = _build(numba.njit, np.empty)
    dev_f = _build(gpux.jit(device=True), gpux.local.array)

    @gpux.jit(opt=1)
    def k(a, b, c, d, e, f_, g, h, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = dev_f(a[i], b[i], c[i], d[i], e[i], f_[i], g[i], h[i])

    rng = np.random.default_rng(1)
    args = [rng.integers(-50, 50, 16).astype(t) for t in (np.int32, np.int32, np.int64)]
    args += [rng.integers(0, 300, 16).astype(np.uint32)]
    args += [rng.uniform(-20, 20, 16).astype(t) for t in (np.float32, np.float32, np.float64,
                                                           np.float64)]
    out = np.zeros(16)
    want = np.array([ref(*(a[i] for a in args)) for i in range(16)], np.float64)
    dev = _opencl()
    if F.spirv_val_path():
        sig = tuple(typeof(a) for a in (*args, out))
        F.spirv_val_check(gpux.compile(k, sig, target=dev).binary)
    with selected(dev):
        d_out = gpux.to_device(out)
        k[1, 16](*[gpux.to_device(a) for a in args], d_out)
        np.testing.assert_array_equal(d_out.copy_to_host(), want)


def test_atomics_on_one_array_commute():
    """Work-items reach a shared slot in any order: the operations one array gets in a
    kernel must commute (add with sub, or one of max, min, and, or, xor), else the
    expected result depends on the order numba.njit happens to run them in."""
    import re

    groups = [{"add", "sub"}, {"max"}, {"min"}, {"and_"}, {"or_"}, {"xor"}]
    seen = 0
    for seed in range(200):
        sec = F.generate_section(random.Random(seed), F.Content())
        ops = {}
        for gpu, _, _ in sec.ops:
            for op, arr in re.findall(r"gpux\.atomic\.(\w+)\((AI|AW|AS|AD),", gpu[0]):
                ops.setdefault(arr, set()).add(op)
        for arr, used in ops.items():
            seen += len(used) > 1
            assert any(used <= g for g in groups), (seed, arr, used)
    assert seen  # add and sub do meet on one array
