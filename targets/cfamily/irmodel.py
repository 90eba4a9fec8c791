"""A small read-only model of optimized LLVM IR, read through llvmlite's binding.

The binding exposes functions, blocks, instructions, operands, opcodes and
types; what it does not expose (comparison predicates, flags, the source element
type of a GEP or an alloca, switch case values, constant expressions, a global's
initializer) is read from the instruction's tokens (the project's IR lexer,
:mod:`numba_gpux.irlex`, which knows string constants and quoted names).  Every
unnamed value and block is given a name first, so operands are identified by
name.  (llvmlite 0.50 has no accessors for those parts of an instruction; with
them the tokens would not be needed.)
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from llvmlite import binding as ll
from llvmlite.binding.value import ValueKind as VK

from numba_gpux import irlex
from numba_gpux.errors import InternalCompilerError

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


def parse_type(text: str) -> Ty:
    """Parse an LLVM type from text (``i64``, ``ptr addrspace(3)``, ``[4 x float]``...)."""
    c = irlex.code(irlex.tokens(text))
    ty, k = _type_at(c, 0)
    if k != len(c):
        raise InternalCompilerError("emit-source", f"cannot read the type {text!r}")
    return ty


_FLOATS = {"half": 16, "float": 32, "double": 64}
_OTHER_TYPES = ("void", "label", "metadata", "token")


def _type_at(c: list, i: int):
    """The type that starts at position *i* of the code tokens *c*, and the position
    just past it."""
    t = c[i] if i < len(c) else ""
    if t[:1] == "i" and t[1:].isdigit():
        return Ty("int", bits=int(t[1:])), i + 1
    if t in _FLOATS:
        return Ty("float", bits=_FLOATS[t]), i + 1
    if t == "ptr":
        if c[i + 1:i + 3] == ["addrspace", "("] and i + 4 < len(c) and c[i + 4] == ")":
            return Ty("ptr", addrspace=int(c[i + 3])), i + 5
        return Ty("ptr"), i + 1
    if t in _OTHER_TYPES:
        return Ty(t), i + 1
    if t in ("[", "<") and i + 2 < len(c) and c[i + 1].isdigit() and c[i + 2] == "x":
        elem, k = _type_at(c, i + 3)
        if k >= len(c) or c[k] != ("]" if t == "[" else ">"):
            raise InternalCompilerError("emit-source", f"cannot read the type {_spell(c[i:])!r}")
        return Ty("array" if t == "[" else "vector", elem=elem, count=int(c[i + 1])), k + 1
    packed = t == "<" and c[i + 1:i + 2] == ["{"]
    if packed or t == "{":
        k = i + 2 if packed else i + 1
        fields = []
        while k < len(c) and c[k] != "}":
            f, k = _type_at(c, k)
            fields.append(f)
            if k < len(c) and c[k] == ",":
                k += 1
        k += 1
        if packed:
            k += 1  # the closing ">"
        return Ty("struct", fields=tuple(fields), packed=packed), k
    raise InternalCompilerError("emit-source", f"cannot read the type at {_spell(c[i:i + 8])!r}")


def _spell(c) -> str:
    return " ".join(c)


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
    indices: tuple = ()            # extractvalue / insertvalue; shufflevector's mask
    align: int = 0                 # alloca: its ``align``, 0 if none is written


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

def _float_value(t: str, bits: int) -> float:
    """A floating-point constant from its token (decimal, ``0x`` + a double's bits,
    ``0xH`` + a half's)."""
    if t.startswith("0xH"):
        return float(struct.unpack("<e", int(t[3:], 16).to_bytes(2, "little"))[0])
    if t.startswith("0x"):
        return struct.unpack("<d", int(t[2:], 16).to_bytes(8, "little"))[0]
    return float(t)


def _split_commas(c: list, i: int, j: int) -> list[list[str]]:
    """The code tokens ``c[i:j]`` split at their commas outside brackets."""
    parts, depth, start = [], 0, i
    for k in range(i, j):
        t = c[k]
        if t in _OPENS:
            depth += 1
        elif t in _CLOSES:
            depth -= 1
        elif t == "," and depth == 0:
            parts.append(c[start:k])
            start = k + 1
    if j > start:
        parts.append(c[start:j])
    return parts


_OPENS = frozenset("([{<")
_CLOSES = frozenset(")]}>")
_CEXPR_OPS = ("getelementptr", "addrspacecast", "bitcast", "ptrtoint", "inttoptr")
_GEP_FLAGS = ("inbounds", "nuw", "nusw")


def _skip_gep_flags(c: list, k: int) -> int:
    """The position after the flags of a ``getelementptr`` whose flags start at *k*
    (``inbounds``, ``nuw``, ``nusw``, ``inrange(a, b)``)."""
    while k < len(c):
        if c[k] in _GEP_FLAGS:
            k += 1
        elif c[k] == "inrange" and c[k + 1:k + 2] == ["("]:
            k = irlex.match_paren(c, k + 1) + 1
        else:
            break
    return k


def _typed_const(c: list) -> Val:
    """A constant from the code tokens of ``type value``."""
    ty, k = _type_at(c, 0)
    return _const(ty, c[k:])


def _const(ty: Ty, c: list) -> Val:
    """A constant operand from the code tokens *c* of its value (without its type)."""
    t = c[0] if len(c) == 1 else ""
    if t in ("poison", "undef"):
        return Val("undef", ty)
    if t == "null":
        return Val("null", ty)
    if t == "zeroinitializer":
        return Val("agg", ty, value="zero")
    if t in ("true", "false"):
        return Val("int", ty, value=1 if t == "true" else 0)
    if t and ty.kind == "int":
        return Val("int", ty, value=int(t[3:], 16) if t[:3] in ("u0x", "s0x") else int(t))
    if t and ty.kind == "float":
        return Val("float", ty, value=_float_value(t, ty.bits))
    if t and irlex.kind(t) is irlex.GLOBAL:
        return Val("global", ty, name=irlex.name(t))
    if t and irlex.kind(t) is irlex.STRING and t.startswith("c"):
        return Val("agg", ty, value=[Val("int", ty.elem, value=b) for b in irlex.string_bytes(t)])
    if c[:2] == ["splat", "("] and c[-1] == ")":  # a vector of one value: splat (i32 1)
        return Val("agg", ty, value=[_typed_const(c[2:-1])] * ty.count)
    if c and c[0] in ("[", "{", "<"):
        packed = c[0] == "<" and c[1:2] == ["{"]
        inner = (2, len(c) - 2) if packed else (1, len(c) - 1)
        return Val("agg", ty, value=[_typed_const(p) for p in _split_commas(c, *inner)])
    if c and c[0] in _CEXPR_OPS:
        k = _skip_gep_flags(c, 1) if c[0] == "getelementptr" else 1
        if k < len(c) and c[k] == "(" and irlex.match_paren(c, k) == len(c) - 1:
            parts = _split_commas(c, k + 1, len(c) - 1)
            if c[0] == "getelementptr":
                src = parse_type(" ".join(parts[0]))
                return Val("cexpr", ty, value=CExpr(c[0], [_typed_const(p) for p in parts[1:]],
                                                    src, "inbounds" in c[1:k]))
            body = parts[0]
            to = len(body) - 1 - body[::-1].index("to")  # value "to" type
            return Val("cexpr", ty, value=CExpr(c[0], [_typed_const(body[:to])]))
    raise InternalCompilerError("emit-source", f"cannot read the constant {ty} {_spell(c)}")


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
    c = irlex.code(irlex.tokens(str(v)))  # "type value"
    _, k = _type_at(c, 0)
    return _const(ty, c[k:])


_PREDICATES = frozenset(("eq", "ne", "ugt", "uge", "ult", "ule", "sgt", "sge", "slt", "sle",
                         "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "une", "uno",
                         "true", "false"))
#: the words after an opcode that the emitter reads (``atomic`` and ``volatile`` of a
#: load; the rest are LLVM's arithmetic and fast-math flags)
_FLAG_WORDS = frozenset(("nuw", "nsw", "exact", "disjoint", "inbounds", "nnan", "ninf", "nsz",
                         "arcp", "contract", "afn", "reassoc", "fast", "nneg", "samesign",
                         "atomic", "volatile"))


def _inst_tokens(ins, op: str):
    """The code tokens of instruction *ins* (all its lines: a ``switch`` spans several)
    and the position of its opcode *op* among them."""
    c = irlex.code(irlex.tokens(str(ins)))
    k = 2 if len(c) > 2 and c[1] == "=" and irlex.kind(c[0]) is irlex.LOCAL else 0
    while k < len(c) and c[k] in ("tail", "musttail", "notail"):
        k += 1
    if k >= len(c) or c[k] != op:
        raise InternalCompilerError("emit-source", f"cannot read the instruction {str(ins).strip()}")
    return c, k


def _align(c: list, k: int) -> int:
    """The ``align N`` among the top-level operands of the code tokens *c* after *k*."""
    for part in _split_commas(c, k, len(c)):
        if len(part) == 2 and part[0] == "align" and part[1].isdigit():
            return int(part[1])
    return 0


def _read_inst(ins) -> Inst:
    op = ins.opcode
    text = str(ins).strip().split("\n")[0]
    ty = parse_type(str(ins.type))
    ops = list(ins.operands)
    it = Inst(op=op, name=ins.name if ty.kind != "void" else "", ty=ty, args=[], text=text)
    c, at = _inst_tokens(ins, op)
    k = at + 1
    flags = []
    while k < len(c) and irlex.kind(c[k]) is irlex.WORD and (c[k] in _FLAG_WORDS
                                                             or c[k] in _PREDICATES):
        if c[k] in _FLAG_WORDS:
            flags.append(c[k])
        elif op in ("icmp", "fcmp"):
            it.pred = c[k]
            break
        k += 1
    it.flags = tuple(flags)
    if op in ("icmp", "fcmp") and not it.pred:
        raise InternalCompilerError("emit-source", f"cannot read the predicate of {text}")
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
            # LLVM 22 keeps case values out of the operand list: read them from the
            # instruction's tokens ([ iN V, label %dest ... ])
            lb = c.index("[", at)
            rb = irlex.match_paren(c, lb)
            for m in range(lb + 1, rb - 3, 5):
                v, dest = c[m + 1], c[m + 4]
                it.cases.append((1 if v == "true" else 0 if v == "false" else int(v),
                                 irlex.name(dest)))
            return it
        for m in range(2, len(ops), 2):
            cv = _operand(ops[m])
            it.cases.append((cv.value, ops[m + 1].name))
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
        it.src_ty, _ = _type_at(c, _skip_gep_flags(c, at + 1))
    elif op == "alloca":
        k = at + 1 + (c[at + 1:at + 2] == ["inalloca"])
        it.src_ty, _ = _type_at(c, k)
        it.align = _align(c, k)
    elif op in ("extractvalue", "insertvalue"):
        nops = 1 if op == "extractvalue" else 2
        parts = _split_commas(c, at + 1, len(c))
        it.indices = tuple(int(p[0]) for p in parts[nops:] if len(p) == 1 and p[0].isdigit())
    elif op == "shufflevector":  # the mask is no operand: lanes of both inputs, -1 poison
        mask = _typed_const(_split_commas(c, at + 1, len(c))[2])
        it.args = it.args[:2]
        if isinstance(mask.value, list):
            it.indices = tuple(-1 if m.kind == "undef" else m.value for m in mask.value)
        else:  # zeroinitializer, or a mask all poison
            it.indices = (-1 if mask.kind == "undef" else 0,) * ty.count
    elif op == "atomicrmw":
        k = at + 1 + (c[at + 1:at + 2] == ["volatile"])
        it.pred = c[k]
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
        c = irlex.code(irlex.tokens(str(g)))
        # @name = [linkage, attributes] [addrspace(N)] global|constant TYPE [INIT][, align ...]
        kw = next(k for k in range(2, len(c)) if c[k] in ("global", "constant"))
        asp = 0
        for k in range(2, kw):
            if c[k:k + 2] == ["addrspace", "("]:
                asp = int(c[k + 2])
        is_const = c[kw] == "constant"
        vty, k = _type_at(c, kw + 1)
        init_toks = _split_commas(c, k, len(c))[0] if k < len(c) and c[k] != "," else []
        external = g.is_declaration
        init = None
        if not external and init_toks and init_toks not in (["undef"], ["poison"]):
            init = _const(vty, init_toks)
        gvars[g.name] = Global(g.name, vty, asp, is_const, init, external)
    return ModuleModel(funcs, gvars)


def c_name(name: str) -> str:
    """A C identifier for an IR name."""
    s = "".join(ch if ch in _C_IDENT else "_" for ch in name)
    if not s or s[0].isdigit():
        s = "_" + s
    return s


_C_IDENT = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
