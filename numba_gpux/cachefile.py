"""The disk cache's files: what an entry holds, how it is sealed, and the key that seals it.

An entry is *data*, never a pickle: ``None``, booleans, integers, floats,
strings, bytes, and lists, tuples, frozensets and dicts of those (:func:`encode`,
:func:`decode`).  Nothing the cache keeps needs more: an artifact is its kind,
its binary and texts, its kernels' names and a few numbers; a driver program is
bytes; a target's parsed library is strings.  In particular no Numba type and no
record dtype is ever written: argument types enter only the entry's *key* (a
hash, ``cachekey.py``).  A value of any other type makes :func:`encode` refuse, so
that it is not cached on disk at all (compiled in each process), never pickled.

Each file is ``MAGIC``, an HMAC-SHA256 of the entry, then the encoded body.  The
MAC covers the entry's kind and key as well as its body (a file moved under
another key fails), and it is checked, in constant time, before the body is
decoded or handed to a driver: an entry that fails costs a recompile and one
:class:`CacheTrustWarning` per process, never a load.

The MAC's key is this user's secret (:func:`secret`): 32 random bytes made on
first use, kept outside the cache folder in ``NUMBA_GPUX_CACHE_KEY_FILE``
(default ``$XDG_CONFIG_HOME/numba-gpux/cache.key``, see ``config.py``), written
atomically, owner-only.  A key file that others could have written, or that
belongs to another user, or that every user can read, is refused: the disk cache
is off in that process (a team's group may read it: sharing on purpose).
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import stat
import threading
import warnings

from . import config

__all__ = ["MAGIC", "CacheWarning", "CacheTrustWarning", "encode", "decode", "seal",
           "unseal", "secret", "key_problem", "key_status", "make_private_dirs", "folder_problem",
           "warn_once", "read_sealed", "replace_entry", "remove_quietly", "MAX_ENTRY_BYTES"]

FORMAT_VERSION = 3
MAGIC = b"numba-gpux cache %d\n" % FORMAT_VERSION
_MAC_BYTES = 32
_KEY_BYTES = 32


class CacheWarning(UserWarning):
    """The disk cache cannot be used (its folder cannot be made or written)."""


class CacheTrustWarning(CacheWarning):
    """The disk cache met something it does not trust: an entry that fails its
    authentication check (ignored and compiled again), a cache folder others can
    write, or a key file it refuses."""


_warned: set[str] = set()
_warn_lock = threading.Lock()


def warn_once(topic: str, message: str, category=CacheTrustWarning) -> None:
    """Warn *message* the first time *topic* comes up in this process."""
    with _warn_lock:
        if topic in _warned:
            return
        _warned.add(topic)
    warnings.warn(message, category, stacklevel=3)


# --------------------------------------------------------------------------- data

def encode(obj) -> bytes:
    """*obj* (data only: see the module's docstring) as bytes; TypeError for anything
    else.  A JSON text for the structure, followed by the bytes values and long
    strings (UTF-8) it refers to."""
    segments: list[bytes] = []
    size = 0

    def conv(v):
        nonlocal size
        t = type(v)  # exactly: a subclass may carry behaviour the reader would not rebuild
        if t is str and len(v) > 64:  # a long text (IR, assembly): raw, not JSON-escaped
            raw = v.encode()
            segments.append(raw)
            size += len(raw)
            return {"$u": [size - len(raw), len(raw)]}
        if v is None or t is str or t is bool or t is int or t is float:
            return v
        if t is bytes or t is bytearray:
            segments.append(bytes(v))
            size += len(v)
            return {"$b": [size - len(v), len(v)]}
        if t is list:
            return [conv(x) for x in v]
        if t is tuple:
            return {"$t": [conv(x) for x in v]}
        if t is frozenset:
            return {"$f": [conv(x) for x in v]}
        if t is dict:
            if all(type(k) is str and not k.startswith("$") for k in v):
                return {k: conv(x) for k, x in v.items()}
            return {"$d": [[conv(k), conv(x)] for k, x in v.items()]}
        raise TypeError(f"the disk cache keeps data only, not {t.__module__}.{t.__qualname__}")

    head = json.dumps(conv(obj), separators=(",", ":"), ensure_ascii=False).encode()
    return b"".join([len(head).to_bytes(8, "little"), head, *segments])


def decode(body: bytes):
    """The object :func:`encode` made *body* from (ValueError if it is not such)."""
    n = int.from_bytes(body[:8], "little")
    base = 8 + n
    if len(body) < base:
        raise ValueError("truncated entry")

    def hook(d: dict):
        if len(d) == 1:
            (tag, v), = d.items()
            if tag == "$t":
                return tuple(v)
            if tag == "$b" or tag == "$u":
                off, ln = v
                if off < 0 or ln < 0 or base + off + ln > len(body):
                    raise ValueError("a value outside the entry")
                raw = body[base + off:base + off + ln]
                return raw if tag == "$b" else raw.decode()
            if tag == "$f":
                return frozenset(v)
            if tag == "$d":
                return {k: x for k, x in v}
        return d

    return json.loads(body[8:base], object_hook=hook)


# --------------------------------------------------------------------------- sealing

#: key -> an HMAC keyed with it and fed nothing yet (copied: the key is set up once)
_keyed: dict[bytes, "hmac.HMAC"] = {}


def _mac(key: bytes, kind: str, name: str, body) -> bytes:
    base = _keyed.get(key)
    if base is None:
        base = _keyed[key] = hmac.new(key, digestmod="sha256")
    h = base.copy()
    h.update(b"%s%s\0%s\0" % (MAGIC, kind.encode(), name.encode()))
    h.update(body)
    return h.digest()


def seal(key: bytes, kind: str, name: str, body: bytes) -> bytes:
    """The file content of the entry *name* of *kind* holding *body*."""
    return MAGIC + _mac(key, kind, name, body) + body


def unseal(key: bytes, kind: str, name: str, data: bytes) -> bytes | None:
    """The body of the file content *data* if its MAC is right for *kind* and *name*
    under *key*, else None (nothing of it was interpreted)."""
    head = len(MAGIC)
    if len(data) < head + _MAC_BYTES or data[:head] != MAGIC:
        return None
    body = memoryview(data)[head + _MAC_BYTES:]
    if not hmac.compare_digest(_mac(key, kind, name, body), data[head:head + _MAC_BYTES]):
        return None
    return data[head + _MAC_BYTES:]


def remove_quietly(path: str) -> None:
    """Remove the file *path* if it is there (a file another process removed is fine), or
    an empty folder in its place."""
    try:
        os.remove(path)
    except (IsADirectoryError, PermissionError):
        try:
            os.rmdir(path)
        except OSError:
            pass
    except OSError:
        pass


def replace_entry(tmp: str, path: str) -> None:
    """Rename the written file *tmp* to the entry *path*; an empty folder standing in
    the entry's place (nothing the cache makes) is removed first."""
    try:
        os.replace(tmp, path)
    except (IsADirectoryError, PermissionError):
        if not os.path.isdir(path) or os.path.islink(path):
            raise
        os.rmdir(path)
        os.replace(tmp, path)


#: the most bytes an entry may hold (a kernel's program is far smaller): a larger file
#: is not read, but dropped as one that fails its check
MAX_ENTRY_BYTES = 512 << 20


def _read_entry(path: str) -> bytes | None:
    """The bytes of the entry file *path*; None where there is none (or it is a link:
    entries are written as files, never followed); b"" for something that is no
    regular file (a FIFO would block the reader, a device never end) or too large to be
    an entry, which fails its check without being read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                     | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
            return b""
        return f.read(MAX_ENTRY_BYTES + 1)


def read_sealed(path: str, key: bytes, kind: str, name: str, stats: dict):
    """The object stored in the file *path* sealed for *kind* and *name* under *key*,
    or None: no file, or one that fails its check (counted in *stats*, removed unread,
    warned about once) or is authentic but not readable here (counted and removed)."""
    try:
        data = _read_entry(path)
    except OSError:
        return None
    if data is None:
        return None
    body = unseal(key, kind, name, data) if len(data) <= MAX_ENTRY_BYTES else None
    if body is None:
        stats["bad_files"] += 1
        stats["untrusted"] += 1
        remove_quietly(path)
        warn_once("entry", f"numba-gpux: the disk cache entry {path} failed its "
                  f"authentication check (changed, damaged, or written under another "
                  f"key); it was not loaded, and what it held is made again (a compile). "
                  f"Later such entries are dropped silently in this process "
                  f"(numba_gpux.cache.stats['untrusted'] counts them)")
        return None
    try:
        return decode(body)
    except Exception:  # noqa: BLE001 - authentic but not readable here: recompile
        stats["bad_files"] += 1
        remove_quietly(path)
        return None


# --------------------------------------------------------------------------- folders

def _others_can_write(st: os.stat_result) -> bool:
    return bool(st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)) and not st.st_mode & stat.S_ISVTX


def _foreign_owner(st: os.stat_result) -> bool:
    return st.st_uid not in (os.getuid(), 0)


def folder_problem(path: str) -> str | None:
    """Why others could change what is in the existing folder *path* (None: they
    cannot, or it does not exist)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if _foreign_owner(st):
        return f"it belongs to another user (uid {st.st_uid})"
    if _others_can_write(st):
        return "other users can write it (group or other write permission, no sticky bit)"
    return None


def make_private_dirs(path: str) -> None:
    """Make the folder *path* and its missing parents, owner-only (0700)."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        return
    except FileNotFoundError:
        parent = os.path.dirname(path)
        if parent == path:
            raise
        make_private_dirs(parent)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass


# --------------------------------------------------------------------------- the key

#: key file -> (its key or None, why there is none, whether it was refused as unsafe)
_keys: dict[str, tuple[bytes | None, str | None, bool]] = {}
_key_lock = threading.Lock()


def _read_key(path: str) -> bytes:
    """The key in the file *path*, checked (OSError if missing, ValueError if refused)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO: refused below
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("it is not a regular file")
        if _foreign_owner(st):
            raise ValueError(f"it belongs to another user (uid {st.st_uid})")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise ValueError("other users can write it")
        if st.st_mode & stat.S_IROTH:  # (a team's group may read it: sharing on purpose)
            raise ValueError("every user can read it")
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    where = folder_problem(os.path.dirname(os.path.realpath(path)))
    if where is not None:
        raise ValueError(f"its folder is not safe: {where}")
    try:
        key = bytes.fromhex(data.decode("ascii").strip())
    except (UnicodeDecodeError, ValueError):
        raise ValueError("it does not hold hexadecimal digits") from None
    if len(key) < 16:
        raise ValueError("it holds fewer than 16 bytes")
    return key


def _create_key(path: str) -> None:
    """Write a new random key to *path*, unless one appears there meanwhile."""
    make_private_dirs(os.path.dirname(path))
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        try:
            os.write(fd, secrets.token_bytes(_KEY_BYTES).hex().encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # complete or absent, and never over a key just made
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not os.path.exists(path):
                os.replace(tmp, path)
    finally:
        try:
            os.remove(tmp)
        except OSError:
            pass


def secret() -> bytes | None:
    """This user's cache key (made on first use), or None where it cannot be made or
    is refused (:func:`key_problem` says why; the disk cache is then off)."""
    path = config.cache_key_file()
    got = _keys.get(path)
    if got is None:
        with _key_lock:
            got = _keys.get(path)
            if got is None:
                try:
                    try:
                        got = (_read_key(path), None, False)
                    except FileNotFoundError:
                        _create_key(path)
                        got = (_read_key(path), None, False)
                except (OSError, ValueError) as e:
                    why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
                    got = (None, f"{path}: {why}", isinstance(e, ValueError))
                _keys[path] = got
    return got[0]


def key_problem() -> tuple[str, bool] | None:
    """(why there is no key, whether it was refused as unsafe), or None."""
    got = _keys.get(config.cache_key_file())
    return None if got is None or got[1] is None else (got[1], got[2])


def key_status() -> tuple[str, str]:
    """(the key file, what state it is in), without making it."""
    path = config.cache_key_file()
    try:
        _read_key(path)
    except FileNotFoundError:
        return path, "not made yet (made on first use)"
    except (OSError, ValueError) as e:
        return path, f"refused ({e})"
    return path, "present"
