"""IR rewrites for back ends that mistranslate valid LLVM IR.

Each rewrite takes the optimized module's text and returns it with one construct
written another, equivalent way that the back end translates correctly.  A target
lists the rewrites it needs in its option ``ir_rewrites`` (names from
:data:`REWRITES`); the compiler applies them once, after the optimizer and the
intrinsic replacement (``compiler._stage_optimize``), so no later pass turns
them back.  Where a rewrite works around a fault of LLVM's or of a driver, its
docstring names the fault and the smallest IR that shows it (docs/pipeline.md,
"Back-end, driver and emitter workarounds", lists them all).
"""

from __future__ import annotations

import re

from .irtext import _NAME, definition, name_end, rewrite_bodies

__all__ = ["REWRITES", "apply_rewrites", "sitofp_i1", "byte_allocas", "rematerialize_index_math",
           "split_aggregate_phis"]

# (patterns of rewrites that most modules do not need are compiled, through re's own
# cache, only for a module that has the construct: compiling one costs about 0.2 ms)
_SITOFP_I1 = r"^(\s*%[-\w.$\"]+ = )sitofp i1 (%[-\w.$\"]+|true|false) to (half|float|double)\b"


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
    """
    if "sitofp i1 " not in text:
        return text
    return re.compile(_SITOFP_I1, re.M).sub(r"\1select i1 \2, \3 -1.000000e+00, \3 0.000000e+00",
                                            text)


_SCALAR_BYTES = {"i8": 1, "i16": 2, "i32": 4, "i64": 8, "half": 2, "float": 4, "double": 8}
_ARRAY_ALLOCA = r"= alloca ((?:\[\d+ x )+)(i8|i16|i32|i64|half|float|double)(\]+)(, align (\d+))?"


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
    the same accesses, is right.  An array's type carries no meaning in LLVM's
    opaque-pointer IR beyond its size and alignment, both kept.
    """
    def repl(m):
        dims = [int(x) for x in re.findall(r"\[(\d+) x ", m.group(1))]
        size = _SCALAR_BYTES[m.group(2)]
        for n in dims:
            size *= n
        align = m.group(5) or str(_SCALAR_BYTES[m.group(2)])
        return f"= alloca [{size} x i8], align {align}"

    if "= alloca [" not in text:
        return text
    return re.compile(_ARRAY_ALLOCA).sub(repl, text)


_PURE_OPS = frozenset(("getelementptr", "add", "sub", "mul", "shl", "lshr", "ashr", "and", "or",
                       "xor", "zext", "sext", "trunc", "addrspacecast"))
# The line tests below are string operations, not regular expressions: a target
# that lists this rewrite runs it on every compile, and compiling its four
# patterns cost about 0.6 ms of the target's first use.


def _is_label(line: str) -> bool:
    end = name_end(line, 0)
    return end > 0 and line.startswith(":", end)


def _is_boundary(line: str) -> bool:
    """A call that returns nothing (not of an LLVM intrinsic): a barrier cuts there."""
    s = line.lstrip()
    s = s[5:] if s.startswith("tail ") else s
    return s.startswith("call void @") and not s.startswith("call void @llvm.")


_RANGE_CALL = "call noundef range(i64 "


def _index_query(rhs: str) -> bool:
    """A work-item index query: ``[tail ]call noundef range(i64 A, B) i64 @f(i32 D)``,
    optionally with an attribute group: a call our pipeline annotated with its
    result's range (irtext.index_ranges; the annotation stays on the target's call
    after inlining)."""
    s = rhs[5:] if rhs.startswith("tail ") else rhs
    if not s.startswith(_RANGE_CALL):
        return False
    close = s.find(") i64 @", len(_RANGE_CALL))
    if close < 0:
        return False
    lo, sep, hi = s[len(_RANGE_CALL):close].partition(", ")
    if not (sep and lo.isdigit() and hi.isdigit()):
        return False
    rest = s[close + len(") i64 @"):]
    name = name_end(rest, 0)
    if name == 0 or not rest.startswith("(i32 ", name):
        return False
    tail = rest[name + len("(i32 "):]
    return (len(tail) >= 2 and tail[0].isdigit() and tail[1] == ")"
            and (len(tail) == 2 or (tail.startswith(" #", 2) and tail[4:].isdigit())))


def _pure(rhs: str) -> bool:
    op = rhs.split(" ", 1)[0]
    return op in _PURE_OPS or _index_query(rhs)


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
    sees addresses derived from the work-item index in the block that uses them."""
    return rewrite_bodies(text, _remat_function)


def _remat_function(body: list[str]) -> list[str]:
    """One function's body with its remat-able values recomputed per region (a block, or
    the part of one after a call that returns nothing: a barrier cuts there)."""
    local = re.compile(_NAME)  # (re's cache: compiled once per process)
    pure: dict[str, str] = {}       # value -> its instruction's right-hand side
    region_of: dict[str, int] = {}
    regions: list[list[str]] = [[]]
    for ln in body:
        if _is_label(ln):
            regions.append([ln])
            continue
        regions[-1].append(ln)
        d = definition(ln)
        if d:
            region_of[d[0]] = len(regions) - 1
            if _pure(d[1]):
                pure[d[0]] = d[1]
        if _is_boundary(ln):
            regions.append([])
    ok: dict[str, bool] = {}

    def remat(v: str) -> bool:
        """Whether *v*'s whole operand tree is pure (arguments and constants are leaves)."""
        if v in ok:
            return ok[v]
        ok[v] = False
        if v not in pure:
            return False
        ok[v] = all(remat(u) or u not in region_of for u in local.findall(pure[v]))
        return ok[v]

    order = {v: k for k, v in enumerate(pure)}
    result: list[str] = []
    for r, reg in enumerate(regions):
        labelled = bool(reg) and _is_label(reg[0])
        head = (1 + sum(1 for ln in reg[1:] if " = phi " in ln)) if labelled else 0
        needed: set = set()

        def need(v):
            if v in needed or region_of.get(v) == r:
                return
            needed.add(v)
            for u in local.findall(pure[v]):
                if u in pure and ok.get(u):
                    need(u)

        for ln in reg[head:]:
            for u in local.findall(ln.split(" = ", 1)[-1]):
                if u in pure and region_of.get(u) != r and remat(u):
                    need(u)
        if not needed:
            result.extend(reg)
            continue
        # (a named copy also of a numbered value: %7 -> %gpux.rm3.7)
        rename = {v: (f'%"gpux.rm{r}.{v[2:]}' if v.startswith('%"') else f"%gpux.rm{r}.{v[1:]}")
                  for v in needed}

        def sub(ln):
            return local.sub(lambda m: rename.get(m.group(0), m.group(0)), ln)

        clones = [f"  {rename[v]} = {sub(pure[v])}" for v in sorted(needed, key=order.get)]
        result.extend(reg[:head] + clones + [sub(ln) for ln in reg[head:]])
    return result


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

    A phi of nested aggregates is split down to its scalar leaves, one phi per leaf
    (element paths such as ``5, 1``): Numba's ``tuple[i]`` with a run-time ``i`` makes
    a phi of the element type, and a tuple of arrays (``arrs[k][:, j]`` over captured
    host arrays) gives a phi of array structs, ``{ ptr, ..., [2 x i64], [2 x i64] }``,
    on which the back end aborts the same way (``ArrayRef::drop_front``).

    An incoming value that is not a constant is taken apart at the end of its block
    (its leaves read through the ``insertvalue`` chain that built it where there is
    one, else by ``extractvalue``), and an ``extractvalue`` of a leaf of the split phi
    becomes the leaf's phi, so that the aggregate is usually left unused (the OpenCL C
    emitter, which writes no aggregate values, needs that).  A phi whose type holds a
    packed struct, or an unnamed (numbered) phi, is left as it is."""
    if " = phi {" not in text and " = phi [" not in text:
        return text
    return rewrite_bodies(text, _split_phis_in)


def _split_top(s: str) -> list[str]:
    """*s* split at its commas outside brackets and quotes, each part stripped."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(s):
        c = s[i]
        if c == '"':
            i = s.index('"', i + 1)
        elif c in "([{<":
            depth += 1
        elif c in ")]}>":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(s[start:i].strip())
            start = i + 1
        i += 1
    parts.append(s[start:].strip())
    return parts


def _close(s: str, at: int) -> int:
    """The index of the bracket that closes the one at *at* of *s*."""
    depth = 0
    for i in range(at, len(s)):
        if s[i] in "([{<":
            depth += 1
        elif s[i] in ")]}>":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _element_types(ty: str):
    """The element types of the struct or array type *ty* (scalars, vectors or
    aggregates themselves), else None (also for a packed struct in it)."""
    if ty.startswith("{ ") and ty.endswith(" }"):
        elems = _split_top(ty[2:-2])
    elif ty.startswith("[") and ty.endswith("]") and " x " in ty:
        count, elem = ty[1:-1].split(" x ", 1)
        if not count.isdigit():
            return None
        elems = [elem.strip()] * int(count)
    else:
        return None
    if not elems or any(e.startswith("<{") or not e for e in elems):
        return None
    return elems


def _is_aggregate(ty: str) -> bool:
    return ty.startswith(("{", "["))


def _leaves(ty: str):
    """[(path, type)] of the scalar and vector leaves of the aggregate type *ty*, in
    order (a path is the tuple of indices that ``extractvalue`` takes), else None."""
    elems = _element_types(ty)
    if elems is None:
        return None
    out = []
    for i, t in enumerate(elems):
        if _is_aggregate(t):
            sub = _leaves(t)
            if sub is None:
                return None
            out.extend(((i, *p), st) for p, st in sub)
        else:
            out.append(((i,), t))
    return out


def _type_at(ty: str, path) -> str | None:
    """The type of the element of aggregate type *ty* at the index *path*."""
    for k in path:
        elems = _element_types(ty)
        if elems is None or k >= len(elems):
            return None
        ty = elems[k]
    return ty


def _constant_leaf(op: str, ty: str, path):
    """The leaf at *path* of the constant aggregate *op* of type *ty* (without its
    type), or None for a value that is not such a constant (or one written as a
    string, ``c"..."``)."""
    for k in path:
        if op in ("undef", "poison", "zeroinitializer"):
            return op
        elems = _element_types(ty)
        if elems is None or op[:1] not in "{[" or _close(op, 0) != len(op) - 1:
            return None
        parts = _split_top(op[1:-1].strip())
        if len(parts) != len(elems) or not parts[k].startswith(elems[k] + " "):
            return None
        op, ty = parts[k][len(elems[k]) + 1:], elems[k]
    return op


def _parse_phi(line: str):
    """(name, type, [(value, block)], [(leaf path, leaf type)]) of an aggregate phi,
    else None."""
    d = definition(line)
    if d is None or d[0][1:2].isdigit() or not d[1].startswith("phi "):
        return None
    rest = d[1][4:]
    end = _close(rest, 0)
    if end < 0:
        return None
    ty = rest[:end + 1]
    elems = _leaves(ty)
    if elems is None:
        return None
    incoming, k = [], end + 1
    while True:
        k = rest.find("[", k)
        if k < 0:
            break
        close = _close(rest, k)
        pair = _split_top(rest[k + 1:close].strip())
        if len(pair) != 2 or not pair[1].startswith("%"):
            return None
        incoming.append((pair[0], pair[1]))
        k = close + 1
        nxt = rest[k:].lstrip()
        if not nxt.startswith(", ["):
            break
    return (d[0], ty, incoming, elems) if incoming else None


def _suffixed(name: str, suffix: str) -> str:
    return f'{name[:-1]}.{suffix}"' if name.endswith('"') else f"{name}.{suffix}"


def _typed_name(s: str):
    """(type, ``%name``) of a typed operand ``TYPE %name``, else None."""
    at = s.rfind(' %"') if s.endswith('"') else s.rfind(" %")
    return (s[:at], s[at + 1:]) if at > 0 else None


def _element_of(value: str, path, ty: str, defs: dict, leaves: dict):
    """The leaf at *path* of the aggregate *value* of type *ty*: a constant, the value
    an ``insertvalue`` put there, or the leaf's phi of a phi being split (``leaves``:
    phi name -> {path: leaf phi name}), read through ``insertvalue`` and
    ``extractvalue`` chains (``defs``: name -> right-hand side); else None."""
    path = tuple(path)
    for _ in range(64):
        if value in leaves:
            return leaves[value].get(path)
        rhs = defs.get(value, "")
        if rhs.startswith("extractvalue "):
            parts = _split_top(rhs[len("extractvalue "):])
            src = _typed_name(parts[0])
            if src is None or not all(p.isdigit() for p in parts[1:]):
                return None
            ty, value = src
            path = tuple(int(p) for p in parts[1:]) + path
            continue
        if not rhs.startswith(f"insertvalue {ty} "):
            break
        parts = _split_top(rhs[len("insertvalue "):])
        if len(parts) < 3 or not all(p.isdigit() for p in parts[2:]):
            return None
        idx = tuple(int(p) for p in parts[2:])
        if idx == path[:len(idx)]:
            sub = _type_at(ty, idx)
            if sub is None or not parts[1].startswith(sub + " "):
                return None
            value, path, ty = parts[1][len(sub) + 1:], path[len(idx):], sub
            if not path:
                return value
        elif idx[:len(path)] == path:  # a part of the leaf inserted: not read here
            return None
        else:
            value = parts[0][len(ty) + 1:]
    return _constant_leaf(value, ty, path)


def _split_phis_in(body: list[str]) -> list[str]:
    """One function body with its aggregate phis split (see split_aggregate_phis)."""
    if not any(" = phi {" in ln or " = phi [" in ln for ln in body):
        return body
    defs = {}
    for ln in body:
        if " = insertvalue " in ln or " = extractvalue " in ln:
            d = definition(ln)
            if d:
                defs[d[0]] = d[1]
    # blocks: name -> (first line, end line); the entry block may have no label
    starts = [(0, None)]
    for i, ln in enumerate(body):
        if _is_label(ln):
            starts.append((i, "%" + ln[:name_end(ln, 0)]))
    blocks: dict = {}
    for n, (i, name) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(body)
        blocks[name] = (i, end)
    # the phis to split: every incoming value a constant of the phi's shape or a
    # named value in a block of this body; each leaf gets its phi's name
    phis: dict[int, tuple] = {}
    leaves: dict[str, dict] = {}  # phi name -> {leaf path: leaf phi name}
    for i, ln in enumerate(body):
        if " = phi {" not in ln and " = phi [" not in ln:
            continue
        phi = _parse_phi(ln)
        if phi is None:
            continue
        name, ty, incoming, elems = phi
        if all(v.startswith("%") and (blocks.get(b) or blocks.get(None)) is not None
               or all(_constant_leaf(v, ty, path) is not None for path, _t in elems)
               for v, b in incoming):
            phis[i] = phi
            leaves[name] = {path: _suffixed(name, f"gpux.e{e}")
                            for e, (path, _t) in enumerate(elems)}
    if not phis:
        return body
    before: dict[int, list[str]] = {}    # line index -> lines to insert before it
    after: dict[int, list[str]] = {}     # line index -> lines to insert after it
    replaced: dict[int, list[str]] = {}  # line index -> its replacement
    extracted: dict = {}
    serial = 0
    for i, (name, ty, incoming, elems) in phis.items():
        columns: list[list[str]] = [[] for _ in elems]
        for value, block in incoming:
            key = (value, block)
            if key not in extracted:
                found = [_element_of(value, path, ty, defs, leaves) for path, _t in elems]
                if all(f is not None for f in found):
                    extracted[key] = found
            if key not in extracted:  # taken apart at the end of its block
                span = blocks.get(block) or blocks.get(None)
                term = span[1] - 1
                while term > span[0] and (not body[term].strip()
                                          or body[term].lstrip().startswith(";")):
                    term -= 1
                names = []
                for path, _t in elems:
                    serial += 1
                    names.append(f"%gpux.pe{serial}")
                    before.setdefault(term, []).append(
                        f"  {names[-1]} = extractvalue {ty} {value}, "
                        + ", ".join(map(str, path)))
                extracted[key] = names
            for e, c in enumerate(extracted[key]):
                columns[e].append(f"[ {c}, {block} ]")
        parts = [leaves[name][path] for path, _t in elems]
        replaced[i] = [f"  {p} = phi {t} {', '.join(col)}"
                       for p, (_path, t), col in zip(parts, elems, columns)]
        # rebuilt after the block's last phi
        last = i
        while last + 1 < len(body) and " = phi " in body[last + 1]:
            last += 1
        prev = "undef"
        for e, (p, (path, t)) in enumerate(zip(parts, elems)):
            dst = name if e == len(elems) - 1 else _suffixed(name, f"gpux.b{e}")
            after.setdefault(last, []).append(
                f"  {dst} = insertvalue {ty} {prev}, {t} {p}, {', '.join(map(str, path))}")
            prev = dst
    # an extractvalue of a leaf of a split phi (directly or through extractvalues of
    # its parts) is the leaf's phi
    leaf_names = {n for lv in leaves.values() for n in lv.values()}
    rename: dict[str, str] = {}
    for i, ln in enumerate(body):
        if " = extractvalue " in ln:
            d = definition(ln)
            leaf = d and _element_of(d[0], (), "", defs, leaves)
            if leaf in leaf_names:
                rename[d[0]] = leaf
                replaced[i] = []
    local = re.compile(_NAME)
    out: list[str] = []
    for i, ln in enumerate(body):
        out.extend(before.get(i, ()))
        out.extend(replaced.get(i, (ln,)))
        out.extend(after.get(i, ()))
    if rename:
        out = [local.sub(lambda m: rename.get(m.group(0), m.group(0)), ln) for ln in out]
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
    for name in names:
        text = REWRITES[name](text)
    return text
