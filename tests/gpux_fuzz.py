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
import math
import random
import re

import numpy as np

__all__ = ["Case", "Batch", "generate_case", "generate_batch", "run_batch",
           "ROUTES", "available_routes", "compare", "reference", "check_one", "minimize",
           "reproducer"]

I64 = "i64"
U64 = "u64"
F64 = "f64"
F32 = "f32"
BOOL = "b"
INTS = (I64, U64)
FLOATS = (F64, F32)
NP = {I64: np.int64, U64: np.uint64, F64: np.float64, F32: np.float32, BOOL: np.bool_}
CAST = {I64: "np.int64", U64: "np.uint64", F64: "np.float64", F32: "np.float32"}
LIM = 2 ** 62  # no signed intermediate beyond this magnitude
FULL = (-(2 ** 63), 2 ** 63 - 1)

#: transcendental functions and the ulps OpenCL 1.2 allows them (float64 and float32
#: bounds coincide for these), with a domain guard written around the argument
TRANSCENDENTAL = {
    "sin": (4, "{x}"), "cos": (4, "{x}"), "exp": (3, "min({x}, {c}(80.0))"),
    "log": (3, "(abs({x}) + {c}(0.5))"), "log1p": (2, "abs({x})"),
    "expm1": (3, "min({x}, {c}(80.0))"), "tanh": (5, "{x}"), "atan": (5, "{x}"),
    "sqrt": (0, "abs({x})"),
}
#: math functions that are exact in IEEE arithmetic (and in OpenCL); math.floor, ceil
#: and trunc return integers in Numba (undefined beyond int64), so their argument is
#: clamped and NaN replaced
EXACT_MATH = ("math.floor", "math.ceil", "math.trunc", "math.fabs")


@dataclasses.dataclass
class Case:
    """One random function: its source (helpers first), its parameter types, result type."""

    name: str
    source: str
    params: list  # element types, in order
    result: str
    approx_ulps: int = 0  # 0: exact comparison

    def column_of(self, k: int) -> int:
        """The input column the k-th parameter is read from (per element type)."""
        return sum(1 for t in self.params[:k] if t == self.params[k])


class _Gen:
    """The random-program generator of one case."""

    def __init__(self, rng: random.Random, name: str, *, depth: int = 3,
                 helpers: bool = True, ternary_args: bool = True):
        self.r = rng
        self.name = name
        self.depth = depth
        self.ternary_args = ternary_args
        self.vars: dict[str, tuple] = {}  # name -> (type, lo, hi) (bounds for i64)
        self.lines: list[str] = []
        self.helpers: list[str] = []
        self.helper_sigs: list[tuple] = []  # (name, param types, result type)
        self.nvar = 0
        self.use_helpers = helpers
        self.local_array = None
        self.readonly: set[str] = set()  # loop counters: read, never assigned

    # -- expressions: (code, type, lo, hi); lo/hi are meaningful for I64 only --

    def const(self, t):
        r = self.r
        if t == I64:
            v = r.choice([0, 1, -1, 2, 3, 7, 63, 64, 255, -48, 1000, 863, -(2 ** 31), 2 ** 32 + 5,
                          r.randint(-100, 100), r.randint(-(2 ** 40), 2 ** 40)])
            return (f"({v})" if v < 0 else str(v)), I64, v, v
        if t == U64:
            v = r.choice([0, 1, 2, 3, 255, 2 ** 63, 2 ** 64 - 1, r.randint(0, 2 ** 64 - 1)])
            return f"np.uint64({v})", U64, 0, 2 ** 64 - 1
        if t == BOOL:
            return r.choice(["True", "False"]), BOOL, 0, 1
        v = r.choice([0.0, 1.0, -1.0, 0.5, 2.5, -0.0, 1e-300, 1e300, 3.141592653589793,
                      float("inf"), -float("inf"), r.uniform(-10, 10), r.uniform(-1e6, 1e6)])
        lit = repr(v) if math.isfinite(v) else ("np.inf" if v > 0 else "(-np.inf)")
        if t == F32:
            return f"np.float32({lit})", F32, 0, 0
        return (f"({lit})" if lit.startswith("-") else lit), F64, 0, 0

    def var_of(self, t):
        cands = [n for n, v in self.vars.items() if v[0] == t]
        if not cands:
            return None
        n = self.r.choice(cands)
        _, lo, hi = self.vars[n]
        return n, t, lo, hi

    def leaf(self, t):
        v = self.var_of(t)
        if v is not None and self.r.random() < 0.75:
            return v
        return self.const(t)

    @staticmethod
    def narrow(e, bits=20):
        """An i64 expression within 0..2**bits-1 (and so safe to combine)."""
        code, t, lo, hi = e
        if 0 <= lo and hi < 2 ** bits:
            return e
        return f"({code} & {2 ** bits - 1})", I64, 0, 2 ** bits - 1

    def fit(self, e, lim=LIM):
        code, t, lo, hi = e
        if -lim <= lo and hi <= lim:
            return e
        return self.narrow(e, self.r.choice([8, 20, 31]))

    def expr(self, t, d=None):
        d = self.depth if d is None else d
        if d <= 0 or self.r.random() < 0.2:
            return self.leaf(t)
        return getattr(self, f"expr_{t}")(d - 1)

    def expr_i64(self, d):
        r = self.r
        k = r.randrange(13)
        if k == 0:  # + - *
            a, b = self.expr(I64, d), self.expr(I64, d)
            op = r.choice("+-*")
            if op == "*":
                a, b = self.narrow(a, r.choice([8, 16, 31])), self.fit(b, 2 ** 30)
                if b[2] < 0:
                    b = self.narrow(b, 30)
            else:
                a, b = self.fit(a), self.fit(b)
            lo, hi = _interval(op, a, b)
            return f"({a[0]} {op} {b[0]})", I64, lo, hi
        if k == 1:  # bit operations
            a, b = self.expr(I64, d), self.expr(I64, d)
            op = r.choice("&|^")
            return f"({a[0]} {op} {b[0]})", I64, *_bit_interval(op, a, b)
        if k == 2:  # shifts, amount masked
            a, b = self.expr(I64, d), self.expr(I64, d)
            # CPython folds constant operands, and an int beyond 64 bits stops Numba
            if r.random() < 0.5 or (_is_const(a[0]) and _is_const(b[0])):
                return f"({a[0]} >> ({b[0]} & 63))", I64, min(a[2], 0), max(a[3], 0)
            return f"({a[0]} << ({b[0]} & 63))", I64, *FULL
        if k == 3:  # // and % by a positive divisor
            a, b = self.expr(I64, d), self.narrow(self.expr(I64, d), r.choice([3, 8, 20]))
            op = r.choice(["//", "%"])
            hi = b[3] + 1
            if op == "%":
                return f"({a[0]} % ({b[0]} + 1))", I64, 0, hi - 1
            return f"({a[0]} // ({b[0]} + 1))", I64, min(a[2], 0), max(a[3], 0)
        if k == 4:  # unary minus, abs
            a = self.fit(self.expr(I64, d))
            if r.random() < 0.5:
                return f"(-{a[0]})", I64, -a[3], -a[2]
            return f"abs({a[0]})", I64, 0, max(abs(a[2]), abs(a[3]))
        if k == 5:  # min / max
            a, b = self.expr(I64, d), self.expr(I64, d)
            f = r.choice(["min", "max"])
            return f"{f}({a[0]}, {b[0]})", I64, min(a[2], b[2]), max(a[3], b[3])
        if k == 6:  # bool to int
            c = self.expr(BOOL, d)
            return f"np.int64({c[0]})", I64, 0, 1
        if k == 7:  # float to int: finite and within range
            t = r.choice(FLOATS)
            f = self.expr(t, d)
            c = CAST[t]
            return (f"np.int64(min(max({f[0]}, {c}(-1e15)), {c}(1e15)) if {f[0]} == {f[0]} "
                    f"else {c}(0.0))"), I64, -(10 ** 15), 10 ** 15
        if k == 8:  # narrowing integer casts
            a = self.expr(r.choice(INTS), d)
            ct, lo, hi = r.choice([("np.int32", -(2 ** 31), 2 ** 31 - 1), ("np.int8", -128, 127),
                                   ("np.uint8", 0, 255), ("np.int16", -(2 ** 15), 2 ** 15 - 1),
                                   ("np.uint32", 0, 2 ** 32 - 1)])
            return f"np.int64({ct}({a[0]}))", I64, lo, hi
        if k == 9:  # uint64 to int64
            a = self.expr(U64, d)
            return f"np.int64({a[0]})", I64, *FULL
        if k == 10 and self.use_helpers and self.helper_sigs:
            return self.call_helper(I64, d)
        if k == 11:  # conditional expression
            c, a, b = self.expr(BOOL, d), self.expr(I64, d), self.expr(I64, d)
            return f"({a[0]} if {c[0]} else {b[0]})", I64, min(a[2], b[2]), max(a[3], b[3])
        if k == 12 and self.local_array is not None:
            name, t, n = self.local_array
            idx = self.expr(I64, d)
            code = f"{name}[({idx[0]}) & {n - 1}]"
            if t == I64:
                return code, I64, -(2 ** 20), 2 ** 20
            return f"np.int64(min(max({code}, -1e15), 1e15) if {code} == {code} else 0.0)", \
                I64, -(10 ** 15), 10 ** 15
        return self.leaf(I64)

    def expr_u64(self, d):
        r = self.r
        k = r.randrange(6)
        if k == 0:
            a, b = self.expr(U64, d), self.expr(U64, d)
            op = r.choice(["+", "-", "*", "&", "|", "^"])
            return f"({a[0]} {op} {b[0]})", U64, 0, 0
        if k == 1:
            a, b = self.expr(U64, d), self.expr(I64, d)
            op = r.choice([">>", "<<"])
            return f"({a[0]} {op} np.uint64({b[0]} & 63))", U64, 0, 0
        if k == 2:
            a, b = self.expr(U64, d), self.expr(U64, d)
            return f"{r.choice(['min', 'max'])}({a[0]}, {b[0]})", U64, 0, 0
        if k == 3:
            a = self.expr(I64, d)
            return f"np.uint64({a[0]})", U64, 0, 0
        if k == 4:
            a, b = self.expr(U64, d), self.expr(U64, d)
            op = r.choice(["//", "%"])
            return f"({a[0]} {op} ({b[0]} | np.uint64(1)))", U64, 0, 0
        if k == 5:
            c = self.expr(BOOL, d)
            return f"np.uint64({c[0]})", U64, 0, 0
        return self.leaf(U64)

    def _expr_float(self, t, d):
        r = self.r
        c = CAST[t]
        k = r.randrange(9)
        if k == 0:
            a, b = self.expr(t, d), self.expr(t, d)
            op = r.choice(["+", "-", "*", "/"])
            return f"({a[0]} {op} {b[0]})", t, 0, 0
        if k == 1:  # an fma-shaped expression (contraction must not happen)
            a, b, e = self.expr(t, d), self.expr(t, d), self.expr(t, d)
            return f"({a[0]} * {b[0]} {r.choice('+-')} {e[0]})", t, 0, 0
        if k == 2:
            a = self.expr(t, d)
            fn = r.choice(EXACT_MATH)
            if fn == "math.fabs":
                return f"math.fabs({a[0]})", t, 0, 0
            return (f"{c}({fn}(min(max({a[0]}, {c}(-1e15)), {c}(1e15)) if {a[0]} == {a[0]} "
                    f"else {c}(0.0)))"), t, 0, 0
        if k == 3:  # int/bool/other float to this float
            src = r.choice([I64, U64, BOOL, F64 if t == F32 else F32])
            a = self.expr(src, d)
            return f"{c}({a[0]})", t, 0, 0
        if k == 4:
            a, b = self.expr(t, d), self.expr(t, d)
            return f"{r.choice(['min', 'max'])}({a[0]}, {b[0]})", t, 0, 0
        if k == 5:  # floor division and modulo by a nonzero float
            a, b = self.expr(t, d), self.expr(t, d)
            return f"({a[0]} {r.choice(['//', '%'])} (abs({b[0]}) + {c}(0.5)))", t, 0, 0
        if k == 6 and self.use_helpers and self.helper_sigs:
            return self.call_helper(t, d)
        if k == 7:
            cnd, a, b = self.expr(BOOL, d), self.expr(t, d), self.expr(t, d)
            return f"({a[0]} if {cnd[0]} else {b[0]})", t, 0, 0
        if k == 8 and self.local_array is not None:
            name, at, n = self.local_array
            idx = self.expr(I64, d)
            return f"{c}({name}[({idx[0]}) & {n - 1}])", t, 0, 0
        return self.leaf(t)

    def expr_f64(self, d):
        return self._expr_float(F64, d)

    def expr_f32(self, d):
        return self._expr_float(F32, d)

    def expr_b(self, d):
        r = self.r
        k = r.randrange(5)
        if k <= 1:
            t = r.choice([I64, I64, U64, F64, F32])
            a, b = self.expr(t, d), self.expr(t, d)
            op = r.choice(["<", "<=", ">", ">=", "==", "!="])
            return f"({a[0]} {op} {b[0]})", BOOL, 0, 1
        if k == 2:
            a, b = self.expr(BOOL, d), self.expr(BOOL, d)
            op = r.choice(["and", "or", "&", "|", "^", "!="])
            return f"({a[0]} {op} {b[0]})", BOOL, 0, 1
        if k == 3:
            a = self.expr(BOOL, d)
            return f"(not {a[0]})", BOOL, 0, 1
        if k == 4:
            t = r.choice(FLOATS)
            a = self.expr(t, d)
            return f"({a[0]} != {a[0]})", BOOL, 0, 1  # NaN test
        return self.leaf(BOOL)

    def call_helper(self, t, d):
        cands = [h for h in self.helper_sigs if h[2] == t]
        if not cands:
            return self.leaf(t)
        name, ptypes, _ = self.r.choice(cands)
        args = []
        for pt in ptypes:
            a = self.expr(pt, d - 1)
            if not self.ternary_args and " if " in a[0]:
                a = self.leaf(pt)
            args.append(a[0])
        lo, hi = (-(2 ** 20), 2 ** 20) if t == I64 else (0, 0)
        return f"{name}({', '.join(args)})", t, lo, hi

    # -- statements --

    def new_var(self, t):
        self.nvar += 1
        return f"v{self.nvar}"

    def assign(self, ind, name, t, e):
        """Assign *e* to *name*, keeping an i64 variable within its declared bounds."""
        code = e[0]
        if t == I64:
            _, lo, hi = self.vars[name]
            if not (lo <= e[2] and e[3] <= hi):
                code = f"min(max({code}, {lo}), {hi})"
        self.lines.append(f"{ind}{name} = {code}")

    def stmt(self, ind, d):
        r = self.r
        k = r.randrange(8)
        if k <= 2 or d <= 0 or not self.vars:
            t = r.choice([I64, I64, F64, F32, U64, BOOL])
            cands = [n for n, v in self.vars.items() if v[0] == t and n not in self.readonly]
            if cands and r.random() < 0.6:
                self.assign(ind, r.choice(cands), t, self.expr(t))
            else:
                n = self.new_var(t)
                e = self.expr(t)
                if t == I64:
                    e = self.fit(e, 2 ** 40)
                    self.vars[n] = (t, -(2 ** 40), 2 ** 40)
                    self.lines.append(f"{ind}{n} = min(max({e[0]}, {-(2 ** 40)}), {2 ** 40})")
                else:
                    self.vars[n] = (t, 0, 0)
                    self.lines.append(f"{ind}{n} = {e[0]}")
            return
        if k == 3:  # if / else
            c = self.expr(BOOL)
            self.lines.append(f"{ind}if {c[0]}:")
            self.block(ind + "    ", d - 1)
            if r.random() < 0.5:
                self.lines.append(f"{ind}else:")
                self.block(ind + "    ", d - 1)
            return
        if k == 4:  # for loop with a computed trip count
            n = self.expr(I64)
            j = f"j{self.nvar}"
            self.nvar += 1
            trip = r.choice(["& 7", "% 5", "& 3"])
            self.lines.append(f"{ind}for {j} in range(({n[0]}) {trip}):")
            self.vars[j] = (I64, -7, 7)
            self.readonly.add(j)
            self.block(ind + "    ", d - 1, loop=True)
            del self.vars[j]
            return
        if k == 5:  # while loop with a counter, break and continue
            w = f"w{self.nvar}"
            self.nvar += 1
            lim = r.randint(1, 6)
            self.lines.append(f"{ind}{w} = 0")
            c = self.expr(BOOL, 1)
            self.lines.append(f"{ind}while {w} < {lim}{' and ' + c[0] if r.random() < 0.5 else ''}:")
            self.lines.append(f"{ind}    {w} += 1")
            self.vars[w] = (I64, 0, 6)
            self.readonly.add(w)
            self.block(ind + "    ", d - 1, loop=True)
            del self.vars[w]
            return
        if k == 6 and self.local_array is not None:  # store into the local array
            name, t, n = self.local_array
            idx = self.expr(I64)
            self.lines.append(f"{ind}{name}[({idx[0]}) & {n - 1}] = "
                              + (self.fit(self.expr(I64), 2 ** 20)[0] if t == I64 else
                                 self.expr(t)[0]))
            if t == I64:  # keep stored values within the bounds reads assume
                self.lines[-1] = self.lines[-1].replace(" = ", " = min(max(", 1) + \
                    f", {-(2 ** 20)}), {2 ** 20})"
            return
        self.stmt(ind, 0)

    def block(self, ind, d, loop=False):
        before = dict(self.vars)
        for _ in range(self.r.randint(1, 3)):
            self.stmt(ind, d)
            if loop and self.r.random() < 0.15:
                c = self.expr(BOOL, 1)
                self.lines.append(f"{ind}if {c[0]}:")
                self.lines.append(f"{ind}    {self.r.choice(['break', 'continue'])}")
        # variables first defined inside the block are not visible after it
        for n in list(self.vars):
            if n not in before:
                del self.vars[n]

    def helper(self, idx):
        """A small device function the case calls: expression over its parameters,
        optionally filling and reading a local array passed to it."""
        sub = _Gen(self.r, f"{self.name}_h{idx}", depth=2, helpers=False,
                   ternary_args=self.ternary_args)
        ptypes = [self.r.choice([I64, F64, F32, BOOL, U64]) for _ in range(self.r.randint(1, 3))]
        for i, t in enumerate(ptypes):
            sub.vars[f"p{i}"] = (t,) + ((-(2 ** 20), 2 ** 20) if t == I64 else (0, 0))
        rt = self.r.choice([I64, F64, F32])
        e = sub.expr(rt)
        if rt == I64:
            e = (f"min(max({e[0]}, {-(2 ** 20)}), {2 ** 20})",)
        name = f"{self.name}_h{idx}"
        params = ", ".join(f"p{i}" for i in range(len(ptypes)))
        self.helpers.append(f"@DEV\ndef {name}({params}):\n    return {e[0]}\n")
        self.helper_sigs.append((name, ptypes, rt))

    def array_helper(self):
        """A device function that receives the local array, writes and reads it."""
        name, t, n = self.local_array
        hn = f"{self.name}_ha"
        self.helpers.append(
            f"@DEV\ndef {hn}(arr, k, x):\n    arr[(np.int64(1) >> (k & 63)) & {n - 1}] = x\n"
            f"    return arr[(k & 63) & {n - 1}]\n")
        return hn


_VAR = re.compile(r"\b(?:a|v|j|w|p)\d+\b|\barr\b")


def _is_const(code: str) -> bool:
    """Whether *code* reads no variable (CPython may fold it into one constant)."""
    return _VAR.search(code) is None


def _interval(op, a, b):
    if op == "+":
        return a[2] + b[2], a[3] + b[3]
    if op == "-":
        return a[2] - b[3], a[3] - b[2]
    ps = [a[2] * b[2], a[2] * b[3], a[3] * b[2], a[3] * b[3]]
    return min(ps), max(ps)


def _bit_interval(op, a, b):
    if a[2] >= 0 and b[2] >= 0:
        bits = max(a[3], b[3]).bit_length()
        if op == "&":
            return 0, min(a[3], b[3])
        return 0, 2 ** bits - 1
    bits = max(abs(a[2]), abs(a[3]), abs(b[2]), abs(b[3])).bit_length()
    return max(-(2 ** bits), FULL[0]), min(2 ** bits - 1, FULL[1])


def generate_case(rng: random.Random, name: str, *, ternary_args: bool = True) -> Case:
    """One random case named *name*."""
    g = _Gen(rng, name, depth=rng.choice([1, 2, 2, 3]), ternary_args=ternary_args)
    ptypes = [rng.choice([I64, I64, F64, F32, BOOL, U64]) for _ in range(rng.randint(1, 4))]
    for i, t in enumerate(ptypes):
        g.vars[f"a{i}"] = (t,) + ((-(2 ** 40), 2 ** 40) if t == I64 else (0, 0))
    for i in range(rng.choice([0, 0, 1, 2])):
        g.helper(i)
    body_pre = []
    if rng.random() < 0.25:
        t = rng.choice([I64, F64])
        g.local_array = ("arr", t, 8)
        fill = g.leaf(t)[0] if t != I64 else f"min(max({g.leaf(I64)[0]}, {-(2 ** 20)}), {2 ** 20})"
        body_pre.append(f"    arr = LOCAL_ARRAY(8, {'np.int64' if t == I64 else 'np.float64'})")
        body_pre.append("    for q in range(8):")
        body_pre.append(f"        arr[q] = {fill}")
        if rng.random() < 0.5:
            hn = g.array_helper()
            k = g.expr(I64, 1)
            x = g.expr(t, 1)
            if not ternary_args and " if " in x[0]:
                x = g.leaf(t)
            if not ternary_args and " if " in k[0]:
                k = g.leaf(I64)
            xv = x[0] if t != I64 else f"min(max({x[0]}, {-(2 ** 20)}), {2 ** 20})"
            body_pre.append(f"    {hn}(arr, {k[0]}, {xv})")
    for _ in range(rng.randint(1, 4)):
        g.stmt("    ", 2)
    approx = 0
    rt = rng.choice([I64, I64, F64, F32, U64, BOOL])
    if rt in FLOATS and rng.random() < 0.3:
        fn = rng.choice(sorted(TRANSCENDENTAL))
        approx, guard = TRANSCENDENTAL[fn]
        arg = g.expr(rt)[0]
        ret = f"math.{fn}({guard.format(x=arg, c=CAST[rt])})"
        approx = max(approx, 1)
    else:
        ret = g.expr(rt)[0]
    params = ", ".join(f"a{i}" for i in range(len(ptypes)))
    src = "".join(h + "\n" for h in g.helpers)
    src += f"@DEV\ndef {name}({params}):\n" + "\n".join(body_pre + g.lines) + \
        f"\n    return {ret}\n"
    return Case(name, src, ptypes, rt, approx)


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
    import sys

    import numba_gpux as gpux

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
        devmod = sys.modules["numba_gpux.devices"]
        prev = devmod._selected
        devmod.select_device(_device_for(route))
        try:
            dargs = [gpux.to_device(a) for a in args]
            doi, dof = gpux.to_device(oi), gpux.to_device(of)
            ns["kern"][(batch.n_items + 63) // 64, 64](*dargs, doi, dof)
            return doi.copy_to_host(), dof.copy_to_host()
        finally:
            devmod._selected = prev
    except Exception as e:  # a compile failure is a finding, reported per route
        return e


# -- one case alone: checking, minimizing, reproducers --

def check_one(case: Case, inputs, route: str, opt: int) -> tuple[str, str]:
    """Run *case* alone on *inputs* (one row per work-item) on *route* at *opt*:
    ("ok" | "mismatch" | "compile" | "reference", detail)."""
    batch = Batch([case], 0, len(inputs[0]), tuple(inputs))
    try:
        want = reference(batch)
    except Exception as e:
        return "reference", f"{type(e).__name__}: {e}"
    got = run_batch(batch, [route], opt)[route]
    if isinstance(got, Exception):
        return "compile", f"{type(got).__name__}: {got}"
    if got is None:
        return "ok", ""
    bad = compare(batch, got, want)
    if bad:
        _, k, g, w = bad[0]
        return "mismatch", f"work-item {k}: got {g!r}, want {w!r}"
    return "ok", ""


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
            if lines[a].strip().startswith("return"):
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


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


REPRO_TEMPLATE = '''"""Reproducer written by benchmarks/fuzz.py: {what}.
Run: python {path}  (exit status 1 while the defect is there)."""
import math
import sys

import numba
import numpy as np

import numba_gpux as gpux

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
