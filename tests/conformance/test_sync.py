"""Synchronization: barrier, barrier_count/and/or, memory fences at block, device
and system scope."""

from __future__ import annotations

import numpy as np
import pytest

import numba_gpux as gpux

TPB = 64


@gpux.jit
def rotate_in_shared(x, out):
    t = gpux.thread_idx.x
    sm = gpux.shared.array(TPB, np.int32)
    sm[t] = x[gpux.grid(1)]
    gpux.barrier()
    out[gpux.grid(1)] = sm[(t + 1) % TPB]


@gpux.jit
def predicates(x, out):
    t = gpux.thread_idx.x
    b = gpux.block_idx.x
    v = x[gpux.grid(1)]
    c = gpux.barrier_count(v > 0)
    a = gpux.barrier_and(v > 0)
    o = gpux.barrier_or(v > 0)
    fc = gpux.barrier_count(v)          # any number is a predicate (non-zero = true)
    if t == 0:
        out[b, 0] = c
        out[b, 1] = a
        out[b, 2] = o
        out[b, 3] = fc


@gpux.jit
def fences(flag, data, out):
    # work-item 0 publishes data, then its flag, fenced; the others read both after
    # a barrier.  Every fence form must compile and keep the program's order.
    t = gpux.thread_idx.x
    if t == 0:
        data[0] = 42
        gpux.fence_block()
        data[1] = 43
        gpux.fence_device()
        data[2] = 44
        gpux.fence_system()
        flag[0] = 1
        gpux.fence("block")
        gpux.fence("device")
        gpux.fence("system")
        gpux.fence()
    gpux.barrier()
    out[t] = flag[0] * (data[0] + data[1] + data[2])


@pytest.mark.feature("barrier")
def test_barrier(device, rng):
    x = rng.integers(-1000, 1000, 4 * TPB).astype(np.int32)
    out = gpux.to_device(np.zeros_like(x))
    rotate_in_shared[4, TPB](gpux.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), np.roll(x.reshape(4, TPB), -1, axis=1).ravel())


@pytest.mark.feature("barrier_pred")
def test_barrier_predicates(device, rng):
    blocks = 5
    x = rng.integers(-3, 4, (blocks, TPB)).astype(np.int32)
    x[1] = 1          # all true
    x[2] = -1         # none > 0, all non-zero
    x[3] = 0          # all false
    out = gpux.to_device(np.zeros((blocks, 4), np.int32))
    predicates[blocks, TPB](gpux.to_device(x.ravel()), out)
    want = np.stack([(x > 0).sum(1), (x > 0).all(1), (x > 0).any(1), (x != 0).sum(1)], axis=1)
    np.testing.assert_array_equal(out.copy_to_host(), want.astype(np.int32))


@pytest.mark.feature("fence_block", "fence_device", "fence_system")
def test_fences(device):
    flag = gpux.to_device(np.zeros(1, np.int32))
    data = gpux.to_device(np.zeros(3, np.int32))
    out = gpux.to_device(np.zeros(TPB, np.int32))
    fences[1, TPB](flag, data, out)
    np.testing.assert_array_equal(out.copy_to_host(), np.full(TPB, 129))


def test_fence_scope_must_be_known():
    from numba.core.errors import TypingError

    def bad():
        gpux.fence("galaxy")

    with pytest.raises(TypingError, match="scope must be 'block', 'device' or 'system'"):
        gpux.compile(bad, "void()", target="opencl")


def test_spirv_fence_scopes():
    """The SPIR-V of the fences: OpMemoryBarrier at Workgroup (2), Device (1) and
    CrossDevice (0) scope, ordering work-group and cross-work-group memory."""
    text = gpux.compile(fences.py_func, "void(int32[::1], int32[::1], int32[::1])",
                        target="opencl").text
    lines = [ln for ln in text.splitlines() if "OpMemoryBarrier" in ln]
    assert len(lines) == 7, lines


@gpux.jit
def sleepers(ns, out):
    i = gpux.grid(1)
    gpux.nanosleep(ns[i])
    gpux.nanosleep(1000)
    out[i] = i


def test_nanosleep(device):
    """A hint: at most about 2*ns on devices with a sleep instruction, nothing elsewhere;
    either way the kernel runs to the end."""
    out = gpux.to_device(np.zeros(TPB, np.int64))
    sleepers[1, TPB](gpux.to_device(np.arange(TPB, dtype=np.uint32) * 10), out)
    np.testing.assert_array_equal(out.copy_to_host(), np.arange(TPB))


def test_nanosleep_needs_an_integer():
    from numba.core.errors import TypingError

    def bad(x):
        gpux.nanosleep(x[0])

    with pytest.raises(TypingError, match="nanosleep: ns must be an integer"):
        gpux.compile(bad, "void(float32[::1])", target="opencl")


CONFORMANCE_KERNELS = [
    (sleepers, "void(uint32[::1], int64[::1])"),
    (rotate_in_shared, "void(int32[::1], int32[::1])"),
    (predicates, "void(int32[::1], int32[:, ::1])"),
    (fences, "void(int32[::1], int32[::1], int32[::1])"),
]
