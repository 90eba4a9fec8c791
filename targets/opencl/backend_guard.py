"""IR that LLVM 22's SPIR-V back end aborts the process on, found before emission.

An assertion in the back end is ``abort()``: no exception reaches Python, and the
user's interpreter dies.  The compiler writes every construct it knows of another
way first (``numba_gpux/legalize.py``); this check stands behind those rewrites, so
that a module that still holds one of the shapes below is an InternalCompilerError
naming it, and the process lives.  Each shape, with the assertion it hits:

* a ``phi`` of a struct or array type (``SPIRVEmitIntrinsics`` "UNREACHABLE", or
  ``ArrayRef::drop_front`` "Dropping more elements than exist" while selecting);
  ``legalize.split_aggregate_phis`` splits them down to their scalar leaves;
* an ``extractvalue`` of a value that is itself an aggregate taken out of another by
  ``extractvalue`` (``MachineOperand::getReg`` "This is not a register operand!"):
  ``%s = extractvalue {i64, {i64, i64}} %x, 1`` then ``extractvalue {i64, i64} %s, 1``;
  one ``extractvalue %x, 1, 1`` is accepted.

The text of the module, which the target prints before emission anyway, is searched
for the shapes' spelling first (microseconds); only a module where one may be is
walked as llvmlite objects (much slower per instruction: benchmarks/results/costs.md) to confirm it.
"""

from __future__ import annotations

__all__ = ["abort_shapes"]


def abort_shapes(module, text: str) -> list[str]:
    """The constructs of *module* (whose text is *text*) that the SPIR-V back end would
    abort on, each described with its function; [] for a module it accepts."""
    if not (" = phi {" in text or " = phi [" in text or _nested_extract(text)):
        return []
    found = []
    for fn in module.functions:
        if fn.is_declaration:
            continue
        aggregate_extracts = set()
        for block in fn.blocks:
            for ins in block.instructions:
                op = ins.opcode
                if op == "phi" and _aggregate(ins.type):
                    found.append(f"a phi of the aggregate type {ins.type} in {fn.name} "
                                 f"(%{ins.name or '<unnamed>'})")
                elif op == "extractvalue":
                    src = next(iter(ins.operands))
                    if src in aggregate_extracts:
                        found.append(f"an extractvalue of %{src.name or '<unnamed>'}, an "
                                     f"aggregate itself taken out by extractvalue, in {fn.name}")
                    if _aggregate(ins.type):
                        aggregate_extracts.add(ins)
    return found


def _aggregate(ty) -> bool:
    return ty.is_struct or ty.is_array


def _nested_extract(text: str) -> bool:
    """Whether some ``extractvalue`` in *text* reads a type with an aggregate inside it
    (only such a read can give an aggregate result that another one reads)."""
    at = text.find(" = extractvalue ")
    while at >= 0:
        start = at + len(" = extractvalue ")
        end = _type_end(text, start)
        if end > start and any(c in text[start + 1:end] for c in "{["):
            return True
        at = text.find(" = extractvalue ", start)
    return False


def _type_end(text: str, start: int) -> int:
    """The end of the bracketed type that starts at *start* of *text* (``{...}``,
    ``[...]``, ``<{...}>``), or *start* where none starts there."""
    depth = 0
    for i in range(start, min(len(text), start + 4096)):
        c = text[i]
        if c in "{[<":
            depth += 1
        elif c in "}]>":
            depth -= 1
            if depth == 0:
                return i + 1
        elif c == "\n" or (depth == 0 and c == " "):
            break
    return start
