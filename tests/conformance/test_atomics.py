"""Atomics: every operation x every dtype it supports, on global and shared arrays,
with 1-D, N-D and tuple indices; the returned old values and the final contents
are checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from numba.core.errors import TypingError

import numba_gpux as gpux
from numba_gpux.errors import GpuxUserError
from numba_gpux.language.atomics import ATOMIC_OPS

#: the quick subset that .ci/run also runs on the other CPythons
pytestmark = pytest.mark.quick

DTYPES = {"int32": np.int32, "uint32": np.uint32, "int64": np.int64, "uint64": np.uint64,
          "float32": np.float32, "float64": np.float64}
N = 64          # work-items
SLOTS = 4       # contended elements
SHARED = 64     # shared array length (>= N)
SPACES = ["global", pytest.param("shared", marks=pytest.mark.feature("atomics_shared"))]


def _make_kernels(op):
    fn = getattr(gpux.atomic, op)

    @gpux.jit
    def on_global(ary, idx, vals, old):
        i = gpux.grid(1)
        if i < vals.size:
            old[i] = fn(ary, idx[i], vals[i])

    @gpux.jit
    def on_shared(ary, idx, vals, old):
        t = gpux.thread_idx.x
        sm = gpux.shared.array(SHARED, ary.dtype)
        if t < ary.size:
            sm[t] = ary[t]
        gpux.barrier()
        if t < vals.size:
            old[t] = fn(sm, idx[t], vals[t])
        gpux.barrier()
        if t < ary.size:
            ary[t] = sm[t]

    @gpux.jit
    def on_private(ary, idx, vals, old):
        # a work-item's own array (private memory): the atomic is a plain update
        i = gpux.grid(1)
        if i < vals.size:
            mine = gpux.local.array(2, ary.dtype)
            mine[1] = ary[idx[i]]
            old[i] = fn(mine, 1, vals[i])
            ary[idx[i]] = mine[1]

    on_global.__name__ = f"atomic_{op}_global"
    on_shared.__name__ = f"atomic_{op}_shared"
    on_private.__name__ = f"atomic_{op}_private"
    return on_global, on_shared, on_private


KERNELS = {op: _make_kernels(op) for op in ATOMIC_OPS}


def _marks(dtype):
    """The skip-list feature and device capability an atomic on *dtype* exercises."""
    kind = "float" if dtype.startswith("float") else "int"
    bits = 64 if dtype.endswith("64") else 32
    marks = [pytest.mark.feature(f"atomics_{kind}{bits}")]
    if bits == 64:
        marks.append(pytest.mark.needs("int64_atomics"))
    return marks


def _dt(dtype, *values):
    return pytest.param(*values, dtype, id="-".join([*map(str, values), dtype]),
                        marks=_marks(dtype))


def _cases():
    for op, (dts, _) in ATOMIC_OPS.items():
        for dt in dts:
            yield _dt(str(dt), op)


def _values(op, dtype, n, rng):
    dt = np.dtype(dtype)
    if op in ("inc", "dec"):
        return np.full(n, 5, dt)
    if op in ("and_", "or_", "xor"):
        return rng.integers(0, 2**31 - 1, n).astype(dt)
    if op == "sub" and dt.kind == "u":
        return rng.integers(0, 4, n).astype(dt)
    if dt.kind == "f":
        return rng.integers(-50, 50, n).astype(dt)  # exact sums in any order
    lo = -50 if dt.kind == "i" else 0
    return rng.integers(lo, 50, n).astype(dt)


def _initial(op, dtype, n, rng):
    dt = np.dtype(dtype)
    if op in ("inc", "dec"):
        return rng.integers(0, 8, n).astype(dt)
    if op in ("and_", "or_", "xor"):
        return rng.integers(0, 2**31 - 1, n).astype(dt)
    if op == "sub" and dt.kind == "u":
        return np.full(n, 1000, dt)
    lo = -20 if dt.kind in "if" else 0
    return rng.integers(lo, 20, n).astype(dt)


def _apply(op, a, v):
    """The new value of one element: numpy semantics of each operation."""
    if op == "add":
        return a + v
    if op == "sub":
        return a - v
    if op == "and_":
        return a & v
    if op == "or_":
        return a | v
    if op == "xor":
        return a ^ v
    if op in ("min", "nanmin"):
        return min(a, v) if not (np.isnan(a) if op == "nanmin" else False) else v
    if op in ("max", "nanmax"):
        return max(a, v) if not (np.isnan(a) if op == "nanmax" else False) else v
    if op == "exch":
        return v
    if op == "inc":
        return a.dtype.type(0) if a >= v else a + a.dtype.type(1)
    if op == "dec":
        return v if (a == 0 or a > v) else a - a.dtype.type(1)
    raise AssertionError(op)


def _run(kernel, ary, idx, vals, threads):
    d_ary = gpux.to_device(ary)
    d_old = gpux.to_device(np.zeros(len(vals), ary.dtype))
    kernel[1, threads](d_ary, gpux.to_device(idx), gpux.to_device(vals), d_old)
    return d_ary.copy_to_host(), d_old.copy_to_host()


@pytest.mark.parametrize("space", SPACES)
@pytest.mark.parametrize("op,dtype", list(_cases()))
def test_uncontended_returns_old(device, op, dtype, space, rng):
    """One work-item per element: each gets the initial value back and the element
    holds op(initial, value)."""
    kernel = KERNELS[op][0 if space == "global" else 1]
    ary = _initial(op, dtype, N, rng)
    vals = _values(op, dtype, N, rng)
    idx = np.arange(N, dtype=np.int64)
    got, old = _run(kernel, ary.copy(), idx, vals, N)
    np.testing.assert_array_equal(old, ary)
    want = np.array([_apply(op, a, v) for a, v in zip(ary, vals)], dtype=ary.dtype)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op,dtype", list(_cases()))
def test_on_a_work_items_own_array(device, op, dtype, rng):
    """An atomic on a local array (private memory, which OpenCL's atomics do not take):
    the old value comes back and the element holds op(old, value), as numba.cuda's (a
    driver refused the program)."""
    ary = _initial(op, dtype, N, rng)
    vals = _values(op, dtype, N, rng)
    idx = np.arange(N, dtype=np.int64)
    if device.target.emit_kind == "source":  # (docs/opencl-c.md: a clear error there)
        with pytest.raises(GpuxUserError, match=r"private \(local.array\) memory"):
            _run(KERNELS[op][2], ary.copy(), idx, vals, N)
        return
    got, old = _run(KERNELS[op][2], ary.copy(), idx, vals, N)
    np.testing.assert_array_equal(old, ary)
    want = np.array([_apply(op, a, v) for a, v in zip(ary, vals)], dtype=ary.dtype)
    np.testing.assert_array_equal(got, want)


_CONTENDED = ["add", "sub", "and_", "or_", "xor", "min", "max", "nanmin", "nanmax", "inc",
              "dec"]


@pytest.mark.parametrize("space", SPACES)
@pytest.mark.parametrize("op,dtype", [p for p in _cases() if p.values[0] in _CONTENDED])
def test_contended(device, op, dtype, space, rng):
    """N work-items on SLOTS elements: the final values are the sequential result
    (these operations commute), and the old values are values the element held."""
    kernel = KERNELS[op][0 if space == "global" else 1]
    ary = _initial(op, dtype, SLOTS, rng)
    vals = _values(op, dtype, N, rng)
    idx = (np.arange(N) % SLOTS).astype(np.int64)
    got, old = _run(kernel, ary.copy(), idx, vals, N)
    want = ary.copy()
    for i, v in zip(idx, vals):
        want[i] = _apply(op, want[i], v)
    np.testing.assert_array_equal(got, want)
    if op in ("add", "inc", "dec") or (op == "sub" and np.dtype(dtype).kind != "f"):
        # same-value updates: the old values are the element's history in some order
        for s in range(SLOTS):
            mine = idx == s
            if op in ("inc", "dec") or len(set(vals[mine].tolist())) == 1:
                hist, cur = [], ary[s]
                for v in vals[mine]:
                    hist.append(cur)
                    cur = _apply(op, cur, v)
                np.testing.assert_array_equal(np.sort(old[mine]), np.sort(np.array(hist)))


@pytest.mark.parametrize("dtype", [_dt(d) for d in DTYPES])
def test_exch_contended(device, dtype, rng):
    kernel = KERNELS["exch"][0]
    ary = np.array([7], dtype)
    vals = np.arange(100, 100 + N).astype(dtype)
    got, old = _run(kernel, ary.copy(), np.zeros(N, np.int64), vals, N)
    # every value was stored once and read back once, except the last one stored
    seen = sorted(old.tolist() + got.tolist())
    assert seen == sorted([7] + vals.tolist())


@gpux.jit
def cas_kernel(ary, expected, new, old):
    i = gpux.grid(1)
    if i < ary.size:
        old[i] = gpux.atomic.cas(ary, i, expected[i], new[i])


@gpux.jit
def cas_race(ary, old):
    i = gpux.grid(1)
    if i < old.size:
        old[i] = gpux.atomic.cas(ary, 0, 0, i + 1)


@pytest.mark.parametrize("dtype", [_dt(d) for d in DTYPES])
def test_cas(device, dtype, rng):
    ary = rng.integers(0, 100, N).astype(dtype)
    expected = ary.copy()
    expected[1::2] += 1  # odd elements do not match
    new = (ary + 1000).astype(dtype)
    d_ary, d_old = gpux.to_device(ary), gpux.to_device(np.zeros(N, dtype))
    cas_kernel[1, N](d_ary, gpux.to_device(expected), gpux.to_device(new), d_old)
    np.testing.assert_array_equal(d_old.copy_to_host(), ary)
    want = np.where(expected == ary, new, ary)
    np.testing.assert_array_equal(d_ary.copy_to_host(), want)


@pytest.mark.parametrize("dtype", [_dt(d) for d in ("int32", "uint64", "float32")])
def test_cas_race_one_winner(device, dtype):
    d_ary, d_old = gpux.to_device(np.zeros(1, dtype)), gpux.to_device(np.zeros(N, dtype))
    cas_race[1, N](d_ary, d_old)
    final, old = d_ary.copy_to_host()[0], d_old.copy_to_host()
    assert 1 <= final <= N
    assert (old == 0).sum() == 1           # exactly one work-item swapped
    assert (old[old != 0] == final).all()  # the others saw its value


# ------------------------------------------------------------ N-D and tuple indices
@gpux.jit
def add_2d(ary, vals):
    i, j = gpux.grid(2)
    if i < vals.shape[0] and j < vals.shape[1]:
        gpux.atomic.add(ary, (i % 2, j % 3), vals[i, j])


@gpux.jit
def max_3d(ary, vals):
    i = gpux.grid(1)
    if i < vals.size:
        gpux.atomic.max(ary, (i % 2, (i // 2) % 2, i % 3), vals[i])


@gpux.jit
def add_1d_tuple(ary, vals, old):
    i = gpux.grid(1)
    if i < vals.size:
        old[i] = gpux.atomic.add(ary, (i,), vals[i])


@gpux.jit
def add_shared_2d(out, vals):
    i, j = gpux.thread_idx.x, gpux.thread_idx.y
    sm = gpux.shared.array((2, 3), out.dtype)
    if i < 2 and j < 3:
        sm[i, j] = 0
    gpux.barrier()
    gpux.atomic.add(sm, (i % 2, j % 3), vals[i, j])
    gpux.barrier()
    if i < 2 and j < 3:
        out[i, j] = sm[i, j]


@pytest.mark.parametrize("dtype", [_dt(d) for d in ("int32", "float64")])
def test_nd_tuple_indices(device, dtype, rng):
    vals = rng.integers(-9, 9, (8, 6)).astype(dtype)
    want = np.zeros((2, 3), dtype)
    for i in range(8):
        for j in range(6):
            want[i % 2, j % 3] += vals[i, j]
    d = gpux.to_device(np.zeros((2, 3), dtype))
    add_2d[(1, 1), (8, 6)](d, gpux.to_device(vals))
    np.testing.assert_array_equal(d.copy_to_host(), want)
    out = gpux.to_device(np.zeros((2, 3), dtype))
    add_shared_2d[1, (8, 6)](out, gpux.to_device(vals))
    np.testing.assert_array_equal(out.copy_to_host(), want)

    v3 = rng.integers(-100, 100, 24).astype(dtype)
    want3 = np.full((2, 2, 3), -1000, dtype)
    for i, v in enumerate(v3):
        k = (i % 2, (i // 2) % 2, i % 3)
        want3[k] = max(want3[k], v)
    d3 = gpux.to_device(np.full((2, 2, 3), -1000, dtype))
    max_3d[1, 24](d3, gpux.to_device(v3))
    np.testing.assert_array_equal(d3.copy_to_host(), want3)

    a1 = rng.integers(0, 9, 16).astype(dtype)
    v1 = rng.integers(0, 9, 16).astype(dtype)
    d1, dold = gpux.to_device(a1), gpux.to_device(np.zeros(16, dtype))
    add_1d_tuple[1, 16](d1, gpux.to_device(v1), dold)
    np.testing.assert_array_equal(dold.copy_to_host(), a1)
    np.testing.assert_array_equal(d1.copy_to_host(), a1 + v1)


# ------------------------------------------------------------ NaN handling (numba.cuda's)
@gpux.jit
def minmax_nan(ary, vals, old):
    old[0] = gpux.atomic.min(ary, 0, vals[0])
    old[1] = gpux.atomic.max(ary, 1, vals[1])
    old[2] = gpux.atomic.nanmin(ary, 2, vals[2])
    old[3] = gpux.atomic.nanmax(ary, 3, vals[3])


@pytest.mark.parametrize("dtype", [_dt(d) for d in ("float32", "float64")])
def test_float_minmax_nan(device, dtype):
    nan = np.nan
    for ary, vals, want in [
        # NaN in memory: min/max keep it, nanmin/nanmax replace it
        ([nan, nan, nan, nan], [1, 1, 1, 1], [nan, nan, 1, 1]),
        # NaN value: nothing changes for any of them
        ([2, 2, 2, 2], [nan, nan, nan, nan], [2, 2, 2, 2]),
        ([2, 2, 2, 2], [1, 3, 1, 3], [1, 3, 1, 3]),
    ]:
        a = np.array(ary, dtype)
        d, dold = gpux.to_device(a), gpux.to_device(np.zeros(4, dtype))
        minmax_nan[1, 1](d, gpux.to_device(np.array(vals, dtype)), dold)
        np.testing.assert_array_equal(d.copy_to_host(), np.array(want, dtype))
        np.testing.assert_array_equal(dold.copy_to_host(), a)


@gpux.jit
def nan_minmax_each(ary_min, ary_max, vals, old_min, old_max):
    i = gpux.grid(1)
    if i < vals.size:
        old_min[i] = gpux.atomic.nanmin(ary_min, i, vals[i])
        old_max[i] = gpux.atomic.nanmax(ary_max, i, vals[i])


def _signed_nan(dtype, negative):
    bits = {np.float32: (np.uint32, 0x7FC00000, 31), np.float64: (np.uint64, 0x7FF8000000000000, 63)}
    ut, qnan, top = bits[np.dtype(dtype).type]
    return np.array([qnan | (int(negative) << top)], ut).view(dtype)[0]


@pytest.mark.parametrize("dtype", [_dt(d) for d in ("float32", "float64")])
def test_nanmin_nanmax_every_sign(device, dtype):
    """Every pairing of memory and value among NaNs of both signs, infinities, zeros of
    both signs and finite values of both signs: numpy.fmin/fmax, and the old value."""
    specials = [_signed_nan(dtype, False), _signed_nan(dtype, True), -np.inf, -2.5, -0.0,
                0.0, 1.5, np.inf]
    mem = np.array([a for a in specials for _ in specials], dtype)
    vals = np.array([v for _ in specials for v in specials], dtype)
    d_min, d_max = gpux.to_device(mem.copy()), gpux.to_device(mem.copy())
    o_min, o_max = gpux.device_array(mem.size, dtype), gpux.device_array(mem.size, dtype)
    nan_minmax_each[1, mem.size](d_min, d_max, gpux.to_device(vals), o_min, o_max)
    with np.errstate(invalid="ignore"):
        want_min, want_max = np.fmin(mem, vals), np.fmax(mem, vals)
    # zeros of either sign compare equal; NaNs of either sign are NaN
    np.testing.assert_array_equal(d_min.copy_to_host(), want_min)
    np.testing.assert_array_equal(d_max.copy_to_host(), want_max)
    np.testing.assert_array_equal(o_min.copy_to_host().view(mem.dtype), mem)
    np.testing.assert_array_equal(o_max.copy_to_host().view(mem.dtype), mem)
    # the old value is the element's bits, a negative NaN included
    assert (o_min.copy_to_host().view(f"u{mem.itemsize}") == mem.view(f"u{mem.itemsize}")).all()
    # between zeros of opposite signs the zero in memory stays (a float compare finds
    # them equal, as numba.cuda's compare-and-swap loop does)
    zeros = (mem == 0) & (vals == 0)
    for d in (d_min, d_max):
        assert (np.signbit(d.copy_to_host()[zeros]) == np.signbit(mem[zeros])).all()


# ------------------------------------------------------------ errors
def test_typing_errors():
    def bitwise_float(a):
        gpux.atomic.and_(a, 0, 1.0)

    def wrong_arity(a):
        gpux.atomic.add(a, 0, 1)

    def inc_signed(a):
        gpux.atomic.inc(a, 0, 1)

    for fn, sig, match in [
        (bitwise_float, "void(float32[::1])", "atomic.and_ supports arrays of"),
        (wrong_arity, "void(float32[:, ::1])", "needs a tuple of 2 indices"),
        (inc_signed, "void(int32[::1])", "atomic.inc supports arrays of"),
    ]:
        with pytest.raises(TypingError, match=match):
            gpux.compile(fn, sig, target="opencl")


def test_int64_atomics_need_the_feature():
    """A device without int64_atomics gets a ValidationError, not a driver failure."""
    from numba_gpux.targets.opencl.target import make_target

    def k(a):
        gpux.atomic.add(a, 0, 1)

    no64 = make_target(features={"fp64"})
    with pytest.raises(gpux.ValidationError, match="int64_atomics"):
        gpux.compile(k, "void(int64[::1])", target=no64)
    gpux.compile(k, "void(int32[::1])", target=no64)  # 32-bit ones are fine


CONFORMANCE_KERNELS = (
    [(KERNELS[op][0], f"void({dt}[::1], int64[::1], {dt}[::1], {dt}[::1])")
     for op, (dts, _) in ATOMIC_OPS.items() for dt in dts]
    + [(KERNELS[op][1], f"void({dt}[::1], int64[::1], {dt}[::1], {dt}[::1])")
       for op, (dts, _) in ATOMIC_OPS.items() for dt in dts]
    + [(cas_kernel, f"void({dt}[::1], {dt}[::1], {dt}[::1], {dt}[::1])") for dt in DTYPES]
    + [(add_2d, "void(float64[:, ::1], float64[:, ::1])"),
       (max_3d, "void(int32[:, :, ::1], int32[::1])"),
       (add_shared_2d, "void(int32[:, ::1], int32[:, ::1])"),
       (minmax_nan, "void(float32[::1], float32[::1], float32[::1])")]
)
