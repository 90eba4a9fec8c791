"""C-family source from optimized, fully inlined LLVM IR: statements, control flow,
functions and the module.

The control-flow tree of :mod:`.structure` is written as ``if``/``while``/``do
{} while (0)`` blocks (no ``goto``); an irreducible CFG falls back to a
``while (1) switch (state)`` machine.  Phis are variables assigned on the
edges into their block.  Expressions come from :mod:`.instructions`, scalar
spelling and constant data from :mod:`.values`.
"""

from __future__ import annotations

from numba_gpux.errors import InternalCompilerError
from numba_gpux.irtext import close_paren
from . import structure as S
from .dialect import Dialect
from .instructions import CONSTANT, GENERIC, GLOBAL, SHARED, FnExprs, is_overflow
from .irmodel import Func, Global, Inst, ModuleModel, c_name, type_size_align
from .values import SourceEmitError, ctype, serialize

__all__ = ["emit_source", "SourceEmitError"]

# (llvm.stacksave/stackrestore: every alloca is an array of its own at function scope,
# so a loop that makes one round after round reuses it, as restoring the stack would)
_DROP_INTRINSICS = ("llvm.lifetime.", "llvm.assume", "llvm.experimental.noalias.scope.decl",
                    "llvm.dbg.", "llvm.invariant.", "llvm.sideeffect", "llvm.donothing",
                    "llvm.stacksave", "llvm.stackrestore")


class _Fn(FnExprs):
    """One function's statements and control flow."""

    # -- statements ------------------------------------------------------------
    def inst_stmt(self, i: Inst, out: list, ind: str):
        if i.op in ("br", "switch", "ret", "unreachable", "phi"):
            return
        if i.op == "alloca":
            return
        if i.op == "store":
            val, ptr = i.args
            if val.ty.kind == "vector":
                out.extend(self.store_lanes(i, ind))
                return
            out.append(f"{ind}{self.deref(ptr, val.ty, val)} = {self.expr(val)};")
            return
        if i.op == "call" and i.callee.startswith(_DROP_INTRINSICS):
            return
        if i.op == "call" and i.callee.startswith(("llvm.memcpy", "llvm.memmove", "llvm.memset")):
            out.extend(self.mem_intrinsic(i, ind))
            return
        if i.op == "fence":
            raise SourceEmitError("LLVM fences are not supported by the source emitter")
        if i.name and i.name in self.inline:
            return
        if is_overflow(i):  # two variables: the value, and whether it overflowed
            value, over = self.overflow(i)
            n = self.cname(i.name)
            self.em.extra_decls.setdefault(self, {})[f"{n}_ov"] = "bool"
            out.append(f"{ind}{n} = {value};")
            out.append(f"{ind}{n}_ov = {over};")
            return
        if i.ty.kind == "void" or not i.name:
            if i.op == "call":
                out.append(f"{ind}{self.call(i)};")
                return
            raise SourceEmitError(f"cannot write `{i.text}`")
        if i.ty.kind == "vector":  # one variable per lane (vectors.py)
            for k in range(i.ty.count):
                out.append(f"{ind}{self.lane_var(i.name, k)} = {self.lane_expr(i, k)};")
            return
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
        pairs = []  # (variable, expression, its type): a phi of a vector, one per lane
        for p in phis:
            k = p.blocks.index(src)
            if p.ty.kind == "vector":
                self.vector_check(p.ty, f"`{p.text}`")
                pairs += [(self.lane_var(p.name, n), self.lane(p.args[k], n), ctype(p.ty.elem))
                          for n in range(p.ty.count)]
            else:
                pairs.append((self.cname(p.name), self.expr(p.args[k]), self.decl_type(p)))
        conflict = False
        assigned = set()
        for d, e, _ in pairs:
            if any(_mentions(e, t) for t in assigned):
                conflict = True
                break
            assigned.add(d)
        if not conflict:
            for d, e, _ in pairs:
                if d != e:
                    out.append(f"{ind}{d} = {e};")
            return
        tmps = []
        for d, e, ty in pairs:
            t = f"{d}_in"
            self.em.extra_decls.setdefault(self, {})[t] = ty
            tmps.append(t)
            out.append(f"{ind}{t} = {e};")
        for (d, _, _), t in zip(pairs, tmps):
            out.append(f"{ind}{d} = {t};")

    def decl_type(self, i: Inst) -> str:
        if i.ty.kind == "ptr":
            return f"{self.ptr_qual(i.name)} uchar*"
        if i.op == "cmpxchg":  # holds the old value; extractvalue 1 compares it
            return ctype(i.args[1].ty)
        if is_overflow(i):  # holds the value; `<name>_ov` whether it overflowed
            return ctype(i.ty.fields[0])
        return ctype(i.ty)

    def cond_of(self, block: str, key) -> str:
        t = self.fn.block(block).term
        if t.op == "br":
            return _bare(self.expr(t.args[0]))
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
                out.append(f"{inner}if ({_bare(self.expr(t.args[0]))}) {{")
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


def _mentions(expr: str, ident: str) -> bool:
    """Whether the C expression *expr* names the identifier *ident* (not as a part of
    a longer identifier)."""
    k = expr.find(ident)
    while k >= 0:
        end = k + len(ident)
        if (k == 0 or not _is_ident_char(expr[k - 1])) and \
                (end == len(expr) or not _is_ident_char(expr[end])):
            return True
        k = expr.find(ident, k + 1)
    return False


def _is_ident_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


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
                serialize(g.init, g.ty, data, 0)
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
            elif ty.kind == "vector":
                raise SourceEmitError(f"the kernel parameter {name} is a vector ({ty}), which "
                                      f"{d.name} kernels cannot take")
            else:
                params.append((cn, ctype(ty), ""))
        pdecls, prologue, preface = d.kernel_params(c_name(fn.name), params, st.implicit)
        decls = []
        for name, i in st.defs.items():
            if name in st.inline:
                if i.op == "alloca":
                    size, align = type_size_align(i.src_ty)
                    if i.args and i.args[0].kind == "int":
                        size *= i.args[0].value
                    elif i.args:
                        raise SourceEmitError("variable-sized stack arrays are not supported")
                    words = max(1, (size + 7) // 8)
                    st.arrays.append(d.private_array.format(
                        name=f"{st.cname(name)}_mem", words=words, bytes=8 * words,
                        align=max(8, align, i.align)))
                continue
            if i.ty.kind == "vector":
                decls += st.lane_decls(i)
                continue
            decls.append(f"{st.decl_type(i)} {st.cname(name)};")
        for t, ty in self.extra_decls.get(st, {}).items():
            decls.append(f"{ty} {t};")
        if st.uses_jump:
            decls.append("uint _gpux_jump = 0;")
        lines = [f"{d.kernel_qualifier} void {c_name(fn.name)}(" + ", ".join(pdecls) + ") {"]
        contract = _may_contract(fn)
        pragma = d.contract_on if contract else d.contract_off
        if pragma:
            lines.append("  " + pragma)
        lines += ["  " + x for x in prologue]
        lines += ["  " + x for x in dict.fromkeys(st.arrays)]
        lines += ["  " + x for x in decls]
        lines += body
        lines.append("}")
        return (preface + "\n\n" if preface else "") + "\n".join(lines)


_FP_ARITH = ("fadd", "fsub", "fmul", "fdiv", "frem", "fneg")


def _may_contract(fn: Func) -> bool:
    """Whether the IR lets floating-point operations of *fn* be fused (``fastmath``
    gives them the ``contract`` or ``fast`` flag); without it, OpenCL C compilers
    still fuse ``a * b + c`` into an fma unless told not to."""
    return any(i.op in _FP_ARITH and ("contract" in i.flags or "fast" in i.flags)
               for b in fn.blocks for i in b.insts)


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
        try:
            funcs.append(em.function(fn))
        except SourceEmitError as e:  # name the kernel (its IR name holds the Python name)
            raise SourceEmitError(f"kernel {name}: {e}") from None
    for name, fn in model.functions.items():
        if not fn.declaration and name not in kernels:
            # every device function must have been inlined (finish_module marks them)
            callers = [k for k in kernels if any(i.op == "call" and i.callee == name
                                                 for b in model.functions[k].blocks for i in b.insts)]
            if callers:
                raise SourceEmitError(f"device function {name} was not inlined; source targets "
                                      f"need every device function inlined into its kernel")
    pre = [dialect.preamble] if dialect.preamble else []
    # the extensions the types of the kernels' values need (the source's text holds
    # the user's strings too: a print("double check") needs no fp64)
    widths = _float_widths(model, kernels)
    for feat, p in dialect.feature_preambles.items():
        if feat == "fp64" and 64 in widths or feat == "fp16" and 16 in widths:
            pre.append(p)
    parts = pre + list(em.helpers) + em.gdecls + funcs
    return "\n\n".join(p.strip("\n") for p in parts if p) + "\n"


def _float_widths(model: ModuleModel, kernels) -> set:
    """The widths of the floating-point types among the values, parameters, allocated
    types and module variables that the *kernels* of *model* use."""
    seen: set = set()
    out: set = set()

    def add(ty):
        if ty is None or ty in seen:
            return
        seen.add(ty)
        if ty.kind == "float":
            out.add(ty.bits)
        add(ty.elem)
        for f in ty.fields:
            add(f)

    for name in kernels:
        fn = model.functions[name]
        for _, ty in fn.params:
            add(ty)
        for b in fn.blocks:
            for i in b.insts:
                add(i.ty)
                add(i.src_ty)
                for a in i.args:
                    add(a.ty)
    for g in model.globals.values():
        add(g.ty)
    return out


def _bare(expr: str) -> str:
    """*expr* without the parentheses around all of it, if it has them: the condition
    of an ``if`` is parenthesized already, and compilers warn of ``if ((a == b))``
    (clang's -Wparentheses-equality, which PoCL reports as it builds the program)."""
    if expr.startswith("(") and close_paren(expr, 0) == len(expr) - 1:
        return expr[1:-1]
    return expr
