"""Every kernel the algorithms launch, under the hook values a CUDA GPU gets, assembles
for CUDA: the algorithms run here on the OpenCL device with those values (tree and
sub-group reduces, blocked and look-back scans, the GPU radix sort's sizes), then each
kernel they compiled, for each signature it was launched with, goes through ptxas.
The GPU machine runs them (benchmarks/gpu_check.sh); this is what can be checked
without one."""

from __future__ import annotations

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import algorithms as alg
from numba_gpux import hooks

#: the hook values a CUDA GPU takes by default (algorithms/_tuning.py), one set per
#: variant of reduce and scan
_GPU = {"algorithms.block_size": 256, "algorithms.items_per_thread": 4,
        "algorithms.sort_items_per_thread": 1024, "algorithms.radix_bits": 4,
        "algorithms.sort_block_size": 256, "algorithms.reduce_groups": 64,
        "algorithms.map_items_per_thread": 4, "algorithms.map_block_size": 256,
        "algorithms.axis_lanes": 32, "algorithms.axis_lines": 4,
        "algorithms.axis_work_items": 2048 * 16}
_VARIANTS = ({"algorithms.reduce_variant": "tree", "algorithms.scan_variant": "blocked"},
             {"algorithms.reduce_variant": "subgroup", "algorithms.scan_variant": "lookback"})


@gpux.jit(device=True)
def _absmax(a, b):
    return max(abs(a), abs(b))


@gpux.jit(device=True)
def _affine(a):
    return a * 2 + 1


def _kernel_sources():
    """The algorithm modules' kernel factories (``kernel_cache``) and the kernels they
    define themselves."""
    from numba_gpux.algorithms import (
        _common, elementwise, reduction, scan_lookback, scanning, sorting,
    )
    from numba_gpux.dispatcher import GpuxFunction

    caches, kernels = [], []
    for mod in (elementwise, reduction, scan_lookback, scanning, sorting):
        for v in vars(mod).values():
            if isinstance(v, _common.kernel_cache):
                caches.append(v)
            elif isinstance(v, GpuxFunction) and not v.is_device:
                kernels.append(v)
    return caches, kernels


@pytest.mark.ptxas
def test_every_algorithm_kernel_assembles_for_cuda(opencl_device, rng, ptxas, monkeypatch):
    from numba_gpux.targets.cuda import toolkit

    cc = (8, 0)
    if not toolkit.ptxas_supports(cc):
        pytest.skip("no installed ptxas assembles sm_80")
    caches, defined = _kernel_sources()
    for cache in caches:  # the factories make new kernels: those this test launches
        monkeypatch.setattr(cache, "_made", {})
    for variant in _VARIANTS:
        with hooks.trial({**_GPU, **variant}):
            for dt in (np.float32, np.int64):
                x = rng.integers(-100, 100, 5000).astype(dt)  # (sums exact in float32)
                d = gpux.to_device(x)
                np.testing.assert_allclose(alg.map(_affine, d).copy_to_host(), x * 2 + 1)
                assert alg.reduce(d, "max") == x.max()
                assert alg.reduce(d, _absmax) == np.abs(x).max()
                np.testing.assert_array_equal(alg.scan(d).copy_to_host(), np.cumsum(x))
                np.testing.assert_array_equal(alg.scan(d, exclusive=True, init=dt(0))
                                              .copy_to_host()[1:], np.cumsum(x)[:-1])
                np.testing.assert_array_equal(alg.sort(d).copy_to_host(), np.sort(x))
                np.testing.assert_array_equal(alg.argsort(d).copy_to_host(),
                                              np.argsort(x, kind="stable"))
                m = gpux.to_device(x[:4800].reshape(60, 80))
                for axis in (0, 1):
                    np.testing.assert_array_equal(alg.reduce(m, axis=axis).copy_to_host(),
                                                  x[:4800].reshape(60, 80).sum(axis=axis))
    made = [k for cache in caches for k in cache._made.values()]
    kernels = [(k, argtypes) for k in made + defined for argtypes, _dev, _strides in k._shims]
    names = {k.__name__ for k, _ in kernels}
    for want in ("reduce_partial", "reduce_sg_partial", "scan_block", "reduce_axis"):
        assert any(want in n for n in names), (want, sorted(names))
    for k, argtypes in kernels:
        text = gpux.compile(k, argtypes, target="cuda", cc=cc, cubin=False).text
        ok, messages = toolkit.ptxas_check(text, cc)
        assert ok, f"ptxas rejected {k.__name__}{argtypes}:\n{messages}"
