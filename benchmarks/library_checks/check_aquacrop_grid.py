"""aquacrop-grid's GPU engine (numba.cuda, one ~2,000-line device-function program per
pixel) against its own CPU engine (numba.njit) on the same synthetic inputs.

aquacrop-grid ships no GPU tests; its ``engine.run.run_grid_arrays(backend=...)`` runs
the same kernel source on either backend, so the CPU engine is the reference. Run with
``numba.cuda`` played by numba_gpux.cuda (the import alias,
``python -m numba_gpux.alias``) and aquacrop-grid, aquacrop, pandas and xarray importable:

    PYTHONPATH=DEPS:SRC python -m numba_gpux.alias benchmarks/library_checks/check_aquacrop_grid.py [NPIX] [DAYS]

Prints the largest difference of each output and exits 1 if any exceeds 1e-9.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def main(npix: int = 16, days: int = 120) -> int:
    from numba import cuda

    from aquacrop_grid.bench import _inputs
    from aquacrop_grid.engine.run import run_grid_arrays

    print("numba.cuda is", cuda.__name__, "; device:", cuda.get_current_device().name)
    kw = _inputs(npix, days)
    t0 = time.perf_counter()
    cpu = run_grid_arrays(backend="cpu", save_daily=True, **kw)
    t1 = time.perf_counter()
    gpu = run_grid_arrays(backend="gpu", save_daily=True, **kw)
    t2 = time.perf_counter()
    print(f"{npix} pixels x {days} days: CPU engine {t1 - t0:.1f} s, GPU engine {t2 - t1:.1f} s "
          f"(both including compilation)")
    ok = True
    for name, a, g in (("final", cpu[0], gpu[0]), ("daily", cpu[1], gpu[1])):
        a, g = np.asarray(a), np.asarray(g)
        same_nan = bool((np.isnan(a) == np.isnan(g)).all())
        diff = float(np.nanmax(np.abs(a - g))) if a.size else 0.0
        good = same_nan and diff <= 1e-9
        ok &= good
        print(f"{name} {a.shape}: max |cpu - gpu| = {diff:.3g}, NaNs alike: {same_nan}"
              f" -> {'ok' if good else 'DIFFERENT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(*map(int, sys.argv[1:3])))
