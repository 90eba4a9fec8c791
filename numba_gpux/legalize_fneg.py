"""An IR rewrite for a driver that miscompiles floating-point negation: ``fneg`` as an
integer ``xor`` of the sign bit (one of :data:`legalize.REWRITES`; see that module for
how rewrites are applied, read and checked).

Intel's OpenCL CPU driver gives every work-item of a group one work-item's value of a
negated float that is live across a barrier (``w = -g[i]; barrier(); out[i] = w``, and
the ``fneg`` that LLVM hoists out of a loop with a barrier, or that a fused ``c - a * b``
takes): OpenCL C written that way fails the same on that driver, and the same code with
the sign bit flipped as an integer runs right.  The value is the same bits either way.
"""

from __future__ import annotations

from . import irlex

__all__ = ["fneg_sign_bits"]

#: floating-point type -> the integer of its width
_INT = {"half": "i16", "bfloat": "i16", "float": "i32", "double": "i64"}


def _sign_mask(bits: int) -> str:
    return str(-(1 << (bits - 1)))


def fneg_sign_bits(text: str) -> str:
    """Each ``%r = fneg [flags] T %x`` (T half, float, double or a vector of them) as
    ``bitcast`` to the integer of T's width, ``xor`` with the sign bit, ``bitcast``
    back: the same value, bit for bit (NaNs keep their payload, as ``fneg``'s do)."""
    if "fneg" not in text:
        return text
    out, n = [], 0
    prefix = _fresh(text)
    for ln in text.split("\n"):
        if "fneg" not in ln:
            out.append(ln)
            continue
        toks = irlex.line_tokens(ln)
        c = irlex.code(toks)
        if len(c) < 5 or c[1] != "=" or c[2] != "fneg":
            out.append(ln)
            continue
        k = 3
        while k < len(c) and c[k] in ("fast", "nnan", "ninf", "nsz", "arcp", "contract",
                                      "afn", "reassoc"):
            k += 1
        ty, ity, mask = _types(c, k)
        if ty is None:
            out.append(ln)
            continue
        rest = c[k + ty[1]:]
        # an operand of one token (a name or a constant), then metadata attachments
        if not rest or (len(rest) > 1 and rest[1] != ","):
            out.append(ln)
            continue
        attached = (", " + " ".join(rest[2:])) if len(rest) > 1 else ""
        n += 1
        name = f"%{prefix}{n}"
        indent = ln[:len(ln) - len(ln.lstrip())]
        out.append(f"{indent}{name}.b = bitcast {ty[0]} {rest[0]} to {ity}")
        out.append(f"{indent}{name}.x = xor {ity} {name}.b, {mask}")
        out.append(f"{indent}{c[0]} = bitcast {ity} {name}.x to {ty[0]}{attached}")
    return "\n".join(out) if n else text


def _types(c: list, k: int):
    """((T's spelling, its number of tokens), the integer type, the sign mask) of the
    type at ``c[k]``, or (None, None, None) where it is not one rewritten here."""
    if c[k] in _INT:
        ity = _INT[c[k]]
        return (c[k], 1), ity, _sign_mask(int(ity[1:]))
    # <N x T>: the tokens '<', N, 'x', T, '>'
    if c[k] == "<" and k + 4 < len(c) and c[k + 2] == "x" and c[k + 3] in _INT \
            and c[k + 4] == ">" and c[k + 1].isdigit():
        lanes, el = int(c[k + 1]), _INT[c[k + 3]]
        m = _sign_mask(int(el[1:]))
        return ((f"<{lanes} x {c[k + 3]}>", 5), f"<{lanes} x {el}>",
                "<" + ", ".join(f"{el} {m}" for _ in range(lanes)) + ">")
    return None, None, None


def _fresh(text: str) -> str:
    """A prefix no local name in *text* starts with (followed by a number)."""
    for c in ("", *"bcdefghijklmnopqrstuvwxyz"):
        if f"%gpux.fneg{c}" not in text and f'%"gpux.fneg{c}' not in text:
            return f"gpux.fneg{c}"
    raise ValueError("no fresh prefix for gpux.fneg")
