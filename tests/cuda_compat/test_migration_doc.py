"""docs/migration.md is true row by row: every name of every row marked "supported" (or
"supported with a difference") exists in ``numba_gpux.cuda`` (or on the object its row
names: a kernel, a device, a stream, an event, a context, a device array)."""

import importlib
import pathlib
import re
import types as pytypes

import numpy as np
import pytest

from numba_gpux import cuda
from numba_gpux.cuda import api
from numba_gpux.cuda.intrinsics import Unavailable

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "migration.md"


def _rows():
    """(first cell, status) of every table row of the page."""
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and "`" in cells[0] and cells[1] and not set(cells[1]) <= {"-"}:
            yield cells[0], cells[1]


def _tokens(part):
    """(name, parenthesis depth) of each backticked name in *part*."""
    depth, out = 0, []
    for chunk_i, chunk in enumerate(re.split(r"`", part)):
        if chunk_i % 2:  # inside backticks
            out.append((chunk, depth))
        else:
            depth += chunk.count("(") - chunk.count(")")
    return out


def _clean(tok):
    tok = tok.strip().lstrip(".")
    tok = re.sub(r"\(.*\)$", "", tok)
    return tok


def _lookup(root, path):
    obj = root
    for part in path.split("."):
        if hasattr(obj, part):
            obj = getattr(obj, part)
        elif isinstance(obj, pytypes.ModuleType):
            obj = importlib.import_module(f"{obj.__name__}.{part}")
        else:
            raise AttributeError(f"{obj!r} has no {part!r}")
    return obj


def _expand(tok):
    """``MAX_BLOCK_DIM_X/Y/Z`` -> the three names; others as they are."""
    if "/" not in tok:
        return [tok]
    head, *alts = tok.split("/")
    stem = head[:-len(alts[0])]
    return [head] + [stem + a for a in alts]


@pytest.fixture
def roots(device):
    @cuda.jit
    def kernel(x):
        x[0] = 1

    return {"": [cuda, cuda.to_device(np.zeros((2, 2)))], "kernel": [kernel],
            "device": [cuda.get_current_device()], "stream": [api.Stream],
            "event": [api.Event], "context": [cuda.current_context()]}


def _supported(status):
    return status in ("supported", "supported with a difference")


def test_page_has_supported_rows():
    rows = [r for r in _rows() if _supported(r[1])]
    assert len(rows) > 60
    assert any("vectorize" in r[0] for r in rows)


def test_every_supported_name_exists(roots):
    missing, checked = [], 0
    for cell, status in _rows():
        if not _supported(status):
            continue
        for part in cell.split(";"):
            prefix = part.split("`")[0].strip().split(" ")[0] if not part.strip().startswith(
                "`") else ""
            base = roots.get(prefix, roots[""]) + [cuda.random]
            last, sibling = {}, {}
            for raw, depth in _tokens(part):
                tok = _clean(raw)
                if not tok or tok[0] in "@[" or " " in tok:
                    continue
                for name in _expand(tok):
                    parents = ([last[depth - 1]] if depth and depth - 1 in last else []) + \
                        ([sibling[depth]] if depth in sibling else []) + base
                    found = None
                    for root in parents:
                        try:
                            found = _lookup(root, name)
                            break
                        except (AttributeError, ImportError):
                            continue
                    checked += 1
                    if found is None or isinstance(found, Unavailable):
                        missing.append(f"{name} (row: {cell[:60]})")
                    else:
                        last[depth] = found
                        if "." in name:  # `atomic.add`, `sub`: siblings share the parent
                            sibling[depth] = _lookup(root, name.rsplit(".", 1)[0])
    assert checked > 250
    assert not missing, "names the page marks supported but numba_gpux.cuda lacks:\n" + \
        "\n".join(missing)
