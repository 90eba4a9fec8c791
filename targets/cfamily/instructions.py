"""Expressions: the C-family spelling of IR values and instructions of one function.

:class:`FnExprs` holds what the emitter knows about one function (C names, the
address space inferred for each pointer, which single-use pure values are
folded into their user) and writes each value or instruction as an expression.
Every pointer is a byte pointer (``<qualifier> uchar*``) in the address space
inferred for it; loads and stores cast it to the accessed type.  Statements and
control flow are written by :mod:`.emitter`.
"""

from __future__ import annotations

from .dialect import SourceDef
from .irmodel import Func, Inst, Ty, Val, c_name, struct_offsets, type_size_align
from .values import (SourceEmitError, WIDE_HELPERS, ctype, float_literal, masked, odd_width,
                     signed_value, stype,
                     wide_expr)
from .vectors import VECTOR_PURE_OPS, VectorLanes

__all__ = ["FnExprs", "GENERIC", "GLOBAL", "SHARED", "CONSTANT", "PRIVATE", "locals_in",
           "is_overflow"]

GENERIC, GLOBAL, SHARED, CONSTANT, PRIVATE = 0, 1, 3, 4, 5
_PURE_OPS = {"add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr", "udiv", "sdiv",
             "urem", "srem", "fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "icmp", "fcmp",
             "select", "trunc", "zext", "sext", "fptosi", "fptoui", "sitofp", "uitofp", "fpext",
             "fptrunc", "bitcast", "addrspacecast", "getelementptr", "freeze", "ptrtoint",
             "inttoptr"} | VECTOR_PURE_OPS
#: atomicrmw operation -> portable atomic operation (language/atomics.py)
_RMW = {"add": "add", "sub": "sub", "and": "and", "or": "or", "xor": "xor", "xchg": "exch",
        "max": "max", "min": "min", "umax": "umax", "umin": "umin", "uinc_wrap": "inc",
        "udec_wrap": "dec", "fadd": "add", "fsub": "sub", "fmax": "nanmax", "fmin": "nanmin"}
#: neutral address space -> tag ({s0} in source definitions) and words for messages
_SPACE_TAGS = {GLOBAL: "g", SHARED: "l", CONSTANT: "c", PRIVATE: "p"}
_SPACE_WORDS = {GLOBAL: "global memory", SHARED: "shared memory", CONSTANT: "constant memory",
                PRIVATE: "private (local.array) memory"}


class FnExprs(VectorLanes):
    """Emission state of one function, and the expressions of its values and instructions."""

    def __init__(self, em, fn: Func):
        self.em, self.fn, self.d = em, fn, em.dialect
        self.names: dict[str, str] = {}
        self.lanes: dict[tuple, str] = {}  # (IR name, lane) -> C name (vectors.py)
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
                    for n in locals_in(a):
                        where = i.blocks[k] if i.op == "phi" else b.name
                        uses.setdefault(n, []).append((where, i))
        for name, i in self.defs.items():
            us = uses.get(name, [])
            if i.op == "alloca" or (i.op == "call" and i.callee.startswith("llvm.stacksave")):
                self.inline.add(name)  # (a stack position: only stackrestore reads it)
            elif (len(us) == 1 and us[0][0] == self.def_block[name] and i.op != "phi"
                  and us[0][1].op != "phi" and self._pure(i) and not is_overflow(i)):
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
        # the generic pointers this function puts in memory and makes into integers:
        # what a generic pointer loaded from memory, or made from an integer, may be
        stored = [i.args[0] for b in self.fn.blocks for i in b.insts
                  if i.op == "store" and i.args[0].ty.kind == "ptr"]
        as_ints = [i.args[0] for b in self.fn.blocks for i in b.insts
                   if i.op == "ptrtoint" and i.args[0].ty.kind == "ptr"]
        self._held = (stored, as_ints)
        for _ in range(len(ptr_defs) + 2):
            changed = False
            for i in ptr_defs:
                new = self._inst_asp(i)
                if new != self.asp.get(i.name):
                    self.asp[i.name] = new
                    changed = True
            if not changed:
                break

    def _space_of(self, vals) -> object:
        """The one address space of the pointers *vals* (None: none known yet,
        "conflict": more than one)."""
        found = {self._val_asp(v) for v in vals} - {"any", None}
        if len(found) == 1:
            return found.pop()
        return "conflict" if found else None

    def _inst_asp(self, i: Inst):
        if i.ty.addrspace != GENERIC:
            return i.ty.addrspace
        if i.op == "alloca":
            return PRIVATE
        if i.op in ("getelementptr", "addrspacecast", "bitcast", "freeze"):
            return self._val_asp(i.args[0])
        if i.op == "call":
            sd = self.em.lookup(i.callee)
            return sd.result_space if isinstance(sd, SourceDef) else None
        if i.op in ("phi", "select"):
            return self._space_of(i.args if i.op == "phi" else i.args[1:])
        # a generic pointer held in memory (a MemInfo's data, a pointer in a struct
        # Numba's runtime builds) is one this function stored: code that holds pointers
        # to one memory only (the device heap's blocks are global memory) says which;
        # the same for a pointer made from an integer and the pointers made into integers
        if i.op == "load":
            return self._space_of(self._held[0])
        if i.op == "inttoptr":
            return self._space_of(self._held[1])
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
        if k == "code":  # a lane of a vector, written already (vectors.py)
            return v.text
        if v.ty.kind == "vector":
            raise SourceEmitError(f"a vector value ({v.name or v.kind} of type {v.ty}) is an operand "
                                  f"that {self.d.name} source cannot take whole")
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
                e = signed_value(self.expr(iv), iv.ty)
                terms.append(e if size == 1 else f"{e} * {size}")
        if const_off:
            terms.append(str(const_off))
        b = self.expr(base)
        if not terms:
            return b
        return f"({b} + {' + '.join(terms)})"

    def deref(self, ptr: Val, ty: Ty, held: Val | str | None = None) -> str:
        """The lvalue of type *ty* at *ptr*; a pointer held there (*ty* a pointer) has
        the address space inferred for *held* (the stored value, or the load)."""
        q = self.ptr_qual(ptr)
        if ty.kind == "ptr":  # the qualifier after the pointee: `T __global*`
            return f"*(({self.mem_type(ty, held)} {q}*){self.expr(ptr)})"
        return f"*(({q} {ctype(ty)}*){self.expr(ptr)})"

    def mem_type(self, ty: Ty, held: Val | str | None) -> str:
        """The C type of a value of type *ty* in memory: a pointer is a byte pointer
        into its own address space (``__global uchar*`` held in ``__local`` memory:
        ``__global uchar* __local*`` points to it)."""
        if ty.kind != "ptr":
            return ctype(ty)
        if ty.addrspace != GENERIC:
            q = self.d.qualifier(ty.addrspace)
            if q is None:
                raise SourceEmitError(f"{self.d.name} has no address space for neutral "
                                      f"addrspace({ty.addrspace})")
            return f"{q} uchar*"
        if isinstance(held, Val) and held.kind in ("null", "undef"):
            # a null pointer stored: in the space of the others held (any would do)
            asp = self._space_of(self._held[0])
            return f"{self.d.qualifier(asp if isinstance(asp, int) else GLOBAL)} uchar*"
        return f"{self.ptr_qual(held)} uchar*"

    def narrow(self, e: str, ty: Ty) -> str:
        """Results narrower than int are promoted by C; cast them back (and clear the
        bits above an odd width)."""
        if ty.kind == "int" and (ty.bits < 32 or odd_width(ty)):
            return masked(e, ty)
        return e

    def inst_expr(self, i: Inst) -> str:
        op, a = i.op, i.args
        E = self.expr
        if op == "extractelement" or any(x.ty.kind == "vector" for x in a):
            return self.from_vector(i)
        if (i.ty.kind == "int" and i.ty.bits > 64) or (
                a and a[0].ty.kind == "int" and a[0].ty.bits > 64 and op not in ("select", "phi")):
            return wide_expr(self, i)
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
            sym = {"sdiv": "/", "srem": "%", "ashr": ">>"}[op]
            rhs = signed_value(E(a[1]), i.ty) if op != "ashr" else E(a[1])
            return masked(f"{signed_value(E(a[0]), i.ty)} {sym} {rhs}", i.ty)
        if op == "frem":
            return f"{self.d.builtin('fmod')}({E(a[0])}, {E(a[1])})"
        if op == "fneg":
            return f"(-{E(a[0])})"
        if op == "icmp":
            return self.icmp(i)
        if op == "fcmp":
            return self.fcmp(i)
        if op == "select":
            return self.select(E(a[0]), E(a[1]), E(a[2]), i.ty)
        if op in ("freeze",):
            return E(a[0])
        if op in ("trunc", "zext", "sext", "fptosi", "fptoui", "sitofp", "uitofp", "fpext",
                  "fptrunc", "bitcast", "addrspacecast", "ptrtoint", "inttoptr"):
            return self.cast(i)
        if op == "getelementptr":
            return self.gep(a[0], i.src_ty, a[1:])
        if op == "load":
            if "atomic" in i.flags:
                # an aligned word read is atomic on every device; volatile keeps it a read
                return f"*((volatile {self.ptr_qual(a[0])} {ctype(i.ty)}*){self.expr(a[0])})"
            return self.deref(a[0], i.ty, i.name)
        if op in ("atomicrmw", "cmpxchg"):
            return self.raw_atomic(i)
        if op == "extractvalue" and a[0].kind == "local" and is_overflow(self.defs[a[0].name]):
            x = self.cname(a[0].name)  # {value, overflowed}: two variables (overflow())
            return x if i.indices == (0,) else f"{x}_ov"
        if op == "extractvalue" and a[0].kind == "local" and self.defs[a[0].name].op == "cmpxchg":
            x = self.defs[a[0].name]  # {old, success}: the variable holds the old value
            return self.cname(x.name) if i.indices == (0,) else \
                f"({self.cname(x.name)} == {self.expr(x.args[1])})"
        if op == "alloca":
            return f"(({self.d.qualifier(PRIVATE)} uchar*){self.cname(i.name)}_mem)"
        if op == "call":
            return self.call(i)
        if op == "extractvalue" and a[0].kind == "agg":
            return self.expr(a[0].value[i.indices[0]])
        raise SourceEmitError(f"the instruction `{i.text}` cannot be written as {self.d.name} source")

    def select(self, c: str, x: str, y: str, ty: Ty) -> str:
        """*x* if the condition *c* holds, else *y* (values of type *ty*)."""
        if self.d.select and ty.kind in ("int", "float") and 8 <= ty.bits <= 64:
            return self.d.select.format(c=c, a=x, b=y, t=ctype(Ty("int", bits=ty.bits)))
        return f"({c} ? {x} : {y})"

    def need_wide(self):
        """Place the two-word integer helpers before the kernels."""
        helper = WIDE_HELPERS.replace("{p}", self.d.helper_prefix).replace(
            "{mulhi}", self.d.builtin("mul_hi"))
        self.em.helpers.setdefault(helper, None)

    def icmp(self, i: Inst) -> str:
        x, y = i.args
        p = i.pred
        sym = {"eq": "==", "ne": "!=", "ugt": ">", "uge": ">=", "ult": "<", "ule": "<=",
               "sgt": ">", "sge": ">=", "slt": "<", "sle": "<="}[p]
        if p[0] == "s" and x.ty.kind == "int":
            if x.ty.bits == 1:  # true is -1 as a signed i1
                return f"((int)-(int){self.expr(x)} {sym} (int)-(int){self.expr(y)})"
            return f"({signed_value(self.expr(x), x.ty)} {sym} {signed_value(self.expr(y), y.ty)})"
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
        if p in ("ord", "uno"):
            # a float constant that is not NaN drops out (`fcmp ord %v, 0.0` is LLVM's
            # "is %v not NaN"): compilers warn of `&&` with a constant operand
            same, join = ("==", "&&") if p == "ord" else ("!=", "||")
            tests = [f"({e} {same} {e})" for v, e in zip(i.args, (x, y))
                     if not (v.kind == "float" and v.value == v.value)]
            if not tests:
                return "true" if p == "ord" else "false"
            return tests[0] if len(tests) == 1 else f"({tests[0]} {join} {tests[1]})"
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
            return masked(e, dst)
        if op == "zext":
            return f"(({ctype(dst)}){e})"
        if op == "sext":
            if src.bits == 1:
                return masked(f"-({stype(dst)}){e}", dst)
            return masked(f"({stype(dst)}){signed_value(e, src)}", dst)
        if op == "fptosi":
            if dst.bits == 1:
                return f"(({e}) != 0)"
            return masked(f"({stype(dst)}){e}", dst)
        if op == "fptoui":
            return masked(e, dst)
        if op == "sitofp":
            if src.bits == 1:
                return f"(({ctype(dst)})({e} ? -1 : 0))"
            return f"(({ctype(dst)}){signed_value(e, src)})"
        if op in ("uitofp", "fpext", "fptrunc"):
            return f"(({ctype(dst)}){e})"
        if op == "bitcast":
            if odd_width(src) or odd_width(dst):
                raise SourceEmitError(f"`{i.text}`: a bit cast of an odd-width integer cannot "
                                      f"be written as {self.d.name} source")
            if ctype(src) == ctype(dst):
                return e
            return self.d.bitcast.format(t=ctype(dst), x=e)
        if op == "ptrtoint":
            return masked(f"(ulong){e}", dst)
        if op == "inttoptr":
            return f"(({self.ptr_qual(i.name)} uchar*)({e}))"
        raise SourceEmitError(f"`{i.text}` (an integer made into a pointer) cannot be written "
                              f"as {self.d.name} source")

    def call(self, i: Inst) -> str:
        name = i.callee
        sd = self.em.lookup(name)
        if isinstance(sd, SourceDef):
            return self.apply_def(sd, name, i.args)
        if name.startswith("llvm.bitreverse.") and i.ty.bits in (32, 64):
            sd = self.em.lookup(f"__gpux_brev_i{i.ty.bits}")  # the portable bit reversal
            if isinstance(sd, SourceDef):
                return self.apply_def(sd, name, i.args)
        if name.startswith("llvm.bitreverse.") and 1 < i.ty.bits < 64 and i.ty.bits != 32:
            # reversed in 32 (or 64) bits, then shifted down: the unsigned operand widens
            # with zeros, and an odd width's bits above it are clear (a bit-reversal loop
            # of a constant count: InstCombine's llvm.bitreverse.i10)
            wide = 32 if i.ty.bits < 32 else 64
            sd = self.em.lookup(f"__gpux_brev_i{wide}")
            if isinstance(sd, SourceDef):
                rev = self.apply_def(sd, name, i.args)
                return f"(({ctype(i.ty)})({rev} >> {wide - i.ty.bits}u))"
        args = [self.expr(a) for a in i.args]
        if name.startswith("llvm."):
            return self.llvm_intrinsic(i, args)
        if name.startswith("__gpux_"):
            raise SourceEmitError(f"{self.d.name}: the portable intrinsic {name} has no source "
                                  f"definition for this target")
        raise SourceEmitError(f"calls {name!r}, which cannot be called from {self.d.name} source "
                              f"(device functions must be inlined; host functions are unavailable)")

    def apply_def(self, sd: SourceDef, name: str, vals: list) -> str:
        """The source of intrinsic *name* (definition *sd*) applied to the operands *vals*."""
        for imp in sd.implicit:
            if imp not in self.implicit:
                self.implicit.append(imp)
        self.arrays.extend(sd.locals)
        args, spaces = [], {}
        for k, v in enumerate(vals):
            if k in sd.cstring_args:
                args.append(self.cstring(v, name))
                continue
            args.append(self.expr(v))
            if v.ty.kind == "ptr":
                q, asp = self.ptr_qual(v), self._val_asp(v)
                if sd.ptr_spaces and asp not in sd.ptr_spaces:
                    raise SourceEmitError(
                        f"{self.d.name}: {name} cannot operate on a pointer to "
                        f"{_SPACE_WORDS.get(asp, asp)} (it takes "
                        f"{' or '.join(_SPACE_WORDS[a] for a in sd.ptr_spaces)})")
                spaces[f"q{k}"] = q
                spaces[f"s{k}"] = _SPACE_TAGS.get(asp, "x")
        helper = sd.helper
        for key, val in spaces.items():
            helper = helper.replace("{" + key + "}", val)
        if helper:
            self.em.helpers.setdefault(helper, None)
        return sd.expr.format(*args, **spaces)

    def raw_atomic(self, i: Inst) -> str:
        """An ``atomicrmw``/``cmpxchg`` written through the target's source definition of the
        matching portable intrinsic (the debug wrapper's error record uses ``cmpxchg``)."""
        if i.op == "cmpxchg":
            op, ty = "cas", i.args[1].ty
        else:
            op, ty = _RMW.get(i.pred), i.ty
        if op is None or ty.kind not in ("int", "float") or ty.bits not in (32, 64):
            raise SourceEmitError(f"`{i.text}` cannot be written as {self.d.name} source")
        if ty.kind == "float":
            sfx = f"f{ty.bits}"
        else:
            sfx = f"{'u' if op in ('umax', 'umin', 'inc', 'dec') else 'i'}{ty.bits}"
        op = {"umax": "max", "umin": "min"}.get(op, op)
        name = f"__gpux_atomic_{op}_{sfx}"
        sd = self.em.lookup(name)
        if not isinstance(sd, SourceDef):
            raise SourceEmitError(f"`{i.text}`: {self.d.name} has no definition of {name} to "
                                  f"write this atomic with")
        return self.apply_def(sd, name, i.args)

    def cstring(self, v: Val, name: str) -> str:
        """A string literal of the constant C string operand *v* points to."""
        while v.kind == "cexpr" and v.value.op in ("getelementptr", "addrspacecast", "bitcast"):
            if v.value.op == "getelementptr" and any(a.kind != "int" or a.value for a in v.value.args[1:]):
                break
            v = v.value.args[0]
        g = self.em.model.globals.get(v.name) if v.kind == "global" else None
        if g is None or not g.constant or g.init is None or g.init.kind != "agg" \
                or not isinstance(g.init.value, list):
            raise SourceEmitError(f"{name}: the string operand must be a constant string")
        data = bytes(x.value & 0xFF for x in g.init.value).split(b"\0", 1)[0]
        out = []
        for b in data:
            ch = chr(b)
            if ch in '"\\':
                out.append("\\" + ch)
            elif ch in "\n\t":
                out.append("\\n" if ch == "\n" else "\\t")
            elif 32 <= b < 127:
                out.append(ch)
            else:
                out.append(f"\\{b:03o}")
        return '"' + "".join(out) + '"'

    def fpclass(self, x: str, mask: int, ty: Ty) -> str:
        """``llvm.is.fpclass(x, mask)`` as comparisons: the mask's bits are, from bit 0,
        signaling and quiet NaN, then -inf, -normal, -subnormal, -0, +0, +subnormal,
        +normal, +inf (LLVM LangRef); each sign pair that is asked for whole is one test."""
        if mask & 3 not in (0, 3):
            raise SourceEmitError(f"llvm.is.fpclass with mask {mask} tells signaling from quiet "
                                  f"NaNs, which {self.d.name} source cannot")
        fabs = f"{self.d.builtin('fabs')}({x})"
        tiny = "2.2250738585072014e-308" if ty.bits == 64 else "1.17549435e-38f"
        finite = f"(({x} - {x}) == ({x} - {x}))"  # false for inf and NaN
        classes = {  # (negative bit, positive bit): the class without its sign
            (2, 9): f"(({x} == {x}) && !{finite})",
            (3, 8): f"({finite} && {fabs} >= {tiny})",
            (4, 7): f"({x} != 0 && {fabs} < {tiny})",
            (5, 6): f"({x} == 0)",
        }
        sign = f"{self.d.builtin('signbit')}({x})"
        terms = [f"({x} != {x})"] if mask & 3 else []
        for (neg, pos), test in classes.items():
            n, p = mask >> neg & 1, mask >> pos & 1
            if n and p:
                terms.append(test)
            elif n or p:
                terms.append(f"({test} && {'' if n else '!'}{sign})")
        return f"({' || '.join(terms)})" if terms else "false"

    def llvm_intrinsic(self, i: Inst, args: list) -> str:
        base = i.callee.split(".")[1]
        B = self.d.builtin
        ty = i.ty
        if base in ("smax", "smin", "umax", "umin"):
            fn = B(base[1:])
            if base[0] == "s":
                return masked(f"{fn}({signed_value(args[0], ty)}, {signed_value(args[1], ty)})", ty)
            return f"(({ctype(ty)}){fn}(({ctype(ty)}){args[0]}, ({ctype(ty)}){args[1]}))"
        if base == "abs":
            return masked(f"{B('abs')}({signed_value(args[0], ty)})", ty)
        if odd_width(ty) or any(odd_width(a.ty) for a in i.args):
            if base in ("expect", "freeze", "ssa"):
                return args[0]
            if base == "ctpop":  # the bits above the width are clear
                return f"(({ctype(ty)}){B('popcount')}({args[0]}))"
            raise SourceEmitError(f"the LLVM intrinsic {i.callee} on an odd-width integer "
                                  f"cannot be written as {self.d.name} source yet")
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
            fn = B('clz' if base == 'ctlz' else 'ctz')
            if "{" in fn:  # a template (OpenCL C 1.2 has no ctz): {0} operand, {t} its type
                return f"(({ctype(ty)}){fn.format(args[0], t=ctype(ty))})"
            return f"(({ctype(ty)}){fn}({args[0]}))"
        if base in ("expect", "freeze", "ssa"):
            return args[0]
        if i.callee.startswith("llvm.is.fpclass.") and i.args[1].kind == "int":
            return self.fpclass(args[0], int(i.args[1].value), i.args[0].ty)
        if base == "bitreverse" and ty.bits == 1:
            return args[0]
        if base in ("usub", "uadd", "ssub", "sadd") and i.callee.split(".")[2] == "sat" \
                and ty.bits in (8, 16, 32, 64):
            return self.saturating(base, args, ty)
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

    def overflow(self, i: Inst) -> tuple[str, str]:
        """``llvm.{s,u}{add,sub,mul}.with.overflow.iN`` (Numba checks the product of an
        array's shape with ``smul``): the wrapped result and whether it overflowed, as
        two expressions of the operands (each evaluated where the call is)."""
        base = i.callee.split(".")[1]
        ty = i.ty.fields[0]
        if ty.kind != "int" or ty.bits not in (32, 64):
            raise SourceEmitError(f"the LLVM intrinsic {i.callee} cannot be written as "
                                  f"{self.d.name} source yet")
        a, b = (self.expr(v) for v in i.args)
        u, st, w = ctype(ty), stype(ty), ty.bits
        sym = {"add": "+", "sub": "-", "mul": "*"}[base[1:]]
        r = f"(({u})(({u}){a} {sym} ({u}){b}))"
        if base == "umul":
            over = f"({self.d.builtin('mul_hi')}(({u}){a}, ({u}){b}) != 0)"
        elif base == "smul":  # the high half is not the sign extension of the low one
            over = (f"({self.d.builtin('mul_hi')}(({st}){a}, ({st}){b}) != "
                    f"((({st}){r}) >> {w - 1}))")
        elif base == "uadd":
            over = f"({r} < ({u}){a})"
        elif base == "usub":
            over = f"(({u}){a} < ({u}){b})"
        elif base == "sadd":
            over = f"((({st})((({u}){a} ^ {r}) & (({u}){b} ^ {r}))) < 0)"
        else:
            over = f"((({st})((({u}){a} ^ ({u}){b}) & (({u}){a} ^ {r}))) < 0)"
        return r, over

    def saturating(self, base: str, args: list, ty) -> str:
        """``llvm.{u,s}{add,sub}.sat``: the wrapped result, or the bound it passed."""
        u, st = ctype(ty), stype(ty)
        a, b = args
        w = ty.bits
        if base == "usub":
            return f"(({u}){a} > ({u}){b} ? ({u})(({u}){a} - ({u}){b}) : ({u})0)"
        if base == "uadd":
            return (f"((({u})(({u}){a} + ({u}){b})) < ({u}){a} ? ({u})~({u})0 : "
                    f"({u})(({u}){a} + ({u}){b}))")
        # signed: compute in the unsigned type (no overflow), then detect the sign flip
        r = f"(({u})(({u}){a} {'+' if base == 'sadd' else '-'} ({u}){b}))"
        over = (f"((({st})(({u})(({u}){a} ^ {r}) & ({u})(({u}){b} ^ {r}))) < 0)" if base == "sadd"
                else f"((({st})(({u})(({u}){a} ^ ({u}){b}) & ({u})(({u}){a} ^ {r}))) < 0)")
        bound = f"(({st}){a} < 0 ? ({u})((({u})1) << {w - 1}) : ({u})(((({u})1) << {w - 1}) - 1u))"
        return f"({over} ? {bound} : {r})"


def is_overflow(i: Inst) -> bool:
    """Whether *i* is a call of an LLVM arithmetic-with-overflow intrinsic."""
    return i.op == "call" and i.callee.startswith("llvm.") and ".with.overflow." in i.callee


def locals_in(v: Val):
    """The names of the local values operand *v* reads (through constant expressions)."""
    if v.kind == "local":
        yield v.name
    elif v.kind == "cexpr":
        for a in v.value.args:
            yield from locals_in(a)
