"""print() in kernels: output reaches the host's stdout, in order per work-item and in
order with the host's own prints.  The device runtime writes to the process's file
descriptor 1, so the tests read it with ``capfd``."""

from __future__ import annotations

import re

import numpy as np
import pytest

import numba_gpux as gpux

pytestmark = pytest.mark.feature("print")


@gpux.jit
def print_values(a, n):
    i = gpux.grid(1)
    if i < n:
        print("item", i, "value", a[i], "twice", 2 * a[i], "100%", a[i] > 1.5)
        print("second", i, -i, np.uint32(i) + np.uint32(7))


@gpux.jit
def print_complex(z):
    i = gpux.grid(1)
    if i < z.shape[0]:
        print("z", z[i])


CONFORMANCE_KERNELS = [
    (print_values, "void(float32[::1], int64)"),
    (print_complex, "void(complex128[::1])"),
]


def test_print_reaches_stdout_in_order(device, capfd):
    a = np.arange(8, dtype=np.float32) / 2
    print("host before")
    print_values[2, 4](gpux.to_device(a), 8)
    print("host after")
    out = capfd.readouterr().out.splitlines()
    assert out[0] == "host before" and out[-1] == "host after"
    lines = out[1:-1]
    assert len(lines) == 16
    seen = {}
    for line in lines:
        m = re.fullmatch(r"item (\d+) value (\S+) twice (\S+) 100% (True|False)", line)
        if m:
            i = int(m.group(1))
            assert i not in seen
            seen[i] = "first"
            assert float(m.group(2)) == a[i] and float(m.group(3)) == 2 * a[i]
            assert m.group(4) == str(bool(a[i] > 1.5))
            continue
        m = re.fullmatch(r"second (\d+) (-?\d+) (\d+)", line)
        assert m, line
        i = int(m.group(1))
        assert seen.get(i) == "first", f"work-item {i}: lines out of order"
        seen[i] = "second"
        assert int(m.group(2)) == -i and int(m.group(3)) == i + 7
    assert sorted(seen) == list(range(8)) and set(seen.values()) == {"second"}


def test_print_complex(device, capfd, request):
    z = np.array([1.5 - 2j, -0.25 + 4j])
    print_complex[1, 2](gpux.to_device(z))
    lines = sorted(capfd.readouterr().out.splitlines())
    assert lines == sorted(["z (1.5-2j)", "z (-0.25+4j)"])


def test_print_too_many_values_is_a_clear_error(device):
    from numba.core.errors import NumbaError

    @gpux.jit
    def many(a):
        print(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10],
              (a[11], a[12], a[13], a[14], a[15], a[16], a[17], a[18], a[19], a[20], a[21]),
              (a[22], a[23], a[24], a[25], a[26], a[27], a[28], a[29], a[30], a[31], a[32]))

    with pytest.raises(NumbaError, match="at most 32"):
        many[1, 1](gpux.to_device(np.zeros(33)))
