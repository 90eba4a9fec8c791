"""Cache-hinted loads and stores (``gpux.cache_hints``, numba.cuda's ``cuda.ldca`` & co.):
the same results as plain indexing on every device, for every hint and element width;
PTX's cache operators in the CUDA target's code, which ptxas accepts; typing errors
that name the problem."""

from __future__ import annotations

import numpy as np
import pytest
from numba import types
from numba.core.errors import TypingError

import numba_gpux as gpux
from numba_gpux import cuda
from numba_gpux.language.intrinsics import LOAD_HINTS, STORE_HINTS

H = gpux.cache_hints
LOADS = [getattr(H, f"ld{h}") for h in LOAD_HINTS]
STORES = [getattr(H, f"st{h}") for h in STORE_HINTS]
DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          pytest.param(np.float16, marks=pytest.mark.needs("fp16")), np.float32,
          pytest.param(np.float64, marks=pytest.mark.needs("fp64"))]


def _kernels(ld, st):
    @gpux.jit
    def copy_1d(out, x):
        i = gpux.grid(1)
        if i < x.size:
            st(out, i, ld(x, i) + ld(x, x.size - 1 - i))

    @gpux.jit
    def copy_2d(out, x):
        i, j = gpux.grid(2)
        if i < x.shape[0] and j < x.shape[1]:
            st(out, (i, j), ld(x, (i, j)))

    return copy_1d, copy_2d


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_hint_gives_plain_results(device, dtype):
    x = (np.arange(40) % 50).astype(dtype)
    x2 = np.arange(24).reshape(4, 6).astype(dtype)
    for ld, st in zip(LOADS, STORES + STORES[:1]):
        copy_1d, copy_2d = _kernels(ld, st)
        out = gpux.device_array(x.shape, dtype)
        copy_1d[2, 32](out, gpux.to_device(x))
        np.testing.assert_array_equal(out.copy_to_host(), (x + x[::-1]).astype(dtype))
        out2 = gpux.device_array(x2.shape, dtype)
        copy_2d[(1, 1), (4, 8)](out2, gpux.to_device(x2))
        np.testing.assert_array_equal(out2.copy_to_host(), x2)


def test_store_converts_the_value(device):
    @gpux.jit
    def fill(out, v):
        i = gpux.grid(1)
        if i < out.size:
            H.stcs(out, i, v * i)

    out = gpux.device_array(8, np.int32)
    fill[1, 8](out, 3)
    np.testing.assert_array_equal(out.copy_to_host(), 3 * np.arange(8))


_WIDTHS = {8: "int8", 16: "float16", 32: "float32", 64: "int64"}


@pytest.mark.parametrize("bits", sorted(_WIDTHS))
def test_ptx_has_the_cache_operators(bits, ptxas):
    from numba_gpux.targets.cuda import toolkit

    dt = getattr(types, _WIDTHS[bits])
    for ld, hint in zip(LOADS, LOAD_HINTS):
        for st, shint in zip(STORES, STORE_HINTS):
            def k(out, x):
                i = gpux.grid(1)
                if i < x.size:
                    st(out, i, ld(x, i))

            ptx = gpux.compile(k, (dt[::1], dt[::1]), target="cuda", cubin=False).text
            assert f"ld.global.{hint}.b{bits} " in ptx
            assert f"st.global.{shint}.b{bits} " in ptx
    ok, messages = toolkit.ptxas_check(ptx, (9, 0))
    assert ok, messages


def test_pointer_argument_and_what_the_optimizer_may_merge():
    """A hinted load only reads memory: two of the same address merge into one, as plain
    loads do; ``ldcv`` (fetch again) is never merged."""
    def twice(ld):
        def f(p, out, n):
            for i in range(n):
                out[i] = ld(p, i) + ld(p, i)
        return f

    sig = (types.CPointer(types.int16), types.int16[::1], types.intp)
    cs = cuda.compile_ptx(twice(cuda.ldcs), sig)[0].count("ld.global.cs.b16")
    cv = cuda.compile_ptx(twice(cuda.ldcv), sig)[0].count("ld.global.cv.b16")
    assert cs >= 1 and cv == 2 * cs


@pytest.mark.parametrize("body, sig, message", [
    ("cuda.ldcs(x, 1.0)", (types.float32[::1],), "float64 is not a valid index"),
    ("cuda.ldcs(x, (1, 2))", (types.float32[::1],), "Expected 1 indices, got 2"),
    ("cuda.ldcs(x, 1)", (types.float32[:, ::1],), "Expected 2 indices, got a scalar"),
    ("cuda.ldcs(x, (1,))", (types.float32[:, ::1],), "Expected 2 indices, got 1"),
    ("cuda.ldcs(x, 0)", (types.complex64[::1],), "ldcs requires array of integer or float type"),
    ("cuda.ldca(x, 0)", (types.boolean[::1],), "ldca requires array of integer or float type"),
    ("cuda.stcg(x, 0, 1)", (types.Array(types.int32, 1, "C", readonly=True),), "read-only"),
    ("cuda.stcg(x, 0)", (types.int32[::1],), "takes 3 positional arguments"),
])
def test_typing_errors(body, sig, message):
    ns = {"cuda": cuda}
    exec(f"def f(x):\n    {body}\n", ns)
    with pytest.raises(TypingError, match=message):
        cuda.compile_ptx(ns["f"], sig)
