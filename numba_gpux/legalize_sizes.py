"""An IR rewrite for back ends that cannot declare a variable of a type holding an array
of no elements (one of :data:`legalize.REWRITES`; see that module for how rewrites are
applied, read and checked)."""

from __future__ import annotations

from . import irlex

__all__ = ["zero_length_allocas"]

#: bytes (and alignment) of the scalar types
_SCALARS = {"i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "i128": 16, "half": 2, "bfloat": 2,
            "float": 4, "double": 8}


def _pointer_bytes(text: str) -> int:
    """A pointer's size by the module's data layout (``p:32`` or ``p:64``; 64 bits when
    the layout does not say, as LLVM takes it)."""
    for ln in text.split("\n", 8)[:8]:
        if ln.startswith("target datalayout"):
            for spec in ln.split('"')[1].split("-"):
                if spec.startswith("p:"):
                    return int(spec.split(":")[1]) // 8
    return 8


def _layout(c: list, i: int, ptr: int):
    """(size, alignment, position after) of the type that starts at ``c[i]`` (scalars,
    pointers, arrays, literal and packed structs, with the natural alignment of each
    member), or None for another type (vectors, named types)."""
    t = c[i] if i < len(c) else ""
    if t in _SCALARS:
        return _SCALARS[t], _SCALARS[t], i + 1
    if t == "ptr":
        j = i + 1
        if j < len(c) and c[j] == "addrspace":
            j += 4  # addrspace ( n )
        return ptr, ptr, j
    if t == "[":
        if i + 3 >= len(c) or not c[i + 1].isdigit() or c[i + 2] != "x":
            return None
        inner = _layout(c, i + 3, ptr)
        if inner is None or inner[2] >= len(c) or c[inner[2]] != "]":
            return None
        return int(c[i + 1]) * inner[0], inner[1], inner[2] + 1
    packed = t == "<" and i + 1 < len(c) and c[i + 1] == "{"
    if t != "{" and not packed:
        return None
    j = i + (2 if packed else 1)
    size, align = 0, 1
    while j < len(c) and c[j] != "}":
        field = _layout(c, j, ptr)
        if field is None:
            return None
        fsize, falign, j = field
        if not packed:
            size = -(-size // falign) * falign
            align = max(align, falign)
        size += fsize
        if j < len(c) and c[j] == ",":
            j += 1
    if j >= len(c):
        return None
    j += 1
    if packed:
        if j >= len(c) or c[j] != ">":
            return None
        return size, 1, j + 1
    return -(-size // align) * align, align, j


def zero_length_allocas(text: str) -> str:
    """A private variable whose type holds an array of no elements allocated as bytes:
    ``alloca { ptr, i64, [0 x i64] }, align 8`` as ``alloca [16 x i8], align 8``.

    For: LLVM's SPIR-V back end writes ``[0 x T]`` as a runtime array, which a kernel
    module may not declare, and stops the process (``LLVM ERROR: Runtime arrays are not
    allowed in non-shader SPIR-V modules``).  Numba's struct of a 0-d array has two such
    arrays (its shape and strides), and the optimizer can leave one in memory (NumPy's
    ``np.percentile`` in a kernel).  After the optimizer the variable is reached through
    byte offsets (``getelementptr i8``); the type's size, computed here by the data
    layout's rules, and its alignment are kept, and so are the alloca's name, place and
    result (``ptr``).  A type this cannot measure is left as it is.
    """
    if "[0 x" not in text:
        return text
    ptr = _pointer_bytes(text)
    lines = irlex.lines(text)
    for n, ln in enumerate(lines):
        if "alloca" not in ln or "[0 x" not in ln:
            continue
        toks = irlex.line_tokens(ln)
        op, at = irlex.instruction(toks)
        if op != "alloca":
            continue
        ci = [k for k in range(at + 1, len(toks)) if irlex.is_code(toks[k])]
        c = [toks[k] for k in ci]
        if not c or c[0] == "inalloca":
            continue
        found = _layout(c, 0, ptr)
        if found is None:
            continue
        size, natural, end = found
        if not any(c[k] == "[" and c[k + 1] == "0" for k in range(end - 1)):
            continue  # the [0 x is in an operand after the type
        if "align" not in c[end:]:
            rest = end + 3 if end + 2 < len(c) and c[end] == "," and c[end + 1].startswith("i") \
                else end
            toks = irlex.replace(toks, ci[rest - 1] + 1, ci[rest - 1] + 1, f", align {natural}")
        lines[n] = irlex.join(irlex.replace(toks, ci[0], ci[end - 1] + 1,
                                            f"[{max(size, 1)} x i8]"))
    return "\n".join(lines)
