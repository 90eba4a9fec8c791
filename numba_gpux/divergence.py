"""Which values and branches of a kernel may differ between the work-items of one group.

A kernel's body (its lines of LLVM IR, read through the IR lexer) as basic blocks
(:func:`blocks`), and a divergence analysis over them (:func:`divergent_values`):
values that come from a work-item's index, atomics, values loaded from addresses that
do, private variables stored to under a branch on such a value, and the phis that join
the two sides of such a branch at its immediate post-dominator.  The barrier rewrite
(``converge.py``) asks it which kernels need rewriting.

Layer 1: reads text through the IR lexer only.
"""

from __future__ import annotations

from . import irlex as lx

__all__ = ["SITES", "GRID_SITE", "PREDICATE_BARRIERS", "Block", "blocks", "callee_name",
           "labels_after", "sites_in", "immediate_post_dominators", "divergent_values"]

#: calls that are barriers of the whole work-group, each a site of the rewrite
SITES = frozenset(("__gpux_barrier", "__gpux_grid_barrier"))
#: the site that the whole group runs together in the dispatch
GRID_SITE = "__gpux_grid_barrier"
#: barriers that also reduce a predicate over the group: sites of the rewrite too
PREDICATE_BARRIERS = frozenset(("__gpux_barrier_and", "__gpux_barrier_or",
                                "__gpux_barrier_count"))
#: the functions that give a work-item's indices, and its block's shape, in the code
#: of a launch whose blocks run as one row (``lanes.flatten_block``)
FLAT_INDEX = ("__gpux_flat_thread_idx", "__gpux_flat_global_idx",
              "__gpux_flat_wide_global_idx")
FLAT_BLOCK_DIM = "__gpux_flat_block_dim"
#: intrinsics whose result differs between the work-items of a group
_DIVERGENT_PREFIXES = ("__gpux_thread_idx", "__gpux_global_idx", "__gpux_wide_global_idx",
                       "__gpux_sg_", "__gpux_ld_", *FLAT_INDEX)
#: intrinsics whose result is the same for the whole group, whatever their arguments
_UNIFORM = frozenset(("__gpux_block_idx", "__gpux_block_dim", "__gpux_grid_dim",
                      "__gpux_dynamic_shared", "__gpux_dynamic_shared_bytes", FLAT_BLOCK_DIM,
                      *PREDICATE_BARRIERS))
#: instructions whose result may differ between work-items whatever their operands
_SOURCES = frozenset(("atomicrmw", "cmpxchg", "alloca", "va_arg", "landingpad"))


class Block:
    """A basic block of a function body: its label token (``%name``; None for an
    entry block printed without a label), the positions of its lines in the body,
    its successors' label tokens, and its terminator's line and opcode."""

    __slots__ = ("label", "lines", "succ", "term", "term_op", "error")

    def __init__(self, label):
        self.label, self.lines, self.succ, self.term, self.term_op = label, [], [], None, None
        #: the successor that a status switch after a call takes when the callee raised
        #: (Numba's ``switch i32 %status, label %error [i32 -2, ...; i32 0, ...]``), else
        #: None: a work-item that goes there has failed the launch
        self.error = None

    def __repr__(self):
        return f"Block({self.label}, {len(self.lines)} lines, -> {self.succ})"


def callee_name(toks):
    at = lx.callee(toks)
    return lx.name(toks[at]) if at is not None and toks[at][0] == "@" else None


def labels_after(toks):
    """The label tokens a terminator names (each ``label %x``)."""
    out = []
    code = lx.code(toks)
    for k in range(len(code) - 1):
        if code[k] == "label" and code[k + 1][0] == "%":
            out.append(code[k + 1])
    return out


def blocks(body: list[str]) -> list[Block]:
    """The basic blocks of the function body *body* (its lines between ``define`` and
    ``}``), in order."""
    out: list[Block] = []
    cur = None
    cases = False  # within a switch's case list, which LLVM prints a case a line
    values: list = []  # the case values of the switch being read
    for i, line in enumerate(body):
        toks = lx.line_tokens(line)
        if cases and cur is not None:
            code = lx.code(toks)
            values += _case_values(code)
            for lab in labels_after(toks):  # "i32 -2, label %x" ... "]"
                if lab not in cur.succ:
                    cur.succ.append(lab)
            cases = "]" not in code
            if not cases:
                _note_status_switch(cur, values)
            if lx.instruction(toks)[0] is not None:  # (a case line is one of its lines)
                cur.lines.append(i)
            continue
        if lx.is_label(toks):
            c = lx.code(toks)
            cur = Block("%" + c[0])
            out.append(cur)
            continue
        op, _ = lx.instruction(toks)
        if op is None:
            continue
        if cur is None:
            cur = Block(None)
            out.append(cur)
        cur.lines.append(i)
        if op in ("br", "switch", "ret", "unreachable", "indirectbr", "invoke", "callbr",
                  "resume"):
            cur.term, cur.term_op = i, op
            cur.succ = labels_after(toks)
            code = lx.code(toks)
            cases = op == "switch" and "[" in code and "]" not in code
            if op == "switch":
                values = _case_values(code[code.index("[") + 1:] if "[" in code else [])
                if not cases:
                    _note_status_switch(cur, values)
    return out


def _case_values(code) -> list:
    """The case values among the code tokens *code* of a switch's case list
    (``i32 -2 , label %x`` ...)."""
    return [code[k + 1] for k in range(len(code) - 2)
            if code[k].startswith("i") and code[k + 2] == "," and code[k + 1] != "label"]


def _note_status_switch(blk: Block, values) -> None:
    """Numba's check of a callee's status (cases -2 and 0, its "no error" codes, the
    default the error): the default successor is the block's error edge."""
    if sorted(values) == ["-2", "0"] and blk.succ:
        blk.error = blk.succ[0]


def sites_in(body, blk: Block):
    """(line position, callee) of the sites and predicate barriers in *blk*."""
    found = []
    for i in blk.lines:
        if "call" not in body[i]:
            continue
        toks = lx.line_tokens(body[i])
        if lx.instruction(toks)[0] != "call":
            continue
        c = callee_name(toks)
        if c in SITES or c in PREDICATE_BARRIERS:
            found.append((i, c))
    return found


def immediate_post_dominators(blks: list[Block], skip_error: bool = False) -> dict:
    """Each block's immediate post-dominator (label -> label; absent where only the
    function's exit post-dominates it), by the iterative data-flow of post-dominator
    sets over the blocks, the exit joined to every block without successors.  With
    *skip_error*, the edges to where a callee raised (``Block.error``: a work-item that
    goes there has failed the launch) are left out."""
    labels = [b.label for b in blks]
    succ = {b.label: [s for s in b.succ if not (skip_error and s == b.error)] for b in blks}
    full = frozenset(labels)
    pdom = {lab: (frozenset((lab,)) if not succ[lab] else full) for lab in labels}
    changed = True
    while changed:
        changed = False
        for lab in reversed(labels):
            if not succ[lab]:
                continue
            meet = None
            for s in succ[lab]:
                got = pdom.get(s, frozenset((s,)))
                meet = got if meet is None else meet & got
            new = frozenset((lab,)) | (meet or frozenset())
            if new != pdom[lab]:
                pdom[lab] = new
                changed = True
    out = {}
    for lab in labels:
        strict = pdom[lab] - {lab}
        if strict:
            out[lab] = max(strict, key=lambda p: len(pdom[p]))
    return out


def _operand_groups(toks):
    """The code tokens of a load or store after its opcode, split at the commas at
    bracket depth 0."""
    code = lx.code(toks)
    k = next(j for j, t in enumerate(code) if t in ("load", "store"))
    return lx.split_depth0(code[k + 1:])


def _pointer(groups):
    """The local name that a load's or store's pointer operand (its second group) is,
    or None (a constant expression, or more than one name)."""
    ptr = lx.names_in(groups[1]) if len(groups) > 1 else []
    return ptr[0] if len(ptr) == 1 else None


def _store_operands(toks):
    """(the local names in a store's value, its pointer's local name or None)."""
    g = _operand_groups(toks)
    return lx.names_in(g[0]), _pointer(g)


def _load_pointer(toks):
    """A load's pointer's local name, or None."""
    return _pointer(_operand_groups(toks))


def _slots(body, blks) -> dict:
    """The private variables of *body*: {pointer: its alloca} for the allocas, and the
    address-space casts of them, used only as the pointer of loads and stores."""
    root, other = {}, set()
    for blk in blks:
        for i in blk.lines:
            toks = lx.line_tokens(body[i])
            op = lx.instruction(toks)[0]
            d = lx.definition(toks)
            name = toks[d[0]] if d else None
            used = [t for t in lx.names_in(toks) if t != name]
            if op == "alloca":
                root[name] = name
                continue
            if op in ("addrspacecast", "bitcast") and len(used) == 1 and used[0] in root:
                root[name] = root[used[0]]
                continue
            if op == "load":
                ptr = _load_pointer(toks)
                other.update(t for t in used if t != ptr)
            elif op == "store":
                value, ptr = _store_operands(toks)
                other.update(value)
                other.update(t for t in used if t not in value and t != ptr)
            else:
                other.update(used)
    bad = {root[p] for p in other if p in root}
    return {p: r for p, r in root.items() if r not in bad}


def divergent_values(body, blks: list[Block]) -> tuple[set, set]:
    """The local values whose value may differ between the work-items of a group, and
    the labels of the blocks whose terminator branches on one."""
    users: dict[str, list[str]] = {}  # value -> the values that follow it
    div: set[str] = set()
    work: list[str] = []
    phis: dict[str, list[str]] = {}  # block label -> the phis it holds
    # a private variable (an alloca only loaded and stored through) is a value of its
    # own, named by the alloca: what is stored into it flows to what is loaded from it
    slots = _slots(body, blks)
    stored_in: dict[str, set[str]] = {}  # block label -> the slots stored to there

    def flows(src, dst):
        users.setdefault(src, []).append(dst)

    for blk in blks:
        for i in blk.lines:
            toks = lx.line_tokens(body[i])
            op = lx.instruction(toks)[0]
            if op == "store":
                value, ptr = _store_operands(toks)
                if ptr in slots:
                    stored_in.setdefault(blk.label, set()).add(slots[ptr])
                    for v in value:
                        flows(v, slots[ptr])
                continue
            d = lx.definition(toks)
            if d is None:
                continue
            name = toks[d[0]]
            if op == "load" and _load_pointer(toks) in slots:
                flows(slots[_load_pointer(toks)], name)
                continue
            if op == "phi" and blk.label is not None:
                phis.setdefault(blk.label, []).append(name)
            source = op in _SOURCES and name not in slots
            follows = True
            if op == "call":
                c = callee_name(toks)
                source = c is None or (c.startswith(_DIVERGENT_PREFIXES) or not (
                    c in _UNIFORM or c.startswith(("__gpux_", "llvm."))))
                follows = c not in _UNIFORM  # its result never follows its arguments
            if follows:
                for o in lx.names_in(toks[d[1]:]):
                    if o != name:
                        flows(o, name)
            if source:
                div.add(name)
                work.append(name)
    label_of = {blk.label: blk for blk in blks}
    branches: set[str] = set()
    # (where a callee raised is no join: a work-item that goes there has failed the launch)
    ipdom = immediate_post_dominators(blks, skip_error=True)

    def reach(start, avoid):
        """The blocks reachable from *start* without passing *avoid* (or where a callee
        raised)."""
        if start == avoid:
            return set()
        seen, stack = {start}, [start]
        while stack:
            b = label_of.get(stack.pop())
            for s in (b.succ if b is not None else ()):
                if s not in seen and s != avoid and s != b.error:
                    seen.add(s)
                    stack.append(s)
        return seen

    while True:
        while work:
            v = work.pop()
            for u in users.get(v, ()):
                if u not in div:
                    div.add(u)
                    work.append(u)
        # a branch on a divergent value, and the phis that join its two sides
        new = False
        for blk in blks:
            if (blk.label in branches or blk.term is None or len(set(blk.succ)) < 2
                    or blk.error is not None):  # (a raise fails the launch: not a part)
                continue
            toks = lx.line_tokens(body[blk.term])
            if not any(t in div for t in lx.names_in(toks) if t not in blk.succ):
                continue
            branches.add(blk.label)
            new = True
            # the phis where the two sides of the branch join: at its immediate post
            # dominator, or at a block two sides reach before they meet there
            join = ipdom.get(blk.label)
            sides = [reach(s, join) for s in set(blk.succ)]
            for j, names in phis.items():
                if j == join or sum(1 for side in sides if j in side) >= 2:
                    for p in names:
                        if p not in div:
                            div.add(p)
                            work.append(p)
            # a private variable stored to on one side holds a divergent value after
            for lab in set().union(*sides) if sides else ():
                for a in stored_in.get(lab, ()):
                    if a not in div:
                        div.add(a)
                        work.append(a)
        if not new and not work:
            return div, branches
