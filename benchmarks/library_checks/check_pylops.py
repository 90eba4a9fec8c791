"""PyLops' numba.cuda engines against its NumPy and numba CPU engines, on NumPy arrays.

PyLops (git master; 2.x) has ``engine="cuda"`` for NonStationaryConvolve2D/3D, Kirchhoff
and FourierRadon2D/3D, written with ``numba.cuda`` (2-D and 3-D grids, ``cuda.atomic.add``
on 2-D indices, complex64 arithmetic, ``cuda.libdevice.sincosf``). Its own tests take that
engine only with CuPy arrays; numba.cuda also takes NumPy arrays (copied to the device and
back), which is what this check does. The Fourier Radon modules import CuPy for three
scalar constants (``cp.float32``, ``cp.complex64``: CuPy's names for NumPy's scalar types),
so they are loaded from their files with NumPy's types under those names; everything
else is PyLops as it is. SRC is a PyLops checkout (or unpacked sdist) whose package
imports (NumPy and SciPy installed):

    python -m numba_gpux.alias benchmarks/library_checks/check_pylops.py SRC

Prints the largest relative difference of each result and exits 1 if one is off.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import types
import warnings

import numpy as np
from _report import report


def _rel(a, b) -> float:
    return float(np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-300))


def _load_with_numpy_scalars(src: str, name: str):
    shim = types.ModuleType("cupy")
    shim.float32, shim.complex64 = np.float32, np.complex64
    saved = sys.modules.get("cupy")
    sys.modules["cupy"] = shim
    try:
        path = os.path.join(src, "pylops", "signalprocessing", f"{name}.py")
        spec = importlib.util.spec_from_file_location(f"pylops_check_{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if saved is None:
            del sys.modules["cupy"]
        else:
            sys.modules["cupy"] = saved
    return module


def _nonstationary(checks, rng):
    from pylops.signalprocessing import NonStationaryConvolve2D, NonStationaryConvolve3D

    nx, nz = 61, 47
    hs = rng.standard_normal((3, 2, 5, 7))
    ops = [NonStationaryConvolve2D(dims=(nx, nz), hs=hs, ihx=(15, 30, 45), ihz=(11, 35),
                                   engine=e, dtype="float64") for e in ("numpy", "cuda")]
    x = rng.standard_normal(nx * nz)
    checks.append(("NonStationaryConvolve2D matvec", _rel(ops[1] @ x, ops[0] @ x), 1e-12))
    checks.append(("NonStationaryConvolve2D rmatvec", _rel(ops[1].H @ x, ops[0].H @ x), 1e-12))
    ny, nx, nz = 13, 17, 19
    hs = rng.standard_normal((2, 2, 2, 3, 3, 5))
    ops = [NonStationaryConvolve3D(dims=(ny, nx, nz), hs=hs, ihy=(4, 8), ihx=(5, 11),
                                   ihz=(6, 12), engine=e, dtype="float64")
           for e in ("numba", "cuda")]
    x = rng.standard_normal(ny * nx * nz)
    checks.append(("NonStationaryConvolve3D matvec", _rel(ops[1] @ x, ops[0] @ x), 1e-12))
    checks.append(("NonStationaryConvolve3D rmatvec", _rel(ops[1].H @ x, ops[0].H @ x), 1e-12))


def _kirchhoff(checks, rng):
    from pylops.waveeqprocessing.kirchhoff import Kirchhoff

    nx, nz, nt, dt = 41, 31, 101, 2.0**-8
    x, z, t = np.arange(nx) * 10.0, np.arange(nz) * 10.0, np.arange(nt) * dt
    # The cuda engine passes dt and the apertures as float32 (PyLops' choice), where the
    # others keep float64: dt and the offset apertures are exact in float32 here, and
    # no image point lies straight below a source or receiver (angle pi/2)
    srcs = np.vstack((np.linspace(3, 403, 5), 5 * np.ones(5)))
    recs = np.vstack((np.linspace(3, 403, 11), 5 * np.ones(11)))
    wav = np.exp(-((np.arange(21) - 10) * 0.3) ** 2)
    for dynamic in (False, True):
        ops = [Kirchhoff(z, x, t, srcs, recs, 2000.0, wav, 10, mode="analytic",
                         dynamic=dynamic, aperture=(4.0, 6.0), angleaperture=(50.0, 70.0),
                         engine=e, dtype="float64")
               for e in ("numpy", "cuda")]
        m = rng.standard_normal(nx * nz)
        d = rng.standard_normal(ops[0].shape[0])
        label = "Kirchhoff dynamic" if dynamic else "Kirchhoff"
        checks.append((f"{label} matvec", _rel(ops[1] @ m, ops[0] @ m), 1e-12))
        checks.append((f"{label} rmatvec", _rel(ops[1].H @ d, ops[0].H @ d), 1e-12))


def _fourier_radon(src, checks, rng):
    from pylops.signalprocessing import _fourierradon2d_numba as n2
    from pylops.signalprocessing import _fourierradon3d_numba as n3

    c2 = _load_with_numpy_scalars(src, "_fourierradon2d_cuda")
    c3 = _load_with_numpy_scalars(src, "_fourierradon3d_cuda")
    nt = 64
    nf = nt // 2 + 1
    flim0, flim1 = 2, nf - 3
    cols = slice(flim0, flim1)  # numba's loops stop before flim1, the kernels include it
    f = np.fft.rfftfreq(nt, 0.004).astype(np.float32)

    def cplx(shape, dt):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)

    for dt in (np.complex64, np.complex128):
        nh, npx = 37, 23
        px = np.linspace(-1e-3, 1e-3, npx).astype(np.float32)
        h = np.arange(nh, dtype=np.float32) * 10
        blocks = ((nh + 15) // 16, (nf + 15) // 16)
        x = cplx((npx, nf), dt)
        want = np.zeros((nh, nf), dt)
        n2._radon_inner_2d(x, want, f, px, h, flim0, flim1, npx, nh)
        got = c2._radon_inner_2d_cuda(x, np.zeros((nh, nf), dt), f, px, h, flim0, flim1,
                                      npx, nh, num_blocks=blocks,
                                      num_threads_per_blocks=(16, 16))
        checks.append((f"FourierRadon2D {dt.__name__}", _rel(got[:, cols], want[:, cols]), 1e-4))
        y = cplx((nh, nf), dt)
        want = np.zeros((npx, nf), dt)
        n2._aradon_inner_2d(want, y, f, px, h, flim0, flim1, npx, nh)
        got = c2._aradon_inner_2d_cuda(np.zeros((npx, nf), dt), y, f, px, h, flim0, flim1,
                                       npx, nh, num_blocks=blocks,
                                       num_threads_per_blocks=(16, 16))
        checks.append((f"FourierRadon2D adjoint {dt.__name__}",
                       _rel(got[:, cols], want[:, cols]), 1e-4))

        nhy, nhx, npy, npx = 7, 9, 5, 6
        py = np.linspace(-1e-3, 1e-3, npy).astype(np.float32)
        px = np.linspace(-1e-3, 1e-3, npx).astype(np.float32)
        hy = np.arange(nhy, dtype=np.float32) * 10
        hx = np.arange(nhx, dtype=np.float32) * 12
        launch = {"num_blocks": (2, 2, (nf + 7) // 8), "num_threads_per_blocks": (4, 8, 8)}
        args = (f, py, px, hy, hx, flim0, flim1, npy, npx, nhy, nhx)
        x = cplx((npy, npx, nf), dt)
        want = np.zeros((nhy, nhx, nf), dt)
        n3._radon_inner_3d(x, want, *args)
        got = c3._radon_inner_3d_cuda(x, np.zeros((nhy, nhx, nf), dt), *args, **launch)
        checks.append((f"FourierRadon3D {dt.__name__}", _rel(got[..., cols], want[..., cols]),
                       1e-4))
        y = cplx((nhy, nhx, nf), dt)
        want = np.zeros((npy, npx, nf), dt)
        n3._aradon_inner_3d(want, y, *args)
        got = c3._aradon_inner_3d_cuda(np.zeros((npy, npx, nf), dt), y, *args, **launch)
        checks.append((f"FourierRadon3D adjoint {dt.__name__}",
                       _rel(got[..., cols], want[..., cols]), 1e-4))


def main(src: str) -> int:
    sys.path.insert(0, src)
    warnings.simplefilter("ignore")  # numba.cuda's host-array and occupancy warnings
    from numba import cuda

    print("numba.cuda is", cuda.__name__, "; device:", cuda.get_current_device().name)
    rng = np.random.default_rng(0)
    checks: list = []
    _nonstationary(checks, rng)
    _kirchhoff(checks, rng)
    _fourier_radon(src, checks, rng)
    return report(checks)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
