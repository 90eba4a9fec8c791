"""libdevice: NVIDIA's math library as LLVM bitcode, found, parsed once, linked by need.

libdevice is one bitcode file (``libdevice.10.bc``) shipped with the CUDA
toolkit (``$CUDA_HOME/nvvm/libdevice``) and with NVIDIA's pip wheels
(``nvidia/cuda_nvcc/nvvm/libdevice``, ``nvidia/cu13/nvvm/libdevice``, ...).
Parsing it takes a noticeable part of a second (benchmarks/results/costs.md) and optimizing all of its ~350 functions much
longer, so the first kernel that calls a ``__nv_*`` function parses it once
and splits its text into top-level entities; every later kernel links a small
module holding only the functions it calls and their dependencies.

``__nvvm_reflect`` calls inside libdevice are resolved by LLVM's NVVMReflect
pass (part of the NVPTX pass pipeline) from the module flag
``nvvm-reflect-ftz`` (1 for fastmath code, which flushes float32 denormals to
zero; else 0) and the target's ``sm_XX``.
"""

from __future__ import annotations

import glob
import hashlib
import os
import sys
import threading

from numba_gpux import config, irlex
from numba_gpux.errors import ToolchainError

__all__ = ["find_libdevice", "LibDevice", "get", "link_needed", "LIBDEVICE_HINT"]

LIBDEVICE_HINT = (
    "libdevice (libdevice.10.bc) was not found. It ships with the CUDA toolkit "
    "($CUDA_HOME/nvvm/libdevice/libdevice.10.bc) and with NVIDIA's pip wheels: "
    "install one of them, e.g. `pip install nvidia-cuda-nvcc` (CUDA 13: also "
    "`pip install nvidia-nvvm`), or set CUDA_HOME to the toolkit's directory.")

#: libdevice's helpers marked noinline (slow paths such as the Payne-Hanek
#: trigonometric reduction); they are inlined too, so a kernel is one .entry
def _without_noinline(line: str) -> str:
    toks = irlex.line_tokens(line)
    out = []
    for t in toks:
        if t == " " and out and out[-1] == "noinline":
            out.pop()
            continue
        out.append(t)
    if out and out[-1] == "noinline":
        out.pop()
    return irlex.join(out)


def _candidate_dirs() -> list[str]:
    dirs = []
    for home in config.cuda_home_dirs():
        dirs.append(os.path.join(home, "nvvm", "libdevice"))
    # NVIDIA's wheels, in this environment's site-packages
    roots = {p for p in sys.path if p and os.path.isdir(p)}
    for root in sorted(roots):
        nv = os.path.join(root, "nvidia")
        if os.path.isdir(nv):
            dirs.extend(sorted(glob.glob(os.path.join(nv, "*", "nvvm", "libdevice"))))
            dirs.extend(sorted(glob.glob(os.path.join(nv, "*", "*", "nvvm", "libdevice"))))
    dirs.append("/usr/local/cuda/nvvm/libdevice")
    dirs.append("/usr/lib/nvidia-cuda-toolkit/libdevice")
    dirs.extend(sorted(glob.glob("/usr/local/cuda-*/nvvm/libdevice"), reverse=True))
    return dirs


def find_libdevice() -> str | None:
    """The path of libdevice.10.bc, or None."""
    for d in _candidate_dirs():
        p = os.path.join(d, "libdevice.10.bc")
        if os.path.isfile(p):
            return p
    return None


def _name_of(line: str) -> str:
    """The name a ``define``, ``declare`` or module variable's line gives."""
    toks = irlex.line_tokens(line)
    return irlex.name(toks[0] if toks[0][0] == "@" else toks[irlex.define_name(toks)])


def _references(lines) -> set:
    """The global names a function body's *lines* use (read through the IR lexer;
    only lines with an ``@`` are tokenized)."""
    out = set()
    for ln in lines:
        if "@" in ln:
            out.update(irlex.name(t) for t in irlex.line_tokens(ln) if t[0] == "@" and len(t) > 1)
    return out


class LibDevice:
    """libdevice split into top-level entities, with each function's dependencies.

    The functions' bodies (about 2.7 MB of text) are kept apart from the rest: a
    split read back from the disk cache reads only the bodies a kernel needs
    (``_read_body``), not all of them."""

    #: the entities other than the bodies: what a split read from the disk cache holds
    INDEX = ("path", "types", "globals", "declares", "attributes", "metadata", "next_md",
             "_deps")

    def __init__(self, path: str):
        self._parse(path)
        self._read_body = None
        self._lock = threading.RLock()

    def _parse(self, path: str) -> None:
        from llvmlite import binding as ll

        with open(path, "rb") as f:
            mod = ll.parse_bitcode(f.read())
        self.path = path
        text = str(mod)
        self.types: list[str] = []
        self.globals: dict[str, str] = {}
        self.declares: dict[str, str] = {}
        self._bodies: dict[str, str] = {}
        self.attributes: list[str] = []
        self.metadata: list[str] = []
        self._deps: dict[str, frozenset] = {}
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("define "):
                j = i
                while lines[j] != "}":
                    j += 1
                name = _name_of(line)
                self._bodies[name] = "\n".join(lines[i:j + 1])
                self._deps[name] = frozenset(_references(lines[i + 1:j])) - {name}
                i = j + 1
                continue
            if line.startswith("declare "):
                self.declares[_name_of(line)] = line
            elif line.startswith("@"):
                self.globals[_name_of(line)] = line
            elif line.startswith("%") and " = type " in line:
                self.types.append(line)
            elif line.startswith("attributes #"):
                self.attributes.append(_without_noinline(line))
            elif line.startswith("!") and irlex.line_tokens(line)[0][1:].isdigit():
                self.metadata.append(line)
            i += 1
        self.next_md = 1 + max((int(m[1:].split(" ")[0]) for m in self.metadata), default=-1)

    @classmethod
    def from_index(cls, index: dict, read_body) -> "LibDevice":
        """A split from its INDEX entities; ``read_body(name)`` gives a function's
        body, or None where it cannot (the file is then parsed again)."""
        lib = cls.__new__(cls)
        lib.__dict__.update({k: index[k] for k in cls.INDEX})
        lib._bodies = {}
        lib._read_body = read_body
        lib._lock = threading.RLock()
        return lib

    def index(self) -> dict:
        return {k: getattr(self, k) for k in self.INDEX}

    def provides(self, name: str) -> bool:
        return name in self._deps

    @property
    def defines(self) -> dict[str, str]:
        """Every function's body (all of them read)."""
        return self._bodies_of(self._deps)

    def _bodies_of(self, names) -> dict[str, str]:
        with self._lock:
            missing = [n for n in names if n in self._deps and n not in self._bodies]
            for n in missing:
                body = self._read_body(n) if self._read_body is not None else None
                if body is None:  # not readable: parse the file again, all of it
                    self._parse(self.path)
                    self._read_body = None
                    break
                self._bodies[n] = body
            return {n: self._bodies[n] for n in names if n in self._bodies}

    def closure(self, names) -> set[str]:
        """Every libdevice symbol (function, declaration, global) *names* reach."""
        todo = [n for n in names if n in self._deps]
        seen: set[str] = set()
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            for d in self._deps.get(n, ()):
                if d not in seen:
                    if d in self._deps:
                        todo.append(d)
                    elif d in self.globals or d in self.declares:
                        seen.add(d)
        return seen

    def module_text(self, names, ftz: str = "") -> str:
        """IR text defining the libdevice functions *names* and what they use; *ftz*,
        for code that flushes float32 denormals to zero, is the function attribute that
        says so (spelled ``"name"="value"``): the functions take their FTZ paths and
        every one gets the attribute."""
        with self._lock:  # a new parse (see _bodies_of) replaces every entity at once
            return self._module_text(names, ftz)

    def _module_text(self, names, ftz: str) -> str:
        need = self.closure(names)
        bodies = self._bodies_of(sorted(need))
        parts = list(self.types)
        parts.extend(self.globals[n] for n in sorted(need) if n in self.globals)
        parts.extend(self.declares[n] for n in sorted(need) if n in self.declares)
        for n in sorted(need):
            body = bodies.get(n)
            if body is not None:
                parts.append(body.replace("define internal ", "define ", 1))
        if ftz:  # every group: a function whose mode differs from its caller's is not inlined
            parts.extend(a.replace("{", f"{{ {ftz} ", 1) for a in self.attributes)
        else:
            parts.extend(self.attributes)
        parts.extend(self.metadata)
        # NVVMReflect folds __nvvm_reflect("__CUDA_FTZ") and ("__CUDA_PREC_SQRT") to these
        # flags: flushing code (fastmath) takes the approximate square root, as NVVM's
        # -prec-sqrt=0 does for numba.cuda's fastmath; other code the IEEE-rounded one
        # (NVVM's default: hypotf, normf and others call __nv_sqrtf)
        a, b = self.next_md, self.next_md + 1
        parts.append(f"!llvm.module.flags = !{{!{a}, !{b}}}")
        parts.append(f'!{a} = !{{i32 4, !"nvvm-reflect-ftz", i32 {int(bool(ftz))}}}')
        parts.append(f'!{b} = !{{i32 4, !"nvvm-reflect-prec-sqrt", i32 {int(not ftz)}}}')
        return "\n".join(parts) + "\n"


_lock = threading.Lock()
_cached: LibDevice | None = None


def get() -> LibDevice:
    """The process's parsed libdevice (parsed on first call)."""
    global _cached
    if _cached is None:
        with _lock:
            if _cached is None:
                path = find_libdevice()
                if path is None:
                    raise ToolchainError(LIBDEVICE_HINT)
                _cached = _load_split(path)
    return _cached


def split_key(path: str) -> str | None:
    """The disk-cache key of the split index of the libdevice file *path* (None: the
    file cannot be read); a body's key is derived from it."""
    import llvmlite

    try:
        st = os.stat(path)
    except OSError:
        return None
    return hashlib.sha256(f"libdevice-split-2|{os.path.abspath(path)}|{st.st_size}|"
                          f"{st.st_mtime_ns}|{llvmlite.__version__}".encode()).hexdigest()


def _load_split(path: str) -> LibDevice:
    """libdevice split, from the disk cache where this file was split before (parsing
    and splitting it, once per process otherwise, is a CUDA target's
    largest first-use cost), else parsed and stored there.

    The cache holds the split's index (everything but the bodies, ~60 KB) as one
    entry and each function's body as an entry of its own, written before the
    index: a process reads the index and the few bodies its kernels call (reading
    all 2.7 MB would cost several milliseconds of the target's first use; figures in
    benchmarks/results/costs.md).  A body that cannot be
    read (evicted, damaged) costs a new parse."""
    from numba_gpux.cache import DiskCache

    key = split_key(path)
    if key is None:
        return LibDevice(path)
    dc = DiskCache(quiet=True)

    def body_key(name: str) -> str:
        return hashlib.sha256(f"{key}|{name}".encode()).hexdigest()

    def read_body(name: str):
        body = dc.read("libraries", body_key(name))
        return body if isinstance(body, str) else None

    index = dc.read("libraries", key)
    if isinstance(index, dict) and index.get("path") == path and \
            all(k in index for k in LibDevice.INDEX):
        return LibDevice.from_index(index, read_body)
    lib = LibDevice(path)
    if all(dc.write("libraries", body_key(n), body) for n, body in lib.defines.items()):
        dc.write("libraries", key, lib.index())
    return lib


_prec_sqrt_set = False


def prefer_ieee_sqrt() -> None:
    """Make NVVMReflect answer ``__nvvm_reflect("__CUDA_PREC_SQRT")`` with 1, as NVVM's
    default ``-prec-sqrt=1`` does for numba.cuda: libdevice's hypotf, normf and the
    others that call ``__nv_sqrtf`` then round as numba.cuda's do (``sqrt.rn``, not
    ``sqrt.approx``, one ulp apart).  LLVM 22's NVVMReflect ignores the
    ``nvvm-reflect-prec-sqrt`` module flag that ``module_text`` also writes (it
    answers 0), so the answer goes through its ``-nvvm-reflect-add`` option, which is
    process-wide: fastmath code gets the IEEE square root inside libdevice too (its own
    square roots and divisions stay approximate).  Once per process."""
    global _prec_sqrt_set
    if not _prec_sqrt_set:
        from llvmlite import binding as ll

        ll.set_option("numba-gpux", "-nvvm-reflect-add=__CUDA_PREC_SQRT=1")
        _prec_sqrt_set = True


def link_needed(module, triple: str, data_layout: str, wanted, ftz: str = "") -> set[str]:
    """Link into *module* the libdevice functions *wanted* (the ``__nv_*`` names it
    declares, which the caller reads from the module's text); they become internal.
    *ftz*: the module flushes float32 denormals (LibDevice.module_text).
    Returns the names linked."""
    from llvmlite import binding as ll

    from numba_gpux import irtext

    if not wanted:
        return set()
    lib = get()
    unknown = sorted(n for n in wanted if not lib.provides(n))
    if unknown:
        from numba_gpux.errors import InternalCompilerError

        raise InternalCompilerError("finish", f"libdevice ({lib.path}) does not define "
                                    f"{', '.join(unknown)}")
    prefer_ieee_sqrt()
    text = lib.module_text(wanted, ftz)
    sub = ll.parse_assembly(text)
    sub.triple = triple
    sub.data_layout = data_layout
    defined = irtext.defined_functions(text)
    module.link_in(sub)
    try:  # by name (walking every function costs two foreign calls each)
        for name in defined:
            module.get_function(name).linkage = "internal"
    except NameError:  # a name the link changed: walk them all
        for f in module.functions:
            if f.name in defined:
                f.linkage = "internal"
    return defined
