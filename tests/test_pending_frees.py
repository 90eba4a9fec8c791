"""Deferred frees (``memory.PendingFrees``): by default an allocation is freed with
its last array; a device given a PendingFrees frees in batches, never inside a
``disable()`` block, and goes back to freeing at once when it is taken away."""

import gc

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import memory


def test_frees_are_batched_and_held_while_disabled(device):
    pending = memory.PendingFrees(max_count=lambda: 2, max_bytes=lambda: 1 << 40)
    before = memory.pending_frees(device)
    gc.collect()
    gc.disable()  # no collection of other tests' garbage in the middle of the counts
    memory.defer_frees(device, pending)
    try:
        held = memory.allocated_bytes(device)
        a = gpux.to_device(np.zeros(100, np.uint8))
        b = gpux.to_device(np.zeros(100, np.uint8))
        del a, b
        assert len(pending) == 2 and pending.pending_bytes == 200
        assert memory.allocated_bytes(device) == held + 200  # not freed yet
        with pending.disable():
            c = gpux.to_device(np.zeros(50, np.uint8))
            del c
            assert len(pending) == 3  # over the count, but nothing is freed in here
            pending.clear()
            assert len(pending) == 3
        pending.clear()
        assert len(pending) == 0 and memory.allocated_bytes(device) == held
        d = gpux.to_device(np.zeros(10, np.uint8))
        del d
        assert len(pending) == 1
    finally:
        memory.defer_frees(device, before)
        gc.enable()
    assert len(pending) == 0  # taken away: what was pending is freed
    held = memory.allocated_bytes(device)
    e = gpux.to_device(np.zeros(10, np.uint8))
    assert memory.allocated_bytes(device) == held + 10
    del e
    if before is None:
        assert memory.allocated_bytes(device) == held


class _FailingOnce:
    """A runtime wrapper whose next alloc fails once (as a driver out of memory)."""

    def __init__(self, rt):
        self.rt, self.fail = rt, True

    def __getattr__(self, name):
        return getattr(self.rt, name)

    def alloc(self, nbytes):
        if self.fail:
            self.fail = False
            raise MemoryError("out of device memory")
        return self.rt.alloc(nbytes)


def test_an_allocation_that_fails_makes_the_pending_frees_and_tries_again(device):
    pending = memory.PendingFrees(max_count=lambda: 100)
    before = memory.pending_frees(device)
    gc.collect()
    memory.defer_frees(device, pending)
    rt = device.runtime
    try:
        a = gpux.to_device(np.zeros(64, np.uint8))
        del a
        assert len(pending) == 1
        device.runtime = _FailingOnce(rt)
        b = gpux.to_device(np.arange(8, dtype=np.uint8))  # fails once, frees, succeeds
        assert len(pending) == 0 and b.copy_to_host().tolist() == list(range(8))
        device.runtime.fail = True
        with pytest.raises(MemoryError):  # nothing pending: the failure stands
            gpux.device_array(8)
    finally:
        device.runtime = rt
        memory.defer_frees(device, before)


_REUSE = """
import gc, sys
import numpy as np
import numba_gpux as gpux
from numba_gpux import memory

dev = gpux.default_device()
pending = memory.PendingFrees(max_count=lambda: 10, max_bytes=lambda: 1 << 40)
gc.disable()
memory.defer_frees(dev, pending)
n = 1 << 18  # 1 MiB of float32: a size the device's runtime reuses
held = memory.allocated_bytes(dev)
a = gpux.to_device(np.ones(n, np.float32))
handle = a._alloc.handle
del a
assert len(pending) == 1
b = gpux.to_device(np.arange(n, dtype=np.float32))
assert b._alloc.handle is handle  # the pending buffer, not a new one
assert len(pending) == 1 and pending.pending_bytes == 4 * n  # still counted
np.testing.assert_array_equal(b.copy_to_host(), np.arange(n, dtype=np.float32))
c = gpux.device_array(n + 1024, np.float32)  # another size: a buffer of its own
assert c._alloc.handle is not handle
del b
with pending.disable():  # (numba.cuda's defer_cleanup: nothing pending is reused)
    d = gpux.device_array(n, np.float32)
    assert all(d._alloc.handle is not h for _, h, _ in pending._items)
assert len(pending) == 2 and memory.allocated_bytes(dev) == held + 4 * (4 * n + 1024)
del c, d
pending.clear()
assert len(pending) == 0 and memory.allocated_bytes(dev) == held
# once a second queue is used, commands of two queues could overlap: no reuse
from numba_gpux import cuda
s = cuda.stream()
e = cuda.to_device(np.ones(n, np.float32), stream=s)
s.synchronize()
handle = e._alloc.handle
del e
f = gpux.device_array(n, np.float32)
assert f._alloc.handle is not handle and len(pending) == 1
print("ok")
"""


def test_a_pending_buffer_backs_the_next_allocation_of_its_size(opencl_device):
    # Intel's CPU driver faults a new buffer's pages in at its first write (82 MB: some
    # 40 ms against 6 ms into a buffer used before); a batch of deferred frees held the
    # buffers a program's next call would allocate again.  The batch's count and bytes
    # stay what numba.cuda's would be.  In a fresh process: once a second queue has been
    # used, the OpenCL runtime reuses no buffer (its commands could overlap a new user's)
    import os
    import subprocess
    import sys

    env = dict(os.environ, NUMBA_GPUX_DEVICE=opencl_device.spec)
    p = subprocess.run([sys.executable, "-c", _REUSE], capture_output=True, text=True,
                       env=env, timeout=600)
    assert p.returncode == 0 and p.stdout.strip().endswith("ok"), p.stderr[-3000:]
