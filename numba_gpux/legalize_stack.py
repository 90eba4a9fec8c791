"""An IR rewrite for back ends without a run-time stack: LLVM's inliner brackets an
inlined body with ``llvm.stacksave``/``llvm.stackrestore`` (one of
:data:`legalize.REWRITES`; see that module for how rewrites are applied, read and
checked)."""

from __future__ import annotations

from . import irlex

__all__ = ["static_stack"]

_SAVE, _RESTORE = "llvm.stacksave", "llvm.stackrestore"


def _callee_name(toks) -> str | None:
    at = irlex.callee(toks)
    return irlex.name(toks[at]) if at is not None and toks[at][0] == "@" else None


def _constant_count(toks, at: int) -> bool:
    """Whether the ``alloca`` at code position *at* of *toks* allocates a count fixed in
    the IR: no count operand, or an integer literal."""
    c = irlex.code(toks[at + 1:])
    if c and c[0] == "inalloca":
        c = c[1:]
    # the allocated type, then optionally ", <ty> <count>", then ", align n" / ", addrspace(n)"
    depth, i = 0, 0
    while i < len(c):
        t = c[i]
        if t in ("[", "{", "<", "("):
            depth += 1
        elif t in ("]", "}", ">", ")"):
            depth -= 1
        elif t == "," and depth == 0:
            break
        i += 1
    if i + 2 < len(c) and c[i] == "," and c[i + 1] not in ("align", "addrspace"):
        return c[i + 2].lstrip("-").isdigit()
    return True


def static_stack(text: str) -> str:
    """In each function that calls ``llvm.stacksave``, every ``alloca`` moved to the
    top of the entry block and the ``llvm.stacksave``/``llvm.stackrestore`` calls
    dropped.

    For: LLVM's inliner saves and restores the stack around an inlined body that has
    allocas of its own outside its entry block (Numba's NumPy implementations have
    some: a kernel holding several array expressions with ``np.where`` gets them).
    LLVM's SPIR-V back end writes those intrinsics only with the
    SPV_INTEL_variable_length_array extension, and without it ends the process
    ("LLVM ERROR: llvm.stackrestore intrinsic: this instruction requires ...").  GPU
    code has no run-time stack to save: every private variable is storage of its own
    for the whole call (SPIR-V's Function-storage OpVariable, which must be in the
    entry block).  Can go when the back end writes them without the extension (no
    target has that today).

    Semantics: an alloca of a fixed count gives memory whose contents matter only
    while it is live; between a save and its restore, the inlined body's allocas
    are live only there, so one storage per alloca for the whole function holds the
    same values (the restore ends their lifetime, and an alloca executed again after
    it starts a new one, which nothing read from the old one before).  A function
    with an alloca whose count is a run-time value is left as it is (it needs a
    run-time stack; the back end then says so).

    Types and dominance: an alloca's operands are its type and literal constants, so
    at the top of the entry block it still dominates every use; the dropped restores
    used only the dropped saves' values, and nothing else uses a save's value.
    """
    if _SAVE not in text:
        return text
    lines = irlex.lines(text)
    for f in reversed(irlex.functions(lines)):
        body = lines[f.start:f.stop]
        if not any(_SAVE in ln for ln in body):
            continue
        allocas, keep, dynamic = [], [], False
        for ln in body:
            toks = irlex.line_tokens(ln)
            op, at = irlex.instruction(toks)
            if op == "alloca":
                if not _constant_count(toks, at):
                    dynamic = True
                    break
                allocas.append(ln)
                continue
            if op == "call":
                callee = _callee_name(toks)
                if callee is not None and callee.startswith((_SAVE, _RESTORE)):
                    continue
            keep.append(ln)
        if dynamic:
            continue
        # the entry block's first instruction (before it: blank lines, comments and
        # the entry block's label, if it has one)
        first = 0
        while first < len(keep) and irlex.instruction(irlex.line_tokens(keep[first]))[0] is None:
            first += 1
        lines[f.start:f.stop] = keep[:first] + allocas + keep[first:]
    return "\n".join(lines)
