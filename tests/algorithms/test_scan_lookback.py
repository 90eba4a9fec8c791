"""The single-pass look-back scan (``algorithms.scan_variant`` = "lookback") against NumPy,
run for real on the OpenCL device; its CUDA kernel through ptxas."""

from __future__ import annotations

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import algorithms as alg

#: 0, 1, primes, powers of two +- 1, a few tiles (4096 elements a tile with the OpenCL
#: CPU defaults, 64 x 64), and more tiles than the driver has threads
SIZES = [0, 1, 2, 3, 13, 127, 128, 129, 1021, 4095, 4096, 4097, 8191, 12289, 65535,
         65537, 2**20 + 3]
DTYPES = [np.int32, np.int64, np.float32, np.float64]


@gpux.jit(device=True)
def last_nonzero(a, b):
    # associative, not commutative: a combination out of order gives another answer
    if b == 0:
        return a
    return b


def _last_nonzero_scan(x, init=None, exclusive=False):
    """NumPy reference: the last nonzero element so far (else *init*, else 0)."""
    fill = 0 if init is None else init
    if exclusive and x.size:
        x = np.concatenate([[0], x[:-1]]).astype(x.dtype)
    idx = np.where(x != 0, np.arange(x.size), -1)
    last = np.maximum.accumulate(idx) if x.size else idx
    return np.where(last >= 0, x[np.maximum(last, 0)], fill).astype(x.dtype)


@pytest.fixture
def lookback(opencl_device):
    """The look-back variant forced through the hook (run time: nothing recompiles)."""
    from numba_gpux import hooks
    from numba_gpux.algorithms import _tuning

    hook = hooks.get_hook("algorithms.scan_variant")
    saved = dict(hook.impls)
    hooks.implement("algorithms.scan_variant", target="opencl", fn="lookback")
    try:
        assert _tuning.scan_variant(opencl_device, np.dtype(np.int32)) == "lookback"
        yield opencl_device
    finally:
        hook.impls.clear()
        hook.impls.update(saved)


def test_lookback_defaults_and_search_space():
    """The package's defaults: 'lookback' on CUDA GPUs, 'chunked' on CPU devices,
    'blocked' on other GPUs; autotuning tries 'lookback' only where a started
    work-group is known to run to its end (elsewhere a trial could wait forever)."""
    from numba_gpux import hooks
    from numba_gpux.algorithms import _tuning  # noqa: F401  (registers the defaults)

    h = hooks.get_hook("algorithms.scan_variant")
    want = {("cuda", "gpu"): "lookback", ("opencl", "cpu"): "chunked",
            ("opencl", "gpu"): "blocked", ("metal", "gpu"): "blocked"}
    for (target, kind), default in want.items():
        q = hooks.TuningQuery("algorithms.scan_variant", target, kind, None, None)
        fn, _ = h.lookup(target, kind)
        assert (fn(q) if callable(fn) else fn) == default, (target, kind)
        assert ("lookback" in h.candidates(q)) == (default != "blocked"), (target, kind)
        assert {"chunked", "blocked"} <= set(h.candidates(q))


def _small_ints(rng, n, dtype):
    # integer values: sums are exact in every dtype (|partial sums| < 2**24), so the
    # results compare exactly whatever the order of the additions
    return rng.integers(-9, 10, n).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lookback_add_every_size(lookback, rng, dtype):
    for n in SIZES:
        x = _small_ints(rng, n, dtype)
        incl = np.cumsum(x, dtype=dtype)
        np.testing.assert_array_equal(alg.scan(x), incl, err_msg=f"n={n}")
        np.testing.assert_array_equal(alg.scan(x, init=5), (5 + incl).astype(dtype),
                                      err_msg=f"n={n} init")
        excl = np.concatenate([[0], incl[:-1]]).astype(dtype) if n else incl
        np.testing.assert_array_equal(alg.scan(x, exclusive=True), excl,
                                      err_msg=f"n={n} exclusive")
        np.testing.assert_array_equal(alg.scan(x, exclusive=True, init=-7),
                                      (excl - 7).astype(dtype), err_msg=f"n={n} exclusive init")


@pytest.mark.parametrize("dtype", DTYPES)
def test_lookback_keeps_operator_order(lookback, rng, dtype):
    """A non-commutative operator: each tile's prefix must be combined before (to the
    left of) the tile's own elements, and predecessors' values in their order."""
    for n in SIZES:
        x = _small_ints(rng, n, dtype)
        x[rng.random(n) < 0.6] = 0       # runs of zeros, some across tiles
        if n > 9000:
            x[5000:9000] = 0              # a whole tile with nothing of its own
        np.testing.assert_array_equal(alg.scan(x, last_nonzero), _last_nonzero_scan(x),
                                      err_msg=f"n={n}")
        np.testing.assert_array_equal(alg.scan(x, last_nonzero, init=3),
                                      _last_nonzero_scan(x, 3), err_msg=f"n={n} init")
        np.testing.assert_array_equal(alg.scan(x, last_nonzero, exclusive=True, init=4),
                                      _last_nonzero_scan(x, 4, exclusive=True),
                                      err_msg=f"n={n} exclusive")


def test_lookback_min_max_device_arrays_and_small_tiles(lookback, rng):
    """Builtin operators, device input and output, and a tile of a few elements (many
    tiles, long look-backs): the hooks for the tile's shape are read at each call."""
    from numba_gpux import hooks
    from numba_gpux.algorithms.scan_lookback import _lookback, _packed, lookback_tile

    compiled = []
    names = ("algorithms.block_size", "algorithms.items_per_thread")
    saved = {h: dict(hooks.get_hook(h).impls) for h in names}
    try:
        # (block sizes under 32 make windows of fewer predecessors: 1 and 2 walk back
        # one or two tiles a step, past predecessors still running)
        for bs, ipt in ((64, 64), (4, 1), (8, 3), (32, 2), (1, 7), (2, 5)):
            hooks.implement("algorithms.block_size", target="opencl",
                            device_kind=lookback.kind, fn=bs)
            hooks.implement("algorithms.items_per_thread", target="opencl",
                            device_kind=lookback.kind, fn=ipt)
            assert lookback_tile(lookback, np.int64) == (bs, ipt)
            x = rng.integers(-1000, 1000, 30_011).astype(np.int64)
            d = gpux.to_device(x)
            out = alg.scan(d, "max")
            assert isinstance(out, gpux.DeviceArray)
            np.testing.assert_array_equal(out.copy_to_host(), np.maximum.accumulate(x))
            np.testing.assert_array_equal(
                alg.scan(x, "min", exclusive=True, init=7),
                np.minimum.accumulate(np.concatenate([[7], x]))[:x.size])
            np.testing.assert_array_equal(alg.scan(x, last_nonzero),
                                          _last_nonzero_scan(x))
            compiled.append(len(_lookback(last_nonzero, _packed(np.dtype(np.int64))).overloads))
        # the tile's shape is a launch-time value: no new compile for another shape
        assert compiled == [compiled[0]] * len(compiled), compiled
    finally:
        for h, impls in saved.items():
            hooks.get_hook(h).impls.clear()
            hooks.get_hook(h).impls.update(impls)


@pytest.mark.parametrize("dtype", [np.uint32, np.int16, np.uint8, np.complex64])
def test_lookback_other_dtypes(lookback, rng, dtype):
    """Packed (uint32) and fenced (the rest) statuses; small integers wrap as NumPy's."""
    for n in (1, 4097, 50_001):
        x = rng.integers(0, 200, n).astype(dtype)
        incl = np.cumsum(x, dtype=dtype)
        np.testing.assert_array_equal(alg.scan(x), incl, err_msg=f"n={n}")
        np.testing.assert_array_equal(alg.scan(x, exclusive=True),
                                      np.concatenate([[0], incl[:-1]]).astype(dtype),
                                      err_msg=f"n={n} exclusive")


def test_lookback_widening_and_float_sums(lookback, rng):
    x8 = rng.integers(0, 100, 70_000).astype(np.uint8)
    np.testing.assert_array_equal(alg.scan(x8, dtype=np.int64), np.cumsum(x8, dtype=np.int64))
    f = rng.standard_normal(100_003)
    np.testing.assert_allclose(alg.scan(f), np.cumsum(f), rtol=1e-9, atol=1e-9)


def test_lookback_tile_fits_shared_memory(opencl_device):
    from numba_gpux.algorithms.scan_lookback import _shared_bytes, lookback_tile

    limit = int(opencl_device.limits.get("max_shared_bytes") or 48 * 1024)
    for dt in (np.int8, np.float32, np.complex128):
        bs, ipt = lookback_tile(opencl_device, dt)
        assert bs >= 1 and ipt >= 1
        assert _shared_bytes(bs, ipt, np.dtype(dt)) <= limit


# ---------------------------------------------------------------------- CUDA (ptxas)

def _ptx(dtype, cc):
    from numba_gpux.algorithms import _common
    from numba_gpux.algorithms.scan_lookback import _lookback, _packed

    t = {np.float32: "float32", np.float64: "float64", np.int32: "int32",
         np.int64: "int64"}[dtype]
    packed = _packed(np.dtype(dtype))
    st = "int64" if isinstance(packed, type) else "int32"
    sig = (f"void({t}[::1], {t}[::1], int64, int64, {st}[::1], {t}[::1], {t}[::1], {t}, "
           f"boolean, boolean)")
    return gpux.compile(_lookback(_common.op_add, packed), sig, target="cuda", cc=cc,
                        cubin=False).text


@pytest.mark.ptxas
@pytest.mark.parametrize("cc,dtype", [((7, 0), np.float64), ((8, 0), np.int64),
                                      ((9, 0), np.float64), ((9, 0), np.int64)])
def test_lookback_ptx_fences_before_publishing(cc, dtype, ptxas):
    """64-bit values: a value array, fences around the atomic status, the value read
    past L1."""
    from numba_gpux.targets.cuda import toolkit

    if not toolkit.ptxas_supports(cc):
        pytest.skip(f"no installed ptxas assembles sm_{cc[0]}{cc[1]}")
    text = _ptx(dtype, cc)
    ok, messages = toolkit.ptxas_check(text, cc)
    assert ok, f"ptxas rejected the look-back scan for sm_{cc[0]}{cc[1]}:\n{messages}"
    # the release side: on every path from a global store to a status publication (an
    # atomic exchange) there is a device-scope fence
    lines = [ln.strip() for ln in text.splitlines()]
    exch = [i for i, ln in enumerate(lines) if ln.startswith("atom.") and ".exch.b32" in ln]
    # (the aggregate's and the inclusive prefix's; LLVM may merge the two of the latter)
    assert len(exch) >= 2, exch
    for i in exch:
        bad = _unfenced_path(lines, i, start=lambda ln: ln.startswith("st.global"),
                             fence=lambda ln: ln.startswith("membar.gl"))
        assert bad is None, f"the store at line {bad} reaches the status at line {i} unfenced"
    # the acquire side: statuses are read atomically (a compare-and-swap that never
    # changes them), then fenced, then the value is loaded
    assert any(".cas.b32" in ln for ln in lines)
    fences = [i for i, ln in enumerate(lines) if ln.startswith("membar.gl")]
    assert len(fences) >= len(exch) + 1

    # (the value is read past L1, as CUB reads it: ld.global.cg), and every path in
    # the kernel's control flow from a status read to a value load passes a fence
    loads = [i for i, ln in enumerate(lines) if ln.startswith("ld.global.cg")]
    assert loads, "the values are not read with ld.global.cg"
    for i in loads:
        bad = _unfenced_path(lines, i, start=lambda ln: ".cas." in ln,
                             fence=lambda ln: ln.startswith("membar.gl"))
        assert bad is None, f"a status read reaches the value load at line {i} unfenced: {bad}"
    # (the check sees a missing fence: the same code without its fences fails it)
    unfenced = ["// (removed)" if ln.startswith("membar") else ln for ln in lines]
    assert all(_unfenced_path(unfenced, i, start=lambda ln: ".cas." in ln,
                              fence=lambda ln: ln.startswith("membar.gl")) is not None
               for i in loads)


def _unfenced_path(lines, target, start, fence):
    """A line index where *start* holds from which the PTX *lines* reach line *target*
    without passing a line where *fence* holds (following branches and fall-through
    backwards), else None."""
    preds = {i: [] for i in range(len(lines))}
    labels = {ln[:-1]: i for i, ln in enumerate(lines) if ln.startswith("$") and ln.endswith(":")}
    for i, ln in enumerate(lines):
        words = ln.replace(";", "").split()
        is_bra = len(words) >= 2 and words[-2].startswith("bra") or (
            len(words) >= 3 and words[0].startswith("@") and words[1].startswith("bra"))
        if is_bra and words[-1] in labels:
            preds[labels[words[-1]]].append(i)
        unconditional = is_bra and not words[0].startswith("@")
        if i + 1 < len(lines) and not unconditional and not ln.startswith("ret"):
            preds[i + 1].append(i)
    seen, todo = set(), list(preds[target])
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        if fence(lines[i]):
            continue
        if start(lines[i]):
            return i
        todo.extend(preds[i])
    return None


@pytest.mark.ptxas
@pytest.mark.parametrize("cc,dtype", [((7, 0), np.float32), ((8, 0), np.int32),
                                      ((9, 0), np.float32), ((9, 0), np.int32)])
def test_lookback_ptx_packs_32_bit_values_with_their_status(cc, dtype, ptxas):
    """32-bit values travel with their status in one 64-bit atomic word: no value
    array, no fence, no local memory."""
    from numba_gpux.targets.cuda import toolkit

    if not toolkit.ptxas_supports(cc):
        pytest.skip(f"no installed ptxas assembles sm_{cc[0]}{cc[1]}")
    text = _ptx(dtype, cc)
    ok, messages = toolkit.ptxas_check(text, cc)
    assert ok, f"ptxas rejected the look-back scan for sm_{cc[0]}{cc[1]}:\n{messages}"
    lines = [ln.strip() for ln in text.splitlines()]
    assert any(ln.startswith("atom.") and ".exch.b64" in ln for ln in lines)
    assert any(".cas.b64" in ln for ln in lines)
    assert not any(".exch.b32" in ln or ".cas.b32" in ln for ln in lines)
    assert not any(ln.startswith("membar") for ln in lines)
    assert not any(".local" in ln for ln in lines)
