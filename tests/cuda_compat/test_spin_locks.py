"""Locks taken in a loop: numba.cuda code such as datashader's per-pixel mutex
(``while cuda.atomic.cas(mutex, (y, x), 0, 1) != 0: pass``) relies on each thread
progressing on its own, as CUDA's do.  The lanes of one vector cannot: the lane that
took the lock waits, masked off, for the lanes still spinning.  Such kernels are
compiled so that the driver runs their work-items one at a time where the target
says how (``Target.serial_lanes_metadata``; ``lockstep.waits_for_other_work_items``)."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from numba_gpux import cuda
from numba_gpux.lockstep import waits_for_other_work_items

LINES = textwrap.dedent('''
    import numpy as np
    from numba_gpux import cuda

    @cuda.jit(device=True)
    def lock(mutex, index):
        while cuda.atomic.cas(mutex, index, 0, 1) != 0:
            pass
        cuda.threadfence()

    @cuda.jit(device=True)
    def unlock(mutex, index):
        cuda.threadfence()
        cuda.atomic.exch(mutex, index, 0)

    @cuda.jit(device=True)
    def append(i, x, y, total, count, m2, vals, mutex):
        # a running variance per pixel, its three values updated under the pixel's lock
        lock(mutex, (y, x))
        t = total[y, x]
        c = count[y, x]
        v = vals[i]
        if not np.isnan(v):
            cuda.atomic.add(total, (y, x), v)
            cuda.atomic.add(count, (y, x), 1)
            if c > 0:
                m2[y, x] += (v - t / c) * (v - (t + v) / (c + 1))
        unlock(mutex, (y, x))

    @cuda.jit
    def draw(xs, ys, vals, total, count, m2, mutex):
        # each thread draws the segment from its point to the next: neighbouring
        # threads meet at pixels, and append is called from four places
        i = cuda.grid(1)
        if i < xs.size - 1:
            x0, y0, x1, y1 = xs[i], ys[i], xs[i + 1], ys[i + 1]
            n = max(abs(x1 - x0), abs(y1 - y0))
            if n == 0:
                append(i, x0, y0, total, count, m2, vals, mutex)
            elif abs(x1 - x0) >= abs(y1 - y0):
                for s in range(n + 1):
                    append(i, x0 + (x1 - x0) * s // n, y0 + (y1 - y0) * s // n,
                           total, count, m2, vals, mutex)
            else:
                for s in range(n):
                    append(i, x0 + (x1 - x0) * s // n, y0 + (y1 - y0) * s // n,
                           total, count, m2, vals, mutex)
                append(i, x1, y1, total, count, m2, vals, mutex)

    rng = np.random.default_rng(1)
    N = 400
    xs, ys = rng.integers(0, 23, N), rng.integers(0, 17, N)
    vals = rng.normal(size=N)
    vals[::17] = np.nan
    total = cuda.to_device(np.zeros((17, 23)))
    count = cuda.to_device(np.zeros((17, 23), np.uint32))
    m2 = cuda.to_device(np.zeros((17, 23)))
    mutex = cuda.to_device(np.zeros((17, 23), np.uint32))
    draw[(N + 63) // 64, 64](xs, ys, vals, total, count, m2, mutex)
    want, wc = np.zeros((17, 23)), np.zeros((17, 23))
    for i in range(N - 1):
        x0, y0, x1, y1 = xs[i], ys[i], xs[i + 1], ys[i + 1]
        n = max(abs(x1 - x0), abs(y1 - y0))
        for s in range(n + 1):
            x, y = x0 + (x1 - x0) * s // max(n, 1), y0 + (y1 - y0) * s // max(n, 1)
            if not np.isnan(vals[i]):
                want[y, x] += vals[i]
                wc[y, x] += 1
    ok = np.allclose(total.copy_to_host(), want) and np.array_equal(count.copy_to_host(), wc)
    serial = [a.info.get("serial_lanes") for a in draw._code.values()]
    print("OK" if ok else "WRONG", serial)
''')


def test_a_kernel_that_takes_a_lock_in_a_loop_finishes_with_the_answers(device, tmp_path):
    """Run in a child process, so that a kernel that hangs fails the test instead of
    holding the run."""
    (tmp_path / "lines.py").write_text(LINES)
    env = dict(os.environ, NUMBA_GPUX_DEVICE=device.spec, PYTHONDONTWRITEBYTECODE="1",
               NUMBA_CACHE_DIR=str(tmp_path / "nbcache"))
    try:
        p = subprocess.run([sys.executable, "-W", "ignore", str(tmp_path / "lines.py")],
                           capture_output=True, text=True, env=env, timeout=240,
                           cwd=str(tmp_path))
    except subprocess.TimeoutExpired:
        pytest.fail("a kernel whose threads take per-pixel locks in a loop did not finish")
    assert p.returncode == 0, p.stderr[-3000:]
    out = p.stdout.strip().splitlines()[-1]
    assert out.startswith("OK"), out
    if device.target.serial_lanes_metadata:
        assert "'locks'" in out  # compiled to run its work-items one at a time


def _ir(kernel, *args):
    kernel[1, 32](*args)
    sig = next(iter(kernel._neutral))
    return kernel.kernel_ir(sig)[1]


@cuda.jit
def spin_then_count(mutex, n):
    while cuda.atomic.compare_and_swap(mutex, 0, 1) != 0:
        pass
    n[0] += 1
    cuda.atomic.exch(mutex, 0, 0)


@cuda.jit
def set_a_flag(flag, n):
    while cuda.atomic.exch(flag, 0, 1) == 1:
        pass
    n[0] += 1
    cuda.atomic.exch(flag, 0, 0)


@cuda.jit
def wait_for_a_flag(flags, out):
    # a compare-and-swap that writes what it expects reads the flag atomically: a
    # work-item waiting for another work-group (a look-back scan), no lock
    i = cuda.grid(1)
    if i > 0:
        f = cuda.atomic.cas(flags, i - 1, 0, 0)
        while f == 0:
            f = cuda.atomic.cas(flags, i - 1, 0, 0)
    cuda.atomic.exch(flags, i, 1)
    out[i] = 1


@cuda.jit
def atomics_without_a_lock(a, out):
    # compare-and-swap and exchange outside loops, an exchange in a loop whose old
    # value is not tested, and a float add (a compare-and-swap loop on some targets)
    i = cuda.grid(1)
    out[i] = cuda.atomic.cas(a, i, 0, 1)
    for k in range(3):
        cuda.atomic.exch(a, i, k)
    cuda.atomic.add(out, 0, 1)


def test_which_kernels_take_a_lock_in_a_loop(device):
    mutex = np.zeros(1, np.int32)
    n = np.zeros(1, np.int64)
    assert waits_for_other_work_items(_ir(spin_then_count, mutex, n))
    assert n[0] == 32
    n[0] = 0
    assert waits_for_other_work_items(_ir(set_a_flag, mutex, n))
    assert n[0] == 32
    a = np.zeros(32, np.int32)
    assert not waits_for_other_work_items(_ir(atomics_without_a_lock, a, np.zeros(32, np.int32)))
    flags = np.zeros(32, np.int32)
    flags[:] = 1  # (all set: no work-item waits when this runs)
    assert not waits_for_other_work_items(_ir(wait_for_a_flag, flags, np.zeros(32, np.int32)))
    serial = device.target.serial_lanes_metadata
    for k, want in ((spin_then_count, bool(serial)), (atomics_without_a_lock, False)):
        info = {art.info.get("serial_lanes") == "locks" for art in k._code.values()}
        assert info == {want}, k.__name__
