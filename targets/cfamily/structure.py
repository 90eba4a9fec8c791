"""Structured control flow from a CFG, without ``goto`` (MSL has none).

Two steps:

1. :func:`structure` builds a tree of blocks, loops and branches from the
   dominator tree, after N. Ramsey, "Beyond Relooper" (ICFP 2022): a loop
   header becomes a loop; a node with two or more forward in-edges (a merge
   node) follows a labelled block that its predecessors leave; every other
   node is placed inline at its only forward in-edge.
2. :func:`lower_jumps` turns the tree's jumps into C: a jump that control
   would reach anyway by falling through is dropped; a jump to the innermost
   loop is ``continue``, out of the innermost construct ``break``; a labelled
   block that is still jumped to becomes ``do { ... } while (0)``; the rare
   jump across several constructs sets a jump variable that each construct
   checks on its way out.

An irreducible CFG has no such tree; :func:`structure` returns None and the
emitter falls back to a state machine (``while (1) switch (state)``).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["structure", "lower_jumps", "SBlock", "SLoop", "SIf", "SBr", "SCode", "SMoves",
           "SRet", "SUnreachable", "CBreak", "CContinue", "CJump", "CDispatch", "rpo_order"]


# ------------------------------------------------------------------ the structured tree

@dataclass
class SCode:
    block: str            # the block's instructions, its terminator excluded


@dataclass
class SMoves:
    src: str              # phi assignments on the edge src -> dst
    dst: str


@dataclass
class SIf:
    block: str            # whose terminator decides
    arms: list            # [(key, [stmts])]: key "true"/"false" (br) or tuple of case values; None = else


@dataclass
class SBr:
    label: int


@dataclass
class SBlock:
    label: int
    body: list
    follower: str
    materialized: bool = False


@dataclass
class SLoop:
    label: int
    body: list
    header: str


@dataclass
class SRet:
    block: str


@dataclass
class SUnreachable:
    pass


# C-level jumps produced by lower_jumps
@dataclass
class CBreak:
    pass


@dataclass
class CContinue:
    pass


@dataclass
class CJump:
    label: int            # jump variable := label, then break


@dataclass
class CDispatch:
    """After a construct: ``if (jump == L) { jump = 0; break|continue; }`` / pass on."""

    here: int | None      # label of the enclosing construct that is a target, if any
    here_is_loop: bool
    outer: bool           # some pending jump goes further out: break


# ------------------------------------------------------------------ CFG analysis

def rpo_order(entry: str, succs: dict) -> list[str]:
    seen, order = set(), []
    stack = [(entry, iter(succs[entry]))]
    seen.add(entry)
    while stack:
        node, it = stack[-1]
        for s in it:
            if s not in seen:
                seen.add(s)
                stack.append((s, iter(succs[s])))
                break
        else:
            order.append(node)
            stack.pop()
    order.reverse()
    return order


def _idoms(order: list[str], preds: dict) -> dict:
    num = {b: i for i, b in enumerate(order)}
    idom = {order[0]: order[0]}
    changed = True
    while changed:
        changed = False
        for b in order[1:]:
            ps = [p for p in preds[b] if p in idom]
            if not ps:
                continue
            new = ps[0]
            for p in ps[1:]:
                a, c = p, new
                while a != c:
                    while num[a] > num[c]:
                        a = idom[a]
                    while num[c] > num[a]:
                        c = idom[c]
                new = a
            if idom.get(b) != new:
                idom[b] = new
                changed = True
    return idom


def _dominates(a: str, b: str, idom: dict) -> bool:
    while True:
        if a == b:
            return True
        if idom[b] == b:
            return False
        b = idom[b]


def structure(func):
    """The structured tree (a list of statements) of *func*, or None if its CFG is irreducible."""
    entry = func.blocks[0].name
    succs = {b.name: b.succs for b in func.blocks}
    order = rpo_order(entry, succs)
    rpo = {b: i for i, b in enumerate(order)}
    preds: dict[str, list] = {b: [] for b in order}
    for b in order:
        for s in succs[b]:
            preds[s].append(b)
    idom = _idoms(order, preds)
    children: dict[str, list] = {b: [] for b in order}
    for b in order[1:]:
        children[idom[b]].append(b)
    loop_header = set()
    fwd_in: dict[str, int] = {b: 0 for b in order}
    for b in order:
        for s in dict.fromkeys(succs[b]):
            if rpo[s] <= rpo[b]:
                if not _dominates(s, b, idom):
                    return None  # irreducible
                loop_header.add(s)
            else:
                fwd_in[s] += 1
    is_merge = {b: fwd_in[b] >= 2 for b in order}
    labels = [0]

    def new_label():
        labels[0] += 1
        return labels[0]

    def find(ctx, kind, node):
        for k, n, lab in ctx:
            if k == kind and n == node:
                return lab
        raise AssertionError(f"no enclosing {kind} for {node}")

    def has_phis(b):
        return any(i.op == "phi" for i in func.block(b).insts)

    def do_tree(x, ctx):
        merges = sorted((c for c in children[x] if is_merge[c]), key=rpo.get)
        if x in loop_header:
            lab = new_label()
            return [SLoop(lab, node_within(x, merges, [("loop", x, lab)] + ctx), x)]
        return node_within(x, merges, ctx)

    def node_within(x, ys, ctx):
        if ys:
            y = ys[-1]
            lab = new_label()
            inner = node_within(x, ys[:-1], [("block", y, lab)] + ctx)
            return [SBlock(lab, inner, y)] + do_tree(y, ctx)
        out: list = [SCode(x)]
        term = func.block(x).term
        if term.op == "br":
            if len(term.blocks) == 1 or term.blocks[0] == term.blocks[1]:
                out += do_branch(x, term.blocks[0], ctx)
            else:
                out.append(SIf(x, [("true", do_branch(x, term.blocks[0], ctx)),
                                   (None, do_branch(x, term.blocks[1], ctx))]))
        elif term.op == "switch":
            by_dest: dict[str, list] = {}
            for v, d in term.cases:
                if d != term.blocks[0]:
                    by_dest.setdefault(d, []).append(v)
            arms = [(tuple(vs), do_branch(x, d, ctx)) for d, vs in by_dest.items()]
            arms.append((None, do_branch(x, term.blocks[0], ctx)))
            out.append(SIf(x, arms) if len(arms) > 1 else arms[0][1])
        elif term.op == "ret":
            out.append(SRet(x))
        else:
            out.append(SUnreachable())
        return out

    def do_branch(src, tgt, ctx):
        pre = [SMoves(src, tgt)] if has_phis(tgt) else []
        if rpo[tgt] <= rpo[src]:
            return pre + [SBr(find(ctx, "loop", tgt))]
        if is_merge[tgt]:
            return pre + [SBr(find(ctx, "block", tgt))]
        return pre + do_tree(tgt, ctx)

    return do_tree(entry, [])


# ------------------------------------------------------------------ jumps to C

def lower_jumps(tree: list) -> tuple[list, bool]:
    """Resolve every SBr of *tree* into C jumps (in place).  Returns (tree, uses_jump_var)."""
    materialized: set[int] = set()
    kinds: dict[int, str] = {}

    def collect(seq):
        for s in seq:
            if isinstance(s, SBlock):
                kinds[s.label] = "block"
                collect(s.body)
            elif isinstance(s, SLoop):
                kinds[s.label] = "loop"
                collect(s.body)
            elif isinstance(s, SIf):
                for _, arm in s.arms:
                    collect(arm)

    collect(tree)
    # resolution: (stmt id) -> C node; iterate until the set of real blocks is stable
    while True:
        plan: dict[int, object] = {}
        needed: set[int] = set()
        pending: dict[int, set] = {}   # construct label -> labels of jumps passing out of it

        def walk(seq, fall: frozenset, stack: list, after: dict):
            for i, s in enumerate(seq):
                last = i == len(seq) - 1
                f = fall if last else frozenset()
                if isinstance(s, SBr):
                    L = s.label
                    if L in f:
                        plan[id(s)] = None
                        continue
                    inner = stack[-1] if stack else None
                    if inner == L:
                        plan[id(s)] = CContinue() if kinds[L] == "loop" else CBreak()
                        if kinds[L] == "block":
                            needed.add(L)
                        continue
                    if inner is not None and L in after[inner]:
                        plan[id(s)] = CBreak()
                        continue
                    plan[id(s)] = CJump(L)
                    if kinds[L] == "block":
                        needed.add(L)
                    for c in reversed(stack):
                        if c == L:
                            break
                        pending.setdefault(c, set()).add(L)
                elif isinstance(s, SBlock):
                    real = s.label in materialized
                    after[s.label] = f
                    walk(s.body, frozenset({s.label}), stack + ([s.label] if real else []), after)
                elif isinstance(s, SLoop):
                    after[s.label] = f
                    walk(s.body, frozenset({s.label}), stack + [s.label], after)
                elif isinstance(s, SIf):
                    for _, arm in s.arms:
                        walk(arm, f, stack, after)

        walk(tree, frozenset(), [], {})
        if needed <= materialized:
            break
        materialized |= needed

    uses_var = False

    def rebuild(seq, stack):
        nonlocal uses_var
        out = []
        for s in seq:
            if isinstance(s, SBr):
                c = plan[id(s)]
                if c is not None:
                    out.append(c)
                    uses_var |= isinstance(c, CJump)
            elif isinstance(s, SBlock):
                real = s.label in materialized
                body = rebuild(s.body, stack + ([s.label] if real else []))
                if real:
                    s.body, s.materialized = body, True
                    out.append(s)
                    out.extend(_dispatch(s.label, stack))
                else:
                    out.extend(body)
            elif isinstance(s, SLoop):
                s.body = rebuild(s.body, stack + [s.label])
                out.append(s)
                out.extend(_dispatch(s.label, stack))
            elif isinstance(s, SIf):
                s.arms = [(k, rebuild(arm, stack)) for k, arm in s.arms]
                out.append(s)
            else:
                out.append(s)
        return out

    def _dispatch(label, stack):
        outgoing = pending.get(label)
        if not outgoing:
            return []
        parent = stack[-1] if stack else None
        here = parent if parent in outgoing else None
        outer = bool(outgoing - {parent})
        return [CDispatch(here, here is not None and kinds[here] == "loop", outer)]

    return rebuild(tree, []), uses_var
