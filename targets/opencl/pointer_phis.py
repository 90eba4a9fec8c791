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

from numba_gpux import irtext

__all__ = ["shared_pointer_phis_as_integers"]

_GENERIC = "ptr addrspace(4)"
_HEAD = f" = phi {_GENERIC} [ addrspacecast (ptr addrspace(3) "
_CAST = ("addrspacecast (ptr addrspace(3) @", f" to {_GENERIC})")


def shared_pointer_phis_as_integers(text: str) -> str:
    """*text* with every phi of the shape above carried as integers (see the module)."""
    if _HEAD not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    pending: list[str] = []  # the inttoptr lines, written after the block's last phi
    for line in lines:
        if pending and " = phi " not in line:
            out.extend(pending)
            pending = []
        new = _as_integers(line) if _HEAD in line else None
        if new is None:
            out.append(line)
        else:
            out.append(new[0])
            pending.append(new[1])
    out.extend(pending)
    return "\n".join(out)


def _as_integers(line: str):
    """(integer phi, inttoptr) for the phi *line*, or None if it is not of the shape."""
    d = irtext.definition(line)
    if d is None or not d[1].startswith(f"phi {_GENERIC} "):
        return None
    name, rhs = d
    pairs = _bracketed(rhs[len(f"phi {_GENERIC} "):])
    if pairs is None or len(pairs) < 2:
        return None
    ints = []
    for value, block in pairs:
        if not (value.startswith(_CAST[0]) and value.endswith(_CAST[1])):
            return None
        ints.append(f"[ ptrtoint ({_GENERIC} {value} to i64), {block} ]")
    as_int = f'{name[:-1]}.gpux.int"' if name.endswith('"') else f"{name}.gpux.int"
    return (f"  {as_int} = phi i64 {', '.join(ints)}",
            f"  {name} = inttoptr i64 {as_int} to {_GENERIC}")


def _bracketed(s: str):
    """The ``[ value, %block ]`` pairs of a phi's incoming list *s*, else None."""
    pairs, i = [], 0
    while i < len(s):
        if s[i] in " ,":
            i += 1
            continue
        if s[i] != "[":
            return None
        depth, j = 0, i
        while j < len(s):
            if s[j] in "[(":
                depth += 1
            elif s[j] in "])":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        inner = s[i + 1:j].strip()
        cut = inner.rfind(", %")
        if depth != 0 or cut < 0:
            return None
        pairs.append((inner[:cut].strip(), inner[cut + 2:].strip()))
        i = j + 1
    return pairs
