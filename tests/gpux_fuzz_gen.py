"""The random-program generator of the differential fuzzer (see gpux_fuzz.py, which
runs what this writes): one case is one random device function, written as Python
source, with its parameter and result types."""

from __future__ import annotations

import dataclasses
import math
import random
import re

import numpy as np

__all__ = ["Case", "generate_case", "I64", "U64", "F64", "F32", "BOOL", "INTS", "FLOATS", "NP",
           "CAST", "TRANSCENDENTAL", "EXACT_MATH", "REC", "I32", "Content", "IR_TEXTS", "IR_NAMES",
           "known_defect", "generate_record_fields", "Section", "generate_section"]

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

REC = "rec"  # a parameter that is one record of the batch's record array
I32 = "i32"  # a record field of type int32

#: texts of string constants and prints: LLVM keyword and type spellings, IR fragments,
#: characters IR text gives meaning to, Unicode and the empty string
IR_TEXTS = (
    "ptr", "addrspace(1)", "ptr addrspace(4)", "double", "half", "float", "i1", "i8", "i24",
    "i64", "i128", "define", "declare", "define void @f() {", "!dbg !7", "!0 = !{}", "@", "%",
    "%.5 = add i64 %.3, 1", "#0", "attributes #0 = { nounwind }", '"', "\\", 'c"x\\00"',
    "\\22", "\\0A", "{", "}", ";", "ünï ✓ λ", "日本", "", " ", "call @sin(x)",
    "@llvm.memcpy.p0.p0.i64", "@\"quoted\"", "spir_kernel", "100%", "%s %d", "x86")

#: identifiers spelled like IR (function names, global names, record fields)
IR_NAMES = ("ptr", "define", "declare", "double", "half", "i24", "i128", "addrspace", "dbg",
            "spir_kernel", "llvm_memcpy_p0_p0_i64", "nuw", "nsw", "inbounds", "align", "undef",
            "poison", "c", "x86", "ptx_kernel")

#: record field names beyond identifiers (reached with r["..."])
IR_FIELDS = ("ptr", "addrspace(1)", "double", "half", "i24", "i128", "define", "!dbg", "@x",
             "%x", "#0", 'c"x"', "a b", "i64 %.1", "\\", "ünï", "λ→∞")


def known_defect(text: str) -> bool:
    """Whether *text*, as user content, hits a defect today's compiler is known to have
    (tests/pipeline/test_user_content.py marks those cases): a word ``ptr``, an integer
    type spelling ``iN``, ``@`` (a call of a math function such as ``@sin(``), a mangled
    address space ``.pN``, or non-ASCII characters (in names that reach a kernel's
    symbol).  ``--avoid-known-defects`` of benchmarks/fuzz.py leaves such content out,
    so that long runs find other failures."""
    if "ptr" in text or "@" in text or not text.isascii():
        return True
    for k, ch in enumerate(text):
        if ch in "ip" and k + 1 < len(text) and text[k + 1].isdigit():
            digits = ""
            for d in text[k + 1:]:
                if not d.isdigit():
                    break
                digits += d
            if ch == "p" or int(digits) not in (1, 8, 16, 32, 64):
                return True
    return False


def _content(pool, avoid: bool):
    return tuple(t for t in pool if not (avoid and known_defect(t)))


@dataclasses.dataclass
class Content:
    """What a batch's user content may hold: the texts of strings, the names of
    functions and globals, the record fields; with *avoid* (known_defect), the content
    today's compiler is known to mistake for IR is left out."""

    strings: bool = True
    names: bool = True
    avoid: bool = False

    def texts(self):
        return _content(IR_TEXTS, self.avoid)

    def names_(self):
        return _content(IR_NAMES, self.avoid)

    def fields(self):
        return _content(IR_FIELDS, self.avoid)


def generate_record_fields(rng: random.Random, content: Content) -> list:
    """The batch's record dtype: 2..4 fields (name, type) named like IR."""
    names = list(content.fields())
    rng.shuffle(names)
    n = rng.randint(2, 4)
    return [(names[k], rng.choice([I64, F64, F32, I32])) for k in range(n)]


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
                 helpers: bool = True, ternary_args: bool = True, content: Content | None = None):
        self.r = rng
        self.content = content
        self.strs: list[tuple] = []  # (variable, text): string constants, assigned once
        self.record = None  # (parameter, [(field, type)]) of a record parameter
        self.globals: list[str] = []  # module-level constants the case reads, as source
        self.string_helpers: list[str] = []  # names of string helpers (compare, measure)
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
        self.int32: set[str] = set()  # i64-read variables that hold np.int32 values

    # -- expressions: (code, type, lo, hi); lo/hi are meaningful for I64 only --

    def const(self, t):
        r = self.r
        if t == I64:
            v = r.choice([0, 1, -1, 2, 3, 7, 63, 64, 255, -48, 1000, 863, -(2 ** 31), 2 ** 32 + 5,
                          r.randint(-100, 100), r.randint(-(2 ** 40), 2 ** 40)])
            if self.content is not None and self.content.names and r.random() < 0.1:
                # a module-level constant named like IR (Numba freezes it into the code)
                gname = f"{r.choice(self.content.names_())}_{self.name}_g{len(self.globals)}"
                self.globals.append(f"{gname} = {v}\n")
                return gname, I64, v, v
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
        k = r.randrange(15)
        if k == 13 and self.strs:  # the length of a string constant
            var, text = r.choice(self.strs)
            if self.string_helpers and r.random() < 0.5:
                return f"{self.string_helpers[1]}({var})", I64, 0, len(text)
            return f"len({var})", I64, 0, len(text)
        if k == 14 and self.record is not None:  # an integer field of the record
            code = self.read_field((I64, I32))
            if code is not None:
                return code
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

    def read_field(self, types):
        """A read of a field of one of *types* of the record parameter, as an expression
        (code, type, lo, hi), or None."""
        par, fields = self.record
        cands = [(f, ft) for f, ft in fields if ft in types]
        if not cands:
            return None
        f, ft = self.r.choice(cands)
        code = f"{par}[{f!r}]"
        if ft == I64:
            return code, I64, -(2 ** 40), 2 ** 40
        if ft == I32:
            return f"np.int64({code})", I64, -(2 ** 31), 2 ** 31 - 1
        return code, ft, 0, 0

    def _expr_float(self, t, d):
        r = self.r
        c = CAST[t]
        k = r.randrange(10)
        if k == 9 and self.record is not None:
            e = self.read_field((F64, F32))
            if e is not None:
                return f"{c}({e[0]})", t, 0, 0
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
        k = r.randrange(6)
        if k == 5 and self.strs:  # string constants compared, here or in a device function
            var, text = r.choice(self.strs)
            other = r.choice([text, r.choice(self.strs)[0], repr(r.choice(self.content.texts()))])
            if other == text:
                other = repr(text)
            if self.string_helpers and r.random() < 0.5:
                return f"{self.string_helpers[0]}({var}, {other})", BOOL, 0, 1
            return f"({var} {r.choice(['==', '!='])} {other})", BOOL, 0, 1
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
        if name in self.int32:  # wraps to 32 bits (defined), or clamped first
            code = (f"np.int32({code})" if self.r.random() < 0.5 else
                    f"np.int32(min(max({code}, {-(2 ** 31)}), {2 ** 31 - 1}))")
        elif t == I64:
            _, lo, hi = self.vars[name]
            if not (lo <= e[2] and e[3] <= hi):
                code = f"min(max({code}, {lo}), {hi})"
        self.lines.append(f"{ind}{name} = {code}")

    def bit_idiom(self, ind):
        """A loop that LLVM recognizes as a bit intrinsic (a reversal of a constant
        number of bits, a population count, a bit length, a parity), on a value masked
        to that many bits: InstCombine and LoopIdiomRecognize write them as
        ``llvm.bitreverse``/``ctpop``/``ctlz`` at widths a target may not represent."""
        r = self.r
        width = r.choice([3, 5, 7, 10, 12, 16, 20, 24, 31])
        v, out = f"bv{self.nvar}", f"bi{self.nvar}"
        self.nvar += 1
        e = self.expr(I64)
        self.lines += [f"{ind}{v} = ({e[0]}) & {(1 << width) - 1}", f"{ind}{out} = 0"]
        kind = r.randrange(4)
        if kind == 0:
            body, hi = [f"for _ in range({width}):", f"    {out} = ({out} << 1) | ({v} & 1)",
                        f"    {v} >>= 1"], (1 << width) - 1
        elif kind == 1:
            body, hi = [f"while {v}:", f"    {v} &= {v} - 1", f"    {out} += 1"], width
        elif kind == 2:
            body, hi = [f"while {v}:", f"    {v} >>= 1", f"    {out} += 1"], width
        else:
            body, hi = [f"for _ in range({width}):", f"    {out} ^= {v} & 1",
                        f"    {v} >>= 1"], 1
        self.lines += [ind + ln for ln in body]
        self.vars[out] = (I64, 0, hi)

    def stmt(self, ind, d):
        r = self.r
        if d > 0 and r.random() < 0.05:
            self.bit_idiom(ind)
            return
        k = r.randrange(8)
        if k <= 2 or d <= 0 or not self.vars:
            t = r.choice([I64, I64, F64, F32, U64, BOOL])
            cands = [n for n, v in self.vars.items() if v[0] == t and n not in self.readonly]
            if cands and r.random() < 0.6:
                self.assign(ind, r.choice(cands), t, self.expr(t))
            else:
                n = self.new_var(t)
                e = self.expr(t)
                if t == I64 and r.random() < 0.25:  # an int32 variable
                    self.vars[n] = (t, -(2 ** 31), 2 ** 31 - 1)
                    self.int32.add(n)
                    self.lines.append(f"{ind}{n} = np.int32(min(max({e[0]}, -1000), 1000))")
                elif t == I64:
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
        if k == 7 and self.record is not None and r.random() < 0.7:  # write a record field
            par, fields = self.record
            f, ft = r.choice(fields)
            if ft == I64:
                code = f"min(max({self.expr(I64)[0]}, {-(2 ** 40)}), {2 ** 40})"
            elif ft == I32:
                code = f"np.int32(min(max({self.expr(I64)[0]}, {-(2 ** 31)}), {2 ** 31 - 1}))"
            else:
                code = f"{CAST[ft]}({self.expr(ft)[0]})"
            self.lines.append(f"{ind}{par}[{f!r}] = {code}")
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


def generate_case(rng: random.Random, name: str, *, ternary_args: bool = True,
                  content: Content | None = None, record: list | None = None) -> Case:
    """One random case named *name*; with *content*, it may hold string constants and
    names like IR, with *record* (the batch's record fields) a record parameter."""
    g = _Gen(rng, name, depth=rng.choice([1, 2, 2, 3]), ternary_args=ternary_args,
             content=content)
    ptypes = [rng.choice([I64, I64, F64, F32, BOOL, U64]) for _ in range(rng.randint(1, 4))]
    if record and rng.random() < 0.3:
        ptypes.insert(rng.randrange(len(ptypes) + 1), REC)
    for i, t in enumerate(ptypes):
        if t == REC:
            g.record = (f"a{i}", record)
            continue
        g.vars[f"a{i}"] = (t,) + ((-(2 ** 40), 2 ** 40) if t == I64 else (0, 0))
    body_strs = []
    if content is not None and content.strings and content.texts() and rng.random() < 0.3:
        for k in range(rng.randint(1, 3)):
            text = rng.choice(content.texts())
            g.strs.append((f"s{k}", text))
            body_strs.append(f"    s{k} = {text!r}")
        if rng.random() < 0.5:
            eq, ln = f"{name}_hs", f"{name}_hl"
            g.helpers.append(f"@DEV\ndef {eq}(s, t):\n    return s == t\n")
            g.helpers.append(f"@DEV\ndef {ln}(s):\n    return len(s)\n")
            g.string_helpers = [eq, ln]
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
    src = "".join(g.globals) + "".join(h + "\n" for h in g.helpers)
    src += f"@DEV\ndef {name}({params}):\n" + "\n".join(body_strs + body_pre + g.lines) + \
        f"\n    return {ret}\n"
    return Case(name, src, ptypes, rt, approx)


# -- kernel-level code: atomics with computed indices, barriers, prints --

#: slots of the atomic arrays AI (int64), AW (int32), AS (float32), AD (float64)
SLOTS = 64
#: work-items per block in every launch of the fuzzer (the shared array's length)
BLOCK = 64


@dataclasses.dataclass
class Section:
    """Kernel-level code of a batch, written for the GPU and as its sequential meaning
    for numba.njit, as [gpu lines, cpu lines] pairs.  ``s = step // every`` (kernel
    scalars) is computed first; ``ops`` run per work-item ``i < n`` after the cases:
    atomics on the shared slots of AI, AW, AS, AD at computed indices (each array gets
    one group of operations that commute with each other: add and sub, or one of max,
    min, and, or, xor; floats of exactly representable values; so that any order gives
    the same result), atomics on the work-item's own slot of AC whose old values
    go to AR, and prints of work-item 0; ``phases`` run on every work-item of a block
    (``t``: its index in the block, ``ii``: its row, clamped to the input), separated by
    barriers, over a shared array ``sh``: a fill of a permutation of its slots, then
    reads at computed indices into AB, or atomic adds."""

    step: int
    every: int
    ops: list  # [gpu lines, cpu lines, text work-item 0 prints before I[0, 0] or None]
    phases: list  # [gpu lines, cpu lines]

    def printed(self, first_row_of_i) -> str:
        """What work-item 0 prints, given row 0 of the input I."""
        return "".join(f"{t} {int(first_row_of_i[0])}\n" for _, _, t in self.ops
                       if t is not None)


def _index(r: random.Random, var: str = "i") -> str:
    """A computed index in 0..SLOTS-1 (s <= 56)."""
    return r.choice([
        "s", "s + 1", f"s + {r.randint(2, 7)}", f"({var} * {r.choice([3, 5, 7])} + s) & 63",
        f"{var} % 8 + s", "(I[ii, 0] & 7) + s", "(I[ii, 0] ^ s) & 63",
        f"min(s + np.int64({var} & 3), 63)", f"np.int32(s) + np.int32({r.randint(0, 7)})",
        f"(s * {r.randint(1, 9)} + {var} // {r.randint(1, 9)}) % 64"])


def _int_value(r: random.Random) -> str:
    return r.choice(["I[ii, 0] & 1023", "np.int64(i)", "I[ii, 0] % 100 - 50", "I[ii, 0]",
                     "np.int64(3)", "(I[ii, 0] >> (s & 15)) & 255", "-np.int64(i) - 1"])


#: atomics that commute with each other: one group per array and section, so that the
#: slots' final values do not depend on the order the work-items reach them
_INT_GROUPS = (("add", "sub"), ("max",), ("min",), ("and_",), ("or_",), ("xor",))
_FLOAT_GROUPS = (("add",), ("max",), ("min",))


def _atomic_op(r: random.Random, nres: int, groups: dict):
    """One atomic of the guarded part: ([gpu lines], [cpu lines]), whether it writes AR;
    *groups*: the operations each shared array gets (array name -> ops)."""
    kind = r.choice(["int", "int", "int32", "float32", "float64", "own"])
    idx = _index(r)
    if kind == "int":
        op = r.choice(groups["AI"])
        v = _int_value(r)
        cpu = {"add": f"AI[{idx}] += {v}", "sub": f"AI[{idx}] -= {v}",
               "max": f"AI[{idx}] = max(AI[{idx}], {v})",
               "min": f"AI[{idx}] = min(AI[{idx}], {v})",
               "and_": f"AI[{idx}] &= {v}", "or_": f"AI[{idx}] |= {v}",
               "xor": f"AI[{idx}] ^= {v}"}[op]
        return [f"gpux.atomic.{op}(AI, {idx}, {v})"], [cpu], False
    if kind == "int32":
        op = r.choice(groups["AW"])
        v = f"np.int32({r.choice(['I[ii, 0] & 65535', 'i', 'I[ii, 0] % 1000'])})"
        cpu = {"add": f"AW[{idx}] += {v}", "sub": f"AW[{idx}] -= {v}",
               "max": f"AW[{idx}] = max(AW[{idx}], {v})",
               "min": f"AW[{idx}] = min(AW[{idx}], {v})", "and_": f"AW[{idx}] &= {v}",
               "or_": f"AW[{idx}] |= {v}", "xor": f"AW[{idx}] ^= {v}"}[op]
        return [f"gpux.atomic.{op}(AW, {idx}, {v})"], [cpu], False
    if kind in ("float32", "float64"):
        arr, c = ("AS", "np.float32") if kind == "float32" else ("AD", "np.float64")
        op = r.choice(groups[arr])
        # sums of small multiples of 1/2 are exact in any order
        v = r.choice([f"{c}(I[ii, 0] & 15) * {c}(0.5)", f"{c}(i)", f"{c}(1.0)",
                      f"{c}(I[ii, 0] % 1000)"])
        cpu = {"add": f"{arr}[{idx}] += {v}", "max": f"{arr}[{idx}] = max({arr}[{idx}], {v})",
               "min": f"{arr}[{idx}] = min({arr}[{idx}], {v})"}[op]
        return [f"gpux.atomic.{op}({arr}, {idx}, {v})"], [cpu], False
    # the work-item's own slot: the old value is deterministic too
    op = r.choice(["cas", "exch", "add"])
    v = _int_value(r)
    if op == "cas":
        cmp = r.choice(["np.int64(0)", "I[ii, 0] & 1", "AC[i]"])
        return ([f"AR[i, {nres}] = gpux.atomic.cas(AC, i, {cmp}, {v})"],
                ["old = AC[i]", f"if old == {cmp}:", f"    AC[i] = {v}", f"AR[i, {nres}] = old"],
                True)
    if op == "exch":
        return ([f"AR[i, {nres}] = gpux.atomic.exch(AC, i, {v})"],
                [f"AR[i, {nres}] = AC[i]", f"AC[i] = {v}"], True)
    return ([f"AR[i, {nres}] = gpux.atomic.add(AC, i, {v})"],
            [f"AR[i, {nres}] = AC[i]", f"AC[i] += {v}"], True)


def generate_section(rng: random.Random, content: Content | None) -> Section:
    """Random kernel-level code (see Section)."""
    r = rng
    every = r.randint(1, 7)
    step = r.randint(0, 56)
    ops = []
    nres = 0
    groups = {"AI": r.choice(_INT_GROUPS), "AW": r.choice(_INT_GROUPS),
              "AS": r.choice(_FLOAT_GROUPS), "AD": r.choice(_FLOAT_GROUPS)}
    for _ in range(r.randint(1, 5)):
        gpu, cpu, res = _atomic_op(r, nres, groups)
        if res and nres >= 8:
            continue
        nres += res
        ops.append([gpu, cpu, None])
    if content is not None and content.strings and content.texts() and r.random() < 0.5:
        for _ in range(r.randint(1, 2)):
            text = r.choice(content.texts())
            ops.append([["if i == 0:", f"    print({text!r}, I[0, 0])"], [], text])
    phases = []
    if r.random() < 0.6:
        perm = r.choice(["t", f"(t + {r.randint(1, 63)}) & 63", f"t ^ {r.randint(1, 63)}",
                         f"(t * {r.choice([3, 5, 7, 9])}) & 63"])
        fill = [f"sh[{perm}] = {_int_value(r)}"]
        phases.append([fill, fill])
        col = 0
        for _ in range(r.randint(1, 3)):
            idx = _index(r, "t")
            if r.random() < 0.5 or col >= 4:
                v = _int_value(r)
                phases.append([[f"gpux.atomic.add(sh, {idx}, {v})"], [f"sh[{idx}] += {v}"]])
            else:
                ph = ["if i < I.shape[0]:", f"    AB[i, {col}] = sh[{idx}]"]
                col += 1
                phases.append([ph, ph])
    return Section(step, every, ops, phases)
