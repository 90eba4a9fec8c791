"""Allocations are rounded up to CUDA's allocator granularity, so a kernel that writes
a little past the end of a small array (a bug CUDA hides; real numba.cuda code has it)
stays inside its own allocation on a CPU device instead of corrupting the process."""

import subprocess
import sys
import textwrap

from numba_gpux.memory import ALLOC_GRANULE, padded_size


def test_padded_sizes():
    assert ALLOC_GRANULE == 256
    assert [padded_size(n) for n in (0, 1, 256, 257, 4096)] == [256, 256, 256, 512, 4096]


def test_the_runtime_gets_the_padded_size(device):
    import numpy as np

    import numba_gpux as gpux

    a = gpux.to_device(np.zeros(1, dtype=np.int32))
    size = getattr(a._alloc.handle, "size", None)  # an OpenCL buffer knows its size
    if size is not None:
        assert size == 256
    assert a.nbytes == 4 and a.copy_to_host().tolist() == [0]


PROGRAM = """
import numpy as np
from numba_gpux import cuda

@cuda.jit
def past_the_end(out):
    for i in range(48):          # 192 bytes into a 4-byte array
        out[i] = i + 1

for _ in range(200):
    small = [np.zeros(1, dtype=np.int32) for _ in range(8)]
    for a in small:
        past_the_end[1, 1](a)
    assert all(a[0] == 1 for a in small)
print("ok")
"""


def test_writes_past_a_small_array_do_not_crash_the_process(device):
    env_dev = device.spec
    p = subprocess.run([sys.executable, "-W", "ignore", "-c", textwrap.dedent(PROGRAM)],
                       capture_output=True, text=True, timeout=300,
                       env={**__import__("os").environ, "NUMBA_GPUX_DEVICE": env_dev})
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.strip().endswith("ok")
