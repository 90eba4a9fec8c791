"""Transformations on LLVM IR *text*.

llvmlite's binding layer can read IR but not rewrite instructions, so every
change that must happen inside instructions (address spaces, kernel calling
conventions) is made here, on the text, before the module is parsed.  This is
the one module that does so (ARCHITECTURE.md, "Known technical facts").

It sits below ``interface``: an address-space convention arrives as an
``interface.AddressSpaces`` value, read through its fields and ``as_dict()``, and
this module imports nothing of the package.
"""

from __future__ import annotations

import re

__all__ = ["remap_address_spaces", "add_function_attributes", "add_function_metadata", "mark_kernels", "global_variable_names", "definitions_only",
           "calls_to_kernel_params", "index_ranges", "infer_address_spaces", "mask_shift_amounts",
           "defined_functions", "declared_functions", "DEFINE_NAME",
           "drop_unused_values", "rewrite_bodies", "definition", "name_end", "close_paren"]

#: a function definition's name (group 1 if quoted, else group 2)
DEFINE_NAME = re.compile(r'^define [^@\n]*@(?:"([^"]+)"|([-\w.$]+))\(', re.M)
_DECLARE_NAME = re.compile(r'^declare [^@\n]*@(?:"([^"]+)"|([-\w.$]+))\(', re.M)


def defined_functions(text: str) -> set[str]:
    """The names of the functions the module text defines."""
    return {q or p for q, p in DEFINE_NAME.findall(text)}


def declared_functions(text: str) -> set[str]:
    """The names of the functions the module text declares without defining."""
    return {q or p for q, p in _DECLARE_NAME.findall(text)}


# a bare `ptr` type token (not part of a name, not already qualified)
# (the lookbehind after the match: ~35% faster than one before it)
_BARE_PTR = re.compile(r'\bptr\b(?<![.%@"$\-]ptr)(?![.$\-]| addrspace\()')
_EXPLICIT_AS = re.compile(r"addrspace\((\d+)\)")
_ALLOCA = re.compile(r'^(\s*)(%(?:"[^"]*"|[\w.$\-]+)) = alloca (.*)$', re.M)
_GLOBAL_DEF = re.compile(
    r'^(@(?:"[^"]*"|[\w.$\-]+)) = ((?:[a-z_]+ )*?)(global|constant) ', re.M
)
_INTRINSIC_NAME = re.compile(r"@llvm\.[\w.]+")
_MANGLED_AS = re.compile(r"\.p(\d+)(?=\.|$|i\d|f\d)")


def global_variable_names(text: str) -> list[str]:
    """Names (with ``@``) of module-level variables defined or declared in *text*."""
    return [m.group(1) for m in _GLOBAL_DEF.finditer(text)]


def _asmap(src: AddressSpaces, dst: AddressSpaces) -> dict[int, int]:
    s, d = src.as_dict(), dst.as_dict()
    return {s[k]: d[k] for k in s}


#: a parameter attribute of a call argument, between its type and its value
_PARAM_ATTR = (r"(?:nonnull|noundef|noalias|nocapture|readonly|readnone|writeonly|"
               r"align \d+|dereferenceable(?:_or_null)?\(\d+\))")


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
    """
    amap = _asmap(src, dst)
    if all(k == v for k, v in amap.items()):
        return text
    gen = dst.generic
    priv = dst.private
    gvar_as = amap[globals_addrspace]

    # 1. explicit qualifiers, mapped in one pass (no chains)
    text = _EXPLICIT_AS.sub(lambda m: f"addrspace({amap.get(int(m.group(1)), int(m.group(1)))})", text)
    # 2. bare pointers are generic
    if gen != 0:
        text = _BARE_PTR.sub(f"ptr addrspace({gen})", text)

    # 3. allocas: keep them private, cast to generic for their users
    def _alloca(m: re.Match) -> str:
        indent, name, rest = m.groups()
        if "addrspace(" in rest.split(",", 1)[-1] and ", addrspace(" in rest:
            return m.group(0)
        priv_name = (name[:-1] + '.gpux.priv"') if name.endswith('"') else name + ".gpux.priv"
        return (f"{indent}{priv_name} = alloca {rest}\n"
                f"{indent}{name} = addrspacecast ptr addrspace({priv}) {priv_name} "
                f"to ptr addrspace({gen})")

    if gen != priv:
        text = _ALLOCA.sub(_alloca, text)

    # 4. module variables without an address space
    moved: list[str] = []

    def _gdef(m: re.Match) -> str:
        name, prefix, kind = m.groups()
        if "addrspace(" in prefix:
            return m.group(0)
        moved.append(name)
        return f"{name} = {prefix}addrspace({gvar_as}) {kind} "

    text = _GLOBAL_DEF.sub(_gdef, text)
    if moved:
        names = "|".join(re.escape(n) for n in sorted(moved, key=len, reverse=True))
        # (a call argument may carry attributes between its type and the value)
        use = re.compile(rf"ptr addrspace\({gen}\)((?: {_PARAM_ATTR})*) ({names})"
                         rf"(?![\w.$\-\"])")
        text = use.sub(
            lambda m: f"ptr addrspace({gen}){m.group(1)} addrspacecast (ptr addrspace({gvar_as}) "
                      f"{m.group(2)} to ptr addrspace({gen}))",
            text,
        )
        # the definitions themselves must not be rewritten as uses
    # 5. re-mangle overloaded intrinsics
    full = dict(amap)
    full[src.generic] = gen

    def _intr(m: re.Match) -> str:
        return _MANGLED_AS.sub(lambda k: f".p{full.get(int(k.group(1)), int(k.group(1)))}", m.group(0))

    text = _INTRINSIC_NAME.sub(_intr, text)
    return text


def move_globals(text: str, prefix: str, from_as: int, to_as: int, callee_prefix: str = "") -> str:
    """Move module variables named ``prefix*`` from *from_as* to *to_as*, with their
    direct uses; functions named ``callee_prefix*`` that take such a pointer as their
    first parameter are re-declared to take it in *to_as*."""
    if prefix not in text:  # nothing to move (most kernels: no print)
        return text
    names = r'@"?' + re.escape(prefix) + r'[\w.$]*"?'
    text = re.sub(rf"^({names}) = ((?:[a-z_]+ )*?)addrspace\({from_as}\) ",
                  lambda m: f"{m.group(1)} = {m.group(2)}addrspace({to_as}) ", text, flags=re.M)
    text = re.sub(rf"ptr addrspace\({from_as}\) ({names})", lambda m: f"ptr addrspace({to_as}) {m.group(1)}",
                  text)
    if callee_prefix:
        callee = r'@"?' + re.escape(callee_prefix) + r'[\w.$]*"?'
        text = re.sub(rf"^(declare [^@]*{callee}\()ptr addrspace\({from_as}\)",
                      lambda m: f"{m.group(1)}ptr addrspace({to_as})", text, flags=re.M)
    return text


def mark_kernels(text: str, kernels, calling_convention: str) -> str:
    """Put *calling_convention* on the ``define`` line of each kernel entry point."""
    if not calling_convention:
        return text
    for name in kernels:
        pat = re.compile(r'^define ((?:[a-z_]+ )*?)void (@"?' + re.escape(name) + r'"?\()', re.M)
        text, n = pat.subn(lambda m: f"define {m.group(1)}{calling_convention} void {m.group(2)}", text)
        if n != 1:
            raise ValueError(f"kernel entry point {name!r} not found exactly once")
    return text


_BEFORE_FN_ATTRS = re.compile(r"(?: (?:local_)?unnamed_addr| addrspace\(\d+\))*")


def add_function_attributes(text: str, functions, attrs: dict) -> str:
    """Put the string attributes *attrs* (``{"name": "value"}``) on the definition of
    each of *functions* (None: every function the text defines), beside the
    attributes its ``define`` line has."""
    spelled = " ".join(f'"{k}"="{v}"' for k, v in attrs.items())
    if functions is None:
        starts = [m.end() for m in DEFINE_NAME.finditer(text)]
    else:
        starts = []
        for name in functions:
            pat = re.compile(r'^define [^\n]*@"?' + re.escape(name) + r'"?\(', re.M)
            found = list(pat.finditer(text))
            if len(found) != 1:
                raise ValueError(f"function {name!r} not defined exactly once")
            starts.append(found[0].end())
    for start in sorted(starts, reverse=True):  # from the end: earlier offsets stay valid
        i = close_paren(text, start - 1) + 1  # past the parameter list
        i = _BEFORE_FN_ATTRS.match(text, i).end()  # (unnamed_addr, addrspace come first)
        text = f"{text[:i]} {spelled}{text[i:]}"
    return text


def add_function_metadata(text: str, functions, kind: str, operands: str) -> str:
    """Attach ``!kind !{operands}`` to the definition of each of *functions*."""
    ids = [int(m) for m in re.findall(r"^!(\d+) = ", text, re.M)]
    node = max(ids, default=-1) + 1
    for name in functions:
        pat = re.compile(r'^(define [^\n]*@"?' + re.escape(name) + r'"?\([^\n]*?)\s*\{\s*$',
                         re.M)
        text, n = pat.subn(lambda m: f"{m.group(1)} !{kind} !{node} {{", text)
        if n != 1:
            raise ValueError(f"function {name!r} not defined exactly once")
    return f"{text.rstrip()}\n!{node} = !{{{operands}}}\n"


_HEADER_LINE = re.compile(r"^(?:; ModuleID = .*|source_filename = .*|target (?:datalayout|triple) = .*"
                          r"|attributes #\d+ = .*|![\w.]+ = .*|!\d+ = .*)$", re.M)
_ATTR_REF = re.compile(r" #\d+\b")
_MD_ATTACH = re.compile(r",? ![\w.]+ !\d+")


def definitions_only(text: str) -> str:
    """A module's text reduced to what can be pasted into another module:
    its globals, declarations and definitions, without the module header,
    attribute groups or metadata (used for overlay definitions compiled from
    Python functions)."""
    text = _HEADER_LINE.sub("", text)
    text = _ATTR_REF.sub("", text)
    text = _MD_ATTACH.sub("", text)
    return text.strip() + "\n"


def close_paren(text: str, open_at: int) -> int:
    """The index of the parenthesis that closes the one at *open_at*."""
    depth = 0
    for i in range(open_at, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced parentheses in a define line")


def calls_to_kernel_params(text: str, kernels, params: dict[str, tuple[str, str]]) -> str:
    """Turn calls to argument-less functions into trailing kernel parameters.

    *params* maps a function name to ``(parameter type, template)``: each kernel
    gets one trailing parameter ``%"<name>.arg"`` of that type per entry (in
    *params* order), and every ``%x = call ... @<name>()`` in a kernel body
    becomes ``%x = <template>`` with ``{arg}`` replaced by the parameter.  Calls
    must already be inlined into the kernels; calls elsewhere are left alone
    (validation reports them), and the function's declaration is dropped when no
    call is left.
    """
    for kname in kernels:
        m = re.search(r'^define [^@\n]*@"?' + re.escape(kname) + r'"?\(', text, re.M)
        if m is None:
            raise ValueError(f"kernel entry point {kname!r} not found")
        close = close_paren(text, m.end() - 1)
        inner = text[m.end():close]
        extra = ", ".join(f'{ty} %"{n}.arg"' for n, (ty, _) in params.items())
        text = text[:close] + (", " if inner.strip() else "") + extra + text[close:]
        body_start = text.index("{", close)
        body_end = text.index("\n}\n", body_start)
        body = text[body_start:body_end]
        for n, (_, template) in params.items():
            call = re.compile(r'^(\s*%[^\s=]+ = )(?:(?:tail|musttail|notail) )?call [^@\n]*@"?'
                              + re.escape(n) + r'"?\(\)[^\n]*$', re.M)
            body = call.sub(lambda c, _n=n, _t=template: c.group(1) + _t.format(arg=f'%"{_n}.arg"'),
                            body)
        text = text[:body_start] + body + text[body_end:]
    for n in params:
        if not re.search(r'call [^@\n]*@"?' + re.escape(n) + r'"?\(', text):
            text = re.sub(r'^declare [^@\n]*@"?' + re.escape(n) + r'"?\(\).*\n', "", text,
                          flags=re.M)
    return text


_INDEX_CALL = re.compile(
    r'\bcall i64 @"?(__gpux_(?:thread_idx|block_idx|block_dim|grid_dim))"?\(i32 ([012])\)')


def index_ranges(text: str, limits) -> str:
    """Calls of the index intrinsics with a constant dimension annotated with the
    range of their result (``noundef range(i64 lo, hi)``; *limits* is an
    ``interface.IndexLimits``).
    LLVM's inliner moves the annotation onto the call that a target's definition
    makes, so it also holds after the overlays are inlined."""
    def bounds(name: str, d: int) -> tuple[int, int]:
        if name == "__gpux_thread_idx":
            return 0, limits.block[d]
        if name == "__gpux_block_dim":
            return 1, limits.block[d] + 1
        if name == "__gpux_block_idx":
            return 0, limits.grid[d]
        return 1, limits.grid[d] + 1

    def sub(m: re.Match) -> str:
        lo, hi = bounds(m.group(1), int(m.group(2)))
        return f"call noundef range(i64 {lo}, {hi}) i64 @{m.group(1)}(i32 {m.group(2)})"

    return _INDEX_CALL.sub(sub, text)


# ------------------------------------------------------------ address-space inference
# (LLVM's InferAddressSpaces pass is not reachable through llvmlite 0.50's pass
# manager; this is the subset kernels need, on the optimized module's text.)
_NAME = r'%(?:"[^"]*"|[-\w.$]+)'
_ASCAST_DEF = re.compile(r'^\s*(' + _NAME + r') = addrspacecast ptr(?: addrspace\((\d+)\))? ('
                         + _NAME + r') to (ptr(?: addrspace\(\d+\))?)\s*$')
_GEP_DEF = re.compile(r'^(\s*)(' + _NAME + r') = getelementptr ')
_DEFINE_LINE = re.compile(r'^define [^\n]*\{$')


def rewrite_bodies(text: str, rewrite) -> str:
    """*text* with the lines of each function body (between its ``define ... {`` line
    and its ``}``) replaced by ``rewrite(lines)``."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if not _DEFINE_LINE.match(line):
            continue
        j = i
        while j < len(lines) and lines[j] != "}":
            j += 1
        out.extend(rewrite(lines[i:j]))
        i = j
    return "\n".join(out)


def _ptr_type(space: int) -> str:
    return "ptr" if space == 0 else f"ptr addrspace({space})"


def _operand_end(line: str, start: int) -> int:
    """Index just past the operand that starts at *start* (a name or a constant
    expression with balanced parentheses)."""
    depth, i = 0, start
    while i < len(line):
        c = line[i]
        if c == '"':
            i = line.index('"', i + 1)
        elif c in "([<{":
            depth += 1
        elif c in ")]>}":
            if depth == 0:
                return i
            depth -= 1
        elif c == "," and depth == 0:
            return i
        elif c == " " and depth == 0 and line[start] == "%":
            return i
        i += 1
    return i


def _hoist_const_casts(text: str, gen_ty: str) -> str:
    """Constant GEPs on a cast of a specific-space pointer become the cast of a GEP in
    that space: ``getelementptr (T, G addrspacecast (ptr addrspace(S) @g to G), i)``
    -> ``addrspacecast (ptr addrspace(S) getelementptr (T, ptr addrspace(S) @g, i) to G)``.
    (A module without such a constant expression returns at once: the pattern, one per
    generic pointer type, costs about 0.4 ms to compile.)"""
    if f"{gen_ty} addrspacecast (" not in text:
        return text
    pat = re.compile(r'getelementptr ((?:inbounds |nuw |nusw |inrange\(\d+, \d+\) )*)\(([^,()]+(?:\[[^\]]*\])?), '
                     + re.escape(gen_ty) + r' addrspacecast \((ptr(?: addrspace\((\d+)\))?) (@[-\w.$"]+) to '
                     + re.escape(gen_ty) + r'\)((?:, [^()]+?)*)\)')
    while True:
        new = pat.sub(lambda m: f"addrspacecast ({m.group(3)} getelementptr {m.group(1)}"
                                f"({m.group(2)}, {m.group(3)} {m.group(5)}{m.group(6)}) to {gen_ty})",
                      text)
        if new == text:
            return text
        text = new


_CAST_OPEN = "addrspacecast (ptr "


def _cast_head(op: str) -> tuple[int, int] | None:
    """(source space, where the source operand starts) of an operand that begins
    ``addrspacecast (ptr [addrspace(N)] ``, else None (string operations: a pattern
    cost a process's first inference about 0.1 ms to compile)."""
    head = len(_CAST_OPEN)
    if not op.startswith(_CAST_OPEN):
        return None
    if not op.startswith("addrspace(", head):
        return 0, head
    num = head + len("addrspace(")
    close = op.find(") ", num)
    digits = op[num:close]
    return (int(digits), close + 2) if close > num and digits.isdigit() else (0, head)


def infer_address_spaces(text: str, generic: int) -> str:
    """Loads, stores, atomics and address computations on a pointer that is a cast to
    the generic address space (*generic*, in the module's own numbering) of a
    pointer in a specific space use the specific pointer instead.

    Followed through ``getelementptr`` chains, from ``addrspacecast`` instructions
    and constant expressions (shared and constant arrays are module variables).  A
    computed pointer keeps its generic form for every other user (calls, ``phi``,
    ``select``, pointers stored as values); the casts left unused are for
    ``drop_unused_values`` to remove.  OpenCL drivers and GPUs then see global,
    local and private accesses, not generic ones."""
    gen_ty = _ptr_type(generic)
    text = _hoist_const_casts(text, gen_ty)
    cast_tail = f" to {gen_ty})"
    counter = 0

    def per_function(body: list[str]) -> list[str]:
        nonlocal counter
        known: dict[str, tuple[int, str]] = {}  # generic name -> (space, specific operand)

        def resolve(op: str):
            if op in known:
                return known[op]
            head = _cast_head(op)
            # the whole operand is one cast: its "(" at 14 closes at the end
            if head and op.endswith(cast_tail) and close_paren(op, 14) == len(op) - 1:
                space, end = head
                if space != generic:
                    return space, op[end:-len(cast_tail)]
            return None

        for ln in body:
            m = _ASCAST_DEF.match(ln)
            if m and m.group(4) == gen_ty and int(m.group(2) or 0) != generic:
                known[m.group(1)] = (int(m.group(2) or 0), m.group(3))
        # GEP chains (the printed order of blocks need not follow dominance: iterate)
        geps = [k for k, ln in enumerate(body) if _GEP_DEF.match(ln)]
        gep_new: dict[int, tuple[str, str]] = {}
        changed = True
        while changed:
            changed = False
            for k in geps:
                if k in gep_new:
                    continue
                ln = body[k]
                name = _GEP_DEF.match(ln).group(2)
                at = ln.find(f", {gen_ty} ")
                if at < 0:
                    continue
                start = at + len(gen_ty) + 3
                end = _operand_end(ln, start)
                r = resolve(ln[start:end])
                if r is None:
                    continue
                space, spec = r
                counter += 1
                sname = f"%gpux.as{counter}"
                indent = _GEP_DEF.match(ln).group(1)
                head = ln[:at].replace(f"{name} = ", f"{sname} = ", 1)
                gep_new[k] = (head + f", {_ptr_type(space)} {spec}" + ln[end:],
                              f"{indent}{name} = addrspacecast {_ptr_type(space)} {sname} to {gen_ty}")
                known[name] = (space, sname)
                changed = True
        out: list[str] = []
        for k, ln in enumerate(body):
            if k in gep_new:
                out.extend(gep_new[k])
                continue
            out.append(_use_specific(ln, gen_ty, resolve))
        return out

    return rewrite_bodies(text, per_function)


#: the operations with no effect but their value (a load too, unless it is volatile or
#: atomic; a division by zero, undefined, may be dropped).  Told apart with string
#: operations: a pattern of them all took about 1 ms to compile at import.
_NO_EFFECT_OPS = frozenset((
    "getelementptr", "addrspacecast", "bitcast", "ptrtoint", "inttoptr", "add", "sub", "mul",
    "udiv", "sdiv", "urem", "srem", "shl", "lshr", "ashr", "and", "or", "xor", "zext", "sext",
    "trunc", "icmp", "fcmp", "select", "phi", "freeze", "fneg", "fadd", "fsub", "fmul", "fdiv",
    "frem", "fpext", "fptrunc", "sitofp", "uitofp", "fptosi", "fptoui", "extractvalue",
    "insertvalue", "extractelement", "insertelement", "shufflevector", "load"))


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
    """(``%name``, right-hand side) of an instruction that defines a value, else None."""
    s = line.lstrip()
    if not s.startswith("%"):
        return None
    end = name_end(s, 1)
    if end == 1 or not s.startswith(" = ", end):
        return None
    return s[:end], s[end + 3:]


def _no_effect(rhs: str) -> bool:
    op = rhs.split(" ", 1)[0]
    return op in _NO_EFFECT_OPS and not (op == "load" and rhs.startswith(("load volatile ",
                                                                     "load atomic ")))


def drop_unused_values(text: str) -> str:
    """Instructions with no effect but their value (address computations, casts,
    arithmetic, comparisons, phis, plain loads) that nothing uses, removed, as
    dead-code elimination would: the casts that address-space inference leaves, and
    the values whose every use the IR rewrites recomputed.  Without a pass manager
    run, and the module need not be parsed for it.  (A name is counted wherever it
    appears in the function's text, so a use is never missed; something that only
    looks like one keeps a value.)"""
    if not any(f" = {op} " in text for op in _NO_EFFECT_OPS):
        return text
    return rewrite_bodies(text, _drop_unused_in)


def _drop_unused_in(body: list[str]) -> list[str]:
    uses: dict[str, int] = {}
    defs: dict[str, int] = {}   # removable value -> its line
    operands: dict[int, list[str]] = {}
    local = re.compile(_NAME)  # (re's cache: compiled once per process)
    for k, ln in enumerate(body):
        names = local.findall(ln)
        for n in names:
            uses[n] = uses.get(n, 0) + 1
        d = definition(ln) if " = " in ln else None
        if d and _no_effect(d[1]):
            defs[d[0]] = k
            operands[k] = names[1:]  # the first name is the value defined
    for n in defs:
        uses[n] -= 1  # its definition
    dead = [n for n, k in defs.items() if uses[n] == 0]
    gone: set[int] = set()
    while dead:
        k = defs[dead.pop()]
        if k in gone:
            continue
        gone.add(k)
        for u in operands[k]:
            uses[u] -= 1
            if uses[u] == 0 and u in defs:
                dead.append(u)
    return body if not gone else [ln for k, ln in enumerate(body) if k not in gone]

_MEM_OP = re.compile(r'^\s*(?:' + _NAME + r' = )?(load|store|atomicrmw|cmpxchg)\b')


def _use_specific(line: str, gen_ty: str, resolve) -> str:
    """*line* with its memory operand replaced by the specific pointer, where known."""
    m = _MEM_OP.match(line)
    if not m:
        return line
    op = m.group(1)
    needle = f"{gen_ty} "
    cands = []
    pos = line.find(needle, m.end())
    while pos >= 0:
        before = line[pos - 1] if pos else " "
        after = line[pos + len(needle):pos + len(needle) + 1]
        if before in " (,<" and (after in ('%', '@') or line.startswith("addrspacecast (", pos + len(needle))):
            cands.append(pos)
        pos = line.find(needle, pos + 1)
    if not cands:
        return line
    # the pointer operand: first for atomicrmw/cmpxchg, last for load and store
    pos = cands[0] if op in ("atomicrmw", "cmpxchg") else cands[-1]
    start = pos + len(needle)
    end = _operand_end(line, start)
    r = resolve(line[start:end])
    if r is None:
        return line
    space, spec = r
    return line[:pos] + f"{_ptr_type(space)} {spec}" + line[end:]


_SHIFT = re.compile(r'^(\s*)(' + _NAME + r') = (shl|lshr|ashr)((?: nuw| nsw| exact)*) i(\d+) '
                    r'([^,]+), (' + _NAME + r')\s*$', re.M)


def mask_shift_amounts(text: str) -> str:
    """Scalar shifts by a computed amount get the amount masked to the width
    (``and iN %b, N-1``).  The mask changes nothing where LLVM's shift is defined
    (an amount below the width); it is for drivers that miscompile unmasked
    shifts (see the OpenCL target's ``emit``)."""
    counter = 0

    def sub(m: re.Match) -> str:
        nonlocal counter
        counter += 1
        indent, name, op, flags, bits, a, b = m.groups()
        masked = f"%gpux.shamt{counter}"
        return (f"{indent}{masked} = and i{bits} {b}, {int(bits) - 1}\n"
                f"{indent}{name} = {op}{flags} i{bits} {a}, {masked}")

    return _SHIFT.sub(sub, text)


_SHARED_ATOMIC = re.compile(r'^(\s*(?:' + _NAME + r' = )?(?:atomicrmw|cmpxchg)\b[^\n]*?'
                            r'\bptr addrspace\((\d+)\)[^\n]*?)syncscope\("device"\)', re.M)


def narrow_shared_atomics(text: str, shared: int, scope: str = "workgroup") -> str:
    """Atomics on memory in the *shared* address space at work-group scope (the back
    end's name for it: ``syncscope("workgroup")`` for SPIR-V) instead of device scope:
    only the work-items of one group can see such memory, so the narrower scope orders
    the same accesses, and back ends may pick cheaper instructions for it."""
    def sub(m: re.Match) -> str:
        if int(m.group(2)) != shared:
            return m.group(0)
        return m.group(1) + f'syncscope("{scope}")'

    return _SHARED_ATOMIC.sub(sub, text)
