"""Control flow made reducible, by giving each extra entry of a loop its own copy.

The barrier rewrite (``converge.py``) resumes the work-items after each barrier at the
block that follows it.  A loop of the kernel's that holds such a block and can also go
round without passing the barrier (an outer loop around ``for j in range(ks[a]): ...
syncthreads() ...``, whose inner loop may run no iteration) is then entered in two
places, at its header and at that block: control flow that is irreducible.  Drivers
that vectorize work-items may give up on it: Intel's CPU driver then runs the kernel
with sub-groups of one work-item, whatever width the kernel requires (and reports the
width it was asked for), so warp shuffles and lanes in lockstep give wrong answers.

:func:`make_reducible` finds each strongly connected region of blocks entered at more
than one block (within the loops it nests in) and gives every entry but the first a
copy of the region, which the edges from outside to that entry now reach (node
splitting).  It works on a body whose values do not cross blocks (after LLVM's reg2mem,
as in the barrier rewrite): a region whose values are used outside it, or a phi on
its way, is left as it is, as is a body that would grow past a bound.

Layer 1: reads and writes text through the IR lexer only.
"""

from __future__ import annotations

from . import irlex as lx
from .divergence import blocks

__all__ = ["make_reducible", "irreducible_region", "strongly_connected"]

_PREFIX = "gpux.red."
#: copies made in one body at most (each a region's worth of lines)
_MAX_COPIES = 16


def strongly_connected(nodes: list, succ: dict) -> list[list]:
    """The strongly connected components of the graph *succ* restricted to *nodes*
    (Tarjan's algorithm, without recursion), each in *nodes*' order."""
    inside = set(nodes)
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter([s for s in succ[root] if s in inside]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter([s for s in succ[w] if s in inside])))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                order = {n: k for k, n in enumerate(nodes)}
                out.append(sorted(comp, key=order.__getitem__))
    return out


def irreducible_region(succ: dict, order: list):
    """A region of the graph *succ* (label -> successor labels; *order* the labels in
    body order) entered at more than one block, as ``(blocks, entries)`` in body
    order, or None where the graph is reducible: each cycle has one entry once the
    loops around it are taken apart at their headers."""
    preds: dict = {n: [] for n in order}
    for n in order:
        for s in succ[n]:
            preds[s].append(n)
    todo = [order]
    while todo:
        nodes = todo.pop()
        for comp in strongly_connected(nodes, succ):
            members = set(comp)
            if len(comp) == 1 and comp[0] not in succ[comp[0]]:
                continue
            entries = [n for n in comp if any(p not in members for p in preds[n])]
            if len(entries) > 1:
                return comp, entries
            if entries:
                todo.append([n for n in comp if n != entries[0]])
    return None


def _copy(body, bl, region, fresh, k):
    """The lines of a copy of the blocks *region* (labels and the values they define
    renamed; *bl* the body's blocks), and {old label: new label}; None where a value of
    the region is used outside it or a phi meets it."""
    members = set(region)
    inside = [b for b in bl if b.label in members]
    defined = set()
    for b in inside:
        for i in b.lines:
            toks = lx.line_tokens(body[i])
            v = lx.defined_value(toks)
            if v is not None:
                if lx.instruction(toks)[0] == "phi":
                    return None
                defined.add(v)
    for b in bl:
        if b.label in members:
            continue
        for i in b.lines:
            toks = lx.line_tokens(body[i])
            if lx.instruction(toks)[0] == "phi" and any(t in members for t in toks):
                return None
            if defined.intersection(lx.local_names(body[i])):
                return None
    renamed = {t: fresh.fresh(f"{_PREFIX}{k}.{lx.name(t)}") for t in (*defined, *region)}
    lines = []
    for b in sorted(inside, key=lambda b: region.index(b.label)):
        lines.append(lx.quote(lx.name(renamed[b.label])) + ":")
        lines += ["".join(renamed.get(t, t) for t in lx.line_tokens(body[i])) for i in b.lines]
    return lines, renamed


def make_reducible(body: list[str]) -> list[str]:
    """The function body *body* (its lines between ``define`` and ``}``, every value
    that crosses blocks in memory) with each region that is entered at more than one
    block copied for every entry but its first (the module description); *body*
    itself where it is reducible or cannot be copied."""
    body = lx.lines("\n".join(body))  # an element may hold several lines
    fresh = lx.FreshNames([lx.line_tokens(ln) for ln in body])
    copies = 0
    while True:
        bl = blocks(body)
        if not bl or bl[0].label is None:
            return body
        succ = {b.label: list(b.succ) for b in bl}
        found = irreducible_region(succ, list(succ))
        if found is None:
            return body
        region, entries = found
        members = set(region)
        preds = {e: [b for b in bl if e in b.succ and b.label not in members]
                 for e in entries[1:]}
        out = list(body)
        tail = []
        for e in entries[1:]:
            copies += 1
            if copies > _MAX_COPIES:
                return body
            made = _copy(body, bl, region, fresh, copies)
            if made is None:
                return body
            lines, renamed = made
            tail += lines
            for b in preds[e]:  # the edges from outside to this entry reach its copy
                toks = lx.line_tokens(out[b.term])
                out[b.term] = "".join(renamed[e] if t == e else t for t in toks)
        body = out + tail
