"""An IR rewrite for back ends that accept only some integer widths: the any-of and
all-of tests InstCombine writes on a vector of booleans as an integer of as many bits
(one of :data:`legalize.REWRITES`; see that module for how rewrites are applied, read
and checked)."""

from __future__ import annotations

from . import irlex

__all__ = ["bool_vector_bits", "widen_bitreverse"]

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



def _cast(toks):
    """(opcode, source type, operand, destination type) of a scalar ``trunc``/``zext``/
    ``sext`` line, else None."""
    op, at = irlex.instruction(toks)
    if op not in ("trunc", "zext", "sext"):
        return None
    c = [t for t in toks[at:] if irlex.is_code(t)]
    # op iS %v to iT [, !attachment ...]
    if len(c) < 5 or c[3] != "to" or (len(c) > 5 and c[5] != ","):
        return None
    return op, c[1], c[2], c[4]


def _width(ty: str) -> int | None:
    return int(ty[1:]) if ty[:1] == "i" and ty[1:].isdigit() else None


def widen_bitreverse(text: str, widths) -> str:
    """*text* with each ``llvm.bitreverse.iN`` of a width N not in *widths* (the widths
    a target can represent) done at the narrowest of *widths* above N, W.

    For: InstCombine turns a bit-reversal loop of a constant count (``for b in
    range(10): r |= ((i >> b) & 1) << (9 - b)``, an FFT's index) into
    ``zext (llvm.bitreverse.i10 (trunc %i to i10))``; a target without odd widths
    (SPIR-V) then refused the kernel.

    Semantics: ``bitreverse.iW(trunc %v to iW) >> (W - N)`` is ``bitreverse.iN(trunc
    %v to iN)`` in its low N bits and zero above, which is the zero extension of it
    (an arithmetic shift gives the sign extension): the bits of %v from N up to W
    land below bit W - N and are shifted out.  Only calls whose operand is a ``trunc``
    of an integer at least W wide and every use of which is a ``zext``, ``sext`` or
    ``trunc`` are rewritten; the others stay (and validation names their width).

    Types and dominance: the truncation and the call take the old call's place, reading
    what the old ``trunc`` read (which dominated it); each use keeps its name and type
    and reads the call's value, as it read the old one's; the old ``trunc`` is removed
    where the call was its only use.
    """
    if "@llvm.bitreverse.i" not in text:
        return text
    legal = sorted({1, *widths})  # (a boolean's reversal stays: validation allows i1)
    lines = irlex.lines(text)
    for f in reversed(irlex.functions(lines)):
        body = lines[f.start:f.stop]
        names = irlex.FreshNames(irlex.line_tokens(ln) for ln in body)
        defs = {}
        for m, u in enumerate(body):
            d = irlex.defined_value(irlex.line_tokens(u)) if "=" in u else None
            if d is not None:
                defs[d] = m
        for n, ln in enumerate(body):
            if "@llvm.bitreverse.i" not in ln:
                continue
            toks = irlex.line_tokens(ln)
            at, res = irlex.callee(toks), irlex.defined_value(toks)
            fn = irlex.name(toks[at]) if at is not None else ""
            bits = _width(fn[len("llvm.bitreverse."):]) if fn.startswith("llvm.bitreverse.") \
                else None
            if bits is None or bits in legal or res is None or bits > legal[-1]:
                continue
            wide = next(w for w in legal if w > bits)
            p = irlex.skip(toks, at + 1)
            args = irlex.split_depth0(irlex.code(toks[p + 1:irlex.match_paren(toks, p)]))
            src = defs.get(args[0][-1]) if len(args) == 1 and args[0] else None
            cast = _cast(irlex.line_tokens(body[src])) if src is not None else None
            if cast is None or cast[0] != "trunc" or (_width(cast[1]) or 0) < wide:
                continue
            uses = [m for m, u in enumerate(body) if m != n and res in irlex.local_names(u)]
            casts = {m: _cast(irlex.line_tokens(body[m])) for m in uses}
            if not uses or any(c is None or c[2] != res for c in casts.values()):
                continue
            indent = ln[:len(ln) - len(ln.lstrip())]
            operand, rev = cast[2], names.fresh(irlex.name(res) + ".wide")
            new = []
            if _width(cast[1]) > wide:
                operand = names.fresh(irlex.name(res) + ".in")
                new.append(f"{indent}{operand} = trunc {cast[1]} {cast[2]} to i{wide}")
            new.append(f"{indent}{rev} = call i{wide} @llvm.bitreverse.i{wide}(i{wide} {operand})")
            body[n] = "\n".join(new)
            for m, (op, _src, _val, dst) in casts.items():
                ut = irlex.line_tokens(body[m])
                value = ut[irlex.definition(ut)[0]]
                u_indent = body[m][:len(body[m]) - len(body[m].lstrip())]
                shr = f"{'ashr' if op == 'sext' else 'lshr'} i{wide} {rev}, {wide - bits}"
                if _width(dst) == wide:
                    body[m] = f"{u_indent}{value} = {shr}"
                else:
                    shifted = names.fresh(irlex.name(value) + ".low")
                    conv = "trunc" if (_width(dst) or 0) < wide else op
                    body[m] = (f"{u_indent}{shifted} = {shr}\n"
                               f"{u_indent}{value} = {conv} i{wide} {shifted} to {dst}")
            old = irlex.defined_value(irlex.line_tokens(body[src]))  # (where unused: gone)
            if not any(old in irlex.local_names(u) for m, u in enumerate(body) if m != src):
                body[src] = ""
        lines[f.start:f.stop] = [x for x in "\n".join(body).split("\n") if x.strip()]
    used = {irlex.name(t) for ln in lines if not ln.startswith("declare")
            for t in irlex.global_names(ln)}
    out = []
    for ln in lines:
        if ln.startswith("declare") and "@llvm.bitreverse.i" in ln:
            at = irlex.define_name(irlex.line_tokens(ln))
            if at is not None and irlex.name(irlex.line_tokens(ln)[at]) not in used:
                continue
        out.append(ln)
    declared = " ".join(ln for ln in out if ln.startswith("declare"))
    for fn in sorted(n for n in used if n.startswith("llvm.bitreverse.i")):
        if f"@{fn}(" not in declared:
            ty = fn[len("llvm.bitreverse."):]
            out.append(f"declare {ty} @{fn}({ty})")
    return "\n".join(out)
