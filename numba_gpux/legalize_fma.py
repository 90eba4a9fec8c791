"""An IR rewrite for back ends that do not fuse a multiply and an add that LLVM's
``contract`` flag allows to fuse (one of :data:`legalize.REWRITES`; see that module for
how rewrites are applied, read and checked)."""

from __future__ import annotations

from . import irlex
from .divergence import blocks

__all__ = ["fuse_contracted"]

#: scalar float types and their intrinsic suffixes
_TYPES = {"half": "f16", "float": "f32", "double": "f64"}
_FLAGS = frozenset(("nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc", "fast"))


def _arith(toks):
    """(name, opcode, flags, type, operand a, operand b, the tokens after b) of a scalar
    ``%r = fadd|fsub|fmul [flags] T a, b [, attachments]`` line; None for another."""
    d = irlex.definition(toks)
    if d is None:
        return None
    ci = [k for k in range(d[1], len(toks)) if irlex.is_code(toks[k])]
    op = toks[ci[0]]
    if op not in ("fadd", "fsub", "fmul"):
        return None
    k = 1
    flags = []
    while k < len(ci) and toks[ci[k]] in _FLAGS:
        flags.append(toks[ci[k]])
        k += 1
    if k + 3 >= len(ci) or toks[ci[k]] not in _TYPES or toks[ci[k + 2]] != ",":
        return None
    rest = [toks[j] for j in ci[k + 4:]]
    return toks[d[0]], op, flags, toks[ci[k]], toks[ci[k + 1]], toks[ci[k + 3]], rest


def _contracts(flags) -> bool:
    return "contract" in flags or "fast" in flags


def fuse_contracted(text: str) -> str:
    """``fadd contract (fmul contract a, b), c`` as ``call @llvm.fma(a, b, c)``, and
    ``fsub`` likewise (``fma(a, b, -c)``, ``fma(-a, b, c)``), where the multiply is in
    the same block.

    Which pairs fuse follows LLVM's NVPTX back end (its DAG combiner, with the
    "aggressive" fusion NVPTX asks for), so that a facade kernel rounds as it does on
    the CUDA target and as numba.cuda's NVVM: a multiply fuses into every add of its
    block that uses it, whatever its other uses (it stays for those); an add of two
    products fuses the one with fewer uses in the function, the first operand on a
    tie (checked against LLVM's NVPTX output in the tests).

    For: LLVM's SPIR-V back end neither fuses such a pair nor writes that it may
    (``AllowContract`` needs SPV_KHR_float_controls2), so a driver rounds both
    operations: Intel's OpenCL CPU driver computes ``a * b + c`` with two roundings
    where NVPTX (and NVVM, for numba.cuda) writes one ``fma``.  Only code that carries
    the flag is changed: the numba.cuda facade's (``Semantics.float_contract``) and
    ``fastmath`` kernels; the portable API's operations round one by one.

    Semantics: the ``contract`` flag allows exactly this fusion; the result is the
    product and the sum rounded once.  ``fneg`` is exact.

    Types and dominance: the call defines the add's name, of the add's type, at the
    add's place; its operands are the multiply's (defined before the multiply, so
    before the add) and the add's other operand.  A multiply none of whose uses is
    left is removed.  The intrinsic is declared where the module does not declare it.
    """
    if "contract" not in text and "fast" not in text:
        return text
    lines: list = irlex.lines(text)
    used_types: set[str] = set()
    for f in irlex.functions(lines):
        body = lines[f.start:f.stop]
        block_of = {}
        for b, blk in enumerate(blocks(body)):
            for k in blk.lines:
                block_of[k] = b
        muls: dict[str, tuple] = {}   # name -> (line in body, flags, type, a, b)
        uses: dict[str, int] = {}
        adds = []                     # (line in body, the parsed add)
        for k, ln in enumerate(body):
            if "%" not in ln:
                continue
            toks = irlex.line_tokens(ln)
            d = irlex.definition(toks)
            for t in irlex.names_in(toks[d[1]:] if d else toks):
                uses[t] = uses.get(t, 0) + 1
            if d is None or not ("fmul" in ln or "fadd" in ln or "fsub" in ln):
                continue
            a = _arith(toks)
            if a is None or not _contracts(a[2]):
                continue
            if a[1] == "fmul":
                muls[a[0]] = (k, a[2], a[3], a[4], a[5])
            else:
                adds.append((k, a))
        left = dict(uses)  # uses not fused yet
        for k, (name, op, flags, ty, x, y, rest) in adds:
            def fusable(v):
                m = muls.get(v)
                return m is not None and block_of.get(m[0]) == block_of.get(k) and m[2] == ty

            neg_name = irlex.spell_local(irlex.name(name) + ".gpux.neg")
            neg = None
            if fusable(x) and not (fusable(y) and uses[x] > uses[y]):
                m, other, fused = muls[x], y, x
                ma, mb = m[3], m[4]
                if op == "fsub":           # a*b - y = fma(a, b, -y)
                    neg, other = other, neg_name
            elif fusable(y):
                m, other, fused = muls[y], x, y
                ma, mb = m[3], m[4]
                if op == "fsub":           # x - a*b = fma(-a, b, x)
                    neg, ma = ma, neg_name
            else:
                continue
            used_types.add(ty)
            fl = "".join(f" {t}" for t in flags)
            tail = "".join(f" {t}" if t != "," else t for t in rest)
            new = []
            if neg is not None:
                new.append(f"  {neg_name} = fneg{fl} {ty} {neg}")
            new.append(f"  {name} = call{fl} {ty} @llvm.fma.{_TYPES[ty]}({ty} {ma}, {ty} {mb}, "
                       f"{ty} {other}){tail}")
            lines[f.start + k] = "\n".join(new)
            left[fused] -= 1
        for v, m in muls.items():
            if left.get(v) == 0:  # every use fused: the multiply is dead
                lines[f.start + m[0]] = None
    if not used_types:
        return text
    declared = {irlex.name(g) for ln in lines if ln is not None and ln.startswith("declare")
                for g in irlex.global_names(ln)[:1]}
    for ty in sorted(used_types):
        fn = f"llvm.fma.{_TYPES[ty]}"
        if fn not in declared:
            lines.append(f"declare {ty} @{fn}({ty}, {ty}, {ty})")
    return "\n".join(ln for ln in lines if ln is not None)
