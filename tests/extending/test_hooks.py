"""Tuning hooks: lookup rules, type checks, and zero recompilation when they change."""

from __future__ import annotations

import sys
import textwrap

import numba
import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import algorithms, cache, hooks


def test_lookup_most_specific_first():
    hooks.declare("test.lookup", int, "a test hook")
    hooks.implement("test.lookup", fn=lambda q: 1)
    assert gpux.tuning("test.lookup", "opencl") == 1
    assert gpux.tuning("test.lookup", "cuda") == 1
    hooks.implement("test.lookup", target="opencl", fn=lambda q: 2)
    assert gpux.tuning("test.lookup", "opencl") == 2
    assert gpux.tuning("test.lookup", "cuda") == 1

    @hooks.implement("test.lookup", target="cuda")
    def _(q):
        assert q.target == "cuda" and q.device is None and q.kind is None
        return 32 if q.dtype.itemsize == 4 else 16

    assert gpux.tuning("test.lookup", "cuda", np.float32) == 32
    assert gpux.tuning("test.lookup", "cuda", "float64") == 16


def test_lookup_by_device_kind(opencl_device):
    hooks.declare("test.kind", int)
    hooks.implement("test.kind", fn=5)
    assert gpux.tuning("test.kind", opencl_device) == 5
    hooks.implement("test.kind", device_kind=opencl_device.kind, fn=6)     # default for the kind
    assert gpux.tuning("test.kind", opencl_device) == 6
    hooks.implement("test.kind", target="opencl", fn=7)                     # target beats default
    assert gpux.tuning("test.kind", opencl_device) == 7
    hooks.implement("test.kind", target="opencl", device_kind=opencl_device.kind,
                    fn=lambda q: q.limit("max_threads_per_block"))
    assert gpux.tuning("test.kind", opencl_device) == opencl_device.max_threads_per_block
    assert gpux.tuning("test.kind", "opencl") == 7                          # no device: no kind
    assert gpux.tuning("test.kind") == opencl_device.max_threads_per_block  # current device


def test_result_types_are_checked():
    hooks.declare("test.tuple", (int, ...))
    hooks.declare("test.pair", tuple[int, str])
    hooks.declare("test.name", str)
    hooks.implement("test.tuple", fn=lambda q: [1, np.int64(2)])
    assert gpux.tuning("test.tuple", "opencl") == (1, 2)
    hooks.implement("test.pair", fn=lambda q: (3, "x"))
    assert gpux.tuning("test.pair", "opencl") == (3, "x")
    hooks.implement("test.name", fn=lambda q: 3)
    with pytest.raises(hooks.HookError, match=r"test.name.*returned 3.*not a str"):
        gpux.tuning("test.name", "opencl")
    hooks.implement("test.pair", target="cuda", fn=lambda q: (3, 4))
    with pytest.raises(hooks.HookError, match="not a \\(int, str\\)"):
        gpux.tuning("test.pair", "cuda")
    hooks.declare("test.int", int)
    hooks.implement("test.int", fn=lambda q: 2.5)
    with pytest.raises(hooks.HookError, match="not a int"):
        gpux.tuning("test.int", "opencl")
    with pytest.raises(hooks.HookError, match="bool is not an int"):
        hooks.implement("test.int", target="x", fn=True)


def test_a_wrong_result_names_the_registration_that_gave_it(opencl_device):
    hooks.declare("test.where", int)
    hooks.implement("test.where", fn=lambda q: "three")
    with pytest.raises(hooks.HookError, match=r"implementation for default returned 'three'"):
        gpux.tuning("test.where", "opencl")
    kind = opencl_device.kind
    hooks.implement("test.where", target="opencl", device_kind=kind, fn=lambda q: "four")
    with pytest.raises(hooks.HookError,
                       match=rf"implementation for opencl:{kind} returned 'four'"):
        gpux.tuning("test.where", opencl_device)
    with pytest.raises(hooks.HookError, match=r"implementation for default returned 'three'"):
        gpux.tuning("test.where", "cuda")


def test_errors_name_the_problem():
    with pytest.raises(hooks.HookError, match="no hook named 'test.nope'"):
        gpux.tuning("test.nope", "opencl")
    hooks.declare("test.noimpl", int)
    with pytest.raises(hooks.HookError, match="no implementation for target 'cuda'"):
        gpux.tuning("test.noimpl", "cuda")
    with pytest.raises(hooks.HookError, match="already declared with result type int"):
        hooks.declare("test.noimpl", str)
    with pytest.raises(hooks.HookError, match="result type"):
        hooks.declare("test.badtype", 3)
    with pytest.raises(hooks.HookError, match="expected a Device"):
        gpux.tuning("test.noimpl", 42)
    assert hooks.declare("test.noimpl", int) is hooks.get_hook("test.noimpl")


def _compile_state(kernel, argtypes, device):
    sym, text = kernel.kernel_ir(argtypes)
    return (dict(kernel.stats), cache.stats["misses"], set(cache._mem),
            cache.cache_key(text, device.target, kernel.options), device.target.fingerprint)


def test_hooks_cost_zero_recompilations(opencl_device, tmp_path, monkeypatch):
    hooks.declare("test.block", int, "threads per block")
    hooks.declare("test.scale", float, "a scale factor passed as an argument")
    hooks.implement("test.block", fn=lambda q: 32)
    hooks.implement("test.scale", fn=lambda q: 2.0)

    @gpux.jit
    def scale(x, out, s):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = x[i] * s

    x = gpux.to_device(np.arange(100, dtype=np.float32))
    out = gpux.device_array(100, np.float32)

    def run():
        bs = gpux.tuning("test.block", opencl_device, np.float32)
        s = np.float32(gpux.tuning("test.scale", opencl_device, np.float32))
        scale[(100 + bs - 1) // bs, bs](x, out, s)
        return out.copy_to_host()

    np.testing.assert_array_equal(run(), np.arange(100, dtype=np.float32) * 2)
    # and the algorithms library, whose kernels read their hooks the same way
    data = np.arange(1000, dtype=np.int64)
    assert algorithms.reduce(data) == data.sum()
    argtypes = (x._numba_type_, out._numba_type_, numba.typeof(np.float32(0)))
    before = _compile_state(scale, argtypes, opencl_device)
    alg_before = {k: dict(v.stats) for k, v in _algorithm_kernels().items()}

    # register, replace, and import hook implementations
    hooks.implement("test.block", target="opencl", fn=lambda q: 64)
    hooks.implement("test.block", target="opencl", device_kind=opencl_device.kind, fn=16)
    hooks.implement("test.scale", target="opencl", fn=lambda q: 3.0)
    hooks.implement("algorithms.block_size", target="opencl", device_kind=opencl_device.kind,
                    fn=lambda q: 32)
    hooks.implement("algorithms.items_per_thread", target="opencl",
                    device_kind=opencl_device.kind, fn=lambda q: 3)
    (tmp_path / "test_hook_library_xyz.py").write_text(textwrap.dedent("""
        from numba_gpux import hooks
        hooks.declare("test.imported", int)
        hooks.implement("test.imported", target="opencl", fn=lambda q: 8)
        hooks.implement("test.block", target="opencl", fn=lambda q: 128)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    import test_hook_library_xyz  # noqa: F401

    try:
        np.testing.assert_array_equal(run(), np.arange(100, dtype=np.float32) * 3)
        assert algorithms.reduce(data) == data.sum()
        after = _compile_state(scale, argtypes, opencl_device)
        assert after == before  # no compile, no cache miss, same keys and fingerprint
        assert {k: dict(v.stats) for k, v in _algorithm_kernels().items()} == alg_before
    finally:
        sys.modules.pop("test_hook_library_xyz", None)
        # the algorithms' hooks as they were: later tests (autotuning's) tune them
        for name in ("algorithms.block_size", "algorithms.items_per_thread"):
            hooks.get_hook(name).impls.pop(("opencl", opencl_device.kind), None)
        from numba_gpux.algorithms import _tuning

        _tuning.install_defaults()


def _algorithm_kernels():
    from numba_gpux.algorithms import reduction as red

    return {f"partial{i}": k for i, k in enumerate(red._partial._made.values())}
