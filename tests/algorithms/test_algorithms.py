"""numba_gpux.algorithms against NumPy: sizes (0, 1, primes, > 2**24), dtypes, operators."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import algorithms as alg

SIZES = [0, 1, 2, 7, 64, 257, 4099, 65537]
BIG = 2**24 + 3


@gpux.jit(device=True)
def absmax(a, b):
    return max(abs(a), abs(b))


@gpux.jit(device=True)
def affine(a, b):      # (x -> a0*x + a1) composed: associative, not commutative
    return a * b


@contextlib.contextmanager
def _opencl_hooks(values: dict):
    """The hooks of *values* (name -> value) implemented for OpenCL within the block;
    each hook's own implementations are put back after it."""
    from numba_gpux import hooks

    saved = {n: dict(hooks.get_hook(n).impls) for n in values}
    for n, v in values.items():
        hooks.implement(n, target="opencl", fn=v)
    try:
        yield
    finally:
        for n, impls in saved.items():
            hooks.get_hook(n).impls.clear()
            hooks.get_hook(n).impls.update(impls)


def _data(rng, n, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.standard_normal(n).astype(dt)
    if dt.kind == "u":
        return rng.integers(0, 50, n).astype(dt)
    return rng.integers(-50, 50, n).astype(dt)


# ---------------------------------------------------------------------- map / foreach

def test_map_and_foreach(opencl_device, rng):
    x = rng.standard_normal(1001).astype(np.float32)
    y = rng.standard_normal(1001).astype(np.float32)
    np.testing.assert_allclose(alg.map(lambda a, b: a * b + np.float32(1), x, y), x * y + 1,
                               rtol=1e-6)
    m = alg.map(lambda a: a > 0, x.reshape(7, 11, 13))
    assert m.dtype == np.bool_ and m.shape == (7, 11, 13)
    np.testing.assert_array_equal(m, x.reshape(7, 11, 13) > 0)
    d = gpux.to_device(x)
    out = alg.map(lambda a: a * 2, d, dtype=np.float64)
    assert isinstance(out, gpux.DeviceArray) and out.dtype == np.float64
    np.testing.assert_allclose(out.copy_to_host(), x.astype(np.float64) * 2)
    assert alg.map(lambda a: a, np.zeros(0, np.int32)).shape == (0,)

    @gpux.jit(device=True)
    def put(i, arr, v):
        arr[i] = i * v

    arr = gpux.device_array(12345, np.int64)
    alg.foreach(put, 12345, arr, 3)
    np.testing.assert_array_equal(arr.copy_to_host(), np.arange(12345) * 3)
    alg.foreach(put, 0, arr, 3)


@pytest.mark.parametrize("ipt", [1, 3])
def test_map_with_and_without_the_loop(opencl_device, rng, ipt):
    """map and foreach on one element per work-item (the kernel without a loop, the CPU
    default) and on several (the grid-stride loop): the same results at every size."""
    from numba_gpux import hooks
    from numba_gpux.algorithms import _tuning

    impls = hooks.get_hook("algorithms.map_items_per_thread").impls
    saved = dict(impls)
    hooks.implement("algorithms.map_items_per_thread", target="opencl",
                    device_kind=opencl_device.kind, fn=ipt)
    try:
        assert _tuning.map_items_per_thread(opencl_device, np.dtype(np.float32)) == ipt
        for n in (1, 255, 256, 257, 1001, 4099):
            x = rng.standard_normal(n).astype(np.float32)
            np.testing.assert_allclose(alg.map(lambda a: a * np.float32(2) + np.float32(1), x),
                                       x * 2 + 1, rtol=1e-6)
            arr = gpux.device_array(n, np.int64)
            alg.foreach(_put_index, n, arr, 5)
            np.testing.assert_array_equal(arr.copy_to_host(), np.arange(n) * 5)
    finally:
        impls.clear()
        impls.update(saved)


@gpux.jit(device=True)
def _put_index(i, arr, v):
    arr[i] = i * v


# ---------------------------------------------------------------------- reduce

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64, np.int64])
def test_reduce_sizes_and_dtypes(opencl_device, rng, n, dtype):
    x = _data(rng, n, dtype)
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(alg.reduce(x), x.sum(dtype=np.float64), rtol=1e-4, atol=1e-3)
    else:
        assert alg.reduce(x) == x.sum(dtype=dtype)
    if n:
        assert alg.reduce(x, "max") == x.max()
        assert alg.reduce(x, np.minimum) == x.min()
        # a fold: one element is returned as it is, more are combined
        assert alg.reduce(x, absmax) == (x[0] if n == 1 else np.abs(x).max())


def test_reduce_init_dtype_and_empty(opencl_device, rng):
    x = rng.integers(0, 100, 1000).astype(np.int8)
    assert alg.reduce(x, dtype=np.int64) == x.sum(dtype=np.int64)
    assert alg.reduce(x, dtype=np.int64, init=10) == x.sum(dtype=np.int64) + 10
    assert alg.reduce(np.zeros(0, np.float32), init=5) == 5
    assert alg.reduce(np.zeros(0, np.float32), "mul") == 1
    assert alg.reduce(np.zeros(0, np.int32), "min") == np.iinfo(np.int32).max
    with pytest.raises(gpux.GpuxUserError, match="give init="):
        alg.reduce(np.zeros(0, np.float32), absmax)
    with pytest.raises(gpux.GpuxUserError, match="unknown operator"):
        alg.reduce(x, "xor")
    f = np.array([1.0, np.nan, 3.0], np.float32)
    assert np.isnan(alg.reduce(f, "max")) and np.isnan(alg.reduce(f, "min"))
    assert alg.reduce(np.array([2.0, 3.0, 4.0]), "mul", init=0.5) == 12.0


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_reduce_axis(opencl_device, rng, axis):
    x = rng.standard_normal((5, 7, 3))
    np.testing.assert_allclose(alg.reduce(x, axis=axis), x.sum(axis=axis))
    np.testing.assert_allclose(alg.reduce(x, "max", axis=axis), x.max(axis=axis))
    d = alg.reduce(gpux.to_device(x), "mul", axis=axis, init=2.0)
    assert isinstance(d, gpux.DeviceArray)
    np.testing.assert_allclose(d.copy_to_host(), 2.0 * x.prod(axis=axis))
    assert alg.reduce(np.zeros((3, 0)), axis=1).tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(gpux.GpuxUserError, match="out of range"):
        alg.reduce(x, axis=3)


@pytest.mark.parametrize("lanes,lines,items", [(1, 1, 1), (3, 5, 64), (16, 16, 10 ** 6),
                                               (64, 1, 4096)])
def test_reduce_axis_pieces_give_numpys_results(opencl_device, rng, lanes, lines, items):
    """Lines folded by several lanes (fewer elements than lanes included) and columns cut
    into chunks (one element per chunk included), whatever the hooks choose: NumPy's
    sums, maxima and products, with init, along every axis."""
    from numba_gpux import hooks

    names = ("algorithms.axis_lanes", "algorithms.axis_lines", "algorithms.axis_work_items")
    saved = {n: dict(hooks.get_hook(n).impls) for n in names}
    for n, v in zip(names, (lanes, lines, items)):
        hooks.implement(n, target="opencl", fn=v)
    try:
        for shape in ((5, 7, 3), (3, 1000), (1000, 3), (2, 2, 37), (40, 1), (1, 40)):
            x = rng.integers(-50, 50, shape).astype(np.int64)
            for axis in range(len(shape)):
                np.testing.assert_array_equal(alg.reduce(x, axis=axis), x.sum(axis=axis))
                np.testing.assert_array_equal(alg.reduce(x, "max", axis=axis, init=-7),
                                              np.maximum(x.max(axis=axis), -7))
            f = rng.random(shape) + 0.5
            np.testing.assert_allclose(alg.reduce(f, "mul", axis=0, init=2.0),
                                       2.0 * f.prod(axis=0), rtol=1e-12)
            f.flat[len(f.flat) // 2] = np.nan
            np.testing.assert_array_equal(alg.reduce(f, "max", axis=-1), f.max(axis=-1))
    finally:
        for n in names:
            hooks.get_hook(n).impls.clear()
            hooks.get_hook(n).impls.update(saved[n])


def test_reduce_axis_tiles_of_several_columns_per_work_item(opencl_device, rng):
    """Columns folded by work-items that each keep 1 to 64 of them (the tiles' last one
    cut short by the row's end, several slabs, axes too short to cut into chunks, where
    the tiles fold init in themselves): NumPy's sums and maxima with init, and the same
    float64 sums, bit for bit, whatever the number (each column is folded in the same
    order: its chunks in order, then the chunks)."""
    from numba_gpux import hooks

    name = "algorithms.axis_slots"
    saved = dict(hooks.get_hook(name).impls)
    cases = (((3000, 1000), 0), ((4, 37, 300), 1), ((1000, 100), 0), ((2, 40, 37), 1),
             ((50, 257), 0), ((5, 30000), 0), ((1, 700), 0), ((3, 9, 2000), 1))
    sums = {}
    try:
        for slots in (1, 3, 16, 64):
            hooks.implement(name, target="opencl", fn=slots)
            for shape, ax in cases:
                x = rng.integers(-50, 50, shape).astype(np.int64)
                np.testing.assert_array_equal(alg.reduce(x, axis=ax), x.sum(axis=ax))
                np.testing.assert_array_equal(alg.reduce(x, "max", axis=ax, init=-7),
                                              np.maximum(x.max(axis=ax), -7))
                np.testing.assert_array_equal(alg.reduce(x, axis=ax, init=1000),
                                              x.sum(axis=ax) + 1000)
                f = np.random.default_rng(sum(shape)).standard_normal(shape)
                got = alg.reduce(f, axis=ax)
                np.testing.assert_allclose(got, f.sum(axis=ax), rtol=1e-9, atol=1e-9)
                sums.setdefault((shape, ax), got)
                np.testing.assert_array_equal(got, sums[(shape, ax)])
        hooks.implement(name, target="opencl", fn=65)
        with pytest.raises(hooks.HookError, match="between 1 and 64"):
            alg.reduce(np.ones((40, 300)), axis=0)
    finally:
        hooks.get_hook(name).impls.clear()
        hooks.get_hook(name).impls.update(saved)


@pytest.mark.parametrize("width", [0, 64])
def test_reduce_axis_of_rows_of_a_few_columns_gives_numpys_results(opencl_device, rng, width):
    """Rows of 2 to 64 columns folded along the rows: walked as flat memory in chunks
    (each lane keeping the columns it meets apart: 1 to 8 of them), the last chunk
    taking what is left, or (width 0, and widths whose columns need more than 8) in
    chunks of columns: NumPy's sums, maxima with init and products, for one slab and
    several (3-D), lengths just at and past one step of the flat walk."""
    from numba_gpux import hooks

    name = "algorithms.axis_flat_width"
    saved = dict(hooks.get_hook(name).impls)
    hooks.implement(name, target="opencl", fn=width)
    try:
        for inner in (2, 3, 5, 7, 9, 16, 40, 48, 64):
            step_rows = 16 // np.gcd(inner, 16)  # rows in one step of the flat walk
            for length in (step_rows, step_rows + 1, 3 * step_rows + 5, 1000, 4099):
                for shape in ((length, inner), (3, length, inner)):
                    x = rng.integers(-50, 50, shape).astype(np.int64)
                    ax = len(shape) - 2
                    np.testing.assert_array_equal(alg.reduce(x, axis=ax), x.sum(axis=ax))
                    np.testing.assert_array_equal(alg.reduce(x, "max", axis=ax, init=-7),
                                                  np.maximum(x.max(axis=ax), -7))
            f = rng.random((1001, inner)) + 0.5
            np.testing.assert_allclose(alg.reduce(f, "mul", axis=0, init=2.0),
                                       2.0 * f.prod(axis=0), rtol=1e-12)
            f[500, inner // 2] = np.nan
            np.testing.assert_array_equal(alg.reduce(f, "max", axis=0), f.max(axis=0))
            d = alg.reduce(gpux.to_device(f.astype(np.float32)), axis=0)
            np.testing.assert_allclose(d.copy_to_host(), f.astype(np.float32).sum(axis=0),
                                       rtol=1e-5)
    finally:
        hooks.get_hook(name).impls.clear()
        hooks.get_hook(name).impls.update(saved)


def test_reduce_axis_on_a_grid_smaller_than_the_problem(opencl_device, rng, monkeypatch):
    """A device whose grid has few blocks along y and z (CUDA's are 65,535): the axis
    kernels walk the lines and the outer blocks the grid does not cover, and the chunks
    along the axis stay within the grid, with every element folded once."""
    from numba_gpux.limits import INDEX_RANGE

    monkeypatch.setitem(opencl_device.limits, "max_grid_dims", (INDEX_RANGE, 3, 2))
    for shape, axes in (((7, 50, 5), (0, 1, 2)), ((50, 1000), (0, 1)), ((1000, 3), (0, 1)),
                        ((2, 3000, 2), (1,))):
        x = rng.integers(-50, 50, shape).astype(np.int64)
        for axis in axes:
            np.testing.assert_array_equal(alg.reduce(x, axis=axis), x.sum(axis=axis))
            np.testing.assert_array_equal(alg.reduce(x, "max", axis=axis, init=-60),
                                          x.max(axis=axis))


def test_reduce_big(opencl_device, rng):
    x = rng.random(BIG, dtype=np.float32)
    np.testing.assert_allclose(alg.reduce(x), x.sum(dtype=np.float64), rtol=1e-5)


@pytest.mark.parametrize("groups", [1, 3, 7])
def test_reduce_with_few_groups_folds_every_element(opencl_device, rng, groups):
    # the GPU setting (a capped first pass, each work-item striding over the array),
    # set at run time on this device: same results
    from numba_gpux import hooks
    from numba_gpux.algorithms import _tuning

    ints = rng.integers(-50, 50, 100_003).astype(np.int64)
    impls = hooks.get_hook("algorithms.reduce_groups").impls
    saved = dict(impls)
    hooks.implement("algorithms.reduce_groups", target="opencl", fn=groups)
    try:
        for n in (1, 2, 255, 256, 257, 4099, 100_003):
            assert alg.reduce(ints[:n], device=opencl_device) == ints[:n].sum()
            assert alg.reduce(ints[:n], "max", device=opencl_device) == ints[:n].max()
        x = rng.random(50_001).astype(np.float64)
        np.testing.assert_allclose(alg.reduce(x, device=opencl_device), x.sum(), rtol=1e-12)
    finally:
        impls.clear()
        impls.update(saved)
    # the CPU default: 8 chunks per compute unit
    cu = int(opencl_device.limits.get("compute_units", 16) or 16)
    assert _tuning.reduce_groups(opencl_device, np.dtype(np.int64)) == 8 * cu


@pytest.mark.parametrize("variant", ["tree", "subgroup", "chunks"])
def test_reduce_variants_give_the_same_results(opencl_device, rng, variant):
    """Every whole-array reduce variant (the hook picks one per device kind; the
    sub-group one serves add, multiply, min and max, the tree the rest; chunks any
    operator) at every size, with init and NaN."""
    from numba_gpux import hooks
    from numba_gpux.algorithms import _tuning

    hook = hooks.get_hook("algorithms.reduce_variant")
    saved = dict(hook.impls)
    hooks.implement("algorithms.reduce_variant", target="opencl", fn=variant)
    try:
        assert _tuning.reduce_variant(opencl_device, np.dtype(np.int64)) == variant
        for n in (1, 2, 255, 256, 257, 4099, 100_003):
            for dt in (np.int32, np.int64, np.uint32, np.float64):
                x = rng.integers(0 if dt == np.uint32 else -100, 100, n).astype(dt)
                assert alg.reduce(x, device=opencl_device) == x.sum(dtype=dt)
                assert alg.reduce(x, "max", device=opencl_device) == x.max()
                assert alg.reduce(x, "min", init=-5 if dt != np.uint32 else 0,
                                  device=opencl_device) == min(x.min(), -5 if dt != np.uint32 else 0)
            f = rng.random(n) + 0.5
            np.testing.assert_allclose(alg.reduce(f[:60], "mul", device=opencl_device),
                                       np.prod(f[:60]), rtol=1e-12)
            f[n // 2] = np.nan
            assert np.isnan(alg.reduce(f, "max", device=opencl_device))
            assert np.isnan(alg.reduce(f, device=opencl_device))
    finally:
        hook.impls.clear()
        hook.impls.update(saved)


@pytest.mark.parametrize("block, groups", [(16, 0), (16, 5), (64, 3), (256, 64), (8, 1)])
def test_reduce_chunks_fold_every_element_once(opencl_device, rng, block, groups):
    """The "chunks" reduce at sizes around its four-accumulator steps (4 x block) and its
    chunk boundaries, with chunks of work-items that have no element, for built-in
    operators and device functions without an identity (folded only over work-items that
    had an element: an identity would not do for them)."""
    from numba_gpux import hooks

    names = ("algorithms.reduce_variant", "algorithms.block_size", "algorithms.reduce_groups")
    saved = {n: dict(hooks.get_hook(n).impls) for n in names}
    hooks.implement("algorithms.reduce_variant", target="opencl", fn="chunks")
    hooks.implement("algorithms.block_size", target="opencl", fn=block)
    hooks.implement("algorithms.reduce_groups", target="opencl", fn=groups)

    @gpux.jit(device=True)
    def absmax(a, b):
        return max(abs(a), abs(b))

    @gpux.jit(device=True)
    def plus(a, b):  # addition as a device function: no identity is known for it
        return a + b

    from numba_gpux.algorithms.reduction import _CHUNK_BLOCK_TRIPS as trips

    try:
        step = 4 * block
        # (around the blocks of `trips` steps the accumulators fold apart, too)
        for n in sorted({1, 2, block - 1, block, block + 1, step - 1, step, step + 1,
                         2 * step + 3, 64 * step + 5, 100_003, trips * step - 1,
                         trips * step, trips * step + 1, (2 * trips + 1) * step + 3}):
            x = rng.integers(-1000, 1000, n).astype(np.int64)
            assert alg.reduce(x, device=opencl_device) == x.sum(), n
            assert alg.reduce(x, "max", device=opencl_device) == x.max(), n
            # one element is the result as it is (a fold applies the operator n - 1 times)
            want = x[0] if n == 1 else np.abs(x).max()
            assert alg.reduce(x, absmax, device=opencl_device) == want, n
            assert alg.reduce(x, "min", init=-2000, device=opencl_device) == -2000
            f = (rng.random(n) - 0.5).astype(np.float32)
            assert alg.reduce(f, absmax, device=opencl_device) == (f[0] if n == 1 else
                                                                  np.abs(f).max()), n
            ones = np.ones(n, np.int32)
            assert alg.reduce(ones, plus, device=opencl_device) == n
            f[n // 2] = np.nan
            assert np.isnan(alg.reduce(f, "max", device=opencl_device)), n
    finally:
        for n in names:
            hooks.get_hook(n).impls.clear()
            hooks.get_hook(n).impls.update(saved[n])


def test_reduce_chunks_float_sum_error_does_not_grow_with_the_chunk(opencl_device, rng):
    """A work-item of the "chunks" reduce folds a long run of its chunk (here four
    accumulators of 262,144 elements each): folded in blocks, then the blocks, a float32
    sum keeps within a few ulp of the exact one; folded straight through, it was off by
    2e-6 of it (a 2**30-element sum on a CPU device missed np.isclose)."""
    with _opencl_hooks({"algorithms.reduce_variant": "chunks", "algorithms.block_size": 4,
                        "algorithms.reduce_groups": 1}):
        x = np.random.default_rng(7).random(1 << 22).astype(np.float32)
        exact = x.astype(np.float64).sum()
        got = alg.reduce(x, device=opencl_device)
        assert got.dtype == np.float32
        assert abs(float(got) - exact) / exact < 6e-7
        ones = np.ones((1 << 22) + 3, np.float32)  # every element once, in the blocks too
        assert alg.reduce(ones, device=opencl_device) == (1 << 22) + 3


def test_reduce_host_fold_takes_only_the_values_of_work_items_with_elements(opencl_device,
                                                                          rng):
    """With a built-in operator the host folds the "chunks" values; a last chunk shorter
    than a work-group leaves slots of the scratch buffer unwritten, holding what an
    earlier reduce of the same buffer size left there (big values here): they must not
    be folded."""
    with _opencl_hooks({"algorithms.reduce_variant": "chunks", "algorithms.block_size": 16,
                        "algorithms.reduce_groups": 5}):
        # 960 elements: five chunks of 192, every work-item writes a value; 773: five
        # chunks, the last of 5 elements (11 work-items of its group have none)
        for n in (769, 770, 773, 783, 784):
            poison = np.full(960, 10**6, np.int64)
            assert alg.reduce(poison, "max", device=opencl_device) == 10**6
            x = rng.integers(-1000, 1000, n).astype(np.int64)
            assert alg.reduce(x, "max", device=opencl_device) == x.max(), n
            assert alg.reduce(poison, device=opencl_device) == 960 * 10**6
            assert alg.reduce(x, device=opencl_device) == x.sum(), n
            assert alg.reduce(x, init=7, device=opencl_device) == x.sum() + 7, n


def test_reduce_with_a_device_function_named_like_a_builtin_runs_that_function(
        opencl_device, rng):
    """The host fold and the sub-group reductions serve the built-in operators only, not a
    user's device function that happens to be called ``add``."""
    @gpux.jit(device=True)
    def add(a, b):  # (a maximum, named add)
        return max(a, b)

    for n in (5, 100_003):
        x = rng.integers(-1000, 1000, n).astype(np.int32)
        assert alg.reduce(x, add, device=opencl_device) == x.max()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_reduce_float_min_max_propagate_nan_in_subgroups(opencl_device, rng, dtype):
    """Float min and max on the sub-group variant: a NaN anywhere (first, last, inside any
    work-item's strided run, with infinities around) makes the result NaN, as NumPy's;
    without one the result is NumPy's exactly (the sub-group's own min and max need not
    propagate NaN: the kernel checks its lanes)."""
    from numba_gpux import hooks
    from numba_gpux.algorithms import _tuning

    hook = hooks.get_hook("algorithms.reduce_variant")
    saved = dict(hook.impls)
    hooks.implement("algorithms.reduce_variant", target="opencl", fn="subgroup")
    try:
        assert _tuning.reduce_variant(opencl_device, np.dtype(dtype)) == "subgroup"
        for n in (1, 7, 1000, 65_537, 300_001):
            x = (rng.random(n) * 200 - 100).astype(dtype)
            x[rng.integers(0, n)] = np.inf
            x[rng.integers(0, n)] = -np.inf
            for op, ref in (("max", np.max), ("min", np.min)):
                assert alg.reduce(x, op, device=opencl_device) == ref(x)
            for at in {0, n // 3, n - 1}:
                y = x.copy()
                y[at] = np.nan
                for op in ("max", "min"):
                    assert np.isnan(alg.reduce(y, op, device=opencl_device)), (n, at, op)
                    assert np.isnan(alg.reduce(y, op, init=dtype(5), device=opencl_device))
    finally:
        hook.impls.clear()
        hook.impls.update(saved)


# ---------------------------------------------------------------------- scan

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", [np.int64, np.float64, np.int32])
def test_scan_inclusive_exclusive(opencl_device, rng, n, dtype):
    x = _data(rng, n, dtype)
    incl = np.cumsum(x, dtype=dtype)
    excl = np.concatenate([np.zeros(1, dtype), incl[:-1]]) if n else incl
    if np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(alg.scan(x), incl, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(alg.scan(x, exclusive=True), excl, rtol=1e-9, atol=1e-9)
    else:
        np.testing.assert_array_equal(alg.scan(x), incl)
        np.testing.assert_array_equal(alg.scan(x, exclusive=True), excl)
        np.testing.assert_array_equal(alg.scan(x, "max"), np.maximum.accumulate(x))
        np.testing.assert_array_equal(alg.scan(x, "min", exclusive=True, init=7),
                                      np.minimum.accumulate(np.concatenate([[7], x]))[:n])


def test_scan_init_custom_op_and_order(opencl_device, rng):
    x = rng.integers(-9, 9, 3001).astype(np.int64)
    np.testing.assert_array_equal(alg.scan(x, init=100), 100 + np.cumsum(x))
    np.testing.assert_array_equal(alg.scan(x, exclusive=True, init=100),
                                  100 + np.concatenate([[0], np.cumsum(x)[:-1]]))
    f = (rng.random(2000) + 0.5)
    np.testing.assert_allclose(alg.scan(f, affine), np.cumprod(f))
    with pytest.raises(gpux.GpuxUserError, match="needs init="):
        alg.scan(x, affine, exclusive=True)
    x8 = rng.integers(0, 100, 5000).astype(np.uint8)
    np.testing.assert_array_equal(alg.scan(x8, dtype=np.int64), np.cumsum(x8, dtype=np.int64))
    with pytest.raises(gpux.GpuxUserError, match="1-D"):
        alg.scan(np.zeros((2, 2)))


@pytest.mark.parametrize("variant", ["blocked", "chunked", "lookback"])
def test_scan_variants_give_the_same_results(opencl_device, rng, variant):
    """Every scan variant (the hook picks one per device kind) at every size, with init,
    exclusive and a non-commutative operator (elements are combined in order)."""
    from numba_gpux import hooks
    from numba_gpux.algorithms import _tuning

    hook = hooks.get_hook("algorithms.scan_variant")
    saved = dict(hook.impls)
    hooks.implement("algorithms.scan_variant", target="opencl", fn=variant)
    try:
        assert _tuning.scan_variant(opencl_device, np.dtype(np.int64)) == variant
        for n in (1, 2, 1023, 1024, 1025, 4097, 65_537, 100_003):
            x = rng.integers(-9, 9, n).astype(np.int64)
            np.testing.assert_array_equal(alg.scan(x, init=3), 3 + np.cumsum(x))
            np.testing.assert_array_equal(alg.scan(x, exclusive=True),
                                          np.concatenate([[0], np.cumsum(x)[:-1]]))
            if n <= 4097:  # (longer products under- or overflow)
                f = rng.random(n) + 0.5
                np.testing.assert_allclose(alg.scan(f, affine), np.cumprod(f), rtol=1e-9)
    finally:
        hook.impls.clear()
        hook.impls.update(saved)


def test_scan_big(opencl_device, rng):
    x = rng.integers(-3, 4, BIG).astype(np.int32)
    np.testing.assert_array_equal(alg.scan(x), np.cumsum(x, dtype=np.int32))


# ---------------------------------------------------------------------- sort

def _sort_data(rng, n, dtype):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        x = rng.standard_normal(n).astype(dt) * 1e3
        x[::7] = np.nan
        x[1::11] = -0.0
        x[2::13] = np.inf
        x[3::17] = -np.inf
        x[4::19] = 0.0
        x[5::23] = -np.nan
        return x
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)


SORT_DTYPES = [np.float32, np.float64, np.int32, np.int64, np.uint32, np.uint64, np.int8,
               np.uint16]


@pytest.mark.parametrize("dtype", SORT_DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 7, 257, 4099, 65537])
def test_sort_and_argsort(opencl_device, rng, n, dtype):
    x = _sort_data(rng, n, dtype)
    s = alg.sort(x)
    assert s.dtype == x.dtype and s.shape == x.shape
    np.testing.assert_array_equal(s, np.sort(x))          # NaNs last, as NumPy has them
    np.testing.assert_array_equal(alg.argsort(x), np.argsort(x, kind="stable"))


def test_sort_duplicates_are_stable_and_device_arrays(opencl_device, rng):
    x = rng.integers(0, 4, 10007).astype(np.int32)
    np.testing.assert_array_equal(alg.argsort(x), np.argsort(x, kind="stable"))
    d = gpux.to_device(rng.standard_normal(3001))
    out = alg.sort(d)
    assert isinstance(out, gpux.DeviceArray)
    np.testing.assert_array_equal(out.copy_to_host(), np.sort(d.copy_to_host()))
    with pytest.raises(gpux.GpuxUserError, match="unsupported dtype"):
        alg.sort(np.zeros(3, np.complex64))


def test_sort_big(opencl_device, rng):
    x = rng.standard_normal(2**24 + 1).astype(np.float32)
    x[::1000] = np.nan
    np.testing.assert_array_equal(alg.sort(x), np.sort(x))


@pytest.mark.ptxas
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_reduce_chunks_kernels_assemble_for_cuda(dtype, ptxas):
    """The "chunks" reduce is a CPU default, but a hook may choose it on any device: its
    two kernels, with a built-in operator and a device function, pass ptxas."""
    from numba_gpux.algorithms import _common
    from numba_gpux.algorithms.reduction import _chunk_partial, _chunk_tail
    from numba_gpux.targets.cuda import toolkit

    @gpux.jit(device=True)
    def absmax(a, b):
        return max(abs(a), abs(b))

    cc = (8, 0)
    if not toolkit.ptxas_supports(cc):
        pytest.skip("no installed ptxas assembles sm_80")
    for op in (_common.op_max, absmax):
        for k, sig in ((_chunk_partial(op), f"void({dtype}[::1], int64, int64, {dtype}[::1])"),
                       (_chunk_tail(op), f"void({dtype}[::1], int64, int64, int64, "
                                         f"{dtype}[::1], {dtype}, boolean)")):
            text = gpux.compile(k, sig, target="cuda", cc=cc, cubin=False).text
            ok, messages = toolkit.ptxas_check(text, cc)
            assert ok, f"ptxas rejected {k.__name__} ({dtype}):\n{messages}"


def test_reduce_of_bools_says_how_and_narrow_types_keep_the_tree(opencl_device, rng):
    """A bool array is a clear error that names the two ways to reduce it (and those
    work); 8- and 16-bit types take the tree on every device, so a float16 sum stays as
    close to NumPy's as its pairwise folds make it."""
    from numba_gpux.errors import GpuxUserError

    b = rng.random(1001) > 0.5
    with pytest.raises(GpuxUserError, match="bool array.*dtype=np.int64"):
        alg.reduce(b, device=opencl_device)
    assert alg.reduce(b, dtype=np.int64, device=opencl_device) == b.sum()
    assert alg.reduce(b, "max", dtype=np.uint8, device=opencl_device) == b.any()
    assert alg.reduce(b, "min", dtype=np.uint8, device=opencl_device) == b.all()
    h = (rng.random(5001) * 3).astype(np.float16)
    # four running float16 sums of these 5,001 values end 12 apart from NumPy's
    assert abs(float(alg.reduce(h, device=opencl_device)) - float(h.sum())) <= 8
    for dt in (np.uint8, np.int8, np.int16, np.uint16):
        y = rng.integers(0, 100, 4099).astype(dt)
        assert alg.reduce(y, "max", device=opencl_device) == y.max()
        assert alg.reduce(y, device=opencl_device) == y.sum(dtype=dt)


@pytest.mark.ptxas
def test_reduce_axis_kernels_assemble_for_cuda(ptxas):
    """The axis kernels (lanes, tiles of one and of several columns per work-item, fold,
    and the flat walk over rows of a few columns: indices from a 2-D or 3-D grid with a
    grid-stride loop over what the grid does not cover) pass ptxas."""
    from numba_gpux.algorithms import _common
    from numba_gpux.algorithms.reduction import _axis, _axis_flat, _axis_lanes, _axis_tiles
    from numba_gpux.targets.cuda import toolkit

    cc = (8, 0)
    if not toolkit.ptxas_supports(cc):
        pytest.skip("no installed ptxas assembles sm_80")
    op = _common.op_add
    for k, sig in ((_axis_lanes(op), "void(float64[:, ::1], float64[:, ::1])"),
                   (_axis_tiles(op, 1), "void(float64[:, :, ::1], float64[:, :, ::1], int64, "
                                        "float64, boolean)"),
                   (_axis_tiles(op, 16), "void(float64[:, :, ::1], float64[:, :, ::1], int64, "
                                         "float64, boolean)"),
                   (_axis(op), "void(float64[:, :, ::1], float64[:, ::1], float64, boolean)"),
                   (_axis_flat(op, 5, 16), "void(float64[:, ::1], float64[:, :, ::1], int64)")):
        text = gpux.compile(k, sig, target="cuda", cc=cc, cubin=False).text
        ok, messages = toolkit.ptxas_check(text, cc)
        assert ok, f"ptxas rejected {k.__name__}:\n{messages}"
