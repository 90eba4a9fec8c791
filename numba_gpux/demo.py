"""``python -m numba_gpux demo``: a handful of real kernels, checked against NumPy."""

from __future__ import annotations

import math
import time

import numpy as np

__all__ = ["run_demo"]


def _kernels():
    import numba_gpux as gpux

    @gpux.jit
    def saxpy(a, x, y, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = a * x[i] + y[i]

    @gpux.jit(device=True)
    def smooth(v):
        return math.exp(-v * v) * math.cos(v)

    @gpux.jit
    def apply_2d(a, out):
        i, j = gpux.grid(2)
        if i < a.shape[0] and j < a.shape[1]:
            out[i, j] = smooth(a[i, j]) + math.sqrt(abs(a[i, j]))

    @gpux.jit
    def row_sums(m, out):
        i = gpux.grid(1)
        if i < m.shape[0]:
            acc = 0.0
            for j in range(m.shape[1]):
                acc += m[i, j]
            out[i] = acc

    @gpux.jit
    def mandel(xs, ys, max_iter, out):
        i, j = gpux.grid(2)
        if i < ys.size and j < xs.size:
            cr = xs[j]
            ci = ys[i]
            zr = 0.0
            zi = 0.0
            n = 0
            while n < max_iter and zr * zr + zi * zi <= 4.0:
                zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
                n += 1
            out[i, j] = n

    return saxpy, apply_2d, row_sums, mandel


def _mandel_ref(xs, ys, max_iter):
    out = np.zeros((ys.size, xs.size), np.int32)
    c = xs[None, :] + 1j * ys[:, None]
    z = np.zeros_like(c)
    alive = np.ones(c.shape, bool)
    for _ in range(max_iter):
        alive &= (z.real * z.real + z.imag * z.imag) <= 4.0
        z[alive] = z[alive] ** 2 + c[alive]
        out += alive
    return out


def run_demo(spec: str | None = None) -> int:
    import numba_gpux as gpux

    try:
        dev = gpux.select_device(spec) if spec else gpux.default_device()
    except gpux.DeviceNotFoundError as e:
        print(e)
        return 1
    print(f"numba-gpux {gpux.__version__} demo on {dev.spec}: {dev.name} ({dev.vendor})\n")
    saxpy, apply_2d, row_sums, mandel = _kernels()
    rng = np.random.default_rng(0)
    ok = True
    rows = []

    def run(name, launch, check):
        nonlocal ok
        t0 = time.perf_counter()
        launch()
        gpux.synchronize(dev)
        t1 = time.perf_counter()
        launch()
        gpux.synchronize(dev)
        t2 = time.perf_counter()
        good, err = check()
        ok &= good
        rows.append((name, (t1 - t0) * 1e3, (t2 - t1) * 1e3, "ok" if good else "WRONG", err))

    n = 1 << 20
    x = rng.standard_normal(n, dtype=np.float32)
    y = rng.standard_normal(n, dtype=np.float32)
    dx, dy, dout = gpux.to_device(x), gpux.to_device(y), gpux.device_array(n, np.float32)
    run("saxpy (1M float32)", lambda: saxpy[(n + 255) // 256, 256](np.float32(2.5), dx, dy, dout),
        lambda: _close(dout.copy_to_host(), 2.5 * x + y, 1e-6))

    a = rng.standard_normal((512, 384))
    da, d2 = gpux.to_device(a), gpux.device_array_like(a)
    ref2 = np.exp(-a * a) * np.cos(a) + np.sqrt(np.abs(a))
    run("2-D map + device function (float64)",
        lambda: apply_2d[(32, 24), (16, 16)](da, d2), lambda: _close(d2.copy_to_host(), ref2, 1e-12))

    m = rng.random((4096, 64), dtype=np.float32)
    mt = gpux.to_device(np.asfortranarray(m))
    rs = gpux.device_array(4096, np.float32)
    run("row sums of an F-ordered matrix", lambda: row_sums[16, 256](mt, rs),
        lambda: _close(rs.copy_to_host(), m.sum(axis=1), 1e-5))

    xs = np.linspace(-2.0, 0.6, 300)
    ys = np.linspace(-1.2, 1.2, 200)
    dm = gpux.device_array((200, 300), np.int32)
    run("mandelbrot (while loop, tuples)",
        lambda: mandel[(13, 19), (16, 16)](gpux.to_device(xs), gpux.to_device(ys), 100, dm),
        lambda: _exact_mostly(dm.copy_to_host(), _mandel_ref(xs, ys, 100)))

    print(f"{'kernel':38s} {'first (ms)':>11s} {'again (ms)':>11s}  result   max error")
    for name, first, again, res, err in rows:
        print(f"{name:38s} {first:11.1f} {again:11.2f}  {res:7s}  {err:.2e}")
    print("\nfirst = compile + launch + copy; again = launch of the compiled kernel")
    print("all results match NumPy" if ok else "SOME RESULTS ARE WRONG")
    return 0 if ok else 1


def _close(got, want, rtol):
    err = float(np.max(np.abs(got - want) / (np.abs(want) + 1.0))) if want.size else 0.0
    return err <= rtol * 10, err


def _exact_mostly(got, want):
    # escape counts can differ by one at the set's boundary in floating point
    diff = np.abs(got.astype(np.int64) - want)
    frac = float(np.mean(diff > 0))
    return frac < 1e-3, frac
