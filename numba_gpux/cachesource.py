"""Entries of ``cache=True`` kernels kept next to their source, in numba's layout.

numba.cuda keeps a cached function's code where Numba keeps it: in the
``__pycache__`` folder beside the source file (or under ``NUMBA_CACHE_DIR``, or
the user-wide fallback when that folder cannot be written), one *index* file per
function, ``<module>.<qualname>-<line>.py<ver>.nbi``, and one *data* file per
compiled signature, ``<same>.<n>.nbc``.  Code that counts, lists or removes those
files works with the ``numba_gpux.cuda`` facade's kernels, whose entries live there
(:class:`SourceCache`); where the files go is decided by Numba's own locators
(``numba.core.caching``).

The files hold what the project's disk cache holds, in its format: data, never a
pickle, sealed with an HMAC under this user's key (``cachefile.py``) and checked
before anything in them is decoded.  An entry's MAC covers the function's file
name (the index) or the entry's key (a data file), so a file copied over another
fails.  A file that fails is removed and what it held is compiled again (one
``CacheTrustWarning`` per process); a missing or unwritable folder costs compiles,
never a wrong result.

The index maps the pre-typing key (``cachekey.kernel_key``: the code, the values
it reads, the argument types, options, the target with its capability, the
versions) to the data file's number; it records the source file's stamp (its
modification time and size, as Numba's does), and an index whose stamp is not
the source's current one starts again from number 1.  Numba's CPU index of the
same function is a pickle under the same name, so the facade's files carry the
tag ``gpux`` before the suffix (``...py312.gpux.nbi``, ``...py312.gpux.1.nbc``):
``@njit(cache=True)`` and ``cuda.jit(cache=True)`` of one Python function keep
their own files side by side, and neither reads the other's.
"""

from __future__ import annotations

import os
import secrets
import warnings

from numba.core.caching import CacheImpl

from .cachefile import (CacheWarning, decode, encode, read_sealed, remove_quietly,
                        replace_entry, seal, warn_once)

__all__ = ["SourceCache", "source_cache", "TAG"]

#: the facade's files are ``<numba's base name>.gpux.nbi`` / ``.gpux.<n>.nbc``
TAG = "gpux"
_INDEX_KIND = "source-index"
_DATA_KIND = "source-data"
_OPEN_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


class _Locate(CacheImpl):
    """Numba's choice of folder and file name for a function (its locators, in its
    order, ``NUMBA_CACHE_LOCATOR_CLASSES`` included).  What Numba would store with
    it is the project's data format: :meth:`reduce` encodes, :meth:`rebuild`
    decodes."""

    def reduce(self, data):
        return encode(data)

    def rebuild(self, target_context, reduced_data):
        return decode(reduced_data)

    def check_cachable(self, data):
        try:
            encode(data)
        except (TypeError, ValueError):
            return False
        return True


class SourceCache:
    """The index and data files of one Python function's ``cache=True`` code."""

    def __init__(self, py_func, stats: dict | None = None):
        #: where dropped files are counted (``bad_files``, ``untrusted``: cache.stats)
        self.stats = stats if stats is not None else {"bad_files": 0, "untrusted": 0}
        impl = _Locate(py_func)  # RuntimeError: no locator can keep this function
        self._locator = impl.locator
        self.cache_path = impl.locator.get_cache_path()
        self.base = f"{impl.filename_base}.{TAG}"
        self.index_path = os.path.join(self.cache_path, self.base + ".nbi")

    def data_path(self, n: int) -> str:
        return os.path.join(self.cache_path, f"{self.base}.{n}.nbc")

    # ------------------------------------------------------------------ reading
    def _stamp(self):
        try:
            return self._locator.get_source_stamp()
        except OSError:
            return None

    def _read(self, path: str, kind: str, name: str, key: bytes):
        """The decoded entry in *path*, or None; a file that fails its check is removed."""
        return read_sealed(path, key, kind, name, self.stats)

    def _index(self, key: bytes) -> dict:
        """{entry key: data file number} for the source as it is now."""
        d = self._read(self.index_path, _INDEX_KIND, self.base, key)
        if not isinstance(d, dict) or d.get("stamp") != self._stamp():
            return {}
        entries = d.get("entries")
        if not isinstance(entries, dict):
            return {}
        return {k: n for k, n in entries.items()
                if isinstance(k, str) and type(n) is int and n > 0}

    def load(self, entry_key: str, key: bytes):
        """The object stored under *entry_key*, or None; *key* seals the files (this
        user's cache key)."""
        n = self._index(key).get(entry_key)
        if n is None:
            return None
        return self._read(self.data_path(n), _DATA_KIND, entry_key, key)

    # ------------------------------------------------------------------ writing
    def save(self, entry_key: str, obj, key: bytes) -> bool:
        """Store *obj* under *entry_key*, sealed with *key*: a data file, and its number
        in the index.  False where *obj* is not data or the folder cannot be written."""
        try:
            body = encode(obj)
        except (TypeError, ValueError):
            return False
        index = self._index(key)
        n = index.get(entry_key)
        if n is None:
            n = max(index.values(), default=0) + 1
            index[entry_key] = n
        stamp = self._stamp()
        try:
            self._locator.ensure_cache_path()
            _write(self.data_path(n), seal(key, _DATA_KIND, entry_key, body))
            _write(self.index_path, seal(key, _INDEX_KIND, self.base,
                                         encode({"stamp": stamp, "entries": index})))
        except OSError as e:
            warn_once(f"source:{self.cache_path}",
                      f"numba-gpux: the cache folder {self.cache_path} cannot be written "
                      f"({e}); kernels compiled with cache=True there are compiled again "
                      f"in each process", CacheWarning)
            return False
        return True


def _write(path: str, data: bytes) -> None:
    """*data* as the file *path*: written owner-only under a temporary name, renamed
    into place (a reader never sees half a file)."""
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        with open(os.open(tmp, _OPEN_NEW, 0o600), "wb") as f:
            f.write(data)
        replace_entry(tmp, path)
    except OSError:
        remove_quietly(tmp)
        raise


def source_cache(py_func, stats: dict | None = None) -> SourceCache | None:
    """The :class:`SourceCache` of *py_func*, or None where no folder can keep it
    (a function typed at the prompt, a source folder and fallbacks all unwritable):
    warned once, and the kernel compiles in each process."""
    try:
        return SourceCache(py_func, stats)
    except (RuntimeError, OSError, TypeError) as e:
        name = getattr(py_func, "__qualname__", repr(py_func))
        warnings.warn(f"numba-gpux: {name} cannot be cached on disk ({e}); it is compiled "
                      f"in each process", CacheWarning, stacklevel=3)
        return None

