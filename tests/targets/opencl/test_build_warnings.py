"""Program builds keep pyopencl's warning about a non-empty driver log to themselves, also
when threads build programs at the same time."""

import threading
import warnings

import numpy as np
import pytest

import numba_gpux as gpux


def _kernel(c):
    @gpux.jit
    def add_c(a):
        i = gpux.grid(1)
        if i < a.size:
            a[i] += c

    return add_c


def test_threads_building_programs_at_once_let_no_compiler_warning_out(opencl_device):
    cl = pytest.importorskip("pyopencl")
    kernels = [_kernel(float(c)) for c in range(6)]
    start = threading.Barrier(len(kernels))
    errors: list = []

    def work(k, c):
        try:
            a = gpux.to_device(np.zeros(100), device=opencl_device)
            start.wait()
            k[4, 32, opencl_device](a)
            if not (a.copy_to_host() == c).all():
                errors.append(c)
        except Exception as e:  # reported below
            errors.append(e)

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        threads = [threading.Thread(target=work, args=(k, float(c)))
                   for c, k in enumerate(kernels)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        after = list(warnings.filters)
    assert not errors
    assert not [w for w in seen if issubclass(w.category, cl.CompilerWarning)]
    # and no filter of a build is left behind
    assert not any(f[2] is cl.CompilerWarning for f in after)
