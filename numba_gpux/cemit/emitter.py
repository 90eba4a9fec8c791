"""C-family source from optimized, fully inlined LLVM IR.

Values keep unsigned storage types (``uchar``..``ulong``, ``bool``, ``half``,
``float``, ``double``) so that LLVM's wrapping arithmetic is C's unsigned
arithmetic; signed operations cast to the signed type of the same width.
Every pointer is a byte pointer (``<qualifier> uchar*``) in the address space
inferred for it; loads and stores cast it to the accessed type.  Phis are
variables assigned on the edges into their block.  Single-use pure values are
folded into their user.
"""

from __future__ import annotations

import math
import struct

from ..errors import GpuxUserError, InternalCompilerError
from . import structure as S
from .dialect import Dialect, SourceDef
from .irmodel import Func, Global, Inst, ModuleModel, Ty, Val, c_name, struct_offsets, type_size_align

__all__ = ["emit_source", "SourceEmitError"]

GENERIC, GLOBAL, SHARED, CONSTANT, PRIVATE = 0, 1, 3, 4, 5
_UNSIGNED = {1: "bool", 8: "uchar", 16: "ushort", 32: "uint", 64: "ulong"}
_SIGNED = {8: "char", 16: "short", 32: "int", 64: "long"}
_FLOAT = {16: "half", 32: "float", 64: "double"}
_PURE_OPS = {"add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr", "udiv", "sdiv",
             "urem", "srem", "fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "icmp", "fcmp",
             "select", "trunc", "zext", "sext", "fptosi", "fptoui", "sitofp", "uitofp", "fpext",
             "fptrunc", "bitcast", "addrspacecast", "getelementptr", "freeze", "ptrtoint",
             "inttoptr"}
_DROP_INTRINSICS = ("llvm.lifetime.", "llvm.assume", "llvm.experimental.noalias.scope.decl",
                    "llvm.dbg.", "llvm.invariant.", "llvm.sideeffect", "llvm.donothing")


#: integers of 65..128 bits (LLVM makes them for closed forms of loop sums) as two words
WIDE_HELPERS = """typedef struct { ulong lo; ulong hi; } _gpux_wide;
{p} _gpux_wide _gpux_w(ulong lo, ulong hi) { _gpux_wide r; r.lo = lo; r.hi = hi; return r; }
{p} _gpux_wide _gpux_w_mask(_gpux_wide a, uint n) {
  if (n < 128u) a.hi &= (1ul << (n - 64u)) - 1ul;
  return a;
}
{p} _gpux_wide _gpux_w_sext(_gpux_wide a, uint n) {
  if (n < 128u && ((a.hi >> (n - 65u)) & 1ul)) a.hi |= ~((1ul << (n - 64u)) - 1ul);
  return a;
}
{p} _gpux_wide _gpux_w_add(_gpux_wide a, _gpux_wide b, uint n) {
  _gpux_wide r; r.lo = a.lo + b.lo; r.hi = a.hi + b.hi + (r.lo < a.lo ? 1ul : 0ul);
  return _gpux_w_mask(r, n);
}
{p} _gpux_wide _gpux_w_sub(_gpux_wide a, _gpux_wide b, uint n) {
  _gpux_wide r; r.lo = a.lo - b.lo; r.hi = a.hi - b.hi - (a.lo < b.lo ? 1ul : 0ul);
  return _gpux_w_mask(r, n);
}
{p} _gpux_wide _gpux_w_mul(_gpux_wide a, _gpux_wide b, uint n) {
  _gpux_wide r; r.lo = a.lo * b.lo; r.hi = {mulhi}(a.lo, b.lo) + a.lo * b.hi + a.hi * b.lo;
  return _gpux_w_mask(r, n);
}
{p} _gpux_wide _gpux_w_and(_gpux_wide a, _gpux_wide b, uint n) { return _gpux_w(a.lo & b.lo, a.hi & b.hi); }
{p} _gpux_wide _gpux_w_or(_gpux_wide a, _gpux_wide b, uint n) { return _gpux_w(a.lo | b.lo, a.hi | b.hi); }
{p} _gpux_wide _gpux_w_xor(_gpux_wide a, _gpux_wide b, uint n) { return _gpux_w(a.lo ^ b.lo, a.hi ^ b.hi); }
{p} _gpux_wide _gpux_w_shl(_gpux_wide a, _gpux_wide b, uint n) {
  ulong s = b.lo; _gpux_wide r;
  if (s == 0ul) return a;
  if (s >= 64ul) { r.hi = a.lo << (s - 64ul); r.lo = 0ul; }
  else { r.hi = (a.hi << s) | (a.lo >> (64ul - s)); r.lo = a.lo << s; }
  return _gpux_w_mask(r, n);
}
{p} _gpux_wide _gpux_w_lshr(_gpux_wide a, _gpux_wide b, uint n) {
  ulong s = b.lo; _gpux_wide r;
  if (s == 0ul) return a;
  if (s >= 64ul) { r.lo = a.hi >> (s - 64ul); r.hi = 0ul; }
  else { r.lo = (a.lo >> s) | (a.hi << (64ul - s)); r.hi = a.hi >> s; }
  return r;
}
{p} _gpux_wide _gpux_w_ashr(_gpux_wide a, _gpux_wide b, uint n) {
  ulong s = b.lo; _gpux_wide r; a = _gpux_w_sext(a, n);
  ulong fill = ((long)a.hi < 0l) ? ~0ul : 0ul;
  if (s == 0ul) return _gpux_w_mask(a, n);
  if (s >= 64ul) { r.lo = (ulong)((long)a.hi >> (s - 64ul)); r.hi = fill; }
  else { r.lo = (a.lo >> s) | (a.hi << (64ul - s)); r.hi = (ulong)((long)a.hi >> s); }
  return _gpux_w_mask(r, n);
}
{p} bool _gpux_w_eq(_gpux_wide a, _gpux_wide b, uint n) { return a.lo == b.lo && a.hi == b.hi; }
{p} bool _gpux_w_ult(_gpux_wide a, _gpux_wide b, uint n) {
  return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}
{p} bool _gpux_w_slt(_gpux_wide a, _gpux_wide b, uint n) {
  a = _gpux_w_sext(a, n); b = _gpux_w_sext(b, n);
  return (long)a.hi < (long)b.hi || (a.hi == b.hi && a.lo < b.lo);
}"""


class SourceEmitError(GpuxUserError):
    """The kernel uses something the source dialect cannot express."""


def ctype(ty: Ty) -> str:
    if ty.kind == "int":
        if 64 < ty.bits <= 128:
            return "_gpux_wide"
        if ty.bits not in _UNSIGNED:
            raise SourceEmitError(f"{ty.bits}-bit integers cannot be written as source")
        return _UNSIGNED[ty.bits]
    if ty.kind == "float":
        return _FLOAT[ty.bits]
    raise SourceEmitError(f"values of type {ty} cannot be written as source")


def stype(ty: Ty) -> str:
    return _SIGNED[ty.bits]


def _decimal(v: float, bits: int) -> str:
    import numpy as np

    t = {16: np.float16, 32: np.float32, 64: np.float64}[bits]
    r = repr(float(t(v))) if bits == 64 else np.format_float_positional(t(v), unique=True, trim="0") \
        if abs(v) >= 1e-4 and abs(v) < 1e16 or v == 0 else np.format_float_scientific(t(v), unique=True)
    if "e" not in r and "." not in r and "inf" not in r and "nan" not in r:
        r += ".0"
    return r


def float_literal(v: float, bits: int, d: Dialect) -> str:
    if math.isnan(v) or math.isinf(v):
        if bits == 64:
            b = struct.unpack("<Q", struct.pack("<d", v))[0]
            return d.bitcast.format(t="double", x=f"0x{b:x}ul")
        b = struct.unpack("<I", struct.pack("<f", v))[0]
        lit = d.bitcast.format(t="float", x=f"0x{b:x}u")
        return lit if bits == 32 else f"((half){lit})"
    h = float(v).hex() if d.float_style == "hex" else _decimal(v, bits)
    if bits == 64:
        return h
    if bits == 32:
        return h + "f"
    return f"((half){h}f)"


class _Fn:
    """Emission state of one function."""

    def __init__(self, em: "_Emitter", fn: Func):
        self.em, self.fn, self.d = em, fn, em.dialect
        self.names: dict[str, str] = {}
        self.used_c: set[str] = set()
        self.asp: dict[str, int | None] = {}
        self.defs: dict[str, Inst] = {}
        self.def_block: dict[str, str] = {}
        self.inline: set[str] = set()
        self.implicit: list[str] = []
        self.arrays: list[str] = []      # private / shared array declarations
        self.uses_jump = False

    # -- names -----------------------------------------------------------------
    def cname(self, irname: str) -> str:
        n = self.names.get(irname)
        if n is None:
            base = "v" + c_name(irname) if not irname[:1].isalpha() else c_name(irname)
            n, k = base, 1
            while n in self.used_c:
                n, k = f"{base}_{k}", k + 1
            self.used_c.add(n)
            self.names[irname] = n
        return n

    # -- analysis --------------------------------------------------------------
    def analyse(self):
        uses: dict[str, list] = {}
        for b in self.fn.blocks:
            for i in b.insts:
                if i.name:
                    self.defs[i.name] = i
                    self.def_block[i.name] = b.name
        for b in self.fn.blocks:
            for i in b.insts:
                for k, a in enumerate(i.args):
                    for n in _locals_in(a):
                        where = i.blocks[k] if i.op == "phi" else b.name
                        uses.setdefault(n, []).append((where, i))
        for name, i in self.defs.items():
            us = uses.get(name, [])
            if i.op == "alloca":
                self.inline.add(name)
            elif (len(us) == 1 and us[0][0] == self.def_block[name] and i.op != "phi"
                  and us[0][1].op != "phi" and self._pure(i)):
                self.inline.add(name)
        self._infer_addrspaces()

    def _pure(self, i: Inst) -> bool:
        if i.op in _PURE_OPS:
            return True
        if i.op == "call":
            sd = self.em.lookup(i.callee)
            if isinstance(sd, SourceDef):
                return sd.pure
            return i.callee.startswith("llvm.") and not i.callee.startswith(("llvm.memcpy", "llvm.memset"))
        return False

    def _val_asp(self, v: Val):
        if v.kind in ("local", "arg"):
            return self.asp.get(v.name)
        if v.kind == "global":
            g = self.em.model.globals.get(v.name)
            if g is None:
                raise SourceEmitError(f"pointer to function {v.name} cannot be written as source")
            return self.em.global_asp(g)
        if v.kind == "cexpr":
            ce = v.value
            if ce.op == "addrspacecast" and v.ty.addrspace != GENERIC:
                return v.ty.addrspace
            if ce.op in ("getelementptr", "addrspacecast", "bitcast"):
                return self._val_asp(ce.args[0])
        if v.kind in ("null", "undef"):
            return "any"
        if v.ty.kind == "ptr" and v.ty.addrspace != GENERIC:
            return v.ty.addrspace
        return None

    def _infer_addrspaces(self):
        for name, ty in self.fn.params:
            if ty.kind == "ptr":
                self.asp[name] = ty.addrspace if ty.addrspace != GENERIC else None
        ptr_defs = [i for i in self.defs.values() if i.ty.kind == "ptr"]
        for _ in range(len(ptr_defs) + 2):
            changed = False
            for i in ptr_defs:
                new = self._inst_asp(i)
                if new != self.asp.get(i.name):
                    self.asp[i.name] = new
                    changed = True
            if not changed:
                break

    def _inst_asp(self, i: Inst):
        if i.ty.addrspace != GENERIC:
            return i.ty.addrspace
        if i.op == "alloca":
            return PRIVATE
        if i.op in ("getelementptr", "addrspacecast", "bitcast", "freeze"):
            return self._val_asp(i.args[0])
        if i.op in ("phi", "select"):
            vals = i.args if i.op == "phi" else i.args[1:]
            found = {self._val_asp(v) for v in vals} - {"any", None}
            if len(found) == 1:
                return found.pop()
            if len(found) > 1:
                return "conflict"
            return None
        return None

    def ptr_qual(self, v: Val | str) -> str:
        asp = self.asp.get(v) if isinstance(v, str) else self._val_asp(v)
        what = v if isinstance(v, str) else (v.name or v.text or str(v.kind))
        if asp in (None, "any", "conflict"):
            if GENERIC in self.d.qualifiers:
                return self.d.qualifiers[GENERIC]
            why = ("may point into different memory spaces" if asp == "conflict"
                   else "comes from memory or an integer")
            raise SourceEmitError(
                f"{self.d.name}: cannot tell which memory a pointer ({what}) points to: it {why}; "
                f"{self.d.name} has no generic address space")
        q = self.d.qualifier(asp)
        if q is None:
            raise SourceEmitError(f"{self.d.name} has no address space for neutral addrspace({asp})")
        return q

    # -- expressions -----------------------------------------------------------
    def expr(self, v: Val) -> str:
        k = v.kind
        if k in ("local", "arg"):
            if k == "local" and v.name in self.inline:
                return self.inst_expr(self.defs[v.name])
            return self.cname(v.name)
        if k == "int":
            return self.int_literal(v.value, v.ty)
        if k == "float":
            return float_literal(v.value, v.ty.bits, self.d)
        if k == "undef":
            return self.zero(v.ty)
        if k == "null":
            return "0"
        if k == "global":
            g = self.em.model.globals[v.name]
            q = self.d.qualifier(self.em.global_asp(g))
            return f"(({q} uchar*){self.em.global_name(g, self)})"
        if k == "cexpr":
            return self.cexpr(v)
        if k == "agg" and v.value == "zero":
            return self.zero(v.ty)
        raise SourceEmitError(f"cannot write the operand {v.kind} {v.ty} as source")

    def zero(self, ty: Ty) -> str:
        if ty.kind == "int" and ty.bits > 64:
            return self.int_literal(0, ty)
        if ty.kind == "int":
            return "false" if ty.bits == 1 else f"(({ctype(ty)})0)"
        if ty.kind == "float":
            return float_literal(0.0, ty.bits, self.d)
        if ty.kind == "ptr":
            return "0"
        raise SourceEmitError(f"cannot write a value of type {ty}")

    def int_literal(self, value: int, ty: Ty) -> str:
        if ty.bits == 1:
            return "true" if value & 1 else "false"
        u = value & ((1 << ty.bits) - 1)
        if ty.bits > 64:
            self.need_wide()
            return f"_gpux_w({u & ((1 << 64) - 1)}ul, {u >> 64}ul)"
        if ty.bits == 64:
            return f"{u}ul"
        if ty.bits == 32:
            return f"{u}u"
        return f"(({ctype(ty)}){u}u)"

    def cexpr(self, v: Val) -> str:
        ce = v.value
        if ce.op in ("addrspacecast", "bitcast") and v.ty.kind == "ptr":
            return self.expr(ce.args[0])
        if ce.op == "getelementptr":
            return self.gep(ce.args[0], ce.src_ty, ce.args[1:])
        if ce.op == "ptrtoint":
            return f"((ulong){self.expr(ce.args[0])})"
        raise SourceEmitError(f"cannot write the constant expression {ce.op} as source")

    def gep(self, base: Val, src_ty: Ty, idx: list) -> str:
        const_off = 0
        terms = []
        ty = src_ty
        for n, iv in enumerate(idx):
            if n == 0:
                size = type_size_align(ty)[0]
            elif ty.kind == "struct":
                const_off += struct_offsets(ty)[iv.value]
                ty = ty.fields[iv.value]
                continue
            else:
                ty = ty.elem
                size = type_size_align(ty)[0]
            if iv.kind == "int":
                sval = iv.value if iv.value < (1 << (iv.ty.bits - 1)) else iv.value - (1 << iv.ty.bits)
                const_off += sval * size
            else:
                e = f"({_SIGNED[iv.ty.bits]}){self.expr(iv)}"
                terms.append(e if size == 1 else f"{e} * {size}")
        if const_off:
            terms.append(str(const_off))
        b = self.expr(base)
        if not terms:
            return b
        return f"({b} + {' + '.join(terms)})"

    def deref(self, ptr: Val, ty: Ty) -> str:
        q = self.ptr_qual(ptr)
        return f"*(({q} {ctype(ty)}*){self.expr(ptr)})"

    def narrow(self, e: str, ty: Ty) -> str:
        """Results narrower than int are promoted by C; cast them back."""
        if ty.kind == "int" and ty.bits < 32:
            return f"(({ctype(ty)})({e}))"
        return e

    def inst_expr(self, i: Inst) -> str:
        op, a = i.op, i.args
        E = self.expr
        if (i.ty.kind == "int" and i.ty.bits > 64) or (
                a and a[0].ty.kind == "int" and a[0].ty.bits > 64 and op not in ("select", "phi")):
            return self.wide(i)
        binops = {"add": "+", "sub": "-", "mul": "*", "and": "&", "or": "|", "xor": "^",
                  "shl": "<<", "lshr": ">>", "udiv": "/", "urem": "%",
                  "fadd": "+", "fsub": "-", "fmul": "*", "fdiv": "/"}
        if op in binops:
            if i.ty.kind == "int" and i.ty.bits == 1 and op in ("add", "sub", "xor"):
                return f"({E(a[0])} != {E(a[1])})"
            if i.ty.kind == "int" and i.ty.bits == 1 and op == "mul":
                return f"({E(a[0])} && {E(a[1])})"
            if i.ty.kind == "int" and i.ty.bits == 1:
                return f"(({E(a[0])} {binops[op]} {E(a[1])}) != 0)"
            return self.narrow(f"({E(a[0])} {binops[op]} {E(a[1])})", i.ty)
        if op in ("sdiv", "srem", "ashr"):
            st = stype(i.ty)
            sym = {"sdiv": "/", "srem": "%", "ashr": ">>"}[op]
            rhs = f"({st}){E(a[1])}" if op != "ashr" else E(a[1])
            return f"(({ctype(i.ty)})(({st}){E(a[0])} {sym} {rhs}))"
        if op == "frem":
            return f"{self.d.builtin('fmod')}({E(a[0])}, {E(a[1])})"
        if op == "fneg":
            return f"(-{E(a[0])})"
        if op == "icmp":
            return self.icmp(i)
        if op == "fcmp":
            return self.fcmp(i)
        if op == "select":
            return f"({E(a[0])} ? {E(a[1])} : {E(a[2])})"
        if op in ("freeze",):
            return E(a[0])
        if op in ("trunc", "zext", "sext", "fptosi", "fptoui", "sitofp", "uitofp", "fpext",
                  "fptrunc", "bitcast", "addrspacecast", "ptrtoint", "inttoptr"):
            return self.cast(i)
        if op == "getelementptr":
            return self.gep(a[0], i.src_ty, a[1:])
        if op == "load":
            if "atomic" in i.text.split("=", 1)[-1].split(",")[0]:
                raise SourceEmitError("atomic loads are not supported by the source emitter yet")
            return self.deref(a[0], i.ty)
        if op == "alloca":
            return f"(({self.d.qualifier(PRIVATE)} uchar*){self.cname(i.name)}_mem)"
        if op == "call":
            return self.call(i)
        if op == "extractvalue" and a[0].kind == "agg":
            return self.expr(a[0].value[i.indices[0]])
        raise SourceEmitError(f"the instruction `{i.text}` cannot be written as {self.d.name} source")

    def need_wide(self):
        helper = WIDE_HELPERS.replace("{p}", self.d.helper_prefix).replace(
            "{mulhi}", self.d.builtin("mul_hi"))
        self.em.helpers.setdefault(helper, None)

    def wide(self, i: Inst) -> str:
        """Integers of 65..128 bits, through the two-word helpers."""
        self.need_wide()
        op, a = i.op, i.args
        n = (i.ty.bits if i.ty.kind == "int" and i.ty.bits > 64 else a[0].ty.bits)
        if n > 128:
            raise SourceEmitError(f"{n}-bit integers cannot be written as source")

        def W(v: Val) -> str:
            if v.ty.bits > 64:
                return self.expr(v)
            e = self.expr(v)
            return f"_gpux_w((ulong){e}, 0ul)"
        if op in ("add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr"):
            return f"_gpux_w_{op}({W(a[0])}, {W(a[1])}, {n}u)"
        if op == "zext":
            return f"_gpux_w((ulong){self.expr(a[0])}, 0ul)"
        if op == "sext":
            src = a[0].ty.bits
            e = self.expr(a[0])
            lo = e if src == 64 else f"(ulong)(long)({stype(a[0].ty)}){e}" if src > 1 else f"(ulong)-(long){e}"
            return f"_gpux_w_mask(_gpux_w({lo}, ((long)({lo}) < 0l) ? ~0ul : 0ul), {n}u)"
        if op == "trunc":
            if i.ty.bits > 64:
                return f"_gpux_w_mask({self.expr(a[0])}, {i.ty.bits}u)"
            return f"(({ctype(i.ty)})({self.expr(a[0])}).lo)" if i.ty.bits > 1 else \
                f"((({self.expr(a[0])}).lo & 1ul) != 0ul)"
        if op == "icmp":
            x, y = W(a[0]), W(a[1])
            p = i.pred
            if p in ("eq", "ne"):
                r = f"_gpux_w_eq({x}, {y}, {n}u)"
                return r if p == "eq" else f"(!{r})"
            f = "_gpux_w_slt" if p[0] == "s" else "_gpux_w_ult"
            if p[1:] == "lt":
                return f"{f}({x}, {y}, {n}u)"
            if p[1:] == "gt":
                return f"{f}({y}, {x}, {n}u)"
            if p[1:] == "le":
                return f"(!{f}({y}, {x}, {n}u))"
            return f"(!{f}({x}, {y}, {n}u))"
        if op in ("freeze",):
            return self.expr(a[0])
        raise SourceEmitError(f"`{i.text}`: {n}-bit integer {op} cannot be written as source")

    def icmp(self, i: Inst) -> str:
        x, y = i.args
        p = i.pred
        sym = {"eq": "==", "ne": "!=", "ugt": ">", "uge": ">=", "ult": "<", "ule": "<=",
               "sgt": ">", "sge": ">=", "slt": "<", "sle": "<="}[p]
        if p[0] == "s" and x.ty.kind == "int":
            if x.ty.bits == 1:  # true is -1 as a signed i1
                return f"((int)-(int){self.expr(x)} {sym} (int)-(int){self.expr(y)})"
            st = stype(x.ty)
            return f"(({st}){self.expr(x)} {sym} ({st}){self.expr(y)})"
        return f"({self.expr(x)} {sym} {self.expr(y)})"

    def fcmp(self, i: Inst) -> str:
        x, y = self.expr(i.args[0]), self.expr(i.args[1])
        p = i.pred
        ordered = {"oeq": "==", "ogt": ">", "oge": ">=", "olt": "<", "ole": "<="}
        unordered_neg = {"ugt": "<=", "uge": "<", "ult": ">=", "ule": ">", "ueq": None}
        if p in ordered:
            return f"({x} {ordered[p]} {y})"
        if p == "une":
            return f"({x} != {y})"
        if p in ("ugt", "uge", "ult", "ule"):
            return f"(!({x} {unordered_neg[p]} {y}))"
        if p == "one":
            return f"(({x} < {y}) || ({x} > {y}))"
        if p == "ueq":
            return f"(!(({x} < {y}) || ({x} > {y})))"
        if p == "ord":
            return f"(({x} == {x}) && ({y} == {y}))"
        if p == "uno":
            return f"(({x} != {x}) || ({y} != {y}))"
        return "true" if p == "true" else "false"

    def cast(self, i: Inst) -> str:
        op, v = i.op, i.args[0]
        src, dst = v.ty, i.ty
        e = self.expr(v)
        if op == "addrspacecast" or (op == "bitcast" and dst.kind == "ptr"):
            return e
        if op == "trunc":
            if dst.bits == 1:
                return f"(({e} & 1) != 0)"
            return f"(({ctype(dst)}){e})"
        if op == "zext":
            return f"(({ctype(dst)}){e})"
        if op == "sext":
            if src.bits == 1:
                return f"(({ctype(dst)})-({stype(dst)}){e})"
            return f"(({ctype(dst)})({stype(dst)})({stype(src)}){e})"
        if op == "fptosi":
            if dst.bits == 1:
                return f"(({e}) != 0)"
            return f"(({ctype(dst)})({stype(dst)}){e})"
        if op == "fptoui":
            return f"(({ctype(dst)}){e})"
        if op == "sitofp":
            if src.bits == 1:
                return f"(({ctype(dst)})({e} ? -1 : 0))"
            return f"(({ctype(dst)})({stype(src)}){e})"
        if op in ("uitofp", "fpext", "fptrunc"):
            return f"(({ctype(dst)}){e})"
        if op == "bitcast":
            if ctype(src) == ctype(dst):
                return e
            return self.d.bitcast.format(t=ctype(dst), x=e)
        if op == "ptrtoint":
            return f"(({ctype(dst)})(ulong){e})"
        raise SourceEmitError(f"`{i.text}` (an integer made into a pointer) cannot be written "
                              f"as {self.d.name} source")

    def call(self, i: Inst) -> str:
        name = i.callee
        sd = self.em.lookup(name)
        args = [self.expr(a) for a in i.args]
        if isinstance(sd, SourceDef):
            for imp in sd.implicit:
                if imp not in self.implicit:
                    self.implicit.append(imp)
            if sd.helper:
                self.em.helpers.setdefault(sd.helper, None)
            return sd.expr.format(*args)
        if name.startswith("llvm."):
            return self.llvm_intrinsic(i, args)
        if name.startswith("__gpux_"):
            raise SourceEmitError(f"{self.d.name}: the portable intrinsic {name} has no source "
                                  f"definition for this target")
        raise SourceEmitError(f"calls {name!r}, which cannot be called from {self.d.name} source "
                              f"(device functions must be inlined; host functions are unavailable)")

    def llvm_intrinsic(self, i: Inst, args: list) -> str:
        base = i.callee.split(".")[1]
        B = self.d.builtin
        ty = i.ty
        if base in ("smax", "smin", "umax", "umin"):
            st = stype(ty) if base[0] == "s" else ctype(ty)
            fn = B(base[1:])
            return f"(({ctype(ty)}){fn}(({st}){args[0]}, ({st}){args[1]}))"
        if base == "abs":
            st = stype(ty)
            return f"(({ctype(ty)}){B('abs')}(({st}){args[0]}))"
        if base in ("fabs", "sqrt", "floor", "ceil", "trunc", "rint", "round", "copysign", "fma",
                    "sin", "cos", "exp", "exp2", "log", "log2", "log10", "pow"):
            return f"{B(base)}({', '.join(args)})"
        if base == "fmuladd":
            return f"{B('fma')}({', '.join(args)})"
        if base in ("minnum", "minimum", "minimumnum"):
            return f"{B('fmin')}({args[0]}, {args[1]})"
        if base in ("maxnum", "maximum", "maximumnum"):
            return f"{B('fmax')}({args[0]}, {args[1]})"
        if base == "ctpop":
            return f"(({ctype(ty)}){B('popcount')}({args[0]}))"
        if base in ("ctlz", "cttz"):
            return f"(({ctype(ty)}){B('clz' if base == 'ctlz' else 'ctz')}({args[0]}))"
        if base in ("expect", "freeze", "ssa"):
            return args[0]
        if base in ("fshl", "fshr") and ty.bits in (8, 16, 32, 64):
            w = ty.bits
            a, b, sh = args
            s_ = f"({sh} % {w}u)"
            if base == "fshl":
                e = f"(({s_} == 0) ? {a} : (({a} << {s_}) | ({b} >> ({w}u - {s_}))))"
            else:
                e = f"(({s_} == 0) ? {b} : (({b} >> {s_}) | ({a} << ({w}u - {s_}))))"
            return self.narrow(e, ty)
        raise SourceEmitError(f"the LLVM intrinsic {i.callee} cannot be written as {self.d.name} "
                              f"source yet")

    # -- statements ------------------------------------------------------------
    def inst_stmt(self, i: Inst, out: list, ind: str):
        if i.op in ("br", "switch", "ret", "unreachable", "phi"):
            return
        if i.op == "alloca":
            return
        if i.op == "store":
            val, ptr = i.args
            out.append(f"{ind}{self.deref(ptr, val.ty)} = {self.expr(val)};")
            return
        if i.op == "call" and i.callee.startswith(_DROP_INTRINSICS):
            return
        if i.op == "call" and i.callee.startswith(("llvm.memcpy", "llvm.memmove", "llvm.memset")):
            out.extend(self.mem_intrinsic(i, ind))
            return
        if i.op == "fence":
            raise SourceEmitError("LLVM fences are not supported by the source emitter")
        if i.op in ("atomicrmw", "cmpxchg"):
            raise SourceEmitError(f"`{i.text}`: atomics reach source targets only through the "
                                  f"portable __gpux_atomic_* intrinsics")
        if i.name and i.name in self.inline:
            return
        if i.ty.kind == "void" or not i.name:
            if i.op == "call":
                out.append(f"{ind}{self.call(i)};")
                return
            raise SourceEmitError(f"cannot write `{i.text}`")
        out.append(f"{ind}{self.cname(i.name)} = {self.inst_expr(i)};")

    def mem_intrinsic(self, i: Inst, ind: str) -> list[str]:
        dst = i.args[0]
        n = self.expr(i.args[2])
        qd = self.ptr_qual(dst)
        if "memset" in i.callee:
            src = f"(uchar){self.expr(i.args[1])}"
            return [f"{ind}for (ulong _gpux_k = 0; _gpux_k < {n}; ++_gpux_k) "
                    f"(({qd} uchar*){self.expr(dst)})[_gpux_k] = {src};"]
        qs = self.ptr_qual(i.args[1])
        return [f"{ind}for (ulong _gpux_k = 0; _gpux_k < {n}; ++_gpux_k) "
                f"(({qd} uchar*){self.expr(dst)})[_gpux_k] = (({qs} uchar*){self.expr(i.args[1])})[_gpux_k];"]

    def moves(self, src: str, dst: str, out: list, ind: str):
        phis = [i for i in self.fn.block(dst).insts if i.op == "phi"]
        pairs = []
        for p in phis:
            k = p.blocks.index(src)
            pairs.append((self.cname(p.name), self.expr(p.args[k])))
        targets = {d for d, _ in pairs}
        conflict = False
        assigned = set()
        for d, e in pairs:
            if any(_mentions(e, t) for t in assigned):
                conflict = True
                break
            assigned.add(d)
        if not conflict:
            for d, e in pairs:
                if d != e:
                    out.append(f"{ind}{d} = {e};")
            return
        tmps = []
        for n, (d, e) in enumerate(pairs):
            t = f"{d}_in"
            self.em.extra_decls.setdefault(self, {})[t] = self.decl_type(phis[n])
            tmps.append(t)
            out.append(f"{ind}{t} = {e};")
        for (d, _), t in zip(pairs, tmps):
            out.append(f"{ind}{d} = {t};")
        del targets

    def decl_type(self, i: Inst) -> str:
        if i.ty.kind == "ptr":
            return f"{self.ptr_qual(i.name)} uchar*"
        return ctype(i.ty)

    def cond_of(self, block: str, key) -> str:
        t = self.fn.block(block).term
        if t.op == "br":
            return self.expr(t.args[0])
        v = self.expr(t.args[0])
        return " || ".join(f"{v} == {self.int_literal(c, t.args[0].ty)}" for c in key)

    def render(self, seq: list, out: list, depth: int):
        ind = "  " * depth
        for s in seq:
            if isinstance(s, S.SCode):
                for i in self.fn.block(s.block).insts:
                    self.inst_stmt(i, out, ind)
            elif isinstance(s, S.SMoves):
                self.moves(s.src, s.dst, out, ind)
            elif isinstance(s, S.SIf):
                self.render_if(s, out, depth)
            elif isinstance(s, S.SBlock):
                out.append(f"{ind}do {{")
                self.render(s.body, out, depth + 1)
                out.append(f"{ind}}} while (0);")
            elif isinstance(s, S.SLoop):
                out.append(f"{ind}while (1) {{")
                self.render(s.body, out, depth + 1)
                out.append(f"{ind}}}")
            elif isinstance(s, S.SRet):
                t = self.fn.block(s.block).term
                if t.args:
                    out.append(f"{ind}return {self.expr(t.args[0])};")
                else:
                    out.append(f"{ind}return;")
            elif isinstance(s, S.SUnreachable):
                out.append(f"{ind}return;")
            elif isinstance(s, S.CBreak):
                out.append(f"{ind}break;")
            elif isinstance(s, S.CContinue):
                out.append(f"{ind}continue;")
            elif isinstance(s, S.CJump):
                out.append(f"{ind}_gpux_jump = {s.label}; break;")
            elif isinstance(s, S.CDispatch):
                out.append(f"{ind}if (_gpux_jump) {{")
                if s.here is not None:
                    act = "continue" if s.here_is_loop else "break"
                    out.append(f"{ind}  if (_gpux_jump == {s.here}) {{ _gpux_jump = 0; {act}; }}")
                if s.outer:
                    out.append(f"{ind}  break;")
                out.append(f"{ind}}}")
            else:
                raise InternalCompilerError("emit-source", f"unknown statement {s!r}")

    def render_if(self, s: S.SIf, out: list, depth: int):
        ind = "  " * depth
        arms = s.arms
        for n, (key, body) in enumerate(arms):
            if key is None:
                if not body:
                    break
                if n == 0:
                    self.render(body, out, depth)
                    return
                out.append(f"{ind}}} else {{")
                self.render(body, out, depth + 1)
                break
            cond = self.cond_of(s.block, key)
            if n == 0 and not body and len(arms) == 2 and key == "true":
                out.append(f"{ind}if (!({cond})) {{")
                self.render(arms[1][1], out, depth + 1)
                out.append(f"{ind}}}")
                return
            out.append(f"{ind}{'if' if n == 0 else '} else if'} ({cond}) {{")
            self.render(body, out, depth + 1)
        out.append(f"{ind}}}")

    def render_state_machine(self, out: list, depth: int):
        """Fallback for irreducible control flow: ``while (1) switch (state)``."""
        ind = "  " * depth
        ids = {b.name: n for n, b in enumerate(self.fn.blocks)}
        out.append(f"{ind}uint _gpux_state = 0;")
        out.append(f"{ind}while (1) {{")
        out.append(f"{ind}  switch (_gpux_state) {{")
        for b in self.fn.blocks:
            out.append(f"{ind}  case {ids[b.name]}: {{")
            inner = "  " * (depth + 2)
            self.render([S.SCode(b.name)], out, depth + 2)
            t = b.term

            def goto(dst, o, ii):
                if any(x.op == "phi" for x in self.fn.block(dst).insts):
                    self.moves(b.name, dst, o, ii)
                o.append(f"{ii}_gpux_state = {ids[dst]}; continue;")

            if t.op == "br" and len(t.blocks) == 2:
                out.append(f"{inner}if ({self.expr(t.args[0])}) {{")
                goto(t.blocks[0], out, inner + "  ")
                out.append(f"{inner}}}")
                goto(t.blocks[1], out, inner)
            elif t.op == "br":
                goto(t.blocks[0], out, inner)
            elif t.op == "switch":
                v = self.expr(t.args[0])
                for c, dst in t.cases:
                    out.append(f"{inner}if ({v} == {self.int_literal(c, t.args[0].ty)}) {{")
                    goto(dst, out, inner + "  ")
                    out.append(f"{inner}}}")
                goto(t.blocks[0], out, inner)
            else:
                self.render([S.SRet(b.name)], out, depth + 2)
            out.append(f"{ind}  }}")
        out.append(f"{ind}  }}")
        out.append(f"{ind}}}")


def _locals_in(v: Val):
    if v.kind == "local":
        yield v.name
    elif v.kind == "cexpr":
        for a in v.value.args:
            yield from _locals_in(a)


def _mentions(expr: str, ident: str) -> bool:
    import re

    return re.search(rf"(?<![\w]){re.escape(ident)}(?![\w])", expr) is not None


class _Emitter:
    def __init__(self, model: ModuleModel, dialect: Dialect, lookup, features):
        self.model, self.dialect, self.lookup_fn, self.features = model, dialect, lookup, features
        self.helpers: dict[str, None] = {}
        self.gnames: dict[str, str] = {}
        self.gdecls: list[str] = []
        self.extra_decls: dict = {}
        self.shared_decls: dict = {}

    def lookup(self, name: str):
        return self.lookup_fn(name)

    def global_asp(self, g: Global) -> int:
        if g.addrspace != GENERIC:
            return g.addrspace
        return CONSTANT if g.constant else GLOBAL

    def global_name(self, g: Global, fn: _Fn) -> str:
        n = self.gnames.get(g.name)
        if n is not None:
            if self.global_asp(g) == SHARED:
                fn.arrays.append(self.shared_decls[g.name])
            return n
        n = "g_" + c_name(g.name)
        self.gnames[g.name] = n
        asp = self.global_asp(g)
        size = type_size_align(g.ty)[0]
        words = max(1, (size + 7) // 8)
        q = self.dialect.qualifier(asp)
        if q is None:
            raise SourceEmitError(f"{self.dialect.name} has no address space for module variable "
                                  f"{g.name} (neutral addrspace({asp}))")
        if asp == SHARED:
            if g.external:
                raise SourceEmitError("dynamically sized shared memory is not supported by the "
                                      "source emitter yet")
            decl = self.dialect.shared_array.format(q=q, name=n, n=words)
            self.shared_decls[g.name] = decl
            fn.arrays.append(decl)
        elif asp == CONSTANT and g.constant:
            data = bytearray(words * 8)
            if g.init is not None:
                _serialize(g.init, g.ty, data, 0)
            init = ", ".join(f"0x{int.from_bytes(data[k:k + 8], 'little'):x}ul"
                             for k in range(0, len(data), 8))
            self.gdecls.append(self.dialect.constant_array.format(q=q, name=n, n=words, init=init))
        else:
            raise SourceEmitError(f"module variable {g.name} (writable, neutral addrspace({asp})) "
                                  f"cannot be written as {self.dialect.name} source")
        return n

    def function(self, fn: Func) -> str:
        st = _Fn(self, fn)
        st.analyse()
        tree = S.structure(fn)
        body: list[str] = []
        if tree is None:
            st.render_state_machine(body, 1)
        else:
            tree, st.uses_jump = S.lower_jumps(tree)
            st.render(tree, body, 1)
        d = self.dialect
        params = []
        for name, ty in fn.params:
            cn = st.cname(name)
            if ty.kind == "ptr":
                params.append((cn, None, st.ptr_qual(name)))
            else:
                params.append((cn, ctype(ty), ""))
        pdecls, prologue, preface = d.kernel_params(c_name(fn.name), params, st.implicit)
        decls = []
        for name, i in st.defs.items():
            if name in st.inline:
                if i.op == "alloca":
                    size = type_size_align(i.src_ty)[0]
                    if i.args and i.args[0].kind == "int":
                        size *= i.args[0].value
                    elif i.args:
                        raise SourceEmitError("variable-sized stack arrays are not supported")
                    st.arrays.append(f"ulong {st.cname(name)}_mem[{max(1, (size + 7) // 8)}];")
                continue
            decls.append(f"{st.decl_type(i)} {st.cname(name)};")
        for t, ty in self.extra_decls.get(st, {}).items():
            decls.append(f"{ty} {t};")
        if st.uses_jump:
            decls.append("uint _gpux_jump = 0;")
        lines = [f"{d.kernel_qualifier} void {c_name(fn.name)}(" + ", ".join(pdecls) + ") {"]
        lines += ["  " + x for x in prologue]
        lines += ["  " + x for x in dict.fromkeys(st.arrays)]
        lines += ["  " + x for x in decls]
        lines += body
        lines.append("}")
        return (preface + "\n\n" if preface else "") + "\n".join(lines)


def _serialize(v: Val, ty: Ty, buf: bytearray, off: int):
    if v.kind in ("undef", "null") or (v.kind == "agg" and v.value == "zero"):
        return
    if v.kind == "int":
        n = type_size_align(ty)[0]
        buf[off:off + n] = (v.value & ((1 << (8 * n)) - 1)).to_bytes(n, "little")
    elif v.kind == "float":
        fmt = {16: "<e", 32: "<f", 64: "<d"}[ty.bits]
        b = struct.pack(fmt, v.value)
        buf[off:off + len(b)] = b
    elif v.kind == "agg":
        if ty.kind in ("array", "vector"):
            es = type_size_align(ty.elem)[0]
            for k, item in enumerate(v.value):
                _serialize(item, ty.elem, buf, off + k * es)
        elif ty.kind == "struct":
            for item, fty, fo in zip(v.value, ty.fields, struct_offsets(ty)):
                _serialize(item, fty, buf, off + fo)
    else:
        raise SourceEmitError(f"cannot write constant data of kind {v.kind} ({ty})")


def emit_source(module, kernels, dialect: Dialect, lookup, features=frozenset()) -> str:
    """Source text for the *kernels* of the optimized llvmlite *module* in *dialect*.

    *lookup(name)* returns a :class:`SourceDef` for an intrinsic, or None.
    """
    from .irmodel import read_module

    model = read_module(module)
    em = _Emitter(model, dialect, lookup, features)
    funcs = []
    for name in kernels:
        fn = model.functions.get(name)
        if fn is None or fn.declaration:
            raise InternalCompilerError("emit-source", f"kernel {name} is not in the module")
        funcs.append(em.function(fn))
    for name, fn in model.functions.items():
        if not fn.declaration and name not in kernels:
            # every device function must have been inlined (finish_module marks them)
            callers = [k for k in kernels if any(i.op == "call" and i.callee == name
                                                 for b in model.functions[k].blocks for i in b.insts)]
            if callers:
                raise SourceEmitError(f"device function {name} was not inlined; source targets "
                                      f"need every device function inlined into its kernel")
    text = "\n".join(funcs)
    pre = [dialect.preamble] if dialect.preamble else []
    for feat, p in dialect.feature_preambles.items():
        if feat == "fp64" and "double" in text or feat == "fp16" and "half" in text:
            pre.append(p)
    parts = pre + list(em.helpers) + em.gdecls + funcs
    return "\n\n".join(p.strip("\n") for p in parts if p) + "\n"
