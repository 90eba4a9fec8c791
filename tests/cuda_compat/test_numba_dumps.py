"""Numba's debug dumps (``DUMP_BYTECODE``, ``DUMP_CFG``, ``DUMP_IR``, ``DUMP_ASSEMBLY``)
switched on through ``numba_gpux.cuda.config``, as code written for numba.cuda switches
them on through its config: each prints to stdout as a kernel compiles, the others stay
quiet, and the write reaches ``numba.core.config``, where Numba's compiler reads it."""

from __future__ import annotations

import contextlib
import importlib

import numpy as np
import sys

import pytest
from numba.core import config as numba_config

from numba_gpux import cuda
from numba_gpux.cuda import config, float64

#: what each dump prints for _add_half (and what the others must not)
MARKS = {
    # the + : BINARY_OP on CPython 3.11+, BINARY_ADD before
    "DUMP_BYTECODE": ["BINARY_OP(arg=0" if sys.version_info >= (3, 11) else "BINARY_ADD("],
    "DUMP_CFG": ["CFG dominators"],
    "DUMP_IR": ["IR DUMP: _add_half--", "const(float, 0.5)"],
    "DUMP_ASSEMBLY": ["--ASSEMBLY _add_half--"],
}


def _add_half(a, b):
    i = cuda.grid(1)
    if i < a.size:
        b[i] = a[i] + 0.5


@contextlib.contextmanager
def _switched_on(name, via=config):
    old = getattr(via, name)
    setattr(via, name, True)
    try:
        yield
    finally:
        setattr(via, name, old)


def _compile_and_run():
    k = cuda.jit((float64[::1], float64[::1]))(_add_half)
    a = cuda.to_device(np.arange(8.0))
    b = cuda.device_array(8)
    k[1, 8](a, b)
    np.testing.assert_array_equal(b.copy_to_host(), np.arange(8.0) + 0.5)


@pytest.mark.parametrize("name", sorted(MARKS))
def test_each_dump_prints_its_stage_and_no_other(device, capsys, name):
    before = getattr(numba_config, name)
    with _switched_on(name):
        assert getattr(numba_config, name)       # the write reached Numba's config
        _compile_and_run()
    out, err = capsys.readouterr()
    for mark in MARKS[name]:
        assert mark in out
    for other, marks in MARKS.items():
        if other != name:
            assert not any(m in out for m in marks), other
    assert not any(m in err for marks in MARKS.values() for m in marks)
    assert not before and getattr(numba_config, name) == before  # and was undone


def test_the_core_config_path_is_the_same_setting(device, capsys):
    core_config = importlib.import_module("numba_gpux.cuda.core.config")
    with _switched_on("DUMP_CFG", via=core_config):
        assert config.DUMP_CFG is True and numba_config.DUMP_CFG is True
        _compile_and_run()
    assert "CFG dominators" in capsys.readouterr().out


def test_nothing_is_printed_when_no_dump_is_on(device, capsys):
    _compile_and_run()
    out, _ = capsys.readouterr()
    assert not any(m in out for marks in MARKS.values() for m in marks)


def test_the_facade_keeps_its_own_settings_and_deleting_numbas_undoes_the_write():
    old = config.CUDA_WARN_ON_IMPLICIT_COPY
    config.CUDA_WARN_ON_IMPLICIT_COPY = 0
    try:
        assert "CUDA_WARN_ON_IMPLICIT_COPY" in vars(config)
        assert getattr(numba_config, "CUDA_WARN_ON_IMPLICIT_COPY", None) != 0 or \
            not hasattr(numba_config, "CUDA_WARN_ON_IMPLICIT_COPY")
    finally:
        config.CUDA_WARN_ON_IMPLICIT_COPY = old
    # deleting a Numba setting written through the facade undoes the write
    before = numba_config.DUMP_IR
    config.DUMP_IR = True
    config.DUMP_IR = 2
    del config.DUMP_IR
    assert numba_config.DUMP_IR == before
    with pytest.raises(AttributeError, match="nothing to undo"):
        del config.DUMP_IR
    # only Numba's settings go there, not the other names of its config module
    config.reload_config = "not Numba's"
    try:
        assert callable(numba_config.reload_config)
    finally:
        del config.reload_config
    with pytest.raises(AttributeError, match="no setting"):
        config.NO_SUCH_SETTING
