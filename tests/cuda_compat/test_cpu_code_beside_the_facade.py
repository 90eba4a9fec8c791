"""CPU code a numba.cuda program compiles with Numba's ``@njit`` beside its kernels
keeps running once the program imports the facade instead of numba.cuda."""

import os
import subprocess
import sys
import textwrap

import pytest
from gpux_testing import ROOT


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="libgcc's runtime: Linux")
def test_njit_code_that_needs_libgcc_s_helpers_runs_after_importing_the_facade():
    # a float to an int32 power in fastmath, debug=True code is a call of libgcc's
    # __powidf2, which Numba's CPU JIT finds only where a loaded library brought it
    # (numba.cuda's CUDA libraries do): without it the process aborts ("LLVM ERROR:
    # Symbol not found")
    code = textwrap.dedent("""
        import numpy as np
        from numba import njit
        from numba_gpux import cuda  # the program's `from numba import cuda`

        @njit("f8(f8[:], i4)", fastmath=True, debug=True)
        def lp(a, p):
            s = 0.0
            for i in range(a.size):
                s += a[i] ** p
            return s

        print("sum", lp(np.arange(4.0), np.int32(3)))
        """)
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "sum 36.0" in proc.stdout
