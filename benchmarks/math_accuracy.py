"""How accurate the device's math functions are: the error, in units in the last place
(ulp), of ``math.<fn>`` computed in a ``numba_gpux.jit`` kernel on the default device,
next to NumPy's on the same inputs, both against a reference in extended precision.

Kernels call the target's math (OpenCL's built-ins on the OpenCL devices; libdevice on
CUDA), whose accuracy the OpenCL specification bounds loosely (4 ulp for float64
``sin``, where CUDA documents 2): numba.cuda programs run on another device agree with
a GPU to the last bits at best, and a chaotic computation drifts from its first step.
The table says how far, per function and type, so a user can tell a real difference
from the math library's.

Reference: NumPy's ``longdouble`` (x87 80-bit on x86-64: 11 bits more than float64)
for float64 inputs, float64 for float32 inputs.  The mean and the largest error over
uniformly drawn inputs of each function's useful range, and the share of results
that are not the correctly rounded value.

Usage: python benchmarks/math_accuracy.py [--n 200000] [--seed 0] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys

import numpy as np

import numba_gpux as gpux

#: function -> (low, high, how the range is drawn: "lin" uniform, "exp" e**uniform)
RANGES = {
    "sin": (-100.0, 100.0, "lin"), "cos": (-100.0, 100.0, "lin"), "tan": (-100.0, 100.0, "lin"),
    "asin": (-1.0, 1.0, "lin"), "acos": (-1.0, 1.0, "lin"), "atan": (-100.0, 100.0, "lin"),
    "sinh": (-20.0, 20.0, "lin"), "cosh": (-20.0, 20.0, "lin"), "tanh": (-20.0, 20.0, "lin"),
    "exp": (-80.0, 80.0, "lin"), "expm1": (-5.0, 5.0, "lin"), "log": (-80.0, 80.0, "exp"),
    "log2": (-80.0, 80.0, "exp"), "log10": (-80.0, 80.0, "exp"), "log1p": (-0.9, 10.0, "lin"),
    "sqrt": (-80.0, 80.0, "exp"),
}


def _kernel(fn):
    ns = {"gpux": gpux, "math": math}
    exec(f"def k(x, o):\n    i = gpux.grid(1)\n    if i < x.size:\n"
         f"        o[i] = math.{fn}(x[i])\n", ns)
    return gpux.jit(ns["k"])


def _inputs(fn, dtype, n, rng):
    lo, hi, how = RANGES[fn]
    x = rng.uniform(lo, hi, n)
    return (np.exp(x) if how == "exp" else x).astype(dtype)


def _errors(got, ref, dtype):
    """|got - ref| in ulp of *dtype* at the reference, and whether got is the correctly
    rounded reference."""
    wide = np.longdouble if dtype == np.float64 else np.float64
    ulp = np.spacing(np.abs(ref.astype(dtype))).astype(wide)
    err = np.abs((got.astype(wide) - ref) / ulp).astype(np.float64)
    return err, got != ref.astype(dtype)


def measure(n: int = 200_000, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    rows = []
    for dtype in (np.float32, np.float64):
        wide = np.longdouble if dtype == np.float64 else np.float64
        for fn in RANGES:
            x = _inputs(fn, dtype, n, rng)
            ours = np.zeros_like(x)
            _kernel(fn)[(n + 255) // 256, 256](x, ours)
            ref = getattr(np, fn)(x.astype(wide))
            err, wrong = _errors(ours, ref, dtype)
            nerr, nwrong = _errors(getattr(np, fn)(x), ref, dtype)
            rows.append({"fn": fn, "dtype": np.dtype(dtype).name, "max_ulp": float(err.max()),
                         "mean_ulp": float(err.mean()), "not_rounded": float(wrong.mean()),
                         "numpy_max_ulp": float(nerr.max()),
                         "numpy_not_rounded": float(nwrong.mean())})
    return rows


def summary(rows, device) -> str:
    out = [f"math accuracy on {device} (ulp against extended precision; numpy alongside)",
           f"{'function':10s} {'type':8s} {'max':>6s} {'mean':>6s} {'not rounded':>12s}"
           f" {'numpy max':>10s} {'numpy n.r.':>10s}"]
    for r in rows:
        out.append(f"{r['fn']:10s} {r['dtype']:8s} {r['max_ulp']:6.2f} {r['mean_ulp']:6.3f} "
                   f"{r['not_rounded']:11.1%} {r['numpy_max_ulp']:10.2f} "
                   f"{r['numpy_not_rounded']:9.1%}")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    if np.finfo(np.longdouble).nmant < 60:
        print("numpy's longdouble is float64 here: no extended reference for float64",
              file=sys.stderr)
        return 1
    device = gpux.default_device().spec
    rows = measure(args.n, args.seed)
    print(summary(rows, device))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"benchmark": "math_accuracy", "device": device, "n": args.n,
                       "seed": args.seed, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
