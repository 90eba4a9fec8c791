"""An IR rewrite for back ends that cannot declare a variable of a type holding an array
of no elements (one of :data:`legalize.REWRITES`; see that module for how rewrites are
applied, read and checked)."""

from __future__ import annotations

from . import irlex

__all__ = ["zero_length_allocas", "typed_offsets", "alloca_operands", "as_bytes"]

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
        found = alloca_operands(ln)
        if found is None or found[2][:1] == ["inalloca"]:
            continue
        toks, ci, c = found
        layout = _layout(c, 0, ptr)
        if layout is None:
            continue
        size, natural, end = layout
        if not any(c[k] == "[" and c[k + 1] == "0" for k in range(end - 1)):
            continue  # the [0 x is in an operand after the type
        lines[n] = as_bytes(toks, ci, c, 0, end, max(size, 1), natural)
    return "\n".join(lines)


def alloca_operands(line: str):
    """(tokens, positions of the code tokens after ``alloca``, those code tokens) of an
    ``alloca`` line, or None for another line."""
    toks = irlex.line_tokens(line)
    op, at = irlex.instruction(toks)
    if op != "alloca":
        return None
    ci = [k for k in range(at + 1, len(toks)) if irlex.is_code(toks[k])]
    return toks, ci, [toks[k] for k in ci]


def as_bytes(toks, ci, c, start: int, end: int, size: int, natural: int) -> str:
    """The ``alloca`` line of :func:`alloca_operands` (*toks*, *ci*, *c*) whose allocated
    type is ``c[start:end]``, allocating ``[size x i8]`` instead, with the alignment the
    type gave (*natural*) made explicit where the line states none (after a count
    operand, if it has one)."""
    if "align" not in c[end:]:
        rest = end + 3 if end + 2 < len(c) and c[end] == "," and c[end + 1].startswith("i") \
            else end
        toks = irlex.replace(toks, ci[rest - 1] + 1, ci[rest - 1] + 1, f", align {natural}")
    return irlex.join(irlex.replace(toks, ci[start], ci[end - 1] + 1, f"[{size} x i8]"))


_GEP_FLAGS = frozenset(("inbounds", "nuw", "nusw"))


def _constant_byte_gep(toks):
    """(base name, byte offset, position of the ``i8`` token, position of the offset
    token) of ``%p = getelementptr [flags] i8, ptr %base, i64 C`` with a constant C, or
    None for another line."""
    op, at = irlex.instruction(toks)
    if op != "getelementptr" or irlex.definition(toks) is None:
        return None
    ci = [k for k in range(at + 1, len(toks)) if irlex.is_code(toks[k])]
    c = [toks[k] for k in ci]
    s = 0
    while s < len(c) and c[s] in _GEP_FLAGS:
        s += 1
    # i8 , ptr %base , i64 C
    if c[s:s + 3] != ["i8", ",", "ptr"] or len(c) != s + 7 or c[s + 4] != "," or \
            c[s + 5] != "i64" or irlex.kind(c[s + 3]) is not irlex.LOCAL:
        return None
    try:
        offset = int(c[s + 6])
    except ValueError:
        return None
    return irlex.name(c[s + 3]), offset, ci[s], ci[s + 6]


def _gep_operands(toks, at: int) -> list:
    """The operands of the ``getelementptr`` at *at*, each a list of code tokens: its
    flags and source element type, its base (``ptr %p``), its indices (``i64 %k``)."""
    return irlex.split_depth0(irlex.code(toks[at + 1:]))


def _base(toks, at: int):
    """The base pointer (a token) of the ``getelementptr`` at *at*, or None."""
    ops = _gep_operands(toks, at)
    return ops[1][-1] if len(ops) > 1 and ops[1] else None


def typed_offsets(lines: list, array: str, element: str, size: int) -> bool:
    """Rewrite, in *lines*, every ``getelementptr i8`` from the private array *array*
    (a name) at a constant offset into one of its *element* type: ``getelementptr
    inbounds nuw i8, ptr %a, i64 8`` as ``getelementptr inbounds nuw double, ptr %a,
    i64 1``.  True when the array may then stay typed: every pointer into it comes from
    it by ``getelementptr`` or ``addrspacecast`` (no select, phi or other cast of one, no
    call but of LLVM's intrinsics, never stored itself), none by a byte offset that
    is not a whole number of elements, and nothing is stored through one computed from
    an index known only at run time (the Intel OpenCL CPU driver's fault that
    ``byte_allocas`` works around: such a store lands in another work-item's array).
    False, with *lines* unchanged, otherwise."""
    derived = {irlex.spell_local(array)}  # pointers into the array
    indexed: set = set()  # ... of those, the ones with an index known at run time only
    uses: list = []  # (line number, tokens) of each line that uses one of them
    changed = True
    seen: set = set()
    while changed:
        changed = False
        for n, ln in enumerate(lines):
            if n in seen or not any(p in ln for p in derived):
                continue
            toks = irlex.line_tokens(ln)
            if not derived & set(toks):
                continue
            seen.add(n)
            uses.append((n, toks))
            op, at = irlex.instruction(toks)
            if op == "addrspacecast":  # (the same pointer in another space)
                made = irlex.defined_value(toks)
                if made not in derived:
                    derived.add(made)
                    if set(toks) & indexed:
                        indexed.add(made)
                    changed = True
            elif op == "getelementptr":
                base = _base(toks, at)
                if base in derived:
                    made = irlex.defined_value(toks)
                    derived.add(made)
                    if base in indexed or (_constant_byte_gep(toks) is None and
                                           _runtime_index(toks)):
                        indexed.add(made)
                    changed = True
    edits = []
    for n, toks in uses:
        op, at = irlex.instruction(toks)
        if op not in ("alloca", "getelementptr", "load", "store", "call", "addrspacecast"):
            return False  # (a select, a phi, a cast: pointers this does not follow)
        if op == "store":  # store <ty> <value>, ptr <pointer>
            operands = irlex.split_depth0(irlex.code(toks[at + 1:]))
            if len(operands) < 2 or not operands[1] or operands[1][-1] in indexed or \
                    derived & set(operands[0]):
                return False  # (or the pointer itself stored: it escapes)
            continue
        if op == "call":
            callee = irlex.callee(toks, at)
            if callee is None or not irlex.name(toks[callee]).startswith("llvm."):
                return False  # (a function this cannot see into)
            continue
        if op != "getelementptr" or _base(toks, at) != irlex.spell_local(array):
            continue
        found = _constant_byte_gep(toks)
        if found is None:
            if _gep_operands(toks, at)[0][-1:] == ["i8"] and _runtime_index(toks):
                return False  # a byte offset computed at run time
            continue
        _, offset, ty_at, off_at = found
        if offset % size:
            return False
        toks = list(toks)
        toks[ty_at] = element
        toks[off_at] = str(offset // size)
        edits.append((n, irlex.join(toks)))
    for n, ln in edits:
        lines[n] = ln
    return True


def _runtime_index(toks) -> bool:
    """Whether the ``getelementptr`` line *toks* has an index that is not a constant."""
    ops = _gep_operands(toks, irlex.instruction(toks)[1])
    return any(len(o) == 2 and irlex.kind(o[1]) is irlex.LOCAL for o in ops[2:])
