"""The launch path's one generated piece of code (numba_gpux/flatten.py) writes a
kernel's arguments as its flat parameters in the form the device's runtime declares
(interface.Runtime): numbers, or their little-endian bytes for a runtime that sets
arguments as bytes (OpenCL)."""

from __future__ import annotations

import math
import struct

import numpy as np
from numba.core import types

import numba_gpux as gpux
from numba_gpux.argtypes import _typeof
from numba_gpux.flatten import _build_flatten, buffer_leaves
from numba_gpux.interface import Runtime


def _args():
    arr = np.arange(12, dtype=np.float32).reshape(3, 4)
    return arr, (np.float32(-0.0), True, np.complex64(1.5 - 2j), np.int8(-3), 2.5,
                 np.datetime64(7, "D"), (np.uint16(9), None))


def test_scalars_as_bytes_for_a_runtime_that_sets_bytes(opencl_device):
    assert opencl_device.runtime.packed_scalars
    arr, scalars = _args()
    d = gpux.to_device(arr)[1:, ::2]  # a view: offset 16, strides (16, 8)
    args = (d, *scalars)
    flatten, params = _build_flatten(tuple(map(_typeof, args)), opencl_device)
    flat = flatten(args)
    q = lambda v: struct.pack("<q", v)  # noqa: E731
    assert flat[0] is d._alloc.handle
    assert flat[1:6] == [q(16), q(2), q(2), q(16), q(8)]
    assert flat[6:] == [struct.pack("<f", -0.0), b"\x01", struct.pack("<f", 1.5),
                        struct.pack("<f", -2.0), struct.pack("<b", -3), struct.pack("<d", 2.5),
                        q(7), struct.pack("<H", 9)]
    assert [k for k, _ in params] == ["buffer"] + ["i64"] * 5 + [
        "scalar", "i8", "scalar", "scalar", "scalar", "scalar", "scalar", "scalar"]
    assert flatten((d, *scalars)) == flat  # the array's leaves are kept on it


def test_numbers_as_they_are_by_default():
    """Without a device (the base Runtime's form) scalars stay numbers."""
    assert not Runtime.packed_scalars
    _, scalars = _args()
    flatten, params = _build_flatten(tuple(map(_typeof, scalars)))
    flat = flatten(scalars)
    assert flat[1:] == [1, 1.5, -2.0, -3, 2.5, 7, 9]
    assert np.signbit(flat[0])
    assert len(params) == len(flat)


def test_a_buffer_with_its_offset_folded_into_the_pointer():
    class Addresses(Runtime):
        buffers_are_addresses = True
        pointer_includes_offset = True

    assert buffer_leaves(Addresses, 0x1000, 24, (3, 8)) == (0x1000 + 24, 24, 3, 8)
    assert buffer_leaves(Runtime, 0x1000, 24, (3, 8)) == (0x1000, 24, 3, 8)


def test_pointer_arguments_are_resolved_in_the_runtimes_form(opencl_device):
    from numba_gpux.memory import device_pointer

    d = gpux.to_device(np.zeros(8, np.int32))
    ptr = device_pointer(d._alloc) + 12
    flatten, params = _build_flatten((types.CPointer(types.int32),), opencl_device)
    assert flatten((ptr,)) == [d._alloc.handle, struct.pack("<q", 12)]
    assert [k for k, _ in params] == ["buffer", "i64"]


def test_packed_integers_are_kept_and_floats_are_not():
    """An integer packed again is the same bytes object (the OpenCL launcher then skips an
    unchanged argument by identity); floats are packed each time: 0.0 and -0.0 are equal
    but differ in their bytes."""
    from numba_gpux.flatten import _PACKERS

    i8, u4, f8 = _PACKERS["i8"], _PACKERS["u4"], _PACKERS["f8"]
    a = i8(1000)
    assert i8(1000) is a and a == struct.pack("<q", 1000)
    assert i8(np.int64(1000)) == a and i8(-1000) == struct.pack("<q", -1000)
    assert u4(7) == struct.pack("<I", 7) and i8(7) == struct.pack("<q", 7)
    assert f8(0.0) == struct.pack("<d", 0.0) and f8(-0.0) == struct.pack("<d", -0.0)
    for v in range(5000):  # more values than are kept: still right
        assert i8(v) == struct.pack("<q", v)


def test_launches_repeating_and_changing_scalars(device):
    @gpux.jit
    def put(out, k, x):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = k + math.copysign(1.0, x)

    out = gpux.to_device(np.zeros(4))
    for k, x, want in ((5, 0.0, 6.0), (5, -0.0, 4.0), (np.int64(5), 0.0, 6.0), (6, 0.0, 7.0),
                       (6, 0.0, 7.0), (2**40, -0.0, 2.0**40 - 1), (5, 2.0, 6.0)):
        put[1, 4](out, k, x)
        np.testing.assert_array_equal(out.copy_to_host(), want)
