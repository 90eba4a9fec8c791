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

__all__ = ["REWRITES", "apply_rewrites", "sitofp_i1", "byte_allocas", "rematerialize_index_math"]

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


#: rewrite name -> function (module text -> module text)
REWRITES = {
    "sitofp_i1": sitofp_i1,
    "byte_allocas": byte_allocas,
    "rematerialize_index_math": rematerialize_index_math,
}


def apply_rewrites(text: str, names) -> str:
    """*text* with the rewrites *names* applied, in order."""
    for name in names:
        text = REWRITES[name](text)
    return text
