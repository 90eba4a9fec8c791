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


def test_waits_within_short_run_on_the_calling_thread_and_nest():
    seen = []
    with waiting.short():
        with waiting.short():
            waiting.wait_blocking(lambda: seen.append(threading.current_thread()))
        waiting.wait_blocking(lambda: seen.append(threading.current_thread()))
    waiting.wait_blocking(lambda: seen.append(threading.current_thread()))
    with waiting.short(False):  # (a caller that found the work may be long)
        waiting.wait_blocking(lambda: seen.append(threading.current_thread()))
    assert seen[:2] == [threading.main_thread()] * 2
    assert seen[2] is not threading.main_thread()  # handed over again after the block
    assert seen[3] is not threading.main_thread()


def test_short_on_another_thread_leaves_the_main_thread_s_waits_alone():
    entered, release = threading.Event(), threading.Event()

    def other():
        with waiting.short():
            entered.set()
            release.wait(30)

    t = threading.Thread(target=other)
    t.start()
    try:
        assert entered.wait(30)
        seen = []
        waiting.wait_blocking(lambda: seen.append(threading.current_thread()))
        assert seen and seen[0] is not threading.main_thread()
    finally:
        release.set()
        t.join()


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


_REDUCE_ON_IDLE = """
import sys
import numpy as np
import numba_gpux as gpux
from numba_gpux import algorithms as alg, waiting

made = []

class Counting(waiting._Helper):
    def __init__(self):
        made.append(self)
        super().__init__()

waiting._Helper = Counting
dev = gpux.select_device(sys.argv[1])
x = gpux.to_device(np.arange(1 << 20, dtype=np.float32) % 8)  # (sums exact in float32)
absmax = gpux.jit(device=True)(lambda a, b: max(abs(a), abs(b)))
alg.reduce(x, "max")
alg.reduce(x, absmax)  # (compiled before the helpers are counted)
dev.runtime.synchronize()
waiting._idle[:] = []
made.clear()  # (the custom operator's read above may have been handed over)
assert dev.runtime.idle()
for op in ("max", "add", "min"):
    assert alg.reduce(x, op) == {"max": 7, "add": 28 * 2**17, "min": 0}[op]
assert made == [], "a built-in reduce on an idle device handed its wait over"
dev.runtime.synchronize()
assert alg.reduce(x, absmax) == 7
print("OK", len(made))
"""


def test_a_builtin_reduce_on_an_idle_device_waits_for_its_result_directly(opencl_device,
                                                                          tmp_path):
    """Work of bounded length (a whole-array reduce with a built-in operator) queued on an
    idle device: the read of its result is not handed to a helper thread
    (``waiting.short``).  In a process of its own, with one queue in use."""
    script = tmp_path / "reduce_idle.py"
    script.write_text(_REDUCE_ON_IDLE)
    p = subprocess.run([sys.executable, str(script), opencl_device.spec],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.startswith("OK"), p.stdout
