"""String constants in kernels: compared, measured and passed to device functions (as
numba.cuda code passes mode strings), on every device and in PTX; what would make a new
string is a clear error."""

from __future__ import annotations

import numpy as np
import pytest

import numba_gpux as gpux


@gpux.jit(device=True)
def _scaled(v, mode):
    if mode == "double":
        return v * 2
    if mode != "same":
        return -1
    return v


@gpux.jit
def _modes(x, out):
    i = gpux.grid(1)
    if i < x.size:
        out[i, 0] = _scaled(x[i], "double")
        out[i, 1] = _scaled(x[i], "same")
        out[i, 2] = _scaled(x[i], "other")
        out[i, 3] = len("four") + ("ou" in "four") + ("a" < "b")


def test_string_arguments_of_device_functions(device):
    x = np.arange(5, dtype=np.int64)
    out = gpux.device_array((5, 4), np.int64)
    _modes[1, 8](gpux.to_device(x), out)
    want = np.stack([2 * x, x, np.full(5, -1), np.full(5, 6)], axis=1)
    np.testing.assert_array_equal(out.copy_to_host(), want)


def test_ptx_of_string_comparisons(ptxas):
    from numba_gpux.targets.cuda import toolkit

    ptx = gpux.compile(_modes, "void(int64[::1], int64[:, ::1])", target="cuda",
                       cubin=False).text
    ok, messages = toolkit.ptxas_check(ptx, (9, 0))
    assert ok, messages


@pytest.mark.parametrize("expr", ['s + "!"', "s[1:]", "str(i)", "s.upper()"])
def test_making_a_new_string_is_a_compile_error(expr):
    # (Numba's string implementations allocate, which fails while typing them: a
    # TypingError, or the project's UnsupportedError, never an internal error)
    from numba.core.errors import TypingError

    ns = {"gpux": gpux}
    exec(f"def k(a):\n    i = gpux.grid(1)\n    s = 'abc'\n    t = {expr}\n"
         f"    a[0] = len(t)\n", ns)
    with pytest.raises((TypingError, gpux.UnsupportedError)) as ei:
        gpux.compile(ns["k"], "void(int64[::1])")
    assert not isinstance(ei.value, gpux.InternalCompilerError)
