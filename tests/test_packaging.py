"""Every package in the source tree is listed in setup.cfg, so `pip install .` ships it."""

import configparser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_installed():
    cfg_path = ROOT / "setup.cfg"
    if not cfg_path.exists():
        pytest.skip("not running from a source checkout")
    cfg = configparser.ConfigParser()
    cfg.read(cfg_path)
    listed = {p.strip() for p in cfg["options"]["packages"].split() if p.strip()}
    found = set()
    for init in (ROOT / "numba_gpux").rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT)
        if rel.parts[:2] == ("numba_gpux", "targets"):
            continue  # the link to targets/, which setup.cfg maps with package_dir
        found.add(".".join(rel.parts))
    for init in (ROOT / "targets").rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT / "targets")
        found.add(".".join(("numba_gpux", "targets") + rel.parts))
    assert found - listed == set(), f"packages missing from setup.cfg: {sorted(found - listed)}"
    assert listed - found == set(), f"setup.cfg lists packages that do not exist: {sorted(listed - found)}"


def test_targets_are_registered_as_entry_points():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    eps = cfg["options.entry_points"]["numba_gpux.targets"]
    for name in ("opencl", "cuda", "metal"):
        assert f"{name} = numba_gpux.targets.{name}:target_entry" in eps
