"""The import alias (numba_gpux.alias): unchanged programs written for numba.cuda and for
numba-cuda-mlir run on numba-gpux through ``python -m numba_gpux.alias`` and through
``install()``, the processes they start get the alias too, ``uninstall()`` puts back what
was there, and without the alias nothing changes.  Each case runs in a fresh interpreter:
the alias changes what ``sys.modules`` holds for the whole process."""

import os
import subprocess
import sys
import textwrap

import pytest

from gpux_testing import ROOT, alias_env

#: written for numba.cuda, unchanged: prints its result and what ran it
NUMBA_CUDA_PROGRAM = """
import sys
import numpy as np
from numba import cuda

@cuda.jit(device=True)
def axpy1(a, x, y):
    return a * x + y

@cuda.jit
def axpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = axpy1(a, x[i], y[i])

n = int(sys.argv[1])
x = np.arange(n, dtype=np.float64)
d_out = cuda.device_array_like(x)
axpy[(n + 31) // 32, 32](2.0, cuda.to_device(x), cuda.to_device(np.ones(n)), d_out)
print("result", d_out.copy_to_host().sum())
print("ran by", cuda.__name__, __name__, sys.argv[1:])
"""

#: written for numba-cuda-mlir, unchanged: its spellings (opt_level=, signature=, chip=)
MLIR_PROGRAM = """
import sys
import numpy as np
from numba_cuda_mlir import cuda

@cuda.jit(device=True)
def square(v):
    return v * v

@cuda.jit(signature="void(float32[::1], float32[::1])", opt_level=2, chip="sm_90")
def squares(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = square(x[i])

n = int(sys.argv[1])
x = np.arange(n, dtype=np.float32)
out = np.zeros(n, dtype=np.float32)
squares[(n + 63) // 64, 64](x, out)
print("result", out.sum())
print("ran by", cuda.__name__, __name__, sys.argv[1:], square.options.inline)
"""


def run_python(args, env, cwd=None):
    proc = subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def run_code(code, env, *args):
    return run_python(["-c", textwrap.dedent(code), *args], env)


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


@pytest.mark.quick
def test_numba_cuda_program_runs_unchanged_through_python_m_alias(tmp_path, opencl_device):
    script = _write(tmp_path, "prog.py", NUMBA_CUDA_PROGRAM)
    out = run_python(["-m", "numba_gpux.alias", script, "100"], alias_env(opencl_device))
    # sum(2 * i + 1 for i < 100)
    assert "result 10000.0" in out
    assert "ran by numba_gpux.cuda __main__ ['100']" in out


def test_numba_cuda_mlir_program_runs_unchanged_through_python_m_alias(tmp_path,
                                                                       opencl_device):
    script = _write(tmp_path, "prog.py", MLIR_PROGRAM)
    out = run_python(["-m", "numba_gpux.alias", script, "50"], alias_env(opencl_device))
    assert f"result {float(sum(i * i for i in range(50)))}" in out
    # the dialect's defaults: a device function is inlined unless told otherwise
    assert "ran by numba_gpux.cuda.mlir_dialect __main__ ['50'] True" in out


def test_python_m_alias_runs_modules_and_code_like_python(tmp_path):
    (tmp_path / "mod_prog.py").write_text(
        "import sys\nfrom numba import cuda\nprint('module', __name__, cuda.__name__, "
        "sys.argv[1:])\n")
    out = run_python(["-m", "numba_gpux.alias", "-m", "mod_prog", "a", "b"],
                     alias_env(), cwd=tmp_path)
    assert out.strip() == "module __main__ numba_gpux.cuda ['a', 'b']"
    out = run_python(["-m", "numba_gpux.alias", "-c",
                      "import sys; import numba.cuda as c; print(c.__name__, sys.argv)", "z"],
                     alias_env())
    assert out.strip() == "numba_gpux.cuda ['-c', 'z']"
    proc = subprocess.run([sys.executable, "-m", "numba_gpux.alias"], env=alias_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "script.py" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "numba_gpux.alias", "no_such_file.py"],
                          env=alias_env(), cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "can't open file 'no_such_file.py'" in proc.stderr


def test_python_m_alias_takes_interpreter_options_first(tmp_path):
    # `python -m numba_gpux.alias -W ignore prog.py` as `python -W ignore prog.py`
    prog = _write(tmp_path, "warns.py", """
        import sys, warnings
        from numba import cuda
        warnings.warn("from the program", DeprecationWarning)
        print("ran", cuda.__name__, sys.argv[1:], sys.flags.optimize, sys.flags.dev_mode)
    """)
    alias = [sys.executable, "-m", "numba_gpux.alias"]
    proc = subprocess.run([*alias, "-W", "error::DeprecationWarning", prog, "x"], env=alias_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "DeprecationWarning: from the program" in proc.stderr
    out = run_python(["-m", "numba_gpux.alias", "-Wignore", "-O", "-X", "dev", prog, "x"],
                     alias_env())
    assert out.strip() == "ran numba_gpux.cuda ['x'] 1 True"
    out = run_python(["-m", "numba_gpux.alias", "-W", "ignore", "-c",
                      "import numba.cuda as c, sys; print(c.__name__, sys.warnoptions)"], alias_env())
    assert out.strip() == "numba_gpux.cuda ['ignore']"


def test_install_runs_both_dialects_in_process(opencl_device):
    out = run_code(f"""
        import numba_gpux.alias
        numba_gpux.alias.install()
        exec(compile({NUMBA_CUDA_PROGRAM!r}, "numba_cuda_prog", "exec"), {{"__name__": "a"}})
        exec(compile({MLIR_PROGRAM!r}, "mlir_prog", "exec"), {{"__name__": "b"}})
    """, alias_env(opencl_device), "20")
    assert "result 400.0" in out and f"result {float(sum(i * i for i in range(20)))}" in out
    assert "ran by numba_gpux.cuda a ['20']" in out
    assert "ran by numba_gpux.cuda.mlir_dialect b ['20'] True" in out


def test_every_path_is_the_facades_own_module_never_a_second_copy():
    out = run_code("""
        import sys
        import numba_gpux.alias
        numba_gpux.alias.install()
        from numba import cuda
        import numba, numba_gpux.cuda
        import numba.cuda.cudadrv.driver as driver
        from numba.cuda.random import create_xoroshiro128p_states
        from numba.cuda.core.errors import TypingError
        import numba_cuda_mlir.cuda.kernels.transpose as transpose
        from numba_cuda_mlir.cuda import jit as mlir_jit, grid
        from numba_cuda_mlir import types
        import numba_gpux.cuda.types
        assert types is numba_gpux.cuda.types and types.int32 is numba.core.types.int32
        import numba_gpux.cuda.cudadrv.driver, numba_gpux.cuda.random, numba_gpux.cuda.mlir_dialect
        assert cuda is numba.cuda is numba_gpux.cuda
        assert driver is numba_gpux.cuda.cudadrv.driver
        assert sys.modules["numba.cuda.cudadrv"] is numba_gpux.cuda.cudadrv
        assert create_xoroshiro128p_states is numba_gpux.cuda.random.create_xoroshiro128p_states
        assert TypingError is numba.core.errors.TypingError
        assert transpose is sys.modules["numba_gpux.cuda.kernels.transpose"]
        assert mlir_jit is numba_gpux.cuda.mlir_dialect.jit and grid is cuda.grid
        files = {}
        for name, mod in list(sys.modules.items()):
            f = getattr(mod, "__file__", None)
            if f and "numba_gpux" in f:
                files.setdefault(f, set()).add(id(mod))
        assert all(len(ids) == 1 for ids in files.values()), files
        for name in ("numba.cuda.simulator", "numba_cuda_mlir.cuda.nothing_here",
                     "numba_cuda_mlir.nothing_here"):
            try:
                __import__(name)
            except ModuleNotFoundError as exc:
                print(exc.name, "|", exc)
    """, alias_env())
    lines = out.splitlines()
    assert lines[0].startswith("numba.cuda.simulator | ")
    assert "numba_gpux.cuda has no 'numba_gpux.cuda.simulator'" in lines[0]
    assert lines[1].startswith("numba_cuda_mlir.cuda.nothing_here | ")
    assert lines[2].startswith("numba_cuda_mlir.nothing_here | ")


#: a worker function in a module of its own, as spawned workers import it
WORKER_MODULE = """
def which(_=None):
    from numba import cuda
    from numba_cuda_mlir import cuda as mlir_cuda
    return cuda.__name__ + " " + mlir_cuda.__name__
"""

SPAWNING_PROGRAM = """
import multiprocessing, subprocess, sys
import worker

if __name__ == "__main__":
    for method in ("spawn", "forkserver"):
        with multiprocessing.get_context(method).Pool(1) as pool:
            print(method, pool.apply(worker.which))
    out = subprocess.run([sys.executable, "-c", "import worker; print(worker.which())"],
                         capture_output=True, text=True, check=True).stdout
    print("subprocess", out.strip())
"""


def test_processes_the_program_starts_get_the_alias(tmp_path):
    _write(tmp_path, "worker.py", WORKER_MODULE)
    script = _write(tmp_path, "spawner.py", SPAWNING_PROGRAM)
    env = alias_env()
    env["PYTHONPATH"] = os.pathsep.join([ROOT, str(tmp_path)])
    out = run_python(["-m", "numba_gpux.alias", script], env)
    served = "numba_gpux.cuda numba_gpux.cuda.mlir_dialect"
    assert out.splitlines() == [f"spawn {served}", f"forkserver {served}",
                                f"subprocess {served}"]


def test_install_wins_over_an_imported_numba_cuda_and_uninstall_restores_it():
    out = run_code("""
        import os, subprocess, sys
        import numba
        import numba.cuda as original
        from numba.cuda import jit as original_jit
        assert original.implementation == "Built-in"
        env_before = {k: os.environ.get(k) for k in ("PYTHONPATH", "NUMBA_GPUX_ALIAS")}
        import numba_gpux.alias as alias
        alias.install()
        alias.install()  # twice is once
        import numba_gpux.cuda
        from numba import cuda
        assert cuda is numba.cuda is numba_gpux.cuda, cuda
        assert sys.modules["numba.cuda"] is numba_gpux.cuda
        assert "numba.cuda.compiler" not in sys.modules
        import numba_cuda_mlir.cuda
        assert alias.installed()
        alias.uninstall()
        assert not alias.installed()
        assert numba.cuda is original and sys.modules["numba.cuda"] is original
        from numba.cuda import jit
        assert jit is original_jit
        assert "numba_cuda_mlir" not in sys.modules
        try:
            import numba_cuda_mlir
        except ModuleNotFoundError:
            print("no numba_cuda_mlir")
        assert {k: os.environ.get(k) for k in env_before} == env_before, os.environ
        # the facade keeps working under its own name
        assert numba_gpux.cuda.jit is not original_jit
        child = subprocess.run([sys.executable, "-c",
                                "from numba import cuda; print(cuda.__name__)"],
                               capture_output=True, text=True, check=True).stdout
        print("child", child.strip())
    """, alias_env())
    assert out.splitlines() == ["no numba_cuda_mlir", "child numba.cuda"]


def test_uninstall_without_an_earlier_numba_cuda_leaves_none():
    out = run_code("""
        import sys
        import numba_gpux.alias as alias
        alias.install(children=False)
        import os
        assert "NUMBA_GPUX_ALIAS" not in os.environ
        import numba.cuda, numba
        alias.uninstall()
        assert not hasattr(numba, "cuda") and "numba.cuda" not in sys.modules
        import numba.cuda
        print(numba.cuda.implementation)
    """, alias_env())
    assert out.strip() == "Built-in"


def test_without_the_alias_nothing_changes():
    out = run_code("""
        import sys
        import numba_gpux.cuda  # the facade's own import hook is on, serving its own paths
        from numba import cuda
        print(cuda.__name__, cuda is numba_gpux.cuda)
        try:
            import numba_cuda_mlir
        except ModuleNotFoundError as exc:
            print(exc.name)
    """, alias_env())
    assert out.split() == ["numba.cuda", "False", "numba_cuda_mlir"]


def test_alias_wins_over_a_finder_that_went_first(tmp_path):
    """numba-cuda puts a finder of its own first on sys.meta_path at startup (a .pth)
    that redirects numba.cuda; the alias, turned on later, is answered before it."""
    _write(tmp_path, "other_cuda.py", "NAME = 'other'\n")
    out = run_code("""
        import importlib.abc, importlib.util, sys

        class Redirect(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path=None, target=None):
                if name == "numba.cuda":
                    return importlib.util.spec_from_file_location(
                        name, importlib.util.find_spec("other_cuda").origin)

        sys.meta_path.insert(0, Redirect())
        import numba_gpux.cuda  # its hook went first, before the redirect was put first
        sys.meta_path.remove(next(f for f in sys.meta_path if isinstance(f, Redirect)))
        sys.meta_path.insert(0, Redirect())
        import numba_gpux.alias
        numba_gpux.alias.install()
        from numba import cuda
        print(cuda.__name__)
        numba_gpux.alias.uninstall()
        from numba import cuda
        print(cuda.NAME)
    """, alias_env(PYTHONPATH=os.pathsep.join([ROOT, str(tmp_path)])))
    assert out.split() == ["numba_gpux.cuda", "other"]


def test_a_child_that_cannot_import_numba_gpux_says_the_alias_is_off(tmp_path):
    """A child interpreter that cannot import numba_gpux says so and runs on."""
    from numba_gpux.alias import SITE_DIR

    env = alias_env(NUMBA_GPUX_ALIAS="1")
    # numba_gpux itself is not importable: a package of that name that fails to import
    # comes first on the path (an installed numba_gpux would be found otherwise)
    broken = tmp_path / "shadow" / "numba_gpux"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('not importable here')\n")
    env["PYTHONPATH"] = os.pathsep.join([SITE_DIR, str(tmp_path / "shadow")])
    proc = subprocess.run([sys.executable, "-c", "print('ran')"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ran"
    assert "numba-gpux alias: not in effect in this process" in proc.stderr


def test_a_shadowed_sitecustomize_still_runs(tmp_path):
    from numba_gpux.alias import SITE_DIR

    (tmp_path / "sitecustomize.py").write_text("import builtins\nbuiltins.MARK = 'later one'\n")
    env = alias_env()
    env["PYTHONPATH"] = os.pathsep.join([SITE_DIR, ROOT, str(tmp_path)])
    for on in ("", "0", "1"):
        env["NUMBA_GPUX_ALIAS"] = on
        out = run_code("import builtins, sys; from numba import cuda\n"
                       "print(builtins.MARK, cuda.__name__)", env)
        assert out.split() == ["later", "one",
                               "numba_gpux.cuda" if on == "1" else "numba.cuda"]


@pytest.mark.parametrize("name", ["numba.cuda", "numba_cuda_mlir.cuda"])
def test_alias_roots_are_served_only_while_on(name):
    out = run_code(f"""
        import importlib.util
        import numba_gpux.cuda
        from numba_gpux.cuda import _modules
        assert {name!r} in _modules.ALIASES and not _modules.ACTIVE
        import numba_gpux.alias
        numba_gpux.alias.install(children=False)
        print(sorted(_modules.ACTIVE))
        print(importlib.util.find_spec({name!r} + ".cudadrv").loader.entry)
    """, alias_env())
    assert out.splitlines() == ["['numba.cuda', 'numba_cuda_mlir.cuda']",
                                "numba_gpux.cuda.cudadrv"]
