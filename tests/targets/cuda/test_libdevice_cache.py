"""libdevice's split (parsed once per machine, not once per process): kept in the disk
cache, read back equal, and a damaged entry costs a new parse, never a wrong split."""

from __future__ import annotations

import pytest

from numba_gpux.targets.cuda import libdevice


@pytest.fixture
def path(tmp_path, monkeypatch):
    p = libdevice.find_libdevice()
    if p is None:
        pytest.skip(libdevice.LIBDEVICE_HINT)
    monkeypatch.setenv("NUMBA_GPUX_CACHE_DIR", str(tmp_path))
    return p


def _files(tmp_path):
    return [f for f in (tmp_path / "code-v2" / "libraries").rglob("*") if f.is_file()]


def test_split_is_kept_and_read_back(path, tmp_path):
    fresh = libdevice._load_split(path)
    (entry,) = _files(tmp_path)
    again = libdevice._load_split(path)
    assert again is not fresh
    assert again.defines == fresh.defines and again.declares == fresh.declares
    assert again.closure({"__nv_sinf"}) == fresh.closure({"__nv_sinf"}) != set()
    assert again.module_text({"__nv_sinf"}) == fresh.module_text({"__nv_sinf"})
    # damaged: dropped, parsed again, replaced
    entry.write_bytes(entry.read_bytes()[:1000])
    third = libdevice._load_split(path)
    # (a second parse in one process names LLVM's struct types apart: compare names)
    assert set(third.defines) == set(fresh.defines) and third.path == path
    assert _files(tmp_path)[0].stat().st_size > 1000
