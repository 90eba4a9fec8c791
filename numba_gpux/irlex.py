"""The one lexer of LLVM's textual IR.

Every piece of the project that reads or rewrites LLVM IR as text goes through
this module: it splits the text into tokens that know string constants
(``c"..."``, ``"..."`` with ``\\XX`` escapes), quoted names (``%"..."``,
``@"..."``), comments, metadata (``!name``, ``!12``, ``!"..."``) and attribute
group references (``#0``), so a rewrite that looks for the type ``ptr`` or the
callee ``@sin`` never finds it inside a user's string or a name.  One compiled
pattern classifies every byte; nothing else runs a regular expression over IR.

The tokens are the text's own substrings, whitespace and newlines included, so
``join(tokens(text)) == text`` for any text: a rewrite replaces tokens and joins
them back, and whatever it did not touch stays byte for byte.  LLVM prints one
instruction, one definition or declaration header, one global per line, and no
token spans a newline (a newline inside a string is ``\\0A``), so the IR can be
handled a line at a time: ``functions`` finds the bodies, ``code`` the tokens of
a line that carry meaning.

This module imports nothing of the package (layer 1).
"""

from __future__ import annotations

import re

__all__ = [
    "WS", "NL", "COMMENT", "STRING", "LOCAL", "GLOBAL", "META", "ATTR", "NUMBER", "WORD",
    "PUNCT",
    "tokens", "join", "kind", "code", "code_index", "is_code", "lines", "line_tokens",
    "functions", "Function", "name", "spell_local", "spell_global", "FreshNames", "quote",
    "unquote",
    "match_paren", "definition", "defined_value", "define_name", "callee", "header_keyword",
    "instruction", "is_label", "replace", "string_bytes", "names_in", "type_words",
    "skip", "ptr_type", "spell_ptr", "at_depth0", "split_depth0", "operand_end", "words",
    "local_names", "global_names",
]

# --------------------------------------------------------------------------- tokens

WS = "ws"            #: spaces, tabs, carriage returns
NL = "nl"            #: one newline
COMMENT = "comment"  #: ``;`` to the end of the line
STRING = "string"    #: ``"..."`` or ``c"..."`` (a string constant, attribute or section)
LOCAL = "local"      #: ``%name``, ``%12``, ``%"any name"``
GLOBAL = "global"    #: ``@name``, ``@12``, ``@"any name"``
META = "meta"        #: ``!name``, ``!12``, ``!"string"`` (``!`` alone is PUNCT: ``!{``)
ATTR = "attr"        #: ``#0`` (an attribute group), ``#dbg_value`` (a debug record)
NUMBER = "number"    #: ``12``, ``-1``, ``1.5e+10``, ``0x3FF0...``, ``0xH3C00``, ``s0x1F``
WORD = "word"        #: keywords, types (``i32``, ``ptr``, ``double``), label names, ``...``
PUNCT = "punct"      #: one character: ``( ) [ ] { } < > , = * : !`` and anything else

_TOKEN = re.compile(r"""
    [ \t\r]+                                  # whitespace
  | \n
  | ;[^\n]*                                   # comment
  | (?:[%@!]|c)?"[^"\n]*"                     # quoted name, metadata string, string
  | [%@][-\w$.]+                              # local or global name, numbered too
  | ![-\w$.\\]+                               # metadata name or number
  | \#[-\w$.]+                                # attribute group, debug record
  | [su]0x[0-9A-Fa-f]+(?![-\w$.])             # integer in hex
  | [-+]?(?:0x[KLMHR]?[0-9A-Fa-f]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(?![\w$.])
  | [-\w$.]+                                  # keyword, type, label, ...
  | .                                         # any other character, alone
""", re.X | re.S | re.A)

_tokenize = _TOKEN.findall


def tokens(text: str) -> list[str]:
    """The tokens of *text*, every character in exactly one of them, in order."""
    return _tokenize(text)


def join(toks) -> str:
    """The text of *toks* (``join(tokens(t)) == t``)."""
    return "".join(toks)


_FIRST = {" ": WS, "\t": WS, "\r": WS, "\n": NL, ";": COMMENT, '"': STRING}
for _c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_$.":
    _FIRST[_c] = WORD
del _c
_SIGILS = {"%": LOCAL, "@": GLOBAL, "!": META, "#": ATTR}
_NUMBER = re.compile(r"[-+]?(?:0x[KLMHR]?[0-9A-Fa-f]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)", re.A)


def kind(tok: str) -> str:
    """The kind of a token that ``tokens`` returned (one of the constants above)."""
    c = tok[0]
    k = _FIRST.get(c)
    if k is WORD:
        if c == "c" and tok[1:2] == '"':
            return STRING
        if c in "su" and tok[1:3] == "0x" and len(tok) > 3 and \
                all(h in "0123456789abcdefABCDEF" for h in tok[3:]):
            return NUMBER
        return WORD
    if k is not None:
        return k
    k = _SIGILS.get(c)
    if k is not None:
        return k if len(tok) > 1 else PUNCT
    if c in "0123456789-+" and _NUMBER.fullmatch(tok):
        return NUMBER
    if c in "0123456789-" and len(tok) > 1:
        return WORD  # a label such as ``1a:`` or ``-x:``
    return PUNCT


def is_code(tok: str) -> bool:
    """Whether *tok* carries meaning (not whitespace, a newline or a comment)."""
    c = tok[0]
    return not (c in " \t\r\n" or c == ";")


def code(toks) -> list[str]:
    """The tokens of *toks* that carry meaning, in order."""
    return [t for t in toks if t[0] not in " \t\r\n;"]


def code_index(toks) -> list[int]:
    """The positions in *toks* of the tokens that carry meaning."""
    return [i for i, t in enumerate(toks) if t[0] not in " \t\r\n;"]


def lines(text: str) -> list[str]:
    """*text* split at its newlines (``"\\n".join(lines(t)) == t``).  No token spans
    a newline, so each line can be tokenized on its own."""
    return text.split("\n")


def line_tokens(line: str) -> list[str]:
    """The tokens of one line (``tokens``, named for what it is given)."""
    return _tokenize(line)


# --------------------------------------------------------------------------- names

_BARE_NAME = re.compile(r"[-a-zA-Z$._][-a-zA-Z$._0-9]*|[0-9]+", re.A)


def unquote(s: str) -> str:
    """The name or string that LLVM's spelling *s* (``"..."`` with ``\\XX`` escapes and
    ``\\\\``, or bare) stands for, its bytes read as UTF-8."""
    if not s.startswith('"'):
        return s
    body = s[1:-1]
    if "\\" not in body:
        return body
    return string_bytes(s).decode("utf-8", "surrogateescape")


def string_bytes(s: str) -> bytes:
    """The bytes of a string token (``"..."`` or ``c"..."``), escapes decoded."""
    if s.startswith("c"):
        s = s[1:]
    body = s[1:-1]
    out = bytearray()
    i, n = 0, len(body)
    while i < n:
        c = body[i]
        if c == "\\":
            if body.startswith("\\", i + 1):
                out += b"\\"
                i += 2
                continue
            hx = body[i + 1:i + 3]
            if len(hx) == 2 and all(h in "0123456789abcdefABCDEF" for h in hx):
                out.append(int(hx, 16))
                i += 3
                continue
        out += c.encode("utf-8", "surrogateescape")
        i += 1
    return bytes(out)


def quote(s: str) -> str:
    """LLVM's spelling of the name *s*: bare where it may be, else quoted with
    ``\\XX`` escapes for ``"``, ``\\`` and control characters."""
    if _BARE_NAME.fullmatch(s):
        return s
    out = []
    for b in s.encode("utf-8", "surrogateescape"):
        if b == 0x22 or b == 0x5C or b < 0x20 or b == 0x7F:
            out.append(f"\\{b:02X}")
        else:
            out.append(chr(b))
    raw = "".join(out)
    # back to str: bytes >= 0x80 are kept as the UTF-8 text they spell
    return '"' + raw.encode("latin-1").decode("utf-8", "surrogateescape") + '"'


def name(tok: str) -> str:
    """The name a LOCAL, GLOBAL or META token stands for, without its sigil
    (``@"a b"`` -> ``a b``, ``%12`` -> ``12``)."""
    return unquote(tok[1:])


def spell_local(n: str) -> str:
    """The token that names the local value *n*."""
    return "%" + quote(n)


class FreshNames:
    """Fresh local names for one function body (none of its own names is reused), for
    the rewrites that add values to it."""

    def __init__(self, bodies_tokens):
        self.taken = {name(t) for toks in bodies_tokens for t in toks if t[0] == "%" and len(t) > 1}

    def fresh(self, want: str) -> str:
        """The token of a local name made from *want* (``want``, ``want.1``, ...) that
        the body does not use, taken from now on."""
        n, k = want, 0
        while n in self.taken:
            k += 1
            n = f"{want}.{k}"
        self.taken.add(n)
        return spell_local(n)


def spell_global(n: str) -> str:
    """The token that names the global value *n*."""
    return "@" + quote(n)


# --------------------------------------------------------------------------- structure

_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSE = {")", "]", "}", ">"}


def match_paren(toks, i: int) -> int:
    """The position in *toks* of the bracket that closes the one at *i* (``(``,
    ``[``, ``{`` or ``<``; brackets of every kind nest).  ValueError if it is
    not closed."""
    if toks[i] not in _OPEN:
        raise ValueError(f"no opening bracket at token {i}: {toks[i]!r}")
    depth = 0
    for k in range(i, len(toks)):
        t = toks[k]
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth -= 1
            if depth == 0:
                return k
    raise ValueError("unbalanced brackets")


def is_label(toks) -> bool:
    """Whether the line *toks* is a basic block's label (``name:``, ``12:``, ``"x":``)."""
    c = code(toks)
    return len(c) >= 2 and c[1] == ":" and kind(c[0]) in (WORD, NUMBER, STRING)


def definition(toks):
    """For an instruction that defines a value (``%x = ...``): the position in
    *toks* of its name and of the instruction's first word after ``=``; else None."""
    ci = code_index(toks)
    if len(ci) >= 3 and toks[ci[0]][0] == "%" and len(toks[ci[0]]) > 1 and toks[ci[1]] == "=":
        return ci[0], ci[2]
    return None


def defined_value(toks):
    """The LOCAL token an instruction line defines (``%x`` of ``%x = ...``), or None."""
    d = definition(toks)
    return toks[d[0]] if d else None


def instruction(toks):
    """The opcode of an instruction line (``load``, ``call``, ``store``; ``tail`` and
    ``musttail``/``notail`` skipped before ``call``) with its position in *toks*;
    (None, -1) for a line that holds no instruction."""
    ci = code_index(toks)
    if not ci:
        return None, -1
    k = 0
    if toks[ci[0]][0] == "%" and len(ci) > 2 and toks[ci[1]] == "=":
        k = 2
    if k >= len(ci) or kind(toks[ci[k]]) is not WORD:
        return None, -1
    op = toks[ci[k]]
    if op in ("tail", "musttail", "notail") and k + 1 < len(ci):
        return toks[ci[k + 1]], ci[k + 1]
    if len(ci) > k + 1 and toks[ci[k + 1]] == ":":
        return None, -1  # a label
    return op, ci[k]


def header_keyword(toks) -> str | None:
    """``define``, ``declare`` or another module-level keyword a line starts with
    (``attributes``, ``target``, ``source_filename``), ``global`` for a global
    variable or alias (``@g = ...``), ``metadata`` for ``!x = ...``; None for
    anything else (an instruction, a label, a blank line)."""
    if not toks:
        return None
    t = toks[0]
    k = kind(t)
    if k is WORD:
        return t
    if k is GLOBAL:
        return "global"
    if k is META or t == "!":
        return "metadata"
    return None


def define_name(toks):
    """The position in *toks* of the name a ``define`` or ``declare`` line gives its
    function (the first global name on the line), or None."""
    for i, t in enumerate(toks):
        if t[0] == "@" and len(t) > 1:
            return i
        if t[0] == ";":
            return None
    return None


def callee(toks, start: int = 0):
    """The position in *toks* of the callee of a ``call`` or ``invoke`` at or after
    position *start*: the first name at bracket depth 0 followed by ``(`` (the
    function type of a variadic call and return attributes are skipped), or None
    (no call, or an inline ``asm`` callee)."""
    n = len(toks)
    i = start
    while i < n and toks[i] not in ("call", "invoke", "callbr"):
        i += 1
    depth = 0
    i += 1
    while i < n:
        t = toks[i]
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth -= 1
        elif depth == 0:
            c = t[0]
            if (c == "@" or c == "%") and len(t) > 1:
                j = i + 1
                while j < n and toks[j][0] in " \t":
                    j += 1
                if j < n and toks[j] == "(":
                    return i
            elif t == "asm":
                return None
        i += 1
    return None


class Function:
    """A function definition in a list of lines: ``header`` is the index of its
    ``define ... {`` line, ``start``..``stop`` the body's lines (``stop`` is the
    line ``}``), ``name`` the function's name (unquoted)."""

    __slots__ = ("header", "start", "stop", "name")

    def __init__(self, header: int, stop: int, fname: str):
        self.header, self.start, self.stop, self.name = header, header + 1, stop, fname

    def __repr__(self):
        return f"Function({self.name!r}, lines {self.header}..{self.stop})"


def functions(text_lines) -> list[Function]:
    """The function definitions among *text_lines* (``lines(text)``).  A definition's
    header is a line that starts with ``define`` (a module-level line cannot start
    inside a string or comment of another line), its body runs to the first line
    that is ``}``."""
    out = []
    i, n = 0, len(text_lines)
    while i < n:
        ln = text_lines[i]
        if ln.startswith("define"):
            toks = _tokenize(ln)
            if toks[0] == "define":
                at = define_name(toks)
                j = i + 1
                while j < n and text_lines[j] != "}":
                    j += 1
                out.append(Function(i, j, name(toks[at]) if at is not None else ""))
                i = j
        i += 1
    return out


def replace(toks, i: int, j: int, new) -> list[str]:
    """*toks* with positions *i* up to *j* (exclusive) replaced by the tokens *new*
    (a string is one token)."""
    if isinstance(new, str):
        new = [new]
    return [*toks[:i], *new, *toks[j:]]


def names_in(toks, sigil: str = "%") -> list[str]:
    """The name tokens (LOCAL for ``%``, GLOBAL for ``@``) among *toks*, in order."""
    return [t for t in toks if t[0] == sigil and len(t) > 1]


#: the same lexer reduced to its words: the tokenizer's alternatives in its order, only
#: the word captured; whitespace and one-character punctuation are stepped over by
#: ``findall`` (``words`` and the tests check it against ``tokens``)
_WORDS = re.compile(r"""
    ;[^\n]*
  | (?:[%@!]|c)?"[^"\n]*"
  | [%@][-\w$.]+
  | ![-\w$.\\]+
  | \#[-\w$.]+
  | [su]0x[0-9A-Fa-f]+(?![-\w$.])
  | [-+]?(?:0x[KLMHR]?[0-9A-Fa-f]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(?![\w$.])
  | ([-\w$.]+)
""", re.X | re.A)


def words(text: str) -> set[str]:
    """The distinct WORD tokens of *text* (keywords, types, labels), as ``tokens`` and
    ``kind`` would give them, in one pass of the lexer's word scanner."""
    found = set(_WORDS.findall(text))
    found.discard("")
    odd = [w for w in found if w[0] in "0123456789-" and kind(w) is not WORD]
    return found.difference(odd) if odd else found


#: the same lexer reduced to its local names (``%x``, ``%12``, ``%"a b"``, captured);
#: every other token that could hold a ``%`` (strings, comments, other names, words)
#: is matched whole and gives ""
_LOCALS = re.compile(r"""
    (%"[^"\n]*"|%[-\w$.]+)
  | ;[^\n]*
  | (?:[@!]|c)?"[^"\n]*"
  | @[-\w$.]+
  | ![-\w$.\\]+
""", re.X | re.A)


def local_names(line: str) -> list[str]:
    """The LOCAL tokens of *line*, in order (``[t for t in tokens(line) if kind(t) ==
    LOCAL]``, in one pass of the lexer's name scanner)."""
    return [t for t in _LOCALS.findall(line) if t]


#: the same lexer reduced to its global names (``@f``, ``@"a b"``, captured)
_GLOBALS = re.compile(r"""
    (@"[^"\n]*"|@[-\w$.]+)
  | ;[^\n]*
  | (?:[%!]|c)?"[^"\n]*"
  | %[-\w$.]+
  | ![-\w$.\\]+
""", re.X | re.A)


def global_names(line: str) -> list[str]:
    """The GLOBAL tokens of *line*, in order (in one pass of the lexer's name scanner)."""
    return [t for t in _GLOBALS.findall(line) if t]


def type_words(toks):
    """The integer widths (``i24`` -> 24) and the other words among *toks* that are
    not inside strings, names or comments: ``(widths, words)``.  Used by validation
    to find ``double``, ``half`` and odd integer widths."""
    widths, words = set(), set()
    for t in toks:
        c = t[0]
        if _FIRST.get(c) is WORD and t[-1] != '"':
            if c == "i" and t[1:].isdigit() and t[1:].isascii():
                widths.add(int(t[1:]))
            else:
                words.add(t)
    return widths, words


# --------------------------------------------------------------------------- operands

def skip(toks, i: int) -> int:
    """The first position at or after *i* that holds a code token (``len(toks)`` if none)."""
    n = len(toks)
    while i < n and toks[i][0] in " \t\r\n;":
        i += 1
    return i


def ptr_type(toks, i: int):
    """For ``ptr`` at *i*: (its address space, None where it is written bare; the
    position after the type).  None where *i* holds no pointer type."""
    if i >= len(toks) or toks[i] != "ptr":
        return None
    j = skip(toks, i + 1)
    if j < len(toks) and toks[j] == "addrspace":
        k = skip(toks, j + 1)
        m = skip(toks, k + 1)
        e = skip(toks, m + 1)
        if e < len(toks) and toks[k] == "(" and toks[e] == ")" and toks[m].isdigit():
            return int(toks[m]), e + 1
    return None, i + 1


def spell_ptr(space: int) -> str:
    """The pointer type in address space *space* (``ptr`` for 0)."""
    return "ptr" if space == 0 else f"ptr addrspace({space})"


def at_depth0(toks, start: int, stop: int, what: str):
    """The first position in ``toks[start:stop]`` at bracket depth 0 (relative to
    *start*) holding *what*, else None."""
    depth = 0
    for k in range(start, stop):
        t = toks[k]
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth -= 1
        elif t == what and depth == 0:
            return k
    return None


def split_depth0(code_toks) -> list[list[str]]:
    """The code tokens *code_toks* (``code``: no whitespace) split at the commas at
    bracket depth 0: an instruction's operands after its opcode, each with its type."""
    groups, cur, depth = [], [], 0
    for t in code_toks:
        if t in _OPEN:
            depth += 1
        elif t in _CLOSE:
            depth -= 1
        if t == "," and depth == 0:
            groups.append(cur)
            cur = []
        else:
            cur.append(t)
    groups.append(cur)
    return groups


def operand_end(toks, i: int) -> int:
    """The position after the operand that starts at *i*: a name, a constant, or a
    constant expression (``getelementptr inbounds (...)``, ``addrspacecast (...)``,
    ``[...]``, ``{...}``, ``<...>``)."""
    n = len(toks)
    t = toks[i]
    if t[0] in "%@":
        return i + 1
    j = i
    while j < n and kind(toks[j]) is WORD:
        j = skip(toks, j + 1)
        if j < n and toks[j] == "(":
            return match_paren(toks, j) + 1
    if j < n and toks[j] in _OPEN:
        return match_paren(toks, j) + 1
    return i + 1
