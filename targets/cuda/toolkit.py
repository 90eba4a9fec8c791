"""The CUDA toolkit's ``ptxas``: optional, never required.

Found on PATH, under ``CUDA_HOME``/``CUDA_PATH``, ``/usr/local/cuda`` or in
NVIDIA's pip wheels (``nvidia/cuda_nvcc/bin``).  Used to turn PTX into a
cubin and, by tests and benchmarks, to check PTX and read register counts.
"""

from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from numba_gpux import config

__all__ = ["all_ptxas", "find_ptxas", "ptxas_for", "ptxas_cubin", "ptxas_check",
           "ptxas_supports", "ptxas_resources"]


@functools.lru_cache(maxsize=1)
def all_ptxas() -> tuple[str, ...]:
    """Every ``ptxas`` found, in order of preference: PATH, ``CUDA_HOME``/``CUDA_PATH``,
    ``/usr/local/cuda``, then NVIDIA's pip wheels (``nvidia/cuda_nvcc/bin``).  Several
    may be installed side by side (CUDA 13 assembles sm_75 and newer only; CUDA 12's
    pip wheel ``nvidia-cuda-nvcc-cu12`` still assembles sm_70)."""
    cands = []
    path = shutil.which("ptxas")
    if path:
        cands.append(path)
    cands.extend(os.path.join(h, "bin", "ptxas") for h in config.cuda_home_dirs())
    cands.append("/usr/local/cuda/bin/ptxas")
    for root in sys.path:
        if root and os.path.isdir(os.path.join(root, "nvidia")):
            cands.extend(sorted(glob.glob(os.path.join(root, "nvidia", "*", "bin", "ptxas"))))
            cands.extend(sorted(glob.glob(os.path.join(root, "nvidia", "*", "*", "bin", "ptxas"))))
    found: dict[str, str] = {}  # real path -> first spelling
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            found.setdefault(os.path.realpath(c), c)
    return tuple(found.values())


def find_ptxas() -> str | None:
    """The preferred ``ptxas``, or None."""
    found = all_ptxas()
    return found[0] if found else None


def _run(ptx: str, args: list[str], want_output: bool, exe: str | None = None):
    exe = exe or find_ptxas()
    if exe is None:
        return None
    with tempfile.TemporaryDirectory(prefix="gpux-ptxas-") as d:
        src = os.path.join(d, "k.ptx")
        out = os.path.join(d, "k.cubin")
        with open(src, "w") as f:
            f.write(ptx)
        proc = subprocess.run([exe, *args, src, "-o", out], capture_output=True, text=True)
        data = None
        if proc.returncode == 0 and want_output and os.path.exists(out):
            with open(out, "rb") as f:
                data = f.read()
        return proc, data


@functools.lru_cache(maxsize=None)
def ptxas_for(cc: tuple[int, int], arch: str = "") -> str | None:
    """The first installed ``ptxas`` that assembles for ``sm_XX`` (with *arch*, PTX's
    "a" or "f" suffix: ``sm_XXa``), probed once per process with an empty kernel, or None."""
    from .ptxisa import ptx_isa_for

    major, minor = max(ptx_isa_for(tuple(cc)), (8, 8) if arch == "f" else (0, 0))
    sm = _sm(cc, arch)
    probe = f".version {major}.{minor}\n.target {sm}\n.address_size 64\n" \
            ".visible .entry gpux_probe() { ret; }\n"
    for exe in all_ptxas():
        got = _run(probe, [f"--gpu-name={sm}"], False, exe)
        if got is not None and got[0].returncode == 0:
            return exe
    return None


def _sm(cc, arch: str = "") -> str:
    return f"sm_{cc[0]}{cc[1]}{arch}"


def ptxas_supports(cc: tuple[int, int], arch: str = "") -> bool:
    """Whether an installed ptxas assembles for ``sm_XX`` (CUDA 13's dropped sm_70 and
    older; CUDA 12's, from ``nvidia-cuda-nvcc-cu12``, has it), or ``sm_XX<arch>``."""
    return ptxas_for(tuple(cc), arch) is not None


def ptxas_cubin(ptx: str, cc: tuple[int, int], opt: int = 3, arch: str = "") -> bytes | None:
    """A cubin for ``sm_XX`` (``sm_XX<arch>``), or None when ptxas is missing, does not
    know it, or fails."""
    exe = ptxas_for(tuple(cc), arch)
    if exe is None:
        return None
    got = _run(ptx, [f"--gpu-name={_sm(cc, arch)}", f"-O{min(max(opt, 0), 3)}"], True, exe)
    return None if got is None else got[1]


def ptxas_check(ptx: str, cc: tuple[int, int], arch: str = "") -> tuple[bool, str]:
    """(accepted, ptxas's messages) for *ptx* compiled for ``sm_XX`` (``sm_XX<arch>``)."""
    got = _run(ptx, [f"--gpu-name={_sm(cc, arch)}"], False, ptxas_for(tuple(cc), arch))
    if got is None:
        raise FileNotFoundError("ptxas is not installed")
    proc = got[0]
    return proc.returncode == 0, proc.stdout + proc.stderr


_FUNC = re.compile(r"Compiling entry function '([^']+)'|Function properties for (\S+)")
_REGS = re.compile(r"Used (\d+) registers")
_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_STACK = re.compile(r"(\d+) bytes stack frame")


def ptxas_resources(ptx: str, cc: tuple[int, int]) -> dict[str, dict]:
    """Per entry function: registers, spill bytes and stack frame, from ``ptxas -v``."""
    got = _run(ptx, [f"--gpu-name=sm_{cc[0]}{cc[1]}", "-v"], False, ptxas_for(tuple(cc)))
    if got is None:
        raise FileNotFoundError("ptxas is not installed")
    proc = got[0]
    if proc.returncode != 0:
        raise RuntimeError(f"ptxas rejected the PTX:\n{proc.stderr}")
    out: dict[str, dict] = {}
    cur = None
    for line in (proc.stdout + proc.stderr).splitlines():
        m = _FUNC.search(line)
        if m:
            name = m.group(1) or m.group(2)
            cur = out.setdefault(name, {"registers": 0, "spill_stores": 0, "spill_loads": 0,
                                        "stack": 0, "entry": bool(m.group(1))})
            if m.group(1):
                cur["entry"] = True
            continue
        if cur is None:
            continue
        if (m := _REGS.search(line)):
            cur["registers"] = int(m.group(1))
        if (m := _SPILL.search(line)):
            cur["spill_stores"], cur["spill_loads"] = int(m.group(1)), int(m.group(2))
        if (m := _STACK.search(line)):
            cur["stack"] = int(m.group(1))
    return {k: v for k, v in out.items() if v["entry"]}
