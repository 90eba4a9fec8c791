"""Rewrites of the optimized module's text: address-space inference, the removal of
unused values, shift masking and shared-atomic scopes.

They run after LLVM's optimizer, on the module printed once (``compiler._rewrite_text``),
and read each line through the IR lexer (``irlex``), never with patterns over the text.
Layer 1: imports only the lexer.
"""

from __future__ import annotations

from . import irlex as lx
from .irverify import checked
from .irlex import at_depth0 as _depth0, operand_end as _operand, ptr_type as _ptr_type
from .irlex import skip as _skip, spell_ptr as _spell_ptr

__all__ = ["infer_address_spaces", "drop_unused_values", "mask_shift_amounts",
           "narrow_shared_atomics"]


def _is_generic(toks, i: int, generic: int):
    """The position after a pointer type at *i* that is the generic one, else None."""
    pt = _ptr_type(toks, i)
    if pt is None:
        return None
    space = pt[0] if pt[0] is not None else 0
    return pt[1] if space == generic else None


def _cast_of(toks, i: int, end: int, generic: int):
    """If ``toks[i:end]`` is one constant ``addrspacecast (ptr addrspace(S) X to G)`` of a
    specific pointer to the generic space: (S, X's tokens); else None."""
    if toks[i] != "addrspacecast":
        return None
    o = _skip(toks, i + 1)
    if o >= end or toks[o] != "(" or lx.match_paren(toks, o) != end - 1:
        return None
    s = _skip(toks, o + 1)
    pt = _ptr_type(toks, s)
    if pt is None:
        return None
    space = pt[0] or 0
    x = _skip(toks, pt[1])
    xe = _operand(toks, x)
    to = _skip(toks, xe)
    if to >= end or toks[to] != "to" or space == generic:
        return None
    g = _skip(toks, to + 1)
    ge = _is_generic(toks, g, generic)
    if ge is None or _skip(toks, ge) != end - 1:
        return None
    return space, toks[x:xe]


_GEP_FLAGS = frozenset(("inbounds", "nuw", "nusw", "inrange"))


def _hoist_const_casts(toks, generic: int):
    """Constant GEPs on a cast of a specific-space pointer become the cast of a GEP in
    that space: ``getelementptr (T, G addrspacecast (ptr addrspace(S) @g to G), i)``
    -> ``addrspacecast (ptr addrspace(S) getelementptr (T, ptr addrspace(S) @g, i) to G)``
    (repeated, so a chain of them folds from the inside out)."""
    changed = True
    while changed:
        changed = False
        for i, t in enumerate(toks):
            if t != "getelementptr":
                continue
            j = _skip(toks, i + 1)
            while j < len(toks) and toks[j] in _GEP_FLAGS:
                j = _skip(toks, j + 1)
                if j < len(toks) and toks[j] == "(" and toks[j - 1] == "inrange":
                    j = _skip(toks, lx.match_paren(toks, j) + 1)
            if j >= len(toks) or toks[j] != "(":
                continue  # an instruction, not a constant expression
            close = lx.match_paren(toks, j)
            comma = _depth0(toks, j + 1, close, ",")
            if comma is None:
                continue
            p = _skip(toks, comma + 1)
            pe = _is_generic(toks, p, generic)
            if pe is None:
                continue
            c = _skip(toks, pe)
            ce = _operand(toks, c)
            cast = _cast_of(toks, c, ce, generic)
            if cast is None:
                continue
            space, x = cast
            spec = lx.line_tokens(_spell_ptr(space))
            inner = [*toks[i:p], *spec, " ", *x, *toks[ce:close + 1]]
            toks = [*toks[:i], "addrspacecast", " ", "(", *spec, " ", *inner, " ", "to", " ",
                    *toks[p:pe], ")", *toks[close + 1:]]
            changed = True
            break
    return toks



@checked
def infer_address_spaces(text: str, generic: int) -> str:
    """Loads, stores, atomics and address computations on a pointer that is a cast to
    the generic address space (*generic*, in the module's own numbering) of a
    pointer in a specific space use the specific pointer instead.

    Followed through ``getelementptr`` chains, from ``addrspacecast`` instructions
    and constant expressions (shared and constant arrays are module variables).  A
    computed pointer keeps its generic form for every other user (calls, ``phi``,
    ``select``, pointers stored as values); the casts left unused are for
    ``drop_unused_values`` to remove.  OpenCL drivers and GPUs then see global,
    local and private accesses, not generic ones.

    Why it preserves validity: a new GEP takes the cast's own operand, which
    dominates the cast and so every use of it; the generic name is redefined as a
    cast of the new GEP at the same place, so its users keep their types and
    dominance; a memory operand is replaced by a value that dominates the one it
    replaces, of the same pointee.

    For: LLVM's InferAddressSpaces pass is not in llvmlite 0.50's pass builder
    bindings; a binding of it would remove this (the CUDA target's back end runs it
    itself, option ``backend_infers_address_spaces``)."""
    if generic != 0 and f"addrspace({generic})" not in text:  # (a quick no: no generic pointer)
        return text
    ls = text.split("\n")
    counter = 0
    fns = lx.functions(ls)
    for f in fns:
        lines = ls[f.start:f.stop]
        # (a quick no: only a line with one of these words can be rewritten or resolve a
        # pointer; the others are not tokenized)
        body = [lx.line_tokens(ln) if any(w in ln for w in _MATTERS) else None for ln in lines]
        known: dict[str, tuple[int, list[str]]] = {}
        for k, toks in enumerate(body):
            if toks is not None and "addrspacecast" in toks:
                nt = _hoist_const_casts(toks, generic)
                if nt is not toks:
                    body[k] = toks = nt
                d = lx.definition(toks)
                if d is not None and toks[d[1]] == "addrspacecast":
                    s = _skip(toks, d[1] + 1)
                    pt = _ptr_type(toks, s)
                    if pt is None:
                        continue
                    x = _skip(toks, pt[1])
                    to = _skip(toks, x + 1)
                    if toks[x][0] != "%" or to >= len(toks) or toks[to] != "to":
                        continue
                    ge = _is_generic(toks, _skip(toks, to + 1), generic)
                    space = pt[0] or 0
                    if ge is not None and _skip(toks, ge) == len(toks) and space != generic:
                        known[toks[d[0]]] = (space, [toks[x]])

        def resolve(toks, i, end):
            if end == i + 1 and toks[i] in known:
                return known[toks[i]]
            return _cast_of(toks, i, end, generic)

        geps = [k for k, toks in enumerate(body) if toks is not None and
                (d := lx.definition(toks)) is not None and toks[d[1]] == "getelementptr"]
        done: set[int] = set()
        extra: dict[int, list[str]] = {}
        changed = True
        while changed:  # (the printed order of blocks need not follow dominance)
            changed = False
            for k in geps:
                if k in done:
                    continue
                toks = body[k]
                d = lx.definition(toks)
                comma = _depth0(toks, d[1], len(toks), ",")
                if comma is None:
                    continue
                p = _skip(toks, comma + 1)
                pe = _is_generic(toks, p, generic)
                if pe is None:
                    continue
                o = _skip(toks, pe)
                oe = _operand(toks, o)
                r = resolve(toks, o, oe)
                if r is None:
                    continue
                space, spec = r
                counter += 1
                sname = f"%gpux.as{counter}"
                name = toks[d[0]]
                body[k] = [*toks[:d[0]], sname, *toks[d[0] + 1:p], _spell_ptr(space), " ",
                           *spec, *toks[oe:]]
                extra[k] = [*toks[:d[0]], f"{name} = addrspacecast {_spell_ptr(space)} "
                            f"{sname} to {_spell_ptr(generic)}"]
                known[name] = (space, [sname])
                done.add(k)
                changed = True
        out = []
        for k, toks in enumerate(body):
            if toks is None:
                out.append(lines[k])
                continue
            if k not in done:
                toks = _use_specific(toks, generic, resolve)
            out.append(lx.join(toks))
            if k in extra:
                out.append(lx.join(extra[k]))
        ls[f.start:f.stop] = out
        # later functions moved by the lines added
        shift = len(out) - (f.stop - f.start)
        if shift:
            for g in fns:
                if g.header > f.header:
                    g.header += shift
                    g.start += shift
                    g.stop += shift
    return "\n".join(ls)


#: the words of the lines that address-space inference reads
_MATTERS = ("addrspacecast", "getelementptr", "load", "store", "atomicrmw", "cmpxchg")


def _use_specific(toks, generic: int, resolve):
    """*toks* (an instruction) with its memory operand replaced by the specific
    pointer, where known."""
    op, at = lx.instruction(toks)
    if op not in ("load", "store", "atomicrmw", "cmpxchg"):
        return toks
    if op in ("load", "store"):  # the pointer operand follows the first comma
        comma = _depth0(toks, at, len(toks), ",")
        if comma is None:
            return toks
        p = _skip(toks, comma + 1)
    else:  # the first pointer type, after the keywords
        p = _skip(toks, at + 1)
        while p < len(toks) and toks[p] != "ptr" and lx.kind(toks[p]) is lx.WORD:
            p = _skip(toks, p + 1)
    pe = _is_generic(toks, p, generic)
    if pe is None:
        return toks
    o = _skip(toks, pe)
    if o >= len(toks):
        return toks
    oe = _operand(toks, o)
    r = resolve(toks, o, oe)
    if r is None:
        return toks
    space, spec = r
    return [*toks[:p], _spell_ptr(space), " ", *spec, *toks[oe:]]


#: the operations with no effect but their value (a load too, unless it is volatile or
#: atomic; a division by zero, undefined, may be dropped)
_NO_EFFECT_OPS = frozenset((
    "getelementptr", "addrspacecast", "bitcast", "ptrtoint", "inttoptr", "add", "sub", "mul",
    "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr", "and", "or", "xor", "zext", "sext",
    "trunc", "icmp", "fcmp", "select", "phi", "freeze", "fneg", "fadd", "fsub", "fmul", "fdiv",
    "frem", "fpext", "fptrunc", "sitofp", "uitofp", "fptosi", "fptoui", "extractvalue",
    "insertvalue", "extractelement", "insertelement", "shufflevector", "load"))


@checked
def drop_unused_values(text: str) -> str:
    """Instructions with no effect but their value (address computations, casts,
    arithmetic, comparisons, phis, plain loads) that nothing uses, removed, as
    dead-code elimination would: the casts that address-space inference leaves, and
    the values whose every use the IR rewrites recomputed.  Without a pass manager
    run, and the module need not be parsed for it.  (A name is counted wherever it
    appears as a name token in the function, so a use is never missed.)

    For: a pass manager run costs more than this on the text that is printed anyway;
    it can go when the rewrites before it run on llvmlite objects (then LLVM's
    dead-code elimination runs on the module)."""
    if not any(f" = {op} " in text for op in _NO_EFFECT_OPS):  # (a quick no: nothing to do)
        return text
    ls = text.split("\n")
    for f in reversed(lx.functions(ls)):  # from the end: earlier positions stay valid
        ls[f.start:f.stop] = _drop_unused_in(ls[f.start:f.stop])
    return "\n".join(ls)


def _drop_unused_in(body: list[str]) -> list[str]:
    uses: dict[str, int] = {}
    defs: dict[str, int] = {}   # removable value -> its line
    operands: dict[int, list[str]] = {}
    for k, ln in enumerate(body):
        if "%" not in ln:
            continue
        names = lx.local_names(ln)
        for n in names:
            uses[n] = uses.get(n, 0) + 1
        # a definition: the line starts with its name and " = ", then the opcode
        s = ln.lstrip()
        if names and s.startswith(names[0]) and s.startswith(" = ", len(names[0])):
            rhs = s[len(names[0]) + 3:]
            op = rhs.split(" ", 1)[0]
            if op in _NO_EFFECT_OPS and not rhs.startswith(("load volatile ", "load atomic ")):
                defs[names[0]] = k
                operands[k] = names[1:]  # the first name is the value defined
    for n in defs:
        uses[n] -= 1  # its definition
    dead = [n for n, k in defs.items() if uses[n] == 0]
    gone: set[int] = set()
    while dead:
        k = defs[dead.pop()]
        if k in gone:
            continue
        gone.add(k)
        for u in operands[k]:
            uses[u] -= 1
            if uses[u] == 0 and u in defs:
                dead.append(u)
    return body if not gone else [ln for k, ln in enumerate(body) if k not in gone]


def mask_shift_amounts(text: str) -> str:
    """Scalar shifts by a computed amount get the amount masked to the width
    (``and iN %b, N-1``).  The mask changes nothing where LLVM's shift is defined
    (an amount below the width); it is for drivers that miscompile unmasked
    shifts (see the OpenCL target's ``emit``).

    For: Intel's OpenCL CPU driver (2024-2025 releases); can go when the oldest
    supported driver shifts right."""
    counter = 0
    ls = text.split("\n")
    out = []
    for ln in ls:
        if not ("shl " in ln or "lshr " in ln or "ashr " in ln):
            out.append(ln)
            continue
        toks = lx.line_tokens(ln)
        d = lx.definition(toks)
        if d is None or toks[d[1]] not in ("shl", "lshr", "ashr"):
            out.append(ln)
            continue
        ci = [i for i in lx.code_index(toks) if i > d[1]]
        k = 0
        while k < len(ci) and toks[ci[k]] in ("nuw", "nsw", "exact"):
            k += 1
        rest = [toks[i] for i in ci[k:]]
        # iN a, %b and nothing else (a scalar shift; no metadata attached)
        if len(rest) != 4 or rest[2] != "," or rest[3][0] != "%" or \
                not (rest[0][0] == "i" and rest[0][1:].isdigit()):
            out.append(ln)
            continue
        counter += 1
        bits = int(rest[0][1:])
        masked = f"%gpux.shamt{counter}"
        indent = lx.join(toks[:d[0]])
        out.append(f"{indent}{masked} = and i{bits} {rest[3]}, {bits - 1}")
        out.append(lx.join([*toks[:ci[-1]], masked, *toks[ci[-1] + 1:]]))
    return "\n".join(out)


@checked
def narrow_shared_atomics(text: str, shared: int, scope: str = "workgroup") -> str:
    """Atomics on memory in the *shared* address space at work-group scope (the back
    end's name for it: ``syncscope("workgroup")`` for SPIR-V) instead of device scope:
    only the work-items of one group can see such memory, so the narrower scope orders
    the same accesses, and back ends may pick cheaper instructions for it.

    For: llvmlite 0.50 cannot change an instruction's sync scope; a setter would
    remove this."""
    ls = text.split("\n")
    for k, ln in enumerate(ls):
        if "syncscope" not in ln:
            continue
        toks = lx.line_tokens(ln)
        op, at = lx.instruction(toks)
        if op not in ("atomicrmw", "cmpxchg"):
            continue
        p = at + 1
        while p < len(toks) and toks[p] != "ptr":
            p += 1
        pt = _ptr_type(toks, p)
        if pt is None or (pt[0] or 0) != shared:
            continue
        for i in range(pt[1], len(toks)):
            if toks[i] == "syncscope":
                s = _skip(toks, _skip(toks, i + 1) + 1)
                if s < len(toks) and toks[s] == '"device"':
                    toks[s] = f'"{scope}"'
                    ls[k] = lx.join(toks)
                break
    return "\n".join(ls)
