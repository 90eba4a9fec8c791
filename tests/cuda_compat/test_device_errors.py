"""Device-side exceptions of debug kernels carry numba.cuda's message form (the
function, file and line, then ``tid``/``ctaid``) besides the project's own
kernel and work-item ids."""

import inspect
import os
import re

import pytest

from numba_gpux import cuda


class KernelError(Exception):
    pass


def _raise_line(fn, text):
    src, start = inspect.getsourcelines(fn.py_func)
    return start + next(k for k, line in enumerate(src) if text in line)


@cuda.jit("void(int32)", debug=True)
def raiser(x):
    if x == 1:
        raise KernelError
    elif x == 2:
        raise KernelError("bad value")


def test_message_in_numba_cuda_form(device):
    raiser[1, 1](0)
    here = os.path.abspath(__file__)
    for x, text in ((1, "raise KernelError\n"), (2, 'raise KernelError("bad value")')):
        with pytest.raises(KernelError) as e:
            raiser[1, 1](x)
        msg = str(e.value)
        line = _raise_line(raiser, text.strip())
        assert msg.startswith(f"In function 'raiser', file {here}, line {line}, "
                              f"tid=[0, 0, 0] ctaid=[0, 0, 0]"), msg
        assert "thread_idx=(0, 0, 0), block_idx=(0, 0, 0)" in msg
        if x == 2:
            assert re.search(r"ctaid=\[0, 0, 0\]: bad value \[in kernel 'raiser'", msg), msg


@cuda.jit(debug=True)
def raise_at(ary, where):
    i = cuda.grid(1)
    if i == where:
        raise KernelError("here")
    ary[i] = i


def test_ids_are_x_y_z(device):
    d = cuda.device_array(64, dtype="int64")
    with pytest.raises(KernelError) as e:
        raise_at[4, 16](d, 37)      # block 2, thread 5
    msg = str(e.value)
    assert "tid=[5, 0, 0] ctaid=[2, 0, 0]: here" in msg
    assert "thread_idx=(5, 0, 0), block_idx=(2, 0, 0)" in msg
