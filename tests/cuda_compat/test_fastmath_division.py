"""numba.cuda's fast float32 division under fastmath."""

import numpy as np
import pytest
from numba import float32

from numba_gpux import cuda

pytestmark = pytest.mark.usefixtures("opencl_device")


def test_fastmath_float32_division_never_raises():
    """numba.cuda's fast division: no zero check, also with debug=True."""
    def f(r, x, y):
        r[0] = x / y

    sig = (float32[::1], float32, float32)
    fast = cuda.jit(sig, fastmath=True, debug=True, opt=False)(f)
    checked = cuda.jit(sig, debug=True, opt=False)(f)
    r = np.zeros(1, np.float32)
    with pytest.raises(ZeroDivisionError):
        checked[1, 1](r, 10.0, 0.0)
    fast[1, 1](r, 10.0, 0.0)
    assert r[0] == np.inf

