"""numba.cuda's driver initialization: the facade calls ``driver.cuInit(0)`` on its
first use of a device, so a driver that fails there (here a replaced ``cuInit`` raising
a CudaAPIError) makes that use and every later one a CudaSupportError "Error at driver
init: <message> (<code>)", which ``cuda.cuda_error()`` reports, as under numba.cuda."""

import subprocess
import sys
import textwrap

from numba_gpux import cuda
from numba_gpux.cuda.cudadrv.driver import driver


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_failing_cuinit_is_a_support_error_on_every_use():
    out = _run("""
        from numba_gpux import cuda
        from numba_gpux.cuda.cudadrv.driver import CudaAPIError, driver
        from numba_gpux.cuda.cudadrv.error import CudaSupportError

        calls = []

        def failing(flags):
            calls.append(flags)
            raise CudaAPIError(999, "CUDA_ERROR_UNKNOWN")

        driver.cuInit = failing
        for _ in range(2):
            try:
                cuda.device_array(1)
            except CudaSupportError as e:
                print("raised:", e.msg)
            else:
                print("no error")
        print("calls:", calls)
        print("cuda_error:", cuda.cuda_error())
        print("available:", cuda.is_available(), driver.initialization_error)
    """).splitlines()
    assert out == ["raised: Error at driver init: CUDA_ERROR_UNKNOWN (999)"] * 2 + [
        "calls: [0]",                       # called once, with flags 0
        "cuda_error: CUDA_ERROR_UNKNOWN (999)",
        "available: False CUDA_ERROR_UNKNOWN (999)"]


def test_a_replaced_cuinit_that_succeeds_is_called_once_and_the_device_works():
    out = _run("""
        import numpy as np
        from numba_gpux import cuda
        from numba_gpux.cuda.cudadrv.driver import driver

        calls = []
        real = driver.cuInit
        driver.cuInit = lambda flags: (calls.append(flags), real(flags))[1]
        print(driver.is_initialized)
        a = cuda.to_device(np.arange(3))
        b = cuda.device_array(3)
        print(calls, driver.is_initialized, cuda.cuda_error(), a.copy_to_host().tolist())
    """).splitlines()
    assert out == ["False", "[0] True None [0, 1, 2]"]


def test_in_this_process_the_driver_is_initialized_without_error(device):
    cuda.device_array(1)
    assert driver.is_initialized
    assert driver.initialization_error is None and cuda.cuda_error() is None
    driver.ensure_initialized()             # again: nothing to do
