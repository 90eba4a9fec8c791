"""The radix sort's pass plan (passes only over the bits in which keys differ, digits
of at most ``algorithms.radix_bits``) and the chunked scan at every chunk count, each
forced through its hooks, against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import algorithms as alg
from numba_gpux import hooks
from numba_gpux.algorithms.sorting import _pass_shifts

SIZES = [1, 2, 31, 255, 257, 4099, 65535, 65537]


# ---------------------------------------------------------------------- sort

@pytest.mark.parametrize("width,bits,digit,shifts", [
    (0, 8, 1, []),                       # every key equal: no pass
    (1, 11, 1, [0]),
    (11, 11, 11, [0]),
    (12, 11, 6, [0, 6]),                 # two even passes, not 11 + 1
    (32, 11, 11, [0, 11, 22]),
    (64, 11, 11, [0, 11, 22, 33, 44, 55]),
    (64, 8, 8, [0, 8, 16, 24, 32, 40, 48, 56]),
    (17, 4, 4, [0, 4, 8, 12, 16]),
])
def test_pass_plan_covers_every_differing_bit(width, bits, digit, shifts):
    got_digit, got = _pass_shifts(width, bits)
    assert (got_digit, got) == (digit, shifts)
    assert got_digit <= bits
    if width:
        assert got[-1] + got_digit >= width


def _cases(rng, n):
    """Keys that differ in few bits (small ranges far from zero, all equal, one high
    bit) and in all of them."""
    i64 = np.iinfo(np.int64)
    yield rng.integers(-1000, 1000, n).astype(np.int64)
    yield (rng.integers(0, 3, n) + (1 << 62)).astype(np.int64)
    yield np.full(n, -7, np.int32)
    yield rng.choice(np.array([i64.min, i64.max, -1, 0], np.int64), n)
    yield rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    yield (rng.integers(4000000000, 4000000300, n)).astype(np.uint32)
    yield rng.integers(-128, 127, n, endpoint=True).astype(np.int8)
    f = (1.0 + rng.random(n)).astype(np.float32)        # one sign, one exponent
    f[::5] = 1.5
    yield f
    g = rng.standard_normal(n)
    g[::7] = np.nan
    g[1::11] = -0.0
    g[2::13] = -np.inf
    yield g


@pytest.mark.parametrize("bits,ipt,bs", [(11, 65536, 1), (1, 7, 1), (12, 1000, 4),
                                         (8, 64, 256), (4, 16, 64), (11, 300, 2)])
def test_sort_and_argsort_with_forced_pass_shapes(opencl_device, rng, bits, ipt, bs):
    """Every digit width, keys per work-item and work-group size the hooks may give,
    on keys whose differing bits take zero, one, a few and every pass."""
    with hooks.trial({"algorithms.radix_bits": bits, "algorithms.sort_items_per_thread": ipt,
                      "algorithms.sort_block_size": bs}):
        for n in SIZES:
            for x in _cases(rng, n):
                np.testing.assert_array_equal(alg.sort(x), np.sort(x))
                np.testing.assert_array_equal(alg.argsort(x), np.argsort(x, kind="stable"))


def test_sort_rejects_digits_too_wide(opencl_device, rng):
    with hooks.trial({"algorithms.radix_bits": 13}):
        with pytest.raises(hooks.HookError, match="between 1 and 12"):
            alg.sort(rng.integers(0, 1 << 20, 100))


def test_small_range_int64_sort_big(opencl_device, rng):
    x = rng.integers(-5000, 5000, 2**24 + 3).astype(np.int64)
    np.testing.assert_array_equal(alg.sort(x), np.sort(x))
    np.testing.assert_array_equal(alg.argsort(x), np.argsort(x, kind="stable"))


# ---------------------------------------------------------------------- scan

@gpux.jit(device=True)
def latest_nonzero(a, b):   # associative, not commutative: the order must hold
    return b if b != 0 else a


def _latest_nonzero(y):
    """np reference: each prefix folded with latest_nonzero."""
    m = np.maximum.accumulate(np.where(y != 0, np.arange(y.size), 0))
    return y[m]


@pytest.mark.parametrize("chunks", [1, 3, 7, 256, 4096])
def test_chunked_scan_at_every_chunk_count(opencl_device, rng, chunks):
    """The chunked scan (inclusive, exclusive written by its last launch, with and
    without init, an order-sensitive operator) whatever number of chunks the hook
    asks for."""
    with hooks.trial({"algorithms.scan_variant": "chunked", "algorithms.scan_chunks": chunks}):
        for n in SIZES + [1023, 1024, 1025, 2**20 + 1]:
            x = rng.integers(-9, 9, n).astype(np.int64)
            c = np.cumsum(x)
            np.testing.assert_array_equal(alg.scan(x), c)
            np.testing.assert_array_equal(alg.scan(x, init=4), 4 + c)
            np.testing.assert_array_equal(alg.scan(x, exclusive=True),
                                          np.concatenate([[0], c[:-1]]))
            np.testing.assert_array_equal(alg.scan(x, exclusive=True, init=-3),
                                          np.concatenate([[-3], c[:-1] - 3]))
            x32 = x.astype(np.int32)
            np.testing.assert_array_equal(alg.scan(x32), c.astype(np.int32))
            z = np.where(rng.random(n) < 0.8, 0, x)
            np.testing.assert_array_equal(alg.scan(z, latest_nonzero), _latest_nonzero(z))
            y = np.concatenate([[5], z])
            np.testing.assert_array_equal(alg.scan(z, latest_nonzero, exclusive=True, init=5),
                                          _latest_nonzero(y)[:n])
            np.testing.assert_array_equal(alg.scan(z, latest_nonzero, init=5),
                                          _latest_nonzero(y)[1:])
            if n > 4099:
                continue  # (float32 sums of more terms drift from a float64 reference)
            f = rng.standard_normal(n).astype(np.float32)
            np.testing.assert_allclose(alg.scan(f, exclusive=True),
                                       np.concatenate([[0], np.cumsum(f[:-1], dtype=np.float64)]),
                                       rtol=1e-4, atol=1e-3)


def test_reduce_reads_its_values_in_place_where_device_memory_is_the_hosts(opencl_device,
                                                                          rng):
    """Where the device's memory is the host's (a CPU driver), a whole-array reduce takes
    the "chunks" partials of a built-in operator, or a device function's result, from
    memory the host reads in place: no read is queued after its kernels.  The results are
    NumPy's, also when that memory must grow past its first size, and when threads
    reduce at once (each has its own)."""
    import threading

    rt = opencl_device.runtime
    if not rt.shares_host_memory():
        pytest.skip(f"{opencl_device.spec}'s memory is not the host's")

    @gpux.jit(device=True)
    def absmax(a, b):
        return max(abs(a), abs(b))

    xs = [rng.integers(-10**6, 10**6, n).astype(np.int64) for n in (1, 1000, 4099, 700_001)]
    ds = [gpux.to_device(x, device=opencl_device) for x in xs]
    reads: list = []
    real_read = rt.read
    rt.read = lambda *a, **k: (reads.append(a), real_read(*a, **k))[1]
    try:
        for groups in (0, 3, 900):  # 900 chunks of 16 work-items: 115 kB of partials
            with hooks.trial({"algorithms.reduce_variant": "chunks",
                              "algorithms.block_size": 16,
                              "algorithms.reduce_groups": groups}):
                for x, d in zip(xs, ds):
                    assert alg.reduce(d, "max") == x.max()
                    assert alg.reduce(d, "add", init=5) == x.sum() + 5
                    assert alg.reduce(d, absmax) == (x[0] if x.size == 1 else np.abs(x).max())
        assert not reads
    finally:
        del rt.read

    failures: list = []

    def work(k):
        for i in range(40):
            d = ds[(k + i) % len(ds)]
            x = xs[(k + i) % len(xs)]
            if alg.reduce(d, "min") != x.min() or alg.reduce(d) != x.sum():
                failures.append((k, i))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
