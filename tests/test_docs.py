"""The documentation builds without a single warning."""

import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_docs_build_fails_on_warnings(tmp_path):
    pytest.importorskip("sphinx", reason="Sphinx is not installed (pip install '.[docs]')")
    pytest.importorskip("myst_parser", reason="myst-parser is not installed (pip install '.[docs]')")
    if not DOCS.is_dir():
        pytest.skip("docs/ is not next to the tests (installed without the source tree)")
    res = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                          str(DOCS), str(tmp_path / "html")], capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tmp_path / "html" / "index.html").exists()
