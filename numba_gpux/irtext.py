"""The project's rewrites of LLVM IR that llvmlite cannot make on its module objects.

llvmlite 0.50's binding layer reads a module (functions, globals, instructions,
operands) and renames values, but it cannot change a type, an address space, a
calling convention, a function attribute or an instruction's operand.  Those
rewrites are made here, on the module's text, through the one IR lexer
(``irlex``): every rewrite reads tokens, so a string constant, a quoted name or a
comment that spells ``ptr``, ``addrspace(1)`` or ``@llvm.memcpy.p0.p0.i64`` is
never read as code.  Each rewrite's docstring says what it is for and what would
remove it.  docs/pipeline.md lists where each rewrite lives.

It sits below ``interface``: an address-space convention arrives as an
``interface.AddressSpaces`` value, read through its fields and ``as_dict()``; this
module imports only the lexer.
"""

from __future__ import annotations

from typing import Protocol

from . import irlex as lx
from .divergence import FLAT_INDEX
from .irverify import checked
from .irinfer import drop_unused_values, infer_address_spaces, mask_shift_amounts, \
    narrow_shared_atomics, private_atomics
from .irlex import at_depth0 as _depth0, ptr_type as _ptr_type, skip as _skip

__all__ = ["remap_address_spaces", "add_function_attributes", "add_function_metadata",
           "mark_kernels", "global_variable_names", "definitions_only", "move_globals",
           "calls_to_kernel_params", "index_ranges", "param_ranges", "rename_globals", "after_params", "add_named_metadata", "remove_named_metadata", "infer_address_spaces", "mask_shift_amounts",
           "narrow_shared_atomics", "private_atomics", "defined_functions", "declared_functions", "call_graph",
           "drop_unused_values", "module_variables", "rewrite_bodies", "definition", "name_end", "close_paren"]


# --------------------------------------------------------------------------- reading

def function_headers(text: str, keyword: str):
    """(line index, tokens, function name) of each line that starts with *keyword*
    (``define`` or ``declare``): a line of the module, so it cannot start inside a
    string or a comment."""
    for i, ln in enumerate(text.split("\n")):
        if ln.startswith(keyword):
            toks = lx.line_tokens(ln)
            if toks[0] == keyword:
                at = lx.define_name(toks)
                if at is not None:
                    yield i, toks, lx.name(toks[at])


def defined_functions(text: str) -> set[str]:
    """The names of the functions the module text defines."""
    return {n for _, _, n in function_headers(text, "define")}


def declared_functions(text: str) -> set[str]:
    """The names of the functions the module text declares without defining."""
    return {n for _, _, n in function_headers(text, "declare")}


def call_graph(text: str) -> dict[str, set[str]]:
    """Defined function -> the functions (defined or declared) it calls directly.
    (llvmlite's module objects give the same through each call's operands, at a
    few foreign calls per instruction; the tokens of the lines that hold a call are
    read here instead.)"""
    ls = text.split("\n")
    graph = {}
    for f in lx.functions(ls):
        callees = set()
        for ln in ls[f.start:f.stop]:
            if "call " in ln or "invoke " in ln:
                toks = lx.line_tokens(ln)
                at = lx.callee(toks)
                if at is not None and toks[at][0] == "@":
                    callees.add(lx.name(toks[at]))
        graph[f.name] = callees
    return graph


def global_variable_names(text: str) -> list[str]:
    """Names (with ``@``) of module-level variables defined or declared in *text*."""
    out = []
    for ln in text.split("\n"):
        if ln.startswith("@"):
            toks = lx.line_tokens(ln)
            if _global_kind_at(toks) is not None:
                out.append(toks[0])
    return out




def _global_kind_at(toks):
    """For a module variable's line (``@g = [linkage ...] [addrspace(N)] global|constant
    T ...``): the position of its ``global``/``constant`` word, else None (an alias,
    an ifunc, anything else)."""
    if len(toks) < 3 or toks[0][0] != "@":
        return None
    i = _skip(toks, 1)
    if i >= len(toks) or toks[i] != "=":
        return None
    i = _skip(toks, i + 1)
    while i < len(toks):
        t = toks[i]
        if t in ("global", "constant"):
            return i
        if t == "(":
            i = lx.match_paren(toks, i)
        elif lx.kind(t) not in (lx.WORD, lx.NUMBER) and t not in (")",):
            return None
        i = _skip(toks, i + 1)
    return None


def _has_addrspace_before(toks, end: int) -> bool:
    return "addrspace" in toks[:end]



# --------------------------------------------------------------------------- address spaces

class AddressSpaces(Protocol):
    """What this module reads of an address-space convention (``interface.AddressSpaces``,
    which sits above this module)."""

    generic: int

    def as_dict(self) -> dict[str, int]: ...


def _asmap(src: AddressSpaces, dst: AddressSpaces) -> dict[int, int]:
    s, d = src.as_dict(), dst.as_dict()
    return {s[k]: d[k] for k in s}


#: parameter attributes that may stand between a call argument's type and its value
_PARAM_ATTRS = frozenset(("nonnull", "noundef", "noalias", "nocapture", "readonly", "readnone",
                          "writeonly", "align", "dereferenceable", "dereferenceable_or_null"))


def _remangle(tok: str, full: dict[int, int]) -> str:
    """An overloaded intrinsic's name (``@llvm.memcpy.p0.p0.i64``) with the address
    spaces of its pointer suffixes mapped."""
    parts = tok.split(".")
    for k, p in enumerate(parts):
        if k and len(p) > 1 and p[0] == "p":
            d = 1
            while d < len(p) and p[d].isdigit():
                d += 1
            rest = p[d:]
            if d > 1 and (not rest or (rest[0] in "if" and rest[1:2].isdigit())):
                parts[k] = f"p{full.get(int(p[1:d]), int(p[1:d]))}{rest}"
    return ".".join(parts)


@checked
def remap_address_spaces(text: str, src: AddressSpaces, dst: AddressSpaces,
                         globals_addrspace: int) -> str:
    """Rewrite IR written in the *src* convention into the *dst* convention.

    * explicit ``addrspace(N)`` qualifiers are mapped number for number;
    * bare ``ptr`` (generic in the neutral IR) becomes ``ptr addrspace(G)``;
    * every ``alloca`` keeps the target's private address space and is cast
      to generic right after, so its users see the pointer they expect;
    * module variables without an address space move to *globals_addrspace*
      (a neutral number), and their uses are cast to generic;
    * overloaded intrinsic names (``llvm.memcpy.p0.p0.i64``) are re-mangled.

    For: Numba lowers with one flat address space, and its IR is written once for
    every target.  Can go when Numba can lower into a target's address-space
    convention (its data model has no address spaces), and until then it could
    move onto llvmlite objects only if they could change a value's type, which
    llvmlite 0.50's binding cannot.
    """
    amap = _asmap(src, dst)
    if all(k == v for k, v in amap.items()):
        return text
    gen, priv = dst.generic, dst.private
    gvar_as = amap[globals_addrspace]
    full = dict(amap)
    full[src.generic] = gen
    ls = text.split("\n")

    # module variables without an address space: found first, their uses may come earlier
    moved: set[str] = set()
    moved_at: set[int] = set()
    for k, ln in enumerate(ls):
        if ln.startswith("@"):
            toks = lx.line_tokens(ln)
            at = _global_kind_at(toks)
            if at is not None and not _has_addrspace_before(toks, at):
                moved.add(toks[0])
                moved_at.add(k)
    out: list[str] = []
    for row, ln in enumerate(ls):
        if row in moved_at:  # (after its other address spaces are mapped)
            toks = _cast_moved_uses(_remap_tokens(lx.line_tokens(ln), amap, gen, full), moved,
                                    gen, gvar_as)
            at = _global_kind_at(toks)
            out.append(lx.join(lx.replace(toks, at, at, f"addrspace({gvar_as}) ")))
            continue
        if not ("ptr" in ln or "addrspace" in ln or "@llvm." in ln or "alloca" in ln):
            out.append(ln)
            continue
        toks = _remap_tokens(lx.line_tokens(ln), amap, gen, full)
        if moved:
            toks = _cast_moved_uses(toks, moved, gen, gvar_as)
        if gen != priv and "alloca" in ln:
            d = lx.definition(toks)
            if d is not None and toks[d[1]] == "alloca" and not _explicit_alloca_space(toks, d[1]):
                nm = toks[d[0]]
                pname = lx.spell_local(lx.name(nm) + ".gpux.priv")
                indent = lx.join(toks[:d[0]])
                out.append(lx.join(lx.replace(toks, d[0], d[0] + 1, pname)))
                out.append(f"{indent}{nm} = addrspacecast ptr addrspace({priv}) {pname} "
                           f"to ptr addrspace({gen})")
                continue
        out.append(lx.join(toks))
    return "\n".join(out)


def _remap_tokens(toks, amap: dict[int, int], gen: int, full: dict[int, int]) -> list[str]:
    """One line's tokens with explicit address spaces mapped (once: no chains), bare
    ``ptr`` made generic and overloaded intrinsics re-mangled."""
    hits = [i for i, t in enumerate(toks) if t == "ptr" or t == "addrspace" or
            t.startswith("@llvm.")]
    if not hits:
        return toks
    new = list(toks)
    n = len(toks)
    for i in reversed(hits):  # from the end: earlier positions stay valid
        t = toks[i]
        if t == "addrspace":
            j = _skip(toks, i + 1)
            m = _skip(toks, j + 1)
            e = _skip(toks, m + 1)
            if e < n and toks[j] == "(" and toks[e] == ")" and toks[m].isdigit():
                new[m] = str(amap.get(int(toks[m]), int(toks[m])))
        elif t == "ptr":
            if gen != 0:
                j = _skip(toks, i + 1)
                if j >= n or toks[j] != "addrspace":
                    new[i + 1:i + 1] = (" ", "addrspace", "(", str(gen), ")")
        else:
            new[i] = _remangle(t, full)
    return new


def _explicit_alloca_space(toks, op: int) -> bool:
    """Whether an ``alloca`` names its address space (``, addrspace(N)`` at depth 0)."""
    depth = 0
    prev = None
    for t in toks[op + 1:]:
        if t in "([{<":
            depth += 1
        elif t in ")]}>":
            depth -= 1
        elif t == "addrspace" and depth == 0 and prev == ",":
            return True
        if t[0] not in " \t":
            prev = t
    return False


def _cast_moved_uses(toks, moved: set[str], gen: int, gvar_as: int):
    """Uses of moved module variables (``ptr addrspace(G) [attributes] @g``) cast from
    their new address space to generic."""
    if not any(t in moved for t in toks):
        return toks
    ci = lx.code_index(toks)
    c = [toks[p] for p in ci]
    want = ["ptr", "addrspace", "(", str(gen), ")"]
    out = list(toks)
    for n0, i in enumerate(ci):
        if c[n0] not in moved:
            continue
        n = n0 - 1
        while n >= 0:  # back over the argument's attributes
            if c[n] in _PARAM_ATTRS:
                n -= 1
            elif c[n].isdigit() and n >= 1 and c[n - 1] == "align":
                n -= 2
            elif c[n] == ")" and n >= 3 and c[n - 2] == "(" and c[n - 3] in _PARAM_ATTRS:
                n -= 4
            else:
                break
        if n >= 4 and c[n - 4:n + 1] == want:
            out[i] = f"addrspacecast (ptr addrspace({gvar_as}) {c[n0]} to ptr addrspace({gen}))"
    return out


@checked
def move_globals(text: str, prefix: str, from_as: int, to_as: int, callee_prefix: str = "") -> str:
    """Move module variables named ``prefix*`` from *from_as* to *to_as*, with their
    direct uses (``ptr addrspace(from_as) @prefix...``); functions named
    ``callee_prefix*`` that take such a pointer as their first parameter are
    re-declared to take it in *to_as*.

    For: a target whose constant strings must live in another address space than
    its other constants (SPIR-V's printf format strings).  Can go when the target's
    back end places them itself (LLVM's SPIR-V back end does not, as of LLVM 20)."""
    if prefix not in text:  # (a quick no: nothing to move, most kernels print nothing)
        return text

    def ours(tok: str, pre: str) -> bool:
        return tok[0] == "@" and lx.name(tok).startswith(pre)

    frm, to = str(from_as), str(to_as)
    ls = text.split("\n")
    for k, ln in enumerate(ls):
        # (a quick no: a line to change names one of the variables or functions)
        if "addrspace" not in ln or not (prefix in ln or (callee_prefix and callee_prefix in ln)):
            continue
        toks = lx.line_tokens(ln)
        ci = lx.code_index(toks)
        c = [toks[p] for p in ci]
        change = []  # positions in ci of address-space numbers to change
        if c and ours(c[0], prefix) and len(c) > 1 and c[1] == "=":
            at = _global_kind_at(toks)
            if at is not None:
                for n in range(2, len(c) - 3):
                    if ci[n] > at:
                        break
                    if c[n:n + 4] == ["addrspace", "(", frm, ")"]:
                        change.append(n + 2)
        for n in range(len(c) - 5):
            if c[n:n + 5] == ["ptr", "addrspace", "(", frm, ")"] and ours(c[n + 5], prefix):
                change.append(n + 3)
        if callee_prefix and c and c[0] == "declare":
            at = lx.define_name(toks)
            if at is not None and ours(toks[at], callee_prefix):
                n = ci.index(at)
                if c[n + 1:n + 7] == ["(", "ptr", "addrspace", "(", frm, ")"]:
                    change.append(n + 5)
        if change:
            for n in change:
                toks[ci[n]] = to
            ls[k] = lx.join(toks)
    return "\n".join(ls)


# --------------------------------------------------------------------------- definitions

def _define_lines(ls, names=None):
    """line index of the ``define`` of each function among *ls*: {name: [indices]}."""
    found: dict[str, list[int]] = {}
    for i, ln in enumerate(ls):
        if ln.startswith("define"):
            toks = lx.line_tokens(ln)
            at = lx.define_name(toks)
            if toks[0] == "define" and at is not None:
                n = lx.name(toks[at])
                if names is None or n in names:
                    found.setdefault(n, []).append(i)
    return found


def _one_define(found, name: str, what: str) -> int:
    where = found.get(name, [])
    if len(where) != 1:
        raise ValueError(f"{what} {name!r} not defined exactly once")
    return where[0]


@checked
def mark_kernels(text: str, kernels, calling_convention: str) -> str:
    """Put *calling_convention* on the ``define`` line of each kernel entry point.

    For: llvmlite's ``ValueRef`` has no calling-convention setter (llvmlite 0.50);
    a setter in the binding would remove this."""
    if not calling_convention:
        return text
    ls = text.split("\n")
    found = _define_lines(ls, set(kernels))
    for name in kernels:
        where = found.get(name, [])
        if len(where) != 1:
            raise ValueError(f"kernel entry point {name!r} not found exactly once")
        toks = lx.line_tokens(ls[where[0]])
        at = lx.define_name(toks)
        ret = [i for i in range(at) if toks[i] == "void"]  # the return type
        if not ret:
            raise ValueError(f"kernel entry point {name!r} does not return void")
        ret = ret[-1]
        ls[where[0]] = lx.join(lx.replace(toks, ret, ret, [calling_convention, " "]))
    return "\n".join(ls)


def after_params(toks, at: int) -> int:
    """The position after a define line's parameter list and the ``unnamed_addr``,
    ``local_unnamed_addr`` and ``addrspace(N)`` that come before function attributes."""
    i = lx.match_paren(toks, at + 1) + 1
    while True:
        j = _skip(toks, i)
        if j < len(toks) and toks[j] in ("unnamed_addr", "local_unnamed_addr"):
            i = j + 1
        elif j < len(toks) and toks[j] == "addrspace":
            i = lx.match_paren(toks, _skip(toks, j + 1)) + 1
        else:
            return i


@checked
def add_function_attributes(text: str, functions, attrs: dict) -> str:
    """Put the string attributes *attrs* (``{"name": "value"}``) on the definition of
    each of *functions* (None: every function the text defines), beside the
    attributes its ``define`` line has.

    For: llvmlite's binding can add enum attributes to a function
    (``ValueRef.add_function_attribute``) but not string ones (``"key"="value"``);
    a binding for LLVM's ``addFnAttr(Kind, Value)`` would remove this."""
    spelled = " ".join(f'"{k}"="{v}"' for k, v in attrs.items())
    ls = text.split("\n")
    found = _define_lines(ls, None if functions is None else set(functions))
    rows = [i for w in found.values() for i in w] if functions is None else \
        [_one_define(found, n, "function") for n in functions]
    for k in rows:
        toks = lx.line_tokens(ls[k])
        i = after_params(toks, lx.define_name(toks))
        ls[k] = lx.join(lx.replace(toks, i, i, [" ", spelled]))
    return "\n".join(ls)


@checked
def param_ranges(text: str, function: str, ranges: dict) -> str:
    """Put ``range(i64 lo, hi)`` (*ranges*: ``{parameter position: (lo, hi)}``, ``hi``
    exclusive and written as LLVM wraps it: 2**63 is -2**63) on those ``i64``
    parameters of *function*'s definition.

    For: llvmlite's ``ir`` layer knows only attributes without values on arguments
    (0.50); a ``range`` argument attribute there would remove this."""
    ls = text.split("\n")
    k = _one_define(_define_lines(ls, {function}), function, "function")
    toks = lx.line_tokens(ls[k])
    op = _skip(toks, lx.define_name(toks) + 1)
    close = lx.match_paren(toks, op)
    starts, i = [], _skip(toks, op + 1)
    while i < close:  # the first token of each parameter
        starts.append(i)
        comma = _depth0(toks, i, close, ",")
        i = close if comma is None else _skip(toks, comma + 1)
    for pos in sorted(ranges, reverse=True):  # from the end: positions stay valid
        if pos >= len(starts) or toks[starts[pos]] != "i64":
            raise ValueError(f"parameter {pos} of {function!r} is not an i64")
        lo, hi = (v - 2 ** 64 if v >= 2 ** 63 else v for v in ranges[pos])
        toks = lx.replace(toks, starts[pos] + 1, starts[pos] + 1, f" range(i64 {lo}, {hi})")
    ls[k] = lx.join(toks)
    return "\n".join(ls)


@checked
def rename_globals(text: str, names: dict) -> str:
    """*text* with each global name in *names* (``{old: new}``, without ``@``) written as
    its new one wherever it appears: definitions, declarations, calls and other uses.
    The new names must not be in *text* already."""
    ls = text.split("\n")
    for k, ln in enumerate(ls):
        if "@" not in ln:
            continue
        toks = lx.line_tokens(ln)
        changed = False
        for i, t in enumerate(toks):
            if lx.kind(t) is lx.GLOBAL and lx.name(t) in names:
                toks[i] = lx.spell_global(names[lx.name(t)])
                changed = True
        if changed:
            ls[k] = lx.join(toks)
    return "\n".join(ls)


@checked
def add_function_metadata(text: str, functions, kind: str, operands: str) -> str:
    """Attach ``!kind !{operands}`` to the definition of each of *functions*.

    For: llvmlite's binding cannot attach metadata to a function (0.50); its
    ``ir`` layer can, but the module here is a parsed one."""
    ls = text.split("\n")
    node = free_node(ls)
    found = _define_lines(ls, set(functions))
    for name in functions:
        k = _one_define(found, name, "function")
        toks = lx.line_tokens(ls[k])
        ci = lx.code_index(toks)
        if not ci or toks[ci[-1]] != "{":
            raise ValueError(f"function {name!r} not defined exactly once")
        end = ci[-2] + 1
        ls[k] = lx.join([*toks[:end], f" !{kind} !{node} {{"])
    return f"{chr(10).join(ls).rstrip()}\n!{node} = !{{{operands}}}\n"


def free_node(ls) -> int:
    """The first metadata node number after every numbered node among the lines *ls*."""
    node = -1
    for ln in ls:
        if ln.startswith("!"):
            t = lx.line_tokens(ln)[0]
            if t[1:].isdigit():
                node = max(node, int(t[1:]))
    return node + 1


def add_named_metadata(text: str, name: str, operands: str) -> str:
    """*text* with the named metadata ``!name = !{!N}``, ``!N = !{operands}`` appended
    (a module's text has none of that name yet)."""
    ls = text.rstrip().split("\n")
    node = free_node(ls)
    return f"{chr(10).join(ls)}\n!{name} = !{{!{node}}}\n!{node} = !{{{operands}}}\n"


def remove_named_metadata(text: str, name: str) -> str:
    """*text* without the named metadata ``!name`` (its nodes stay, unreferenced)."""
    ls = text.split("\n")
    return "\n".join(ln for ln in ls if not (
        ln.startswith("!") and lx.code(lx.line_tokens(ln))[:2] == [f"!{name}", "="]))


_HEADER_WORDS = frozenset(("source_filename", "target", "attributes"))


def definitions_only(text: str) -> str:
    """A module's text reduced to what can be pasted into another module:
    its globals, declarations and definitions, without the module header,
    attribute groups or metadata (used for overlay definitions compiled from
    Python functions).

    For: llvmlite's ``link_in`` would need both modules parsed with one context and
    a data layout; overlays are pasted as text into a module that is parsed once."""
    out = []
    for ln in text.split("\n"):
        if ln.startswith(("; ModuleID", "!")):
            continue
        toks = lx.line_tokens(ln) if ln else []
        if toks and toks[0] in _HEADER_WORDS:
            continue
        if "#" in ln or "!" in ln:
            toks = _without_attachments(toks)
            ln = lx.join(toks)
        out.append(ln)
    return "\n".join(out).strip() + "\n"


def _without_attachments(toks):
    """*toks* without attribute-group references (`` #0``) and metadata attachments
    (``, !dbg !12``)."""
    out = []
    i, n = 0, len(toks)
    while i < n:
        t = toks[i]
        if t[0] == "#" and t[1:].isdigit():
            while out and out[-1][0] in " \t":
                out.pop()
            i += 1
            continue
        if t[0] == "!" and len(t) > 1 and not t[1:].isdigit() and t[1] != '"':
            j = _skip(toks, i + 1)
            if j < n and toks[j][0] == "!" and toks[j][1:].isdigit():
                while out and out[-1][0] in " \t":
                    out.pop()
                if out and out[-1] == ",":
                    out.pop()
                    while out and out[-1][0] in " \t":
                        out.pop()
                i = j + 1
                continue
        out.append(t)
        i += 1
    return out


# --------------------------------------------------------------------------- kernel ABI

@checked
def calls_to_kernel_params(text: str, kernels, params: dict[str, tuple[str, str]]) -> str:
    """Turn calls to argument-less functions into trailing kernel parameters.

    *params* maps a function name to ``(parameter type, template)``: each kernel
    gets one trailing parameter ``%"<name>.arg"`` of that type per entry (in
    *params* order), and every ``%x = call ... @<name>()`` in a kernel body
    becomes ``%x = <template>`` with ``{arg}`` replaced by the parameter.  Calls
    must already be inlined into the kernels; calls elsewhere are left alone
    (validation reports them), and the function's declaration is dropped when no
    call is left.

    For: a kernel's parameters cannot be added to a parsed function with llvmlite
    (0.50); the target's ABI (dynamic shared memory as a kernel argument) needs it.
    """
    ls = text.split("\n")
    found = _define_lines(ls, set(kernels))
    fns = {f.header: f for f in lx.functions(ls)}
    extra = ", ".join(f'{ty} %"{n}.arg"' for n, (ty, _) in params.items())
    for kname in kernels:
        where = found.get(kname)
        if not where:
            raise ValueError(f"kernel entry point {kname!r} not found")
        k = where[0]
        toks = lx.line_tokens(ls[k])
        op = _skip(toks, lx.define_name(toks) + 1)
        close = lx.match_paren(toks, op)
        empty = _skip(toks, op + 1) == close
        ls[k] = lx.join(lx.replace(toks, close, close, ("" if empty else ", ") + extra))
        f = fns[k]
        for b in range(f.start, f.stop):
            ln = ls[b]
            if "call " not in ln:
                continue
            btoks = lx.line_tokens(ln)
            d = lx.definition(btoks)
            at = lx.callee(btoks)
            if d is None or at is None or btoks[at][0] != "@":
                continue
            n = lx.name(btoks[at])
            p = _skip(btoks, at + 1)
            if n in params and btoks[_skip(btoks, p + 1):][:1] == [")"]:
                ls[b] = lx.join(btoks[:d[1]]) + params[n][1].format(arg=f'%"{n}.arg"')
    left = set(_called(ls))
    drop = {n for n in params if n not in left}
    if drop:
        keep = []
        for ln in ls:
            if ln.startswith("declare"):
                toks = lx.line_tokens(ln)
                at = lx.define_name(toks)
                if at is not None and lx.name(toks[at]) in drop:
                    continue
            keep.append(ln)
        ls = keep
    return "\n".join(ls)


def _called(ls) -> set[str]:
    """The names of the functions called anywhere among the lines *ls*."""
    out = set()
    for ln in ls:
        if "call " in ln:
            toks = lx.line_tokens(ln)
            at = lx.callee(toks)
            if at is not None and toks[at][0] == "@":
                out.add(lx.name(toks[at]))
    return out


_INDEX_FUNCS = frozenset(("__gpux_thread_idx", "__gpux_block_idx", "__gpux_block_dim",
                          "__gpux_grid_dim", "__gpux_global_idx", "__gpux_wide_global_idx"))


def _calls_of(ls, names):
    """(line position, tokens, callee position, code tokens after the callee) of each
    line among *ls* that calls one of the ``__gpux_`` intrinsics *names*."""
    for k, ln in enumerate(ls):
        if "__gpux_" not in ln or "call " not in ln:
            continue
        toks = lx.line_tokens(ln)
        at = lx.callee(toks)
        if at is not None and lx.name(toks[at]) in names:
            yield k, toks, at, lx.code(toks[at + 1:])


#: the intrinsics whose result differs between the work-items of one group (and the
#: functions that compute them in a block run as one row, lanes.flatten_block)
_WORK_ITEM_INDEX = frozenset(("__gpux_thread_idx", "__gpux_global_idx",
                              "__gpux_wide_global_idx", *FLAT_INDEX))


def index_dimensions(text: str) -> set[int]:
    """The dimensions (0, 1, 2) in which the code of *text* reads a work-item's index
    (its own in the group, or in the grid); a dimension not written as a constant
    counts as all three."""
    dims: set[int] = set()
    for _, _, _, args in _calls_of(text.split("\n"), _WORK_ITEM_INDEX):
        if len(args) >= 4 and args[1] == "i32" and args[2] in ("0", "1", "2"):
            dims.add(int(args[2]))
        else:
            dims |= {0, 1, 2}
    return dims


@checked
def index_ranges(text: str, limits) -> str:
    """Calls of the index intrinsics with a constant dimension annotated with the
    range of their result (``noundef range(i64 lo, hi)``; *limits* is an
    ``interface.IndexLimits``).
    LLVM's inliner moves the annotation onto the call that a target's definition
    makes, so it also holds after the overlays are inlined.

    For: llvmlite 0.50 cannot put a return attribute with an argument on a call
    site; a binding of ``CallBase::addRetAttr`` would remove this."""
    if "__gpux_" not in text:
        return text

    def bounds(name: str, d: int) -> tuple[int, int]:
        if name == "__gpux_thread_idx":
            return 0, limits.block[d]
        if name == "__gpux_block_dim":
            return 1, limits.block[d] + 1
        if name == "__gpux_block_idx":
            return 0, limits.grid[d]
        if name in ("__gpux_global_idx", "__gpux_wide_global_idx"):
            return 0, limits.grid[d] * limits.block[d]
        return 1, limits.grid[d] + 1

    ls = text.split("\n")
    for k, toks, at, args in _calls_of(ls, _INDEX_FUNCS):
        call = max(i for i in range(at) if toks[i] == "call")
        between = lx.code(toks[call + 1:at])
        if between != ["i64"] or len(args) < 4 or args[:4] != ["(", "i32", args[2], ")"] or \
                args[2] not in ("0", "1", "2"):
            continue
        lo, hi = bounds(lx.name(toks[at]), int(args[2]))
        toks[at] = lx.spell_global(lx.name(toks[at]))
        ls[k] = lx.join(lx.replace(toks, call + 1, call + 1, f" noundef range(i64 {lo}, {hi})"))
    return "\n".join(ls)


# --------------------------------------------------------------------------- line helpers
# (used by the IR rewrites of ``legalize`` and by the C-family emitter, ``targets/cfamily``; kept until they read tokens)

#: a local name, as a pattern (for ``legalize``'s rewrites while they are written as patterns)
_NAME = r'%(?:"[^"]*"|[-\w.$]+)'


def rewrite_bodies(text: str, rewrite) -> str:
    """*text* with the lines of each function body (between its ``define ... {`` line
    and its ``}``) replaced by ``rewrite(lines)``."""
    ls = text.split("\n")
    fns = lx.functions(ls)
    for f in reversed(fns):  # from the end: earlier positions stay valid
        ls[f.start:f.stop] = rewrite(ls[f.start:f.stop])
    return "\n".join(ls)


def name_end(s: str, start: int) -> int:
    """Where the IR name at *start* of *s* (quoted, or letters, digits and ``-_.$``)
    ends (*start* itself: no name there)."""
    if s.startswith('"', start):
        close = s.find('"', start + 1)
        return start if close < 0 else close + 1
    k = start
    while k < len(s) and (s[k].isalnum() or s[k] in "-_.$"):
        k += 1
    return k


def definition(line: str):
    """(``%name``, right-hand side) of an instruction that defines a value, else None
    (a line that starts with a name and `` = ``: nothing before it can be a string)."""
    s = line.lstrip()
    if not s.startswith("%"):
        return None
    end = name_end(s, 1)
    if end == 1 or not s.startswith(" = ", end):
        return None
    return s[:end], s[end + 3:]


def close_paren(text: str, open_at: int) -> int:
    """The index of the parenthesis that closes the one at *open_at* (counting
    parentheses only; the C-family emitter uses it on C expressions)."""
    depth = 0
    for i in range(open_at, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced parentheses")


def _type_end(toks, i: int) -> int:
    """The position after the type that starts at *i* (a word such as ``i32`` or
    ``ptr addrspace(1)``, or a bracketed aggregate ``[4 x i8]``, ``{ i32 }``, ``<{ }>``)."""
    if toks[i] in ("[", "{", "<"):
        return lx.match_paren(toks, i) + 1
    if toks[i] == "ptr":
        return _ptr_type(toks, i)[1]
    return i + 1


def module_variables(text: str):
    """(name, address space, ``global`` or ``constant``, value type, the initializer's
    first token or None) of each module-level variable the text defines or declares."""
    out = []
    for ln in text.split("\n"):
        if not ln.startswith("@"):
            continue
        toks = lx.line_tokens(ln)
        at = _global_kind_at(toks)
        if at is None:
            continue
        space = 0
        for i in range(at):
            if toks[i] == "addrspace":
                space = _ptr_type(["ptr", *toks[i:at]], 0)[0] or 0
        t = _skip(toks, at + 1)
        te = _type_end(toks, t)
        init = _skip(toks, te)
        out.append((lx.name(toks[0]), space, toks[at], lx.join(toks[t:te]),
                    toks[init] if init < len(toks) and toks[init] != "," else None))
    return out
