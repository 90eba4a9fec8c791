"""Numba's warning of a variable that may be used before it is assigned
(``ALWAYS_WARN_UNINIT_VAR``), switched on through the facade's config as numba.cuda
code switches it on: a kernel compiled then warns, naming the variable, and still runs
(the branch that reads it is not taken); switched off, it compiles without a word."""

import warnings

import numpy as np
import pytest
from numba.core.errors import NumbaWarning

from numba_gpux import cuda
from numba_gpux.cuda import config


def _maybe_unset(out, n):
    if n:
        if n > 0:
            total = 3
        out[0] = total
    else:
        total += 1          # total is unassigned on this path
        out[0] = total


@pytest.mark.parametrize("on", [0, 1])
def test_the_warning_follows_the_setting(device, on):
    old = config.ALWAYS_WARN_UNINIT_VAR
    config.ALWAYS_WARN_UNINIT_VAR = on
    try:
        kernel = cuda.jit(_maybe_unset)
        out = cuda.to_device(np.zeros(1, np.int64))
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            kernel[1, 1](out, 1)
    finally:
        config.ALWAYS_WARN_UNINIT_VAR = old
    assert out.copy_to_host()[0] == 3
    ours = [w for w in got if issubclass(w.category, NumbaWarning)
            and "uninitialized variable total" in str(w.message)]
    # (Numba's SSA pass may report it more than once, for numba.cuda and njit alike)
    assert bool(ours) == bool(on), [str(w.message) for w in got]
    with pytest.raises(UnboundLocalError):    # as Python itself would on the other path
        _maybe_unset(np.zeros(1, np.int64), 0)
