"""Deferred frees (``memory.PendingFrees``): by default an allocation is freed with
its last array; a device given a PendingFrees frees in batches, never inside a
``disable()`` block, and goes back to freeing at once when it is taken away."""

import gc

import numpy as np

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
