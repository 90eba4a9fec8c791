"""Differential fuzzing of numba-gpux against numba.njit on the CPU, for long runs.

    python benchmarks/fuzz.py --cases 10000 --seed 1
    python benchmarks/fuzz.py --cases 2000 --seed 7 --routes spirv --opts 3 --batch 60

Random cases (tests/gpux_fuzz.py) are compiled on every available route (the OpenCL
SPIR-V route, the OpenCL C route of the same driver, and the CUDA compile path checked
by ptxas) and compared with numba.njit.  Batch k holds ``--batch`` cases from seed
``SEED + k`` and runs at opt level ``OPTS[k % len(OPTS)]``; the same seed gives the
same cases.  Batches run in a worker process (a kernel that hangs or a crash costs
that worker, not the run); each failing case is isolated, then minimized statement by
statement, every check in a fresh child process, and written as a standalone
reproducer script under ``--repro-dir``; a case that fails only in its batch is kept
with the fewest other cases it needs (``gpux_fuzz.reduce_cases``).  A summary (cases and failures per route,
seeds) goes to ``benchmarks/results/fuzz.json``.  See docs/testing.md.
"""

from __future__ import annotations

import argparse
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
        batch = F.generate_batch(job["seed"], job["n"], ternary_args=job["ternary_args"])
        out = {"failures": [], "reference_errors": 0}
        try:
            want = F.reference(batch)
        except Exception as e:  # the generator wrote something Numba rejects: not ours
            out["reference_errors"] = len(batch.cases)
            out["reference_message"] = f"{type(e).__name__}: {str(e)[:300]}"
            conn.send(out)
            continue
        res = F.run_batch(batch, job["routes"], job["opt"])
        for route, got in res.items():
            if isinstance(got, Exception):
                out["failures"].append({"route": route, "kind": "compile", "case": None,
                                        "row": 0, "detail": f"{type(got).__name__}: {got}"[:2000]})
                continue
            if got is None:
                continue
            for case, row, g, w in F.compare(batch, got, want):
                out["failures"].append({"route": route, "kind": "mismatch",
                                        "case": case.name, "row": int(row),
                                        "detail": f"got {g!r}, want {w!r}"})
        conn.send(out)


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
        self.proc.kill()
        self.proc.join()
        self._start()
        return None

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
                               spec["route"], spec["opt"], spec["name"])
print(json.dumps({{"status": status, "detail": detail[:2000]}}))
"""


def check_in_child(case, inputs, route, opt, timeout):
    """check_one in a fresh Python process: (status, detail); a hang is "timeout"."""
    return check_cases_in_child([case], inputs, route, opt, case.name, timeout)


def check_cases_in_child(cases, inputs, route, opt, name, timeout):
    """check_cases in a fresh Python process: (status, detail); a hang is "timeout"."""
    spec = json.dumps({"cases": [F.case_to_json(c) for c in cases], "inputs": inputs,
                       "route": route, "opt": opt, "name": name})
    try:
        p = subprocess.run([sys.executable, "-c", _CHILD.format(tests=TESTS)], input=spec,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", f"no answer in {timeout} s"
    if p.returncode != 0:
        tail = (p.stderr or "").strip().splitlines()[-3:]
        return "crash", f"exit status {p.returncode}: {' | '.join(tail)}"
    return tuple(json.loads(p.stdout.strip().splitlines()[-1]).values())


def batch_only(seed, batch, case, fail, opt, args):
    """A case that fails only in company: the fewest other cases of its batch found
    with which it still fails (``reduce_cases``, each check a fresh child process on
    all the batch's work-items), and a reproducer of that smaller kernel."""
    route = fail["route"]
    inputs = [a.tolist() for a in batch.inputs()]
    order = {c.name: k for k, c in enumerate(batch.cases)}
    others = [c for c in batch.cases if c.name != case.name]

    def company(sub):
        return sorted([case, *sub], key=lambda c: order[c.name])

    def still(sub):
        return check_cases_in_child(company(sub), inputs, route, opt, case.name,
                                    args.timeout)[0] == fail["kind"]

    report = {"seed": seed, "route": route, "opt": opt, "case": case.name,
              "kind": fail["kind"], "detail": fail["detail"]}
    if not still(others):
        return {**report, "note": "does not fail alone, nor again in its batch"}
    kept = F.reduce_cases(others, still, args.max_batch_steps) if args.minimize else others
    path = os.path.join(args.repro_dir, f"repro_{seed}_{case.name}_{route}_O{opt}_batch.py")
    os.makedirs(args.repro_dir, exist_ok=True)
    with open(path, "w") as f:
        f.write(F.batch_reproducer(company(kept), inputs, case.name, route, opt,
                                   f"{fail['kind']} on {route} at opt={opt} (batch seed "
                                   f"{seed}): {fail['detail'][:200]}", os.path.relpath(path),
                                   TESTS))
    print(f"  reproducer (with {len(kept)} other cases): {path}", flush=True)
    return {**report, "note": f"fails only with {len(kept)} other case(s) of its batch",
            "company": [c.name for c in kept], "reproducer": path}


def investigate(seed, n, fail, opt, args):
    """Isolate, minimize and write a reproducer for one failure of batch *seed*."""
    batch = F.generate_batch(seed, n, ternary_args=args.ternary_args)
    route = fail["route"]
    rows = [fail["row"]]
    if fail["case"] is not None:
        cases = [c for c in batch.cases if c.name == fail["case"]]
    else:  # a compile failure of the batch: find the cases that fail alone
        cases = []
        for c in batch.cases:
            st, _ = check_in_child(c, F._input_rows(batch, rows), route, opt, args.timeout)
            if st not in ("ok", "reference"):
                cases.append(c)
        if not cases:
            return [{"seed": seed, "route": route, "opt": opt, "kind": fail["kind"],
                     "detail": fail["detail"], "note": "no single case fails alone"}]
    reports = []
    for case in cases[:args.max_minimize]:
        inputs = F._input_rows(batch, rows)
        status, detail = check_in_child(case, inputs, route, opt, args.timeout)
        if status in ("ok", "reference"):  # all the batch's work-items: a fault may need them
            every = F._input_rows(batch, range(batch.n_items))
            status, detail = check_in_child(case, every, route, opt, args.timeout)
            if status not in ("ok", "reference"):
                inputs = every
        if status in ("ok", "reference"):
            reports.append(batch_only(seed, batch, case, fail, opt, args))
            continue
        small = case
        if args.minimize:
            def still(c, want=status):
                return check_in_child(c, inputs, route, opt, args.timeout)[0] == want

            small = F.minimize(case, still, max_steps=args.max_steps)
        path = os.path.join(args.repro_dir, f"repro_{seed}_{case.name}_{route}_O{opt}.py")
        os.makedirs(args.repro_dir, exist_ok=True)
        with open(path, "w") as f:
            f.write(F.reproducer(small, inputs, route, opt,
                                 f"{status} on {route} at opt={opt} (batch seed {seed}): "
                                 f"{detail[:200]}", os.path.relpath(path)))
        reports.append({"seed": seed, "route": route, "opt": opt, "case": case.name,
                        "kind": status, "detail": detail[:500], "reproducer": path,
                        "lines": small.source.count("\n")})
        print(f"  reproducer: {path}", flush=True)
    return reports


def _write_summary(args, opts, stats, ref_errors, reports, t0, batches_done, nbatches):
    """The run so far as JSON (rewritten after every batch, so a run stopped early
    still leaves its figures)."""
    summary = {"seed": args.seed, "batch": args.batch, "opts": opts,
               "batches_done": batches_done, "batches": nbatches, "routes": stats,
               "reference_rejected_cases": ref_errors, "seconds": round(time.time() - t0),
               "failures": reports}
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
    ap.add_argument("--worker-batches", type=int, default=16,
                    help="batches a worker process runs before a fresh one takes over "
                         "(0: never; a worker's memory grows with every kernel it compiles)")
    args = ap.parse_args(argv)

    routes = args.routes.split(",") if args.routes else F.available_routes()
    opts = [int(o) for o in args.opts.split(",")]
    nbatches = -(-args.cases // args.batch)
    stats = {r: {"cases": 0, "mismatches": 0, "compile_failures": 0, "timeouts": 0}
             for r in routes}
    reports = []
    ref_errors = 0
    worker = Worker(args.worker_batches)
    t0 = time.time()
    try:
        for k in range(nbatches):
            seed = args.seed + k
            n = min(args.batch, args.cases - k * args.batch)
            opt = opts[k % len(opts)]
            res = worker.run({"seed": seed, "n": n, "routes": routes, "opt": opt,
                              "ternary_args": args.ternary_args}, args.timeout)
            if res is None:
                print(f"batch {seed} (opt {opt}): no answer in {args.timeout} s", flush=True)
                for r in routes:
                    stats[r]["timeouts"] += 1
                reports.append({"seed": seed, "opt": opt, "kind": "timeout"})
                continue
            ref_errors += res["reference_errors"]
            if res["reference_errors"]:
                print(f"batch {seed}: Numba rejected it ({res['reference_message']})", flush=True)
                continue
            for r in routes:
                stats[r]["cases"] += n
            for fail in res["failures"]:
                key = "mismatches" if fail["kind"] == "mismatch" else "compile_failures"
                stats[fail["route"]][key] += 1 if fail["kind"] == "mismatch" else n
                print(f"batch {seed} (opt {opt}) {fail['route']}: {fail['kind']} "
                      f"{fail['case'] or ''} {fail['detail'][:300]}", flush=True)
                reports.extend(investigate(seed, n, fail, opt, args))
            done = (k + 1) * args.batch
            print(f"[{time.time() - t0:7.0f} s] batch {seed} opt {opt}: "
                  f"{min(done, args.cases)}/{args.cases} cases; " + ", ".join(
                      f"{r} {s['mismatches']} wrong {s['compile_failures']} not compiled"
                      for r, s in stats.items()), flush=True)
            _write_summary(args, opts, stats, ref_errors, reports, t0, k + 1, nbatches)
    finally:
        worker.close()
    _write_summary(args, opts, stats, ref_errors, reports, t0, nbatches, nbatches)
    print(json.dumps({"seed": args.seed, "routes": stats}, indent=1))
    return 0 if all(s["mismatches"] == s["compile_failures"] == s["timeouts"] == 0
                    for s in stats.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
