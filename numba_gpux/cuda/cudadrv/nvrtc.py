"""``numba_gpux.cuda.cudadrv.nvrtc``: numba.cuda's questions about the compute
capabilities its compiler writes code for.

numba.cuda asks NVRTC which capabilities it can compile for; numba-gpux writes PTX
with LLVM's NVPTX back end, so here the answers are those of numba-gpux's CUDA
target: :func:`get_supported_ccs` lists the capabilities it writes PTX for (5.0 and
newer, as far as the PTX ISA that LLVM emits knows them), and
:func:`find_closest_arch` picks among them as numba.cuda does, so the ``.target``
of ``cuda.compile_ptx_for_current_device`` is ``find_closest_arch`` of the device's
capability.  :func:`_get_nvrtc_version` is the installed NVRTC's version (cuda-python's
bindings), a :class:`NvrtcSupportError` where there is none.  :func:`compile` (CUDA C
sources to PTX or LTO-IR) is numba-gpux's ``UnsupportedError``: it links no CUDA C.
"""

from __future__ import annotations

import functools

from ...errors import UnsupportedError
from .error import CCSupportError, NvrtcError, NvrtcSupportError

__all__ = ["find_closest_arch", "get_supported_ccs", "get_lowest_supported_cc",
           "get_arch_option", "compile", "NvrtcError", "NvrtcSupportError"]


def _ver(v) -> str:
    return ".".join(str(x) for x in v)


@functools.cache
def _get_nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the NVRTC library cuda-python loads; NvrtcSupportError
    where cuda-python or the library is missing."""
    try:
        from cuda.bindings import nvrtc as bindings_nvrtc
    except ImportError as e:
        raise NvrtcSupportError(f"NVRTC cannot be used: cuda-python's bindings are not "
                                f"installed ({e})") from None
    try:
        err, major, minor = bindings_nvrtc.nvrtcVersion()
    except Exception as e:  # the library itself is missing
        raise NvrtcSupportError(f"NVRTC cannot be loaded: {e}") from None
    if err != bindings_nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise NvrtcError(f"{getattr(err, 'name', err)} when calling nvrtcVersion()")
    return int(major), int(minor)


@functools.cache
def _supported() -> tuple[tuple[int, int], ...]:
    from ...targets.cuda.ptxisa import _MIN_PTX, LLVM_MAX_PTX, ptx_isa_for

    return tuple(sorted(cc for cc in _MIN_PTX if ptx_isa_for(cc) <= LLVM_MAX_PTX))


def get_supported_ccs() -> list[tuple[int, int]]:
    """The compute capabilities numba-gpux's CUDA target writes PTX for, ascending."""
    return list(_supported())


def get_lowest_supported_cc() -> tuple[int, int]:
    return min(_supported())


def find_closest_arch(cc) -> tuple[int, int]:
    """The supported compute capability closest to *cc* (``(major, minor)``) from
    below: *cc* itself when supported, else the newest one older than it (the newest
    of all for a capability newer than every one); a ``CCSupportError`` for a *cc*
    older than every supported one."""
    cc = (int(cc[0]), int(cc[1]))
    ccs = _supported()
    if cc < ccs[0]:
        raise CCSupportError(f"GPU compute capability {_ver(cc)} is not supported"
                             f"(requires >={_ver(ccs[0])})")
    return max(c for c in ccs if c <= cc)


def get_arch_option(major, minor, arch="") -> str:
    """The ``compute_XY`` option of the closest supported capability (``config.FORCE_CUDA_CC``
    replaces the capability given where it is set), with PTX's architecture suffix
    *arch* ("a", "f" or "")."""
    from .. import config

    force = getattr(config, "FORCE_CUDA_CC", None)
    if force:
        major, minor = force[0], force[1]
        arch = force[2] if len(force) == 3 else ""
    cc = find_closest_arch((major, minor))
    return f"compute_{cc[0]}{cc[1]}{arch}"


def compile(src, name, cc, ltoir=False, lineinfo=False, debug=False):
    """numba.cuda compiles CUDA C/C++ sources with NVRTC; numba-gpux links no CUDA C
    (as ``link=``)."""
    raise UnsupportedError(f"cudadrv.nvrtc.compile of {name!r}: numba-gpux does not compile "
                           f"or link CUDA C/C++ sources (kernels are written in Python)")
