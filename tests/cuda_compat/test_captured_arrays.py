"""Device arrays a kernel reads from global or closure variables: captured by
reference (numba.cuda's pointer capture), so writes between launches are seen."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import cuda

PRICES = None


def test_a_global_device_array_is_read_at_every_launch(device):
    global PRICES
    PRICES = cuda.to_device(np.array([10.0, 25.0, 5.0], dtype=np.float32))

    @cuda.jit
    def totals(q, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = q[i] * PRICES[i]

    q = cuda.to_device(np.full(3, 2.0, dtype=np.float32))
    out = cuda.device_array(3, dtype=np.float32)
    totals[1, 8](q, out)
    np.testing.assert_equal(out.copy_to_host(), [20.0, 50.0, 10.0])
    PRICES.copy_to_device(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    totals[1, 8](q, out)
    np.testing.assert_equal(out.copy_to_host(), [2.0, 4.0, 6.0])
    (sig,) = totals.nopython_signatures
    assert totals.neutral(sig.args).captured == (PRICES,)


def test_a_closure_device_array_is_written_by_the_kernel(device):
    buf = gpux.to_device(np.zeros(4))
    twice = gpux.to_device(np.zeros(4))

    @gpux.jit
    def fill(x):
        i = gpux.grid(1)
        buf[i] = x
        twice[i] = buf[i] * 2   # the same array read twice is one hidden argument

    fill[1, 4](2.5)
    np.testing.assert_equal(buf.copy_to_host(), [2.5] * 4)
    np.testing.assert_equal(twice.copy_to_host(), [5.0] * 4)


def test_device_functions_called_by_name_capture_for_their_kernel(device):
    """A device function that reads device arrays from globals or closure variables
    (itself, or one it calls) is inlined into the calling kernel's IR, whose launch
    passes them: writes between launches are seen, as in numba.cuda."""
    table = gpux.to_device(np.arange(4.0))

    @gpux.jit(device=True)
    def look(i):
        return table[i]

    @gpux.jit(device=True)
    def twice_looked(i):  # reads no array itself
        return 2.0 * look(i)

    @gpux.jit
    def k(out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = twice_looked(i) + look(3 - i)

    out = gpux.to_device(np.zeros(4))
    k[1, 4](out)
    np.testing.assert_equal(out.copy_to_host(), 2 * np.arange(4.0) + np.arange(4.0)[::-1])
    table.copy_to_device(np.full(4, 10.0))
    k[1, 4](out)
    np.testing.assert_equal(out.copy_to_host(), [30.0] * 4)


def test_a_device_function_compiled_on_its_own_cannot_capture(device):
    table = gpux.to_device(np.arange(4.0))

    @gpux.jit(device=True)
    def look(i):
        return table[i]

    with pytest.raises(Exception, match="device function look reads a device array"):
        gpux.compile(look, "float64(int64)", device=True, target=device)


PROGRAM = """
import json, sys
import numpy as np
import numba_gpux as gpux
TABLE = gpux.to_device(np.full(4, float(sys.argv[1])))

@gpux.jit(cache=True)
def k(out):
    i = gpux.grid(1)
    out[i] = TABLE[i] + 1.0

out = gpux.to_device(np.zeros(4))
k[1, 4](out)
print(json.dumps(out.copy_to_host().tolist()))
"""


def test_a_cached_kernel_still_reads_the_captured_array(device, tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(PROGRAM))
    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(tmp_path / "cache"),
               NUMBA_GPUX_DEVICE=device.spec)
    for value in (1.0, 5.0):  # the second process finds the first one's code on disk
        p = subprocess.run([sys.executable, str(tmp_path / "prog.py"), str(value)],
                           capture_output=True, text=True, env=env, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        assert json.loads(p.stdout.strip().splitlines()[-1]) == [value + 1.0] * 4
