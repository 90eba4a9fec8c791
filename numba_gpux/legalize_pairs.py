"""An IR rewrite for drivers that vectorize across work-items and load a pair of
neighbouring scalars as two strided accesses (one of :data:`legalize.REWRITES`; see
that module for how rewrites are applied, read and checked)."""

from __future__ import annotations

from . import irlex

__all__ = ["paired_accesses"]

#: scalar types a pair is made of, and their sizes in bytes
_SIZES = {"float": 4, "double": 8, "i32": 4, "i64": 8}
#: instructions after which a load no longer pairs with a later one (they may write
#: memory), and after which a store no longer pairs (they may read or write it)
_WRITES = frozenset(("store", "call", "invoke", "atomicrmw", "cmpxchg", "fence", "callbr"))
_ACCESSES = _WRITES | {"load", "va_arg"}


def _pointer(c: list, i: int):
    """(address space, pointer name, position after it) of ``ptr [addrspace(N)] %p`` at
    *i* in the code tokens *c*; None where the pointer is not a plain name."""
    got = irlex.ptr_type(c, i)
    if got is None:
        return None
    space, i = got
    if i >= len(c) or irlex.kind(c[i]) not in (irlex.LOCAL, irlex.GLOBAL):
        return None
    return str(space or 0), c[i], i + 1


def _align(c: list, i: int):
    """The alignment of ``, align A`` at *i* (what follows may be only attachments)."""
    if c[i:i + 2] != [",", "align"] or i + 2 >= len(c) or not c[i + 2].isdigit():
        return None
    rest = c[i + 3:]
    if any(t in ("!nontemporal", "!invariant.group") for t in rest) or \
            (rest and rest[0] != ","):
        return None
    return c[i + 2]


def _load(c: list):
    """(type, address space, pointer, alignment) of ``load T, ptr ... %p, align A``."""
    if len(c) < 5 or c[0] != "load" or c[1] not in _SIZES or c[2] != ",":
        return None
    p = _pointer(c, 3)
    if p is None:
        return None
    a = _align(c, p[2])
    return None if a is None else (c[1], p[0], p[1], a)


def _store(c: list):
    """(type, value, address space, pointer, alignment) of ``store T v, ptr %p, align A``."""
    if len(c) < 6 or c[0] != "store" or c[1] not in _SIZES or c[3] != ",":
        return None
    if irlex.kind(c[2]) not in (irlex.LOCAL, irlex.NUMBER, irlex.WORD):
        return None
    p = _pointer(c, 4)
    if p is None:
        return None
    a = _align(c, p[2])
    return None if a is None else (c[1], c[2], p[0], p[1], a)


def _byte_offset(c: list):
    """(address space, base pointer, offset) of ``getelementptr [inbounds] [nuw] i8, ptr
    %p, i64 S``."""
    if not c or c[0] != "getelementptr":
        return None
    i = 1
    while i < len(c) and c[i] in ("inbounds", "nuw", "nusw"):
        i += 1
    if c[i:i + 2] != ["i8", ","]:
        return None
    p = _pointer(c, i + 2)
    if p is None or c[p[2]:p[2] + 2] != [",", "i64"] or len(c) != p[2] + 3:
        return None
    off = c[p[2] + 2]
    return (p[0], p[1], int(off)) if off.isdigit() else None


def _element_bytes(c: list):
    """The byte size of the element type of ``getelementptr [flags] T, ptr %p, idx`` (one
    index: the address of an element of an array of T) when T is a pair or a byte array
    (``{ double, double }``, ``[2 x float]``, ``[16 x i8]``), else None."""
    if not c or c[0] != "getelementptr":
        return None
    i = 1
    while i < len(c) and c[i] in ("inbounds", "nuw", "nusw"):
        i += 1
    if c[i:i + 1] == ["{"] and c[i + 4:i + 5] == ["}"] and c[i + 2] == "," \
            and c[i + 1] == c[i + 3] and c[i + 1] in _SIZES:
        size, end = 2 * _SIZES[c[i + 1]], i + 5
    elif c[i:i + 1] == ["["] and c[i + 2:i + 3] == ["x"] and c[i + 4:i + 5] == ["]"] \
            and c[i + 1].isdigit() and (c[i + 3] in _SIZES or c[i + 3] == "i8"):
        size, end = int(c[i + 1]) * _SIZES.get(c[i + 3], 1), i + 5
    else:
        return None
    # one index after the pointer: ", ptr [addrspace(N)] %p , T %i"
    rest = c[end:]
    return size if rest.count(",") == 2 else None


def _address(ptr: str, offsets: dict) -> tuple:
    """(base pointer, byte offset) of the pointer *ptr*, through its chain of constant
    byte offsets (``getelementptr i8``)."""
    off = 0
    seen = 0
    while ptr in offsets and seen < 64:
        _, ptr, o = offsets[ptr]
        off += o
        seen += 1
    return ptr, off


def _one_element(base: str, off: int, ty: str, elements: dict) -> bool:
    """Whether the pair ending at byte *off* from *base* is one element of an array of
    pairs (a complex number, a record of two numbers): *base* the address of such an
    element (a one-index ``getelementptr`` of a type of two *ty*'s size)."""
    size = 2 * _SIZES[ty]
    return elements.get(base) == size and (off - _SIZES[ty]) % size == 0


def paired_accesses(text: str) -> str:
    """Two loads of one scalar type (float, double, i32, i64) from addresses the type's
    size apart (``%p`` and ``%p`` plus the size, or two constant byte offsets from one
    base), in one block with nothing between them that may write memory,
    as one load of ``<2 x T>`` where the first was and two ``extractelement``; two
    stores to such a pair of addresses with no memory access between them, as one store
    of ``<2 x T>`` where the second was.

    For: Intel's OpenCL CPU driver runs a kernel's work-items as the lanes of vectors,
    and loads a scalar at a stride across them with a gather: a complex128 element,
    which Numba reads as its two doubles (``{double, double}``), costs two gathers, and
    its store two scatters; a ``<2 x double>`` load is one contiguous load across the
    lanes and a shuffle.  A complex128 product of two arrays of 4M elements written in
    OpenCL C with scalar loads took 54-75 ms, with ``double2`` 27-36 ms (``vload2``:
    20-24 ms), on Intel's CPU driver; ours took what the scalar form took
    (benchmarks/complex_access.py).  Records of two numbers pair alike, and so do
    neighbouring elements read one after the other (``x[i]``, ``x[i + 1]``).

    Semantics: the vector load reads exactly the bytes of the two loads (the second's
    address is the first's plus the size, each a base plus constant byte offsets,
    ``getelementptr i8, ptr %p, i64 S``),
    with the first load's alignment; it moves the second load up past instructions that
    do not write memory, and the vector store moves the first store down past
    instructions that access none, so no other access sees a different value.
    Volatile, atomic and non-temporal accesses are left alone.

    Types and dominance: the vector load reads the first load's own pointer where the
    first load was; each ``extractelement`` defines the name its load defined, the
    second where the second load was.  The vector store is built where the second store
    was, from the first store's value and pointer (both dominate it)."""
    if "load" not in text and "store" not in text:
        return text
    lines = irlex.lines(text)
    offsets: dict[str, tuple] = {}   # %q -> (space, %p, bytes): function-wide, SSA
    elements: dict[str, int] = {}    # %q -> bytes of the pair whose start %q is
    for ln in lines:
        if "getelementptr" in ln:
            toks = irlex.line_tokens(ln)
            d = irlex.definition(toks)
            if d is not None:
                c = irlex.code(toks[d[1]:])
                g = _byte_offset(c)
                if g is not None:
                    offsets[toks[d[0]]] = g
                size = _element_bytes(c)
                if size is not None:
                    elements[toks[d[0]]] = size
    if not offsets or not elements:
        return text
    new: dict[int, list[str]] = {}
    # (space, base, byte offset) -> (line, name or value, type, align, pointer)
    loads: dict[tuple, tuple] = {}
    stores: dict[tuple, tuple] = {}
    count = 0
    for n, ln in enumerate(lines):
        s = ln.strip()
        if not s or s.startswith(";"):
            continue
        toks = irlex.line_tokens(ln)
        if irlex.is_label(toks) or s.startswith(("define", "}")):
            loads.clear()
            stores.clear()
            continue
        op, at = irlex.instruction(toks)
        d = irlex.definition(toks)
        c = irlex.code(toks[at:]) if op in ("load", "store") else []
        got = _load(c) if op == "load" and d is not None else None
        put = _store(c) if op == "store" else None
        if got is not None:
            ty, space, ptr, align = got
            base, off = _address(ptr, offsets)
            first = loads.pop((space, base, off - _SIZES[ty]), None)
            stores.clear()
            if first is not None and first[2] == ty and _one_element(base, off, ty, elements):
                at1, name1, _, align1, ptr1 = first
                vec = irlex.spell_local(f"gpux.pair.{count}")
                count += 1
                vt = f"<2 x {ty}>"
                new[at1] = [f"  {vec} = load {vt}, ptr addrspace({space}) {ptr1}, "
                            f"align {align1}",
                            f"  {name1} = extractelement {vt} {vec}, i64 0"]
                new[n] = [f"  {toks[d[0]]} = extractelement {vt} {vec}, i64 1"]
                continue
            loads[(space, base, off)] = (n, toks[d[0]], ty, align, ptr)
            continue
        if put is not None:
            ty, value, space, ptr, align = put
            base, off = _address(ptr, offsets)
            first = stores.pop((space, base, off - _SIZES[ty]), None)
            loads.clear()
            stores.clear()
            if first is not None and first[2] == ty and _one_element(base, off, ty, elements):
                at1, value1, _, align1, ptr1 = first
                v0 = irlex.spell_local(f"gpux.pair.{count}")
                v1 = irlex.spell_local(f"gpux.pair.{count + 1}")
                count += 2
                vt = f"<2 x {ty}>"
                new[at1] = []
                new[n] = [f"  {v0} = insertelement {vt} poison, {ty} {value1}, i64 0",
                          f"  {v1} = insertelement {vt} {v0}, {ty} {value}, i64 1",
                          f"  store {vt} {v1}, ptr addrspace({space}) {ptr1}, "
                          f"align {align1}"]
                continue
            stores[(space, base, off)] = (n, value, ty, align, ptr)
            continue
        if op in _WRITES:
            loads.clear()
        if op in _ACCESSES:
            stores.clear()
    if not new:
        return text
    out: list[str] = []
    for n, ln in enumerate(lines):
        out.extend(new.get(n, (ln,)))
    return "\n".join(out)
