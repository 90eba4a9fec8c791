"""A process forked after its parent started an OpenCL device: the child's copy of
the context has none of the driver's threads, so its commands would wait forever;
the runtime refuses them with a clear error instead."""

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import concurrent.futures, multiprocessing as mp, warnings
    import numpy as np
    import numba_gpux as gpux
    from numba_gpux.errors import DriverError
    warnings.simplefilter("ignore", DeprecationWarning)  # fork of a threaded process
    dev = gpux.select_device("opencl")
    d = gpux.to_device(np.arange(4.0))                 # the parent starts the device

    def child():
        try:
            gpux.to_device(np.arange(3.0))
        except DriverError as e:
            return "refused: " + str(e)
        return "ran"

    with concurrent.futures.ProcessPoolExecutor(mp_context=mp.get_context("fork")) as ex:
        print(ex.submit(child).result(timeout=60))
    print("parent", d.copy_to_host().tolist())           # the parent is unaffected
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")
def test_a_forked_child_is_refused_not_hung(opencl_device):
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("refused: OpenCL initialized before forking"), out.stdout
    assert "'spawn'" in lines[0]
    assert lines[1] == "parent [0.0, 1.0, 2.0, 3.0]"


FACADE = textwrap.dedent("""
    import concurrent.futures, multiprocessing as mp, warnings
    import numpy as np
    from numba_gpux import cuda
    from numba_gpux.cuda.cudadrv.error import CudaDriverError
    warnings.simplefilter("ignore", DeprecationWarning)
    cuda.current_context()                 # makes the driver's context, as numba.cuda's
    with concurrent.futures.ProcessPoolExecutor(mp_context=mp.get_context("fork")) as ex:
        fut = ex.submit(cuda.to_device, np.arange(1))
    try:
        fut.result(timeout=60)
        print("ran")
    except CudaDriverError as e:
        print("refused: " + str(e))
""")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork (POSIX)")
def test_the_facades_current_context_starts_the_device(opencl_device):
    """numba.cuda's ``current_context()`` makes the context: a child forked after it is
    refused (numba.cuda's CudaDriverError), not left to start the device afresh."""
    out = subprocess.run([sys.executable, "-c", FACADE], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.startswith("refused: OpenCL initialized before forking"), out.stdout
