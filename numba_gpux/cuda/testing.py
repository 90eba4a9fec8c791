"""``numba.cuda.testing``: what libraries' own test suites import from numba.cuda to
test their kernels: the base class ``CUDATestCase`` and the skip decorators, answered
for the device the facade runs on.

``CUDATestCase`` is a ``unittest.TestCase`` with Numba's assertions
(``assertPreciseEqual``...) that silences the low-occupancy and implicit-copy warnings
while each test runs, as numba.cuda's does.  The decorators skip on what the running
setup has: the facade is never the simulator (``skip_on_cudasim`` runs the test,
``skip_unless_cudasim`` skips it), ``skip_unless_cc_XX`` reads the current device's
``compute_capability`` (on other devices than NVIDIA GPUs the highest CUDA capability
whose facade features work there: docs/migration.md), ``skip_if_cuda_includes_missing``
skips where CUDA C cannot be compiled and linked (other targets than CUDA, or no CUDA
headers), and the toolchain questions (nvJitLink, nvdisasm) are asked of what is
installed.  ``captured_cuda_stdout()`` captures what kernels ``print``.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import tempfile
import unittest
from pathlib import Path

import numpy as np
from numba.tests.support import TestCase

from . import config

__all__ = ["unittest", "CUDATestCase", "ContextResettingTestCase", "skip_on_cudasim",
           "skip_unless_cudasim", "skip_on_standalone_numba_cuda",
           "skip_unless_conda_cudatoolkit", "skip_if_external_memmgr",
           "skip_under_cuda_memcheck", "skip_without_nvdisasm", "skip_with_nvdisasm",
           "skip_on_arm", "skip_on_wsl2", "skip_if_cuda_includes_missing",
           "skip_if_curand_kernel_missing", "cc_X_or_above", "skip_unless_cc_32",
           "skip_unless_cc_50", "skip_unless_cc_53", "skip_unless_cc_60",
           "skip_unless_cc_75", "skip_unless_cc_80", "skip_unless_cc_90",
           "xfail_unless_cudasim", "cudadevrt_missing", "skip_if_cudadevrt_missing",
           "skip_if_nvjitlink_missing", "skip_if_mvc_enabled", "ForeignArray",
           "captured_cuda_stdout"]

#: the configuration CUDATestCase sets while a test runs
_QUIET = {"CUDA_LOW_OCCUPANCY_WARNINGS": 0, "CUDA_WARN_ON_IMPLICIT_COPY": 0}


class CUDATestCase(TestCase):
    """A test that uses a device: the low-occupancy and implicit-copy warnings are off
    while it runs (set in ``setUp``, restored in ``tearDown``)."""

    FLOAT16_RTOL = np.finfo(np.float16).eps

    def setUp(self):
        self._gpux_config = {name: getattr(config, name) for name in _QUIET}
        for name, value in _QUIET.items():
            setattr(config, name, value)

    def tearDown(self):
        for name, value in getattr(self, "_gpux_config", {}).items():
            setattr(config, name, value)


class ContextResettingTestCase(CUDATestCase):
    """A test after which the device contexts are reset (``cudadrv.devices.reset()``)."""

    def tearDown(self):
        super().tearDown()
        from .cudadrv.devices import reset

        reset()


def _simulating() -> bool:
    return bool(config.ENABLE_CUDASIM)


def skip_on_cudasim(reason: str):
    """Skip where the simulator runs the kernels (never under the facade)."""
    return unittest.skipIf(_simulating(), reason)


def skip_unless_cudasim(reason: str):
    """Skip unless the simulator runs the kernels (always under the facade)."""
    return unittest.skipUnless(_simulating(), reason)


#: numba is installed beside numba-gpux, so no test needs skipping for its absence
skip_on_standalone_numba_cuda = unittest.skipUnless(True, "requires base numba install")


def skip_unless_conda_cudatoolkit(reason: str):
    prefix = os.environ.get("CONDA_PREFIX")
    found = bool(prefix) and any(Path(prefix, sub).exists()
                                 for sub in ("nvvm", "Library/nvvm", "targets"))
    return unittest.skipUnless(found, reason)


def skip_if_external_memmgr(reason: str):
    return unittest.skipIf(config.CUDA_MEMORY_MANAGER != "default", reason)


def skip_under_cuda_memcheck(reason: str):
    return unittest.skipIf(os.environ.get("CUDA_MEMCHECK") is not None, reason)


def skip_without_nvdisasm(reason: str):
    return unittest.skipIf(shutil.which("nvdisasm") is None, reason)


def skip_with_nvdisasm(reason: str):
    return unittest.skipIf(shutil.which("nvdisasm") is not None, reason)


def skip_on_arm(reason: str):
    return unittest.skipIf(platform.machine().lower().startswith(("arm", "aarch64")), reason)


def skip_on_wsl2(reason: str):
    return unittest.skipIf("microsoft-standard" in platform.release().lower(), reason)


def _on_cuda() -> bool:
    from ..devices import default_device

    dev = default_device()
    return dev is not None and dev.target.name == "cuda"


def _cuda_header(name: str) -> bool:
    """Whether CUDA C that includes *name* can be compiled and linked here: only on
    the CUDA target, where the folders its CUDA C linker searches hold it."""
    if not _on_cuda():
        return False
    from ..targets.cuda.linker import include_dirs

    return any(os.path.exists(os.path.join(d, name)) for d in include_dirs(""))


def skip_if_cuda_includes_missing(fn):
    return unittest.skipUnless(_cuda_header("cuda.h"), "CUDA includes not available")(fn)


def skip_if_curand_kernel_missing(fn):
    return unittest.skipUnless(_cuda_header("curand_kernel.h"),
                               "curand_kernel.h not available")(fn)


def cc_X_or_above(major: int, minor: int) -> bool:
    """Whether the current device's compute capability is (*major*, *minor*) or more."""
    if _simulating():
        return True
    from . import get_current_device

    return tuple(get_current_device().compute_capability) >= (major, minor)


def _cc_at_least(major: int, minor: int):
    def skip(fn):
        return unittest.skipUnless(cc_X_or_above(major, minor),
                                   f"requires cc >= {major}.{minor}")(fn)
    skip.__name__ = f"skip_unless_cc_{major}{minor}"
    return skip


skip_unless_cc_32 = _cc_at_least(3, 2)
skip_unless_cc_50 = _cc_at_least(5, 0)
skip_unless_cc_53 = _cc_at_least(5, 3)
skip_unless_cc_60 = _cc_at_least(6, 0)
skip_unless_cc_75 = _cc_at_least(7, 5)
skip_unless_cc_80 = _cc_at_least(8, 0)
skip_unless_cc_90 = _cc_at_least(9, 0)


def xfail_unless_cudasim(fn):
    """A test expected to fail outside the simulator (always under the facade)."""
    return fn if _simulating() else unittest.expectedFailure(fn)


def cudadevrt_missing() -> bool:
    """numba.cuda links its device runtime library (cudadevrt) for grid
    synchronization; the facade needs none, so it is never missing."""
    return False


def skip_if_cudadevrt_missing(fn):
    return unittest.skipIf(cudadevrt_missing(), "cudadevrt missing")(fn)


def skip_if_nvjitlink_missing(reason: str):
    from .cudadrv.driver import _have_nvjitlink

    return unittest.skipUnless(_have_nvjitlink(), reason)


def skip_if_mvc_enabled(reason: str):
    return unittest.skipIf(bool(getattr(config, "CUDA_ENABLE_MINOR_VERSION_COMPATIBILITY", 0)),
                           reason)


class ForeignArray:
    """A device array seen only through ``__cuda_array_interface__``, as an array of
    another library is (on targets whose arrays have the interface)."""

    def __init__(self, arr):
        self._arr = arr
        self.__cuda_array_interface__ = arr.__cuda_array_interface__


class _Captured:
    def __init__(self):
        self._text = ""

    def getvalue(self) -> str:
        return self._text


@contextlib.contextmanager
def captured_cuda_stdout():
    """What kernels launched inside the ``with`` print (and the process writes to its
    standard output meanwhile): drivers write it to file descriptor 1, so that is
    redirected to a file until the device has finished; ``.getvalue()`` after."""
    import sys

    from . import synchronize

    out = _Captured()
    sys.stdout.flush()
    saved = os.dup(1)
    with tempfile.TemporaryFile(mode="w+b") as f:
        os.dup2(f.fileno(), 1)
        try:
            yield out
            synchronize()
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
        f.seek(0)
        out._text = f.read().decode(errors="replace")
