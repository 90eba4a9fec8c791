"""print() in kernels of the numba.cuda facade formats bools, tuples, thread
indices and long argument lists as numba.cuda does (floats with %f, as its vprintf)."""

import numpy as np
import pytest

from numba_gpux import cuda

pytestmark = pytest.mark.feature("print")


def test_bools_tuples_and_indices(device, capfd):
    @cuda.jit
    def show(a):
        i = cuda.grid(1)
        print(i == 0, a[0] > 100.0, (1, 2.5), (i,), cuda.threadIdx, cuda.blockDim)
        print("nested", (a[0] < 0.0, (3, i)), cuda.blockIdx)

    show[1, 2](cuda.to_device(np.array([5.0])))
    lines = sorted(capfd.readouterr().out.splitlines())
    assert lines == sorted([
        "True False (1, 2.500000) (0,) (0, 0, 0) (2, 1, 1)",
        "False False (1, 2.500000) (1,) (1, 0, 0) (2, 1, 1)",
        "nested (False, (3, 0)) (0, 0, 0)",
        "nested (False, (3, 1)) (0, 0, 0)",
    ])


def test_more_than_eight_values(device, capfd):
    @cuda.jit
    def many(a):
        print(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11])

    many[1, 1](cuda.to_device(np.arange(12, dtype=np.int64)))
    assert capfd.readouterr().out.splitlines() == [" ".join(map(str, range(12)))]


def test_every_combination_of_bools(device, capfd):
    @cuda.jit
    def flags(a):
        i = cuda.grid(1)
        print(i, i & 1 != 0, i & 2 != 0, i & 4 != 0)

    flags[1, 8](cuda.to_device(np.zeros(1)))
    got = sorted(capfd.readouterr().out.splitlines(), key=lambda s: int(s.split()[0]))
    assert got == [f"{i} {bool(i & 1)} {bool(i & 2)} {bool(i & 4)}" for i in range(8)]
