"""An IR rewrite for drivers that fold a kernel's early exit only when it is written
with ``and``/``or`` (one of :data:`legalize.REWRITES`; see that module for how
rewrites are applied, read and checked)."""

from __future__ import annotations

from . import irlex

__all__ = ["logical_selects"]


def logical_selects(text: str) -> str:
    """``select i1 %a, i1 %b, i1 false`` as ``and i1 %a, %b``, and
    ``select i1 %a, i1 true, i1 %b`` as ``or i1 %a, %b``.

    For: a driver that runs the work-items of a group as loops on a CPU core (Intel's
    OpenCL CPU driver, 2026.2) turns a kernel's exit on its work-item indices, such as
    ``if 0 < i < n - 1 and 0 < j < m - 1:`` around the whole body, into the bounds of
    those loops, and then loads whole vectors; it does so when the conditions are
    combined with ``and`` (what OpenCL C source gives it), not when they are combined
    with selects, which is how InstCombine writes a short-circuit ``and`` of
    comparisons.  Without the rewrite every load of such a kernel is a masked vector
    load (``vmaskmovpd``), and a 2-D five-point stencil takes twice as long as the same
    kernel written in OpenCL C.  Smallest IR::

        %c1 = icmp slt i64 %i, %n1
        %c = select i1 %c0, i1 %c1, i1 false     ; driver: predicated body
        br i1 %c, label %body, label %exit

    Can go when that driver folds a select-combined exit condition as it folds an
    ``and`` (benchmarks/codegen_speed.py's stencil shows the difference).

    Semantics: the select and the ``and`` (``or``) give the same value unless ``%b`` is
    poison where ``%a`` decides alone, and SPIR-V has no poison: LLVM's SPIR-V back end
    writes integer arithmetic without its NoSignedWrap and NoUnsignedWrap decorations,
    so in the module the driver receives ``%b`` is a definite value and OpLogicalAnd
    (OpLogicalOr) of it is the select's value.  Only scalar ``i1`` selects are changed;
    their branch weights (``!prof``), which an ``and`` may not carry, are dropped.

    Types and dominance: each new instruction defines the same name, of the same type,
    at the same place, and reads the select's own operands.
    """
    if "select i1 " not in text:
        return text
    lines = irlex.lines(text)
    for n, ln in enumerate(lines):
        if "select" not in ln:
            continue
        toks = irlex.line_tokens(ln)
        op, at = irlex.instruction(toks)
        if op != "select" or irlex.definition(toks) is None:
            continue
        ci = [k for k in range(at, len(toks)) if irlex.is_code(toks[k])]
        # select i1 A , i1 B , i1 C  [, !md ...]
        if len(ci) < 9 or [toks[ci[k]] for k in (1, 3, 4, 6, 7)] != ["i1", ",", "i1", ",", "i1"]:
            continue
        a, b, c = toks[ci[2]], toks[ci[5]], toks[ci[8]]
        if c == "false":
            new = f"and i1 {a}, {b}"
        elif b == "true":
            new = f"or i1 {a}, {c}"
        else:
            continue
        # attachments stay but branch weights, which only a select or branch may carry
        rest = [toks[k] for k in ci[9:]]
        kept = [f", {rest[k + 1]} {rest[k + 2]}" for k in range(0, len(rest) - 2, 3)
                if rest[k + 1] != "!prof"]
        lines[n] = irlex.join([*toks[:at], new + "".join(kept)])
    return "\n".join(lines)
