"""A hidden-Markov-model library's numba.cuda EM iteration (``hmmdisc/gpu.py``:
``finp_cuda_em_it``, nine kernels, blocks that reduce in shared memory with barriers in
branches only some threads take) against the same library's CPU iteration
(``hmmdisc/basic.py``: ``finp_em_it``, NumPy and ``numba.njit``).

The library is a source tree from a public repository (the package folder ``hmmdisc``
at the top of SRC), not on PyPI. Its CPU code calls ``np.dot`` in ``numba.njit``
functions, which needs SciPy. Run with ``numba.cuda`` played by numba_gpux.cuda (the
import alias, ``python -m numba_gpux.alias``):

    python -m numba_gpux.alias benchmarks/library_checks/check_hmm.py SRC [STATES] [ITERS]

Prints the largest difference of each parameter after ITERS iterations (default 3, with
3 hidden states and 3 symbols, 20,000 observations in 200 segments) and exits 1 if one
is off by more than 1e-9.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _report import report


def main(src: str, n: int = 3, iters: int = 3) -> int:
    sys.path.insert(0, src)
    from hmmdisc import basic, gpu

    np.random.seed(0)
    t_len, seg = 20000, 100
    true = np.full((n, n), 0.05 / (n - 1))
    np.fill_diagonal(true, 0.95)
    y = basic.sim_fin(t_len, (n, n, np.eye(n)[0], true, true.copy()))
    segments = (t_len - 2) // seg
    start = np.full((n, n), 0.1 / (n - 1))
    np.fill_diagonal(start, 0.9)
    u = np.full((n, segments), 1.0 / n)
    params = (n, n, np.ones(n) / n, start, start.copy(), seg, segments, u, u.copy())
    cpu = params
    t0 = time.perf_counter()
    for _ in range(iters):
        cpu = basic.finp_em_it(y, cpu)
    t1 = time.perf_counter()
    got = gpu.finp_cuda_em_it(y, params, iters=iters)
    t2 = time.perf_counter()
    print(f"CPU iterations {t1 - t0:.2f} s, GPU code {t2 - t1:.2f} s (both with compilation)")
    return report((name, float(np.abs(np.asarray(got[k]) - np.asarray(cpu[k])).max()), 1e-9)
                  for k, name in ((2, "p_0"), (3, "pi"), (4, "B"), (7, "U"), (8, "V")))


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args:
        sys.exit(__doc__)
    sys.exit(main(args[0], *(int(a) for a in args[1:3])))
