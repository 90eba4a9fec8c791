"""The shared validation of an optimized module (the ``validate`` stage): calls of
what the device lacks, recursion, integer widths, float64 and other types a device
needs a feature for, 64-bit atomics; each problem that a line of the user's code
causes names that line (``kernel.py:12``), read from debug locations.

Everything is read from the module's text through the IR lexer (``irlex``,
:class:`ModuleFacts`): a user's string that spells ``double`` uses no double.
"""

from __future__ import annotations

import os

from . import irlex as lx
from . import linking
from .errors import ValidationError

__all__ = ["validate", "first_located", "python_name", "ModuleFacts"]


class ModuleFacts:
    """What validation reads of a module's text, in one pass over its lines' tokens:
    the functions it defines and declares, who calls whom, the integer widths and
    type words (``double``, ``half``) its code uses, and the value types of its
    atomic operations.  Strings, names, comments and metadata are not code: a
    user's ``print("double check")`` uses no double."""

    __slots__ = ("defined", "declared", "calls", "int_widths", "words", "atomic_types")

    def __init__(self, text: str):
        self.defined: set[str] = set()
        self.declared: set[str] = set()
        #: defined function -> the functions it calls directly
        self.calls: dict[str, set[str]] = {}
        #: the value types of atomicrmw and cmpxchg instructions
        self.atomic_types: set[str] = set()
        current = None
        code: list[str] = []  # the lines of code: globals, declarations, definitions
        for ln in text.split("\n"):
            if not ln:
                continue
            c = ln[0]
            if c in ";!}" or ln.startswith(("target ", "source_filename", "attributes ")):
                if c == "}":
                    current = None
                continue
            code.append(ln)
            if c == "d" and ln.startswith(("define", "declare")):
                toks = lx.line_tokens(ln)
                at = lx.define_name(toks)
                if at is None or toks[0] not in ("define", "declare"):
                    continue
                n = lx.name(toks[at])
                if toks[0] == "define":
                    self.defined.add(n)
                    current = self.calls.setdefault(n, set())
                else:
                    self.declared.add(n)
                continue
            if current is None:
                continue
            # (a quick no: only such lines can hold a call or an atomic)
            if "call" in ln or "invoke" in ln:
                toks = lx.line_tokens(ln)
                at = lx.callee(toks)
                if at is not None and toks[at][0] == "@":
                    current.add(lx.name(toks[at]))
            if "atomicrmw" in ln or "cmpxchg" in ln:
                toks = lx.line_tokens(ln)
                op, at = lx.instruction(toks)
                if op in ("atomicrmw", "cmpxchg"):
                    comma = lx.at_depth0(toks, at, len(toks), ",")
                    if comma is not None:
                        self.atomic_types.add(toks[lx.skip(toks, comma + 1)])
        self.declared -= self.defined
        # the words of all code at once: one tokenization, each distinct token classified
        self.int_widths, self.words = lx.type_words(lx.words("\n".join(code)))


def validate(job, relocate) -> None:
    """Raise ValidationError listing every rule of its target that *job*'s optimized
    module breaks.  ``relocate(job, uses)`` compiles the module again with line
    information and returns ``first_located`` on it (the compiler's; on the error path)."""
    problems: list[str] = []
    stack = job.target.overlays()
    allowed = job.target.extern_prefixes
    # source-emitting targets keep __gpux_* calls and map them by name; their
    # own validate hook checks each one against their source registry
    by_name = job.target.intrinsics_by_name
    # the declarations, the call graph and the types used, read from the module's
    # text through the IR lexer (one print; walking the module through the binding
    # costs foreign calls per function and instruction)
    text = job.printed if job.printed is not None else str(job.module)
    # foreign code linked with the module (linking.py): an error where the target
    # links none; the symbols it defines may stay declared
    linked = linking.check(job.target, text, job.name,
                           where=lambda syms: _user_line(job, relocate, frozenset(syms)))
    facts = ModuleFacts(text)
    for name in sorted(facts.declared):
        if name.startswith("__gpux_"):
            if by_name:
                continue
            problems.append(_missing_intrinsic(job, relocate, stack, name))
        elif not (name.startswith("llvm.") or name.startswith(allowed) or name in linked):
            problems.append(f"calls {name!r}, which is not available on the device "
                            f"(a host function or an unsupported library call)")
    calls = {n: callees & facts.defined for n, callees in facts.calls.items()}
    # recursion: a cycle in the call graph among defined functions
    state: dict[str, int] = {}

    def visit(n, path):
        state[n] = 1
        for c in calls.get(n, ()):
            if state.get(c) == 1:
                cycle = path[path.index(c):] + [c]
                problems.append(f"recursion is not supported on target {job.target.name!r} "
                                f"(its devices have no call stack for it): "
                                f"{' -> '.join(map(python_name, cycle))} "
                                f"(compile for a target whose devices have one, or rewrite "
                                f"the recursion as a loop)")
            elif c not in state:
                visit(c, path + [c])
        state[n] = 2

    if not job.target.recursion:
        for n in calls:
            if n not in state:
                visit(n, [n])
    widths = job.target.legal_int_widths
    if widths:
        bad = sorted(facts.int_widths - set(widths) - {1})
        if bad:
            where = _user_line(job, relocate, lambda w, _words: bool(w & set(bad)))
            problems.append(f"the optimized code uses integer widths {bad}{where}, which target "
                            f"{job.target.name!r} cannot represent (legal: {sorted(widths)})")
    if not job.target.has("fp64") and "double" in facts.words:
        where = _user_line(job, relocate, lambda _w, words: "double" in words)
        problems.append(f"uses float64 (double precision){where}, which this device does not "
                        f"support; use float32 values and arrays")
    # types a device needs a feature for, as a target's data names them (its
    # ``type_features``: (IR type word, feature, what it is), e.g. C-family source
    # spells float16 `half`, which a compiler without half support rejects)
    for word, feature, what in job.target.type_features:
        if word in facts.words and not job.target.has(feature):
            where = _user_line(job, relocate, lambda _w, words, _word=word: _word in words)
            problems.append(f"uses {what}{where}, which this device does not support (it lacks "
                            f"the feature {feature!r}); use float32 values and arrays")
    from .language.heap import uses_heap

    heap = uses_heap(text)
    if heap and not job.target.device_heap:
        problems.append(_HEAP_PROBLEM.format(f"target {job.target.name!r} does not have it"))
    elif (heap and not job.target.device_malloc and not job.target.has("int64_atomics")
          and "i64" in facts.atomic_types):  # not the 32-bit allocator (heap.HEAP32_FAMILY)
        problems.append(_HEAP_PROBLEM.format(
            "whose allocator needs 64-bit atomics, which this device does not support (it "
            "lacks the feature 'int64_atomics')"))
    elif not job.target.has("int64_atomics") and facts.atomic_types & {"i64", "double"}:
        problems.append("uses 64-bit atomic operations (gpux.atomic.* on int64, uint64 or "
                        "float64 arrays), which this device does not support (it lacks the "
                        "feature 'int64_atomics'); use 32-bit arrays")
    problems.extend(job.target.validate(job.module, job.kernels))
    if problems:
        raise ValidationError(job.name, job.target.name, problems)


#: a kernel that makes arrays on a target without the device heap
_HEAP_PROBLEM = ("makes arrays of a size known only when it runs (np.zeros(n), a + b, "
                 "a.copy(), a ufunc without its output ...), whose memory comes from the "
                 "device heap, and {}; give such arrays a constant shape outside loops "
                 "(private memory), use local.array, or pass the arrays in")


def python_name(symbol: str) -> str:
    """The Python name (``module.qualname``) in a symbol Numba mangled (Itanium's
    nested name, ``_ZN<len><part>...``, whose parts escape other characters as
    ``_xx``), or *symbol* itself."""
    if not symbol.startswith("_ZN"):
        return symbol
    parts, i = [], 3
    while i < len(symbol) and symbol[i].isdigit():
        j = i
        while symbol[j].isdigit():
            j += 1
        n = int(symbol[i:j])
        parts.append(symbol[j:j + n])
        i = j + n
    if not parts:
        return symbol
    out = []
    for part in parts:
        k, text = 0, []
        while k < len(part):
            # numba's escapes, "_" and two hexadecimal digits, of characters that are
            # not in identifiers ("<locals>" is "_3clocals_3e")
            code = part[k + 1:k + 3]
            if part[k] == "_" and _is_hex(code) and int(code, 16) < 0x80 \
                    and not (chr(int(code, 16)).isalnum() or code == "5f"):
                text.append(chr(int(code, 16)))
                k += 3
            else:
                text.append(part[k])
                k += 1
        out.append("".join(text))
    return ".".join(out)


def _is_hex(s: str) -> bool:
    return len(s) == 2 and all(c in "0123456789abcdef" for c in s)


def _missing_intrinsic(job, relocate, stack, name: str) -> str:
    """The problem of a call of the portable intrinsic *name* that the target's
    registries do not define: the intrinsic, the user's line that calls it, the
    target (and its CPU, e.g. ``sm_80``) and, where its contract says, where it exists."""
    from .language.intrinsics import INTRINSICS

    spec = INTRINSICS.get(name)
    shown = name if len(name) <= 64 else name[:48] + "..."  # names that carry their text
    cpu = f" ({job.target.cpu})" if job.target.cpu else ""
    where = _user_line(job, relocate, frozenset((name,)))
    msg = (f"uses the portable intrinsic {shown}{where}, which target {job.target.name!r}{cpu} "
           f"does not define (its overlay registries: "
           f"{', '.join(r.name for r in stack.registries)})")
    if spec is not None and spec.requires:
        msg += f": {spec.requires}"
    return msg


def _user_line(job, relocate, uses) -> str:
    """`` at file.py:12``: the user's source line of the first instruction of the
    optimized module whose types satisfy ``uses(widths, words)`` (``irlex.type_words``)
    or, where *uses* is a set of names, that calls or names one of those functions,
    or ``""`` where it cannot be found.  Read from the module's debug locations; a
    module compiled without line information is compiled again with it (only on this
    error path: debug locations do not change the code LLVM makes)."""
    text = job.printed if job.printed is not None else str(job.module)
    loc = first_located(text, uses)
    if loc is None and not (job.options.lineinfo or job.options.debug):
        try:
            loc = relocate(job, uses)
        except Exception:  # noqa: BLE001 - the validation error stands without a line
            loc = None
    return f" at {os.path.basename(loc[0])}:{loc[1]}" if loc else ""


def first_located(text: str, uses) -> tuple[str, int] | None:
    """(file name, line) of the first instruction of a function body that carries a
    debug location (``!dbg !N``) and whose tokens satisfy ``uses(widths, words)``
    (``irlex.type_words``), or that names a function of *uses* where it is a frozenset,
    read from the module's ``!DILocation`` and scope metadata; None where no such
    instruction has a location."""
    ls = text.split("\n")
    nodes = None
    for f in lx.functions(ls):
        for ln in ls[f.start:f.stop]:
            if "!dbg" not in ln:
                continue
            toks = lx.line_tokens(ln)
            if isinstance(uses, frozenset):
                if not any(lx.name(t) in uses for t in lx.names_in(toks, "@")):
                    continue
            elif not uses(*lx.type_words(toks)):
                continue
            at = toks.index("!dbg") if "!dbg" in toks else -1
            if at < 0:
                continue
            if nodes is None:
                nodes = {}
                for m in ls:
                    if m.startswith("!"):
                        mt = lx.line_tokens(m)
                        if mt[0][1:].isdigit():
                            nodes[mt[0]] = mt
            loc = _location(nodes, toks[lx.skip(toks, at + 1)])
            if loc is not None:
                return loc
    return None


def _field(toks, key: str):
    """The value token of ``key: value`` in a metadata node's tokens, or None."""
    for i in range(len(toks) - 2):
        if toks[i] == key and toks[lx.skip(toks, i + 1)] == ":":
            return toks[lx.skip(toks, lx.skip(toks, i + 1) + 1)]
    return None


def _location(nodes: dict, node: str):
    toks = nodes.get(node)
    if toks is None:
        return None
    line = _field(toks, "line")
    scope = _field(toks, "scope")
    for _ in range(64):  # the scope chain up to one that names its file
        st = nodes.get(scope)
        if st is None:
            return None
        f = _field(st, "file")
        if f is not None and f in nodes:
            name = _field(nodes[f], "filename")
            if name is None or line is None or not line.isdigit():
                return None
            return lx.unquote(name), int(line)
        scope = _field(st, "scope")
    return None
