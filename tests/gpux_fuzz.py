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

import contextlib
import dataclasses
import random

import numpy as np

from gpux_fuzz_checks import (VerifyError, spirv_val_check, spirv_val_path,  # noqa: F401
                              verifying_rewrites)
from gpux_fuzz_gen import (BLOCK, BOOL, CAST, EXACT_MATH, F32, F64, FLOATS, I32, I64,  # noqa: F401
                           IR_FIELDS, IR_NAMES, IR_TEXTS,
                           INTS, NP, REC, SLOTS, TRANSCENDENTAL, U64, Case, Content, Section,
                           _Gen, generate_case, generate_record_fields, generate_section,
                           known_defect)

__all__ = ["Case", "Batch", "generate_case", "generate_batch", "run_batch",
           "ROUTES", "available_routes", "compare", "reference", "check_one", "check_cases",
           "minimize", "minimize_section", "reduce_cases", "reproducer", "batch_reproducer",
           "batch_spec", "verifying_rewrites", "spirv_val_check", "spirv_val_path", "VerifyError",
           "kernel_case"]


# -- batches: many cases, one kernel --

#: the kernel's output arrays besides OI and OF (see Section): atomic slots of four
#: types, the work-items' own atomic slots and the old values read from them, and the
#: values read from shared memory after barriers
EXTRA_OUTPUTS = ("AI", "AW", "AS", "AD", "AC", "AR", "AB")
#: the kernel's parameters, in order
KERNEL_PARAMS = ("I", "U", "F", "S", "B", "R", "OI", "OF", *EXTRA_OUTPUTS, "step", "every")
_REC_NP = {I64: np.int64, I32: np.int32, F64: np.float64, F32: np.float32}


@dataclasses.dataclass
class Batch:
    cases: list
    seed: int
    n_items: int = 64
    #: explicit input arrays (I, U, F, S, B[, R]) instead of the seeded ones (reproducers)
    fixed_inputs: tuple | None = None
    #: the record array R's fields [(name, type)] (None: a record the cases do not read)
    record: list | None = None
    #: kernel-level code: atomics, barriers, prints (gpux_fuzz_gen.Section)
    section: Section | None = None
    #: the kernel's name (Numba's symbol and the module's are made from it)
    kernel_name: str = "kern"

    def columns(self):
        """Number of input columns per element type."""
        cols = {t: 0 for t in NP}
        for c in self.cases:
            for t in NP:
                cols[t] = max(cols[t], sum(1 for p in c.params if p == t))
        return {t: max(n, 1) for t, n in cols.items()}

    def record_dtype(self) -> np.dtype:
        fields = self.record or [("unused", I64)]
        return np.dtype([(n, _REC_NP[t]) for n, t in fields], align=True)

    def source(self, gpu: bool) -> str:
        """The module text: every case, then the kernel (``kern`` names it)."""
        out = [c.source for c in self.cases]
        sec = self.section
        head = (f"@KERNEL\ndef {self.kernel_name}({', '.join(KERNEL_PARAMS)}):\n"
                "    s = step // every\n"
                + ("    i = GRID(1)\n    ii = min(i, I.shape[0] - 1)\n"
                   "    if i < I.shape[0]:\n" if gpu else
                   "    for i in range(I.shape[0]):\n        ii = i\n"))
        body = []
        arrays = {I64: "I", U64: "U", F64: "F", F32: "S", BOOL: "B"}
        ni = nf = 0
        for c in self.cases:
            args = ", ".join("R[i]" if t == REC else f"{arrays[t]}[i, {c.column_of(k)}]"
                             for k, t in enumerate(c.params))
            call = f"{c.name}({args})"
            if c.result in FLOATS:
                body.append(f"        OF[i, {nf}] = np.float64({call})")
                nf += 1
            else:
                body.append(f"        OI[i, {ni}] = np.int64({call})")
                ni += 1
        if sec is not None:
            for gpu_lines, cpu_lines, _ in sec.ops:
                body += ["        " + ln for ln in (gpu_lines if gpu else cpu_lines)]
        if not body:
            body.append("        pass")
        tail = []
        if sec is not None and sec.phases:
            if gpu:
                tail += ["    t = gpux.thread_idx.x",
                         f"    sh = gpux.shared.array({BLOCK}, np.int64)"]
                for k, (ph, _) in enumerate(sec.phases):
                    if k:
                        tail.append("    gpux.barrier()")
                    tail += ["    " + ln for ln in ph]
            else:
                tail += [f"    for blk in range((I.shape[0] + {BLOCK - 1}) // {BLOCK}):",
                         f"        sh = np.zeros({BLOCK}, np.int64)"]
                for _, ph in sec.phases:
                    tail += [f"        for t in range({BLOCK}):",
                             f"            i = blk * {BLOCK} + t",
                             "            ii = min(i, I.shape[0] - 1)"]
                    tail += ["            " + ln for ln in ph]
        out.append(head + "\n".join(body + tail) + f"\n\n\nkern = {self.kernel_name}\n")
        return "\n".join(out)

    def inputs(self):
        """The input arrays (I, U, F, S, B, R), the same for both sides (seeded)."""
        if self.fixed_inputs is not None:
            arrs = tuple(np.array(a, dtype=d) for a, d in zip(
                self.fixed_inputs, (np.int64, np.uint64, np.float64, np.float32, np.bool_)))
            n = len(arrs[0])
            if len(self.fixed_inputs) > 5:
                rec = np.array([tuple(x) for x in self.fixed_inputs[5]], self.record_dtype())
            else:
                rec = np.zeros(n, self.record_dtype())
            return arrs + (rec,)
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
        out = (
            rng.choice(ints, (n, cols[I64])).astype(np.int64),
            rng.choice(uints, (n, cols[U64])).astype(np.uint64),
            rng.choice(floats, (n, cols[F64])).astype(np.float64),
            rng.choice(floats, (n, cols[F32])).astype(np.float32),
            rng.integers(0, 2, (n, cols[BOOL])).astype(np.bool_),
        )
        rec = np.zeros(n, self.record_dtype())
        for name, t in (self.record or []):
            if t == I64:
                rec[name] = rng.choice(ints, n)
            elif t == I32:
                rec[name] = rng.integers(-1000, 1000, n)
            else:
                rec[name] = rng.choice(floats, n).astype(_REC_NP[t])
        return out + (rec,)

    def outputs(self):
        """The output arrays OI, OF and EXTRA_OUTPUTS, with their initial values."""
        ni = sum(1 for c in self.cases if c.result not in FLOATS)
        nf = sum(1 for c in self.cases if c.result in FLOATS)
        n = self.n_items
        k = np.arange(SLOTS)
        return (np.zeros((n, max(ni, 1)), np.int64), np.zeros((n, max(nf, 1)), np.float64),
                k * 37 - 500, (k * 11 - 100).astype(np.int32), (k * 0.5).astype(np.float32),
                k * 0.25 - 3.0, np.zeros(n, np.int64), np.zeros((n, 8), np.int64),
                np.zeros((n, 4), np.int64))

    def scalars(self):
        """The kernel's scalar arguments (step, every)."""
        return (self.section.step, self.section.every) if self.section else (0, 1)

    def printed(self) -> str:
        """What the kernel prints (work-item 0 only)."""
        return self.section.printed(self.inputs()[0][0]) if self.section else ""

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
                   n_items: int = 64, content: Content | None = None,
                   kernel_level: bool = True) -> Batch:
    """*n_cases* random cases from *seed* (the same seed gives the same batch).  With
    *content* (default: all of gpux_fuzz_gen.Content), the cases may hold string
    constants, names and record fields spelled like IR; with *kernel_level*, the kernel
    may hold atomics, barriers and prints (Section)."""
    rng = random.Random(seed)
    content = Content() if content is None else content
    names = content.names_() if content.names else ()
    record = generate_record_fields(rng, content) if content.fields() and \
        rng.random() < 0.5 else None
    prefix = f"{rng.choice(names)}_" if names and rng.random() < 0.5 else "f"
    cases = [generate_case(rng, f"{prefix}{seed}_{k}", ternary_args=ternary_args,
                           content=content, record=record)
             for k in range(n_cases)]
    section = generate_section(rng, content) if kernel_level and rng.random() < 0.7 else None
    kname = f"{rng.choice(names)}_kern" if names and rng.random() < 0.5 else "kern"
    return Batch(cases, seed, n_items, record=record, section=section, kernel_name=kname)


def _namespace(dev, kernel, grid, local_array, batch: Batch | None = None):
    import math as _math

    ns = {"np": np, "math": _math, "DEV": dev, "KERNEL": kernel, "GRID": grid,
          "LOCAL_ARRAY": local_array}
    if batch is not None and batch.kernel_name != "kern":
        # the module's name (Numba mangles it into every symbol) spelled like IR too
        ns["__name__"] = f"{batch.kernel_name}_mod"
    return ns


def _arguments(batch: Batch):
    """The kernel's arguments (host arrays and scalars), in KERNEL_PARAMS order."""
    return (*batch.inputs(), *batch.outputs(), *batch.scalars())


#: the positions of the arrays the kernel writes, in its arguments
_WRITTEN = {"R": 5, "OI": 6, "OF": 7, **{n: 8 + k for k, n in enumerate(EXTRA_OUTPUTS)}}


def _results(args) -> dict:
    return {name: args[k] for name, k in _WRITTEN.items()}


def reference(batch: Batch):
    """The batch run by ``numba.njit`` on the CPU: its written arrays by name (R, OI,
    OF and EXTRA_OUTPUTS) and "printed" (what the kernel prints, from the generator)."""
    import numba

    ns = _namespace(numba.njit(error_model="numpy"), numba.njit(error_model="numpy"),
                    None, np.empty, batch)
    exec(compile(batch.source(gpu=False), f"<fuzz batch {batch.seed} cpu>", "exec"), ns)
    args = _arguments(batch)
    ns["kern"](*args)
    out = _results(args)
    out["printed"] = batch.printed()
    return out


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


def _same_floats(g, w, dt):
    gv, wv = np.asarray(g).astype(dt), np.asarray(w).astype(dt)
    iv = np.int32 if dt == np.float32 else np.int64
    return (gv.view(iv) == wv.view(iv)) | (np.isnan(gv) & np.isnan(wv))


def compare(batch: Batch, got, want):
    """Mismatches: list of (case, first bad work-item, got, want); the kernel-level
    results (record fields, atomic slots, shared-memory reads, printed text) are
    reported as cases named ``<kernel>:<what>`` (``kernel_case``)."""
    bad = []
    for case, which, col in batch.slots():
        g = got["O" + which][:, col]
        w = want["O" + which][:, col]
        if which == "I":
            if case.result == BOOL:
                ok = (g != 0) == (w != 0)
            else:
                ok = g == w
        else:
            dt = np.float32 if case.result == F32 else np.float64
            ok = _same_floats(g, w, dt)
            if case.approx_ulps:
                gv, wv = g.astype(dt), w.astype(dt)
                with np.errstate(all="ignore"):
                    close = (_ulp_distance(gv, wv, dt) <= case.approx_ulps) | (gv == wv)
                ok = ok | close
        if not ok.all():
            k = int(np.argmin(ok))
            bad.append((case, k, g[k], w[k]))
    for name in (batch.record_dtype().names if batch.record else ()):
        g, w = got["R"][name], want["R"][name]
        ok = _same_floats(g, w, g.dtype.type) if g.dtype.kind == "f" else g == w
        if not ok.all():
            k = int(np.argmin(ok))
            bad.append((kernel_case(batch, f"record field {name!r}"), k, g[k], w[k]))
    for name in EXTRA_OUTPUTS:
        g, w = got[name], want[name]
        ok = _same_floats(g, w, g.dtype.type) if g.dtype.kind == "f" else g == w
        if not np.all(ok):
            k = int(np.argmin(np.ravel(ok)))
            bad.append((kernel_case(batch, name), k, np.ravel(g)[k], np.ravel(w)[k]))
    if got.get("printed") is not None and got["printed"] != want["printed"]:
        bad.append((kernel_case(batch, "printed"), 0, got["printed"], want["printed"]))
    return bad


def kernel_case(batch: Batch, what: str) -> Case:
    """A stand-in case for a kernel-level result of *batch* (its name says which)."""
    text = "\n".join(ln for op in (batch.section.ops if batch.section else ())
                     for ln in op[0])
    return Case(f"{batch.kernel_name}:{what}", text, [], I64)


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
    from numba_gpux.targets.opencl_c.target import source_device

    return source_device(spirv)


def gpu_module(batch: Batch, opt: int):
    """The batch's module on the GPU side: its namespace (``kern`` is the kernel)."""
    import numba_gpux as gpux

    ns = _namespace(gpux.jit(device=True), gpux.jit(opt=opt), gpux.grid, gpux.local.array,
                    batch)
    ns["gpux"] = gpux
    exec(compile(batch.source(gpu=True), f"<fuzz batch {batch.seed} gpu>", "exec"), ns)
    return ns


def run_batch(batch: Batch, routes, opt: int, *, verify: bool = True) -> dict:
    """Compile and run the batch on each of *routes* at *opt* (``cuda-ptxas``: compile
    and assemble for sm_80).  The Numba front end runs once for all routes.  With
    *verify*, LLVM's verifier checks the module after each of the compiler's IR
    rewrites (``verifying_rewrites``) and ``spirv-val`` the SPIR-V route's binary.
    Returns route -> the written arrays and "printed" (as ``reference``), None
    (cuda-ptxas, accepted) or the exception raised."""
    ns = gpu_module(batch, opt)
    with (verifying_rewrites() if verify else contextlib.nullcontext()):
        return {route: _run_on(ns, batch, route, verify) for route in routes}


def _capture_stdout(fn):
    """(fn(), what was written to file descriptor 1 meanwhile): the device runtime's
    printf writes there, not to sys.stdout."""
    import ctypes
    import os
    import sys
    import tempfile

    sys.stdout.flush()
    libc = ctypes.CDLL(None)
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(1)
        os.dup2(tmp.fileno(), 1)
        try:
            result = fn()
        finally:
            libc.fflush(None)
            os.dup2(saved, 1)
            os.close(saved)
        tmp.seek(0)
        return result, tmp.read().decode("utf-8", "replace")


def _run_on(ns, batch: Batch, route: str, verify: bool = True):
    import numba_gpux as gpux
    from gpux_testing import selected

    args = _arguments(batch)
    try:
        from numba import typeof

        sig = tuple(typeof(a) for a in args)
        if route == "cuda-ptxas":
            from numba_gpux.targets.cuda import toolkit

            art = gpux.compile(ns["kern"], sig, target="cuda", cc=(8, 0), cubin=False)
            ok, messages = toolkit.ptxas_check(art.text, (8, 0))
            if not ok:
                raise RuntimeError(f"ptxas rejected the PTX: {messages}")
            return None
        device = _device_for(route)
        with selected(device):
            dargs = [gpux.to_device(a) if isinstance(a, np.ndarray) else a for a in args]

            def launch():
                ns["kern"][(batch.n_items + BLOCK - 1) // BLOCK, BLOCK](*dargs)
                return [d.copy_to_host() if not isinstance(d, int) else d for d in dargs]

            host, printed = _capture_stdout(launch)
        if verify and route == "spirv":
            spirv_val_check(gpux.compile(ns["kern"], sig, target=device).binary)
        out = _results(host)
        out["printed"] = printed
        return out
    except Exception as e:  # a compile failure is a finding, reported per route
        return e


# -- one case alone: checking, minimizing, reproducers --

def check_one(case: Case, inputs, route: str, opt: int, **batch_spec) -> tuple[str, str]:
    """Run *case* alone on *inputs* (one row per work-item) on *route* at *opt*:
    ("ok" | "mismatch" | "compile" | "reference", detail)."""
    return check_cases([case], inputs, route, opt, case.name, **batch_spec)


def check_cases(cases, inputs, route: str, opt: int, name: str, *, record=None, section=None,
                kernel_name: str = "kern") -> tuple[str, str]:
    """Run *cases* as one kernel on *inputs* (the batch's input arrays, or some of their
    rows) on *route* at *opt*, with the batch's *record* fields, kernel-level *section*
    and *kernel_name* (``batch_spec``), and report on the case called *name* (a
    ``kernel_case`` name for kernel-level results) as :func:`check_one` does (a compile
    failure of the kernel counts as that case's)."""
    batch = Batch(list(cases), 0, len(inputs[0]), tuple(inputs),
                  [tuple(f) for f in record] if record else None,
                  Section(**section) if isinstance(section, dict) else section, kernel_name)
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


def batch_spec(batch: Batch) -> dict:
    """What check_cases needs of *batch* besides its cases and inputs, as JSON data."""
    return {"record": batch.record, "kernel_name": batch.kernel_name,
            "section": dataclasses.asdict(batch.section) if batch.section else None}


def minimize_section(section: Section, still_fails, max_steps: int = 60) -> Section:
    """A smaller *section* that *still_fails* (a predicate on a Section): its atomics
    and barrier phases removed one at a time while the failure stays."""
    steps = 0
    changed = True
    while changed and steps < max_steps:
        changed = False
        for part in ("ops", "phases"):
            items = getattr(section, part)
            for k in range(len(items)):
                trial = dataclasses.replace(section, **{part: items[:k] + items[k + 1:]})
                steps += 1
                if still_fails(trial):
                    section, changed = trial, True
                    break
                if steps >= max_steps:
                    return section
            if changed:
                break
    return section


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
    from numba_gpux.targets.opencl_c.target import source_device
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
INPUTS = json.loads({inputs!r})  # the batch's input arrays (I, U, F, S, B, R) as lists
SPEC = json.loads({spec!r})  # record fields, kernel-level code, kernel name

status, detail = F.check_cases([F.case_from_json(c) for c in CASES], INPUTS, ROUTE, OPT, NAME,
                               **SPEC)
print(status, detail)
sys.exit(1 if status in ("mismatch", "compile") else 0)
'''


def batch_reproducer(cases, inputs, name: str, route: str, opt: int, what: str, path: str,
                     tests_dir: str, spec: dict | None = None) -> str:
    """The text of a script that reproduces the failure of case *name* among *cases*
    (one kernel, the batch's *inputs*), through this module in *tests_dir*."""
    import json

    return BATCH_REPRO_TEMPLATE.format(
        what=what, path=path, name=name, route=route, opt=opt, tests=tests_dir,
        cases=json.dumps([case_to_json(c) for c in cases]), inputs=json.dumps(inputs),
        spec=json.dumps(spec or {}))
