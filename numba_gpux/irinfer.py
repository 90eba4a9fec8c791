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
           "narrow_shared_atomics", "private_atomics"]


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
    prefix = _fresh_prefix(text, "gpux.as")
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
                sname = f"%{prefix}{counter}"
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


def _fresh_prefix(text: str, base: str) -> str:
    """A prefix for the local names a rewrite makes (followed by a number) that no name
    in *text* starts with: *base*, else *base* with a letter added (``gpux.asb``, ...),
    so that a rewrite run twice on a module (before and after the optimizer) does not
    make a name the first run made."""
    for c in ("", *"bcdefghijklmnopqrstuvwxyz"):
        if f"%{base}{c}" not in text and f'%"{base}{c}' not in text:
            return base + c
    raise ValueError(f"no fresh prefix for {base!r}")


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


#: ``atomicrmw`` operations written as plain arithmetic on the old value *o* and the
#: operand *v* (each a list of instruction templates, the last giving the new value)
_RMW = {
    "xchg": [], "add": ["add {T} {o}, {v}"], "sub": ["sub {T} {o}, {v}"],
    "and": ["and {T} {o}, {v}"], "or": ["or {T} {o}, {v}"], "xor": ["xor {T} {o}, {v}"],
    "nand": ["and {T} {o}, {v}", "xor {T} {0}, -1"],
    "max": ["icmp sgt {T} {o}, {v}", "select i1 {0}, {T} {o}, {T} {v}"],
    "min": ["icmp slt {T} {o}, {v}", "select i1 {0}, {T} {o}, {T} {v}"],
    "umax": ["icmp ugt {T} {o}, {v}", "select i1 {0}, {T} {o}, {T} {v}"],
    "umin": ["icmp ult {T} {o}, {v}", "select i1 {0}, {T} {o}, {T} {v}"],
    "fadd": ["fadd {T} {o}, {v}"], "fsub": ["fsub {T} {o}, {v}"],
    "uinc_wrap": ["icmp uge {T} {o}, {v}", "add {T} {o}, 1", "select i1 {0}, {T} 0, {T} {1}"],
    "udec_wrap": ["icmp eq {T} {o}, 0", "icmp ugt {T} {o}, {v}", "or i1 {0}, {1}",
                  "sub {T} {o}, 1", "select i1 {2}, {T} {v}, {T} {3}"],
}


@checked
def private_atomics(text: str, private: int) -> str:
    """Atomics on memory in the *private* address space (a work-item's own: a local
    array's element) written as a load, the operation and a store: no other work-item
    can see that memory, so the result is the same, and OpenCL (SPIR-V) allows atomics
    on global, shared and generic pointers only (a driver refused the program).  An
    ``atomicrmw`` keeps its name for the old value; a ``cmpxchg`` gives its
    ``{old, success}`` pair as ``insertvalue``.  Operations not in :data:`_RMW` are left
    as they are.

    For: address-space inference (above) turning a generic atomic on a cast of a private
    pointer into a private one; a driver taking atomics on private memory would remove
    this."""
    if "atomicrmw" not in text and "cmpxchg" not in text:
        return text
    prefix = _fresh_prefix(text, "gpux.pa")
    out, counter = [], 0
    for ln in text.split("\n"):
        if "atomicrmw" not in ln and "cmpxchg" not in ln:
            out.append(ln)
            continue
        toks = lx.line_tokens(ln)
        op, at = lx.instruction(toks)
        d = lx.definition(toks)
        new = None
        if op in ("atomicrmw", "cmpxchg") and d is not None:
            counter += 1
            new = _private_atomic(lx.code(toks), op, private, f"%{prefix}{counter}.")
        if new is None:
            out.append(ln)
            continue
        indent = lx.join(toks[:d[0]])
        out.extend(indent + n for n in new)
    return "\n".join(out)


def _private_atomic(c: list, op: str, private: int, name: str):
    """The instructions replacing the atomic whose code tokens are *c* (``%r = op ...``),
    or None where it is not on *private* memory or not one written here."""
    result = c[0]
    ops = lx.split_depth0(c[c.index(op) + 1:])
    words = {"volatile", "weak"}
    first = [t for t in ops[0] if t not in words]
    rmw = None
    if op == "atomicrmw":
        if not first or first[0] not in _RMW:
            return None
        rmw, first = first[0], first[1:]
    pt = _ptr_type(first, 0)
    if pt is None or (pt[0] or 0) != private or pt[1] >= len(first):
        return None
    ptr = f"{lx.spell_ptr(private)} {first[pt[1]]}"
    align = next((f", {' '.join(g)}" for g in ops[2:] if g and g[0] == "align"), "")
    if op == "atomicrmw":
        if len(ops) < 2 or len(ops[1]) < 2:
            return None
        ty, v = ops[1][0], ops[1][1]
        steps, o = [], result
        lines = [f"{result} = load {ty}, {ptr}{align}"]
        for k, tmpl in enumerate(_RMW[rmw]):
            steps.append(f"{name}{k}")
            lines.append(f"{steps[-1]} = " + tmpl.format(*steps, T=ty, o=o, v=v))
        lines.append(f"store {ty} {steps[-1] if steps else v}, {ptr}{align}")
        return lines
    if len(ops) < 3 or len(ops[1]) < 2 or len(ops[2]) < 2:
        return None
    ty, cmp, newv = ops[1][0], ops[1][1], ops[2][1]
    align = next((f", {' '.join(g)}" for g in ops[3:] if g and g[0] == "align"), "")
    return [f"{name}old = load {ty}, {ptr}{align}",
            f"{name}eq = icmp eq {ty} {name}old, {cmp}",
            f"{name}new = select i1 {name}eq, {ty} {newv}, {ty} {name}old",
            f"store {ty} {name}new, {ptr}{align}",
            f"{name}pair = insertvalue {{ {ty}, i1 }} poison, {ty} {name}old, 0",
            f"{result} = insertvalue {{ {ty}, i1 }} {name}pair, i1 {name}eq, 1"]
