"""Warps that run in lockstep: a kernel's stores to work-group memory kept in order
with the loads of other lanes that follow them.

numba.cuda code may let the 32 lanes of a warp exchange values through shared memory
without a barrier (the last steps of a block reduction: ``sm[t] = min(sm[t], sm[t +
16])``, then ``+ 8``, ...), relying on every lane finishing one statement before any
lane starts the next.  A device that runs a sub-group as the lanes of vector
instructions does that only where its compiler keeps each lane's loads and stores in
program order; a compiler that optimizes one work-item's code sees different
addresses and no barrier, and may move the load of ``sm[t + 8]`` above the store to
``sm[t]`` before it (Intel's CPU driver does, and the tail's answer is wrong).

:func:`order_shared_stores` puts a sub-group barrier after each store to work-group
memory from which a load of work-group memory can be reached without passing a
barrier, as ``cuda.syncwarp()`` written by hand after it would.  A sub-group barrier
orders memory within the sub-group and, on a device that runs the sub-group as one
vector, costs nothing more (a memory fence instead made Intel's driver give up
vectorizing the kernel: 10 to 40 times slower).  Stores followed by a work-group
barrier before any load (tiles filled, then ``syncthreads()``) get none.

Layer 1: reads and writes text through the IR lexer only.
"""

from __future__ import annotations

from . import irlex as lx
from .divergence import PREDICATE_BARRIERS, SITES, blocks, callee_name
from .irinfer import infer_address_spaces
from .irverify import checked

__all__ = ["SG_BARRIER", "order_shared_stores", "passes_values_in_step"]

#: the sub-group barrier (the portable intrinsic ``cuda.syncwarp()`` lowers to)
SG_BARRIER = "__gpux_sg_barrier"
#: calls after which the lanes' earlier stores are seen by the later loads
_ORDERING = SITES | PREDICATE_BARRIERS | {SG_BARRIER}

_STORE, _LOAD, _BARRIER = "store", "load", "barrier"


def _event(line: str, shared: int, generic: int):
    """What the instruction *line* is to the analysis: a store to work-group memory
    (address space *shared*), a load that may read it (*shared*, or the *generic*
    space, which may point there), a barrier (:data:`_ORDERING`), or None."""
    if "store" not in line and "load" not in line and "call" not in line:
        return None
    toks = lx.line_tokens(line)
    op, _ = lx.instruction(toks)
    if op == "call":
        return _BARRIER if callee_name(toks) in _ORDERING else None
    if op not in ("store", "load"):
        return None
    ops = lx.split_depth0(lx.code(toks)[lx.code(toks).index(op) + 1:])
    # store T v, ptr addrspace(S) p ...; load T, ptr addrspace(S) p ...
    if len(ops) < 2:
        return None
    pt = lx.ptr_type(ops[1], 0)
    if pt is None:
        return None
    space = pt[0] or 0
    if op == "store":
        return _STORE if space == shared else None
    return _LOAD if space in (shared, generic) else None


def _stores_to_order(body: list[str], shared: int, generic: int) -> list[int]:
    """The positions in the function body *body* of the stores to work-group memory
    from which a load of it can be reached without passing a barrier."""
    bl = blocks(body)
    by_label = {b.label: b for b in bl if b.label is not None}
    events = [[(i, e) for i in b.lines if (e := _event(body[i], shared, generic))]
              for b in bl]
    if not any(e == _STORE for ev in events for _, e in ev):
        return []
    # what a path entering each block meets first: a load, a barrier, or nothing
    first = {b.label: next((e for _, e in ev if e != _STORE), None)
             for b, ev in zip(bl, events)}
    # whether a load can be reached from a block's end without passing a barrier: the
    # least fixed point over the blocks (one pass per change, not a search per store)
    reach = {b.label: False for b in bl}
    changed = True
    while changed:
        changed = False
        for b in bl:
            if reach[b.label]:
                continue
            for lab in b.succ:
                if lab in by_label and (first[lab] == _LOAD
                                        or (first[lab] is None and reach[lab])):
                    reach[b.label] = changed = True
                    break

    out = []
    for b, ev in zip(bl, events):
        for k, (i, e) in enumerate(ev):
            if e != _STORE:
                continue
            after = next((e2 for _, e2 in ev[k + 1:] if e2 != _STORE), None)
            if after == _LOAD or (after is None and reach[b.label]):
                out.append(i)
    return out


def passes_values_in_step(text: str, shared: int, generic: int) -> bool:
    """Whether a function of *text* has a store to work-group memory (address space
    *shared*) that a load of it can follow with no barrier between: code whose lanes
    may pass values in step, which :func:`order_shared_stores` would order."""
    text = infer_address_spaces(text, generic)
    if "store" not in text:
        return False
    ls = text.split("\n")
    return any(_stores_to_order(ls[f.start:f.stop], shared, generic) for f in lx.functions(ls))


@checked
def order_shared_stores(text: str, shared: int, generic: int,
                        barrier: str = SG_BARRIER) -> str:
    """*text* with a call of *barrier* after every store to work-group memory (address
    space *shared*, in the module's own numbering) from which a load of it can be
    reached without passing a barrier (the module description).  Stores are found
    through :func:`irinfer.infer_address_spaces`, whose rewrite the text keeps."""
    text = infer_address_spaces(text, generic)
    if "store" not in text:
        return text
    ls = text.split("\n")
    after: set[int] = set()
    for f in lx.functions(ls):
        after.update(f.start + i for i in _stores_to_order(ls[f.start:f.stop], shared, generic))
    if not after:
        return text
    call = f"  call void {lx.spell_global(barrier)}()"
    out = []
    for k, ln in enumerate(ls):
        out.append(ln)
        if k in after:
            out.append(call)
    if barrier not in _declared(out):
        out.append(f"declare void {lx.spell_global(barrier)}()")
    return "\n".join(out)


def _declared(lines) -> set[str]:
    """The names of the functions that *lines* declare."""
    names = set()
    for ln in lines:
        if ln.startswith("declare"):
            toks = lx.line_tokens(ln)
            i = lx.define_name(toks)
            if i is not None:
                names.add(lx.name(toks[i]))
    return names
