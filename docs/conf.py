"""Sphinx configuration; build with ``sphinx-build -W -b html docs docs/_build``."""

project = "numba-gpux"
author = "numba-gpux developers"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
master_doc = "index"
exclude_patterns = ["_build"]
html_theme = "alabaster"
myst_heading_anchors = 3
suppress_warnings = ["myst.xref_missing"]
