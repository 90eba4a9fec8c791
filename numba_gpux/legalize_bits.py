"""An IR rewrite for back ends that accept only some integer widths: the any-of and
all-of tests InstCombine writes on a vector of booleans as an integer of as many bits
(one of :data:`legalize.REWRITES`; see that module for how rewrites are applied, read
and checked)."""

from __future__ import annotations

from . import irlex

__all__ = ["bool_vector_bits"]

#: booleans in the vector -> the legal width their bytes make (8 booleans are an i8)
_WIDE = {2: 16, 4: 32}


def _bytes_constant(c: str, lanes: int) -> str | None:
    """The constant of the wide comparison for the constant *c* of the narrow one: bit
    k of *c* becomes byte k (1 or 0); None where *c* is not an integer literal."""
    if c in ("true", "false"):
        return None
    try:
        v = int(c, 10) % (1 << lanes)
    except ValueError:
        return None
    return str(sum(1 << (8 * k) for k in range(lanes) if v >> k & 1))


def bool_vector_bits(text: str) -> str:
    """``bitcast <4 x i1> %v to i4`` compared with ``icmp eq``/``ne`` to a constant, as
    the same test on ``bitcast (zext <4 x i1> %v to <4 x i8>) to i32`` (2 booleans: i16).

    For: SPIR-V without an arbitrary-precision extension has integers of 8, 16, 32 and
    64 bits only, and LLVM's SPIR-V back end cannot write an ``i4``.  The loop vectorizer
    turns a loop that sets a flag (``for i in range(n): if a[i] != 0: found = True``)
    into an or of ``<4 x i1>`` vectors, and InstCombine writes the reduction's final
    ``llvm.vector.reduce.or`` as ``icmp ne i4 (bitcast <4 x i1> %v to i4), 0`` (and an
    all-of as ``icmp eq ... -1``): validation then refused such a kernel.  Smallest IR::

        %bits = bitcast <4 x i1> %any to i4
        %found = icmp ne i4 %bits, 0

    Can go when the SPIR-V back end legalizes odd-width integers (LLVM 22 does not).

    Semantics: the zero extension puts boolean k in byte k (0 or 1) of the wide integer,
    so it equals a constant whose byte k is bit k of the narrow constant exactly when
    the narrow integer equals that constant.  Only bitcasts every use of which is such
    a comparison (with the constant second, as InstCombine writes it) are rewritten;
    others stay (and validation names them).

    Types and dominance: the two new instructions take the bitcast's place and read its
    operand; each comparison keeps its name and type (i1) and reads the new integer,
    defined where the bitcast was, which dominated it.
    """
    if "x i1> " not in text or " to i" not in text:
        return text
    lines = irlex.lines(text)
    for f in reversed(irlex.functions(lines)):
        body = lines[f.start:f.stop]
        names = irlex.FreshNames(irlex.line_tokens(ln) for ln in body)
        for n, ln in enumerate(body):
            if "bitcast" not in ln:
                continue
            toks = irlex.line_tokens(ln)
            op, at = irlex.instruction(toks)
            d = irlex.definition(toks)
            if op != "bitcast" or d is None:
                continue
            ci = [k for k in range(at, len(toks)) if irlex.is_code(toks[k])]
            c = [toks[k] for k in ci]
            # bitcast < N x i1 > V to iN  [, !attachment ...]
            if (len(c) < 9 or (len(c) > 9 and c[9] != ",")
                    or c[1:6] != ["<", c[2], "x", "i1", ">"] or c[7] != "to"
                    or not c[2].isdigit() or int(c[2]) not in _WIDE
                    or c[8] != f"i{c[2]}"):
                continue
            lanes, res = int(c[2]), toks[d[0]]
            wide = _WIDE[lanes]
            zext = names.fresh(irlex.name(res) + ".bytes")
            bits = names.fresh(irlex.name(res) + ".wide")
            edits = {}
            for m, u in enumerate(body):
                if m == n or res not in irlex.local_names(u):
                    continue
                ut = irlex.line_tokens(u)
                uop, uat = irlex.instruction(ut)
                ui = [k for k in range(uat, len(ut)) if irlex.is_code(ut[k])]
                uc = [ut[k] for k in ui]
                # icmp eq|ne iN %res , C  [, !attachment ...]
                k = _bytes_constant(uc[5], lanes) if uop == "icmp" and len(uc) >= 6 and (
                    len(uc) == 6 or uc[6] == ",") else None
                if (k is None or uc[1] not in ("eq", "ne") or uc[2] != c[8]
                        or uc[3] != res or uc[4] != ","):
                    edits = {}
                    break
                edits[m] = irlex.join(irlex.replace(
                    ut, uat, ui[5] + 1, f"icmp {uc[1]} i{wide} {bits}, {k}"))
            if not edits:
                continue
            indent = ln[:len(ln) - len(ln.lstrip())]
            tail = irlex.join(toks[ci[9]:]) if len(c) > 9 else ""  # (attachments)
            body[n] = (f"{indent}{zext} = zext <{lanes} x i1> {c[6]} to <{lanes} x i8>{tail}\n"
                       f"{indent}{bits} = bitcast <{lanes} x i8> {zext} to i{wide}{tail}")
            for m, new in edits.items():
                body[m] = new
        lines[f.start:f.stop] = "\n".join(body).split("\n")
    return "\n".join(lines)

