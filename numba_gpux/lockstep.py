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
barrier, as ``cuda.syncwarp()`` written by hand after it would, and one before each
store that can be reached from such a load: lanes in step all read before any writes
(``if t > 0: sm[t] = sm[t - 1]``), where a driver that runs a partial sub-group's
work-items one after another (Intel's, in a block of 8) let lane 2 read what lane 1
had just written.  A sub-group barrier
orders memory within the sub-group and, on a device that runs the sub-group as one
vector, costs nothing more (a memory fence instead made Intel's driver give up
vectorizing the kernel: 10 to 40 times slower).  Stores followed by a work-group
barrier before any load (tiles filled, then ``syncthreads()``) get none.

:func:`waits_for_other_work_items` finds the opposite need: code in which a work-item
waits in a loop for another to release a lock (``while cuda.atomic.cas(mutex, i, 0,
1) != 0: pass``), which the lanes of one vector cannot do (the lane holding the lock
waits, masked off, for the lanes still spinning): the compile then asks the driver to
run the kernel's work-items one at a time where the target names how
(``Target.serial_lanes_metadata``).

Layer 1: reads and writes text through the IR lexer only.
"""

from __future__ import annotations

import functools

from . import irlex as lx
from .divergence import PREDICATE_BARRIERS, SITES, blocks, callee_name
from .irinfer import infer_address_spaces
from .irverify import checked
from .reducible import strongly_connected

__all__ = ["SG_BARRIER", "order_shared_stores", "passes_values_in_step",
           "meets_only_at_barriers", "waits_for_other_work_items"]

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


def _scan(events, loaded: bool) -> tuple[list[int], bool]:
    """The stores among *events* ((line position, event), in the order a path meets
    them) that a load reaches without passing a barrier (*loaded*: one reaches the
    first event), each of which gets a barrier, and whether a load reaches past the
    last event."""
    out = []
    for i, e in events:
        if e == _STORE:
            if loaded:
                out.append(i)
                loaded = False  # (its barrier orders the stores met after it too)
        else:
            loaded = e == _LOAD
    return out, loaded


def _reaching(bl, events, edges: dict) -> dict:
    """Whether a load reaches each block of *bl* (its *events* in the order met)
    without passing a barrier, along *edges* (label: the labels it is entered from):
    the least fixed point, one pass per change."""
    leave = {b.label: (_scan(ev, False)[1], _scan(ev, True)[1])
             for b, ev in zip(bl, events)}
    reached = {b.label: False for b in bl}
    changed = True
    while changed:
        changed = False
        for b in bl:
            if not reached[b.label] and any(
                    lab in reached and leave[lab][reached[lab]]
                    for lab in edges[b.label]):
                reached[b.label] = changed = True
    return reached


def _stores_to_order(body, shared: int, generic: int
                     ) -> tuple[list[int], list[int]]:
    """The positions in the function body *body* of the stores to work-group memory
    from which a load of it can be reached without passing a barrier (another lane's
    load must see what they wrote: a barrier after), and of those that can be reached
    from such a load (another lane's load must not see what they write: a barrier
    before); of stores met in a row, one."""
    bl = blocks(body)
    events = [[(i, e) for i in b.lines if (e := _event(body[i], shared, generic))]
              for b in bl]
    if not any(e == _STORE for ev in events for _, e in ev):
        return [], []
    preds: dict = {b.label: [] for b in bl}
    for b in bl:
        for lab in b.succ:
            if lab in preds:
                preds[lab].append(b.label)
    backward = [ev[::-1] for ev in events]
    fwd = _reaching(bl, events, preds)
    bwd = _reaching(bl, backward, {b.label: b.succ for b in bl})
    before = [i for b, ev in zip(bl, events) for i in _scan(ev, fwd[b.label])[0]]
    after = [i for b, ev in zip(bl, backward) for i in _scan(ev, bwd[b.label])[0]]
    return after, before


def meets_only_at_barriers(text: str, shared: int, generic: int) -> bool:
    """Whether no store to work-group memory in *text* needs ordering against another
    lane's load (:func:`order_shared_stores` would add nothing): its lanes read what
    others wrote, and write what others read, only across a barrier or atomically."""
    _, _, after, before = _stores_to_fence(text, shared, generic)
    return not (after or before)


@functools.lru_cache(maxsize=2)
def _stores_to_fence(text: str, shared: int, generic: int
                     ) -> tuple[str, tuple[str, ...], frozenset[int], frozenset[int]]:
    """*text* through :func:`irinfer.infer_address_spaces`, its lines, and the positions
    of the stores to work-group memory (address space *shared*) that need a barrier
    after them and before them (:func:`_stores_to_order`).  (Kept for the last texts:
    the compile asks :func:`passes_values_in_step` and then orders the same text's
    stores.)"""
    text = infer_address_spaces(text, generic)
    if "store" not in text:
        return text, (), frozenset(), frozenset()
    ls = tuple(text.split("\n"))
    after: set[int] = set()
    before: set[int] = set()
    for f in lx.functions(ls):
        a, b = _stores_to_order(ls[f.start:f.stop], shared, generic)
        after.update(f.start + i for i in a)
        before.update(f.start + i for i in b)
    return text, ls, frozenset(after), frozenset(before)


def passes_values_in_step(text: str, shared: int, generic: int) -> bool:
    """Whether a function of *text* has a store to work-group memory (address space
    *shared*) that a load of it can follow with no barrier between: code whose lanes
    may pass values in step, which :func:`order_shared_stores` would order.  (A store
    that only follows such a load, as every step of a tree reduction with a barrier
    at each does, does not count: it asks a warp's lanes to run in step only where a
    lane's load and another lane's store meet in one statement.)"""
    return bool(_stores_to_fence(text, shared, generic)[2])


@checked
def order_shared_stores(text: str, shared: int, generic: int,
                        barrier: str = SG_BARRIER) -> str:
    """*text* with a call of *barrier* after every store to work-group memory (address
    space *shared*, in the module's own numbering) from which a load of it can be
    reached without passing a barrier, and before every store that can be reached
    from such a load (the module description), so that a warp's lanes see each
    other's stores as lanes that run in step do.  Stores are found through
    :func:`irinfer.infer_address_spaces`, whose rewrite the text keeps."""
    text, ls, after, before = _stores_to_fence(text, shared, generic)
    if not (after or before):
        return text
    call = f"  call void {lx.spell_global(barrier)}()"
    out = []
    for k, ln in enumerate(ls):
        if k in before:
            out.append(call)
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


#: the atomic operations a lock is taken with: compare-and-swap (its expected value a
#: constant) and exchange (of a constant, its old value tested)
_CAS, _EXCH = "__gpux_atomic_cas_", "__gpux_atomic_exch_"


def _takes_a_lock(body: list[str], i: int) -> bool:
    """Whether line *i* of *body* is an atomic compare-and-swap that expects a constant
    and writes another value, or an exchange of a constant whose old value is
    compared."""
    ln = body[i]
    if "__gpux_atomic_" not in ln:
        return False
    toks = lx.line_tokens(ln)
    at = lx.callee(toks)
    if at is None or not lx.name(toks[at]).startswith((_CAS, _EXCH)):
        return False
    p = lx.skip(toks, at + 1)
    args = lx.split_depth0([t for t in toks[p + 1:lx.match_paren(toks, p)] if lx.is_code(t)])
    # (ptr p, iN expected, iN new) or (ptr p, iN value): the operand's last token
    const = [bool(a) and lx.kind(a[-1]) is lx.NUMBER for a in args]
    if lx.name(toks[at]).startswith(_CAS):  # (expecting c and writing c: a read, no lock)
        return len(const) == 3 and const[1] and args[2][-1:] != args[1][-1:]
    if len(const) != 2 or not const[1]:
        return False
    name = ln.lstrip().split(" ", 1)[0]  # (%x = call ...: its value, compared)
    return name.startswith("%") and any(
        "icmp" in other and name in lx.line_tokens(other) for other in body)


def waits_for_other_work_items(text: str) -> bool:
    """Whether a function of *text* takes a lock in a loop (:func:`_takes_a_lock` inside
    a cycle of its blocks): a work-item that may wait there for another."""
    ls = text.split("\n")
    for f in lx.functions(ls):
        body = ls[f.start:f.stop]
        if not any("__gpux_atomic_" in ln for ln in body):
            continue
        bl = blocks(body)
        succ = {b.label: b.succ for b in bl}
        for comp in strongly_connected([b.label for b in bl], succ):
            if len(comp) == 1 and comp[0] not in succ[comp[0]]:
                continue  # (not a loop)
            inside = set(comp)
            if any(_takes_a_lock(body, i) for b in bl if b.label in inside for i in b.lines):
                return True
    return False
