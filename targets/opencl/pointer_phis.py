"""A phi that picks one of several shared arrays, written so that Intel's OpenCL CPU
driver computes it right.

A tuple of shared arrays indexed at run time (``(x, y)[k][i]``) is, after the
compiler splits its aggregate phi (``legalize.split_aggregate_phis``), a ``switch``
on ``k`` whose cases meet in a phi of generic pointers, each a constant
``addrspacecast`` of a work-group global.  Intel's OpenCL CPU driver (2026.2) reads
zeros through such a phi when the switch sends two case values to one block (Numba's
sends ``k`` and ``k - n`` to one case); the SPIR-V is valid (``spirv-val``) and
right.  With a plain two-way branch before the phi, or with the same pointers
carried through the phi as integers, the driver is right.  Smallest IR::

    @x = internal addrspace(3) global [4 x double] undef
    @y = internal addrspace(3) global [4 x double] undef
    ...
      switch i64 %k, label %exit [ i64 0, label %zero  i64 2, label %zero
                                   i64 1, label %one ]
    one:
      br label %end
    zero:
      br label %end
    end:
      %a = phi ptr addrspace(4) [ addrspacecast (ptr addrspace(3) @y to ptr addrspace(4)), %one ],
                                [ addrspacecast (ptr addrspace(3) @x to ptr addrspace(4)), %zero ]
      %v = load double, ptr addrspace(4) %a      ; 0.0 for every work-item

So such a phi (every incoming value a constant cast of a work-group global to the
generic space) becomes a phi of the pointers as integers
(``ptrtoint``) and one ``inttoptr`` after the block's phis.  Only this shape is
rewritten; the module is otherwise left as it is.
"""

from __future__ import annotations

from numba_gpux import irlex
from numba_gpux.irlex import code, line_tokens, match_paren, name, spell_local

__all__ = ["shared_pointer_phis_as_integers"]

_GENERIC = ["ptr", "addrspace", "(", "4", ")"]
#: a constant cast of a work-group global to the generic space, as code tokens
#: (``None`` stands for the global's name)
_CAST = ["addrspacecast", "(", "ptr", "addrspace", "(", "3", ")", None, "to", *_GENERIC, ")"]


def shared_pointer_phis_as_integers(text: str) -> str:
    """*text* with every phi of the shape above carried as integers (see the module).

    The phi is read through the IR lexer's tokens, so a string or a quoted name that
    spells such a phi is never taken for one.  Types: the integer phi's incoming
    values are ``ptrtoint`` of the original constants, and ``inttoptr`` gives back a
    generic pointer with the phi's name.  Dominance: the integer phi stands where the
    phi stood, and the ``inttoptr`` right after the block's last phi, before any
    non-phi use of the phi in its block (a phi use is at the end of a block the
    phi's block dominates)."""
    if " = phi ptr addrspace(4) [ addrspacecast (" not in text:  # LLVM's spelling
        return text
    lines = irlex.lines(text)
    for f in reversed(irlex.functions(lines)):
        lines[f.start:f.stop] = _in_body(lines[f.start:f.stop])
    return "\n".join(lines)


def _is_phi(line: str) -> bool:
    c = code(line_tokens(line)) if " = phi " in line else ()
    return len(c) > 2 and c[1] == "=" and c[2] == "phi"


def _in_body(body: list[str]) -> list[str]:
    """One function body with its phis of the shape above carried as integers."""
    out: list[str] = []
    pending: list[str] = []  # the inttoptr lines, written after the block's last phi
    taken = None
    for n, line in enumerate(body):
        if pending and not _is_phi(line):
            out.extend(pending)
            pending = []
        c = code(line_tokens(line)) if " = phi ptr addrspace(4) [" in line else ()
        pairs = _cast_pairs(c)
        # a numbered phi is rewritten only where its inttoptr keeps the numbering in
        # order: as the block's last phi
        if pairs is None or (c[0][1:].isdigit() and n + 1 < len(body) and _is_phi(body[n + 1])):
            out.append(line)
            continue
        if taken is None:
            taken = {name(t) for ln in body for t in line_tokens(ln)
                     if irlex.kind(t) is irlex.LOCAL}
        want, k = f"{name(c[0])}.gpux.int", 0
        as_int = want
        while as_int in taken:
            k += 1
            as_int = f"{want}.{k}"
        taken.add(as_int)
        as_int = spell_local(as_int)
        ints = ", ".join(f"[ ptrtoint (ptr addrspace(4) addrspacecast (ptr addrspace(3) {g} to "
                         f"ptr addrspace(4)) to i64), {block} ]" for g, block in pairs)
        out.append(f"  {as_int} = phi i64 {ints}")
        pending.append(f"  {c[0]} = inttoptr i64 {as_int} to ptr addrspace(4)")
    out.extend(pending)
    return out


def _cast_pairs(c: list):
    """[(global, block)] of the phi whose code tokens are *c*, if it has two or more
    incoming values and each is a constant cast of a work-group global to the
    generic space; else None."""
    if len(c) < 9 or c[1] != "=" or c[2] != "phi" or c[3:8] != _GENERIC:
        return None
    pairs, k = [], 8
    while k < len(c):
        if c[k] != "[":
            return None
        try:
            close = match_paren(c, k)
        except ValueError:
            return None
        inner = c[k + 1:close]
        value, block = inner[:-2], inner[-2:]
        if (len(value) != len(_CAST) or block[:1] != [","]
                or irlex.kind(block[1]) is not irlex.LOCAL
                or any(want is not None and got != want for got, want in zip(value, _CAST))
                or irlex.kind(value[_CAST.index(None)]) is not irlex.GLOBAL):
            return None
        pairs.append((value[_CAST.index(None)], block[1]))
        k = close + 1
        if k < len(c) and c[k] == ",":
            k += 1
    return pairs if len(pairs) >= 2 else None
