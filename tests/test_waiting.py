"""Waiting for a device: work already complete is not handed to a helper thread."""

import os
import subprocess
import sys
import threading

import pytest

from numba_gpux import waiting


def test_a_wait_whose_work_is_done_runs_on_the_calling_thread():
    seen = []
    waiting.wait_blocking(lambda: seen.append(threading.current_thread()), done=lambda: True)
    assert seen == [threading.main_thread()]


@pytest.mark.parametrize("done", [None, lambda: False, lambda: 1 / 0],
                         ids=["no-query", "not-done", "query-fails"])
def test_a_wait_not_known_done_is_handed_over(done):
    seen = []
    waiting.wait_blocking(lambda: seen.append(threading.current_thread()), done=done)
    assert seen and seen[0] is not threading.main_thread()


_FINISHED_WORK = """
import sys, time
import numpy as np
import pyopencl as cl
import numba_gpux as gpux
from numba_gpux import waiting

class NoHandOver:
    class jobs:
        @staticmethod
        def put(job):
            raise AssertionError("the wait was handed to a helper thread")

@gpux.jit
def fill(a, v):
    i = gpux.grid(1)
    if i < a.size:
        a[i] = v

a = gpux.device_array(1000, np.float32)
fill[4, 256](a, np.float32(1))
gpux.synchronize()  # compiled and loaded; the queue is idle
rt = a.device.runtime
if cl.enqueue_marker(rt._q(None)).command_execution_status != cl.command_execution_status.COMPLETE:
    print("LATE-MARKERS")
    sys.exit(0)
waiting._idle[:] = [NoHandOver()]
fill[4, 256](a, np.float32(2))
time.sleep(0.2)  # long enough for 1000 stores to finish
gpux.synchronize()
fill[4, 256](a, np.float32(3))
assert isinstance(rt.busy, cl.Event)  # the launch's own event says when the queue is done
time.sleep(0.2)
real_marker = cl.enqueue_marker

def no_marker(*args, **kwargs):
    raise AssertionError("a read enqueued a marker (a read behind one starts late)")

cl.enqueue_marker = no_marker
assert (a.copy_to_host() == 3).all()
cl.enqueue_marker = real_marker
assert rt.busy is False
waiting._idle[:] = []
fill[4, 256](a, np.float32(4))  # not waited for: handed over, same result
assert (a.copy_to_host() == 4).all()
print("OK")
"""


def test_opencl_reads_and_synchronize_of_finished_work_are_not_handed_over(opencl_device,
                                                                          tmp_path):
    """In a process of its own: one queue in use (with more, every wait is handed over)."""
    script = tmp_path / "finished.py"
    script.write_text(_FINISHED_WORK)
    env = dict(os.environ, NUMBA_GPUX_DEVICE=opencl_device.spec)
    p = subprocess.run([sys.executable, str(script), opencl_device.spec], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    if p.stdout.strip() == "LATE-MARKERS":
        pytest.skip(f"{opencl_device.spec}: the driver completes a marker on an idle queue "
                    f"later, so every wait there is handed over")
    assert p.stdout.strip() == "OK", p.stdout
