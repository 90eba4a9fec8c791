"""benchmarks/numba_cuda_alias/sitecustomize.py, which benchmarks/library_tests.sh uses to
run libraries' numba.cuda tests unchanged: in a fresh interpreter with that folder on
PYTHONPATH, ``numba.cuda`` and its submodules are numba_gpux.cuda's own module objects."""

import os
import subprocess
import sys
import textwrap


ALIAS_DIR = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "benchmarks",
                         "numba_cuda_alias")


def run_aliased(code, *extra_path, env=None):
    """Run *code* in a fresh interpreter with the alias folder first on PYTHONPATH."""
    env = dict(os.environ if env is None else env)
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(ALIAS_DIR), *extra_path])
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_numba_cuda_and_its_submodules_are_the_facades_modules():
    out = run_aliased("""
        import sys
        assert not any(m.startswith(("numba.cuda", "numba_gpux")) for m in sys.modules)
        from numba import cuda
        import numba, numba_gpux.cuda
        import numba.cuda.cudadrv.driver as driver
        from numba.cuda.random import create_xoroshiro128p_states
        import numba_gpux.cuda.cudadrv.driver
        import numba_gpux.cuda.random
        assert cuda is numba.cuda is numba_gpux.cuda
        assert driver is numba_gpux.cuda.cudadrv.driver
        assert sys.modules["numba.cuda.cudadrv"] is numba_gpux.cuda.cudadrv
        assert create_xoroshiro128p_states is numba_gpux.cuda.random.create_xoroshiro128p_states
        # no file of the facade was loaded a second time under a numba.cuda name
        files = {}
        for name, mod in list(sys.modules.items()):
            f = getattr(mod, "__file__", None)
            if f and name.startswith(("numba.cuda", "numba_gpux.cuda")):
                files.setdefault(f, set()).add(id(mod))
        assert all(len(ids) == 1 for ids in files.values()), files
        print("ok", cuda.__name__)
    """)
    assert out.split() == ["ok", "numba_gpux.cuda"]


def test_submodule_the_facade_lacks_is_a_module_not_found_error():
    out = run_aliased("""
        try:
            import numba.cuda.simulator
        except ModuleNotFoundError as exc:
            print(exc.name, "|", exc)
    """)
    assert out.startswith("numba.cuda.simulator | ")
    assert "numba_gpux.cuda has no 'numba_gpux.cuda.simulator'" in out


def test_nothing_is_imported_until_numba_cuda_is_asked_for():
    out = run_aliased("""
        import sys, numba
        print(sorted(m for m in sys.modules if m.startswith(("numba_gpux", "numba.cuda"))))
    """)
    assert out.strip() == "[]"


def test_a_shadowed_sitecustomize_still_runs(tmp_path):
    (tmp_path / "sitecustomize.py").write_text("import builtins\nbuiltins.MARK = 'later one'\n")
    out = run_aliased("import builtins; print(builtins.MARK)", str(tmp_path))
    assert out.strip() == "later one"


def test_numba_cuda_program_runs_unchanged(opencl_device):
    env = dict(os.environ, NUMBA_GPUX_DEVICE=opencl_device.spec)
    out = run_aliased("""
        import numpy as np
        from numba import cuda

        @cuda.jit
        def axpy(a, x, y, out):
            i = cuda.grid(1)
            if i < out.size:
                out[i] = a * x[i] + y[i]

        x = np.arange(100, dtype=np.float64)
        y = np.ones(100)
        d_out = cuda.device_array_like(x)
        axpy[4, 32](2.0, cuda.to_device(x), cuda.to_device(y), d_out)
        assert cuda.is_available()
        np.testing.assert_array_equal(d_out.copy_to_host(), 2.0 * x + y)
        print(type(d_out).__module__)
    """, env=env)
    assert out.strip().startswith("numba_gpux")
