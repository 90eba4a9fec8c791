"""In-memory and on-disk caches of finished code, and their keys.

The key of finished code is (hash of the neutral module text, the target's
fingerprint, the caller options).  Nothing else enters it: tuning hooks, for
instance, reach kernels only as arguments, so registering one changes no key.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import threading

from . import config
from .compiler import Job, Options, run_target_stages
from .interface import Artifact, Target

__all__ = ["cache_key", "compile_target", "clear_memory_cache", "stats", "DiskCache"]

_mem: dict[str, Artifact] = {}
_lock = threading.Lock()
stats = {"hits": 0, "misses": 0, "disk_hits": 0}

FORMAT_VERSION = 1


def cache_key(neutral_text: str, target: Target, options: Options) -> str:
    h = hashlib.sha256()
    h.update(f"v{FORMAT_VERSION}|{target.fingerprint}|{options!r}|".encode())
    h.update(neutral_text.encode())
    return h.hexdigest()


def _versions() -> str:
    import llvmlite
    import numba

    from ._version import __version__

    return f"{__version__}-{numba.__version__}-{llvmlite.__version__}"


class DiskCache:
    """Finished code on disk, one file per key, under ``NUMBA_GPUX_CACHE_DIR``."""

    def __init__(self, root: str | None = None):
        self.root = os.path.join(root or config.cache_dir(), "code", _versions())

    def _path(self, key: str) -> str:
        return os.path.join(self.root, key[:2], key + ".pkl")

    def load(self, key: str) -> Artifact | None:
        try:
            with open(self._path(key), "rb") as f:
                art = pickle.load(f)
            return art if isinstance(art, Artifact) else None
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            return None

    def store(self, key: str, art: Artifact) -> None:
        path = self._path(key)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as f:
                pickle.dump(art, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except OSError:
            pass  # a cache that cannot be written is not an error


def compile_target(neutral_text: str, kernels: tuple, target: Target, options: Options,
                   name: str = "module", exports: tuple = (), disk: bool = False) -> Artifact:
    """Run the per-target stages on *neutral_text*, through the caches."""
    key = cache_key(neutral_text, target, options)
    art = _mem.get(key)
    if art is not None:
        stats["hits"] += 1
        return art
    dc = DiskCache() if disk else None
    if dc is not None:
        art = dc.load(key)
        if art is not None:
            stats["disk_hits"] += 1
            _mem[key] = art
            return art
    stats["misses"] += 1
    job = Job(target=target, options=options, kernels=tuple(kernels), text=neutral_text,
              name=name, exports=tuple(exports), keep_ir=config.debug_ir())
    art = run_target_stages(job).artifact
    with _lock:
        _mem[key] = art
    if dc is not None:
        dc.store(key, art)
    return art


def clear_memory_cache() -> None:
    with _lock:
        _mem.clear()
