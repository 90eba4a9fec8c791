"""IR rewrites for back ends that mistranslate valid LLVM IR.

Each rewrite takes the optimized module's text and returns it with one construct
written another, equivalent way that the back end translates correctly.  A target
lists the rewrites it needs in its option ``ir_rewrites`` (names from
:data:`REWRITES`); the compiler applies them once, after the optimizer and the
intrinsic replacement (``stages._stage_optimize``), so no later pass turns
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
from .irlex import code, instruction, is_label, line_tokens, match_paren, name
from .legalize_bits import bool_vector_bits
from .legalize_fma import fuse_contracted
from .legalize_fneg import fneg_sign_bits
from .legalize_logic import logical_selects
from .legalize_pairs import paired_accesses
from .legalize_sizes import alloca_operands, as_bytes, typed_offsets, zero_length_allocas
from .legalize_stack import static_stack

__all__ = ["REWRITES", "NEEDED", "needed", "apply_rewrites", "sitofp_i1", "byte_allocas", "rematerialize_index_math",
           "split_aggregate_phis", "logical_selects", "static_stack", "bool_vector_bits"]


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
        if out and not (t in (",", ")", "]", ">") or prev in ("(", "[", "<")
                        or (t == "(" and irlex.kind(prev) is not irlex.PUNCT)):
            out.append(" ")
        out.append(t)
        prev = t
    return "".join(out)


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

    Only an array the driver can get wrong becomes bytes: one stored to at an index
    computed at run time, or reached in ways :func:`legalize_sizes.typed_offsets` does
    not follow.  Another keeps its element type, its constant byte offsets written as
    element indices: a ``local.array(16, float32)`` filled at constant indices and read
    at a computed one ran 5-7x slower as bytes than OpenCL C's ``float a[16]``, and
    runs at its speed typed.

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
        found = alloca_operands(ln)
        if found is None:
            continue
        toks, ci, c = found
        s = 1 if c and c[0] == "inalloca" else 0
        if s >= len(c) or c[s] != "[":
            continue
        e = _type_end(c, s)
        found = _array_bytes(c, s, e) if e > 0 else None
        if found is None:
            continue
        size, natural = found
        scalar = next(t for t in c[s:e] if t in _SCALAR_BYTES)
        if typed_offsets(lines, name(toks[irlex.definition(toks)[0]]), scalar, natural):
            continue  # reached through its element type only: left typed
        lines[n] = as_bytes(toks, ci, c, s, e, size, natural)
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

    names = irlex.FreshNames(toks)
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
    """A ``phi`` of a struct or array as one ``phi`` per scalar leaf, with the
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

    A phi of nested aggregates is split down to its scalar leaves, one phi per leaf
    (element paths such as ``5, 1``): Numba lowers ``tuple[i]`` with a run-time ``i``
    as a ``switch`` whose cases meet in a phi of the element type, and a tuple of
    arrays (``arrs[k][:, j]`` over captured host arrays) gives a phi of array structs,
    ``{ ptr, ..., [2 x i64], [2 x i64] }``, on which the back end aborts the same way.
    A leftover ``insertvalue`` or ``extractvalue`` of a nested aggregate aborts it too
    ("Unexpected integer constant pattern"; an ``extractvalue`` of an aggregate that
    an ``extractvalue`` took out, ``MachineOperand::getReg``), so every read of a leaf
    is resolved to a scalar value here.

    The C-family emitter (targets/cfamily), which writes no aggregate values, needs it too.  The
    SPIR-V route's need can go when LLVM's SPIR-V back end selects aggregate phis
    (test_legalize.py and test_backend_survival.py emit the smallest IR through it, in
    a child process for the nested one).

    Each leaf of an incoming value is read through the ``insertvalue`` and
    ``extractvalue`` chains that made the value (a leaf an ``insertvalue`` wrote, a
    leaf of a constant, or the leaf phi of another phi split here, for a value taken
    out of a part of it); a value whose leaves are not all found is taken apart at the
    end of its incoming block, one ``extractvalue`` per leaf from the aggregate its
    chain of ``extractvalue`` instructions started from.  An ``extractvalue`` of a
    leaf of the split phi, directly or through ``extractvalue`` instructions of its
    parts (or ``insertvalue`` instructions that wrote other elements), becomes the
    leaf's phi, so that the aggregate is usually left unused and the compiler's
    removal of unused values takes the rebuilt chain away.  A phi whose type holds a
    packed struct or a named type, one with fast-math flags, an unnamed (numbered)
    one (a numbered value cannot be redefined later in the block: numbers are in
    order), or one with an incoming constant that is not split here (a string
    ``c"..."``), is left as it is.

    Types: each leaf phi has the leaf's type, and so has each incoming leaf (an
    ``extractvalue`` of that path from an aggregate of the type the path is taken in,
    the operand an ``insertvalue`` of that path wrote, checked against the type at
    that path, the constant's element, or another phi's leaf phi of that path and
    type); the rebuilt aggregate has the phi's type and name.  Dominance: an incoming
    value dominates the end of its block, and so do the operands of the instructions
    that built it and the aggregates its ``extractvalue`` chain read (an instruction's
    operands dominate it); the ``extractvalue`` instructions go just before that
    block's terminator.  The leaf phis stand where the phi stood, so each dominates
    whatever the phi dominated, and the rebuilding ``insertvalue`` chain stands right
    after the block's last phi, in the phi's block before any of its non-phi uses (a
    phi use is at the end of a block the phi's block dominates).  An ``extractvalue``
    resolved to a leaf phi reads the phi through its chain of operands, so the phi,
    and with it the leaf phi, dominates it and every use of it.
    """
    if " = phi {" not in text and " = phi [" not in text:
        return text
    return _rewrite_bodies(text, _split_phis_in)


def _element_types(ty: list):
    """The element types (code-token lists) of the struct or array type *ty* (code
    tokens): scalars, vectors of scalars, or structs and arrays themselves; None for
    any other type, or an element type that is a packed struct, a named type or
    something else."""
    if not ty:
        return None
    j = len(ty)
    if ty[0] == "{" and ty[-1] == "}":
        elems = _split_commas(ty, 1, j - 1)
    elif ty[0] == "[" and ty[-1] == "]" and j >= 5 and ty[2] == "x" and ty[1].isdigit():
        elems = [ty[3:j - 1]] * int(ty[1])
    else:
        return None
    for e in elems:
        if not e or _type_end(e, 0) != len(e) or e[:2] == ["<", "{"]:
            return None
        if e[0] == "<" and (len(e) != 5 or irlex.kind(e[3]) is not irlex.WORD):
            return None
        if irlex.kind(e[0]) is irlex.LOCAL:  # a named (struct) type
            return None
    return elems or None


def _leaves(ty: list):
    """[(path, type tokens)] of the scalar and vector leaves of the aggregate type *ty*
    (code tokens), in order (a path is the tuple of indices ``extractvalue`` takes),
    or None where some part of it is not split (see ``_element_types``)."""
    elems = _element_types(ty)
    if elems is None:
        return None
    out = []
    for i, t in enumerate(elems):
        if t[0] in ("{", "["):
            sub = _leaves(t)
            if sub is None:
                return None
            out.extend(((i, *p), st) for p, st in sub)
        else:
            out.append(((i,), t))
    return out


def _type_at(ty: list, path):
    """The type (code tokens) of the element of the aggregate type *ty* at *path*, or
    None."""
    for k in path:
        elems = _element_types(ty)
        if elems is None or k >= len(elems):
            return None
        ty = elems[k]
    return ty


def _indices(parts):
    """The tuple of indices that the operands *parts* (``_split_commas`` lists) spell,
    or None."""
    if not parts or any(len(p) != 1 or not p[0].isdigit() for p in parts):
        return None
    return tuple(int(p[0]) for p in parts)


def _constant_leaf(v: list, ty: list, path):
    """The leaf at *path* (code tokens, without its type) of the constant aggregate
    *v* of type *ty*, or None for a value that is not such a constant (or one written
    as a string, ``c"..."``)."""
    for k in path:
        if len(v) == 1 and v[0] in _AGG_CONSTANTS:
            return v
        elems = _element_types(ty)
        if elems is None or k >= len(elems) or not v or v[0] not in ("{", "["):
            return None
        try:
            if match_paren(v, 0) != len(v) - 1:
                return None
        except ValueError:
            return None
        parts = _split_commas(v, 1, len(v) - 1)
        p, t = (parts[k], elems[k]) if len(parts) == len(elems) else ((), ())
        if not t or p[:len(t)] != t or len(p) == len(t):
            return None
        v, ty = p[len(t):], t
    return v


def _leaf_of(value: list, path, ty, defs: dict, leaves: dict):
    """The leaf at *path* of the aggregate *value* (code tokens) of type *ty* (code
    tokens; None where *value* is defined by an instruction in *defs*, which says its
    type): ``(leaf, None)`` with the leaf's code tokens (a constant, the operand an
    ``insertvalue`` wrote there, or the leaf phi of a phi being split; *leaves*: phi
    -> {path: leaf phi}) read through ``insertvalue`` and ``extractvalue`` chains
    (*defs*: name -> the code tokens from the opcode on); else ``(None, (aggregate,
    type, path))`` with the aggregate the ``extractvalue`` chain started from, where
    the leaf can be taken out by one ``extractvalue``."""
    path = tuple(path)
    for _ in range(256):
        if len(value) != 1:
            break
        v = value[0]
        if v in leaves:
            leaf = leaves[v].get(path)
            return ([leaf], None) if leaf is not None else (None, (value, ty, path))
        d = defs.get(v)
        if d is None:
            break
        e = _type_end(d, 1)
        parts = _split_commas(d, e, len(d)) if e > 1 else []
        if d[0] == "extractvalue":  # extractvalue TY AGG, IDX...
            idx = _indices(parts[1:])
            if idx is None or not parts[0]:
                break
            value, ty, path = parts[0], d[1:e], idx + path
            continue
        # insertvalue TY AGG, ETY VAL, IDX...
        idx = _indices(parts[2:])
        if idx is None or not parts[0]:
            break
        ty = d[1:e]
        if idx == path[:len(idx)]:
            sub = _type_at(ty, idx)
            if sub is None or parts[1][:len(sub)] != sub or len(parts[1]) == len(sub):
                break
            value, path, ty = parts[1][len(sub):], path[len(idx):], sub
            if not path:
                return value, None
        elif idx[:len(path)] == path:  # a part of the asked element written: not one leaf
            return None, (value, ty, path)
        else:
            value = parts[0]
    found = _constant_leaf(value, ty, path) if ty is not None else None
    return (found, None) if found is not None else (None, (value, ty, path))


def _parse_phi(c: list):
    """(type tokens, [(value tokens, block token)], [(leaf path, leaf type)]) of the
    aggregate phi whose code tokens are *c*, else None."""
    if len(c) < 5 or c[1] != "=" or c[2] != "phi" or c[0][1:2].isdigit():
        return None
    e = _type_end(c, 3)
    if e < 0:
        return None
    leaves = _leaves(c[3:e])
    if leaves is None:
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
    return (c[3:e], incoming, leaves) if incoming and k == len(c) else None


def _split_phis_in(body: list[str]) -> list[str]:
    """One function body with its aggregate phis split (see split_aggregate_phis)."""
    if not any(" = phi {" in ln or " = phi [" in ln for ln in body):
        return body
    toks = [line_tokens(ln) for ln in body]
    cs = [code(t) for t in toks]
    defs = {c[0]: c[2:] for c in cs
            if len(c) > 3 and c[1] == "=" and c[2] in ("insertvalue", "extractvalue")}
    # blocks: name -> (first line, end line); the entry block may have no label
    starts = [(0, None)]
    for n, c in enumerate(cs):
        if len(c) >= 2 and c[1] == ":" and is_label(toks[n]):
            starts.append((n, irlex.unquote(c[0])))
    blocks: dict = {}
    for k, (n, bname) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(body)
        blocks[bname] = (n, end)

    def span_of(block):
        bname = name(block)
        span = blocks.get(bname)
        if span is None and bname.isdigit():
            span = blocks[None]  # the unlabelled entry block, numbered
        return span if span is not None and span[1] > span[0] else None

    names = irlex.FreshNames(toks)
    # the phis to split (every incoming value a constant whose leaves are all found,
    # or a named value coming from a block of this body), and their leaf phis, named
    # first so that a phi's incoming value can be read through another split phi
    phis: dict[int, tuple] = {}
    leaves: dict[str, dict] = {}  # phi -> {leaf path: leaf phi}
    for n, c in enumerate(cs):
        if len(c) < 4 or c[2] != "phi" or c[3] not in ("{", "["):
            continue
        phi = _parse_phi(c)
        if phi is None:
            continue
        ty, incoming, elems = phi
        if all(len(v) == 1 and irlex.kind(v[0]) is irlex.LOCAL and span_of(b) is not None
               or all(_constant_leaf(v, ty, p) is not None for p, _t in elems)
               for v, b in incoming):
            phis[n] = phi
            leaves[c[0]] = {p: names.fresh(f"{name(c[0])}.gpux.e{e}")
                            for e, (p, _t) in enumerate(elems)}
    if not phis:
        return body
    before: dict[int, list[str]] = {}    # line -> lines to insert before it
    after: dict[int, list[str]] = {}     # line -> lines to insert after it
    replaced: dict[int, list[str]] = {}  # line -> its replacement
    extracted: dict = {}                 # (value, block) -> its leaves, spelled
    for n, (ty, incoming, elems) in phis.items():
        c = cs[n]
        columns: list[list[str]] = [[] for _ in elems]
        for value, block in incoming:
            key = (_spell(value), block)
            if key not in extracted:
                got = [_leaf_of(value, p, ty, defs, leaves) for p, _t in elems]
                if all(found is not None for found, _root in got):
                    extracted[key] = [_spell(found) for found, _root in got]
                else:  # taken apart at the end of its block
                    span = span_of(block)
                    term = span[1] - 1
                    while term > span[0] and not cs[term]:
                        term -= 1
                    out = []
                    for e, ((p, _t), (found, root)) in enumerate(zip(elems, got)):
                        if found is not None:
                            out.append(_spell(found))
                            continue
                        agg, aty, apath = root
                        if len(agg) != 1 or irlex.kind(agg[0]) is not irlex.LOCAL \
                                or aty is None:
                            agg, aty, apath = value, ty, p
                        out.append(names.fresh(f"gpux.pe.{name(value[0])}.{e}"))
                        before.setdefault(term, []).append(
                            f"  {out[-1]} = extractvalue {_spell(aty)} {agg[0]}, "
                            + ", ".join(map(str, apath)))
                    extracted[key] = out
            for e, x in enumerate(extracted[key]):
                columns[e].append(f"[ {x}, {block} ]")
        parts = [leaves[c[0]][p] for p, _t in elems]
        replaced[n] = [f"  {lp} = phi {_spell(t)} {', '.join(col)}"
                       for lp, (_p, t), col in zip(parts, elems, columns)]
        # rebuilt after the block's last phi
        last = n
        while last + 1 < len(body) and len(cs[last + 1]) > 2 and cs[last + 1][2] == "phi":
            last += 1
        prev = "undef"
        for e, (lp, (p, t)) in enumerate(zip(parts, elems)):
            dst = c[0] if e == len(elems) - 1 else names.fresh(f"{name(c[0])}.gpux.b{e}")
            after.setdefault(last, []).append(
                f"  {dst} = insertvalue {_spell(ty)} {prev}, {_spell(t)} {lp}, "
                + ", ".join(map(str, p)))
            prev = dst
    # an extractvalue of a leaf of a split phi (directly, or through extractvalues of
    # its parts and insertvalues of other elements) is the leaf's phi
    leaf_names = {x for lv in leaves.values() for x in lv.values()}
    rename: dict[str, str] = {}
    for n, c in enumerate(cs):
        if len(c) > 3 and c[1] == "=" and c[2] == "extractvalue":
            found, _root = _leaf_of([c[0]], (), None, defs, leaves)
            if found is not None and len(found) == 1 and found[0] in leaf_names:
                rename[c[0]] = found[0]
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
    "logical_selects": logical_selects,
    "static_stack": static_stack,
    "fuse_contracted": fuse_contracted,
    "bool_vector_bits": bool_vector_bits,
    "zero_length_allocas": zero_length_allocas,
    "paired_accesses": paired_accesses,
    "fneg_sign_bits": fneg_sign_bits,
}


#: rewrite name -> whether a module (llvmlite's) can need it, asked before the module is
#: printed: a target whose only rewrites have nothing to do prints nothing
NEEDED = {
    "static_stack": lambda module: any(f.name.startswith("llvm.stacksave")
                                       for f in module.functions),
}


def needed(names, module) -> tuple:
    """The rewrites among *names* that *module* can need (:data:`NEEDED`)."""
    return tuple(n for n in names if n not in NEEDED or NEEDED[n](module))


def apply_rewrites(text: str, names) -> str:
    """*text* with the rewrites *names* applied, in order."""
    for n in names:
        text = REWRITES[n](text)
    return text
