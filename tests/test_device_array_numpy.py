"""The portable DeviceArray where NumPy defines the behaviour: ravel's orders, the
errors of view and of non-integer shapes, ``np.array(d, copy=False)``."""

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux.memory import DeviceArrayError


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("layout", ["C", "F"])
def test_ravel_orders(device, order, layout):
    h = np.asarray(np.arange(60).reshape(3, 4, 5), order=layout)
    d = gpux.to_device(h)
    if order in ("C", "F") and order != layout:
        with pytest.raises(NotImplementedError):
            d.ravel(order=order)
        return
    flat = d.ravel(order=order)
    assert flat.ndim == 1 and flat is not d
    np.testing.assert_array_equal(flat.copy_to_host(), h.ravel(order=order))


def test_ravel_of_a_strided_view_and_a_bad_order(device):
    d = gpux.to_device(np.arange(60))
    with pytest.raises(NotImplementedError):
        d[::2].ravel()
    with pytest.raises(ValueError):
        d.ravel(order="X")


def test_view_errors_are_numpys(device):
    d = gpux.to_device(np.arange(12, dtype="i2").reshape(4, 3))
    with pytest.raises(ValueError, match="must be a divisor of the total size in bytes"):
        d.view("i4")
    with pytest.raises(DeviceArrayError, match="the last axis must be contiguous"):
        gpux.to_device(np.arange(32, dtype="i2").reshape(4, 8))[:, ::2].view("i4")
    np.testing.assert_array_equal(
        gpux.to_device(np.arange(8, dtype="i2").reshape(2, 4)).view("i4").copy_to_host(),
        np.arange(8, dtype="i2").reshape(2, 4).view("i4"))


@pytest.mark.parametrize("shape", [np.array([1.1]), [1.1], (1.1, 2.2), 2.5])
def test_non_integer_shapes_are_a_type_error(device, shape):
    with pytest.raises(TypeError):
        gpux.device_array(shape)
    assert gpux.device_array(np.array([2, 3])).shape == (2, 3)


@pytest.mark.skipif(np.lib.NumpyVersion(np.__version__) < "2.0.0",
                    reason="np.array(copy=False) asks __array__ for no copy from NumPy 2")
def test_array_protocol_refuses_copy_false(device):
    d = gpux.to_device(np.arange(3.0))
    with pytest.raises(ValueError, match="`copy=False` is not"):
        np.array(d, copy=False)
    np.testing.assert_array_equal(np.array(d), np.arange(3.0))
    np.testing.assert_array_equal(np.asarray(d, dtype=np.float32), np.arange(3, dtype=np.float32))


def test_reshape_takes_integer_dimensions_as_numpy_does(device):
    h = np.arange(12, dtype=np.float32)
    d = gpux.to_device(h)
    for shape in ((3, -1), ((2, 2, 3),), (np.int64(4), 3), (-1,)):
        got = d.reshape(*shape)
        assert got.shape == h.reshape(*shape).shape
        np.testing.assert_array_equal(got.copy_to_host(), h.reshape(*shape))
    for bad in ((2.0, 6), ("3", 4)):
        with pytest.raises(TypeError):
            h.reshape(*bad)
        with pytest.raises(TypeError):
            d.reshape(*bad)
    with pytest.raises(DeviceArrayError):
        d.reshape(5)
    with pytest.raises(DeviceArrayError):
        d.reshape(-1, -1)
    assert gpux.device_array(0, np.float32).reshape(-1, 5).shape == (0, 5)


def test_copy_to_host_fills_the_array_given_in_any_layout(device):
    """``copy_to_host(ary)`` returns *ary* holding the data: a C-ordered one is read into
    directly, an F-ordered or strided one through a staging copy; a read-only one is
    NumPy's error, and nothing is written."""
    h = np.arange(24.0).reshape(4, 6)
    d = gpux.to_device(h)
    for out in (np.empty((4, 6)), np.empty((4, 6), order="F"),
                np.zeros((4, 12))[:, ::2], np.zeros((6, 6))[1:5]):
        got = d.copy_to_host(out)
        assert got is out
        np.testing.assert_array_equal(out, h)
    # from a strided device view and a view with an offset
    np.testing.assert_array_equal(d[:, 1::2].copy_to_host(np.empty((4, 3))), h[:, 1::2])
    np.testing.assert_array_equal(d[1:3].copy_to_host(np.empty((2, 6))), h[1:3])
    frozen = np.zeros((4, 6))
    frozen.flags.writeable = False
    with pytest.raises(ValueError):
        d.copy_to_host(frozen)
    assert not frozen.any()
