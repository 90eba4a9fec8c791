"""Barriers that work-items which have returned still meet.

On CUDA a thread that has returned no longer counts at its block's barriers:
``if i >= n: return`` before ``cuda.syncthreads()`` is the usual way to write a
kernel whose last block reaches past the data, and numba.cuda's own examples
synchronize the grid inside a branch that only some threads take.  OpenCL and Metal
require every work-item of a work-group to reach each barrier; one that control flow
reaches in some work-items only is undefined, and Intel's CPU driver then skips the
rest of the kernel for the whole group, without an error.

A target whose barriers wait for every work-item (``Target.barriers_skip_exited``
False) gets such kernels rewritten, the same way for every target, so that the
work-group meets all its barriers at one place:

1. pure computations whose operands the entry block has (indices, array addresses)
   move into the entry block (:func:`hoist_to_entry`), and the kernel's barrier
   calls (:data:`SITES`), its *sites*, are each made to end their basic block
   (:func:`split_sites`);
2. LLVM's reg2mem puts every value that crosses a block into a private variable
   (:func:`rewrite` runs it between the two text rewrites);
3. each site becomes "note where the group goes on, go to the dispatch", and each
   ``ret`` "count myself out, go to the dispatch" (:func:`add_dispatch`).  The
   dispatch block holds the kernel's one barrier; after it the group reads, from
   four words of work-group memory, whether every work-item has returned (the kernel
   ends), whether a grid barrier is due (the whole group runs it: its leader may be a
   work-item that has returned, as a CUDA block's arrival at the grid barrier is one
   thread's for the block), and where the work-items still running go on (or, in a
   kernel whose running work-items may meet different barriers, each where it
   stopped: on CUDA a block's barriers count threads wherever they are met).  A
   work-item that has returned waits for the next round.  The entry block stays
   before the dispatch loop; every other block is reached through it.

The optimizer's SROA turns the private variables back into registers.  The rewrite
runs only where it can matter (:func:`needs_rewrite`, on ``divergence.py``'s analysis):
the kernel has a site, and a
branch whose condition may differ between work-items of one group (it depends on a
work-item's index, an atomic, a value loaded at such an address, ...) after which
one side returns or meets a site other than the one the other side meets first.
Kernels whose barriers every work-item reaches (loops with bounds the same for the
group, ``if tid < s:`` blocks that join again before the barrier) are unchanged.

Barriers that reduce a predicate (``syncthreads_count``, ``_and``, ``_or``) are sites
too: a work-item adds its predicate (for ``_and``, whether it is false) to a word of
the round with a work-group atomic, and reads the group's result after the dispatch's
barrier (:func:`word_count`: six more words, a true and a false count per round), so
that, as on CUDA, the work-items that have returned are not counted.

Not rewritten: kernels that call a function (not inlined) that meets a barrier, and
kernels whose entry block has no label (printed LLVM IR always has one for a
function the compiler wrapped).

Layer 1: reads and writes text through the IR lexer only.
"""

from __future__ import annotations

from . import irlex as lx
from . import irtext
from .divergence import (FLAT_BLOCK_DIM, FLAT_INDEX, GRID_SITE, PREDICATE_BARRIERS, SITES, Block, blocks, callee_name,
                         divergent_values, immediate_post_dominators, labels_after, sites_in)
from .errors import InternalCompilerError
from .reducible import make_reducible

__all__ = ["CalleeBarrier", "SITES", "GRID_SITE", "PREDICATE_BARRIERS", "rewrite", "needs_rewrite", "analyse",
           "word_count",
           "hoist_to_entry", "split_sites", "add_dispatch", "Block", "blocks"]

#: what a path from one side of a branch meets where the sides join (``analyse``)
_JOIN = object()

#: functions larger than this (in blocks) are rewritten without being analysed
_MAX_BLOCKS = 4000
_PREFIX = "gpux.conv."


class CalleeBarrier(Exception):
    """A kernel the rewrite would take calls a function (not inlined) that meets a
    barrier: the rewrite leaves the kernel as it is.  A limit of the rewrite, which the
    compiler reports as such (not as an internal error)."""


def needs_rewrite(body: list[str]) -> bool:
    """Whether the kernel body *body* may have work-items of one group that return, or
    meet different barriers, while others meet one (see the module's docstring)."""
    return analyse(body)[0]


def analyse(body: list[str]) -> tuple[bool, bool]:
    """(whether *body* needs the rewrite, whether the work-items of one group still
    running may meet different sites in one round: a branch that may part the group
    leads to two sites)."""
    blks = blocks(body)
    first: dict[str, object] = {}  # block label -> the site it starts with, if any
    has_site = False
    for blk in blks:
        sites = sites_in(body, blk)
        if sites:
            has_site = True
            first[blk.label] = sites[0][0]
    if not has_site:
        return False, False
    if len(blks) > _MAX_BLOCKS:
        return True, True
    label_of = {blk.label: blk for blk in blks}
    _, branches = divergent_values(body, blks)

    def events(start, join=None):
        """The sites, and "ret", that control first meets from block *start*; with
        *join*, a path that reaches that block first meets :data:`_JOIN` there."""
        out, seen, stack = set(), {start}, [start]
        while stack:
            lab = stack.pop()
            if lab == join:
                out.add(_JOIN)
                continue
            if lab in first:
                out.add(first[lab])
                continue
            b = label_of.get(lab)
            if b is None or b.term is None:
                continue
            if b.term_op == "ret":
                out.add("ret")
            for s in b.succ:
                if s not in seen and s != b.error:  # (not where a callee raised)
                    seen.add(s)
                    stack.append(s)
        return out

    # where the sides of each branch join again: a side that gets there without meeting
    # a site or returning has met nothing the other sides must match; what comes after
    # is the same for the whole group (a later branch that parts it is analysed itself)
    ipdom = immediate_post_dominators(blks, skip_error=True) if branches else {}
    needs = False
    for lab in branches:
        join = ipdom.get(lab)
        met: set = set()
        for s in set(label_of[lab].succ):
            met |= events(s, join)
        if met == {_JOIN}:
            continue  # every side reaches the join before any site or return
        if _JOIN in met:
            met = (met - {_JOIN}) | events(join)
        if len(met - {"ret"}) >= 2:
            return True, True
        needs = needs or len(met) >= 2
    return needs, False


def split_sites(body: list[str]) -> list[str]:
    """*body* with a branch to a new block after each site, so that every site ends
    its block; the phis of the successors of a block that was split name its last
    part.  The new blocks are labelled ``gpux.conv.resume.K``, K counting the sites.
    A predicate barrier that is the entry block's first site also starts a block,
    ``gpux.conv.pre``."""
    blks = blocks(body)
    out = list(body)
    inserts: dict[int, list[str]] = {}  # line -> the lines after it
    before: dict[int, list[str]] = {}
    relabel: dict[str, dict[str, str]] = {}  # successor -> {old block: its last part}
    k = 0
    for n, blk in enumerate(blks):
        found = sites_in(body, blk)
        if not found:
            continue
        if blk.label is None:
            raise ValueError("a site in an entry block without a label")
        if n == 0 and found[0][1] in PREDICATE_BARRIERS:
            # the entry block's code runs before the dispatch loop, where every
            # work-item also clears the group's words: a predicate counted there
            # could be cleared by a later work-item, so it is counted in a block of
            # its own, reached through the first round
            before[found[0][0]] = [f"  br label %{_PREFIX}pre", f"{_PREFIX}pre:"]
        last = None
        for i, _ in found:
            last = f"{_PREFIX}resume.{k}"
            inserts[i] = [f"  br label %{last}", f"{last}:"]
            k += 1
        for s in blk.succ:
            relabel.setdefault(s, {})[blk.label] = "%" + str(last)
    label_of = {blk.label: blk for blk in blks}
    for succ, names in relabel.items():
        b = label_of.get(succ)
        for i in (b.lines if b is not None else ()):
            toks = lx.line_tokens(out[i])
            if lx.instruction(toks)[0] != "phi":
                break
            out[i] = lx.join(_relabel_phi(toks, names))
    result = []
    for i, line in enumerate(out):
        result.extend(before.get(i, ()))
        result.append(line)
        result.extend(inserts.get(i, ()))
    return result


#: instructions that compute a value from their operands alone, without side effects
#: or traps: safe to run where the kernel would not have (``hoist_to_entry``)
_PURE_OPS = frozenset((
    "getelementptr", "add", "sub", "mul", "shl", "lshr", "ashr", "and", "or", "xor",
    "fadd", "fsub", "fmul", "fneg", "icmp", "fcmp", "select", "trunc", "zext", "sext",
    "fptrunc", "fpext", "fptoui", "fptosi", "uitofp", "sitofp", "ptrtoint", "inttoptr",
    "bitcast", "addrspacecast", "extractvalue", "insertvalue", "freeze"))
#: intrinsics that only read the launch's geometry or an array's offset
_PURE_CALLS = frozenset(("__gpux_thread_idx", "__gpux_global_idx", "__gpux_wide_global_idx",
                         "__gpux_block_idx", "__gpux_block_dim", "__gpux_grid_dim",
                         "__gpux_array_offset", *FLAT_INDEX, FLAT_BLOCK_DIM))


def _without_debug_records(body: list[str]) -> list[str]:
    """*body* without its debug records (``#dbg_value(...)`` lines, which describe the
    instruction after them): the rewrite moves instructions away from them.  Line
    locations (``!dbg`` on instructions) stay."""
    out = []
    for line in body:
        code = lx.code(lx.line_tokens(line))
        if not (code and code[0].startswith("#dbg_")):
            out.append(line)
    return out


def _name_numbered(body: list[str]) -> list[str]:
    """*body* with its numbered values and blocks (``%5``, ``5:``) given names
    (``%gpux.conv.n5``): LLVM's text must number them in order, which moving lines
    would break."""
    numbered = set()
    for line in body:
        toks = lx.line_tokens(line)
        if lx.is_label(toks):
            c = lx.code(toks)[0]
            if c.isdigit():
                numbered.add("%" + c)
            continue
        v = lx.defined_value(toks)
        if v is not None and v[1:].isdigit():
            numbered.add(v)
    if not numbered:
        return body
    out = []
    for line in body:
        toks = lx.line_tokens(line)
        if lx.is_label(toks) and lx.code(toks)[0].isdigit():
            c = lx.code(toks)[0]
            toks = [f"{_PREFIX}n{c}" if t == c else t for t in toks]
        else:
            toks = [f"%{_PREFIX}n{t[1:]}" if t in numbered else t for t in toks]
        out.append(lx.join(toks))
    return out


def hoist_to_entry(body: list[str]) -> list[str]:
    """*body* with the pure computations whose operands the entry block has (indices,
    array addresses: :data:`_PURE_OPS`, :data:`_PURE_CALLS`) moved to the end of the
    entry block, repeatedly.  The rewrite keeps the entry block before the dispatch
    loop, so what it computes stays one value for the whole kernel; computed after
    the entry block, such values would be carried around the dispatch loop and the
    driver's vectorizer would no longer see consecutive addresses."""
    body = _name_numbered(body)
    blks = blocks(body)
    if len(blks) < 2 or blks[0].term is None:
        return body
    have = set()
    for i in blks[0].lines:
        v = lx.defined_value(lx.line_tokens(body[i]))
        if v is not None:
            have.add(v)
    moved: list[int] = []
    taken: set[int] = set()
    changed = True
    while changed:
        changed = False
        for blk in blks[1:]:
            for i in blk.lines:
                if i == blk.term or i in taken:
                    continue
                toks = lx.line_tokens(body[i])
                d = lx.definition(toks)
                if d is None:
                    continue
                op = lx.instruction(toks)[0]
                if op == "call":
                    if callee_name(toks) not in _PURE_CALLS:
                        continue
                elif op not in _PURE_OPS:
                    continue
                name = toks[d[0]]
                if all(o in have for o in lx.names_in(toks[d[1]:]) if o != name):
                    moved.append(i)
                    taken.add(i)
                    have.add(name)
                    changed = True
    if not moved:
        return body
    term = blks[0].term
    return ([ln for i, ln in enumerate(body[:term]) if i not in taken]
            + [body[i] for i in moved]
            + [ln for i, ln in enumerate(body[term:], term) if i not in taken])


def _relabel_phi(toks, names: dict) -> list[str]:
    """The phi *toks* with each incoming block in *names* renamed."""
    toks = list(toks)
    k = 0
    while k < len(toks):
        if toks[k] == "[":
            end = lx.match_paren(toks, k)
            ci = [j for j in range(k + 1, end) if lx.is_code(toks[j])]
            if ci and toks[ci[-1]] in names:
                toks[ci[-1]] = names[toks[ci[-1]]]
            k = end
        k += 1
    return toks


def _dbg(toks) -> str:
    """The ``, !dbg !N`` attachment of an instruction line, or ""."""
    code = lx.code(toks)
    for k in range(len(code) - 1):
        if code[k] == "!dbg":
            return f", !dbg {code[k + 1]}"
    return ""


def word_count(body: list[str]) -> int:
    """How many int32 words of work-group memory the rewritten *body* uses: four, and
    six more where it calls a predicate barrier (per round, the counts of work-items
    whose predicate was true and false)."""
    return 10 if any(c in PREDICATE_BARRIERS for b in blocks(body) for _, c in sites_in(body, b)) \
        else 4


#: per predicate barrier: (whether it counts the false predicates, the comparison of
#: that count with 0 that is its result; None: the count itself)
_PREDICATES = {"__gpux_barrier_count": (False, None),
               "__gpux_barrier_or": (False, "ne"),
               "__gpux_barrier_and": (True, "eq")}


def _predicate(toks, callee: str, place: int, word, sp: str) -> list[str]:
    """The lines that count the predicate of the barrier call *toks* into this round's
    word of true (or, for ``and``, false) predicates; *word* spells a word's pointer,
    *sp* the pointer type of work-group memory."""
    at = lx.callee(toks)
    open_ = lx.skip(toks, at + 1)
    args = lx.code(toks[open_ + 1:lx.match_paren(toks, open_)])
    if not args:
        raise ValueError(f"no predicate in {lx.join(toks).strip()!r}")
    falses, _ = _PREDICATES[callee]
    p, q = "%" + _PREFIX, f"%{_PREFIX}q{place}"
    return [f"  {q}b = icmp {'eq' if falses else 'ne'} i32 {args[-1]}, 0",
            f"  {q}z = zext i1 {q}b to i32",
            f"  {q}s = load i32, ptr {p}slot, align 4",
            f"  {q}i = add i32 {q}s, {7 if falses else 4}",
            word(f"{q}i", f"q{place}p"),
            f"  {q}o = atomicrmw add {sp} {q}p, i32 {q}z seq_cst, align 4"]


def _predicate_result(toks, callee: str, place: int) -> list[str]:
    """The lines that define the result of the predicate barrier call *toks* after the
    dispatch, from the counts it read (``%gpux.conv.pt``, ``%gpux.conv.pf``)."""
    r = lx.defined_value(toks)
    if r is None:
        return []
    falses, cmp = _PREDICATES[callee]
    p = "%" + _PREFIX
    count = f"{p}pf" if falses else f"{p}pt"
    if cmp is None:
        return [f"  {r} = add i32 {count}, 0"]
    return [f"  {p}q{place}r = icmp {cmp} i32 {count}, 0",
            f"  {r} = zext i1 {p}q{place}r to i32"]


def add_dispatch(body: list[str], shared: int, words: str, loop: str,
                 mixed: bool = False) -> list[str]:
    """The body *body* (split by :func:`split_sites`, then put through reg2mem) with its
    sites and returns going through one dispatch block (the module's docstring, step
    3).  *words* names four int32 of work-group memory (a global of address space
    *shared*): the count of work-items that have returned, then three rounds' words
    of what the group learns at the next dispatch barrier: bit 0, every work-item has
    returned; bit 1, the work-items still running are at a grid barrier; bit 2, no
    barrier follows the place they go on, so that the work-items that have returned
    end with the group; from bit 8, that place (1 the start, 2 + K after site K).
    Where the work-items still running all meet the same site, the place is the same
    for the group, and a work-item only asks whether it has returned itself.  Where
    they may meet different sites (*mixed*, :func:`analyse`), each keeps its own
    place in a private variable and goes on there: as on CUDA, where a block's
    ``syncthreads`` calls are one barrier that counts threads, wherever they call
    it.  Bit 2 then says that some work-item still running meets a barrier after its
    place (the work-items that have returned end once none does).

    Each word is written in the round before the barrier that ends it, read after
    that barrier, and cleared in the round after the one that read it: the three
    rounds never touch one word at once, so every work-item reads the same value with
    one plain barrier a round.  A body with predicate barriers has six words more
    (:func:`word_count`), each round's count of true and of false predicates, which
    follow the same rule.  *loop* is the metadata node (``!N``) that every branch
    back to the dispatch carries: it asks the optimizer not to unroll or peel the
    dispatch loop, which would make two places of its one barrier."""
    blks = blocks(body)
    label_of = {b.label: b for b in blks}
    out = list(body)
    p, sp = "%" + _PREFIX, lx.spell_ptr(shared)
    nwords = word_count(body)
    grid_call = None
    dbg = ""
    back = f"  br label {p}dispatch, !llvm.loop {loop}"
    prefix: dict[int, list[str]] = {}  # line -> lines to put before it

    def word(slot: str, name: str) -> str:  # the pointer to word *slot*
        return (f"  {p}{name} = getelementptr inbounds [{nwords} x i32], {sp} {words}, "
                f"i32 0, i32 {slot}")

    def note(bits: int, tag: str) -> list[str]:  # set *bits* in this round's word
        return [f"  {p}{tag}s = load i32, ptr {p}slot, align 4",
                f"  {p}{tag}i = add i32 {p}{tag}s, 1",
                word(f"{p}{tag}i", f"{tag}p"),
                f"  {p}{tag}o = atomicrmw or {sp} {p}{tag}p, i32 {bits} seq_cst, align 4"]

    # the sites: block label -> (line, callee, label of the block after it)
    sites: dict = {}
    for blk in blks:
        for i, c in sites_in(body, blk):
            toks = lx.line_tokens(body[i])
            term = lx.line_tokens(body[blk.term]) if blk.term is not None else []
            nxt = labels_after(term)
            if len(nxt) != 1 or not lx.name(nxt[0]).startswith(_PREFIX + "resume."):
                raise ValueError(f"site {lx.join(toks).strip()!r} does not end its block")
            sites[blk.label] = (i, c, nxt[0])

    def region(starts) -> set:
        """The blocks control reaches from *starts* up to the next site (its block
        included) or return."""
        seen, stack = set(starts), list(starts)
        while stack:
            lab = stack.pop()
            if lab in sites:
                continue
            for s in label_of[lab].succ:
                if s not in seen:
                    seen.add(s)
                    stack.append(s)
        return seen

    # The entry block keeps its code, before the dispatch loop: what it computes
    # (indices, array addresses) stays plain values.  Its branch moves to the start
    # block, where the first round sends every work-item (unless the entry block ends
    # at a site).  Every block in the loop is then reached through the dispatch only:
    # a loop entered at two blocks made Intel's OpenCL CPU driver crash, and a loop
    # entered from code past a barrier of its own made it hang.
    entry = blks[0]
    resumes: list[tuple[int, str]] = []  # (place, label)
    for lab, (i, c, nxt) in sites.items():
        place = 2 + int(lx.name(nxt).rsplit(".", 1)[1])
        toks = lx.line_tokens(body[i])
        dbg = dbg or _dbg(toks)
        bits = 0 if mixed else place << 8
        if c == GRID_SITE:
            grid_call = grid_call or lx.join(toks).strip()
            bits |= 2
        last_round = not region([nxt]) & set(sites)  # no barrier after this one
        if last_round != mixed:
            bits |= 4
        arrive = note(bits, f"k{place}")
        if mixed:
            arrive.append(f"  store i32 {place}, ptr {p}mine, align 4")
        if c in PREDICATE_BARRIERS:
            arrive = _predicate(toks, c, place, word, sp) + arrive
            term = label_of[lab].term
            # the result is the group's, known after the barrier: it is defined at
            # the start of the block after the site, with what reg2mem put after it
            first = label_of[nxt].lines[0]
            prefix[first] = _predicate_result(toks, c, place) + [
                out[j] for j in range(i + 1, term) if out[j].strip()]
            for j in range(i + 1, term):
                out[j] = ""
        out[i] = "\n".join(arrive)
        out[label_of[lab].term] = back
        resumes.append((place, nxt))
    for blk in blks:
        if blk.term_op == "ret":
            out[blk.term] = f"  br label {p}leave"
    sited = entry.label in sites
    kinds = {i: lx.instruction(lx.line_tokens(body[i]))[0] for i in entry.lines}
    head = [f"  {p}out = alloca i1, align 1", f"  {p}final = alloca i1, align 1",
            f"  {p}slot = alloca i32, align 4"]
    head += [f"  {p}mine = alloca i32, align 4"] if mixed else []
    head += [out[i] for i in entry.lines if kinds[i] == "alloca"]
    head += [f"  store i32 0, ptr {p}slot, align 4", f"  store i1 false, ptr {p}out, align 1",
             f"  store i1 false, ptr {p}final, align 1"]
    head += [f"  store i32 1, ptr {p}mine, align 4"] if mixed else []
    start_round = not sited
    first = (4 if mixed else 256) if start_round else 0  # the start, barriers after it
    head += [word(str(n), f"w{n}") + f"\n  store i32 {first if n == 1 else 0}, "
             f"{sp} {p}w{n}, align 4" for n in range(nwords)]
    head += [out[i] for i in entry.lines if kinds[i] != "alloca" and i != entry.term]
    if start_round:
        head += [f"  br label {p}dispatch", f"{_PREFIX}start:", out[entry.term]]
        resumes.append((1, f"{p}start"))
    else:
        head.append(out[entry.term])
    for i in entry.lines:
        out[i] = ""
    out[entry.lines[0]] = "\n".join(head)
    for i, lines in prefix.items():
        out[i] = "\n".join(lines + [out[i]])
    d = [f"{_PREFIX}leave:",
          f"  {p}fl = load i1, ptr {p}final, align 1",
          f"  br i1 {p}fl, label {p}exit, label {p}count",
          f"{_PREFIX}count:",  # this work-item counts itself out; the last one notes it
          f"  store i1 true, ptr {p}out, align 1",
          *[f"  {p}bd{d} = call i64 @__gpux_block_dim(i32 {d})" for d in range(3)],
          f"  {p}bd01 = mul i64 {p}bd0, {p}bd1",
          f"  {p}bd012 = mul i64 {p}bd01, {p}bd2",
          f"  {p}n = trunc i64 {p}bd012 to i32",
          word("0", "cp"),
          f"  {p}c = atomicrmw add {sp} {p}cp, i32 1 seq_cst, align 4",
          f"  {p}c1 = add i32 {p}c, 1",
          f"  {p}last = icmp eq i32 {p}c1, {p}n",
          f"  br i1 {p}last, label {p}lastone, label {p}dispatch, !llvm.loop {loop}",
          f"{_PREFIX}lastone:",
          *note(1, "l"),
          back,
          f"{_PREFIX}dispatch:",
          f"  call void @__gpux_barrier(){dbg}",
          f"  {p}s = load i32, ptr {p}slot, align 4",
          f"  {p}si = add i32 {p}s, 1",
          word(f"{p}si", "sp"),
          f"  {p}v = load i32, {sp} {p}sp, align 4",
          f"  {p}s1 = add i32 {p}s, 1",
          f"  {p}s1w = icmp eq i32 {p}s1, 3",
          f"  {p}sn = select i1 {p}s1w, i32 0, i32 {p}s1",
          f"  store i32 {p}sn, ptr {p}slot, align 4",
          f"  {p}s2 = add i32 {p}sn, 1",
          f"  {p}s2w = icmp eq i32 {p}s2, 3",
          f"  {p}sr = select i1 {p}s2w, i32 0, i32 {p}s2",
          f"  {p}sri = add i32 {p}sr, 1",
          word(f"{p}sri", "rp"),
          f"  store i32 0, {sp} {p}rp, align 4"]
    if nwords > 4:  # the round's predicate counts, read, and the next round's cleared
        for w, off in (("t", 3), ("f", 6)):
            d += [f"  {p}{w}i = add i32 {p}si, {off}", word(f"{p}{w}i", f"{w}p"),
                  f"  {p}p{w} = load i32, {sp} {p}{w}p, align 4",
                  f"  {p}{w}ri = add i32 {p}sri, {off}", word(f"{p}{w}ri", f"{w}rp"),
                  f"  store i32 0, {sp} {p}{w}rp, align 4"]
    d += [f"  {p}done = and i32 {p}v, 1",
          f"  {p}end = icmp ne i32 {p}done, 0",
          f"  br i1 {p}end, label {p}exit, label {p}go",
          f"{_PREFIX}go:"]
    if grid_call is not None:
        d += [f"  {p}gb = and i32 {p}v, 2",
              f"  {p}isg = icmp ne i32 {p}gb, 0",
              f"  br i1 {p}isg, label {p}grid, label {p}mine",
              f"{_PREFIX}grid:",
              f"  {grid_call}",
              f"  br label {p}mine",
              f"{_PREFIX}mine:"]
    # a work-item that has returned waits for the next round, or ends with the group
    # when no barrier follows; the others go on where the group does
    d += [f"  {p}fb = and i32 {p}v, 4",
          f"  {p}fin = icmp {'eq' if mixed else 'ne'} i32 {p}fb, 0",
          f"  {p}me = load i1, ptr {p}out, align 1",
          f"  br i1 {p}me, label {p}gone, label {p}stay",
          f"{_PREFIX}gone:",
          f"  br i1 {p}fin, label {p}exit, label {p}dispatch, !llvm.loop {loop}",
          f"{_PREFIX}stay:",
          f"  store i1 {p}fin, ptr {p}final, align 1",
          f"  {p}place = load i32, ptr {p}mine, align 4" if mixed else
          f"  {p}place = lshr i32 {p}v, 8",
          f"  switch i32 {p}place, label {p}dispatch [ "
          + " ".join(f"i32 {k}, label {label}" for k, label in resumes) + f" ], !llvm.loop {loop}",
          f"{_PREFIX}exit:",
          "  ret void"]
    return out + d


#: what the rewritten kernels call, declared where the module does not already
_DECLARE = {"__gpux_block_dim": "declare i64 @__gpux_block_dim(i32) nounwind",
            "__gpux_barrier": "declare void @__gpux_barrier() convergent nounwind"}


def _bodies(lines, names):
    """{kernel name: its Function} for the kernels among *names* that *lines* define."""
    return {f.name: f for f in lx.functions(lines) if f.name in names}


def _replace_bodies(lines, new: dict) -> list[str]:
    """*lines* with the bodies of the functions in *new* (name -> body lines) replaced."""
    out, at = [], 0
    for f in sorted(_bodies(lines, new).values(), key=lambda f: f.start):
        out += lines[at:f.start] + new[f.name]
        at = f.stop
    return out + lines[at:]


def _one_line_switches(lines: list[str]) -> list[str]:
    """*lines* with each switch's case list, which LLVM prints a case a line, joined onto
    the switch's own line: the rewrites below move and split lines, and a case line
    taken apart from its switch is no instruction."""
    out: list[str] = []
    cases = False
    for ln in lines:
        if cases:
            out[-1] += " " + ln.strip()
            cases = "]" not in lx.code(lx.line_tokens(ln))
            continue
        out.append(ln)
        if "switch" in ln:
            toks = lx.line_tokens(ln)
            if lx.instruction(toks)[0] == "switch":
                code = lx.code(toks)
                cases = "[" in code and "]" not in code
    return out


def rewrite(text: str, kernels, data_layout: str, shared: int, pass_builder) -> str | None:
    """The module *text* with each of *kernels* that needs it rewritten (the module's
    docstring), or None where none does.  *shared* is the target's number of the
    work-group address space; *pass_builder* makes the llvmlite PassBuilder that
    runs reg2mem on a module of *data_layout*."""
    if not (SITES | PREDICATE_BARRIERS) & irtext.declared_functions(text):
        return None
    lines = _one_line_switches(lx.lines(text))
    found = _bodies(lines, set(kernels))
    wanted, mixed = {}, set()
    for name, f in found.items():
        body = lines[f.start:f.stop]
        entry = blocks(body)[:1]
        if entry and entry[0].label is None:
            continue
        needs, parts = analyse(body)
        if needs:
            wanted[name] = body
            if parts:
                mixed.add(name)
    if not wanted:
        return None
    # a barrier in a function the kernel calls (not inlined) would be met apart from
    # the dispatch's: such a kernel is left as it is, and the caller says why
    graph = irtext.call_graph(text)
    meeting = {fn for fn, callees in graph.items() if callees & SITES}
    grown = True
    while grown:
        more = {fn for fn, callees in graph.items() if callees & meeting} - meeting
        meeting |= more
        grown = bool(more)
    for name in wanted:
        inner = sorted(c for c in graph.get(name, ()) if c in meeting and c != name)
        if inner:
            raise CalleeBarrier(f"{name} calls {', '.join(inner)}, which meet(s) a barrier "
                                "outside the kernel's own code")
    split = {name: split_sites(hoist_to_entry(_without_debug_records(body)))
             for name, body in wanted.items()}
    from llvmlite import binding as ll

    stage = "\n".join(_replace_bodies(lines, split))
    try:
        mod = ll.parse_assembly(stage)
        mod.data_layout = data_layout
        pb = pass_builder()
        for name in split:
            fpm = ll.create_new_function_pass_manager()
            fpm.add_register_to_memory_pass()
            fpm.run(mod.get_function(name), pb)
        lines = _one_line_switches(lx.lines(str(mod)))
        done, extra = {}, []
        node = irtext.free_node(lines)
        extra.append(f"!{node} = !{{!\"llvm.loop.unroll.disable\"}}")
        for n, (name, f) in enumerate(sorted(_bodies(lines, set(split)).items())):
            words = lx.spell_global(f"__gpux_shared.{_PREFIX}{n}")
            body = lines[f.start:f.stop]
            extra.append(f"{words} = internal addrspace({shared}) global "
                         f"[{word_count(body)} x i32] undef, align 4")
            loop = f"!{node + 1 + n}"
            extra.append(f"{loop} = distinct !{{{loop}, !{node}}}")
            done[name] = make_reducible(add_dispatch(body, shared, words, loop, name in mixed))
        lines = _replace_bodies(lines, done)
        known = irtext.declared_functions(stage) | irtext.defined_functions(stage)
        extra += [d for name, d in _DECLARE.items() if name not in known]
        lines += extra
        out = "\n".join(lines)
        ll.parse_assembly(out).verify()
    except (RuntimeError, ValueError) as e:
        raise InternalCompilerError("converge", f"the barrier rewrite of {sorted(split)} "
                                    f"failed: {e}", stage) from None
    return out
