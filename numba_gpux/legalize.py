"""IR rewrites for back ends that mistranslate valid LLVM IR.

Each rewrite takes the optimized module's text and returns it with one construct
written another, equivalent way that the back end translates correctly.  A target
lists the rewrites it needs in its option ``ir_rewrites`` (names from
:data:`REWRITES`); the compiler applies them once, after the optimizer and the
intrinsic replacement (``compiler._stage_optimize``), so no later pass turns
them back.  Where a rewrite works around a fault of LLVM's or of a driver, its
docstring names the fault, the smallest IR that shows it and when the rewrite can
go (docs/pipeline.md, "Back-end, driver and emitter workarounds", lists them all).

The rewrites read the module through the project's one IR lexer (:mod:`irlex`):
a line's tokens know string constants, quoted names, comments and metadata, so
nothing a user wrote (a ``print`` string, a function's name) is read as code or
changed.  They are text-to-text because llvmlite 0.50 can read a module's
instructions but not create or replace one (its binding has no IRBuilder over a
parsed module), and no pass of LLVM's does what they do.  Each keeps every value's
type, and each docstring says why the result still has every definition dominating
its uses; LLVM's verifier checks the result of every compile
(``compiler._rewrite_text``) and tests/pipeline/test_legalize_verify.py runs each
rewrite alone on the conformance kernels' IR.
"""

from __future__ import annotations

from . import irlex
from .irlex import code, instruction, is_label, line_tokens, match_paren, name, spell_local

__all__ = ["REWRITES", "apply_rewrites", "sitofp_i1", "byte_allocas", "rematerialize_index_math",
           "split_aggregate_phis"]


# --------------------------------------------------------------------------- shared

def _rewrite_bodies(text: str, rewrite) -> str:
    """*text* with the lines of each function body (between its ``define ... {`` line
    and its ``}``) replaced by ``rewrite(lines)``."""
    lines = irlex.lines(text)
    for f in reversed(irlex.functions(lines)):
        lines[f.start:f.stop] = rewrite(lines[f.start:f.stop])
    return "\n".join(lines)


def _type_end(c: list, i: int) -> int:
    """The position in the code tokens *c* just past the type that starts at *i*
    (``i64``, ``ptr addrspace(1)``, ``[4 x float]``, ``<2 x i32>``, ``{ i32, ptr }``,
    ``<{ i8 }>``, ``%T``), or -1."""
    if i >= len(c):
        return -1
    t = c[i]
    if t in ("[", "{", "<"):
        try:
            return match_paren(c, i) + 1
        except ValueError:
            return -1
    if t == "ptr" and i + 4 < len(c) and c[i + 1] == "addrspace" and c[i + 2] == "(":
        return i + 5
    k = irlex.kind(t)
    return i + 1 if k in (irlex.WORD, irlex.LOCAL) else -1


def _split_commas(c: list, i: int, j: int) -> list[list[str]]:
    """The code tokens ``c[i:j]`` split at their commas outside brackets."""
    parts, depth, start = [], 0, i
    for k in range(i, j):
        t = c[k]
        if t in "([{<" and len(t) == 1:
            depth += 1
        elif t in ")]}>" and len(t) == 1:
            depth -= 1
        elif t == "," and depth == 0:
            parts.append(c[start:k])
            start = k + 1
    parts.append(c[start:j])
    return parts


def _spell(c) -> str:
    """IR text for the code tokens *c* (LLVM's lexer takes any spacing between tokens;
    this one is LLVM's own where it matters to a reader)."""
    out = []
    prev = ""
    for t in c:
        if out and not (t in (",", ")") or (t == "(" and irlex.kind(prev) is not irlex.PUNCT)
                        or prev == "("):
            out.append(" ")
        out.append(t)
        prev = t
    return "".join(out)


class _Names:
    """Fresh local names for one function body (none of its own names is reused)."""

    def __init__(self, bodies_tokens):
        self.taken = {name(t) for toks in bodies_tokens for t in toks if t[0] == "%" and len(t) > 1}

    def fresh(self, want: str) -> str:
        n, k = want, 0
        while n in self.taken:
            k += 1
            n = f"{want}.{k}"
        self.taken.add(n)
        return spell_local(n)


# --------------------------------------------------------------------------- sitofp_i1

_FP_TYPES = ("half", "float", "double")


def sitofp_i1(text: str) -> str:
    """``sitofp i1 %c to double`` as ``select i1 %c, double -1.0, double 0.0``.

    LLVM 22's SPIR-V back end translates ``sitofp i1`` into ``OpSelect %c 1 0``
    followed by ``OpConvertSToF``, which gives +1.0 for true where LLVM's
    semantics (true is the signed 1-bit value -1) give -1.0.  InstCombine makes
    such conversions from Numba's ``(0 - np.int64(a > b)) * x``.  Smallest IR::

        define spir_kernel void @k(ptr addrspace(1) %out, i32 %x) {
          %c = icmp sgt i32 %x, 0
          %f = sitofp i1 %c to double      ; SPIR-V: OpSelect %c 1 0; OpConvertSToF
          store double %f, ptr addrspace(1) %out
          ret void
        }

    Can go when LLVM's SPIR-V back end selects ``sitofp i1`` as a select of -1 and 0
    (still wrong in LLVM 22; the test pipeline/test_legalize.py's SPIR-V check shows it).

    Types and dominance: the select defines the same name, of the same type, at the
    same place, and reads only the conversion's operand; -1.0 and 0.0 are exact in
    every floating-point type.
    """
    if "sitofp i1 " not in text:  # (no line to look at: most modules)
        return text
    lines = irlex.lines(text)
    for n, ln in enumerate(lines):
        if "sitofp" not in ln:
            continue
        toks = line_tokens(ln)
        op, at = instruction(toks)
        if op != "sitofp" or irlex.definition(toks) is None:
            continue
        ci = [k for k in range(at, len(toks)) if irlex.is_code(toks[k])]
        # sitofp i1 V to T  -- a scalar bool only (a vector keeps its conversion)
        if len(ci) < 5 or toks[ci[1]] != "i1" or toks[ci[3]] != "to" or toks[ci[4]] not in _FP_TYPES:
            continue
        v, ty = toks[ci[2]], toks[ci[4]]
        new = f"select i1 {v}, {ty} -1.000000e+00, {ty} 0.000000e+00"
        lines[n] = irlex.join(irlex.replace(toks, at, ci[4] + 1, new))
    return "\n".join(lines)


# --------------------------------------------------------------------------- byte_allocas

_SCALAR_BYTES = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "half": 2, "float": 4, "double": 8}


def _array_bytes(c: list, i: int, j: int):
    """(size, element size) of the array type ``c[i:j]`` (nested arrays of one scalar
    type), else None."""
    size = 1
    while c[i] == "[":
        if j - i < 5 or c[j - 1] != "]" or c[i + 2] != "x" or not c[i + 1].isdigit():
            return None
        size *= int(c[i + 1])
        i, j = i + 3, j - 1
    if j != i + 1 or c[i] not in _SCALAR_BYTES:
        return None
    return size * _SCALAR_BYTES[c[i]], _SCALAR_BYTES[c[i]]


def byte_allocas(text: str) -> str:
    """Private arrays allocated as bytes: ``alloca [8 x double], align 8`` as
    ``alloca [64 x i8], align 8``.

    The Intel OpenCL CPU driver (2026.2) miscompiles a typed private array that
    the optimizer reaches both through byte offsets and through typed indices,
    once its vectorizer packs 16 work-items: a store at a 0/1 index computed from
    a shift or a compare lands in another work-item's copy.  Seen with a
    ``local.array(8, float64)`` filled in a loop (unrolled into ``getelementptr
    i8, ptr %a, i64 8`` ... ``56``), then ``arr[(1 >> (c & 63)) & 7] = g`` and a
    read of ``arr[c & 7]``; the IR reads, in essence::

        %a = alloca [8 x double], align 8
        ; store -i at %a + 0, 8, ..., 56 (getelementptr i8)
        %k = lshr i64 1, %c63                   ; 0 or 1
        %p = getelementptr double, ptr %a, i64 %k
        store double %g, ptr %p
        %q = getelementptr double, ptr %a, i64 %c7
        %r = load double, ptr %q                ; work-items 0, 16, 48 of 64 read
                                                ; work-item i+14's %g

    The SPIR-V is valid and means what the IR means (``spirv-val``; the OpenCL C
    route of the same driver is right); the same array declared as bytes, with
    the same accesses, is right.  Can go when the driver's vectorizer is fixed
    (test_codegen_regressions.py's private-array kernels run without the rewrite).

    Types and dominance: an array's type carries no meaning in LLVM's opaque-pointer
    IR beyond its size and alignment, both kept; the alloca keeps its name, its
    result type (``ptr``), its place and its operands.
    """
    if "alloca [" not in text:
        return text
    lines = irlex.lines(text)
    for n, ln in enumerate(lines):
        if "alloca [" not in ln:
            continue
        toks = line_tokens(ln)
        op, at = instruction(toks)
        if op != "alloca":
            continue
        ci = [k for k in range(at + 1, len(toks)) if irlex.is_code(toks[k])]
        c = [toks[k] for k in ci]
        s = 1 if c and c[0] == "inalloca" else 0
        if s >= len(c) or c[s] != "[":
            continue
        e = _type_end(c, s)
        found = _array_bytes(c, s, e) if e > 0 else None
        if found is None:
            continue
        size, natural = found
        new = f"[{size} x i8]"
        if "align" not in c[e:]:
            # the alignment the element type gave, made explicit (after a count operand)
            rest = e + 3 if e + 2 < len(c) and c[e] == "," and c[e + 1].startswith("i") else e
            tail_at = ci[rest - 1] + 1
            toks = irlex.replace(toks, tail_at, tail_at, f", align {natural}")
        lines[n] = irlex.join(irlex.replace(toks, ci[s], ci[e - 1] + 1, new))
    return "\n".join(lines)


# --------------------------------------------------------------------------- rematerialization

_PURE_OPS = frozenset(("getelementptr", "add", "sub", "mul", "shl", "lshr", "ashr", "and", "or",
                       "xor", "zext", "sext", "trunc", "addrspacecast"))


def _index_query(c: list, op_at: int) -> bool:
    """Whether the code tokens *c* of an instruction, its opcode at *op_at*, are a
    work-item index query: ``[tail ]call noundef range(i64 A, B) i64 @f(i32 D)``,
    optionally with an attribute group, A and B non-negative and D a dimension: a call
    our pipeline annotated with its result's range (irtext.index_ranges; the
    annotation stays on the target's call after inlining)."""
    if c[op_at] != "call" or (op_at > 0 and c[op_at - 1] not in ("=", "tail")):
        return False
    r = c[op_at + 1:]
    # noundef range ( i64 A , B ) i64 @f ( i32 D ) [#N]
    if len(r) not in (14, 15) or r[:4] != ["noundef", "range", "(", "i64"]:
        return False
    if not (r[4].isdigit() and r[5] == "," and r[6].isdigit() and r[7] == ")" and r[8] == "i64"):
        return False
    if irlex.kind(r[9]) is not irlex.GLOBAL or r[10:12] != ["(", "i32"] or r[13] != ")":
        return False
    if not (len(r[12]) == 1 and r[12].isdigit()):
        return False
    return len(r) == 14 or irlex.kind(r[14]) is irlex.ATTR and r[14][1:].isdigit()


def _pure(c: list, op_at: int) -> bool:
    """Whether the instruction whose code tokens are *c* (opcode at *op_at*) computes its
    value from its operands alone, so that computing it again anywhere they are
    available gives the same value."""
    return c[op_at] in _PURE_OPS or _index_query(c, op_at)


def _is_boundary(c: list) -> bool:
    """A call that defines no value, of a function that is not an LLVM intrinsic: a
    barrier cuts there (code tokens *c*)."""
    if not c or (c[0] != "call" and not (c[0] == "tail" and c[1:2] == ["call"])):
        return False
    at = irlex.callee(c)
    return at is not None and c[at][0] == "@" and not name(c[at]).startswith("llvm.")


def rematerialize_index_math(text: str) -> str:
    """Address and index arithmetic built from work-item indices, kernel arguments and
    constants is computed again in each block that uses it, instead of once in a block
    before (where LLVM's loop-invariant code motion put it).

    For drivers that run a work-group on a CPU core: they cut a kernel at its barriers
    into loops over the work-items, and a value live across a barrier is stored per
    work-item and read back, losing what their vectorizer knew about it.  The Intel
    OpenCL CPU driver (2026.2) turned the tiled matrix product's ``b[t * T + ty, col]``,
    whose address LICM had hoisted above the barrier loop, into a gather
    (``vgatherqps``) where the same load written in OpenCL C is one contiguous vector
    load.  Recomputing costs a few integer operations; the driver's vectorizer then
    sees addresses derived from the work-item index in the block that uses them.  Can
    go when that driver keeps a uniform-stride address across its barrier loops
    (benchmarks/bench_matmul.py's tiled kernel shows the gather).

    Types and dominance: a copy is the same instruction as the value it copies (same
    opcode, types and flags), under a fresh name.  Only values whose operands are,
    recursively, such values, function arguments or constants are copied; the leaves
    (arguments, constants, globals) are available everywhere, so a copy placed after
    the copies of its operands is dominated by all it reads.  The copies of a region
    (a block, or the part of one after a barrier call) go at its start, after its
    phis, in post-order of their operands (the text's order is not one of
    dominance: a block may be written before the block that dominates it), and only
    the region's own non-phi instructions are changed to read them, which the copies
    precede.  Phi operands are left alone: they are used at the end of the incoming
    block, not in the phi's region.  An index query is a call of a function of the
    work-item alone (its range annotation marks ours), so calling it again gives the
    same value.
    """
    types = _named_types(text)
    return _rewrite_bodies(text, lambda body: _remat_function(body, types))


def _named_types(text: str) -> set:
    """The names of the module's named types (``%T = type ...``): a ``%T`` among an
    instruction's tokens may be one, not a value."""
    out = set()
    for ln in irlex.lines(text):
        if ln.startswith("%") and " = type " in ln:
            c = code(line_tokens(ln))
            if len(c) > 2 and c[1] == "=" and c[2] == "type":
                out.add(c[0])
    return out


def _remat_function(body: list[str], types: set) -> list[str]:
    """One function's body with its remat-able values recomputed per region (see
    rematerialize_index_math)."""
    toks = [line_tokens(ln) for ln in body]
    pure: dict[str, tuple] = {}     # value -> (line index, position of its opcode)
    operands: dict[str, list] = {}  # pure value -> the local names it reads
    region_of: dict[str, int] = {}  # value -> its region
    regions: list[list[int]] = [[]]
    labelled = [False]
    for n, t in enumerate(toks):
        c = code(t)
        if len(c) >= 2 and c[1] == ":" and is_label(t):
            regions.append([n])
            labelled.append(True)
            continue
        regions[-1].append(n)
        if len(c) > 2 and c[1] == "=" and c[0][0] == "%":
            v = c[0]
            region_of[v] = len(regions) - 1
            op_at = 3 if c[2] in ("tail", "notail", "musttail") else 2
            if op_at < len(c) and _pure(c, op_at):
                pure[v] = (n, op_at)
                operands[v] = [u for u in c[op_at:] if u[0] == "%" and len(u) > 1
                               and u not in types]
        elif _is_boundary(c):
            regions.append([])
            labelled.append(False)
    if not pure:
        return body
    ok: dict[str, bool] = {}

    def remat(v: str) -> bool:
        """Whether *v*'s whole operand tree is pure (arguments and constants are leaves)."""
        if v in ok:
            return ok[v]
        ok[v] = False  # (a cycle runs through a phi, which is not pure)
        if v not in pure:
            return False
        ok[v] = all(remat(u) or u not in region_of for u in operands[v])
        return ok[v]

    names = _Names(toks)
    out: list[str] = []
    for r, reg in enumerate(regions):
        head = 0
        if labelled[r]:
            head = 1
            while head < len(reg) and instruction(toks[reg[head]])[0] == "phi":
                head += 1
        seen: set = set()
        needed: list = []   # post-order: each value after the values it reads

        def need(v):
            if v in seen or region_of.get(v) == r:
                return
            seen.add(v)
            for u in operands[v]:
                if u in pure and ok.get(u):
                    need(u)
            needed.append(v)

        for n in reg[head:]:
            c = code(toks[n])
            start = 2 if len(c) > 2 and c[1] == "=" else 0
            for u in c[start:]:
                if u[0] == "%" and u in pure and region_of.get(u) != r and remat(u):
                    need(u)
        if not needed:
            out.extend(body[n] for n in reg)
            continue
        rename = {v: names.fresh(f"gpux.rm{r}.{name(v)}") for v in needed}

        def sub(t: list) -> str:
            return "".join(rename.get(x, x) for x in t)

        clones = []
        for v in needed:
            n, op_at = pure[v]
            t = toks[n]
            at = irlex.code_index(t)[2]  # (the instruction after "=", "tail" and all)
            clones.append(f"  {rename[v]} = {sub(t[at:])}")
        out.extend(body[n] for n in reg[:head])
        out.extend(clones)
        out.extend(sub(toks[n]) for n in reg[head:])
    return out


# --------------------------------------------------------------------------- aggregate phis

_AGG_CONSTANTS = ("undef", "poison", "zeroinitializer")


def split_aggregate_phis(text: str) -> str:
    """A ``phi`` of a struct or array of scalars as one ``phi`` per element, with the
    aggregate rebuilt by ``insertvalue`` after the block's phis.

    LLVM 22's SPIR-V back end cannot select an aggregate-typed ``phi``: it aborts the
    process (an assertion in ``SPIRVEmitIntrinsics``, or ``ArrayRef::drop_front`` on
    the machine operands).  SimplifyCFG makes such phis from a loop over a tuple of
    small structs (numba.cuda's vector types) indexed by the loop counter, where each
    case of the index's ``switch`` yields a constant struct.  Smallest IR::

        define spir_kernel void @k(ptr addrspace(1) %p, i1 %c, float %a) {
        entry:
          %x = insertvalue { float, float } undef, float %a, 0
          br i1 %c, label %other, label %end
        other:
          br label %end
        end:
          %v = phi { float, float } [ %x, %entry ], [ { float 1.0, float 2.0 }, %other ]
          %e = extractvalue { float, float } %v, 1
          store float %e, ptr addrspace(1) %p
          ret void
        }

    The C-family emitter (cemit), which writes no aggregate values, needs it too.  The
    SPIR-V route's need can go when LLVM's SPIR-V back end selects aggregate phis
    (test_legalize.py emits the smallest IR through it).

    An incoming value that is not a constant is taken apart at the end of its block
    (its elements read through the ``insertvalue`` chain that built it where there is
    one, else by ``extractvalue``), and an ``extractvalue`` of the split phi becomes
    the element's phi, so that the aggregate is usually left unused.  A phi of nested
    aggregates, with fast-math flags, or an unnamed (numbered) one, is left as it is
    (a numbered value cannot be redefined later in the block: numbers are in order).

    Types: each element phi has the element's type, and so has each incoming element
    (an ``extractvalue`` of that index, the operand an ``insertvalue`` of that index
    wrote, or the constant's element); the rebuilt aggregate has the phi's type and
    name.  Dominance: an incoming value dominates the end of its block, and so do the
    operands of the instructions that built it; the ``extractvalue`` goes just before
    that block's terminator.  The element phis stand where the phi stood, and the
    rebuilding ``insertvalue`` chain right after the block's last phi, so it is in
    the phi's block before any of its non-phi uses (a phi use is at the end of a
    block the phi's block dominates).  An ``extractvalue`` of the phi was dominated
    by the phi; the element phi that replaces it is at the phi's place.
    """
    if " = phi {" not in text and " = phi [" not in text:
        return text
    return _rewrite_bodies(text, _split_phis_in)


def _element_types(c: list, i: int, j: int):
    """The element types (code-token lists) of the struct or array type ``c[i:j]``, if
    all are scalars or vectors of scalars, else None."""
    if c[i] == "{" and c[j - 1] == "}":
        elems = _split_commas(c, i + 1, j - 1)
    elif c[i] == "[" and c[j - 1] == "]" and j - i >= 5 and c[i + 2] == "x" and c[i + 1].isdigit():
        elems = [c[i + 3:j - 1]] * int(c[i + 1])
    else:
        return None
    for e in elems:
        if not e or _type_end(e, 0) != len(e) or e[0] in ("{", "[") or e[:2] == ["<", "{"]:
            return None
        if e[0] == "<" and (len(e) != 5 or irlex.kind(e[3]) is not irlex.WORD):
            return None
    return elems or None


def _constant_elements(v: list, elems: list):
    """The elements (code-token lists, without their types) of the constant aggregate
    *v*, or None for a value that is not such a constant."""
    if len(v) == 1 and v[0] in _AGG_CONSTANTS:
        return [[v[0]] for _ in elems]
    if not v or v[0] not in ("{", "[") or match_paren(v, 0) != len(v) - 1:
        return None
    parts = _split_commas(v, 1, len(v) - 1)
    if len(parts) != len(elems):
        return None
    out = []
    for p, t in zip(parts, elems):
        if p[:len(t)] != t or len(p) == len(t):
            return None
        out.append(p[len(t):])
    return out


def _parse_phi(c: list):
    """(type tokens, [(value tokens, block token)], element types) of the aggregate phi
    whose code tokens are *c*, else None."""
    if len(c) < 5 or c[2] != "phi" or c[0][1:2].isdigit():
        return None
    e = _type_end(c, 3)
    if e < 0:
        return None
    elems = _element_types(c, 3, e)
    if elems is None:
        return None
    incoming, k = [], e
    while k < len(c) and c[k] == "[":
        close = match_paren(c, k)
        pair = _split_commas(c, k + 1, close)
        if len(pair) != 2 or len(pair[1]) != 1 or irlex.kind(pair[1][0]) is not irlex.LOCAL:
            return None
        incoming.append((pair[0], pair[1][0]))
        k = close + 1
        if k < len(c) and c[k] == "," and k + 1 < len(c) and c[k + 1] == "[":
            k += 1
    return (c[3:e], incoming, elems) if incoming else None


def _element_of(value: list, e: int, ty: list, elems: list, defs: dict):
    """Element *e* (code tokens) of the aggregate *value* of type *ty*, read through
    the ``insertvalue`` chain that built it (*defs*: name -> the code tokens from
    ``insertvalue`` on), or None."""
    for _ in range(64):
        if len(value) != 1 or value[0] not in defs:
            break
        d = defs[value[0]]  # insertvalue TY AGG, ETY VAL, IDX
        if d[1:1 + len(ty)] != ty:
            return None
        parts = _split_commas(d, 1 + len(ty), len(d))
        if len(parts) != 3 or len(parts[2]) != 1 or not parts[2][0].isdigit():
            return None
        if int(parts[2][0]) == e:
            et = elems[e]
            return parts[1][len(et):] if parts[1][:len(et)] == et and len(parts[1]) > len(et) \
                else None
        value = parts[0]
    consts = _constant_elements(value, elems)
    return consts[e] if consts else None


def _split_phis_in(body: list[str]) -> list[str]:
    """One function body with its aggregate phis split (see split_aggregate_phis)."""
    if not any(" = phi {" in ln or " = phi [" in ln for ln in body):
        return body
    toks = [line_tokens(ln) for ln in body]
    cs = [code(t) for t in toks]
    defs = {c[0]: c[2:] for c in cs if len(c) > 3 and c[1] == "=" and c[2] == "insertvalue"}
    # blocks: name -> (first line, end line); the entry block may have no label
    starts = [(0, None)]
    for n, c in enumerate(cs):
        if len(c) >= 2 and c[1] == ":" and is_label(toks[n]):
            starts.append((n, irlex.unquote(c[0])))
    blocks: dict = {}
    for k, (n, bname) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(body)
        blocks[bname] = (n, end)
    names = _Names(toks)
    before: dict[int, list[str]] = {}    # line -> lines to insert before it
    after: dict[int, list[str]] = {}     # line -> lines to insert after it
    replaced: dict[int, list[str]] = {}  # line -> its replacement
    split: dict[str, list[str]] = {}     # phi -> its element phis
    extracted: dict = {}
    for n, c in enumerate(cs):
        if len(c) < 4 or c[2] != "phi" or c[3] not in ("{", "["):
            continue
        phi = _parse_phi(c)
        if phi is None:
            continue
        ty, incoming, elems = phi
        columns: list[list[str]] = [[] for _ in elems]
        ok = True
        for value, block in incoming:
            consts = _constant_elements(value, elems)
            if consts is None:
                bname = name(block)
                span = blocks.get(bname)
                if span is None and bname.isdigit() and len(starts) > 0 and starts[0][1] is None:
                    span = blocks[None]  # the unlabelled entry block, numbered
                if (len(value) != 1 or irlex.kind(value[0]) is not irlex.LOCAL or span is None
                        or span[1] <= span[0]):
                    ok = False
                    break
                key = (value[0], bname)
                if key not in extracted:
                    found = [_element_of(value, e, ty, elems, defs) for e in range(len(elems))]
                    if all(f is not None for f in found):
                        extracted[key] = [_spell(f) for f in found]
                if key not in extracted:
                    term = span[1] - 1
                    while term > span[0] and not cs[term]:
                        term -= 1
                    got = []
                    for e in range(len(elems)):
                        got.append(names.fresh(f"gpux.pe.{name(value[0])}.{e}"))
                        before.setdefault(term, []).append(
                            f"  {got[-1]} = extractvalue {_spell(ty)} {value[0]}, {e}")
                    extracted[key] = got
                consts = extracted[key]
            else:
                consts = [_spell(x) for x in consts]
            for e, x in enumerate(consts):
                columns[e].append(f"[ {x}, {block} ]")
        if not ok:
            continue
        phi_name = name(c[0])
        parts = [names.fresh(f"{phi_name}.gpux.e{e}") for e in range(len(elems))]
        split[c[0]] = parts
        replaced[n] = [f"  {p} = phi {_spell(t)} {', '.join(col)}"
                       for p, t, col in zip(parts, elems, columns)]
        # rebuilt after the block's last phi
        last = n
        while last + 1 < len(body) and len(cs[last + 1]) > 2 and cs[last + 1][2] == "phi":
            last += 1
        prev = "undef"
        for e, (p, t) in enumerate(zip(parts, elems)):
            dst = c[0] if e == len(elems) - 1 else names.fresh(f"{phi_name}.gpux.b{e}")
            after.setdefault(last, []).append(
                f"  {dst} = insertvalue {_spell(ty)} {prev}, {_spell(t)} {p}, {e}")
            prev = dst
    if not replaced:
        return body
    # an extractvalue of a split phi is the element's phi
    rename: dict[str, str] = {}
    for n, c in enumerate(cs):
        if len(c) > 3 and c[1] == "=" and c[2] == "extractvalue":
            e = _type_end(c, 3)
            rest = _split_commas(c, e, len(c)) if e > 0 else []
            if (len(rest) == 2 and len(rest[0]) == 1 and rest[0][0] in split
                    and len(rest[1]) == 1 and rest[1][0].isdigit()
                    and int(rest[1][0]) < len(split[rest[0][0]])):
                rename[c[0]] = split[rest[0][0]][int(rest[1][0])]
                replaced[n] = []
    out: list[str] = []
    for n, ln in enumerate(body):
        out.extend(before.get(n, ()))
        out.extend(replaced.get(n, (ln,)))
        out.extend(after.get(n, ()))
    if rename:
        out = ["".join(rename.get(x, x) for x in line_tokens(ln)) if "%" in ln else ln
               for ln in out]
    return out


#: rewrite name -> function (module text -> module text)
REWRITES = {
    "sitofp_i1": sitofp_i1,
    "byte_allocas": byte_allocas,
    "rematerialize_index_math": rematerialize_index_math,
    "split_aggregate_phis": split_aggregate_phis,
}


def apply_rewrites(text: str, names) -> str:
    """*text* with the rewrites *names* applied, in order."""
    for n in names:
        text = REWRITES[n](text)
    return text
