"""A small read-only model of optimized LLVM IR, read through llvmlite's binding.

The binding exposes functions, blocks, instructions, operands, opcodes and
types; what it does not expose (comparison predicates, the source element
type of a GEP, switch case values, constant expressions) is read from the
instruction's own text.  Every unnamed value and block is given a name first,
so operands are identified by name.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

from llvmlite import binding as ll
from llvmlite.binding.value import ValueKind as VK

from ..errors import InternalCompilerError

__all__ = ["Ty", "parse_type", "Val", "Inst", "Block", "Func", "Global", "ModuleModel",
           "read_module", "type_size_align"]


# ----------------------------------------------------------------------------- types

@dataclass(frozen=True)
class Ty:
    """An LLVM type: kind is int, float, ptr, array, struct, vector, void, label."""

    kind: str
    bits: int = 0            # int/float width
    addrspace: int = 0       # ptr
    elem: "Ty | None" = None  # array / vector element
    count: int = 0           # array / vector length
    fields: tuple = ()       # struct members
    packed: bool = False

    def __str__(self):
        if self.kind == "int":
            return f"i{self.bits}"
        if self.kind == "float":
            return {16: "half", 32: "float", 64: "double"}[self.bits]
        if self.kind == "ptr":
            return "ptr" if self.addrspace == 0 else f"ptr addrspace({self.addrspace})"
        if self.kind == "array":
            return f"[{self.count} x {self.elem}]"
        if self.kind == "vector":
            return f"<{self.count} x {self.elem}>"
        if self.kind == "struct":
            body = "{ " + ", ".join(map(str, self.fields)) + " }"
            return f"<{body}>" if self.packed else body
        return self.kind


_TY_TOKEN = re.compile(r"\s*(i\d+|half|bfloat|float|double|void|label|ptr(?:\s+addrspace\(\d+\))?|"
                       r"\[|\]|<\{|\}>|<|>|\{|\}|,|x|\d+|%[\w.\"$-]+)")


def parse_type(text: str) -> Ty:
    """Parse an LLVM type from text (``i64``, ``ptr addrspace(3)``, ``[4 x float]``...)."""
    ty, rest = _parse_type(text.strip())
    if rest.strip():
        raise InternalCompilerError("emit-source", f"cannot read the type {text!r}")
    return ty


def _parse_type(s: str):
    s = s.lstrip()
    m = re.match(r"i(\d+)\b", s)
    if m:
        return Ty("int", bits=int(m.group(1))), s[m.end():]
    for name, bits in (("half", 16), ("float", 32), ("double", 64)):
        if re.match(name + r"\b", s):
            return Ty("float", bits=bits), s[len(name):]
    m = re.match(r"ptr(?:\s+addrspace\((\d+)\))?", s)
    if m:
        return Ty("ptr", addrspace=int(m.group(1) or 0)), s[m.end():]
    for name in ("void", "label", "metadata", "token"):
        if s.startswith(name):
            return Ty(name), s[len(name):]
    m = re.match(r"\[\s*(\d+)\s+x\s+", s)
    if m:
        elem, rest = _parse_type(s[m.end():])
        rest = rest.lstrip()
        assert rest.startswith("]"), s
        return Ty("array", elem=elem, count=int(m.group(1))), rest[1:]
    m = re.match(r"<\s*(\d+)\s+x\s+", s)
    if m:
        elem, rest = _parse_type(s[m.end():])
        rest = rest.lstrip()
        assert rest.startswith(">"), s
        return Ty("vector", elem=elem, count=int(m.group(1))), rest[1:]
    packed = s.startswith("<{")
    if packed or s.startswith("{"):
        rest = s[2:] if packed else s[1:]
        fields = []
        rest = rest.lstrip()
        while not rest.startswith("}"):
            f, rest = _parse_type(rest)
            fields.append(f)
            rest = rest.lstrip()
            if rest.startswith(","):
                rest = rest[1:].lstrip()
        rest = rest[1:]
        if packed:
            rest = rest.lstrip()[1:]
        return Ty("struct", fields=tuple(fields), packed=packed), rest
    raise InternalCompilerError("emit-source", f"cannot read the type at {s[:60]!r}")


def type_size_align(ty: Ty) -> tuple[int, int]:
    """Byte size and ABI alignment (natural alignment, as in the targets' data layouts)."""
    if ty.kind == "int":
        n = max(1, (ty.bits + 7) // 8)
        n = 1 << (n - 1).bit_length()
        return n, n
    if ty.kind == "float":
        return ty.bits // 8, ty.bits // 8
    if ty.kind == "ptr":
        return 8, 8
    if ty.kind == "array":
        s, a = type_size_align(ty.elem)
        return s * ty.count, a
    if ty.kind == "vector":
        s, _ = type_size_align(ty.elem)
        n = 1 << (max(ty.count, 1) - 1).bit_length()
        return s * n, s * n
    if ty.kind == "struct":
        off, al = 0, 1
        for f in ty.fields:
            s, a = type_size_align(f)
            if ty.packed:
                a = 1
            off = (off + a - 1) // a * a + s
            al = max(al, a)
        return (off + al - 1) // al * al, al
    raise InternalCompilerError("emit-source", f"no size for type {ty}")


def struct_offsets(ty: Ty) -> list[int]:
    offs, off = [], 0
    for f in ty.fields:
        s, a = type_size_align(f)
        if ty.packed:
            a = 1
        off = (off + a - 1) // a * a
        offs.append(off)
        off += s
    return offs


# ----------------------------------------------------------------------------- values

@dataclass
class Val:
    """An operand.  kind: local (instruction result), arg, int, float, null, undef,
    global, func, cexpr (constant expression), agg (constant aggregate), block."""

    kind: str
    ty: Ty
    name: str = ""
    value: object = None          # int / float / list of Val / CExpr
    text: str = ""


@dataclass
class CExpr:
    op: str
    args: list
    src_ty: Ty | None = None      # GEP source element type
    inbounds: bool = False


@dataclass
class Inst:
    op: str
    name: str                      # "" when the result is void
    ty: Ty
    args: list                     # list[Val]
    text: str
    pred: str = ""                 # icmp / fcmp predicate
    src_ty: Ty | None = None       # GEP source element type, alloca / load type
    callee: str = ""
    blocks: list = field(default_factory=list)  # phi incoming blocks, br/switch targets
    cases: list = field(default_factory=list)   # switch: [(int, block)]
    flags: tuple = ()
    indices: tuple = ()            # extractvalue / insertvalue


@dataclass
class Block:
    name: str
    insts: list

    @property
    def term(self) -> Inst:
        return self.insts[-1]

    @property
    def succs(self) -> list[str]:
        t = self.term
        if t.op == "br":
            return list(t.blocks)
        if t.op == "switch":
            out = [t.blocks[0]]
            for _, b in t.cases:
                if b not in out:
                    out.append(b)
            return out
        return []


@dataclass
class Func:
    name: str
    params: list                   # [(name, Ty)]
    ret: Ty
    blocks: list                   # [Block], entry first
    declaration: bool = False

    def block(self, name: str) -> Block:
        return self._by_name[name]

    def index(self):
        self._by_name = {b.name: b for b in self.blocks}


@dataclass
class Global:
    name: str
    ty: Ty                         # value type
    addrspace: int
    constant: bool
    init: Val | None               # None: external / undef
    external: bool = False


@dataclass
class ModuleModel:
    functions: dict
    globals: dict


# ----------------------------------------------------------------------------- reading

_SAFE = re.compile(r"[^A-Za-z0-9_]")


def _parse_float_text(text: str, bits: int) -> float:
    t = text.strip()
    if t.startswith("0xH"):
        import numpy as np

        return float(np.frombuffer(int(t[3:], 16).to_bytes(2, "little"), np.float16)[0])
    if t.startswith("0x"):
        return struct.unpack("<d", int(t[2:], 16).to_bytes(8, "little"))[0]
    return float(t)


def _strip_type_prefix(text: str, ty: Ty) -> str:
    t = text.strip()
    st = str(ty)
    if t.startswith(st):
        return t[len(st):].strip()
    # fall back: drop the leading type token
    _, rest = _parse_type(t)
    return rest.strip()


def _split_top(s: str) -> list[str]:
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _const_from_text(ty: Ty, text: str) -> Val:
    """A constant operand from its text (without the leading type)."""
    t = text.strip()
    if t in ("poison", "undef"):
        return Val("undef", ty)
    if t == "null":
        return Val("null", ty)
    if t == "zeroinitializer":
        return Val("agg", ty, value="zero")
    if t in ("true", "false"):
        return Val("int", ty, value=1 if t == "true" else 0)
    if ty.kind == "int":
        return Val("int", ty, value=int(t))
    if ty.kind == "float":
        return Val("float", ty, value=_parse_float_text(t, ty.bits))
    if t.startswith("@"):
        return Val("global", ty, name=t[1:].strip('"'))
    if t.startswith(("[", "{", "<")) or t.startswith("c\""):
        if t.startswith("c\""):
            raw = t[2:-1]
            # LLVM escapes a backslash as \\ and other bytes as \XX
            data = re.sub(r"\\(\\|[0-9A-Fa-f]{2})",
                          lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1), 16)), raw)
            return Val("agg", ty, value=[Val("int", ty.elem, value=ord(ch)) for ch in data])
        inner = t[1:-1] if not t.startswith("<{") else t[2:-2]
        items = []
        for part in _split_top(inner):
            ety, rest = _parse_type(part)
            items.append(_const_from_text(ety, rest))
        return Val("agg", ty, value=items)
    m = re.match(r"(getelementptr|addrspacecast|bitcast|ptrtoint|inttoptr)\s*(inbounds\s*|nuw\s*|nusw\s*)*\((.*)\)$",
                 t, re.S)
    if m:
        op, body = m.group(1), m.group(3)
        parts = _split_top(body)
        if op == "getelementptr":
            src = parse_type(parts[0])
            args = []
            for p in parts[1:]:
                aty, rest = _parse_type(p)
                args.append(_const_from_text(aty, rest))
            return Val("cexpr", ty, value=CExpr(op, args, src, "inbounds" in t[:40]))
        inner, _, to = body.rpartition(" to ")
        aty, rest = _parse_type(inner)
        return Val("cexpr", ty, value=CExpr(op, [_const_from_text(aty, rest)]))
    raise InternalCompilerError("emit-source", f"cannot read the constant {ty} {t}")


def _operand(v) -> Val:
    kind = v.value_kind
    ty = parse_type(str(v.type))
    if kind in (VK.instruction,):
        return Val("local", ty, name=v.name)
    if kind == VK.argument:
        return Val("arg", ty, name=v.name)
    if kind == VK.basic_block:
        return Val("block", ty, name=v.name)
    if kind == VK.function:
        return Val("func", ty, name=v.name)
    if kind == VK.global_variable:
        return Val("global", ty, name=v.name)
    if kind in (VK.undef_value, VK.poison_value):
        return Val("undef", ty)
    if kind == VK.constant_pointer_null:
        return Val("null", ty)
    if kind == VK.metadata_as_value:
        return Val("meta", ty)
    text = str(v)
    return _const_from_text(ty, _strip_type_prefix(text, ty))


_PRED = re.compile(r"=\s*(?:icmp|fcmp)\s+(?:[a-z]+\s+)*?(eq|ne|ugt|uge|ult|ule|sgt|sge|slt|sle|"
                   r"oeq|ogt|oge|olt|ole|one|ord|ueq|une|uno|true|false)\s")
_FLAG_WORDS = ("nuw", "nsw", "exact", "disjoint", "inbounds", "nnan", "ninf", "nsz", "arcp",
               "contract", "afn", "reassoc", "fast", "nneg", "samesign")


_SWITCH_CASE = re.compile(r'^\s*i\d+ (-?\d+|true|false), label %(?:"([^"]+)"|([-\w.$]+))', re.M)


def _inst_text(ins) -> str:
    return str(ins).strip().split("\n")[0]


def _read_inst(ins) -> Inst:
    op = ins.opcode
    text = _inst_text(ins)
    ty = parse_type(str(ins.type))
    ops = list(ins.operands)
    it = Inst(op=op, name=ins.name if ty.kind != "void" else "", ty=ty, args=[], text=text)
    m = re.match(r"(?:%[^=]+=\s*)?(?:tail |musttail |notail )?" + re.escape(op) + r"\s+((?:\w+\s+)*)", text)
    if m:
        it.flags = tuple(w for w in m.group(1).split() if w in _FLAG_WORDS)
    if op in ("icmp", "fcmp"):
        pm = _PRED.search(text)
        if not pm:
            raise InternalCompilerError("emit-source", f"cannot read the predicate of {text}")
        it.pred = pm.group(1)
    if op == "br":
        if len(ops) == 1:
            it.blocks = [ops[0].name]
        else:
            it.args = [_operand(ops[0])]
            it.blocks = [ops[2].name, ops[1].name]  # LLVM keeps (cond, false, true)
        return it
    if op == "switch":
        it.args = [_operand(ops[0])]
        it.blocks = [ops[1].name]
        if len(ops) > 2 and _operand(ops[2]).kind == "block":
            # LLVM 22 keeps case values out of the operand list: read them from the text
            # (one "i64 2, label %dest" per line)
            for m in _SWITCH_CASE.finditer(str(ins)):
                v = m.group(1)
                it.cases.append((1 if v == "true" else 0 if v == "false" else int(v),
                                 m.group(2) or m.group(3)))
            return it
        for k in range(2, len(ops), 2):
            c = _operand(ops[k])
            it.cases.append((c.value, ops[k + 1].name))
        return it
    if op == "phi":
        it.args = [_operand(o) for o in ops]
        it.blocks = [b.name for b in ins.incoming_blocks]
        return it
    if op == "call":
        callee = ops[-1]
        if callee.value_kind != VK.function:
            raise InternalCompilerError("emit-source", f"indirect calls are not supported: {text}")
        it.callee = callee.name
        it.args = [_operand(o) for o in ops[:-1]]
        return it
    it.args = [_operand(o) for o in ops]
    if op == "getelementptr":
        gm = re.search(r"getelementptr\s+(?:(?:inbounds|nuw|nusw)\s+)*(.*)$", text)
        it.src_ty, _ = _parse_type(gm.group(1))
    elif op == "alloca":
        am = re.search(r"alloca\s+(?:inalloca\s+)?(.*)$", text)
        it.src_ty, _ = _parse_type(am.group(1))
    elif op in ("extractvalue", "insertvalue"):
        nops = 1 if op == "extractvalue" else 2
        parts = _split_top(text.split(op, 1)[1])
        it.indices = tuple(int(p) for p in parts[nops:] if p.strip().isdigit())
    elif op == "atomicrmw":
        am = re.search(r"atomicrmw\s+(?:volatile\s+)?(\w+)\s", text)
        it.pred = am.group(1)
    return it


def read_module(module) -> ModuleModel:
    """Read a parsed llvmlite ``ModuleRef`` (it is copied; the original is not changed)."""
    mod = ll.parse_assembly(str(module))
    funcs: dict[str, Func] = {}
    for f in mod.functions:
        fty = f.global_value_type
        ret = parse_type(str(fty.get_function_return()))
        if f.is_declaration:
            funcs[f.name] = Func(f.name, [], ret, [], declaration=True)
            continue
        counter = 0
        for a in f.arguments:
            if not a.name:
                a.name = f"arg{counter}"
                counter += 1
        for b in f.blocks:
            if not b.name:
                b.name = f"bb{counter}"
                counter += 1
            for ins in b.instructions:
                if not ins.name and str(ins.type) != "void":
                    ins.name = f"v{counter}"
                    counter += 1
        params = [(a.name, parse_type(str(a.type))) for a in f.arguments]
        blocks = []
        for b in f.blocks:
            blocks.append(Block(b.name, [_read_inst(i) for i in b.instructions]))
        fn = Func(f.name, params, ret, blocks)
        fn.index()
        funcs[f.name] = fn
    gvars: dict[str, Global] = {}
    for g in mod.global_variables:
        text = str(g).strip()
        m = re.match(r'@("[^"]*"|[\w.$-]+)\s*=\s*(.*)$', text, re.S)
        rest = m.group(2)
        am = re.search(r"addrspace\((\d+)\)", rest.split("global", 1)[0].split("constant", 1)[0])
        asp = int(am.group(1)) if am else 0
        km = re.search(r"\b(global|constant)\s+(.*)$", rest, re.S)
        is_const = km.group(1) == "constant"
        body = km.group(2)
        vty, init_text = _parse_type(body)
        init_text = init_text.split(", align")[0].split(", section")[0].strip()
        external = g.is_declaration
        init = None
        if not external and init_text and init_text not in ("undef", "poison"):
            init = _const_from_text(vty, init_text)
        gvars[g.name] = Global(g.name, vty, asp, is_const, init, external)
    return ModuleModel(funcs, gvars)


def c_name(name: str) -> str:
    """A C identifier for an IR name."""
    s = _SAFE.sub("_", name)
    if not s or s[0].isdigit():
        s = "_" + s
    return s
