"""launch_bounds and max_registers: a launch over the bound is refused before it
runs, and the CUDA target's PTX carries the bounds (.maxntid & co.)."""

import re

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import LaunchError, cuda


def _ptx(kernel, sig="void(int32[::1])", cc=(9, 0)):
    return gpux.compile(kernel, sig, target="cuda", cc=cc, cubin=False).text


def _directives(ptx):
    return dict(re.findall(r"^\.(maxntid|minnctapersm|maxclusterrank|maxnreg)\s+([\d, ]+?)\s*$",
                           ptx, re.M))


@pytest.mark.parametrize("bounds, want", [
    (128, {"maxntid": "128"}),
    ((128,), {"maxntid": "128"}),
    ((128, 2), {"maxntid": "128", "minnctapersm": "2"}),
    ((256, 2, 4), {"maxntid": "256", "minnctapersm": "2", "maxclusterrank": "4"}),
])
def test_the_bounds_reach_the_ptx(bounds, want):
    @cuda.jit(launch_bounds=bounds)
    def k(a):
        a[cuda.grid(1)] = 1

    assert _directives(_ptx(k)) == want


def test_max_registers_reaches_the_ptx_and_nothing_is_added_without_bounds():
    @cuda.jit(max_registers=40)
    def capped(a):
        a[0] = 1

    @cuda.jit
    def plain(a):
        a[0] = 1

    assert _directives(_ptx(capped)) == {"maxnreg": "40"}
    assert _directives(_ptx(plain)) == {}


def test_a_block_over_the_bound_is_refused_before_it_runs(device):
    @gpux.jit(launch_bounds=(64, 1))
    def k(a):
        i = gpux.grid(1)
        if i < a.size:
            a[i] = 7

    a = gpux.to_device(np.zeros(256, np.int32))
    k[4, 64](a)
    k[2, (8, 8)](a)                          # 64 threads in two dimensions: within
    assert (a.copy_to_host() == 7).all()
    a = gpux.to_device(np.zeros(256, np.int32))
    for block in (128, (16, 8)):
        with pytest.raises(LaunchError, match=r"launch bound of 64 threads"):
            k[2, block](a)
    assert (a.copy_to_host() == 0).all()     # nothing ran


@pytest.mark.parametrize("bad, message", [
    ((128, 2, 4, 8), "Got 4 launch bounds"),
    ((), "positive int"), (0, "positive int"), ((128, -1), "positive int"),
    ("128", "positive int"),
])
def test_bad_bounds_are_value_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        cuda.jit("void()", launch_bounds=bad)(lambda: None)


@pytest.mark.parametrize("carveout", ["MaxL1", "MaxShared", "default", 0, 50, 100, -1])
def test_shared_memory_carveout_values_run(device, carveout):
    for sig in (None, "void(int32[::1])"):
        def add_one(x):
            i = cuda.grid(1)
            if i < x.size:
                x[i] = i + 1
        k = cuda.jit(shared_memory_carveout=carveout)(add_one) if sig is None else \
            cuda.jit(sig, shared_memory_carveout=carveout)(add_one)
        d = cuda.to_device(np.zeros(10, np.int32))
        k[1, 10](d)
        np.testing.assert_array_equal(d.copy_to_host(), np.arange(1, 11))


@pytest.mark.parametrize("bad, message", [(150, "between -1 and 100"), (-2, "between -1 and 100"),
                                          ("InvalidOption", "Invalid carveout value")])
def test_bad_shared_memory_carveouts_are_value_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        cuda.jit(shared_memory_carveout=bad)(lambda x: None)
