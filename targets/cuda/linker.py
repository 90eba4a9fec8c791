"""Linking foreign code with a kernel's PTX (numba.cuda's ``link=`` and
``declare_device``): CUDA C through NVRTC, then one cubin through nvJitLink, or, where
nvJitLink is missing, at module load through the driver's linker.

Both come from cuda-python (``cuda.bindings.nvrtc``, ``cuda.bindings.nvjitlink``,
``cuda.bindings.driver``); none is needed to make the PTX itself.  What is linked
is read from the module's records (``numba_gpux.linking``).
"""

from __future__ import annotations

import os
import sys

from numba_gpux import config, linking
from numba_gpux.errors import GpuxUserError, ToolchainError

__all__ = ["have_nvrtc", "have_nvjitlink", "compile_cu", "prepare", "link_nvjitlink",
           "link_driver", "LinkError"]


class LinkError(GpuxUserError):
    """The linker rejected the kernel's code with the code given to link (an undefined
    or twice-defined symbol, a bad file), or a CUDA C file did not compile."""


def _nvrtc():
    try:
        from cuda.bindings import nvrtc

        nvrtc.nvrtcVersion()  # the library itself, not just its binding
    except Exception:  # noqa: BLE001 - ImportError, or a binding without its library
        return None
    return nvrtc


def _nvjitlink():
    try:
        from cuda.bindings import nvjitlink

        nvjitlink.version()  # the library itself, not just its binding
    except Exception:  # noqa: BLE001 - ImportError, or a binding without its library
        return None
    return nvjitlink


def have_nvrtc() -> bool:
    return _nvrtc() is not None


def have_nvjitlink() -> bool:
    return _nvjitlink() is not None


def include_dirs(name: str) -> list[str]:
    """Where a CUDA C file's ``#include``s are looked for: its own folder, then the
    CUDA toolkit's headers (``CUDA_HOME``/``CUDA_PATH``, ``/usr/local/cuda``, NVIDIA's
    pip wheels)."""
    dirs = [os.path.dirname(os.path.abspath(name))] if os.path.isfile(name) else []
    roots = [*config.cuda_home_dirs(), "/usr/local/cuda"]
    for root in sys.path:
        if root and os.path.isdir(os.path.join(root, "nvidia")):
            roots += [os.path.join(root, "nvidia", "cuda_runtime"),
                      os.path.join(root, "nvidia", "cuda_nvrtc")]
    dirs += [os.path.join(r, "include") for r in roots if os.path.isdir(os.path.join(r, "include"))]
    return dirs


def compile_cu(source: bytes, name: str, cc: tuple[int, int], arch: str = "") -> bytes:
    """PTX of the CUDA C *source* (named *name*) for ``compute_XX``, as relocatable
    device code (its ``__device__`` functions stay, to be linked); a LinkError with
    NVRTC's log where it does not compile."""
    nvrtc = _nvrtc()
    if nvrtc is None:
        raise ToolchainError(f"linking the CUDA C file {name!r} needs NVRTC (cuda-python's "
                             f"cuda.bindings.nvrtc and the nvidia-cuda-nvrtc library), "
                             f"which is not installed")

    def check(result, what):
        err, *rest = result
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise ToolchainError(f"NVRTC failed ({what}) on {name!r}: {err.name}")
        return rest[0] if len(rest) == 1 else rest

    prog = check(nvrtc.nvrtcCreateProgram(source, os.path.basename(name).encode(), 0, [], []),
                 "create")
    try:
        opts = [f"--gpu-architecture=compute_{cc[0]}{cc[1]}{arch}".encode(),
                b"--relocatable-device-code=true"]
        opts += [f"--include-path={d}".encode() for d in include_dirs(name)]
        err, = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            size = check(nvrtc.nvrtcGetProgramLogSize(prog), "log size")
            log = b" " * size
            check(nvrtc.nvrtcGetProgramLog(prog, log), "log")
            raise LinkError(f"the CUDA C file {name!r} does not compile for "
                            f"sm_{cc[0]}{cc[1]}{arch}:\n"
                            f"{log.decode(errors='replace').rstrip(chr(0)).strip()}")
        size = check(nvrtc.nvrtcGetPTXSize(prog), "PTX size")
        ptx = b" " * size
        check(nvrtc.nvrtcGetPTX(prog, ptx), "PTX")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    return ptx.rstrip(b"\0")


def prepare(recs, cc: tuple[int, int], arch: str = "") -> list[tuple[str, str, bytes]]:
    """(kind, name, content) of each input of the records *recs*, CUDA C compiled to PTX."""
    out = []
    for kind, name, digest in linking.inputs_of(recs):
        data = linking.content(digest, name)
        if kind == "cu":
            kind, data = "ptx", compile_cu(data, name, cc, arch)
        out.append((kind, name, data))
    return out


def _log(nvjitlink, handle, error: bool) -> str:
    try:
        size = (nvjitlink.get_error_log_size if error else nvjitlink.get_info_log_size)(handle)
        buf = bytearray(size)
        (nvjitlink.get_error_log if error else nvjitlink.get_info_log)(handle, buf)
        return bytes(buf).rstrip(b"\0").decode(errors="replace").strip()
    except Exception:  # noqa: BLE001 - the log is a courtesy of the message
        return ""


def link_nvjitlink(ptx: str, kernel: str, images, cc: tuple[int, int], arch: str = "",
                   opt: int = 3) -> tuple[bytes, str]:
    """(cubin, nvJitLink's info log) of the kernel's *ptx* linked with *images* ((kind,
    name, bytes) of ``prepare``) for ``sm_XX``; a LinkError with the linker's log where
    it fails."""
    nvjitlink = _nvjitlink()
    if nvjitlink is None:
        raise ToolchainError("nvJitLink (cuda.bindings.nvjitlink) is not installed")
    kinds = nvjitlink.InputType
    lto = any(k == "ltoir" for k, _n, _d in images)
    opts = [f"-arch=sm_{cc[0]}{cc[1]}{arch}", f"-O{min(max(opt, 0), 3)}", "-verbose"]
    if lto:
        opts.append("-lto")
    handle = nvjitlink.create(len(opts), opts)
    try:
        try:
            data = ptx.encode()
            nvjitlink.add_data(handle, kinds.PTX, data, len(data), f"{kernel}.ptx")
            for kind, name, blob in images:
                nvjitlink.add_data(handle, getattr(kinds, _NVJITLINK_KIND[kind]), blob,
                                   len(blob), os.path.basename(name))
            nvjitlink.complete(handle)
        except nvjitlink.nvJitLinkError as e:
            log = _log(nvjitlink, handle, True)
            raise LinkError(f"linking {kernel}{_with(images)} failed ({e}):\n{log}") from None
        size = nvjitlink.get_linked_cubin_size(handle)
        cubin = bytearray(size)
        nvjitlink.get_linked_cubin(handle, cubin)
        return bytes(cubin), _log(nvjitlink, handle, False)
    finally:
        nvjitlink.destroy(handle)


def _with(images) -> str:
    names = ", ".join(repr(n) for _k, n, _d in images)
    return f" with {names}" if names else " (no code was given to link)"


_NVJITLINK_KIND = {"ptx": "PTX", "cubin": "CUBIN", "fatbin": "FATBIN", "object": "OBJECT",
                   "archive": "LIBRARY", "ltoir": "LTOIR"}
_DRIVER_KIND = {"ptx": "CU_JIT_INPUT_PTX", "cubin": "CU_JIT_INPUT_CUBIN",
                "fatbin": "CU_JIT_INPUT_FATBINARY", "object": "CU_JIT_INPUT_OBJECT",
                "archive": "CU_JIT_INPUT_LIBRARY"}


def link_driver(drv, check, ptx: str, kernel: str, images) -> bytes:
    """The cubin of the kernel's *ptx* linked with *images* by the driver's linker
    (cuLinkCreate / cuLinkAddData / cuLinkComplete) for the current context's device;
    *check* raises on a driver error.  LTO-IR needs nvJitLink."""
    lto = [n for k, n, _d in images if k == "ltoir"]
    if lto:
        raise ToolchainError(f"linking the LTO-IR {', '.join(map(repr, lto))} needs nvJitLink "
                             f"(cuda.bindings.nvjitlink), which is not installed")
    size = 64 * 1024
    log = bytearray(size)
    opt = drv.CUjit_option
    state = check(drv.cuLinkCreate(2, [opt.CU_JIT_ERROR_LOG_BUFFER,
                                       opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES], [log, size]))
    try:
        try:
            data = ptx.encode() + b"\0"
            check(drv.cuLinkAddData(state, drv.CUjitInputType.CU_JIT_INPUT_PTX, data, len(data),
                                    f"{kernel}.ptx".encode(), 0, [], []))
            for kind, name, blob in images:
                if kind == "ptx":
                    blob = blob + b"\0"
                check(drv.cuLinkAddData(state, getattr(drv.CUjitInputType, _DRIVER_KIND[kind]),
                                        blob, len(blob), os.path.basename(name).encode(),
                                        0, [], []))
            cubin_ptr, cubin_size = check(drv.cuLinkComplete(state))
        except Exception as e:  # noqa: BLE001 - the driver's error, with its log
            text = bytes(log).split(b"\0", 1)[0].decode(errors="replace").strip()
            raise LinkError(f"linking {kernel}{_with(images)} failed ({e}):\n{text}") from None
        import ctypes

        return ctypes.string_at(int(cubin_ptr), int(cubin_size))  # before cuLinkDestroy
    finally:
        drv.cuLinkDestroy(state)
