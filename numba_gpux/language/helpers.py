"""Device definitions of the C helpers that Numba's own lowering calls.

Numba's own implementations (ufunc loops, complex math) call LLVM's math
intrinsics (``llvm.sin.f64``) and C's math library (``log1p``, ``sinf``), which
back ends lower badly or not at all (NVPTX cannot select a double ``sin``, and
its float ``sin`` is an approximation): :func:`portable_math` turns those calls
into the kernel language's portable math intrinsics, as ``math.sin`` is.

Some of Numba's implementations call functions of its C helper library
(``_helperlib.c``) which exist only in the host process, e.g.
``array.reshape`` calls ``numba_attempt_nocopy_reshape``, ``np.nextafter`` and
``np.spacing`` call ``numba_nextafter``.  Each is written
here in Python, compiled once per process through the shared context into a
function of the helper's C signature, and linked into a neutral module that
declares it (``context._link_helpers``), so every target gets the same definition.
"""

from __future__ import annotations

import math
import struct

from llvmlite import ir
from numba.core import types, typing

from .. import irlex, irtext
from .intrinsics import MATH_APPROX, MATH_BINARY, MATH_UNARY

__all__ = ["HELPER_NAMES", "helper_text", "portable_math"]


def _nocopy_reshape(nd, dims, strides, newnd, newdims, newstrides, itemsize, is_f_order):
    """Strides that view an array of shape ``dims[:nd]`` (strides ``strides[:nd]``,
    C order) with the shape ``newdims[:newnd]``; 1 and ``newstrides`` filled when
    the data allows a view, 0 when the reshape needs a copy."""
    total = 1
    for i in range(nd):
        total *= dims[i]
    newtotal = 1
    for i in range(newnd):
        newtotal *= newdims[i]
    if total != newtotal:
        return 0
    if total == 0:  # no element is ever addressed: any strides do
        for i in range(newnd):
            newstrides[i] = itemsize
        return 1
    o = 0
    n = 0
    while n < newnd:
        if newdims[n] == 1:  # a new axis of length 1 takes any stride
            newstrides[n] = itemsize
            n += 1
            continue
        while dims[o] == 1:  # (an old axis of length 1 has no say)
            o += 1
        # the smallest runs of old axes o..oe-1 and new axes n..ne-1 of equal size
        po = dims[o]
        pn = newdims[n]
        oe = o + 1
        ne = n + 1
        while po != pn:
            if po < pn:
                po *= dims[oe]
                oe += 1
            else:
                pn *= newdims[ne]
                ne += 1
        # the old run must be one evenly strided block (C order) to be viewed anew
        last = o
        for k in range(o + 1, oe):
            if dims[k] != 1:
                if strides[last] != dims[k] * strides[k]:
                    return 0
                last = k
        newstrides[ne - 1] = strides[last]
        for j in range(ne - 2, n - 1, -1):
            newstrides[j] = newstrides[j + 1] * newdims[j + 1]
        o = oe
        n = ne
    return 1


def _build_nocopy_reshape(context) -> tuple:
    intp = types.intp
    ptr = types.CPointer(intp)
    sig = typing.signature(types.int32, intp, ptr, ptr, intp, ptr, ptr, intp, types.int32)
    return sig, _nocopy_reshape


def _nextafter(x, y):
    # the kernel language's math.nextafter (lowering.py), on the bits
    return math.nextafter(x, y)


def _build_nextafter(ty):
    def build(context) -> tuple:
        return typing.signature(ty, ty, ty), _nextafter
    return build


_BUILDERS = {"numba_attempt_nocopy_reshape": _build_nocopy_reshape,
             # np.nextafter and np.spacing (Numba's loops call these)
             "numba_nextafter": _build_nextafter(types.float64),
             "numba_nextafterf": _build_nextafter(types.float32)}

#: the helpers defined here, by symbol name
HELPER_NAMES = frozenset(_BUILDERS)

_texts: dict = {}


def helper_text(name: str, context) -> str:
    """The LLVM IR text of a module defining the helper *name* (C signature,
    ``linkonce_odr``), compiled through the target-neutral *context* once."""
    text = _texts.get(name)
    if text is None:
        sig, impl = _BUILDERS[name](context)
        lib = context.codegen().create_library(f"helper_{name}")
        module = lib.create_ir_module(name)
        fnty = ir.FunctionType(context.get_value_type(sig.return_type),
                               [context.get_value_type(t) for t in sig.args])
        fn = ir.Function(module, fnty, name)
        fn.linkage = "linkonce_odr"
        builder = ir.IRBuilder(fn.append_basic_block("entry"))
        with context.push_code_library(lib):
            # (a C function returns its value, never Numba's status: compile_internal's
            # propagation of a failed status would return that instead)
            cres = context.compile_subroutine(builder, impl, sig)
            _, res = context.call_internal_no_propagate(builder, cres.fndesc, sig,
                                                        list(fn.args))
        builder.ret(res)
        lib.add_ir_module(module)
        text = _texts[name] = lib.neutral_ir(simplify=True)
    return text


# what LLVM's back ends lower exactly on every target stays an LLVM intrinsic
_EXACT = {"sqrt", "fabs", "floor", "ceil", "trunc", "rint", "copysign", "fmin", "fmax"}
_MATH = sorted((set(MATH_UNARY) | set(MATH_BINARY)) - _EXACT, key=len, reverse=True)
_ALL = sorted(set(MATH_UNARY) | set(MATH_BINARY), key=len, reverse=True)
#: the math functions Numba's lowering calls -> the portable intrinsic for each
_RENAMES = {
    **{f"llvm.{fn}.{ty}": f"__gpux_{fn}_{ty}" for fn in _MATH for ty in ("f32", "f64")},
    **{fn: f"__gpux_{fn}_f64" for fn in _ALL},
    **{f"{fn}f": f"__gpux_{fn}_f32" for fn in _ALL},
}
_APPROX = {f"__gpux_{fn}_f32": f"__gpux_{fn}_f32_approx" for fn in MATH_APPROX}
_FAST_FLAGS = frozenset(("fast", "nnan", "ninf", "nsz", "arcp", "contract", "afn", "reassoc"))


def portable_math(text: str) -> str:
    """*text* (LLVM IR) with calls and declarations of LLVM's and libm's math
    functions renamed to the portable intrinsics ``__gpux_<fn>_f32/f64``; a float32
    call whose fast-math flags allow approximate functions (``fast``, ``afn``: a
    ``fastmath`` kernel) calls ``__gpux_<fn>_f32_approx`` (intrinsics.MATH_APPROX);
    a scalar ``frem`` calls ``__gpux_fmod_f32/f64`` (:func:`_frem_as_call`).

    Read through the IR lexer, line by line (a call or a declaration is one line):
    a user's string that spells ``call @sin(x)`` is a string.  On the text because
    llvmlite's renaming of a declaration clashes with a declaration of the new name
    that the module may already have (LLVM would add a suffix); it can go when
    Numba's lowering of math calls is overridden for the kernel language's targets.
    """
    needed: dict[str, str] = {}  # a function called now -> its declaration
    renamed = False
    ls = text.split("\n")
    for k, ln in enumerate(ls):
        if "frem" in ln:
            call_ = _frem_as_call(irlex.line_tokens(ln))
            if call_ is not None:
                ls[k], fn, declaration = call_
                needed[fn] = declaration
                continue
        if "call " not in ln and not ln.startswith("declare "):
            continue
        fast = "fast" in ln or "afn" in ln
        if not fast and "__gpux_pow_f" not in ln and \
                not any(irlex.name(g) in _RENAMES for g in irlex.global_names(ln)):
            continue  # (a quick no: no name to rename, no call to approximate or fold)
        toks = irlex.line_tokens(ln)
        changed = False
        for i, t in enumerate(toks):
            if t[0] == "@" and len(t) > 1:
                new = _RENAMES.get(irlex.name(t))
                if new is not None:
                    toks[i] = "@" + new
                    changed = True
        if "pow" in ln:
            folded = _constant_power(toks, k)
            if folded is not None:
                ls[k] = folded[0]
                needed.update(folded[1])
                continue
        if fast:
            changed |= _approximate(toks, needed)
        if changed:
            ls[k] = irlex.join(toks)
            renamed = renamed or toks[0] == "declare"
    if renamed:
        ls = _one_declaration_each(ls)
    text = "\n".join(ls)
    if needed:
        declared = irtext.declared_functions(text)
        text += "".join(f"\n{needed[fn]}\n" for fn in sorted(needed) if fn not in declared)
    return text


def _one_declaration_each(ls: list[str]) -> list[str]:
    """*ls* without the second declaration of a function: a module that calls libm's
    ``sqrt`` (NumPy's ``np.sqrt``) and the portable ``__gpux_sqrt_f64`` (``math.sqrt``)
    declares the latter twice once the former is renamed, which LLVM rejects."""
    seen: set[str] = set()
    out: list[str] = []
    for ln in ls:
        if ln.startswith("declare "):
            toks = irlex.line_tokens(ln)
            at = irlex.define_name(toks)
            if at is not None:
                name = irlex.name(toks[at])
                if name in seen:
                    if out and out[-1].startswith("; Function Attrs:"):
                        out.pop()
                    continue
                seen.add(name)
        out.append(ln)
    return out


def _float_constant(tok: str):
    """The value of an LLVM float constant token (``2.000000e+00``, ``0x4000000000000000``),
    or None for anything else (a name, ``undef``)."""
    try:
        if tok.startswith("0x") and len(tok) == 18:
            return struct.unpack("<d", int(tok[2:], 16).to_bytes(8, "little"))[0]
        return float(tok) if tok[:1].isdigit() or tok[:1] in "+-" else None
    except ValueError:
        return None


def _constant_power(toks, k: int):
    """(the lines, {function: declaration} of the functions they call) for ``%r = call T
    @__gpux_pow_<T>(T x, T c)`` where c is 2.0 (``x * x``) or 0.5 (``sqrt(x)``, with pow's
    values at -0.0 and -inf), else None.

    For: the portable pow is an opaque call to each target's, which LLVM's optimizer
    cannot fold as it folds ``llvm.pow`` on a CPU (Numba's ``x ** 2.0`` and ``x ** 0.5``
    there are a multiply and a square root), and a device's pow is far slower: Intel's
    OpenCL CPU driver took 30-78x a multiply for ``x ** 2.0`` of negative doubles.  Both
    folds are exact: x * x is pow's correctly rounded value, and sqrt(x) is pow(x, 0.5)
    but at -0.0 (sqrt gives -0.0, pow +0.0: the absolute value) and -inf (sqrt gives
    NaN, pow +inf: selected)."""
    op, at = irlex.instruction(toks)
    d = irlex.definition(toks)
    if op != "call" or d is None:
        return None
    callee = irlex.callee(toks, at)
    if callee is None or irlex.name(toks[callee]) not in ("__gpux_pow_f32", "__gpux_pow_f64"):
        return None
    open_at = callee + 1
    if open_at >= len(toks) or toks[open_at] != "(":
        return None
    close = irlex.match_paren(toks, open_at)
    args = irlex.split_depth0(irlex.code(toks[open_at + 1:close]))
    ty = "float" if irlex.name(toks[callee]).endswith("f32") else "double"
    if len(args) != 2 or any(len(a) != 2 or a[0] != ty for a in args):
        return None
    c = _float_constant(args[1][1])
    if c not in (2.0, 0.5):
        return None
    flags = " ".join(t for t in irlex.code(toks[at + 1:callee]) if t in _FAST_FLAGS)
    flags = flags + " " if flags else ""
    lead = irlex.join(toks[:d[0]])
    r, x = toks[d[0]], args[0][1]
    rest = irlex.join(toks[close + 1:])  # (attachments: kept on the last line)
    if c == 2.0:
        return f"{lead}{r} = fmul {flags}{ty} {x}, {x}{rest}", {}
    sfx = "f32" if ty == "float" else "f64"
    # (names of the line's index: Numba's names are a Python variable's, with no dots)
    root, mag, neg_inf = (irlex.spell_local(f"gpux.pow.{k}.{n}") for n in ("sqrt", "abs", "inf"))
    lines = "\n".join([
        f"{lead}{root} = call {flags}{ty} @llvm.sqrt.{sfx}({ty} {x})",
        f"{lead}{mag} = call {flags}{ty} @llvm.fabs.{sfx}({ty} {root})",
        f"{lead}{neg_inf} = fcmp oeq {ty} {x}, 0xFFF0000000000000",
        f"{lead}{r} = select {flags}i1 {neg_inf}, {ty} 0x7FF0000000000000, {ty} {mag}{rest}",
    ])
    return lines, {f"llvm.{fn}.{sfx}": f"declare {ty} @llvm.{fn}.{sfx}({ty})"
                   for fn in ("sqrt", "fabs")}


_FREM_TYPES = {"float": "__gpux_fmod_f32", "double": "__gpux_fmod_f64"}


def _frem_as_call(toks):
    """(the line, the intrinsic it calls, that intrinsic's declaration) for a scalar
    ``%r = frem [flags] T a, b`` line, as ``%r = call [flags] T @__gpux_fmod_<T>(T a,
    T b)``; None for another.

    ``frem`` is C's ``fmod`` (LLVM's reference says so: the remainder of an exact
    division, with the dividend's sign), which Numba's lowering of a float's ``%``,
    ``//`` and ``divmod`` computes with; as the portable intrinsic, each target computes
    it with its device's own ``fmod``.  For: a back end's lowering of the instruction
    is the target's to choose, and not every choice is good: LLVM's SPIR-V back end
    writes ``OpFRem``, which Intel's OpenCL CPU driver runs as one scalar library call
    per lane (45-75x its vectorized ``fmod`` builtin), and LLVM's NVPTX back end
    expands it as ``x - y * trunc(x / y)``, which is not exact where the quotient is
    large (``1e20 % 3.0``)."""
    op, at = irlex.instruction(toks)
    if op != "frem" or irlex.definition(toks) is None:
        return None
    ci = [k for k in irlex.code_index(toks) if k > at]
    k = 0
    while k < len(ci) and toks[ci[k]] in _FAST_FLAGS:
        k += 1
    if k + 3 >= len(ci) or toks[ci[k]] not in _FREM_TYPES or toks[ci[k + 2]] != ",":
        return None
    if k + 4 < len(ci) and toks[ci[k + 4]] != ",":  # an operand of more than one token
        return None
    ty, a, b = toks[ci[k]], toks[ci[k + 1]], toks[ci[k + 3]]
    fn = _FREM_TYPES[ty]
    flags = "".join(toks[ci[j]] + " " for j in range(k))
    line = (irlex.join(toks[:at]) + f"call {flags}{ty} @{fn}({ty} {a}, {ty} {b})"
            + irlex.join(toks[ci[k + 3] + 1:]))
    return line, fn, f"declare {ty} @{fn}({ty}, {ty})"


def _approximate(toks, needed: dict) -> bool:
    """A float32 math call with ``fast`` or ``afn`` among its flags calls the
    approximate intrinsic (*toks* changed in place; its declaration added to
    *needed*)."""
    op, at = irlex.instruction(toks)
    if op != "call":
        return False
    callee = irlex.callee(toks, at)
    if callee is None:
        return False
    new = _APPROX.get(irlex.name(toks[callee]))
    between = irlex.code(toks[at + 1:callee])
    if new is None or between[-1:] != ["float"] or not set(between[:-1]) <= _FAST_FLAGS \
            or not {"fast", "afn"} & set(between):
        return False
    toks[callee] = "@" + new
    args = "float, float" if new == "__gpux_pow_f32_approx" else "float"
    needed[new] = f"declare float @{new}({args})"
    return True
