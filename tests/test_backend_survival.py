"""Valid kernels that once made LLVM's SPIR-V back end abort the process compile and run.

A tuple indexed at run time is lowered by Numba as a ``switch`` whose cases meet in
one ``phi`` of the element's type; for a tuple of arrays that is a phi of array
structs, ``{ ptr, ptr, i64, i64, ptr, [2 x i64], [2 x i64] }``, which LLVM 22's
SPIR-V back end cannot select: it asserted (``ArrayRef::drop_front``) and took the
Python process down while we emitted.  The compiler splits such phis down to their
scalar leaves (``legalize.split_aggregate_phis``).  A 0-d array's struct left in private
memory (``np.percentile``) has arrays of no elements, which the back end wrote as
runtime arrays and then stopped the process; such variables are allocated as bytes
(``legalize_sizes.zero_length_allocas``).

An abort cannot be caught, so every kernel here is compiled and run by a child
process: a regression fails the test with the child's output instead of killing
pytest.  The children run on the OpenCL CPU device (the SPIR-V route) and compare
with NumPy; the same kernels compile for CUDA (PTX, checked here without a GPU).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from llvmlite import binding as ll

from numba_gpux import irtext, legalize

ROOT = Path(__file__).resolve().parent.parent

_CHILD = '''
import json, math, sys
import numpy as np
import numba_gpux as gpux
from numba_gpux import cuda

gpux.select_device(sys.argv[1])
A = np.arange(12.0).reshape(3, 4)
B = A * 10 + 1
C = A * 100 + 2
ARRS = (A, B, C)


@gpux.jit
def column_of_global_tuple(out, k, j):
    i = gpux.grid(1)
    col = ARRS[k][:, j]
    if i < col.shape[0]:
        out[i] = col[i]


def closure_kernel():
    arrs = (A, B, C)

    @cuda.jit
    def column_of_closure_tuple(out, k, j):  # through the numba.cuda facade
        i = cuda.grid(1)
        col = arrs[k][:, j]
        if i < col.shape[0]:
            out[i] = col[i]
    return column_of_closure_tuple


NESTED = ((A, B), (B, C))


@gpux.jit
def column_of_nested_tuple(out, k, m, j):
    i = gpux.grid(1)
    col = NESTED[k][m][:, j]
    if i < col.shape[0]:
        out[i] = col[i]


@gpux.jit
def row_of_argument_tuple(out, arrs, k, j):
    i = gpux.grid(1)
    row = arrs[k][j, 1:]
    if i < row.shape[0]:
        out[i] = row[i]


def run(name, fn):
    try:
        got, want = fn()
        res = {"case": name, "equal": bool(np.array_equal(got, want)),
               "got": got.tolist(), "want": want.tolist()}
    except Exception as e:
        res = {"case": name, "error": f"{type(e).__name__}: {e}"}
    print("CASE " + json.dumps(res), flush=True)


def global_tuple():
    out = gpux.to_device(np.zeros(3))
    column_of_global_tuple[1, 4](out, 1, 2)
    return out.copy_to_host(), B[:, 2]


def closure_tuple_negative_index():
    out = gpux.to_device(np.zeros(3))
    closure_kernel()[1, 4](out, -1, 3)
    return out.copy_to_host(), C[:, 3]


def nested_tuple():
    out = gpux.to_device(np.zeros(3))
    column_of_nested_tuple[1, 4](out, 1, 0, 1)
    return out.copy_to_host(), B[:, 1]


def argument_tuple():
    out = gpux.to_device(np.zeros(3))
    row_of_argument_tuple[1, 4](out, tuple(gpux.to_device(x) for x in ARRS), 2, 1)
    return out.copy_to_host(), C[1, 1:]


@gpux.jit
def shared_tuple(out, k):
    i = gpux.grid(1)
    x = gpux.shared.array(4, np.float64)
    y = gpux.shared.array(4, np.float64)
    z = gpux.shared.array(4, np.float64)
    x[i % 4] = i
    y[i % 4] = 10 * i
    z[i % 4] = 100 * i
    gpux.barrier()
    out[i] = (x, y, z)[k][(i + 1) % 4] + (x, y)[k % 2][i % 4]


def shared_arrays_tuple():
    got, want = [], []
    for k in (0, 1, 2, -1, -3):
        out = gpux.to_device(np.zeros(4))
        shared_tuple[1, 4](out, k)
        got.extend(out.copy_to_host())
        i = np.arange(4)
        scale = (1, 10, 100)[k]
        want.extend(scale * ((i + 1) % 4) + (1, 10)[k % 2] * i)
    return np.array(got), np.array(want, dtype=np.float64)


def ptx_too():
    sig = "void(float64[::1], int64, int64)"
    ptx = gpux.compile(column_of_global_tuple, sig, target="cuda", cubin=False).asm
    return np.array([".entry" in ptx]), np.array([True])


@gpux.jit
def quantiles(out, a):
    out[0] = np.percentile(a, 30.0)
    out[1] = np.quantile(a, 0.75)
    out[2] = np.nanmedian(a)


def zero_dimensional_array_in_memory():
    # np.percentile leaves a 0-d array's struct (shape and strides of no elements) in
    # memory, which LLVM's SPIR-V back end wrote as a runtime array, then aborted
    a = np.array([3.0, 1.0, 2.0, 10.0, 7.5])
    out = gpux.to_device(np.zeros(3))
    quantiles[1, 1](out, gpux.to_device(a))
    return out.copy_to_host(), np.array([np.percentile(a, 30.0), np.quantile(a, 0.75),
                                         np.nanmedian(a)])


@gpux.jit(device=True)
def heavy(a, b, c):
    s = 0.0
    t = 0.0
    for k in range(3):
        x = math.atan(a * k + b) + math.sqrt(abs(c) + k) * math.cos(a + k)
        y = math.log(abs(b) + 1.0 + k) * math.acos(min(1.0, max(-1.0, c / (k + 2.0))))
        if x > y:
            s += math.atan2(x, y) * math.exp(-abs(x))
        else:
            t += math.hypot(x, y) / (1.0 + abs(y))
    return s, t


@gpux.jit(device=True)
def prints_after_device_calls_body(a, i):
    p, q = heavy(a[i, 0], a[i, 1], a[i, 2])
    r, u = heavy(a[i, 3], a[i, 1], a[i, 2])
    v, w = p + r, q + u
    if a[i, 2] * a[i, 3] < 0:
        if abs(a[i, 2]) < abs(a[i, 3]):
            if w < v:
                print("check failed: w < v", v, w, a[i, 2])
            return w - v
        if v < w:
            print("check failed: v < w", v, w, a[i, 3])
        return v - w
    return v + w


@gpux.jit
def prints_after_device_calls(a, out):
    i = gpux.grid(1)
    if i < out.shape[0]:
        out[i] = prints_after_device_calls_body(a, i)


def prints_in_branches_after_device_calls():
    # error prints in a few branches after calls of a device function LLVM does not
    # inline: LLVM 22's SPIR-V back end took the constant format string for one in
    # another space and ended the process; the kernel runs, its prints left out, with a
    # warning saying so
    import warnings
    global heavy
    a = np.random.default_rng(0).standard_normal((64, 4))
    out = gpux.to_device(np.zeros(64))
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        prints_after_device_calls[1, 64](gpux.to_device(a), out)
    heavy = heavy.py_func  # (the body's reference calls Python's)
    want = [prints_after_device_calls_body.py_func(a, i) for i in range(64)]
    warned = any("print() calls of kernel" in str(w.message) for w in got)
    ok = np.allclose(out.copy_to_host(), want, rtol=1e-12, atol=1e-12)
    return np.array([ok, warned]), np.array([True, True])


for name in ("global_tuple", "closure_tuple_negative_index", "nested_tuple",
             "argument_tuple", "shared_arrays_tuple", "ptx_too",
             "zero_dimensional_array_in_memory", "prints_in_branches_after_device_calls"):
    run(name, globals()[name])
'''


@pytest.fixture(scope="module")
def child_results(tmp_path_factory):
    import numba_gpux as gpux
    from gpux_testing import testable_here

    devs = [d for d in gpux.devices() if d.target_name == "opencl" and testable_here(d)]
    if not devs:
        pytest.skip("no SPIR-V capable OpenCL device (pip install 'numba-gpux[cpu]')")
    d = tmp_path_factory.mktemp("survival")
    script = d / "tuple_kernels.py"
    script.write_text(_CHILD)
    import os

    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(d / "cache"))
    res = subprocess.run([sys.executable, str(script), devs[0].spec], capture_output=True,
                         text=True, env=env, cwd=str(ROOT), timeout=600)
    got = {}
    for line in res.stdout.splitlines():
        if line.startswith("CASE "):
            c = json.loads(line[5:])
            got[c["case"]] = c
    return got, res


@pytest.mark.parametrize("case", ["global_tuple", "closure_tuple_negative_index",
                                  "nested_tuple", "argument_tuple", "shared_arrays_tuple",
                                  "ptx_too", "zero_dimensional_array_in_memory",
                                  "prints_in_branches_after_device_calls"])
def test_tuple_of_arrays_indexed_at_run_time_then_sliced(child_results, case):
    got, res = child_results
    assert case in got, ("the child stopped before this case (rc %d):\n%s"
                         % (res.returncode, (res.stdout + res.stderr)[-3000:]))
    c = got[case]
    assert "error" not in c, c["error"]
    assert c["equal"], (c["got"], c["want"])


# ------------------------------------------------------- the rewrite on its own

NESTED_PHI = """
define spir_kernel void @k(ptr addrspace(1) %p, i1 %c, i64 %a, { i64, [2 x i64] } %s) {
entry:
  %x = insertvalue { i64, [2 x i64] } undef, i64 %a, 1, 0
  br i1 %c, label %other, label %end
other:
  br i1 %c, label %end, label %third
third:
  br label %end
end:
  %v = phi { i64, [2 x i64] } [ %x, %entry ], [ { i64 1, [2 x i64] [i64 2, i64 3] }, %other ], [ %s, %third ]
  %e = extractvalue { i64, [2 x i64] } %v, 1, 0
  %arr = extractvalue { i64, [2 x i64] } %v, 1
  %f = extractvalue [2 x i64] %arr, 1
  %g = add i64 %e, %f
  store i64 %g, ptr addrspace(1) %p
  ret void
}
"""


def test_nested_aggregate_phis_split_to_their_leaves():
    ll.parse_assembly(NESTED_PHI).verify()
    out = irtext.drop_unused_values(legalize.split_aggregate_phis(NESTED_PHI))
    ll.parse_assembly(out).verify()
    assert " = phi {" not in out and " = phi [" not in out
    # the constant split through its inner array, the insertvalue chain read through
    # (its other leaves undef), the argument taken apart at the end of its block
    assert "%v.gpux.e1 = phi i64 [ %a, %entry ], [ 2, %other ], [ %gpux.pe.s.1, %third ]" in out
    assert "%v.gpux.e2 = phi i64 [ undef, %entry ], [ 3, %other ], [ %gpux.pe.s.2, %third ]" in out
    assert "%gpux.pe.s.2 = extractvalue { i64, [2 x i64] } %s, 1, 1" in out
    # the leaves read directly and through the extracted inner array are the leaf phis;
    # nothing reads an aggregate any more
    assert "%g = add i64 %v.gpux.e1, %v.gpux.e2" in out
    assert "insertvalue" not in out and "%arr" not in out


_EMIT_CHILD = """
import sys
import llvmlite.binding as ll
ll.initialize_all_targets()
ll.initialize_all_asmprinters()
m = ll.parse_assembly(sys.stdin.read())
tm = ll.Target.from_triple("spirv64-unknown-unknown").create_target_machine(opt=2)
sys.stdout.write(tm.emit_object(m)[:4].hex())
"""


def _emit_in_child(text: str):
    module = 'target triple = "spirv64-unknown-unknown"\n' + text
    return subprocess.run([sys.executable, "-c", _EMIT_CHILD], input=module,
                          capture_output=True, text=True, timeout=120)


def test_split_nested_phi_emits_where_the_original_aborts():
    # the original is what aborted: checked in a child, so that the day LLVM accepts
    # it this test says the rewrite may go, instead of passing silently
    before = _emit_in_child(NESTED_PHI)
    after = _emit_in_child(irtext.drop_unused_values(legalize.split_aggregate_phis(NESTED_PHI)))
    assert after.returncode == 0 and after.stdout == "03022307", after.stderr[-2000:]
    assert before.returncode != 0, "LLVM's SPIR-V back end now selects aggregate phis"


# ------------------------------------------------ the guard in front of the back end

AGG_PHI_FLAT = """
define spir_kernel void @k(ptr addrspace(1) %p, i1 %c, float %a) {
entry:
  %x = insertvalue { float, float } undef, float %a, 0
  br i1 %c, label %other, label %end
other:
  br label %end
end:
  %v = phi { float, float } [ %x, %entry ], [ { float 1.0, float 2.0 }, %other ]
  %e = extractvalue { float, float } %v, 1
  store float %e, ptr addrspace(1) %p
  ret void
}
"""

EXTRACT_CHAIN = """
define spir_kernel void @k(ptr addrspace(1) %p, i64 %a) {
entry:
  %b = insertvalue { i64, { i64, i64 } } zeroinitializer, i64 %a, 1, 1
  %s = extractvalue { i64, { i64, i64 } } %b, 1
  %e = extractvalue { i64, i64 } %s, 1
  store i64 %e, ptr addrspace(1) %p
  ret void
}
"""

# accepted: an extractvalue of a flat pair (cmpxchg's), one path into a nested aggregate
ACCEPTED = """
define spir_kernel void @k(ptr addrspace(1) %p, i64 %a) {
entry:
  %r = cmpxchg ptr addrspace(1) %p, i64 0, i64 %a seq_cst seq_cst
  %o = extractvalue { i64, i1 } %r, 0
  %b = insertvalue { i64, { i64, i64 } } zeroinitializer, i64 %o, 1, 1
  %e = extractvalue { i64, { i64, i64 } } %b, 1, 1
  store i64 %e, ptr addrspace(1) %p
  ret void
}
"""


@pytest.mark.parametrize("text, what", [
    (AGG_PHI_FLAT, ["a phi of the aggregate type { float, float } in k (%v)"]),
    (NESTED_PHI, ["a phi of the aggregate type { i64, [2 x i64] } in k (%v)",
                  "an extractvalue of %arr, an aggregate itself taken out by extractvalue, "
                  "in k"]),
    (EXTRACT_CHAIN, ["an extractvalue of %s, an aggregate itself taken out by extractvalue, "
                     "in k"]),
])
def test_the_guard_finds_what_the_back_end_aborts_on(text, what):
    from numba_gpux.targets.opencl.backend_guard import abort_shapes

    module = 'target triple = "spirv64-unknown-unknown"\n' + text
    assert abort_shapes(ll.parse_assembly(module), module) == what
    # and each does abort the back end (in a child), or the guard is out of date
    assert _emit_in_child(text).returncode != 0


def test_the_guard_passes_what_the_back_end_accepts():
    from numba_gpux.targets.opencl.backend_guard import abort_shapes

    module = 'target triple = "spirv64-unknown-unknown"\n' + ACCEPTED
    assert abort_shapes(ll.parse_assembly(module), module) == []
    res = _emit_in_child(ACCEPTED)
    assert res.returncode == 0 and res.stdout == "03022307", res.stderr[-2000:]


_GUARDED_EMIT_CHILD = """
import sys
from llvmlite import binding as ll
import numba_gpux as gpux
from numba_gpux.targets.opencl.target import make_target, TRIPLE, DATA_LAYOUT
text = f'target triple = "{TRIPLE}"\\ntarget datalayout = "{DATA_LAYOUT}"\\n' + sys.stdin.read()
try:
    make_target().emit(ll.parse_assembly(text), ("k",), 2)
    print("EMITTED")
except gpux.InternalCompilerError as e:
    print("ERROR", str(e).splitlines()[0])
"""


@pytest.mark.parametrize("text", [AGG_PHI_FLAT, EXTRACT_CHAIN])
def test_the_opencl_target_refuses_to_emit_what_would_abort(text):
    # in a child: were the guard not there, this would end the process
    res = subprocess.run([sys.executable, "-c", _GUARDED_EMIT_CHILD], input=text,
                         capture_output=True, text=True, timeout=300, cwd=str(ROOT))
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.startswith("ERROR internal compiler error in stage 'emit': the module "
                                 "holds IR that LLVM's SPIR-V back end aborts the process on")


# ------------------------- run-time tuple indexing, drawn at random (seeded): a family
# of kernels around the one that aborted, each checked against NumPy on the same data

_RANDOM_CHILD = r'''
import itertools, json, random, sys
import numpy as np
import numba_gpux as gpux

gpux.select_device(sys.argv[1])
rng = random.Random(int(sys.argv[2]))
cases = int(sys.argv[3])


def leaf(kind, n):
    base = np.arange(12.0).reshape(3, 4) * (n + 1) + n
    return {"a2": base, "a1": base[0].copy(), "f": float(n) + 0.5,
            "i": n * 3 + 1, "c": complex(n, -n)}[kind]


def draw_tuple(depth, counter):
    kind = rng.choice(["a2", "a1", "f", "i", "c"])
    width = rng.randint(2, 4)
    if depth == 1:
        return tuple(leaf(kind, next(counter)) for _ in range(width)), kind
    inner = [draw_tuple(depth - 1, counter) for _ in range(width)]
    # a homogeneous tuple of tuples: every inner tuple alike
    first = inner[0]
    alike = [first] + [(tuple(leaf(first[1], next(counter)) for _ in first[0]), first[1])
                       for _ in range(width - 1)]
    return tuple(t for t, _ in alike), first[1]


for case in range(cases):
    depth = rng.choice([1, 1, 2])
    tup, kind = draw_tuple(depth, itertools.count())
    idx = ["k"] if depth == 1 else ["k", "m"]
    k = rng.randrange(-len(tup), len(tup))
    m = rng.randrange(0, len(tup[0])) if depth == 2 else 0
    j = rng.randrange(0, 3)
    pick = "T" + "".join(f"[{v}]" for v in idx)
    if kind == "a2":
        expr = pick + rng.choice(["[:, j]", "[j, :]", "[j, 1:]", "[:, j + 1]", "[1:, j]"])
    elif kind == "a1":
        expr = pick + rng.choice(["[j:]", "[::2]", "[1:j + 2]"])
    elif kind == "c":
        expr = pick + rng.choice([".real", ".imag", ""])
    else:
        expr = pick
    ns = {"T": tup, "gpux": gpux, "np": np}
    want = np.atleast_1d(np.asarray(eval(expr, ns, {"k": k, "m": m, "j": j})))
    if want.dtype.kind == "c":
        want = want.real
    if kind in ("a1", "a2"):
        body = "    if i < v.shape[0]:\n        out[i] = v[i]\n"
    elif kind == "c" and not expr.endswith((".real", ".imag")):
        body = "    if i == 0:\n        out[0] = v.real\n"
    else:
        body = "    if i == 0:\n        out[0] = v\n"
    src = f"def kern(out, k, m, j):\n    i = gpux.grid(1)\n    v = {expr}\n" + body
    exec(compile(src, f"<case {case}>", "exec"), ns)
    res = {"case": case, "expr": expr, "k": k, "m": m, "j": j, "depth": depth}
    try:
        out = gpux.to_device(np.zeros(len(want)))
        gpux.jit(ns["kern"])[1, 8](out, k, m, j)
        got = out.copy_to_host()
        res["equal"] = bool(np.array_equal(got, want))
        res["got"], res["want"] = got.tolist(), want.tolist()
    except Exception as e:
        res["error"] = f"{type(e).__name__}: {str(e)[:300]}"
    print("CASE " + json.dumps(res), flush=True)
'''


@pytest.mark.parametrize("seed", [1, 2])
def test_random_run_time_tuple_indexing_matches_numpy(seed, tmp_path):
    import numba_gpux as gpux
    from gpux_testing import testable_here

    devs = [d for d in gpux.devices() if d.target_name == "opencl" and testable_here(d)]
    if not devs:
        pytest.skip("no SPIR-V capable OpenCL device (pip install 'numba-gpux[cpu]')")
    import os

    cases = 8
    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(tmp_path / "cache"))
    res = subprocess.run([sys.executable, "-c", _RANDOM_CHILD, devs[0].spec, str(seed),
                          str(cases)], capture_output=True, text=True, env=env,
                         cwd=str(ROOT), timeout=900)
    got = [json.loads(ln[5:]) for ln in res.stdout.splitlines() if ln.startswith("CASE ")]
    assert len(got) == cases, ("the child stopped after %d cases (rc %d):\n%s"
                               % (len(got), res.returncode, (res.stdout + res.stderr)[-3000:]))
    bad = [c for c in got if not c.get("equal")]
    assert not bad, bad


# ------------------------------ a phi of shared arrays, which Intel's driver reads wrong

SHARED_PHI = """
target triple = "spirv64-unknown-unknown"
@x = internal addrspace(3) global [4 x double] undef, align 16
@y = internal addrspace(3) global [4 x double] undef, align 16
declare i64 @_Z12get_local_idj(i32)
declare void @_Z7barrierj(i32)
define spir_kernel void @k(ptr addrspace(1) %out, i64 %kk) {
entry:
  %i = call i64 @_Z12get_local_idj(i32 0)
  %px = getelementptr double, ptr addrspace(3) @x, i64 %i
  %py = getelementptr double, ptr addrspace(3) @y, i64 %i
  %fi = uitofp i64 %i to double
  %f10 = fmul double %fi, 10.0
  store double %fi, ptr addrspace(3) %px
  store double %f10, ptr addrspace(3) %py
  call void @_Z7barrierj(i32 3)
  switch i64 %kk, label %exit [
    i64 0, label %zero
    i64 -2, label %zero
    i64 1, label %one
    i64 -1, label %one
  ]
exit:
  ret void
one:
  br label %end
zero:
  br label %end
end:
  %a = phi ptr addrspace(4) [ addrspacecast (ptr addrspace(3) @y to ptr addrspace(4)), %one ], [ addrspacecast (ptr addrspace(3) @x to ptr addrspace(4)), %zero ]
  %j1 = add i64 %i, 1
  %j = and i64 %j1, 3
  %q = getelementptr double, ptr addrspace(4) %a, i64 %j
  %v = load double, ptr addrspace(4) %q
  %o = getelementptr double, ptr addrspace(1) %out, i64 %i
  store double %v, ptr addrspace(1) %o
  ret void
}
"""


def test_phis_of_shared_array_casts_are_carried_as_integers():
    from numba_gpux.targets.opencl.pointer_phis import shared_pointer_phis_as_integers

    out = shared_pointer_phis_as_integers(SHARED_PHI)
    ll.parse_assembly(out).verify()
    assert ("%a.gpux.int = phi i64 [ ptrtoint (ptr addrspace(4) addrspacecast (ptr "
            "addrspace(3) @y to ptr addrspace(4)) to i64), %one ], [ ptrtoint") in out
    assert "%a.gpux.int = phi" in out.split("end:", 1)[1].split("\n")[1]
    assert "  %a = inttoptr i64 %a.gpux.int to ptr addrspace(4)\n  %j1 = add" in out
    # a phi with a value that is not such a constant: left as it is
    other = SHARED_PHI.replace("[ addrspacecast (ptr addrspace(3) @x to ptr addrspace(4)), "
                               "%zero ]", "[ %px.g, %zero ]").replace(
        "zero:\n", "zero:\n  %px.g = addrspacecast ptr addrspace(3) %px to ptr addrspace(4)\n")
    ll.parse_assembly(other).verify()
    assert shared_pointer_phis_as_integers(other) == other


def _run_spirv(device, text, kk):
    import numpy as np
    import pyopencl as cl

    rt = device.runtime
    from numba_gpux.devices import resolve_target
    from numba_gpux.interface import Artifact
    from numba_gpux.machines import emit_in_fresh_process

    # emitted by a fresh process: after the many modules a test session emits, this
    # process's SPIR-V back end can define a result id twice (targets/opencl/spirv_ids.py),
    # and the driver may crash on such a module; the compiler checks for that, a bare
    # emission here would not
    binary = emit_in_fresh_process(resolve_target("opencl"), text, 2)
    prg = rt.load(Artifact("spirv", binary, None, ("k",)))
    q = cl.CommandQueue(rt.context)
    out = np.zeros(4)
    buf = cl.Buffer(rt.context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,
                    hostbuf=out)
    k = cl.Kernel(prg, "k")
    k.set_args(buf, np.int64(kk))
    cl.enqueue_nd_range_kernel(q, k, (4,), (4,))
    cl.enqueue_copy(q, out, buf)
    q.finish()
    return out.tolist()


def test_the_driver_reads_shared_arrays_through_the_integer_phi(opencl_device):
    from numba_gpux.targets.opencl.pointer_phis import shared_pointer_phis_as_integers

    fixed = shared_pointer_phis_as_integers(SHARED_PHI)
    assert _run_spirv(opencl_device, fixed, 1) == [10.0, 20.0, 30.0, 0.0]
    assert _run_spirv(opencl_device, fixed, -2) == [1.0, 2.0, 3.0, 0.0]
    if "Intel" in opencl_device.runtime.cl_device.platform.name:
        # the driver's fault, still there: were it fixed, this says the rewrite may go.
        # Run in a child: on the original module the driver reads wrong values (zeros
        # where it targets AVX-512, leftovers of other memory where it targets SSE4.2:
        # CL_CONFIG_CPU_TARGET_ARCH=corei7), or now and then traps and ends the process
        # (SIGTRAP, "PLEASE submit a bug report")
        res = subprocess.run([sys.executable, "-c", _DRIVER_CHILD, opencl_device.spec],
                             input=SHARED_PHI, capture_output=True, text=True,
                             cwd=str(ROOT), timeout=300)
        got = [ln for ln in res.stdout.splitlines() if ln.startswith("GOT ")]
        if res.returncode == 0:
            assert got and json.loads(got[-1][4:]) != [10.0, 20.0, 30.0, 0.0], \
                (res.stdout + res.stderr)[-2000:]
        else:
            assert not got, (res.stdout + res.stderr)[-2000:]


_DRIVER_CHILD = """
import json, sys
sys.path.insert(0, "tests")
import numba_gpux as gpux
from test_backend_survival import _run_spirv
print("GOT " + json.dumps(_run_spirv(gpux.select_device(sys.argv[1]), sys.stdin.read(), 1)),
      flush=True)
"""


# ------------------------------------------------ zero-length arrays in private memory

ZERO_LENGTH = """
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-n8:16:32:64-G1"
define spir_kernel void @k(ptr addrspace(1) %p, i64 %v) {
entry:
  %a = alloca { ptr addrspace(4), ptr addrspace(4), i64, i64, ptr addrspace(4), [0 x i64], [0 x i64] }, align 8
  %b = alloca { i8, [0 x i32], <{ i8, i64 }>, [2 x { i16, [0 x double] }] }
  %c = alloca [0 x i64], align 4
  %d = alloca [4 x i64], align 8
  %e = alloca <2 x i64>, align 16
  %s = alloca i64, i32 2, align 8
  %f = getelementptr inbounds i8, ptr %a, i64 32
  store i64 %v, ptr %f, align 8
  %g = getelementptr inbounds i8, ptr %b, i64 12
  store i64 %v, ptr %g, align 1
  %l = load i64, ptr %f, align 8
  %m = load i64, ptr %g, align 1
  %n = add i64 %l, %m
  store i64 %n, ptr addrspace(1) %p, align 8
  store i64 %v, ptr %c, align 4
  store i64 %v, ptr %d, align 8
  store <2 x i64> zeroinitializer, ptr %e, align 16
  store i64 %v, ptr %s, align 8
  ret void
}
"""


def test_private_variables_of_types_with_zero_length_arrays_are_bytes():
    """``zero_length_allocas``: each alloca whose type holds ``[0 x T]`` becomes bytes of
    the type's size by the data layout's rules (padding, packed structs, nested
    arrays), keeping its alignment (the natural one made explicit); others are left."""
    from numba_gpux.legalize_sizes import zero_length_allocas

    out = zero_length_allocas(ZERO_LENGTH)
    lines = {ln.split("=")[0].strip(): ln.strip() for ln in out.splitlines() if "alloca" in ln}
    assert lines["%a"] == "%a = alloca [40 x i8], align 8"
    # i8, pad to 4, [0 x i32] at 4, <{i8, i64}> (9 bytes, align 1) at 4, pad to 8,
    # two { i16, [0 x double] } of 8 each at 16: 32, aligned to 8
    assert lines["%b"] == "%b = alloca [32 x i8], align 8"
    assert lines["%c"] == "%c = alloca [1 x i8], align 4"
    assert lines["%d"] == "%d = alloca [4 x i64], align 8"
    assert lines["%e"] == "%e = alloca <2 x i64>, align 16"
    assert lines["%s"] == "%s = alloca i64, i32 2, align 8"
    m = ll.parse_assembly(out)
    m.verify()
    # the sizes are LLVM's own for those types
    probe = ll.parse_assembly(
        ZERO_LENGTH.split("define")[0]
        + "@a = global { ptr addrspace(4), ptr addrspace(4), i64, i64, ptr addrspace(4), "
          "[0 x i64], [0 x i64] } zeroinitializer\n"
        + "@b = global { i8, [0 x i32], <{ i8, i64 }>, [2 x { i16, [0 x double] }] } "
          "zeroinitializer\n")
    td = ll.create_target_data(probe.data_layout)
    assert [td.get_abi_size(probe.get_global_variable(n).global_value_type)
            for n in "ab"] == [40, 32]


def test_calls_of_a_function_leave_the_module_as_values_or_nothing():
    """``printf_guard.without_calls``: a call whose result is used leaves 0 of its type,
    one unused leaves nothing, a string that spells the call is left alone; the module
    verifies."""
    from numba_gpux.targets.opencl.printf_guard import without_calls

    text = "\n".join([
        '@s = internal addrspace(2) constant [28 x i8] c"call i32 @_Z6printfPU3AS2cz\\00"',
        "declare i32 @_Z6printfPU3AS2cz(ptr addrspace(2), ...)",
        "define i32 @k(i32 %x) {",
        "  %a = tail call i32 (ptr addrspace(2), ...) @_Z6printfPU3AS2cz(ptr addrspace(2) @s, i32 %x) #0",
        "  %b = call i32 (ptr addrspace(2), ...) @_Z6printfPU3AS2cz(ptr addrspace(2) @s)",
        "  call i32 (ptr addrspace(2), ...) @_Z6printfPU3AS2cz(ptr addrspace(2) @s)",
        "  %c = add i32 %a, %x",
        "  ret i32 %c",
        "}",
        "attributes #0 = { nounwind }",
    ])
    out = without_calls(text, "_Z6printfPU3AS2cz")
    assert "  %a = add i32 0, 0" in out and "  %b = add i32 0, 0" in out
    assert out.count("@_Z6printfPU3AS2cz(") == 1  # the declaration
    assert 'c"call i32 @_Z6printfPU3AS2cz' in out
    ll.parse_assembly(out).verify()
