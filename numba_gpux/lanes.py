"""Which grid dimension a kernel's memory accesses run along, and the kernel with its
first two dimensions exchanged.

A driver that runs a work-group's work-items as the lanes of vectors (the OpenCL CPU
drivers) puts consecutive work-items of dimension 0 in neighbouring lanes, as a GPU
puts them in one warp.  A kernel written ``i, j = cuda.grid(2)`` into ``a[i, j]`` of a
C-ordered array reads along dimension 1: neighbouring lanes read a row apart, one
gather per access, where dimension 1 would give one vector load.  Exchanging the
first two dimensions of the launch, and of every index the kernel asks for, runs the
same work-items with the same indices; only which of them are neighbouring lanes
changes.  That is invisible to a kernel unless it depends on which work-items share
a sub-group (warp functions, lane ids), so only kernels calling none of those are
exchanged.

:func:`lanes_prefer_second_dim` reads a kernel's neutral IR (after ``simplify_neutral``)
through the IR lexer: for each global memory access, how the address moves from one
work-item to the next along dimension 0 and along dimension 1, in bytes (a small
affine evaluation of the index arithmetic over the per-dimension index intrinsics);
an access is a gather along a dimension where that step is neither 0 nor the size
of what it reads.  :func:`exchange_first_dims` is the rewrite: every call of a
per-dimension index intrinsic with dimension 0 asks for dimension 1 and the other
way round.

:func:`flatten_block` is the other launch-shape rewrite: the kernel for a launch
whose blocks run as one row (``abi.LaunchFacts.block``), each work-item's thread
index and the block's shape computed from its place in that row, so that
sub-groups formed along dimension 0 hold consecutive linear thread ids, as CUDA's
warps do, whatever the block's shape.  Layer 1: the lexer and the IR text helpers.
"""

from __future__ import annotations

from . import irlex as lx
from . import irtext
from .divergence import FLAT_BLOCK_DIM, FLAT_INDEX, blocks
from .irverify import checked
from .reducible import strongly_connected

__all__ = ["DIM_INTRINSICS", "lanes_prefer_second_dim", "lanes_prefer_serial",
           "exchange_first_dims",
           "flatten_block"]

#: the portable intrinsics that take a dimension (language/intrinsics.py), and how
#: their value moves from one work-item to the next along that dimension
DIM_INTRINSICS = {"__gpux_thread_idx": 1, "__gpux_global_idx": 1,
                  "__gpux_wide_global_idx": 1, "__gpux_block_idx": 0,
                  "__gpux_block_dim": 0, "__gpux_grid_dim": 0}
#: intrinsics whose result depends on which work-items share a sub-group, or on the
#: grid as a whole: a kernel calling one keeps its dimensions
_TOPOLOGY_PREFIXES = ("__gpux_sg_", "__gpux_grid_", "__gpux_ptx_")

_SIZES = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "half": 2, "bfloat": 2,
          "float": 4, "double": 8, "ptr": 8}
_UNIFORM = (0, 0)
_UNKNOWN = (None, None)
_TOP = "top"  # not known yet (a value defined further down, reached through a phi)
#: floating-point instructions, and the types of calls that count as one
_FLOAT_OPS = frozenset(("fadd", "fsub", "fmul", "fdiv", "frem", "fneg"))
_FLOATS = frozenset(("half", "bfloat", "float", "double"))
#: what a call of a float function counts for (a library function: ``exp``, ``log``,
#: ``sqrt``...), against one for an arithmetic instruction, a vector unit's work it is
#: that lanes in order lose
_CALL_WEIGHT = 64
#: float intrinsics as cheap as an arithmetic instruction
_CHEAP_CALLS = ("llvm.fabs.", "llvm.copysign.", "llvm.fma.", "llvm.fmuladd.",
                "llvm.minnum.", "llvm.maxnum.")


def _float_call(c: list) -> bool:
    """Whether the call whose code tokens (from ``call``) are *c* returns a float (its
    flags and attributes come before the type, the type before the callee)."""
    for t in c[1:]:
        if t[:1] == "@":
            return False
        if t in _FLOATS:
            return True
    return False


def _cheap_call(toks) -> bool:
    at = lx.callee(toks)
    return at is not None and lx.name(toks[at]).startswith(_CHEAP_CALLS)


#: how many times an instruction in a loop counts, against once outside every loop
#: (per loop that holds it)
_LOOP_WEIGHT = 8
#: the most floating-point operations per strided access in loops (a store counts
#: twice) at which a kernel runs faster with its work-items one after another than as
#: the lanes of vectors on a CPU device (benchmarks/serial_lanes.py)
SERIAL_FLOPS_PER_STRIDED = 8
_CASTS = frozenset(("sext", "zext", "trunc", "bitcast", "addrspacecast", "ptrtoint",
                    "inttoptr", "freeze"))


#: a step that is a multiple of a value the same for every work-item but not known
#: here (an array's row stride): nonzero, and neither data-dependent nor a unit step
_STRIDED = "strided"


def _add1(x, y, sign):
    if x is None or y is None:
        return None
    if _STRIDED in (x, y):
        return x if y == 0 else y if x == 0 else _STRIDED
    return x + sign * y


def _add(a, b, sign=1):
    return tuple(_add1(x, y, sign) for x, y in zip(a, b))


def _scale(a, c: int):
    return tuple(None if x is None else 0 if c == 0 or x == 0
                 else _STRIDED if x == _STRIDED else x * c for x in a)


def _times_uniform(a):
    """The step of *a* times (or shifted by) an unknown value the same for all."""
    return tuple(None if x is None else 0 if x == 0 else _STRIDED for x in a)


def _meet(a, b):
    if a == _TOP:
        return b
    if b == _TOP:
        return a
    return tuple(x if x == y else None for x, y in zip(a, b))


def _literal(tok: str):
    """The integer a constant operand token spells, else None."""
    if lx.kind(tok) is lx.NUMBER and "." not in tok and "x" not in tok and "e" not in tok.lower():
        return int(tok)
    return None


def _groups(c: list, start: int) -> list[list]:
    """The code tokens ``c[start:]`` split at the commas at bracket depth 0."""
    return lx.split_depth0(c[start:])


class _Walk:
    """One pass over a module's instructions: the step of each value per dimension."""

    def __init__(self, lines: list[str], consts: dict | None = None, depths=None):
        #: parameters whose value the launch states (a one-value ``range``), as literals
        self.consts = consts or {}
        self.insts = []  # (opcode, code tokens from it, line tokens, defined name)
        self.depths = []  # how many loops hold each instruction
        self.where = []  # each instruction's position in *lines*
        for k, ln in enumerate(lines):
            toks = lx.line_tokens(ln)
            op, at = lx.instruction(toks)
            if op is not None:
                c = lx.code(toks[at:])
                self.insts.append((op, c, _groups(c, 1), toks, lx.defined_value(toks)))
                self.depths.append(depths[k] if depths else 0)
                self.where.append(k)
        #: weighted counts, in loops (:func:`lanes_prefer_serial`): accesses whose
        #: address steps by a stride (neither 0 nor their size, nor data-dependent)
        #: from one work-item to the next along dimension 0, accesses whose address
        #: steps by their size, and floating-point operations (and private accesses);
        #: whether a store in a loop goes where loaded data say
        self.strided = self.contiguous = self.flops = 0
        self.data_stores = False
        self.gather_sites: list = []  # (instruction, pointer, weight) of loads where
        # loaded data say
        self.dims: set = set()  # the dimensions whose indices the kernel asks for
        #: for each instruction, the values that change from one time round each loop
        #: that holds it to the next (None: not asked)
        self.varying: list | None = None
        self._depth = 0
        self._at = 0
        self.steps: dict = {}
        self.private: dict = {}  # private pointer -> its alloca
        self.private_arrays: set = set()  # the allocas of arrays
        self.content: dict = {}  # alloca -> the step of what is stored in it
        self.changed = False
        self.swappable = True
        self.uses_second = False
        self.gathers = [0, 0]

    def literal(self, tok: str):
        """The integer *tok* is: a constant, or a parameter the launch states."""
        got = self.consts.get(tok)
        return got if got is not None else _literal(tok)

    def value(self, tok: str):
        if tok[0] == "%":
            return self.steps.get(tok, _UNIFORM)  # (a parameter: the same for all)
        return _UNIFORM if tok[0] != "<" else _UNKNOWN

    def run(self, count: bool) -> bool:
        """One pass; True where some value's step changed."""
        changed = self.changed = False
        for at, ((op, c, g, toks, name), depth) in enumerate(zip(self.insts, self.depths)):
            self._depth, self._at = depth, at
            if count and depth and (op in _FLOAT_OPS or op == "call" and _float_call(c)):
                # (narrower floats count twice: a vector holds twice as many)
                self.flops += _LOOP_WEIGHT ** min(depth, 3) * (
                    _CALL_WEIGHT if op == "call" and not _cheap_call(toks) else 1) * (
                    1 if "double" in c[:6] else 2)
            got = self.step_of(op, c, g, toks, count)
            if name is not None and op == "alloca":
                self.private[name] = name  # private memory: not the device's
                if "[" in c:  # (an array, not a variable Numba keeps in memory)
                    self.private_arrays.add(name)
            elif name is not None and op == "getelementptr" and g[1][-1] in self.private:
                self.private[name] = self.private[g[1][-1]]
            elif name is not None and op == "addrspacecast" and "to" in c \
                    and c[c.index("to") - 1] in self.private:  # (private, as generic)
                self.private[name] = self.private[c[c.index("to") - 1]]
            if name is not None and got is not None:
                old = self.steps.get(name, _TOP)
                new = got if old == _TOP else _meet(old, got) if op == "phi" else got
                if new != old:
                    self.steps[name] = new
                    changed = True
        return changed or self.changed

    def step_of(self, op: str, c: list, g: list, toks, count: bool):
        """The step of the value instruction *op* (code tokens *c*, from the opcode; *g*:
        those after it, split at commas) defines, counting its access when *count*; None
        where it defines none."""
        if op in ("add", "sub", "mul", "shl", "or"):
            a, b = g[0][-1], g[1][-1]
            sa, sb = self.value(a), self.value(b)
            if _TOP in (sa, sb):
                return _TOP
            if op in ("add", "sub") or (op == "or" and "disjoint" in g[0]):
                return _add(sa, sb, -1 if op == "sub" else 1)
            la, lb = self.literal(a), self.literal(b)
            if op == "mul" and (la is not None or lb is not None):
                return _scale(sb, la) if la is not None else _scale(sa, lb)
            if op == "shl" and lb is not None and 0 <= lb < 63:
                return _scale(sa, 1 << lb)
            if op in ("mul", "shl") and sb == _UNIFORM:
                return _times_uniform(sa)
            if op == "mul" and sa == _UNIFORM:
                return _times_uniform(sb)
            return tuple(0 if x == 0 and y == 0 else None for x, y in zip(sa, sb))
        if op in _CASTS:
            return self.value(c[c.index("to") - 1]) if "to" in c else _UNKNOWN
        if op == "alloca":
            return _UNIFORM
        if op == "getelementptr":
            return self.gep(g)
        if op in ("load", "store"):
            return self.access(op, g, count)
        if op == "phi":
            got = _TOP
            for e in g:  # [ %value, %block ]
                if "[" in e and e.index("[") + 1 < len(e):
                    got = _meet(got, self.value(e[e.index("[") + 1]))
            return got
        if op == "call":
            return self.call(c, toks)
        if op in ("ret", "br", "switch", "unreachable", "fence"):
            return None
        if op == "icmp":  # an index compared with 0 (Numba's wraparound of negative ones)
            pred, a, b = g[0][0], g[0][-1], g[1][-1]
            if (pred, b) in (("slt", "0"), ("sgt", "-1"), ("sge", "0")):
                sa = self.value(a)
                if sa != _TOP and None not in sa and _STRIDED not in sa:
                    # an index: never negative where in bounds, so the same answer for
                    # every work-item (a heuristic: where wrong, only the speed differs)
                    return _UNIFORM
        if op == "select":
            cond = self.value(g[0][-1])
            if cond == _UNIFORM:
                return _meet(self.value(g[1][-1]), self.value(g[2][-1]))
        # anything else: the same for all work-items where its operands are
        opnds = [t for t in c[1:] if t[0] == "%"]
        sts = [self.value(t) for t in opnds]
        if _TOP in sts:
            return _TOP
        return _UNIFORM if all(s == _UNIFORM for s in sts) else _UNKNOWN

    def gep(self, g: list):
        # [flags..., source type], [ptr, base], [idx type, idx], ...
        src = [t for t in g[0] if t not in ("inbounds", "nuw", "nusw", "inrange")]
        base = g[1][-1]
        if base in self.private:
            return _UNIFORM  # (private memory: its accesses are not counted)
        step = self.value(base)
        idx = [self.value(x[-1]) for x in g[2:]]
        if _TOP in idx or step == _TOP:
            return _TOP
        size = _SIZES.get(src[0]) if len(src) == 1 else None
        if size is not None and len(idx) == 1:
            return _add(step, _scale(idx[0], size))
        if all(s == _UNIFORM for s in idx):
            return step
        return _UNKNOWN

    def access(self, op: str, g: list, count: bool):
        if op == "load":
            ty, ptr = g[0], g[1][-1]
        else:
            ty, ptr = g[0][:-1], g[1][-1]
        if ptr in self.private:  # a work-item's own memory: what was stored comes back
            root = self.private[ptr]
            if count and self._depth and root in self.private_arrays:
                self.flops += _LOOP_WEIGHT ** min(self._depth, 3)  # (the lanes' work)
            if op == "load":
                return self.content.get(root, _TOP)
            stored = g[0][-1]
            if _literal(stored) is not None:  # (a counter's start: the same everywhere)
                return None
            old = self.content.get(root, _TOP)
            new = _meet(old, self.value(stored))
            if new != old:
                self.content[root], self.changed = new, True
            return None
        step = self.value(ptr)
        if count and step != _TOP:
            size = _SIZES.get(ty[-1]) if ty else None
            for d in (0, 1):
                if step[d] not in (0, size, None if size is None else -size):
                    self.gathers[d] += 1
            if self._depth and self.varying is not None:
                # weighed by the loops round which its address changes (``p[i, 0]`` in
                # a loop over ``c``: one load, which vectors make before the loop; a
                # row read in an inner loop: the same row each time round the outer
                # one, from cache), a store twice (CPUs' vector units gather, but
                # scatter lane by lane)
                n = sum(ptr in v for v in self.varying[self._at])
                w = _LOOP_WEIGHT ** min(n, 3) * (1 if op == "load" else 2) if n else 0
                if step[0] is None:
                    self.data_stores |= op != "load"
                    if op == "load" and w:
                        self.gather_sites.append((self._at, ptr, w))
                elif step[0] in (size, None if size is None else -size):
                    self.contiguous += w
                elif step[0] != 0:
                    self.strided += w
        if op == "load":
            return _UNIFORM if step == _UNIFORM else _UNKNOWN
        return None

    def call(self, c: list, toks):
        at = lx.callee(toks)
        if at is None:
            if "asm" in c:
                self.swappable = False
            return _UNKNOWN
        fn = lx.name(toks[at])
        p = lx.skip(toks, at + 1)
        args = _groups(lx.code(toks[p + 1:lx.match_paren(toks, p)]), 0)
        if fn in DIM_INTRINSICS:
            dim = _literal(args[0][-1]) if args and args[0] else None
            if dim is None or not 0 <= dim <= 2:
                self.swappable = False
                return _UNKNOWN
            if dim == 1:
                self.uses_second = True
            self.dims.add(dim)
            unit = DIM_INTRINSICS[fn]
            return (unit if dim == 0 else 0, unit if dim == 1 else 0)
        if fn.startswith(_TOPOLOGY_PREFIXES):
            self.swappable = False
        sts = [self.value(a[-1]) for a in args if a]
        if _TOP in sts:
            return _TOP
        return _UNIFORM if all(s == _UNIFORM for s in sts) else _UNKNOWN


def _stated_params(defines) -> dict:
    """``{parameter name: value}`` of the parameters whose ``range(i64 v, v + 1)`` (a
    launch's fact: an array's innermost stride) gives their value, on *defines*."""
    out = {}
    for ln in defines:
        toks = lx.line_tokens(ln)
        at = lx.define_name(toks)
        if at is None:
            continue
        p = lx.skip(toks, at + 1)
        for g in lx.split_depth0(lx.code(toks[p + 1:lx.match_paren(toks, p)])):
            if "range" in g and len(g) >= g.index("range") + 7 and g[-1][0] == "%":
                r = g.index("range")
                lo, hi = _literal(g[r + 3]), _literal(g[r + 5])
                if lo is not None and hi == lo + 1:
                    out[g[-1]] = lo
    return out


def lanes_prefer_second_dim(text: str) -> bool:
    """Whether the kernel whose neutral IR is *text* gathers less with dimension 1's
    work-items as neighbouring lanes than with dimension 0's, and calls nothing that
    depends on which work-items share a sub-group (:func:`exchange_first_dims` then
    runs it unchanged in meaning)."""
    if "(i32 1)" not in text:  # (a quick no: dimension 1 never asked for)
        return False
    lines = lx.lines(text)
    body = [ln for ln in lines if ln[:1] in (" ", "\t")]
    walk = _Walk(body, _stated_params(ln for ln in lines if ln.startswith("define")))
    for _ in range(5):  # loops: the steps through phis settle in a few passes; the
        walk.gathers = [0, 0]  # accesses counted in the pass that changed nothing
        if not walk.run(count=True):
            break
    if not (walk.swappable and walk.uses_second):
        return False
    return walk.gathers[0] > walk.gathers[1]


def _loops(lines: list[str]) -> tuple[list[int], list[tuple[set, set]]]:
    """For each of *lines*: how many loops of its function's control flow hold it (the
    cycles through a block, then those left without each cycle's header, and so on);
    and each loop: the positions of all its lines, and of those in no loop inside it."""
    depths = [0] * len(lines)
    loops: list = []
    for f in lx.functions(lines):
        named = [b for b in blocks(lines[f.start:f.stop]) if b.label is not None]
        succ = {b.label: list(b.succ) for b in named}
        preds: dict = {b.label: [] for b in named}
        for b in named:
            for t in b.succ:
                if t in preds:
                    preds[t].append(b.label)
        at = {b.label: [f.start + i for i in b.lines] for b in named}
        depth = dict.fromkeys(succ, 0)
        work: list = [(list(succ), None)]
        while work:
            region, outer = work.pop()
            for comp in strongly_connected(region, succ):
                if len(comp) == 1 and comp[0] not in succ[comp[0]]:
                    continue
                inside = set(comp)
                for lab in comp:
                    depth[lab] += 1
                mine = {i for lab in comp for i in at[lab]}
                loop = (mine, set(mine))
                loops.append(loop)
                if outer is not None:
                    outer[1].difference_update(mine)
                entered = [lab for lab in comp if any(p not in inside for p in preds[lab])]
                head = entered[0] if entered else comp[0]
                inner = [lab for lab in comp if lab != head]
                if inner:
                    work.append((inner, loop))
        for b in named:
            for i in at[b.label]:
                depths[i] = depth[b.label]
    return depths, loops


def _derived(walk: _Walk, lines_of: list[int], within: set, source) -> set:
    """The values defined on the lines *within* that *source* ``(op, operands, line)``
    names, and those computed there from them (the least fixed point); *lines_of*
    gives each instruction's line."""
    mine = [(inst, ln) for inst, ln in zip(walk.insts, lines_of)
            if ln in within and inst[4] is not None]
    found: set = set()
    changed = True
    while changed:
        changed = False
        for (op, c, g, _toks, name), ln in mine:
            if name in found:
                continue
            if source(op, g, ln) or any(t in found for t in c[1:] if t[:1] == "%"):
                found.add(name)
                changed = True
    return found


def _varying(walk: _Walk, lines_of: list[int], loop: tuple[set, set]) -> set:
    """The values that may change from one time round *loop* to the next: its phis,
    loads (a counter kept in private memory) and atomics outside the loops inside it,
    and what is computed in it from those."""
    mine, own = loop
    return _derived(walk, lines_of, mine, lambda op, g, ln: ln in own and op in (
        "phi", "load", "atomicrmw", "cmpxchg", "alloca"))


def lanes_prefer_serial(text: str) -> bool:
    """Whether the kernel whose IR is *text* runs faster with a work-group's work-items
    one after another than as the lanes of vectors, on a CPU device that makes vectors
    of neighbouring work-items: a kernel of one grid dimension whose loops read memory
    at a row's stride from one work-item to the next (``a[i, k]`` of a C-ordered array
    in a loop over ``k``: each work-item walks its own row), which a vector gathers
    lane by lane from as many rows, while a work-item alone reads consecutive
    addresses, and that do little arithmetic per such access
    (:data:`SERIAL_FLOPS_PER_STRIDED`).  Not: kernels with as many accesses in loops
    that step by their size (consecutive across lanes, strided in order), or a store in
    a loop at an address loaded data give (a histogram's count: a chain through memory
    in order), or that call anything depending on which work-items share a sub-group."""
    lines = lx.lines(text)
    depths, loops = _loops(lines)
    if not loops:
        return False
    body = [k for k, ln in enumerate(lines) if ln[:1] in (" ", "\t")]
    walk = _Walk([lines[k] for k in body],
                 _stated_params(ln for ln in lines if ln.startswith("define")),
                 [depths[k] for k in body])
    lines_of = [body[k] for k in walk.where]
    varyings = [_varying(walk, lines_of, loop) for loop in loops]
    walk.varying = [[v for (mine, _), v in zip(loops, varyings) if ln in mine]
                    for ln in lines_of]
    for _ in range(5):
        walk.gathers, walk.strided, walk.contiguous, walk.flops = [0, 0], 0, 0, 0
        walk.gather_sites, walk.data_stores = [], False
        if not walk.run(count=True):
            break
    if not walk.swappable or walk.dims - {0} or walk.data_stores:
        return False
    strided = walk.strided + _runs(walk, lines_of, loops, varyings)
    if strided <= walk.contiguous:  # (in order, those would be strided)
        return False
    return walk.flops <= SERIAL_FLOPS_PER_STRIDED * strided


def _runs(walk: _Walk, lines_of: list[int], loops, varyings) -> int:
    """The weight of the loads that walk a run each work-item finds in memory: a
    CSR row's values (``val[k]`` for ``k`` from ``rowptr[i]`` to ``rowptr[i + 1]``),
    a vertex's edges.  A vector gathers them, while in order each work-item reads its
    own run.  Only in loops whose trip count loaded data give, and whose branches do
    not turn on what they load (a binary search: vectors run it without mispredicted
    branches, 2.8-4.7x faster); not loads at addresses the loop loads (``x[col[k]]``,
    ``pos[j, 0]`` for ``j = nbr[i, jj]``, ``coef[int(a[i, k] * n)]``: gathers either
    way, of tables that often stay in cache)."""
    if not walk.gather_sites:
        return 0
    loaded = _loaded_in_loops(walk, lines_of, loops)
    counted = []
    for (mine, _own), varying in zip(loops, varyings):
        branches = [c for (op, c, _g, _t, _n), ln in zip(walk.insts, lines_of)
                    if op in ("br", "switch") and ln in mine]
        if any(t in loaded for c in branches for t in c[1:] if t[:1] == "%"):
            counted.append(None)  # (a branch on what it loads)
            continue
        # (a trip count loaded data give: a branch on a value that differs between
        # work-items, a counter Numba keeps in private memory among them)
        trips = any(walk.steps.get(c[2], _UNIFORM) not in (_UNIFORM, _TOP)
                    for c in branches if len(c) > 2 and c[1] == "i1")
        counted.append(varying if trips else None)
    total = 0
    for at, ptr, w in walk.gather_sites:
        ln = lines_of[at]
        if ptr not in loaded and any(v is not None and ptr in v and ln in mine
                                     for (mine, _), v in zip(loops, counted)):
            total += w
    return total


def _loaded_in_loops(walk: _Walk, lines_of: list[int], loops) -> set:
    """The values computed in loops from what they load from the device's memory
    (private memory aside: a counter Numba keeps there)."""
    inside = set().union(*(mine for mine, _ in loops))
    return _derived(walk, lines_of, inside,
                    lambda op, g, ln: op == "load" and g[1][-1] not in walk.private)


def exchange_first_dims(text: str) -> str:
    """*text* with every per-dimension index intrinsic asked for dimension 1 where it
    asked for 0, and for 0 where it asked for 1 (a launch with its first two
    dimensions exchanged then gives every work-item its indices)."""
    out = []
    for ln in lx.lines(text):
        if "__gpux_" in ln and "call" in ln:
            toks = lx.line_tokens(ln)
            at = lx.callee(toks)
            if at is not None and lx.name(toks[at]) in DIM_INTRINSICS:
                p = lx.skip(toks, at + 1)
                args = [k for k in range(p + 1, lx.match_paren(toks, p)) if lx.is_code(toks[k])]
                if args and toks[args[-1]] in ("0", "1"):  # (i32 d): the dimension
                    toks[args[-1]] = "1" if toks[args[-1]] == "0" else "0"
                    ln = lx.join(toks)
        out.append(ln)
    return "\n".join(out)


#: the intrinsics whose values change when a block runs as one row, and the functions
#: :func:`flatten_block` calls instead (block and grid indices keep their meaning)
_FLAT = dict(zip(("__gpux_thread_idx", "__gpux_global_idx", "__gpux_wide_global_idx"),
                 FLAT_INDEX), __gpux_block_dim=FLAT_BLOCK_DIM)
_THREAD = FLAT_INDEX[0]


def _by_dim(values) -> list[str]:
    """Body lines giving ``%r``: the first, second or third of *values* (operands of
    type i64) as ``%d`` is 0, 1 or 2."""
    x, y, z = values
    return ["  %d1 = icmp eq i32 %d, 1", f"  %yz = select i1 %d1, i64 {y}, i64 {z}",
            "  %d0 = icmp eq i32 %d, 0", f"  %r = select i1 %d0, i64 {x}, i64 %yz"]


def _flat_definitions(block: tuple) -> dict[str, str]:
    """The definitions of :data:`_FLAT`'s functions for blocks of *block* threads."""
    bx, by, bz = block
    head = "define internal i64 @{}(i32 %d) alwaysinline nounwind {{"
    n = bx * by * bz
    thread = [head.format(_THREAD),
              f"  %l = call noundef range(i64 0, {n}) i64 @__gpux_thread_idx(i32 0)",
              f"  %x = urem i64 %l, {bx}", f"  %q = udiv i64 %l, {bx}",
              f"  %y = urem i64 %q, {by}", f"  %z = udiv i64 %l, {bx * by}",
              *_by_dim(("%x", "%y", "%z")), "  ret i64 %r", "}"]
    dims = [head.format(FLAT_BLOCK_DIM), *_by_dim(block), "  ret i64 %r", "}"]
    out = {_THREAD: "\n".join(thread), FLAT_BLOCK_DIM: "\n".join(dims)}
    for name in FLAT_INDEX[1:]:
        out[name] = "\n".join([
            head.format(name),
            "  %b = call noundef range(i64 0, 2147483647) i64 @__gpux_block_idx(i32 %d)",
            f"  %n = call i64 @{FLAT_BLOCK_DIM}(i32 %d)",
            f"  %t = call i64 @{_THREAD}(i32 %d)",
            "  %p = mul nuw nsw i64 %b, %n", "  %r = add nuw nsw i64 %p, %t",
            "  ret i64 %r", "}"])
    return out


@checked
def flatten_block(text: str, block: tuple) -> str:
    """*text* for a launch of blocks of *block* threads (x, y, z) run as blocks of
    ``x * y * z`` threads along dimension 0 (the grid as it is): thread indices are the
    linear thread id split as CUDA numbers threads (x fastest), the block's shape is
    *block*, global indices are computed from those; block and grid indices are
    unchanged.  Work-items then form sub-groups of consecutive linear ids, as CUDA's
    warps, where a driver forms them along dimension 0 only."""
    if not any(f"@{name}(" in text for name in _FLAT):
        return text
    used = irtext.declared_functions(text)
    text = irtext.rename_globals(text, {k: v for k, v in _FLAT.items() if k in used})
    defs = _flat_definitions(tuple(block))
    wanted = {_THREAD, FLAT_BLOCK_DIM} | \
        {_FLAT[k] for k in used if k in _FLAT}
    drop = {i for i, _, n in irtext.function_headers(text, "declare") if n in wanted}
    # the renamed declarations become the definitions
    out = [ln for i, ln in enumerate(text.split("\n")) if i not in drop]
    need = {"__gpux_thread_idx", "__gpux_block_idx"} - irtext.declared_functions(text)
    out.extend(f"declare i64 @{n}(i32)" for n in sorted(need))
    out.extend(defs[n] for n in sorted(wanted))
    return "\n".join(out)
