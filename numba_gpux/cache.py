"""In-memory and on-disk caches of finished code, and their keys.

Two keys find finished code:

* the key of the neutral IR: (hash of the neutral module text, the target's
  fingerprint and the content of its overlay registries, the caller options).  It needs typing and lowering first, and
  serves every kernel (in memory) and ``cache=True`` kernels (on disk).
  Tuning hooks reach kernels only as arguments, so registering one changes no key.
* the pre-typing key (``cachekey.py``) of ``cache=True`` kernels: the disk
  cache's *index*.  On a hit neither typing nor lowering runs.  A kernel whose
  key cannot be made uses the first key alone.

With a device runtime that can export the programs it builds (``binary_identity``,
``program_binary``, ``load_binary``; see ``launch.py``), the driver's program
of a ``cache=True`` kernel is kept too, keyed by the device and the code.

On disk (``NUMBA_GPUX_CACHE_DIR``, see ``docs/caching.md``) every entry is one
file of data (never a pickle), sealed with an HMAC under this user's key
(``cachefile.py``): an entry that fails the check -- changed, damaged, written
under another key or moved to another key's file -- is dropped and compiled again,
with one ``CacheTrustWarning`` per process; nothing in it is decoded or handed to
a driver.  A file is written (owner-only) to a temporary name and renamed into
place: two processes writing the same entry both succeed; a reader never sees half
a file.  The folder is made owner-only; one that others can write is warned about
once.  A folder that cannot be made or written means no disk cache (one warning).
The size is bounded (``NUMBA_GPUX_CACHE_SIZE``): the least recently used
entries go first (a hit refreshes an entry's modification time).
"""

from __future__ import annotations

import hashlib
import os
import re
import secrets
import threading
import warnings
import weakref
from collections import OrderedDict

from . import config, irlex
from .abi import NO_FACTS, LaunchFacts
from .cachefile import (FORMAT_VERSION, CacheTrustWarning, CacheWarning, encode,
                        folder_problem, key_problem, make_private_dirs, read_sealed,
                        remove_quietly, replace_entry, seal, secret, warn_once)
from .cachekey import overlaid_fingerprint
from .compiler import Options
from .stages import Job, run_target_stages
from .machines import _AsmFromIR
from .interface import Artifact, Target

__all__ = ["cache_key", "compile_target", "clear_memory_cache", "stats", "DiskCache",
           "CacheWarning", "CacheTrustWarning", "index_lookup", "index_store", "load_program",
           "disk_usage", "clear_disk"]

#: finished code by cache key (the neutral IR, target and options): kernel objects
#: whose code is the same share one artifact.  A bounded LRU: each kernel object
#: keeps its own artifacts (``Dispatcher._code``), so what falls out is only what no
#: live kernel uses or what a later identical kernel recompiles (or reads from disk).
_mem: "OrderedDict[str, Artifact]" = OrderedDict()
MEM_LRU = 256
_lock = threading.Lock()
#: hits: in memory by the neutral IR; disk_hits: on disk by the neutral IR;
#: index_hits / index_misses: on disk by the pre-typing key (no typing ran for a hit);
#: uncacheable: cache=True kernels the pre-typing key cannot cover; program_hits:
#: driver programs loaded from disk; bad_files: entries dropped as unreadable;
#: untrusted: those of them that failed the authentication check
stats = {"hits": 0, "misses": 0, "disk_hits": 0, "index_hits": 0, "index_misses": 0,
         "uncacheable": 0, "program_hits": 0, "bad_files": 0, "untrusted": 0}

_KINDS = ("code", "index", "programs", "libraries", "tuning")


def cache_key(neutral_text: str, target: Target, options: Options) -> str:
    """The key of the code compiled from *neutral_text* for *target* with *options*:
    the target enters as its fingerprint with its overlay registries' digest
    (``cachekey.overlaid_fingerprint``), so registering an overlay changes the key."""
    h = hashlib.sha256()
    h.update(f"v{FORMAT_VERSION}|{overlaid_fingerprint(target)}|{options!r}|".encode())
    h.update(_canonical_uids(neutral_text).encode())
    return h.hexdigest()


#: the ABI tag ``v<n>`` Numba's mangled names carry: a counter of the functions the
#: process compiled before (``B2v3`` = a 2-character tag "v3")
_UID_TAG = re.compile(r"B(\d+)v(\d+)")


def _canonical_uids(text: str) -> str:
    """*text* with Numba's per-process function numbers renumbered in order of first
    appearance: the same program compiled after other functions (in another process)
    gives the same key.  String constants (``c"..."``) are the user's data and stay as
    they are: a kernel printing "B2v7" and one printing "B2v9" keep different keys.
    A line holding one is read through the IR lexer; other lines hold no user text."""
    seen: dict[str, str] = {}

    def sub(m):
        if int(m.group(1)) != len(m.group(2)) + 1:
            return m.group(0)
        new = seen.get(m.group(2))
        if new is None:
            new = seen[m.group(2)] = str(len(seen))
        return f"B{len(new) + 1}v{new}"

    out = []
    for line in irlex.lines(text):
        if 'c"' in line:
            line = irlex.join(t if t.startswith('c"') else _UID_TAG.sub(sub, t)
                              for t in irlex.line_tokens(line))
        else:
            line = _UID_TAG.sub(sub, line)
        out.append(line)
    return "\n".join(out)


def _versions() -> str:
    import llvmlite
    import numba

    from ._version import __version__

    return f"{__version__}-{numba.__version__}-{llvmlite.__version__}"


# --------------------------------------------------------------------------- disk

_warned = False
_unusable: set[str] = set()  # roots found unusable in this process
_checked: set[str] = set()  # roots whose folders were looked at in this process
_stores = 0
_OPEN_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def _warn_once(root: str, err: Exception) -> None:
    global _warned
    _unusable.add(root)
    if not _warned:
        _warned = True
        warnings.warn(f"numba-gpux: the cache folder {root} cannot be used ({err}); "
                      f"compiling without a disk cache (set NUMBA_GPUX_CACHE_DIR to a "
                      f"writable folder)", CacheWarning, stacklevel=4)


class DiskCache:
    """Finished code on disk, one file per key, under ``NUMBA_GPUX_CACHE_DIR``."""

    def __init__(self, root: str | None = None, quiet: bool = False):
        self.base = os.path.abspath(root or config.cache_dir())
        self.root = os.path.join(self.base, f"code-v{FORMAT_VERSION}")
        #: an unusable folder or key gives no warning (caches the user did not ask
        #: for: a target's parsed libraries)
        self.quiet = quiet

    @property
    def usable(self) -> bool:
        return self.base not in _unusable

    def path(self, kind: str, key: str) -> str:
        return os.path.join(self.root, kind, key[:2], key)

    def _secret(self) -> bytes | None:
        """The key that seals the entries, or None: no disk cache (one warning)."""
        if not self.usable:
            return None
        key = secret()
        if key is None:
            if not self.quiet:
                why, refused = key_problem()
                if refused:
                    warn_once("key", f"numba-gpux: the cache key file {why}; kernels compile "
                              f"without a disk cache (make it this user's and owner-only, "
                              f"`chmod 600`, or name another with NUMBA_GPUX_CACHE_KEY_FILE)")
                else:
                    warn_once("key", f"numba-gpux: the cache key cannot be read or made "
                              f"({why}); kernels compile without a disk cache (set "
                              f"NUMBA_GPUX_CACHE_KEY_FILE to a file in a writable folder)",
                              CacheWarning)
            return None
        if self.base not in _checked and not self.quiet:
            _checked.add(self.base)
            for folder in (self.base, self.root):
                problem = folder_problem(folder)
                if problem is not None and not config.cache_shared():
                    warn_once("folder", f"numba-gpux: the cache folder {folder} is not "
                              f"private: {problem}. Its entries are authenticated (a changed "
                              f"one is never loaded), but others can delete or replace them, "
                              f"costing compiles, and fill the disk. Make it owner-only "
                              f"(chmod 700 {folder}) or, where it is shared on purpose, set "
                              f"NUMBA_GPUX_CACHE_SHARED=1")
                    break
        return key

    def read(self, kind: str, key: str):
        """The object stored under *key*, or None; an entry that fails its check is
        removed, unread."""
        secret_key = self._secret()
        if secret_key is None:
            return None
        path = self.path(kind, key)
        obj = read_sealed(path, secret_key, kind, key, stats)
        if obj is None:
            return None
        try:
            os.utime(path)  # least recently used goes first
        except OSError:
            pass
        return obj

    def write(self, kind: str, key: str, obj) -> bool:
        """Store *obj* under *key* (atomically); False where the folder is unusable or
        *obj* is not data (``cachefile.encode``: such a thing is not kept on disk)."""
        global _stores
        secret_key = self._secret()
        if secret_key is None:
            return False
        path = self.path(kind, key)
        try:
            data = seal(secret_key, kind, key, encode(obj))
        except (TypeError, ValueError):
            return False
        tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            make_private_dirs(os.path.dirname(path))
            with open(os.open(tmp, _OPEN_NEW, 0o600), "wb") as f:
                f.write(data)
            replace_entry(tmp, path)
        except OSError as e:
            self._remove(tmp)
            if not self.quiet:
                _warn_once(self.base, e)
            return False
        _stores += 1
        if _stores == 1 or _stores % 32 == 0:
            self.evict(config.cache_max_bytes())
        return True

    @staticmethod
    def _remove(path: str) -> None:
        remove_quietly(path)

    def entries(self) -> list[tuple[float, int, str, str]]:
        """(modification time, size, kind, path) of every entry."""
        out = []
        for kind in _KINDS:
            top = os.path.join(self.root, kind)
            try:
                subs = os.listdir(top)
            except OSError:
                continue
            for sub in subs:
                try:
                    with os.scandir(os.path.join(top, sub)) as it:
                        for e in it:
                            if e.name.endswith(".tmp"):
                                continue
                            try:
                                st = e.stat()
                            except OSError:
                                continue
                            out.append((st.st_mtime, st.st_size, kind, e.path))
                except OSError:
                    continue
        return out

    def evict(self, limit: int) -> int:
        """Remove the least recently used entries until the total is under *limit*
        (down to nine tenths of it); the number removed."""
        if limit <= 0:
            return 0
        ents = self.entries()
        total = sum(e[1] for e in ents)
        if total <= limit:
            return 0
        removed = 0
        for _mtime, size, _kind, path in sorted(ents):
            if total <= limit * 0.9:
                break
            self._remove(path)
            total -= size
            removed += 1
        return removed

    def clear(self) -> int:
        """Remove every entry (of every format version); the number removed."""
        import shutil

        n = 0
        try:
            names = os.listdir(self.base)
        except OSError:
            return 0
        for name in names:
            if name.startswith("code-v") or name == "code":
                p = os.path.join(self.base, name)
                n += sum(len(files) for _, _, files in os.walk(p))
                shutil.rmtree(p, ignore_errors=True)
        return n


def disk_usage(root: str | None = None) -> dict:
    """Where the disk cache lives, its limit, and its entries and bytes per kind."""
    dc = DiskCache(root)
    per = {k: {"entries": 0, "bytes": 0} for k in _KINDS}
    for _m, size, kind, _p in dc.entries():
        per[kind]["entries"] += 1
        per[kind]["bytes"] += size
    return {"folder": dc.root, "limit_bytes": config.cache_max_bytes(), "kinds": per,
            "entries": sum(v["entries"] for v in per.values()),
            "bytes": sum(v["bytes"] for v in per.values())}


def clear_disk(root: str | None = None) -> int:
    """Remove every disk cache entry; the number of files removed."""
    return DiskCache(root).clear()


# --------------------------------------------------------------------------- artifacts

def _pack(art: Artifact) -> dict:
    """An artifact as plain data; a readable form not made yet is made again on demand."""
    lazy = art._text is None and isinstance(art._make_text, _AsmFromIR)
    return {"kind": art.kind, "binary": art.binary, "text": None if lazy else art.text,
            "lazy_text": lazy, "kernels": art.kernels, "llvm_ir": art.llvm_ir,
            "info": dict(art.info)}


def _unpack(d: dict, target: Target, opt: int) -> Artifact:
    text = d["text"]
    if d.get("lazy_text") and d.get("llvm_ir") is not None:
        text = _AsmFromIR(target, opt, d["llvm_ir"])
    return Artifact(d["kind"], d["binary"], text, d["kernels"], d["llvm_ir"], d["info"])


def compile_target(neutral_text: str, kernels: tuple, target: Target, options: Options,
                   name: str = "module", exports: tuple = (), disk: bool = False) -> Artifact:
    """Run the per-target stages on *neutral_text*, through the caches."""
    key = cache_key(neutral_text, target, options)
    with _lock:
        art = _mem.get(key)
        if art is not None:
            _mem.move_to_end(key)
    if art is not None:
        stats["hits"] += 1
        return art
    dc = DiskCache() if disk else None
    disk_key = hashlib.sha256(f"{key}|{_versions()}".encode()).hexdigest() if disk else None
    if dc is not None:
        d = dc.read("code", disk_key)
        if isinstance(d, dict):
            try:
                art = _unpack(d, target, options.opt)
            except Exception:  # noqa: BLE001 - a malformed entry: compile
                art = None
            if art is not None:
                stats["disk_hits"] += 1
                _remember(key, art)
                return art
    stats["misses"] += 1
    job = Job(target=target, options=options, kernels=tuple(kernels), text=neutral_text,
              name=name, exports=tuple(exports), keep_ir=config.debug_ir())
    art = run_target_stages(job).artifact
    _remember(key, art)
    if dc is not None:
        dc.write("code", disk_key, _pack(art))
    return art


def _remember(key: str, art: Artifact) -> None:
    with _lock:
        _mem[key] = art
        _mem.move_to_end(key)
        while len(_mem) > MEM_LRU:
            _mem.popitem(last=False)


def clear_memory_cache() -> None:
    with _lock:
        _mem.clear()
        _index_memo.clear()


# --------------------------------------------------------------------------- the index

#: GpuxFunction -> {(argtypes, target, overlay epoch): (pre-typing key or None, Artifact)}
_index_memo: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _index_key(fn, argtypes: tuple, target: Target, facts: LaunchFacts = NO_FACTS):
    """(memo, memo key, pre-typing key or None) of *fn* for *argtypes* on *target*, for
    code that knows the launch's *facts* (``code_for``)."""
    from . import overlays
    from .cachekey import kernel_key
    from .context import load_language_modules

    load_language_modules()  # they define overlays as they load: the epoch after them
    memo = _index_memo.get(fn)
    if memo is None:
        memo = _index_memo[fn] = {}
    mkey = (tuple(argtypes), target, overlays.epoch, facts)
    got = memo.get(mkey)
    if got is None:
        # debug kernels carry process-wide exception ids: never from the index
        key = None if fn.options.debug else kernel_key(fn, argtypes, target)
        if key is not None and facts != NO_FACTS:
            key = hashlib.sha256(f"{key}|{facts!r}".encode()).hexdigest()
        got = memo[mkey] = [key, None, False]  # key, artifact, looked up on disk
    return got


def index_lookup(fn, argtypes: tuple, target: Target,
                 facts: LaunchFacts = NO_FACTS, count: bool = True) -> Artifact | None:
    """Finished code of the ``cache=True`` kernel *fn* found by its pre-typing key, or
    None (then typing runs, and :func:`index_store` records the result).  *count*:
    whether the lookup counts as a hit or a miss (``stats``, the kernel's own counters);
    a launch that tries several variants counts once (:func:`count_lookup`)."""
    try:
        entry = _index_key(fn, argtypes, target, facts)
    except TypeError:  # an unhashable target option: no index
        return None
    if entry[1] is not None or entry[2]:  # found, or already missed
        return entry[1]
    entry[2] = True
    key = entry[0]
    if key is None:
        stats["uncacheable"] += 1
        _count(fn, argtypes, False)
        return None
    src = source_index(fn)
    if src is not None:
        secret_key = DiskCache()._secret()
        d = None if secret_key is None else src.load(key, secret_key)
    else:
        d = DiskCache().read("index", key)
    if isinstance(d, dict):
        try:
            art = _unpack(d, target, fn.options.opt)
        except Exception:  # noqa: BLE001 - malformed: compile
            art = None
        if art is not None:
            entry[1] = art
            if count:
                count_lookup(fn, argtypes, True)
            return art
    if count:
        count_lookup(fn, argtypes, False)
    return None


def index_looked_up(fn, argtypes: tuple, target: Target,
                    facts: LaunchFacts = NO_FACTS) -> bool | None:
    """Whether :func:`index_lookup` has looked up this code in this process already
    (found or missed); None where the kernel has no pre-typing key (not indexed)."""
    try:
        entry = _index_key(fn, argtypes, target, facts)
    except TypeError:
        return None
    return None if entry[0] is None else entry[1] is not None or entry[2]


def count_lookup(fn, argtypes: tuple, hit: bool) -> None:
    """Count an index lookup of *fn* for *argtypes* as a hit or a miss."""
    stats["index_hits" if hit else "index_misses"] += 1
    _count(fn, argtypes, hit)


def _count(fn, argtypes: tuple, hit: bool) -> None:
    """Count a lookup in the kernel's own statistics where it keeps numba's
    ``cache_hits`` / ``cache_misses`` counters (per argument types)."""
    counter = getattr(getattr(fn, "stats", None), "cache_hits" if hit else "cache_misses", None)
    if counter is not None:
        counter[tuple(argtypes)] += 1


#: Python function -> its SourceCache, or None where none can keep it
_sources: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def source_index(fn):
    """The :class:`cachesource.SourceCache` that keeps the index of a kernel class whose
    ``cache_beside_source`` is set (numba's layout, next to the source), or None: the
    index is in the user-wide cache folder."""
    if not getattr(fn, "cache_beside_source", False):
        return None
    from .cachesource import source_cache

    py_func = fn.py_func
    try:
        return _sources[py_func]
    except KeyError:
        src = _sources[py_func] = source_cache(py_func, stats)
        return src
    except TypeError:  # not weakly referable: found again each time
        return source_cache(py_func, stats)


def note_launch_info(art: Artifact, kernel_text: str) -> None:
    """Record in *art* what launching needs to know of the kernel whose neutral IR is
    *kernel_text*, so that code found on disk launches without typing."""
    from .language.memory import static_shared_bytes
    from .lanes import lanes_prefer_second_dim
    from .language.cooperative import uses_grid_sync
    from .language.heap import uses_heap
    from .language.printing import uses_print

    art.info["uses_print"] = uses_print(kernel_text)
    art.info["grid_sync"] = uses_grid_sync(kernel_text)
    art.info["heap"] = uses_heap(kernel_text)
    art.info["static_shared_bytes"] = static_shared_bytes(kernel_text)
    art.info["lanes_prefer_second_dim"] = lanes_prefer_second_dim(kernel_text)
    art.info["disk_cache"] = True


def index_store(fn, argtypes: tuple, target: Target, art: Artifact, kernel_text: str,
                facts: LaunchFacts = NO_FACTS) -> None:
    """Record *art*, just compiled from *kernel_text* (the neutral IR), under the
    pre-typing key of *fn* for *argtypes* and *facts* (see :func:`_index_key`)."""
    note_launch_info(art, kernel_text)
    try:
        entry = _index_key(fn, argtypes, target, facts)
    except TypeError:
        return
    entry[1] = art
    if entry[0] is not None:
        src = source_index(fn)
        if src is not None:
            secret_key = DiskCache()._secret()
            if secret_key is not None:
                src.save(entry[0], _pack(art), secret_key)
        else:
            DiskCache().write("index", entry[0], _pack(art))


# --------------------------------------------------------------------------- programs

def load_program(device, art: Artifact):
    """The device's program for *art*: for ``cache=True`` code on a runtime that can
    export its programs, from the disk cache when the same device built it before."""
    rt = device.runtime
    if not art.info.get("disk_cache"):
        return rt.load(art)
    try:
        ident = rt.binary_identity()
    except Exception:  # noqa: BLE001 - the runtime cannot say: no program cache
        ident = None
    if ident is None:  # (Runtime.binary_identity) its programs are not kept
        return rt.load(art)
    h = hashlib.sha256(f"{ident}|{art.kind}|{art.kernels}|".encode())
    h.update(art.binary if art.binary is not None else (art.text or "").encode())
    key = h.hexdigest()
    dc = DiskCache()
    data = dc.read("programs", key)
    if isinstance(data, bytes):
        try:
            prog = rt.load_binary(data)
            stats["program_hits"] += 1
            return prog
        except Exception:  # noqa: BLE001 - the driver refused it: build from the code
            dc._remove(dc.path("programs", key))
    prog = rt.load(art)
    try:
        data = rt.program_binary(prog)
    except Exception:  # noqa: BLE001
        data = None
    if data:
        dc.write("programs", key, bytes(data))
    return prog
