"""numba's own examples repository (numba/numba-examples): its numba.cuda histogram
(``examples/density_estimation/histogram/gpu.py``: a grid-stride loop, a ``numba.jit``
helper that returns a bin or None, float atomic min/max), Black-Scholes
(``examples/finance/blackscholes/blackscholes_cuda.py``: a device function, a stream)
and zero suppression (``examples/waveforms/zero_suppression/gpu.py``:
``numba.vectorize(target="cuda")`` with signatures without a return type), each
against the repository's NumPy version or NumPy.

SRC is a checkout of the repository. Run with ``numba.cuda`` played by numba_gpux.cuda
(the import alias):

    python -m numba_gpux.alias benchmarks/library_checks/check_numba_examples.py SRC

Prints one line a check and exits 1 if one is off.
"""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np


def _load(path: str, name: str):
    sys.path.insert(0, os.path.dirname(path))
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main(src: str) -> int:
    ex = os.path.join(src, "examples")
    bad = 0
    rng = np.random.default_rng(0)
    hist = _load(os.path.join(ex, "density_estimation", "histogram", "gpu.py"), "nbex_hist")
    for dt in (np.float32, np.float64, np.int32):
        a = (rng.normal(size=100_003) * 100).astype(dt)
        counts, _edges = hist.numba_gpu_histogram(a, 37)
        ok = np.array_equal(counts, np.histogram(a, 37)[0])
        bad += not ok
        print(f"histogram {np.dtype(dt).name}: counts {'equal to' if ok else 'OFF from'} "
              "np.histogram's")
    bs_dir = os.path.join(ex, "finance", "blackscholes")
    ref = _load(os.path.join(bs_dir, "blackscholes.py"), "blackscholes")
    bs = _load(os.path.join(bs_dir, "blackscholes_cuda.py"), "nbex_bs")
    for case in ref.input_generator():
        args = case["input_args"]
        if len(args[0]) > 1_000_000:
            continue
        try:
            ref.validator(args, {}, bs.black_scholes_cuda(*args))
            print(f"black-scholes {case['category'][0]} {case['x']}: within the validator's 1e-5")
        except AssertionError as e:
            bad += 1
            print(f"black-scholes {case['category'][0]} {case['x']}: OFF\n{e}")
    zs = _load(os.path.join(ex, "waveforms", "zero_suppression", "gpu.py"), "nbex_zs")
    for dt in (np.int16, np.float32, np.float64):
        v = (rng.normal(size=1000) * 100).astype(dt)
        got = zs.numba_zero_suppression(v, dt(50))
        # the signatures give no return type: the kernel returns values or 0.0, float64
        ok = got.dtype == np.float64 and np.array_equal(got, np.where(np.abs(v) >= 50, v, 0))
        bad += not ok
        print(f"zero suppression {np.dtype(dt).name}: {'right' if ok else 'OFF'}")
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
