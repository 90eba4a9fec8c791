"""Every environment variable numba-gpux reads, read in this one place."""

from __future__ import annotations

import os

__all__ = ["user_temp_dir", "device_spec", "visible_devices", "cache_dir", "cache_max_bytes",
           "cache_key_file", "cache_shared", "debug_ir", "opencl_vendor_override", "cuda_home_dirs",
           "opencl_c_route", "grid_sync_spins", "heap_size", "set_heap_size", "HEAP_SIZE_ENV"]


def device_spec() -> str | None:
    """``NUMBA_GPUX_DEVICE``: the default device, e.g. ``opencl:cpu:0`` or ``cuda:0``."""
    return os.environ.get("NUMBA_GPUX_DEVICE") or None


def visible_devices() -> list[str] | None:
    """``NUMBA_GPUX_VISIBLE_DEVICES``: comma-separated device specs (``opencl:cpu:0``,
    ``cuda:1``, ``opencl-c``); only those devices are listed.  Unset or empty: all."""
    raw = os.environ.get("NUMBA_GPUX_VISIBLE_DEVICES", "")
    if not raw.strip():
        return None
    return [s.strip() for s in raw.split(",") if s.strip()]


def cache_dir() -> str:
    """``NUMBA_GPUX_CACHE_DIR``: where on-disk caches live."""
    base = os.environ.get("NUMBA_GPUX_CACHE_DIR")
    if base:
        return base
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(xdg, "numba_gpux")


def cache_key_file() -> str:
    """``NUMBA_GPUX_CACHE_KEY_FILE``: the secret that authenticates the disk cache's entries
    (made on first use, owner-only); default ``$XDG_CONFIG_HOME/numba-gpux/cache.key``,
    else ``~/.config/numba-gpux/cache.key``: outside the cache folder.  Processes that
    share a cache folder share it on purpose by naming the same key (docs/caching.md)."""
    path = os.environ.get("NUMBA_GPUX_CACHE_KEY_FILE")
    if path:
        return os.path.abspath(os.path.expanduser(path))
    xdg = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(xdg, "numba-gpux", "cache.key")


def cache_shared() -> bool:
    """``NUMBA_GPUX_CACHE_SHARED=1``: the cache folder is shared on purpose; no warning
    that other users can write it."""
    return os.environ.get("NUMBA_GPUX_CACHE_SHARED", "") not in ("", "0")


def cache_max_bytes() -> int:
    """``NUMBA_GPUX_CACHE_SIZE``: the disk cache's size limit in bytes (suffixes K, M, G;
    default 1G; 0 means no limit).  Past it, the least recently used entries go."""
    return _bytes(os.environ.get("NUMBA_GPUX_CACHE_SIZE") or "", 1 << 30)


def _bytes(raw: str, default: int) -> int:
    """*raw* as a size in bytes (suffixes K, M, G); *default* if empty or not a size."""
    raw = raw.strip().upper()
    if not raw:
        return default
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(raw[-1:], 1)
    try:
        return max(0, int(float(raw.rstrip("KMGB") or 0) * scale))
    except ValueError:
        return default


#: the environment variable of the device heap's size
HEAP_SIZE_ENV = "NUMBA_GPUX_HEAP_SIZE"
#: the device heap's default size: 64 MiB
HEAP_SIZE = 64 << 20
_heap_size: int | None = None


def heap_size() -> int:
    """The size in bytes of the device heap that arrays made in kernels come from
    (docs/device-runtime.md): what :func:`set_heap_size` set, else
    ``NUMBA_GPUX_HEAP_SIZE`` (suffixes K, M, G), else 64 MiB.  On CUDA it is the
    device ``malloc`` heap's size."""
    if _heap_size is not None:
        return _heap_size
    return _bytes(os.environ.get(HEAP_SIZE_ENV) or "", HEAP_SIZE) or HEAP_SIZE


def set_heap_size(nbytes: int) -> None:
    """Set the device heap's size in bytes for the launches that follow (at least 4096)."""
    global _heap_size
    n = int(nbytes)
    if n < 4096:
        raise ValueError(f"the device heap must be at least 4096 bytes, not {nbytes!r}")
    _heap_size = n


def autotune_enabled() -> bool:
    """``NUMBA_GPUX_AUTOTUNE=0``: no autotuning; tuned kernels and algorithms use their
    defaults, and results on disk are not read (docs/autotuning.md)."""
    return os.environ.get("NUMBA_GPUX_AUTOTUNE", "1").strip().lower() not in ("0", "off", "no", "false")


def autotune_forced() -> bool:
    """``NUMBA_GPUX_RETUNE=1``: tune again, once in this process, what is tuned on disk."""
    return os.environ.get("NUMBA_GPUX_RETUNE", "") not in ("", "0")


def autotune_budget() -> float:
    """``NUMBA_GPUX_AUTOTUNE_BUDGET``: the seconds one tuning may spend measuring
    candidates (default 3); past it, the best one measured is taken."""
    try:
        return max(0.0, float(os.environ.get("NUMBA_GPUX_AUTOTUNE_BUDGET") or 3.0))
    except ValueError:
        return 3.0


def autotune_max_configs() -> int:
    """``NUMBA_GPUX_AUTOTUNE_MAX``: the most candidates one tuning measures (default 32)."""
    try:
        return max(1, int(os.environ.get("NUMBA_GPUX_AUTOTUNE_MAX") or 32))
    except ValueError:
        return 32


def user_temp_dir() -> str | None:
    """This user's private directory under the temporary directory (``TMPDIR``), made
    owner-only: small files device discovery needs (OpenCL vendor files, probe records),
    which must not depend on a writable cache directory.  None if it cannot be made, or
    exists but is not safely this user's."""
    import stat
    import tempfile

    base = os.path.join(tempfile.gettempdir(), f"numba-gpux-{os.getuid()}")
    try:
        os.mkdir(base, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(base)
    except OSError:
        return None
    ok = (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
          and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))
    return base if ok else None


#: how many times a block waits in a grid synchronization before it gives up (the
#: default of ``NUMBA_GPUX_GRID_SYNC_SPINS``): about 0.1 us a poll, 7 s, on the OpenCL
#: CPU drivers measured; longer on a GPU, whose global atomics are slower
GRID_SYNC_SPINS = 1 << 26


def grid_sync_spins() -> int:
    """``NUMBA_GPUX_GRID_SYNC_SPINS``: how many times the first work-item of a block
    polls a grid synchronization before the kernel reports that it did not complete
    (1 to 2**31 - 1; unset or not a positive integer: :data:`GRID_SYNC_SPINS`)."""
    raw = (os.environ.get("NUMBA_GPUX_GRID_SYNC_SPINS") or "").strip()
    try:
        n = int(raw)
    except ValueError:
        return GRID_SYNC_SPINS
    return min(n, 2**31 - 1) if n > 0 else GRID_SYNC_SPINS


def debug_ir() -> bool:
    """``NUMBA_GPUX_DEBUG_IR=1``: keep the IR of every stage on compile results."""
    return os.environ.get("NUMBA_GPUX_DEBUG_IR", "") not in ("", "0")


def opencl_vendor_override() -> str | None:
    """``OCL_ICD_VENDORS`` as the user set it; when set it is respected as is."""
    return os.environ.get("OCL_ICD_VENDORS") or None


def cuda_home_dirs() -> list[str]:
    """``CUDA_HOME`` then ``CUDA_PATH``: CUDA toolkit roots the user named (may be empty)."""
    return [v for v in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")) if v]


def opencl_c_route() -> bool:
    """``NUMBA_GPUX_OPENCL_C=1``: list every OpenCL device under the ``opencl-c`` target
    (OpenCL C source) and prefer it; by default only devices without SPIR-V use that route."""
    return os.environ.get("NUMBA_GPUX_OPENCL_C", "") not in ("", "0")


def verify_rewrites() -> bool:
    """NUMBA_GPUX_VERIFY_REWRITES=1: LLVM's parser and verifier run after each of the
    project's IR rewrites, and a rewrite whose result is invalid raises an internal
    compiler error that names it (for the fuzzer and for debugging; it costs a parse
    per rewrite)."""
    return os.environ.get("NUMBA_GPUX_VERIFY_REWRITES", "") not in ("", "0")
