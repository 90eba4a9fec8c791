"""geofast's numba.cuda kernels (``geofast/cuda_kernels.py``: haversine distances, a
distance matrix, hexagon keys) against NumPy formulas of the same computations.

geofast ships no tests in its wheel. The module is loaded from its file, so the rest of
the package (and its dependencies, shapely & co.) need not be installed. Run with
``numba.cuda`` played by numba_gpux.cuda (the import alias, ``python -m numba_gpux.alias``),
SRC being the unpacked wheel:

    python -m numba_gpux.alias benchmarks/library_checks/check_geofast.py SRC

Prints the largest difference of each result and exits 1 if one is off.
"""

from __future__ import annotations

import math
import sys

import numpy as np
from _report import report


def _haversine(lat1, lon1, lat2, lon2, radius=3959.0):
    lat1, lon1, lat2, lon2 = map(np.radians, (lat1, lon1, lat2, lon2))
    h = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    return 2 * radius * np.arcsin(np.sqrt(h))


def _hex_keys(lats, lons, size_lat, size_lon):
    x, y = lons / size_lon, lats / size_lat
    q = (2 / 3) * x
    r = (-1 / 3) * x + (math.sqrt(3) / 3) * y
    s = -q - r
    rq, rr, rs = np.round(q), np.round(r), np.round(s)
    dq, dr, ds = abs(rq - q), abs(rr - r), abs(rs - s)
    fix_q = (dq > dr) & (dq > ds)
    fix_r = ~fix_q & (dr > ds)
    return np.where(fix_q, -rr - rs, rq), np.where(fix_r, -rq - rs, rr)


def main(src: str) -> int:
    import importlib.util
    import os

    path = os.path.join(src, "geofast", "cuda_kernels.py")
    spec = importlib.util.spec_from_file_location("geofast_cuda_kernels", path)
    ck = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ck)

    print("numba.cuda available to geofast:", ck.NUMBA_CUDA_AVAILABLE, ck.get_gpu_info())
    rng = np.random.default_rng(0)
    lat1, lon1, lat2, lon2 = (rng.uniform(-80, 80, 5000) for _ in range(4))
    checks = []
    d = ck.haversine_gpu(lat1, lon1, lat2, lon2)
    checks.append(("haversine", float(np.abs(d - _haversine(lat1, lon1, lat2, lon2)).max()), 1e-8))
    m = ck.haversine_matrix_gpu(lat1[:300], lon1[:300], lat2[:200], lon2[:200])
    ref = _haversine(lat1[:300, None], lon1[:300, None], lat2[None, :200], lon2[None, :200])
    checks.append(("haversine matrix", float(np.abs(m - ref).max()), 1e-8))
    q, r = ck.hex_keys_gpu(lat1, lon1, 0.01, 0.01)
    eq, er = _hex_keys(lat1, lon1, 0.01, 0.01)
    checks.append(("hex keys (mismatches)", float((q != eq).sum() + (r != er).sum()), 0))
    return report(checks)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
