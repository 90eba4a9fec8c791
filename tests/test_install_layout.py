"""The one mapping of targets/ (setup.cfg's package_dir) works both ways the README runs
numba_gpux: from an installed wheel, run from elsewhere, and from the checkout itself
(``python -m numba_gpux info`` and ``python -m pytest`` at its root)."""

import configparser
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILT_IN = ("cuda", "metal", "opencl", "opencl-c")

#: prints where numba_gpux, its target packages and its entry points come from
WHERE = textwrap.dedent("""
    import json, sys
    from importlib import metadata
    import numba_gpux
    from numba_gpux.devices import targets
    names = sorted(targets())
    eps = metadata.distribution("numba-gpux").entry_points
    print("WHERE" + json.dumps({
        "package": numba_gpux.__file__,
        "targets": names,
        "modules": {m: sys.modules[m].__file__ for m in sorted(sys.modules)
                    if m.startswith("numba_gpux.targets.") and m.count(".") == 2},
        "entry_points": sorted(ep.value for ep in eps if ep.group == "numba_gpux.targets"),
        "dist": str(metadata.distribution("numba-gpux").locate_file("")),
    }))
""")


def _run(args, cwd, pythonpath):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = str(pythonpath)
    proc = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _where(cwd, pythonpath) -> dict:
    out = _run(["-c", WHERE], cwd, pythonpath)
    return json.loads([ln for ln in out.splitlines() if ln.startswith("WHERE")][-1][5:])


def _listed_targets(info: str) -> list:
    lines = info.split("\nTargets:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    return sorted(ln.split()[0] for ln in lines if ln.strip())


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory):
    """numba-gpux built as a wheel from this checkout's files and installed with
    ``pip install --target`` (once per session): the folder it was installed into."""
    pytest.importorskip("setuptools")
    pytest.importorskip("wheel")
    if not (ROOT / "setup.cfg").exists():
        pytest.skip("not running from a source checkout")
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"   # a copy, so that the build leaves nothing in the checkout
    src.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("numba_gpux", "targets"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    _run(["-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w",
          str(tmp / "dist"), str(src)], tmp, None)
    wheels = list((tmp / "dist").glob("numba_gpux-*.whl"))
    assert len(wheels) == 1, wheels
    site = tmp / "site"
    _run(["-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheels[0])],
         tmp, None)
    return site


def test_setup_cfg_maps_the_top_level_targets_folder_once():
    if not (ROOT / "setup.cfg").exists():
        pytest.skip("not running from a source checkout")
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    package_dir = cfg["options"]["package_dir"].strip()
    assert package_dir == "numba_gpux.targets = targets"
    assert (ROOT / "targets" / "__init__.py").is_file()
    assert not os.path.lexists(ROOT / "numba_gpux" / "targets")  # no second mapping


def test_info_from_an_installed_wheel_elsewhere(installed_wheel, tmp_path):
    info = _run(["-m", "numba_gpux", "info"], tmp_path, installed_wheel)
    assert _listed_targets(info) == list(BUILT_IN)
    where = _where(tmp_path, installed_wheel)
    assert Path(where["package"]).is_relative_to(installed_wheel)
    assert Path(where["dist"]).resolve() == installed_wheel.resolve()
    assert where["targets"] == list(BUILT_IN)
    assert {m.rsplit(".", 1)[1] for m in where["modules"]} >= {"cuda", "opencl", "opencl_c",
                                                               "metal"}
    for module, path in where["modules"].items():
        assert Path(path).is_relative_to(installed_wheel / "numba_gpux" / "targets"), module
    assert (installed_wheel / "numba_gpux" / "targets" / "cfamily" / "__init__.py").is_file()


def test_info_from_the_checkout_root():
    try:
        from importlib import metadata

        metadata.distribution("numba-gpux")
    except Exception:  # noqa: BLE001
        pytest.skip("numba-gpux is not installed: no entry points name the built-in targets")
    if not (ROOT / "setup.cfg").exists():
        pytest.skip("not running from a source checkout")
    info = _run(["-m", "numba_gpux", "info"], ROOT, None)
    assert _listed_targets(info) == list(BUILT_IN)
    where = _where(ROOT, None)
    assert Path(where["package"]).is_relative_to(ROOT / "numba_gpux")
    assert where["modules"], where
    for module, path in where["modules"].items():
        assert Path(path).is_relative_to(ROOT / "targets"), module
