"""xoroshiro128+ random numbers in kernels: exact sequences against numba.cuda.random's
host reference, and statistical checks (mean, variance, Kolmogorov-Smirnov, independence
between streams) with fixed seeds."""

from __future__ import annotations

import math
import pathlib

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux.random import (
    create_xoroshiro128p_states, xoroshiro128p_dtype, xoroshiro128p_next,
    xoroshiro128p_normal_float32, xoroshiro128p_normal_float64, xoroshiro128p_uniform_float32,
    xoroshiro128p_uniform_float64,
)

#: the quick subset that .ci/run also runs on the other CPythons
pytestmark = pytest.mark.quick

NSTATES, DRAWS = 256, 200


@gpux.jit
def draw_raw(states, out):
    i = gpux.grid(1)
    if i < out.shape[0]:
        for j in range(out.shape[1]):
            out[i, j] = xoroshiro128p_next(states, i)


@gpux.jit
def draw_uniform32(states, out):
    i = gpux.grid(1)
    if i < out.shape[0]:
        for j in range(out.shape[1]):
            out[i, j] = xoroshiro128p_uniform_float32(states, i)


@gpux.jit
def draw_uniform64(states, out):
    i = gpux.grid(1)
    if i < out.shape[0]:
        for j in range(out.shape[1]):
            out[i, j] = xoroshiro128p_uniform_float64(states, i)


@gpux.jit
def draw_normal32(states, out):
    i = gpux.grid(1)
    if i < out.shape[0]:
        for j in range(out.shape[1]):
            out[i, j] = xoroshiro128p_normal_float32(states, i)


@gpux.jit
def draw_normal64(states, out):
    i = gpux.grid(1)
    if i < out.shape[0]:
        for j in range(out.shape[1]):
            out[i, j] = xoroshiro128p_normal_float64(states, i)


REC = "Record(s0[type=uint64;offset=0],s1[type=uint64;offset=8];16;True)"
CONFORMANCE_KERNELS = [
    (draw_raw, "void(uint64[:, ::1], uint64[:, ::1])"),
    (draw_uniform32, "void(uint64[:, ::1], float32[:, ::1])"),
    (draw_normal64, "void(uint64[:, ::1], float64[:, ::1])"),
]


def _reference_next(states: np.ndarray, draws: int) -> np.ndarray:
    """xoroshiro128+ on the host in Python integers (the published algorithm)."""
    m = (1 << 64) - 1
    out = np.zeros((len(states), draws), np.uint64)
    for i, (s0, s1) in enumerate(states.tolist()):
        for j in range(draws):
            out[i, j] = (s0 + s1) & m
            s1 ^= s0
            s0 = (((s0 << 55) | (s0 >> 9)) & m) ^ s1 ^ ((s1 << 14) & m)
            s1 = ((s1 << 36) | (s1 >> 28)) & m
    return out


def _run(kernel, dtype, states=None, seed=1234):
    states = states if states is not None else create_xoroshiro128p_states(NSTATES, seed)
    out = gpux.to_device(np.zeros((NSTATES, DRAWS), dtype))
    kernel[NSTATES // 64, 64](states, out)
    return out.copy_to_host()


def _ks(sample, cdf) -> float:
    x = np.sort(sample.ravel())
    n = len(x)
    f = cdf(x)
    return max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n))


def test_states_match_numba_cuda_reference():
    pytest.importorskip("numba.cuda.random")
    from numba.cuda.random import init_xoroshiro128p_states_cpu

    ref = np.empty(8, xoroshiro128p_dtype)
    init_xoroshiro128p_states_cpu(ref, 99, 2)
    from numba_gpux.random import _host_states

    np.testing.assert_array_equal(_host_states(8, 99, 2), ref)


@pytest.mark.parametrize("layout", ["records", "pairs"])
def test_next_is_exact(device, layout):
    states = create_xoroshiro128p_states(NSTATES, 2024)
    host = states.copy_to_host()
    pairs = np.stack([host["s0"], host["s1"]], 1)
    arg = states if layout == "records" else gpux.to_device(pairs)
    got = _run(draw_raw, np.uint64, arg)
    np.testing.assert_array_equal(got, _reference_next(pairs, DRAWS))
    # the states advanced on the device exactly as the reference did
    after = arg.copy_to_host()
    after_pairs = np.stack([after["s0"], after["s1"]], 1) if layout == "records" else after
    cont = _reference_next(after_pairs, 1)[:, 0]
    np.testing.assert_array_equal(cont, _reference_next(pairs, DRAWS + 1)[:, -1])


@pytest.mark.parametrize("kernel,dtype", [(draw_uniform32, np.float32),
                                          (draw_uniform64, np.float64)],
                         ids=["float32", "float64"])
def test_uniform_statistics(device, kernel, dtype):
    x = _run(kernel, dtype)
    assert x.dtype == dtype
    assert x.min() >= 0 and x.max() < 1
    n = x.size
    # mean and variance within 5 standard errors
    assert abs(x.mean() - 0.5) < 5 * math.sqrt(1 / 12 / n)
    assert abs(x.var() - 1 / 12) < 5 * math.sqrt(1 / 180 / n)
    # Kolmogorov-Smirnov: critical value at alpha = 0.001 is 1.95 / sqrt(n)
    assert _ks(x, lambda v: v) < 1.95 / math.sqrt(n)


@pytest.mark.parametrize("kernel,dtype", [(draw_normal32, np.float32),
                                          (draw_normal64, np.float64)],
                         ids=["float32", "float64"])
def test_normal_statistics(device, kernel, dtype):
    x = _run(kernel, dtype).astype(np.float64)
    assert np.isfinite(x).all()
    n = x.size
    assert abs(x.mean()) < 5 / math.sqrt(n)
    assert abs(x.var() - 1) < 5 * math.sqrt(2 / n)
    cdf = np.vectorize(lambda v: 0.5 * (1 + math.erf(v / math.sqrt(2))))
    assert _ks(x, cdf) < 1.95 / math.sqrt(n)


def test_streams_are_independent(device):
    x = _run(draw_uniform64, np.float64, seed=7)
    # correlation between neighbouring streams and between a stream and its own lag
    c = np.corrcoef(x)  # NSTATES x NSTATES
    off = c[~np.eye(NSTATES, dtype=bool)]
    assert np.abs(off).max() < 6 / math.sqrt(DRAWS)
    assert abs(off.mean()) < 5 / math.sqrt(DRAWS * NSTATES)
    # no two streams start the same
    assert len(np.unique(x[:, 0])) == NSTATES


def test_seeds_and_subsequences_differ(device):
    a = _run(draw_raw, np.uint64, create_xoroshiro128p_states(NSTATES, 1))
    b = _run(draw_raw, np.uint64, create_xoroshiro128p_states(NSTATES, 2))
    assert not np.array_equal(a, b)
    # subsequence_start=1 shifts the streams by one: stream i+1 == shifted stream i
    c = _run(draw_raw, np.uint64, create_xoroshiro128p_states(NSTATES, 1, subsequence_start=1))
    np.testing.assert_array_equal(c[:-1], a[1:])


def test_bad_state_array_is_a_typing_error(device):
    from numba.core.errors import TypingError

    with pytest.raises(TypingError, match="xoroshiro128p"):
        draw_raw[1, 1](gpux.to_device(np.zeros(4, np.float32)),
                       gpux.to_device(np.zeros((1, 1), np.uint64)))


# ------------------------------------------------- numba.cuda's own values (simulator)
_SIM = np.load(pathlib.Path(__file__).parents[1] / "fixtures" / "numba_cuda_reference" / "random.npz")


@pytest.mark.parametrize("kernel, dtype, name, rtol", [
    (draw_uniform32, np.float32, "xoroshiro128p_uniform_float32", 0),
    (draw_uniform64, np.float64, "xoroshiro128p_uniform_float64", 0),
    # the simulator evaluates float32 math in float64: compare to float32's precision
    (draw_normal32, np.float32, "xoroshiro128p_normal_float32", 2e-6),
    # and float32 uniforms in float64 (the simulator's are not rounded to float32)
    (draw_normal64, np.float64, "xoroshiro128p_normal_float64", 1e-6),
])
def test_draws_equal_numba_cuda_simulator(device, kernel, dtype, name, rtol):
    ref = _SIM[name]
    states = create_xoroshiro128p_states(ref.shape[0], seed=7)
    out = gpux.to_device(np.zeros(ref.shape, dtype))
    kernel[1, ref.shape[0]](states, out)
    got = out.copy_to_host()
    if rtol:
        np.testing.assert_allclose(got, ref.astype(dtype), rtol=rtol, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, ref.astype(dtype))


@gpux.jit
def draw_normal32_window(states, index, skip, out):
    if gpux.grid(1) == 0:
        for _ in range(skip):
            xoroshiro128p_normal_float32(states, index)
        for j in range(out.size):
            out[j] = xoroshiro128p_normal_float32(states, index)


def test_normal_float32_has_no_infinity_where_uniform_rounds_to_one(device):
    """Seed 0's state 1340, draw 19752: the float32 uniform is exactly 1.0 there; the
    normal draw is numba.cuda's 0.0, not ``log(1 - 1.0)``'s infinity."""
    ref = _SIM["normal_float32_seed0_state1340_from19740"]
    states = create_xoroshiro128p_states(1341, seed=0)
    out = gpux.to_device(np.zeros(ref.shape, np.float32))
    draw_normal32_window[1, 1](states, 1340, 19740, out)
    got = out.copy_to_host()
    assert np.isfinite(got).all()
    assert got[12] == 0.0
    np.testing.assert_allclose(got, ref, rtol=2e-6, atol=1e-6)


def test_normal_float64_is_box_muller_over_float32_uniforms_as_numba_cuda():
    """numba.cuda's float64 normal draws its two uniforms as float32 (rounded from the
    float64 unit value), takes the logarithm of the first in float32 (Numba types
    ``math.log`` of a float32 as a float32: its compiled code calls logf) and computes
    the rest in float64: the same values here, the logarithm correctly rounded, to
    float64's rounding of sqrt and cos (float64 uniforms gave values up to 6e-5 apart;
    a float64 logarithm, as the simulator takes, about 2e-8)."""
    states = create_xoroshiro128p_states(64, seed=1)
    pairs = states.copy_to_host()
    pairs = np.stack([pairs["s0"], pairs["s1"]], 1)
    out = gpux.to_device(np.zeros((64, 40), np.float64))
    draw_normal64[1, 64](states, out)
    got = out.copy_to_host()
    raw = _reference_next(pairs, 80)
    u = ((raw >> np.uint64(11)).astype(np.float64) * 2.0**-53).astype(np.float32)
    u1, u2 = u[:, 0::2].astype(np.float64), u[:, 1::2].astype(np.float64)
    log_u1 = np.log(u1).astype(np.float32).astype(np.float64)
    want = np.sqrt(-2.0 * log_u1) * np.cos(2 * np.pi * u2)
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-14)
    f64_log = np.sqrt(-2.0 * np.log(u1)) * np.cos(2 * np.pi * u2)
    assert np.mean(np.abs(got - f64_log) > 1e-12 * np.abs(f64_log)) > 0.9


def test_explicit_signatures_name_the_state_type(device):
    """numba.cuda's ``xoroshiro128p_type`` (the Numba type of one state) in an eager
    signature; the draws are those of the same kernel compiled lazily.  The facade
    spells it as numba.cuda does; so does ``cuda.types.grid_group``."""
    from numba import float32, void

    from numba_gpux import cuda
    from numba_gpux.cuda import random as cr
    from numba_gpux.cuda import types as ct

    def draw(states, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = cr.xoroshiro128p_uniform_float32(states, i)

    eager = cuda.jit(void(cr.xoroshiro128p_type[:], float32[:]))(draw)
    lazy = cuda.jit(draw)
    got, want = np.zeros(40, np.float32), np.zeros(40, np.float32)
    eager[2, 32](cr.create_xoroshiro128p_states(40, seed=3), got)
    lazy[2, 32](cr.create_xoroshiro128p_states(40, seed=3), want)
    np.testing.assert_array_equal(got, want)
    assert len(set(got.tolist())) == 40
    assert cr.xoroshiro128p_type.dtype == np.dtype(cr.xoroshiro128p_dtype)
    assert isinstance(ct.grid_group, ct.GridGroup)
