"""Kernels of one grid dimension whose loops walk each work-item's own row of an array
run with their work-items one after another on devices that make vectors of
neighbouring work-items (``lanes.lanes_prefer_serial``, ``Target.serial_lanes_metadata``):
which kernels qualify, the loop depths it reads, and that such kernels give the same
answers."""

import math

import numpy as np
import pytest

from numba_gpux import cuda, lanes
from numba_gpux import irlex as lx


@cuda.jit
def row_sums(out, a):
    i = cuda.grid(1)
    if i < a.shape[0]:
        s = 0.0
        for k in range(a.shape[1]):
            s += a[i, k]
        out[i] = s


@cuda.jit
def dist_to_point(out, a, c):
    i = cuda.grid(1)
    if i < a.shape[0]:
        s = 0.0
        for k in range(a.shape[1]):
            d = a[i, k] - c[k]
            s += d * d
        out[i] = math.sqrt(s)


@cuda.jit
def nearest(label, x, cent):  # each row read again for every centre: from cache
    i = cuda.grid(1)
    if i < x.shape[0]:
        best = 1e300
        arg = 0
        for c in range(cent.shape[0]):
            d = 0.0
            for k in range(x.shape[1]):
                t = x[i, k] - cent[c, k]
                d += t * t
            if d < best:
                best = d
                arg = c
        label[i] = arg


@cuda.jit
def heavy_row(out, a):  # much arithmetic per element
    i = cuda.grid(1)
    if i < a.shape[0]:
        s = 0.0
        for k in range(a.shape[1]):
            v = a[i, k]
            for _ in range(6):
                v = v * 1.0001 + 0.5
            s += v
        out[i] = s


@cuda.jit
def nearest_point(label, p, cent):  # p[i, 0] and p[i, 1]: the same each time round
    i = cuda.grid(1)
    if i < p.shape[0]:
        best = 1e300
        arg = 0
        for c in range(cent.shape[0]):
            dx = p[i, 0] - cent[c, 0]
            dy = p[i, 1] - cent[c, 1]
            d = dx * dx + dy * dy
            if d < best:
                best = d
                arg = c
        label[i] = arg


@cuda.jit
def row_exp(out, a):  # a library function per element: the vectors' work
    i = cuda.grid(1)
    if i < a.shape[0]:
        for k in range(a.shape[1]):
            out[i, k] = math.exp(a[i, k])


@cuda.jit
def batched_matmul3(c, a, b):  # every (r, k) another element: nested loops, no reuse
    i = cuda.grid(1)
    if i < a.shape[0]:
        for r in range(3):
            for col in range(3):
                s = 0.0
                for k in range(3):
                    s += a[i, r, k] * b[i, k, col]
                c[i, r, col] = s


@cuda.jit
def row_to_column(out, a):  # its stores consecutive across lanes: strided in order
    i = cuda.grid(1)
    if i < a.shape[0]:
        for k in range(a.shape[1]):
            out[k, i] = a[i, k] * 2.0


@cuda.jit
def row_histogram(hist, a):  # a count at a loaded place: a chain through memory in order
    i = cuda.grid(1)
    if i < a.shape[0]:
        for k in range(a.shape[1]):
            b = int(a[i, k] * hist.shape[1])
            hist[i, min(b, hist.shape[1] - 1)] += 1


@cuda.jit
def row_median(out, a):  # an insertion sort in private memory: the vectors' work
    i = cuda.grid(1)
    if i < a.shape[0]:
        w = cuda.local.array(16, np.float64)
        for k in range(a.shape[1]):
            v = a[i, k]
            j = k
            while j > 0 and w[j - 1] > v:
                w[j] = w[j - 1]
                j -= 1
            w[j] = v
        out[i] = w[a.shape[1] // 2]


@cuda.jit
def csr_rows(y, rowptr, col, val, x):  # each work-item its own run of a CSR matrix
    i = cuda.grid(1)
    if i < y.shape[0]:
        s = 0.0
        for k in range(rowptr[i], rowptr[i + 1]):
            s += val[k] * x[col[k]]
        y[i] = s


@cuda.jit
def search(out, table, x):  # a branch on what the loop loads: vectors run it better
    i = cuda.grid(1)
    if i < x.shape[0]:
        lo = 0
        hi = table.shape[0]
        while lo < hi:
            mid = (lo + hi) // 2
            if table[mid] < x[i]:
                lo = mid + 1
            else:
                hi = mid
        out[i] = lo


@cuda.jit
def field_at_particles(out, xp, field):  # a 3-point stencil of a table: a loop of 3
    i = cuda.grid(1)
    if i < xp.shape[0]:
        c = int(xp[i] + 0.5)
        d = xp[i] - c
        s = 0.0
        for k in range(3):
            s += (0.75 - d * d if k == 1 else 0.25) * field[c - 1 + k]
        out[i] = s


@cuda.jit
def spline_at(out, xs, coef):  # a table's row at an index computed from loaded data
    i = cuda.grid(1)
    if i < xs.shape[0]:
        s = 0.0
        for k in range(xs.shape[1]):
            x = xs[i, k] * (coef.shape[0] - 1)
            j = int(x)
            t = x - j
            s += coef[j, 0] + t * (coef[j, 1] + t * (coef[j, 2] + t * coef[j, 3]))
        out[i] = s


@cuda.jit
def pairwise(out, x, y):  # two grid dimensions
    i, j = cuda.grid(2)
    if i < x.shape[0] and j < y.shape[0]:
        s = 0.0
        for k in range(x.shape[1]):
            d = x[i, k] - y[j, k]
            s += d * d
        out[i, j] = s


@cuda.jit
def fields(out, p):  # a row's fields outside any loop
    i = cuda.grid(1)
    if i < p.shape[0]:
        out[i] = p[i, 0] * p[i, 1] + p[i, 2]


@cuda.jit
def along(out, a):  # consecutive work-items, consecutive addresses
    i = cuda.grid(1)
    if i < a.shape[1]:
        s = 0.0
        for k in range(a.shape[0]):
            s += a[k, i]
        out[i] = s


def _ir(kernel, *args):
    kernel[1, 8](*args)
    (sig,) = kernel.signatures
    return kernel.kernel_ir(sig)[1]


def _seq(values) -> float:
    s = 0.0
    for v in values:
        s += v
    return s


def _rows(n=37, m=11):
    return np.random.default_rng(3).random((n, m))


def test_which_kernels_walk_their_own_rows(device):
    a = _rows()
    out = np.zeros(a.shape[0])
    assert lanes.lanes_prefer_serial(_ir(row_sums, out, a))
    assert lanes.lanes_prefer_serial(_ir(dist_to_point, out, a, a[0].copy()))
    # a row read again in an inner loop, much arithmetic per element, a row's fields
    # read the same each time round the loop, a library function per element, a
    # second grid dimension, no loop, or accesses along the lanes: as vectors; and
    # (below) nested loops over a row's elements in order, stores consecutive across
    # lanes, a store where loaded data say, work in private memory
    assert not lanes.lanes_prefer_serial(_ir(nearest, np.zeros(37, np.int64), a, a[:4].copy()))
    assert not lanes.lanes_prefer_serial(_ir(heavy_row, out, a))
    pts = a[:, :2].copy()
    assert not lanes.lanes_prefer_serial(_ir(nearest_point, np.zeros(37, np.int64), pts, pts[:5]))
    assert not lanes.lanes_prefer_serial(_ir(row_exp, np.zeros_like(a), a))
    m3 = np.random.default_rng(4).random((37, 3, 3))
    assert lanes.lanes_prefer_serial(_ir(batched_matmul3, np.zeros_like(m3), m3, m3))
    assert not lanes.lanes_prefer_serial(_ir(row_to_column, np.zeros((11, 37)), a))
    assert not lanes.lanes_prefer_serial(_ir(row_histogram, np.zeros((37, 4), np.int32), a))
    assert not lanes.lanes_prefer_serial(_ir(row_median, out, a[:, :9].copy()))
    rowptr = np.arange(0, 4 * 38, 4)
    cols = np.random.default_rng(5).integers(0, 37, 4 * 37)
    assert lanes.lanes_prefer_serial(_ir(csr_rows, out, rowptr, cols, a.ravel()[:148], out))
    assert not lanes.lanes_prefer_serial(_ir(search, np.zeros(37, np.int64), np.sort(a[0]), out))
    # loads at addresses loaded data give, in a loop of a constant count or at indices
    # the loop itself loads: gathers either way
    assert not lanes.lanes_prefer_serial(_ir(field_at_particles, out, a[:, 0] * 30 + 1, a[0]))
    assert not lanes.lanes_prefer_serial(_ir(spline_at, out, a, a[:9, :4].copy()))
    assert not lanes.lanes_prefer_serial(_ir(pairwise, np.zeros((37, 37)), a, a))
    assert not lanes.lanes_prefer_serial(_ir(fields, out, a[:, :3].copy()))
    assert not lanes.lanes_prefer_serial(_ir(along, np.zeros(11), a))


def test_loop_depths_count_nested_loops():
    text = "\n".join([
        "define void @f(i64 %n) {",
        "entry:",
        "  br label %outer",
        "outer:",
        "  %i = phi i64 [ 0, %entry ], [ %i1, %latch ]",
        "  br label %inner",
        "inner:",
        "  %j = phi i64 [ 0, %outer ], [ %j1, %inner ]",
        "  %j1 = add i64 %j, 1",
        "  %c = icmp slt i64 %j1, %n",
        "  br i1 %c, label %inner, label %latch",
        "latch:",
        "  %i1 = add i64 %i, 1",
        "  %d = icmp slt i64 %i1, %n",
        "  br i1 %d, label %outer, label %exit",
        "exit:",
        "  ret void",
        "}",
    ])
    lines = lx.lines(text)
    depth = dict(zip(lines, lanes._loops(lines)[0]))
    assert depth["  br label %outer"] == 0
    assert depth["  br label %inner"] == 1
    assert depth["  %j1 = add i64 %j, 1"] == 2
    assert depth["  %i1 = add i64 %i, 1"] == 1
    assert depth["  ret void"] == 0


@pytest.mark.parametrize("block", [1, 7, 64, 128])
def test_kernels_run_in_order_give_the_answers(device, block):
    a = _rows(1000, 13)
    c = a[5].copy()
    out = np.zeros(1000)
    grid = (1000 + block - 1) // block
    sums, dist = cuda.jit(row_sums.py_func), cuda.jit(dist_to_point.py_func)
    sums[grid, block](out, a)
    np.testing.assert_allclose(out, a.sum(axis=1))
    dist[grid, block](out, a, c)
    np.testing.assert_allclose(out, np.sqrt(((a - c) ** 2).sum(axis=1)))
    med, col = cuda.jit(row_median.py_func), cuda.jit(row_to_column.py_func)
    nine = a[:, :9].copy()
    med[grid, block](out, nine)
    np.testing.assert_array_equal(out, np.median(nine, axis=1))
    t = np.zeros((13, 1000))
    col[grid, block](t, a)
    np.testing.assert_array_equal(t, a.T * 2.0)
    csr = cuda.jit(csr_rows.py_func)
    rowptr = np.arange(0, 5 * 1001, 5)
    cols = np.random.default_rng(6).integers(0, 1000, 5000)
    vals = np.random.default_rng(7).random(5000)
    csr[grid, block](out, rowptr, cols, vals, c.repeat(100)[:1000])
    want = (vals * c.repeat(100)[:1000][cols]).reshape(1000, 5)
    np.testing.assert_allclose(out, [_seq(r) for r in want], rtol=1e-13)  # (the facade fuses the multiply-add)
    serial = device.target.serial_lanes_metadata
    for k, chosen in ((sums, True), (dist, True), (csr, True), (med, False), (col, False)):
        info = {art.info.get("serial_lanes") for art in k._code.values()}
        assert info == {"strides" if serial and chosen else None}, k.__name__
