"""The facade's table of module paths (numba_gpux/cuda/_modules.py) and its one import
hook: every row imports in each way Python code imports a module, is the module (or
holds the objects) it stands for, and nothing outside the table is answered."""

import importlib
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numba.core.errors
import numba.core.typing
import pytest

from numba_gpux import cuda  # noqa: F401 - installs the hook
from numba_gpux.cuda import _modules

ROWS = sorted(_modules.MODULES)
FACADE_DIR = Path(cuda.__file__).parent


def _stands_for(where: str):
    modname, _, attr = where.partition(":")
    mod = importlib.import_module(modname)
    return getattr(mod, attr) if attr else mod


@pytest.mark.parametrize("row", ROWS)
def test_each_row_imports_every_way(row):
    name = f"numba_gpux.cuda.{row}"
    entry = _modules.MODULES[row]
    mod = importlib.import_module(name)
    ns: dict = {}
    exec(f"import {name}\nmod = {name}", ns)
    assert ns["mod"] is mod
    parent, _, last = name.rpartition(".")
    exec(f"from {parent} import {last} as mod", ns)
    assert ns["mod"] is mod and getattr(sys.modules[parent], last) is mod
    if isinstance(entry, str):
        assert mod is _stands_for(entry)
    else:
        for attr, where in entry.items():
            exec(f"from {name} import {attr} as obj", ns)
            assert ns["obj"] is _stands_for(where)
        assert set(entry) <= set(mod.__all__)


@pytest.mark.parametrize("row", ROWS)
def test_no_row_shadows_a_file_of_the_facade(row):
    path = FACADE_DIR.joinpath(*row.split("."))
    assert not path.with_suffix(".py").exists() and not (path / "__init__.py").exists()


def test_only_the_tables_names_are_answered():
    finder = next(f for f in sys.meta_path if isinstance(f, _modules.ModuleTable))
    assert sys.meta_path.index(finder) < sys.meta_path.index(
        importlib.machinery.PathFinder)
    assert finder.find_spec("numba.core.errors") is None
    assert finder.find_spec("numba_gpux.cuda.api") is None      # a real module
    assert finder.find_spec("numba_gpux.cudax.core") is None
    assert finder.find_spec("numba_gpux.cuda.core.errors") is not None
    # a made-up package's __path__ is empty: nothing under it but its rows, and never a
    # second copy of one of Numba's files under a facade name
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("numba_gpux.cuda.typing.context")
    assert "numba_gpux.cuda.typing.context" not in sys.modules
    assert cuda.typing.signature is numba.core.typing.signature
    assert cuda.core.errors is numba.core.errors and cuda.core.config is cuda.config


def test_objects_reached_through_the_table_pickle():
    from numba_gpux.cuda.core.errors import TypingError
    from numba_gpux.cuda.cudadrv.devices import get_context
    from numba_gpux.cuda.kernels.reduction import Reduce
    from numba_gpux.cuda.kernels.transpose import transpose

    for obj in (TypingError, get_context, Reduce, transpose):
        assert pickle.loads(pickle.dumps(obj)) is obj
    err = pickle.loads(pickle.dumps(TypingError("bad")))
    assert type(err) is TypingError and "bad" in str(err)


def test_a_fresh_interpreter_imports_a_row_first_and_unpickles_a_made_module():
    cloudpickle = pytest.importorskip("cloudpickle")
    import numba_gpux.cuda.kernels.transpose as made

    # cloudpickle names an importable module by its name: a made-up module must import
    # by that name in a process that has not imported numba_gpux yet
    blob = cloudpickle.dumps(made)
    code = textwrap.dedent("""
        import pickle, sys
        assert not any(m.startswith("numba_gpux") for m in sys.modules)
        mod = pickle.loads(sys.stdin.buffer.read())
        from numba_gpux.cuda._arrays import transpose_2d
        from numba_gpux.cuda.typeconv.rules import default_type_manager
        import numba.core.typeconv.rules
        assert mod.transpose is transpose_2d
        assert default_type_manager is numba.core.typeconv.rules.default_type_manager
        print("ok", mod.__name__)
    """)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(FACADE_DIR.parent.parent), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    assert proc.stdout.decode().split() == ["ok", "numba_gpux.cuda.kernels.transpose"]
