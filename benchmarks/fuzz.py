"""Differential fuzzing of numba-gpux against numba.njit on the CPU, for long runs.

    python benchmarks/fuzz.py --cases 10000 --seed 1
    python benchmarks/fuzz.py --cases 2000 --seed 7 --routes spirv --opts 3 --batch 60

Random cases (tests/gpux_fuzz.py) are compiled on every available route (the OpenCL
SPIR-V route, the OpenCL C route of the same driver, and the CUDA compile path checked
by ptxas) and compared with numba.njit.  The cases hold string constants, record fields
and names spelled like IR, and the kernels atomics, barriers and prints (see
``--no-content``, ``--avoid-known-defects``, ``--no-kernel-level``); LLVM's verifier
checks the module after each of the compiler's IR rewrites and ``spirv-val`` the
SPIR-V (a rejection is a compile failure).

Batch k holds ``--batch`` cases from seed ``SEED + k`` and runs at opt level
``OPTS[k % len(OPTS)]``; the same seed gives the same cases.  Batches run in a worker
process (a kernel that hangs or a crash costs that worker, not the run).  A kernel
whose kernel-level code makes it fail to compile counts as a kernel failure
(``kernel_failures`` of ``kernels``), and its cases are still run without that code.
Failures are grouped by signature (route, kind, message) and the first
``--investigate`` of each is investigated: a failing case is isolated, then minimized
statement by statement, every check in a fresh child process, and written as a
reproducer script under ``--repro-dir``; a case that fails only in its batch is kept
with the fewest other cases it needs (``gpux_fuzz.reduce_cases``); a failure of the
whole kernel is reduced to its kernel-level code and the cases it needs
(``reduce_kernel``).  A summary (cases, kernels and failures per route, failure
signatures, seeds) goes to ``benchmarks/results/fuzz.json``.  See docs/testing.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing as mp
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.normpath(os.path.join(HERE, "..", "tests"))
sys.path.insert(0, TESTS)

import gpux_fuzz as F  # noqa: E402


def _worker(conn):
    import warnings

    warnings.simplefilter("ignore")
    sys.path.insert(0, TESTS)
    import gpux_fuzz as F

    while True:
        job = conn.recv()
        if job is None:
            return
        batch = make_batch(job["seed"], job["n"], job)
        out = {"failures": [], "reference_errors": 0}
        try:
            want = F.reference(batch)
        except Exception as e:  # the generator wrote something Numba rejects: not ours
            out["reference_errors"] = len(batch.cases)
            out["reference_message"] = f"{type(e).__name__}: {str(e)[:300]}"
            conn.send(out)
            continue
        res = F.run_batch(batch, job["routes"], job["opt"])
        plain = plain_want = None
        for route, got in res.items():
            ref, ran = want, batch
            if isinstance(got, Exception) and batch.section is not None:
                # the kernel with its kernel-level code does not compile: a failure of the
                # kernel; its cases are still checked, in a kernel without that code
                out["failures"].append({"route": route, "kind": "compile", "case": None,
                                        "row": 0, "kernel_level": True,
                                        "detail": f"{type(got).__name__}: {got}"[:2000]})
                if plain is None:
                    plain = dataclasses.replace(batch, section=None)
                    plain_want = F.reference(plain)
                ref, ran = plain_want, plain
                got = F.run_batch(plain, [route], job["opt"])[route]
            if isinstance(got, Exception):
                out["failures"].append({"route": route, "kind": "compile", "case": None,
                                        "row": 0, "detail": f"{type(got).__name__}: {got}"[:2000]})
                continue
            if got is None:
                continue
            for case, row, g, w in F.compare(ran, got, ref):
                out["failures"].append({"route": route, "kind": "mismatch",
                                        "case": case.name, "row": int(row),
                                        "detail": f"got {g!r}, want {w!r}"[:2000]})
        conn.send(out)


def make_batch(seed, n, job):
    """Batch *seed* of *n* cases as the run's options (a job or argparse's namespace) say."""
    get = job.get if isinstance(job, dict) else lambda k: getattr(job, k)
    return F.generate_batch(seed, n, ternary_args=get("ternary_args"),
                            content=F.Content(strings=get("content"), names=get("content"),
                                              avoid=get("avoid_known_defects")),
                            kernel_level=get("kernel_level"))


def signature(fail) -> str:
    """What makes failures the same for investigation: the route, the kind and the
    first line of the message with its numbers and names left out (compile failures), or
    the kernel-level result that differs (mismatches)."""
    if fail["kind"] == "mismatch":
        case = fail.get("case") or ""
        return f"{fail['route']} mismatch {case.split(':', 1)[1] if ':' in case else 'case'}"
    words = []
    for w in fail["detail"].split("\n", 1)[0].split():
        words.append("#" if any(ch.isdigit() for ch in w) or w.startswith(("%", "@")) else w)
    # a rewrite that makes invalid IR is one defect on every route that runs it
    route = "*" if "VerifyError: LLVM's verifier" in fail["detail"] else fail["route"]
    return f"{route} {fail['kind']} {' '.join(words)[:160]}"


class Worker:
    """A child process that runs batches; replaced when a batch hangs or kills it, and
    after every *recycle* batches: a process that has compiled many kernels holds on
    to their memory (Numba's, LLVM's and the driver's; about 140 MB a batch of 60 on
    the OpenCL routes), and a long run would otherwise fill the machine."""

    def __init__(self, recycle: int = 16):
        self.ctx = mp.get_context("spawn")
        self.recycle = recycle
        self._start()

    def _start(self):
        self.conn, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()
        self.jobs = 0

    def run(self, job, timeout):
        if self.recycle and self.jobs >= self.recycle:
            self.close()
            self._start()
        self.jobs += 1
        self.conn.send(job)
        if self.conn.poll(timeout):
            try:
                return self.conn.recv()
            except EOFError:
                pass
        self.proc.join(5)
        died = self.proc.exitcode  # None: still running (a hang), else it crashed
        self.proc.kill()
        self.proc.join()
        self._start()
        return None if died is None else {"crashed": died}

    def close(self):
        try:
            self.conn.send(None)
        except (BrokenPipeError, OSError):
            pass
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()


_CHILD = """
import json, sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {tests!r})
import gpux_fuzz as F
spec = json.loads(sys.stdin.read())
status, detail = F.check_cases([F.case_from_json(c) for c in spec["cases"]], spec["inputs"],
                               spec["route"], spec["opt"], spec["name"], **spec["batch"])
print(json.dumps({{"status": status, "detail": detail[:2000]}}))
"""


def check_in_child(case, inputs, route, opt, timeout, spec=None):
    """check_one in a fresh Python process: (status, detail); a hang is "timeout"."""
    return check_cases_in_child([case], inputs, route, opt, case.name, timeout, spec)


def check_cases_in_child(cases, inputs, route, opt, name, timeout, spec=None):
    """check_cases in a fresh Python process, with the batch's *spec* (F.batch_spec;
    none: a plain kernel): (status, detail); a hang is "timeout"."""
    spec = json.dumps({"cases": [F.case_to_json(c) for c in cases], "inputs": inputs,
                       "route": route, "opt": opt, "name": name, "batch": spec or {}})
    try:
        p = subprocess.run([sys.executable, "-c", _CHILD.format(tests=TESTS)], input=spec,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", f"no answer in {timeout} s"
    if p.returncode != 0:
        tail = (p.stderr or "").strip().splitlines()[-3:]
        return "crash", f"exit status {p.returncode}: {' | '.join(tail)}"
    return tuple(json.loads(p.stdout.strip().splitlines()[-1]).values())


def _repro_path(args, name):
    os.makedirs(args.repro_dir, exist_ok=True)
    return os.path.join(args.repro_dir, "".join(ch if ch.isalnum() or ch in "._-" else "_"
                                                for ch in name))


def _write_batch_repro(args, path, cases, inputs, name, route, opt, what, spec):
    with open(path, "w") as f:
        f.write(F.batch_reproducer(cases, inputs, name, route, opt, what, os.path.relpath(path),
                                   TESTS, spec))
    print(f"  reproducer: {path}", flush=True)


def batch_only(seed, batch, case, fail, opt, args):
    """A case that fails only in company: the fewest other cases of its batch found
    with which it still fails (``reduce_cases``, each check a fresh child process on
    all the batch's work-items), and a reproducer of that smaller kernel."""
    route = fail["route"]
    inputs = [a.tolist() for a in batch.inputs()]
    spec = F.batch_spec(batch)
    order = {c.name: k for k, c in enumerate(batch.cases)}
    others = [c for c in batch.cases if c.name != case.name]

    def company(sub):
        return sorted([case, *sub], key=lambda c: order[c.name])

    def still(sub):
        return same_failure(fail, *check_cases_in_child(company(sub), inputs, route, opt,
                                                        case.name, args.timeout, spec))

    report = {"seed": seed, "route": route, "opt": opt, "case": case.name,
              "kind": fail["kind"], "detail": fail["detail"][:500]}
    if not still(others):
        return {**report, "note": "does not fail alone, nor again in its batch"}
    kept = F.reduce_cases(others, still, args.max_batch_steps) if args.minimize else others
    path = _repro_path(args, f"repro_{seed}_{case.name}_{route}_O{opt}_batch.py")
    _write_batch_repro(args, path, company(kept), inputs, case.name, route, opt,
                       f"{fail['kind']} on {route} at opt={opt} (batch seed {seed}): "
                       f"{fail['detail'][:200]}", spec)
    return {**report, "note": f"fails only with {len(kept)} other case(s) of its batch",
            "company": [c.name for c in kept], "reproducer": path}


def same_failure(fail, status, detail) -> bool:
    """Whether a check's (status, detail) is *fail* again: the same kind, and for a
    compile failure the same message (as ``signature`` reads it), so that minimizing
    does not wander to another failure."""
    if status != fail["kind"]:
        return False
    if status != "compile":
        return True
    return signature({**fail, "detail": detail})[:120] == signature(fail)[:120]


def reduce_kernel(seed, batch, fail, opt, args):
    """A failure of the whole kernel (a compile failure, or a mismatch of a kernel-level
    result: atomics, barriers, prints): the kernel-level code alone if that fails, else
    the fewest cases found with which the kernel still fails (``reduce_cases``); then
    its kernel-level code's parts removed one at a time (``minimize_section``) and, when
    at most two cases are left, their statements (``minimize``); each check a fresh
    child process on all the batch's work-items.  A report with a reproducer, or None
    if the kernel does not fail again."""
    route = fail["route"]
    inputs = [a.tolist() for a in batch.inputs()]
    spec = F.batch_spec(batch)
    name = fail["case"] or f"{batch.kernel_name}:compile"

    def fails(cases, section):
        sp = {**spec, "section": dataclasses.asdict(section) if section else None}
        return same_failure(fail, *check_cases_in_child(cases, inputs, route, opt, name,
                                                        args.timeout, sp))

    section = batch.section
    if section is not None and fails([], section):
        cases = []
    elif fails(batch.cases, section):
        cases = batch.cases
        if args.minimize:
            cases = F.reduce_cases(cases, lambda sub: fails(sub, section), args.max_batch_steps)
    else:
        return None
    if args.minimize and section is not None:
        section = F.minimize_section(section, lambda sec: fails(cases, sec), args.max_steps)
    if args.minimize and len(cases) <= 2:
        cases = list(cases)
        for k in range(len(cases)):
            cases[k] = F.minimize(cases[k], lambda c: fails(cases[:k] + [c] + cases[k + 1:],
                                                            section), args.max_steps // 2)
    spec = {**spec, "section": dataclasses.asdict(section) if section else None}
    path = _repro_path(args, f"repro_{seed}_{batch.kernel_name}_{route}_O{opt}_kernel.py")
    _write_batch_repro(args, path, cases, inputs, name, route, opt,
                       f"{fail['kind']} on {route} at opt={opt} (batch seed {seed}, the "
                       f"kernel): {fail['detail'][:200]}", spec)
    return {"seed": seed, "route": route, "opt": opt, "case": name, "kind": fail["kind"],
            "detail": fail["detail"][:500], "reproducer": path,
            "cases": [c.source for c in cases], "section": spec["section"]}


def investigate(seed, n, fail, opt, args):
    """Isolate, minimize and write a reproducer for one failure of batch *seed*."""
    batch = make_batch(seed, n, args)
    route = fail["route"]
    rows = [fail["row"]]
    spec = F.batch_spec(batch)
    plain = {**spec, "section": None, "kernel_name": "kern"}  # the cases without the rest
    if fail["case"] is None or ":" in fail["case"]:
        report = reduce_kernel(seed, batch, fail, opt, args)
        return [report or {"seed": seed, "route": route, "opt": opt, "kind": fail["kind"],
                           "case": fail["case"], "detail": fail["detail"][:500],
                           "note": "the kernel does not fail again"}]
    cases = [c for c in batch.cases if c.name == fail["case"]]
    reports = []
    for case in cases[:args.max_minimize]:
        inputs = F._input_rows(batch, rows)
        status, detail = check_in_child(case, inputs, route, opt, args.timeout, plain)
        if status in ("ok", "reference"):  # all the batch's work-items: a fault may need them
            every = F._input_rows(batch, range(batch.n_items))
            status, detail = check_in_child(case, every, route, opt, args.timeout, plain)
            if status not in ("ok", "reference"):
                inputs = every
        if status in ("ok", "reference"):
            reports.append(batch_only(seed, batch, case, fail, opt, args))
            continue
        small = case
        if args.minimize:
            def still(c, want={**fail, "kind": status, "detail": detail}):  # noqa: B006 - bound now
                return same_failure(want, *check_in_child(c, inputs, route, opt, args.timeout,
                                                          plain))

            small = F.minimize(case, still, max_steps=args.max_steps)
        what = f"{status} on {route} at opt={opt} (batch seed {seed}): {detail[:200]}"
        if F.REC in small.params or "VerifyError" in detail:  # needs the record, the checks
            path = _repro_path(args, f"repro_{seed}_{case.name}_{route}_O{opt}_batch.py")
            _write_batch_repro(args, path, [small], inputs, small.name, route, opt, what, plain)
        else:
            path = _repro_path(args, f"repro_{seed}_{case.name}_{route}_O{opt}.py")
            with open(path, "w") as f:
                f.write(F.reproducer(small, inputs, route, opt, what, os.path.relpath(path)))
            print(f"  reproducer: {path}", flush=True)
        reports.append({"seed": seed, "route": route, "opt": opt, "case": case.name,
                        "kind": status, "detail": detail[:500], "reproducer": path,
                        "lines": small.source.count("\n"), "source": small.source})
    return reports


def _commit() -> str | None:
    """The commit of the checkout this script runs from (with ``+`` if it has changes)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE,
                              capture_output=True, text=True, timeout=30).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=HERE, capture_output=True, text=True, timeout=30).stdout
        return (head + ("+" if dirty.strip() else "")) or None
    except (OSError, subprocess.SubprocessError):
        return None


def _write_summary(args, opts, stats, ref_errors, reports, t0, batches_done, nbatches,
                   signatures=None):
    """The run so far as JSON (rewritten after every batch, so a run stopped early
    still leaves its figures)."""
    summary = {"seed": args.seed, "batch": args.batch, "opts": opts, "note": args.note,
               "commit": _commit(),
               "batches_done": batches_done, "batches": nbatches, "routes": stats,
               "generator": {"content": args.content, "kernel_level": args.kernel_level,
                             "avoid_known_defects": args.avoid_known_defects,
                             "ternary_args": args.ternary_args},
               "checks": {"llvm_verifier_after_each_rewrite": True,
                          "spirv_val": F.spirv_val_path() is not None},
               "reference_rejected_cases": ref_errors, "seconds": round(time.time() - t0),
               "failure_signatures": signatures or {}, "failures": reports}
    os.makedirs(os.path.dirname(args.json), exist_ok=True)
    with open(args.json + ".tmp", "w") as f:
        json.dump(summary, f, indent=1)
    os.replace(args.json + ".tmp", args.json)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", type=int, default=1000, help="cases per route")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=40, help="cases per kernel")
    ap.add_argument("--routes", default=None,
                    help=f"comma-separated subset of {','.join(F.ROUTES)} (default: available)")
    ap.add_argument("--opts", default="0,1,2,3", help="opt levels, one per batch in turn")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per batch / check")
    ap.add_argument("--no-ternary-args", dest="ternary_args", action="store_false",
                    help="no conditional expressions as device-function arguments")
    ap.add_argument("--no-minimize", dest="minimize", action="store_false")
    ap.add_argument("--max-steps", type=int, default=120, help="minimization checks per case")
    ap.add_argument("--max-minimize", type=int, default=3, help="cases minimized per failure")
    ap.add_argument("--max-batch-steps", type=int, default=40,
                    help="checks spent finding the other cases a batch-only failure needs")
    ap.add_argument("--repro-dir", default=os.path.join(HERE, "results", "fuzz_repro"))
    ap.add_argument("--json", default=os.path.join(HERE, "results", "fuzz.json"))
    ap.add_argument("--no-content", dest="content", action="store_false",
                    help="no string constants, prints, records or names spelled like IR")
    ap.add_argument("--avoid-known-defects", action="store_true",
                    help="leave out the user content today's compiler is known to mistake "
                         "for IR (gpux_fuzz_gen.known_defect), to find other failures")
    ap.add_argument("--no-kernel-level", dest="kernel_level", action="store_false",
                    help="no atomics, barriers or prints in the kernel")
    ap.add_argument("--investigate", type=int, default=1,
                    help="failures investigated (minimized, reproducer written) per "
                         "signature (route, kind, message); the others are counted")
    ap.add_argument("--note", default="", help="a note kept in the summary (what was run)")
    ap.add_argument("--worker-batches", type=int, default=16,
                    help="batches a worker process runs before a fresh one takes over "
                         "(0: never; a worker's memory grows with every kernel it compiles)")
    args = ap.parse_args(argv)

    routes = args.routes.split(",") if args.routes else F.available_routes()
    opts = [int(o) for o in args.opts.split(",")]
    nbatches = -(-args.cases // args.batch)
    stats = {r: {"cases": 0, "mismatches": 0, "compile_failures": 0, "timeouts": 0,
                 "kernels": 0, "kernel_failures": 0} for r in routes}
    reports = []
    signatures: dict = {}
    ref_errors = 0
    worker = Worker(args.worker_batches)
    t0 = time.time()
    try:
        for k in range(nbatches):
            seed = args.seed + k
            n = min(args.batch, args.cases - k * args.batch)
            opt = opts[k % len(opts)]
            res = worker.run({"seed": seed, "n": n, "routes": routes, "opt": opt,
                              "ternary_args": args.ternary_args, "content": args.content,
                              "avoid_known_defects": args.avoid_known_defects,
                              "kernel_level": args.kernel_level}, args.timeout)
            if res is None:
                print(f"batch {seed} (opt {opt}): no answer in {args.timeout} s", flush=True)
                for r in routes:
                    stats[r]["timeouts"] += 1
                reports.append({"seed": seed, "opt": opt, "kind": "timeout"})
                continue
            if "crashed" in res:  # the compiler ended the worker (an abort in LLVM)
                print(f"batch {seed} (opt {opt}): the worker process died (exit status "
                      f"{res['crashed']})", flush=True)
                for r in routes:
                    stats[r]["crashes"] = stats[r].get("crashes", 0) + 1
                reports.append({"seed": seed, "opt": opt, "kind": "crash",
                                "exit_status": res["crashed"]})
                continue
            ref_errors += res["reference_errors"]
            if res["reference_errors"]:
                print(f"batch {seed}: Numba rejected it ({res['reference_message']})", flush=True)
                continue
            for r in routes:
                stats[r]["cases"] += n
                stats[r]["kernels"] += 1
            for fail in res["failures"]:
                if fail.get("kernel_level"):
                    stats[fail["route"]]["kernel_failures"] += 1
                else:
                    key = "mismatches" if fail["kind"] == "mismatch" else "compile_failures"
                    stats[fail["route"]][key] += 1 if fail["kind"] == "mismatch" else n
                print(f"batch {seed} (opt {opt}) {fail['route']}: {fail['kind']} "
                      f"{fail['case'] or ''} {fail['detail'][:300]}", flush=True)
                sig = signature(fail)
                seen = signatures.setdefault(sig, {"count": 0, "seeds": []})
                seen["count"] += 1
                if len(seen["seeds"]) < 20:
                    seen["seeds"].append([seed, opt])
                if seen["count"] <= args.investigate:
                    reports.extend(investigate(seed, n, fail, opt, args))
            done = (k + 1) * args.batch
            print(f"[{time.time() - t0:7.0f} s] batch {seed} opt {opt}: "
                  f"{min(done, args.cases)}/{args.cases} cases; " + ", ".join(
                      f"{r} {s['mismatches']} wrong {s['compile_failures']} not compiled "
                      f"{s['kernel_failures']} kernels failed" for r, s in stats.items()),
                  flush=True)
            _write_summary(args, opts, stats, ref_errors, reports, t0, k + 1, nbatches,
                           signatures)
    finally:
        worker.close()
    _write_summary(args, opts, stats, ref_errors, reports, t0, nbatches, nbatches, signatures)
    print(json.dumps({"seed": args.seed, "routes": stats}, indent=1))
    return 0 if all(s["mismatches"] == s["compile_failures"] == s["timeouts"] ==
                    s["kernel_failures"] == s.get("crashes", 0) == 0
                    for s in stats.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
