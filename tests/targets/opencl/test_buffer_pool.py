"""The OpenCL runtime keeps freed buffers for the next allocation of their size."""

import numpy as np
import pytest

import numba_gpux as gpux


@pytest.fixture
def rt(opencl_device):
    rt = opencl_device.runtime
    rt.release_pool()
    yield rt
    rt.release_pool()


def test_a_freed_buffer_serves_the_next_allocation_of_its_size(rt):
    if rt._multi:
        pytest.skip("another queue is in use in this process: buffers are not kept")
    big = rt.POOL_MIN_BYTES * 4
    a = rt.alloc(big)
    ptr = a.int_ptr
    rt.free(a)
    b = rt.alloc(big)
    assert b.int_ptr == ptr  # the same buffer again
    c = rt.alloc(big)
    assert c.int_ptr != ptr  # none kept: a new one
    small = rt.alloc(64)
    rt.free(small)  # small buffers are released, not kept
    assert 64 not in rt._pool
    for x in (b, c):
        rt.free(x)
    assert rt._pool_bytes == 2 * big
    rt.release_pool()
    assert rt._pool_bytes == 0 and not rt._pool


def test_the_pool_keeps_at_most_its_cap(rt):
    if rt._multi:
        pytest.skip("another queue is in use in this process: buffers are not kept")
    size = rt.POOL_MIN_BYTES
    bufs = [rt.alloc(size) for _ in range(8)]
    rt._pool_cap = 3 * size
    for b in bufs:
        rt.free(b)
    assert rt._pool_bytes == 3 * size and len(rt._pool[size]) == 3


def test_arrays_reuse_buffers_and_keep_their_values(opencl_device):
    x = np.arange(1 << 16, dtype=np.float64)
    for k in range(3):  # each round frees the last round's arrays
        d = gpux.to_device(x + k)
        e = gpux.device_array_like(d)
        e.copy_to_device(x * k)
        np.testing.assert_array_equal(d.copy_to_host(), x + k)
        np.testing.assert_array_equal(e.copy_to_host(), x * k)


def test_new_small_buffers_start_zeroed(rt, opencl_device):
    """A lock, flag or counter a numba.cuda program forgot to clear reads 0, as fresh
    CUDA memory does in practice: Intel's CPU driver hands out freed heap memory for
    buffers of a page or less (every one of 200 held garbage without the fill)."""
    from numba_gpux import cuda

    for nbytes in (1, 4, 64, 1000, rt.ZERO_NEW_BYTES):
        for _ in range(20):
            dirty = rt.alloc(nbytes)  # freed memory the next buffer may come from
            rt.write(dirty, 0, np.full(nbytes, 0xAB, np.uint8))
            rt.free(dirty)
            buf = rt.alloc(nbytes)
            host = np.full(nbytes, 1, np.uint8)
            rt.read(host, buf, 0)
            rt.free(buf)
            assert not host.any(), nbytes
    locks = [cuda.device_array(1, np.int32) for _ in range(100)]
    assert all(int(lk.copy_to_host()[0]) == 0 for lk in locks)
    made = [gpux.device_array(16, np.float64, device=opencl_device) for _ in range(100)]
    assert all(not m.copy_to_host().any() for m in made)
