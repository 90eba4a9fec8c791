"""Differential fuzzing: random scalar functions compiled by numba-gpux and by
``numba.njit`` on the CPU, compared value by value.

Test tooling, shared by ``tests/test_fuzz.py`` (a small seeded budget in the
suite) and ``benchmarks/fuzz.py`` (long runs, failures minimized in child
processes).  See docs/testing.md, "Differential fuzzing".

A *case* is one random function ``f(...)`` over int64, uint64, float64,
float32 and bool scalars, with optional helper device functions and a local
array.  Its body has integer, float and bool expressions, casts, comparisons,
bit operations, ``if``/``else``, ``for`` loops with computed trip counts,
``while`` loops with ``break``/``continue``, local arrays and calls of helper
functions.  Every case returns an exact value (compared bit for bit, NaN equal
to NaN) except *approximate* cases, whose result is one transcendental math
function of an exact value, compared within the ulps OpenCL allows.

Undefined behaviour is kept out of the generated code so that both sides must
agree: every signed integer expression carries an interval, and an operand that
could overflow ``+ - * abs`` or unary minus is narrowed first (``& mask``);
shift amounts are masked to 0..63, divisors are positive, float-to-integer
casts see a finite value within range.

Many cases share one kernel (``Batch``), so one compile covers dozens of them:
the kernel reads its arguments from columns of a few 2-D input arrays and
writes each case's result into a column of an output array.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np

from gpux_fuzz_gen import (BOOL, CAST, EXACT_MATH, F32, F64, FLOATS, I64, INTS, NP,  # noqa: F401
                           TRANSCENDENTAL, U64, Case, _Gen, generate_case)

__all__ = ["Case", "Batch", "generate_case", "generate_batch", "run_batch",
           "ROUTES", "available_routes", "compare", "reference", "check_one", "check_cases",
           "minimize", "reduce_cases", "reproducer", "batch_reproducer"]


# -- batches: many cases, one kernel --

@dataclasses.dataclass
class Batch:
    cases: list
    seed: int
    n_items: int = 64
    #: explicit input arrays (I, U, F, S, B) instead of the seeded ones (reproducers)
    fixed_inputs: tuple | None = None

    def columns(self):
        """Number of input columns per element type."""
        cols = {t: 0 for t in NP}
        for c in self.cases:
            for t in NP:
                cols[t] = max(cols[t], sum(1 for p in c.params if p == t))
        return {t: max(n, 1) for t, n in cols.items()}

    def source(self, gpu: bool) -> str:
        """The module text: every case, then the kernel ``kern(I, U, F, S, B, OI, OF)``."""
        out = [c.source for c in self.cases]
        head = ("@KERNEL\ndef kern(I, U, F, S, B, OI, OF):\n"
                + ("    i = GRID(1)\n    if i < I.shape[0]:\n" if gpu else
                   "    for i in range(I.shape[0]):\n"))
        body = []
        arrays = {I64: "I", U64: "U", F64: "F", F32: "S", BOOL: "B"}
        ni = nf = 0
        for c in self.cases:
            args = ", ".join(f"{arrays[t]}[i, {c.column_of(k)}]" for k, t in enumerate(c.params))
            call = f"{c.name}({args})"
            if c.result in FLOATS:
                body.append(f"        OF[i, {nf}] = np.float64({call})")
                nf += 1
            else:
                body.append(f"        OI[i, {ni}] = np.int64({call})")
                ni += 1
        out.append(head + "\n".join(body) + "\n")
        return "\n".join(out)

    def inputs(self):
        """The input arrays, the same for both sides (seeded)."""
        if self.fixed_inputs is not None:
            return tuple(np.array(a, dtype=d) for a, d in zip(
                self.fixed_inputs, (np.int64, np.uint64, np.float64, np.float32, np.bool_)))
        rng = np.random.default_rng(self.seed)
        n = self.n_items
        with np.errstate(over="ignore"):
            return self._inputs(rng, n)

    def _inputs(self, rng, n):
        cols = self.columns()
        ints = np.concatenate([
            np.array([0, 1, -1, 2, 3, 5, 7, 63, 64, -48, 1000, 863], np.int64),
            rng.integers(-100, 100, 40), rng.integers(-(2 ** 40), 2 ** 40, 40)])
        floats = np.concatenate([
            np.array([0.0, -0.0, 1.0, -1.0, 0.5, 2.5, 1e-310, 1e300, -1e300, np.inf, -np.inf,
                      np.nan, 3.0, 1e15, 2.0 ** 53]), rng.uniform(-10, 10, 40),
            rng.uniform(-1e6, 1e6, 20)])
        uints = np.concatenate([np.array([0, 1, 2, 255, 2 ** 63, 2 ** 64 - 1], np.uint64),
                                rng.integers(0, 2 ** 63, 30, dtype=np.uint64),
                                rng.integers(0, 1000, 30, dtype=np.uint64)])
        return (
            rng.choice(ints, (n, cols[I64])).astype(np.int64),
            rng.choice(uints, (n, cols[U64])).astype(np.uint64),
            rng.choice(floats, (n, cols[F64])).astype(np.float64),
            rng.choice(floats, (n, cols[F32])).astype(np.float32),
            rng.integers(0, 2, (n, cols[BOOL])).astype(np.bool_),
        )

    def outputs(self):
        ni = sum(1 for c in self.cases if c.result not in FLOATS)
        nf = sum(1 for c in self.cases if c.result in FLOATS)
        return (np.zeros((self.n_items, max(ni, 1)), np.int64),
                np.zeros((self.n_items, max(nf, 1)), np.float64))

    def slots(self):
        """(case, 'I' or 'F', column) for every case."""
        ni = nf = 0
        for c in self.cases:
            if c.result in FLOATS:
                yield c, "F", nf
                nf += 1
            else:
                yield c, "I", ni
                ni += 1


def generate_batch(seed: int, n_cases: int, *, ternary_args: bool = True,
                   n_items: int = 64) -> Batch:
    """*n_cases* random cases from *seed* (the same seed gives the same batch)."""
    rng = random.Random(seed)
    cases = [generate_case(rng, f"f{seed}_{k}", ternary_args=ternary_args)
             for k in range(n_cases)]
    return Batch(cases, seed, n_items)


def _namespace(dev, kernel, grid, local_array):
    import math as _math

    return {"np": np, "math": _math, "DEV": dev, "KERNEL": kernel, "GRID": grid,
            "LOCAL_ARRAY": local_array}


def reference(batch: Batch):
    """The batch run by ``numba.njit`` on the CPU: (OI, OF)."""
    import numba

    ns = _namespace(numba.njit(error_model="numpy"), numba.njit(error_model="numpy"),
                    None, np.empty)
    exec(compile(batch.source(gpu=False), f"<fuzz batch {batch.seed} cpu>", "exec"), ns)
    oi, of = batch.outputs()
    ns["kern"](*batch.inputs(), oi, of)
    return oi, of


def _ulp_distance(a, b, dtype):
    ia = np.frombuffer(np.asarray(a, dtype).tobytes(), np.int64 if dtype == np.float64
                       else np.int32).astype(np.int64)
    ib = np.frombuffer(np.asarray(b, dtype).tobytes(), np.int64 if dtype == np.float64
                       else np.int32).astype(np.int64)
    # map to a monotonic integer line
    mask = (1 << 63) if dtype == np.float64 else (1 << 31)
    ia = np.where(ia < 0, -(ia & (mask - 1)) if dtype == np.float32 else -(ia ^ -mask), ia)
    ib = np.where(ib < 0, -(ib & (mask - 1)) if dtype == np.float32 else -(ib ^ -mask), ib)
    return np.abs(ia - ib)


def compare(batch: Batch, got, want):
    """Mismatching cases: list of (case, first bad work-item, got, want)."""
    bad = []
    for case, which, col in batch.slots():
        g = (got[0] if which == "I" else got[1])[:, col]
        w = (want[0] if which == "I" else want[1])[:, col]
        if which == "I":
            if case.result == BOOL:
                ok = (g != 0) == (w != 0)
            else:
                ok = g == w
        else:
            dt = np.float32 if case.result == F32 else np.float64
            gv, wv = g.astype(dt), w.astype(dt)
            both_nan = np.isnan(gv) & np.isnan(wv)
            same = (gv.view(np.int32 if dt == np.float32 else np.int64)
                    == wv.view(np.int32 if dt == np.float32 else np.int64))
            ok = same | both_nan
            if case.approx_ulps:
                with np.errstate(all="ignore"):
                    close = (_ulp_distance(gv, wv, dt) <= case.approx_ulps) | (gv == wv)
                ok = ok | close
        if not ok.all():
            k = int(np.argmin(ok))
            bad.append((case, k, g[k], w[k]))
    return bad


# -- routes --

#: route name -> how it is compiled and run
ROUTES = ("spirv", "opencl-c", "cuda-ptxas")


def available_routes():
    """The routes this machine can run: OpenCL SPIR-V and OpenCL C need an OpenCL device
    with SPIR-V (the Intel CPU driver; the C route runs as its source-route twin),
    CUDA needs ptxas."""
    import numba_gpux as gpux

    out = []
    spirv = [d for d in gpux.devices() if d.target_name == "opencl"]
    if spirv:
        out += ["spirv", "opencl-c"]
    try:
        from numba_gpux.targets.cuda import toolkit

        if toolkit.all_ptxas():
            out.append("cuda-ptxas")
    except Exception:
        pass
    return out


def _device_for(route):
    import numba_gpux as gpux

    spirv = [d for d in gpux.devices() if d.target_name == "opencl"][0]
    if route == "spirv":
        return spirv
    from numba_gpux.targets.opencl.source import source_device

    return source_device(spirv)


def gpu_module(batch: Batch, opt: int):
    """The batch's module on the GPU side: its namespace (``kern`` is the kernel)."""
    import numba_gpux as gpux

    ns = _namespace(gpux.jit(device=True), gpux.jit(opt=opt), gpux.grid, gpux.local.array)
    exec(compile(batch.source(gpu=True), f"<fuzz batch {batch.seed} gpu>", "exec"), ns)
    return ns


def run_batch(batch: Batch, routes, opt: int) -> dict:
    """Compile and run the batch on each of *routes* at *opt* (``cuda-ptxas``: compile
    and assemble for sm_80).  The Numba front end runs once for all routes.  Returns
    route -> (OI, OF), None (cuda-ptxas, accepted) or the exception raised."""
    ns = gpu_module(batch, opt)
    return {route: _run_on(ns, batch, route) for route in routes}


def _run_on(ns, batch: Batch, route: str):
    import numba_gpux as gpux
    from gpux_testing import selected

    args = batch.inputs()
    oi, of = batch.outputs()
    try:
        if route == "cuda-ptxas":
            from numba import typeof

            from numba_gpux.targets.cuda import toolkit

            sig = tuple(typeof(a) for a in (*args, oi, of))
            art = gpux.compile(ns["kern"], sig, target="cuda", cc=(8, 0), cubin=False)
            ok, messages = toolkit.ptxas_check(art.text, (8, 0))
            if not ok:
                raise RuntimeError(f"ptxas rejected the PTX: {messages}")
            return None
        with selected(_device_for(route)):
            dargs = [gpux.to_device(a) for a in args]
            doi, dof = gpux.to_device(oi), gpux.to_device(of)
            ns["kern"][(batch.n_items + 63) // 64, 64](*dargs, doi, dof)
            return doi.copy_to_host(), dof.copy_to_host()
    except Exception as e:  # a compile failure is a finding, reported per route
        return e


# -- one case alone: checking, minimizing, reproducers --

def check_one(case: Case, inputs, route: str, opt: int) -> tuple[str, str]:
    """Run *case* alone on *inputs* (one row per work-item) on *route* at *opt*:
    ("ok" | "mismatch" | "compile" | "reference", detail)."""
    return check_cases([case], inputs, route, opt, case.name)


def check_cases(cases, inputs, route: str, opt: int, name: str) -> tuple[str, str]:
    """Run *cases* as one kernel on *inputs* (the batch's input arrays, or some of their
    rows) on *route* at *opt*, and report on the case called *name* as :func:`check_one`
    does (a compile failure of the kernel counts as that case's)."""
    batch = Batch(list(cases), 0, len(inputs[0]), tuple(inputs))
    try:
        want = reference(batch)
    except Exception as e:
        return "reference", f"{type(e).__name__}: {e}"
    got = run_batch(batch, [route], opt)[route]
    if isinstance(got, Exception):
        return "compile", f"{type(got).__name__}: {got}"
    if got is None:
        return "ok", ""
    for c, k, g, w in compare(batch, got, want):
        if c.name == name:
            return "mismatch", f"work-item {k}: got {g!r}, want {w!r}"
    return "ok", ""


def reduce_cases(others: list, still_fails, max_steps: int = 40) -> list:
    """The fewest of *others* (the rest of a batch) found with which *still_fails* (a
    predicate on a list of them) holds: chunks are removed, halving their size when no
    chunk can go (delta debugging), until single cases cannot go or *max_steps* checks.
    For failures that need the company of other cases in one kernel."""
    cur = list(others)
    n, steps = 2, 0
    while cur and steps < max_steps:
        chunk = -(-len(cur) // n)
        for start in range(0, len(cur), chunk):
            trial = cur[:start] + cur[start + chunk:]
            steps += 1
            if still_fails(trial):
                cur, n = trial, max(n - 1, 2)
                break
            if steps >= max_steps:
                return cur
        else:
            if chunk == 1:
                break
            n = min(len(cur), 2 * n)
    return cur


def case_to_json(case: Case) -> dict:
    return dataclasses.asdict(case)


def case_from_json(d: dict) -> Case:
    return Case(**d)


def _input_rows(batch: Batch, rows):
    return tuple(a[list(rows)].tolist() for a in batch.inputs())


def _statements(lines, start):
    """(first, end) line ranges of the statements of the block starting at *start*."""
    out = []
    ind = len(lines[start]) - len(lines[start].lstrip())
    k = start
    while k < len(lines) and (len(lines[k]) - len(lines[k].lstrip())) >= ind and lines[k].strip():
        j = k + 1
        while j < len(lines) and (len(lines[j]) - len(lines[j].lstrip())) > ind:
            j += 1
        out.append((k, j))
        k = j
    return out


def minimize(case: Case, still_fails, max_steps: int = 200) -> Case:
    """A smaller case that *still_fails* (a predicate on a Case): statements of the
    main function are removed one at a time, compound statements whole or by their
    bodies, until no single removal keeps the failure (or *max_steps* checks)."""
    steps = 0
    changed = True
    while changed and steps < max_steps:
        changed = False
        lines = case.source.split("\n")
        head = next(k for k, ln in enumerate(lines) if ln.startswith(f"def {case.name}("))
        body = head + 1
        # every statement, innermost first (so a loop's body shrinks before the loop goes)
        ranges = []

        def walk(start):
            for a, b in _statements(lines, start):
                if lines[a].rstrip().endswith(":") and b > a + 1:
                    walk(a + 1)
                ranges.append((a, b))

        walk(body)
        for a, b in ranges:
            if lines[a].strip().startswith("return") or _fills_local_array(lines, a):
                continue
            cand = lines[:a] + lines[b:]
            # an emptied block gets a pass
            if a > 0 and lines[a - 1].rstrip().endswith(":") and (
                    b >= len(lines) or _indent(lines[b]) < _indent(lines[a])):
                cand = lines[:a] + [" " * _indent(lines[a]) + "pass"] + lines[b:]
            if cand == lines:
                continue
            trial = dataclasses.replace(case, source="\n".join(cand))
            steps += 1
            if still_fails(trial):
                case = trial
                changed = True
                break
            if steps >= max_steps:
                break
    return case


def _fills_local_array(lines, a: int) -> bool:
    """Whether line *a* starts the local array's declaration or its fill loop: without
    them a read of the array is of uninitialized memory, undefined on both sides."""
    text = lines[a].strip()
    return ("LOCAL_ARRAY(" in text or text == "for q in range(8):" or text.startswith("arr[q] = ")
            ) and _indent(lines[a]) <= 8


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


REPRO_TEMPLATE = '''"""Reproducer written by benchmarks/fuzz.py: {what}.
Run: python {path}  (exit status 1 while the defect is there)."""
import math
import sys

import numba
import numpy as np

import numba_gpux as gpux

inf, nan = math.inf, math.nan  # as repr() writes them in INPUTS
ROUTE, OPT = {route!r}, {opt}
INPUTS = {inputs!r}  # per parameter: one value per work-item

SOURCE = {source!r}


def build(dev, local_array):
    ns = {{"np": np, "math": math, "DEV": dev, "LOCAL_ARRAY": local_array}}
    exec(SOURCE, ns)
    return ns[{name!r}]


ref = build(numba.njit(error_model="numpy"), np.empty)
fn = build(gpux.jit(device=True), gpux.local.array)
want = [ref(*args) for args in zip(*INPUTS)]
n = len(want)


@gpux.jit(opt=OPT)
def kernel(out, {params}):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = fn({args})


devs = [d for d in gpux.devices() if d.target_name == "opencl"]
if ROUTE == "opencl-c":
    from numba_gpux.targets.opencl.source import source_device
    devs = [source_device(devs[0])]
if ROUTE == "cuda-ptxas":
    from numba import typeof
    from numba_gpux.targets.cuda import toolkit
    arrs = [np.array(v, dtype=t) for v, t in zip(INPUTS, {dtypes})]
    sig = (typeof(np.zeros(n, {out_dtype})),) + tuple(typeof(a) for a in arrs)
    art = gpux.compile(kernel, sig, target="cuda", cc=(8, 0), cubin=False)
    ok, msg = toolkit.ptxas_check(art.text, (8, 0))
    print("ptxas:", "ok" if ok else msg)
    sys.exit(0 if ok else 1)
gpux.select_device(devs[0])
arrs = [gpux.to_device(np.array(v, dtype=t)) for v, t in zip(INPUTS, {dtypes})]
out = gpux.to_device(np.zeros(n, {out_dtype}))
kernel[1, max(n, 1)](out, *arrs)
got = out.copy_to_host().tolist()
print("got ", got)
print("want", [float(w) if isinstance(w, float) else int(w) for w in want])
sys.exit(0 if np.array_equal(np.array(got, {out_dtype}), np.array(want, {out_dtype}),
                             equal_nan={equal_nan}) else 1)
'''


def reproducer(case: Case, inputs, route: str, opt: int, what: str, path: str) -> str:
    """The text of a standalone script that reproduces *case*'s failure."""
    cols = {t: 0 for t in NP}
    per_param = []
    for k, t in enumerate(case.params):
        arr = {I64: 0, U64: 1, F64: 2, F32: 3, BOOL: 4}[t]
        per_param.append([v[case.column_of(k)] for v in inputs[arr]])
        cols[t] += 1
    dt = {I64: "np.int64", U64: "np.uint64", F64: "np.float64", F32: "np.float32",
          BOOL: "np.bool_"}
    out_dtype = "np.float64" if case.result in FLOATS else "np.int64"
    return REPRO_TEMPLATE.format(
        what=what, path=path, route=route, opt=opt, inputs=per_param, source=case.source,
        name=case.name, params=", ".join(f"a{k}" for k in range(len(case.params))),
        args=", ".join(f"a{k}[i]" for k in range(len(case.params))),
        dtypes="(" + ", ".join(dt[t] for t in case.params) + ",)",
        out_dtype=out_dtype, equal_nan=case.result in FLOATS)


BATCH_REPRO_TEMPLATE = '''"""Reproducer written by benchmarks/fuzz.py: {what}.
The case {name} fails only together with the other cases below, in one kernel
(tests/gpux_fuzz.py builds it).  Run: python {path}  (exit status 1 while the
defect is there)."""
import json
import sys

sys.path.insert(0, {tests!r})
import gpux_fuzz as F  # noqa: E402

ROUTE, OPT, NAME = {route!r}, {opt}, {name!r}
CASES = json.loads({cases!r})
INPUTS = json.loads({inputs!r})  # the batch's input arrays (I, U, F, S, B) as lists

status, detail = F.check_cases([F.case_from_json(c) for c in CASES], INPUTS, ROUTE, OPT, NAME)
print(status, detail)
sys.exit(1 if status in ("mismatch", "compile") else 0)
'''


def batch_reproducer(cases, inputs, name: str, route: str, opt: int, what: str, path: str,
                     tests_dir: str) -> str:
    """The text of a script that reproduces the failure of case *name* among *cases*
    (one kernel, the batch's *inputs*), through this module in *tests_dir*."""
    import json

    return BATCH_REPRO_TEMPLATE.format(
        what=what, path=path, name=name, route=route, opt=opt, tests=tests_dir,
        cases=json.dumps([case_to_json(c) for c in cases]), inputs=json.dumps(inputs))
