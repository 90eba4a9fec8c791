"""frbb 1.0.0 (FastRealBoostBins, a boosting classifier): its ``numba_cuda`` fit and
decision function against its ``numba_jit`` ones (CPU) on the same data.

frbb ships no tests. Its CUDA fit runs five kernels per boosting round on several
streams, with per-feature spin locks (``cuda.atomic.compare_and_swap`` loops) and
shared arrays sized for CUDA's 1024-thread blocks. Run with ``numba.cuda`` played by
numba_gpux.cuda (the import alias, ``python -m numba_gpux.alias``), frbb's module and
scikit-learn importable:

    PYTHONPATH=DEPS python -m numba_gpux.alias benchmarks/library_checks/check_frbb.py SRC

SRC is the unpacked wheel (the folder holding frbb.py). Prints, per combination of fit
and decision modes, the largest difference of the decision values from the CPU ones
and exits 1 if one exceeds 1e-4 (float32 sums in another order differ by about 1e-6).
"""

from __future__ import annotations

import sys
import time

import numpy as np


def main(src: str) -> int:
    sys.path.insert(0, src)
    from frbb import FastRealBoostBins

    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 20)).astype(np.float32)
    y = np.where(X[:, 0] + 0.5 * X[:, 1] ** 2 - X[:, 2] * X[:, 3] > 0.3, 1, -1)
    modes = [("numba_jit", "numba_jit"), ("numba_cuda", "numba_cuda"),
             ("numba_cuda", "numba_jit"), ("numba_jit", "numba_cuda")]
    out = {}
    for fit_mode, dec_mode in modes:
        clf = FastRealBoostBins(T=32, B=8, fit_mode=fit_mode, decision_function_mode=dec_mode)
        t0 = time.perf_counter()
        clf.fit(X, y)
        d = clf.decision_function(X)
        out[fit_mode, dec_mode] = d
        print(f"fit {fit_mode}, decision {dec_mode}: {time.perf_counter() - t0:.2f} s, "
              f"training accuracy {np.mean(np.sign(d) == y):.4f}")
    ref = out[modes[0]]
    ok = True
    for key, d in out.items():
        diff = float(np.max(np.abs(d - ref)))
        ok &= diff <= 1e-4
        print(f"{key}: max |decision - CPU decision| = {diff:.3g} -> "
              f"{'ok' if diff <= 1e-4 else 'DIFFERENT'}")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
