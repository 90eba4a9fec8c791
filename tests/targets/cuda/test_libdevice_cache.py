"""libdevice's split (parsed once per machine, not once per process): kept in the disk
cache as an index and one entry per function body, read back equal, only the bodies a
kernel needs are read, and a damaged entry costs a new parse, never a wrong split."""

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
    return [f for f in (tmp_path / "code-v3" / "libraries").rglob("*") if f.is_file()]


def _index(path):
    from pathlib import Path

    from numba_gpux.cache import DiskCache

    return Path(DiskCache().path("libraries", libdevice.split_key(path)))


def test_split_is_kept_and_read_back_by_need(path, tmp_path):
    fresh = libdevice._load_split(path)
    files = _files(tmp_path)
    assert len(files) == len(fresh.defines) + 1  # the bodies and the index
    again = libdevice._load_split(path)
    assert again is not fresh and again._bodies == {}  # nothing read yet
    assert again.module_text({"__nv_sinf"}) == fresh.module_text({"__nv_sinf"})
    assert set(again._bodies) == {n for n in again.closure({"__nv_sinf"})
                                  if again.provides(n)}  # only what sinf reaches
    assert again.closure({"__nv_sin"}) == fresh.closure({"__nv_sin"}) != set()
    assert again.defines == fresh.defines and again.declares == fresh.declares


def test_a_damaged_body_costs_a_new_parse(path, tmp_path):
    fresh = libdevice._load_split(path)
    want = fresh.module_text({"__nv_sin"})
    for f in _files(tmp_path):  # damage every body
        if f != _index(path):
            f.write_bytes(f.read_bytes()[:40])
    again = libdevice._load_split(path)
    assert again._read_body is not None  # the index was intact
    text = again.module_text({"__nv_sin"})
    assert again._read_body is None  # parsed again, whole
    # (a second parse in one process names LLVM's struct types apart: compare the
    # functions defined, not the text)
    import re

    defs = re.compile(r"^define [^@]*@([\w.$]+)\(", re.M)
    assert set(defs.findall(text)) == set(defs.findall(want))
    assert set(again.defines) == set(fresh.defines)


def test_a_damaged_index_costs_a_new_parse_and_is_replaced(path, tmp_path):
    fresh = libdevice._load_split(path)
    index = _index(path)
    assert index.is_file()
    index.write_bytes(index.read_bytes()[:1000])
    third = libdevice._load_split(path)
    assert third._read_body is None and set(third.defines) == set(fresh.defines)
    assert third.path == path
    assert index.stat().st_size > 1000
    assert libdevice._load_split(path)._read_body is not None  # read from the cache again
