"""``lineinfo=True``: source locations in the code (PTX ``.file``/``.loc`` directives, as
numba.cuda's lineinfo gives, for profilers and debuggers), with no variable or type
sections; the code computes the same on every device."""

from __future__ import annotations

import math
import os
import re

import numpy as np

import numba_gpux as gpux

SIG = "void(float32[::1], float32[::1])"
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+\d+", re.M)


@gpux.jit(device=True, lineinfo=True)
def scaled_sine(a):
    return math.sin(a) * 2.0                       # DEVICE LINE


def body(out, x):
    i = gpux.grid(1)
    if i < x.size:
        out[i] = scaled_sine(x[i]) + 1.0           # KERNEL LINE


def _line(marker: str) -> int:
    with open(__file__) as f:
        return next(n for n, text in enumerate(f, start=1) if marker in text and "_line" not in text)


def _ptx(lineinfo: bool) -> str:
    return gpux.compile(gpux.jit(lineinfo=lineinfo)(body), SIG, target="cuda", cc=(9, 0),
                        cubin=False).text


def test_ptx_has_the_source_lines_of_the_kernel_and_its_device_function(ptxas):
    from numba_gpux.targets.cuda import toolkit

    ptx = _ptx(True)
    files = dict(re.findall(r'^\s*\.file\s+(\d+)\s+"([^"]+)"', ptx, re.M))
    this = [n for n, path in files.items() if os.path.samefile(path, __file__)]
    assert this, ptx
    lines = {int(line) for f, line in _LOC.findall(ptx) if f in this}
    assert _line("# KERNEL LINE") in lines and _line("# DEVICE LINE") in lines, lines
    assert ".debug_info" not in ptx  # locations only (DebugDirectivesOnly)
    ok, messages = toolkit.ptxas_check(ptx, (9, 0))
    assert ok, messages


def test_no_lineinfo_no_locations():
    ptx = _ptx(False)
    assert not _LOC.search(ptx) and ".file" not in ptx


def test_a_lineinfo_kernel_computes_the_same(device):
    x = np.linspace(0, 3, 300).astype(np.float32)
    out = gpux.to_device(np.zeros_like(x))
    gpux.jit(lineinfo=True)(body)[3, 128](out, gpux.to_device(x))
    np.testing.assert_allclose(out.copy_to_host(), np.sin(x) * 2 + 1, rtol=1e-5, atol=1e-6)


def test_debug_implies_line_information(ptxas):
    """As numba.cuda's debug=True, which turns line information on with its checks."""
    from numba_gpux.targets.cuda import toolkit

    ptx = gpux.compile(gpux.jit(debug=True)(body), SIG, target="cuda", cc=(9, 0),
                       cubin=False).text
    assert _line("# KERNEL LINE") in {int(line) for _, line in _LOC.findall(ptx)}
    ok, messages = toolkit.ptxas_check(ptx, (9, 0))
    assert ok, messages
