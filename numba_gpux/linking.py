"""Foreign code linked with a kernel: what it is, how the module records it, and the
check that its target can link it.

A kernel may call functions it does not define (an external device function, as
numba.cuda's ``declare_device`` makes) and bring code to link with it (CUDA C, PTX,
cubins...: numba.cuda's ``jit(link=...)``).  Both travel in the module itself, as
the named metadata ``!gpux.link``: one node of strings per record, either
``!{!"symbol", !"<name>"}`` (a function the linked code defines) or
``!{!"input", !"<kind>", !"<name>", !"<sha256 of the content>"}``.  So the neutral
IR's cache key covers the content of every input, the records survive LLVM's
linking of modules (named metadata operands are concatenated), and each target's
stages read them from the module they compile.

Which inputs a target links is data (``Target.link_kinds``): a target whose set is
empty rejects a module with any record (:func:`check`, at validation), naming the
files, the symbols and the target.  The contents are kept per process by digest
(:func:`content`), read once when a record is made.

Layer 1: imports only ``errors`` and the IR lexer.
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass, field

from . import irlex as lx
from .errors import GpuxUserError, UnsupportedError

__all__ = ["LinkInput", "MissingLinkFile", "KINDS", "EXTENSIONS", "METADATA", "from_path",
           "from_code", "inputs", "records", "add_to_module", "add_to_text", "read", "check", "content",
           "describe"]

#: the named metadata that carries the records
METADATA = "gpux.link"
#: the kinds of linked code, as ``Target.link_kinds`` names them
KINDS = ("cu", "ptx", "cubin", "fatbin", "object", "archive", "ltoir")
#: file extensions (lower case) and the kind each names, as numba.cuda's linker guesses them
EXTENSIONS = {".cu": "cu", ".ptx": "ptx", ".cubin": "cubin", ".fatbin": "fatbin",
              ".o": "object", ".obj": "object", ".a": "archive", ".lib": "archive",
              ".ltoir": "ltoir"}


class MissingLinkFile(GpuxUserError, FileNotFoundError):
    """A file given to link does not exist (or cannot be read)."""


@dataclass(frozen=True)
class LinkInput:
    """One piece of code to link: a file (*path*) or code held in memory (*code*)."""

    kind: str
    #: the file's path, or the in-memory code's name
    name: str
    path: str | None = None
    code: bytes | None = field(default=None, repr=False)

    def read(self) -> bytes:
        """The content now: the file's bytes, or the code held."""
        if self.path is None:
            return self.code
        try:
            with open(self.path, "rb") as f:
                return f.read()
        except OSError as e:
            raise MissingLinkFile(f"cannot read the file to link {self.path!r}: "
                                  f"{e.strerror or e}") from None

    def digest(self) -> str:
        return hashlib.sha256(self.read()).hexdigest()

    def __gpux_cache_key__(self) -> str:
        """The key of code linked with a kernel (``cachekey``): its kind, name and
        content now (a changed file compiles again)."""
        return f"{self.kind}:{self.name}:{self.digest()}"


def from_path(path) -> LinkInput:
    """A file to link, its kind by its extension; a MissingLinkFile where it does not
    exist, an UnsupportedError for an extension of no known kind."""
    p = os.fspath(path)
    if not isinstance(p, str):
        p = os.fsdecode(p)
    ext = os.path.splitext(p)[1].lower()
    kind = EXTENSIONS.get(ext)
    if kind is None:
        raise UnsupportedError(f"cannot link {p!r}: the extension {ext or '(none)'!r} names "
                               f"no kind of code to link (known: "
                               f"{', '.join(sorted(EXTENSIONS))})")
    if not os.path.isfile(p):
        raise MissingLinkFile(f"the file to link {p!r} does not exist")
    return LinkInput(kind, p, path=os.path.abspath(p))


def from_code(kind: str, code, name: str) -> LinkInput:
    """Code of *kind* held in memory (str is encoded as UTF-8)."""
    if kind not in KINDS:
        raise UnsupportedError(f"cannot link {name!r}: {kind!r} is no kind of code to link "
                               f"(known: {', '.join(KINDS)})")
    if isinstance(code, str):
        code = code.encode()
    if not isinstance(code, (bytes, bytearray, memoryview)):
        raise TypeError(f"the code to link {name!r} must be bytes or str, not "
                        f"{type(code).__name__}")
    return LinkInput(kind, str(name), code=bytes(code))


def inputs(value, what: str, convert=None, single: tuple = (),
           named: str = "file paths") -> tuple[LinkInput, ...]:
    """The inputs of a ``link=`` value: None, a file path or a LinkInput, or a list of
    them (paths by extension, checked now: a missing file is a MissingLinkFile).  A
    dialect's own objects (of the types *single*, a lone one or in the list) become
    inputs through ``convert(item)`` (None: not one); *named* says what may be given."""
    if value is None:
        return ()
    if isinstance(value, (str, bytes, os.PathLike, LinkInput, *single)):
        value = (value,)
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"{what}: link must be one of {named} or a list of them, not "
                        f"{type(value).__name__}") from None
    out = []
    for item in items:
        got = None
        if isinstance(item, LinkInput):
            got = item
        elif isinstance(item, (str, bytes, os.PathLike)):
            got = from_path(item)
        elif convert is not None:
            got = convert(item)
        if got is None:
            raise TypeError(f"{what}: link must hold {named}, not {type(item).__name__}")
        out.append(got)
    return tuple(out)


# --------------------------------------------------------------------------- contents

_contents: dict[str, bytes] = {}
_lock = threading.Lock()


def _keep(inp: LinkInput) -> str:
    """Read *inp* now, keep its content by digest, and return the digest."""
    data = inp.read()
    digest = hashlib.sha256(data).hexdigest()
    with _lock:
        _contents.setdefault(digest, data)
    return digest


def content(digest: str, name: str) -> bytes:
    """The content recorded under *digest* (read when its record was made)."""
    with _lock:
        data = _contents.get(digest)
    if data is None:
        raise GpuxUserError(f"the content of {name!r} to link is not known in this process "
                            f"(its record was made by another): compile the kernel again")
    return data


# --------------------------------------------------------------------------- records

def records(inputs=(), symbols=()) -> list[tuple[str, ...]]:
    """The records of *inputs* (their contents read and kept now) and *symbols*."""
    out = [("symbol", s) for s in symbols]
    out += [("input", inp.kind, inp.name, _keep(inp)) for inp in inputs]
    return out


def add_to_module(module, recs) -> None:
    """Add *recs* to an ``llvmlite.ir`` module (what a lowering builds)."""
    for rec in recs:
        module.add_named_metadata(METADATA, list(rec))


def _node_lines(text_lines):
    """{node number: its line} of the numbered metadata among *text_lines*."""
    return {lx.line_tokens(ln)[0][1:]: ln for ln in text_lines
            if ln.startswith("!") and lx.line_tokens(ln)[0][1:].isdigit()}


def read(text: str) -> tuple[tuple[str, ...], ...]:
    """The records of the module *text*, in order, each once."""
    ls = lx.lines(text)
    named = [ln for ln in ls if ln.startswith(f"!{METADATA} ")
             and lx.code(lx.line_tokens(ln))[:2] == [f"!{METADATA}", "="]]
    if not named:
        return ()
    nodes = _node_lines(ls)
    out: list[tuple[str, ...]] = []
    for ln in named:
        for ref in lx.code(lx.line_tokens(ln))[2:]:
            if not (ref.startswith("!") and ref[1:].isdigit()):
                continue
            node = nodes.get(ref[1:])
            if node is None:
                continue
            toks = lx.code(lx.line_tokens(node))
            rec = tuple(lx.unquote(t[1:]) for t in toks if t.startswith('!"'))
            if rec and rec not in out:
                out.append(rec)
    return tuple(out)


def add_to_text(text: str, recs) -> str:
    """The module *text* with *recs* added to its records (one named metadata)."""
    if not recs:
        return text
    old = list(read(text))
    allrecs = old + [r for r in recs if r not in old]
    ls = [ln for ln in lx.lines(text.rstrip()) if not (
        ln.startswith(f"!{METADATA} ")
        and lx.code(lx.line_tokens(ln))[:2] == [f"!{METADATA}", "="])]
    first = max((int(n) for n in _node_lines(ls)), default=-1) + 1
    refs = ", ".join(f"!{first + i}" for i in range(len(allrecs)))
    ls.append(f"!{METADATA} = !{{{refs}}}")
    for i, rec in enumerate(allrecs):
        ls.append(f"!{first + i} = !{{{', '.join('!' + _string(s) for s in rec)}}}")
    return "\n".join(ls) + "\n"


def _string(s: str) -> str:
    """*s* as an LLVM metadata string's quoted spelling."""
    q = lx.quote(s)
    return q if q.startswith('"') else f'"{q}"'


def inputs_of(recs) -> list[tuple[str, str, str]]:
    """(kind, name, digest) of each input record."""
    return [tuple(r[1:4]) for r in recs if r[0] == "input" and len(r) == 4]


def symbols_of(recs) -> list[str]:
    return [r[1] for r in recs if r[0] == "symbol" and len(r) == 2]


def describe(recs) -> str:
    """The files and symbols of *recs*, for a message."""
    parts = []
    files = [name for _k, name, _d in inputs_of(recs)]
    if files:
        parts.append("links " + ", ".join(repr(f) for f in files))
    syms = symbols_of(recs)
    if syms:
        parts.append("calls the external device function(s) " + ", ".join(map(repr, syms))
                     + " (cuda.declare_device)")
    return " and ".join(parts)


def check(target, text: str, name: str, where=None) -> frozenset:
    """The external symbols the module *text* (of kernel or module *name*) may leave to
    its linked code on *target*; an UnsupportedError where the target links none of it
    (``target.link_kinds``) or not inputs of that kind.  ``where(symbols)``, if given,
    says where the user's code calls them (`` at file.py:12``), for the message."""
    recs = read(text)
    if not recs:
        return frozenset()
    kinds = target.link_kinds
    if not kinds:
        syms = symbols_of(recs)
        at = where(syms) if where is not None and syms else ""
        raise UnsupportedError(
            f"{name!r} {describe(recs)}{at}: CUDA C/PTX can be linked only on CUDA devices, not "
            f"on target {target.name!r} (run it on a CUDA device, or write the function in "
            f"Python)")
    bad = [(k, n) for k, n, _d in inputs_of(recs) if k not in kinds]
    if bad:
        raise UnsupportedError(
            f"{name!r} links {', '.join(f'{n!r} ({k})' for k, n in bad)}, which target "
            f"{target.name!r} cannot link (it links: {', '.join(sorted(kinds))})")
    return frozenset(symbols_of(recs))
