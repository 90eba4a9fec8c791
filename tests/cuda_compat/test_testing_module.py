"""``numba.cuda.testing`` (``numba_gpux.cuda.testing``): the base class and skip
decorators libraries' own test suites import from numba.cuda, answered for the device
the facade runs on."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import unittest
import warnings

import numpy as np

from gpux_testing import alias_env

from numba_gpux import cuda
from numba_gpux.cuda import config, testing

def _run(case_class):
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(case_class).run(result)
    return result


def test_a_cuda_test_case_runs_kernels_with_the_warnings_off_and_restores_them(device):
    seen = {}

    class Case(testing.CUDATestCase):
        def test_kernel(self):
            seen["quiet"] = (config.CUDA_LOW_OCCUPANCY_WARNINGS,
                             config.CUDA_WARN_ON_IMPLICIT_COPY)

            @cuda.jit
            def twice(a):
                i = cuda.grid(1)
                if i < a.size:
                    a[i] *= 2

            a = np.arange(5.0)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                twice[1, 8](a)  # a host array, a grid of one block: no warning here
            seen["warnings"] = [str(w.message) for w in caught]
            self.assertPreciseEqual(a, np.arange(5.0) * 2)

    before = (config.CUDA_LOW_OCCUPANCY_WARNINGS, config.CUDA_WARN_ON_IMPLICIT_COPY)
    result = _run(Case)
    assert result.wasSuccessful(), result.errors + result.failures
    assert result.testsRun == 1 and seen["quiet"] == (0, 0) and seen["warnings"] == []
    assert (config.CUDA_LOW_OCCUPANCY_WARNINGS, config.CUDA_WARN_ON_IMPLICIT_COPY) == before


def test_the_skips_answer_for_the_facade_and_the_current_device(device):
    cc = tuple(cuda.get_current_device().compute_capability)

    class Case(testing.CUDATestCase):
        @testing.skip_on_cudasim("not the simulator")
        def test_runs_outside_the_simulator(self):
            pass

        @testing.skip_unless_cudasim("only the simulator")
        def test_needs_the_simulator(self):
            pass

        @testing.skip_unless_cc_53
        def test_cc_53(self):
            pass

        @testing.skip_unless_cc_90
        def test_cc_90(self):
            pass

        @testing.xfail_unless_cudasim
        def test_fails_outside_the_simulator(self):
            self.fail("expected")

        @testing.skip_if_cudadevrt_missing
        def test_grid_sync_needs_no_library(self):
            pass

    result = _run(Case)
    skipped = {t.id().rsplit(".", 1)[1] for t, _ in result.skipped}
    want = {"test_needs_the_simulator"}
    want |= set() if cc >= (5, 3) else {"test_cc_53"}
    want |= set() if cc >= (9, 0) else {"test_cc_90"}
    assert skipped == want
    assert len(result.expectedFailures) == 1 and result.wasSuccessful()
    assert testing.cc_X_or_above(*cc) and not testing.cc_X_or_above(cc[0] + 1, 0)


def test_cuda_c_and_its_headers_count_as_missing_off_the_cuda_target(device):
    class Case(testing.CUDATestCase):
        @testing.skip_if_cuda_includes_missing
        def test_links_cuda_c(self):
            pass

    result = _run(Case)
    if device.target.name != "cuda":
        assert [t.id().rsplit(".", 1)[1] for t, _ in result.skipped] == ["test_links_cuda_c"]


def test_captured_cuda_stdout_holds_what_kernels_print(device):
    @cuda.jit
    def hello(a):
        print("value", a[cuda.threadIdx.x])

    with testing.captured_cuda_stdout() as out:
        hello[1, 2](cuda.to_device(np.array([3, 4], np.int32)))
    assert sorted(out.getvalue().split("\n")[:2]) == ["value 3", "value 4"]


def test_library_tests_import_it_as_numba_cuda_testing(tmp_path, opencl_device):
    # a library's test module, unchanged, run under the alias
    prog = tmp_path / "test_lib.py"
    prog.write_text(textwrap.dedent("""
        import numpy as np
        from numba import cuda
        from numba.cuda.testing import CUDATestCase, skip_on_cudasim, unittest

        @cuda.jit
        def inc(a):
            i = cuda.grid(1)
            if i < a.size:
                a[i] += 1

        class TestInc(CUDATestCase):
            @skip_on_cudasim("checks device arrays")
            def test_inc(self):
                d = cuda.to_device(np.zeros(4))
                inc[1, 4](d)
                np.testing.assert_array_equal(d.copy_to_host(), 1)

        if __name__ == "__main__":
            unittest.main()
        """))
    proc = subprocess.run([sys.executable, "-m", "numba_gpux.alias", "-m", "unittest", "-v",
                           "test_lib"], env=alias_env(opencl_device), cwd=str(tmp_path),
                          capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "test_inc (test_lib.TestInc" in proc.stderr and "... ok" in proc.stderr, proc.stderr
