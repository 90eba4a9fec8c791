"""OpenCL drivers: the ICD loader's vendor files and device discovery.

Finds every SPIR-V capable device on every platform.  A pip-installed
OpenCL driver in the active environment (``intel-opencl-rt``) is found
without the user setting anything, and the system's own drivers
(``/etc/OpenCL/vendors``) stay visible.
"""

from __future__ import annotations

import functools
import glob
import hashlib
import os
import sys
import threading

from numba_gpux import config
from numba_gpux.devices import Device

from .runtime import OpenCLRuntime

__all__ = ["discover", "cl_devices", "make_device", "ensure_icd_vendors"]

SYSTEM_VENDORS = "/etc/OpenCL/vendors"
_icd_lock = threading.Lock()
_icd_done = False


def _env_vendor_dirs() -> list[str]:
    prefixes = {sys.prefix, sys.exec_prefix, getattr(sys, "base_prefix", sys.prefix)}
    return [os.path.join(p, "etc", "OpenCL", "vendors") for p in prefixes]


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _fix_library_path(lib: str, prefix: str) -> str | None:
    """ICD files shipped in wheels name the library with a build-time prefix
    (e.g. a conda placeholder); find the library in this environment instead."""
    if os.path.isabs(lib) and os.path.exists(lib):
        return lib
    base = os.path.basename(lib)
    for cand in (os.path.join(prefix, "lib", base), os.path.join(prefix, "lib64", base)):
        if os.path.exists(cand):
            return cand
    return None


def ensure_icd_vendors() -> None:
    """Point the ICD loader at the system's drivers plus this environment's.

    Does nothing when ``OCL_ICD_VENDORS`` is already set (the user's choice
    wins) or when the environment ships no driver.
    """
    global _icd_done
    if _icd_done:
        return
    with _icd_lock:
        if _icd_done:
            return
        _icd_done = True
        if config.opencl_vendor_override():
            return
        entries: dict[str, str] = {}
        for d in _env_vendor_dirs():
            prefix = os.path.dirname(os.path.dirname(os.path.dirname(d)))
            for icd in sorted(glob.glob(os.path.join(d, "*.icd"))):
                try:
                    lib = _read(icd).strip()
                except OSError:
                    continue
                fixed = _fix_library_path(lib, prefix)
                if fixed and os.path.basename(fixed) not in {os.path.basename(v) for v in entries.values()}:
                    entries["env-" + os.path.basename(icd)] = fixed
        if not entries:
            return
        for icd in sorted(glob.glob(os.path.join(SYSTEM_VENDORS, "*.icd"))):
            try:
                entries["sys-" + os.path.basename(icd)] = _read(icd).strip()
            except OSError:
                continue
        digest = hashlib.sha256(repr(sorted(entries.items())).encode()).hexdigest()[:16]
        out = _write_vendor_dir(digest, entries)
        if out is None:
            import warnings

            warnings.warn("numba_gpux: no temporary directory is writable, so the OpenCL driver "
                          "installed in this environment cannot be made visible; set "
                          "OCL_ICD_VENDORS to a directory of .icd files", RuntimeWarning)
            return
        os.environ["OCL_ICD_VENDORS"] = out


def _write_vendor_dir(digest: str, entries: dict) -> str | None:
    """A directory of ``.icd`` files naming *entries*' libraries, for ``OCL_ICD_VENDORS``.

    It lives under the temporary directory (``TMPDIR``), never under the cache
    directory: device discovery must not depend on a writable cache.  The files
    are named by a digest of their contents and written atomically, so processes
    share one directory; where the per-user directory cannot be used, a private
    one is made for this process.
    """
    import tempfile

    base = config.user_temp_dir()
    out = os.path.join(base, "opencl-vendors", digest) if base else None
    for attempt in range(2):
        if out is None:
            try:
                out = tempfile.mkdtemp(prefix="numba-gpux-vendors-")
            except OSError:
                return None
        try:
            os.makedirs(out, mode=0o700, exist_ok=True)
            for name, lib in entries.items():
                path = os.path.join(out, name)
                if not os.path.exists(path):
                    tmp = f"{path}.{os.getpid()}"
                    with open(tmp, "w") as f:
                        f.write(lib + "\n")
                    os.replace(tmp, path)
            return out
        except OSError:
            out = None
    return None


def _kind(cl, dev) -> str:
    t = dev.type
    if t & cl.device_type.GPU:
        return "gpu"
    if t & cl.device_type.CPU:
        return "cpu"
    return "accelerator"


def _split_fits(dev) -> bool:
    """Whether the shuffles of split sub-groups fit the device: its largest work-group
    has a slot in their work-group arrays, and its local memory holds both arrays twice
    over (overlays/subgroups.py)."""
    from .overlays import SPLIT_SLOTS

    return (int(dev.max_work_group_size) <= SPLIT_SLOTS
            and int(dev.local_mem_size) >= 2 * SPLIT_SLOTS * (4 + 8))


#: clGetDeviceInfo's queries of cl_ext_float_atomics (single, double precision) and the
#: capability bits of float add on global and on local memory
_FP_ATOMIC_CAPS = (0x4231, 0x4232)
_FP_ATOMIC_ADD = (1 << 1) | (1 << 17)


@functools.lru_cache(maxsize=1)
def _opencl_library():
    """The OpenCL library pyopencl loaded (its ICD loader), through ctypes, or None
    where it cannot be found (outside Linux, or not loaded); looked for once, not for
    each device discovery asks about."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            paths = {ln.split()[-1] for ln in f if "libOpenCL" in ln and "/" in ln}
    except OSError:
        return None
    for path in sorted(paths):
        if os.path.basename(path).startswith("libOpenCL"):
            try:
                return ctypes.CDLL(path)
            except OSError:
                continue
    return None


def _native_float_add(dev, fp64: bool) -> bool:
    """Whether *dev* adds floats atomically itself, on global and local memory, in
    single precision and (where it has doubles) double: the capabilities its driver
    reports for cl_ext_float_atomics, which pyopencl does not ask (a driver that lists
    the extension may support no operation of it).  False where they cannot be read."""
    import ctypes

    if "cl_ext_float_atomics" not in dev.extensions.split():
        return False
    lib = _opencl_library()
    if lib is None:
        return False
    for query in _FP_ATOMIC_CAPS[:2 if fp64 else 1]:
        caps, size = ctypes.c_uint64(0), ctypes.c_size_t(0)
        try:
            rc = lib.clGetDeviceInfo(ctypes.c_void_p(dev.int_ptr), ctypes.c_uint32(query),
                                     ctypes.c_size_t(8), ctypes.byref(caps), ctypes.byref(size))
        except (AttributeError, ctypes.ArgumentError):
            return False
        if rc != 0 or size.value != 8 or caps.value & _FP_ATOMIC_ADD != _FP_ATOMIC_ADD:
            return False
    return True


def _features(dev, kind: str) -> frozenset:
    ext = set(dev.extensions.split())
    feats = set()
    if dev.double_fp_config:
        feats.add("fp64")
    if "cl_khr_fp16" in ext:
        feats.add("fp16")
    if {"cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"} <= ext:
        feats.add("int64_atomics")
    if "cl_ext_float_atomics" in ext:
        feats.add("float_atomics")
        if _native_float_add(dev, "fp64" in feats):
            # float atomic adds as the device's own instruction (OpAtomicFAddEXT), not
            # compare-and-swap loops, which made Intel's CPU driver give up vectorizing
            # the whole kernel (overlays/atomics.py)
            feats.add("native_float_add")
    if "cl_khr_subgroups" in ext or "cl_intel_subgroups" in ext or "cl_khr_subgroup_shuffle" in ext:
        feats.add("subgroups")
    if "cl_intel_required_subgroup_size" in ext:
        feats.add("required_subgroup_size")
    if "subgroups" in feats and kind == "cpu" and _split_fits(dev):
        # a CPU runs a sub-group in its vector registers: one of a required width wider
        # than them (a warp of 32) runs as several (Target.split_subgroup_prefix)
        feats.add("split_subgroups")
    return frozenset(feats)


def cl_devices() -> list:
    """``(platform, device, il_version)`` for every OpenCL device of every platform;
    empty without pyopencl or platforms.  Discovery never raises."""
    ensure_icd_vendors()
    try:
        import pyopencl as cl
    except ImportError:
        return []
    try:
        platforms = cl.get_platforms()
    except Exception:
        return []
    out = []
    for plat in platforms:
        try:
            devs = plat.get_devices()
        except Exception:
            continue
        for dev in devs:
            try:
                il = dev.il_version or ""
            except Exception:
                il = ""
            out.append((plat, dev, il))
    return out


def make_device(target_name: str, plat, dev, il: str, runtime, index: int,
                kind_counts: dict) -> Device:
    """The Device of one OpenCL device for *target_name* (kind indices counted in
    *kind_counts*, shared by the devices of one discovery)."""
    import pyopencl as cl

    from .target import INDEX_LIMITS

    kind = _kind(cl, dev)
    k = kind_counts.get(kind, 0)
    kind_counts[kind] = k + 1
    limits = {
        "max_threads_per_block": int(dev.max_work_group_size),
        "max_block_dims": tuple(int(x) for x in dev.max_work_item_sizes),
        "max_grid_dims": INDEX_LIMITS.grid,  # what the compiler assumes (target.py)
        "max_shared_bytes": int(dev.local_mem_size),
        "compute_units": int(dev.max_compute_units),
        "global_mem_bytes": int(dev.global_mem_size),
        "max_alloc_bytes": int(dev.max_mem_alloc_size),
        "il_version": il,
        "opencl_version": dev.version,
        "driver_version": dev.driver_version,
    }
    return Device(
        target_name=target_name, index=index, name=dev.name.strip(), kind=kind,
        vendor=dev.vendor.strip(), runtime=runtime, limits=limits,
        target_features=_features(dev, kind), platform=plat.name.strip(), kind_index=k,
    )


def discover() -> list[Device]:
    """Every OpenCL device that accepts SPIR-V."""
    found: list[Device] = []
    counts: dict = {}
    for plat, dev, il in cl_devices():
        if "SPIR-V" in il:
            found.append(make_device("opencl", plat, dev, il, OpenCLRuntime(dev), len(found),
                                     counts))
    return found
