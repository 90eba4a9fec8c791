"""numba.cuda's ``DeviceRecord``: a record in device memory, made from a dtype, from a
host record (``auto_device``, ``from_record_like``) or by taking one element of a
device array of records; its fields read and write the device memory, and a kernel
given one writes it in place."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
from numba.np.numpy_support import from_dtype

from numba_gpux import cuda
from numba_gpux.cuda.cudadrv.devicearray import DeviceRecord, auto_device, from_record_like

PAIR = np.dtype([("n", np.int32), ("x", np.float64)], align=True)
INNER = np.dtype([("k", np.int16), ("m", np.float32, (2, 3))])
OUTER = np.dtype([("id", np.int64), ("inner", INNER), ("tag", "U4")])


def host_pair(n, x, ctor=np.zeros):
    rec = ctor(1, PAIR)[0]
    rec["n"] = n
    rec["x"] = x
    return rec


def test_new_record_has_numba_cudas_attributes(device):
    rec = DeviceRecord(PAIR)
    assert rec.shape == () and rec.strides == ()
    assert rec.dtype == PAIR and rec.alloc_size == PAIR.itemsize
    assert rec._numba_type_ == from_dtype(PAIR)
    assert rec.gpu_data is not None
    assert rec.device_ctypes_pointer.value not in (None, 0)
    assert isinstance(rec.device_ctypes_pointer, ctypes.c_void_p)


def test_a_plain_dtype_is_refused(device):
    with pytest.raises(TypeError, match="structured"):
        DeviceRecord(np.float32)


@pytest.mark.parametrize("ctor", [np.zeros, np.recarray])
def test_copies_both_ways_keep_every_field(device, ctor):
    rec = DeviceRecord(PAIR)
    rec.copy_to_device(host_pair(7, 2.5, ctor))
    back = host_pair(0, 0.0, ctor)
    assert rec.copy_to_host(back) is back
    assert (back["n"], back["x"]) == (7, 2.5)
    whole = rec.copy_to_host()
    assert whole.shape == () and whole.dtype == PAIR and whole["n"] == 7


def test_copy_of_another_dtype_is_a_type_error(device):
    rec = DeviceRecord(PAIR)
    other = np.zeros(1, np.dtype([("n", np.int64), ("x", np.float64)]))[0]
    with pytest.raises(TypeError, match="incompatible dtype"):
        rec.copy_to_device(other)


def test_auto_device_copies_a_host_record(device):
    src = host_pair(-3, 1.25)
    rec, made = auto_device(src)
    assert isinstance(rec, DeviceRecord) and made
    assert rec["n"] == -3 and rec["x"] == 1.25
    empty, made = auto_device(src, copy=False)
    assert isinstance(empty, DeviceRecord) and made
    same, made = auto_device(rec)
    assert same is rec and not made


def test_to_device_of_a_host_record_gives_a_device_record(device):
    """``cuda.to_device(record_array[i])`` (a NumPy record, np.void or np.record) is a
    DeviceRecord, as numba.cuda's, which a kernel compiled for the Record type takes;
    ``copy=False`` gives one of the dtype, uncopied; ``to=`` copies into a given one."""
    from numba.core.types import float64, void

    src = host_pair(-3, 1.25)
    rec = cuda.to_device(src)
    assert isinstance(rec, DeviceRecord) and rec.dtype == PAIR
    assert (rec["n"], rec["x"]) == (-3, 1.25)
    assert isinstance(cuda.to_device(np.rec.array(np.zeros(2, PAIR))[1]), DeviceRecord)
    assert isinstance(cuda.to_device(src, copy=False), DeviceRecord)
    target = DeviceRecord(PAIR)
    assert cuda.to_device(host_pair(4, 0.5), to=target) is target and target["n"] == 4

    @cuda.jit(void(float64[::1], from_dtype(PAIR)))
    def read(out, r):
        out[0] = r.n + r.x

    out = cuda.to_device(np.zeros(1))
    read[1, 1](out, rec)
    assert out.copy_to_host()[0] == -1.75


def test_from_record_like_makes_new_memory(device):
    first = from_record_like(host_pair(1, 1.0))
    second = from_record_like(first)
    assert second.dtype == PAIR
    assert first.gpu_data != second.gpu_data
    first["n"] = 5
    second["n"] = 6
    assert (first["n"], second["n"]) == (5, 6)


def test_fields_of_an_array_element_write_the_array(device):
    host = np.zeros(3, OUTER)
    arr = cuda.to_device(host)
    elem = arr[1]
    assert isinstance(elem, DeviceRecord) and elem.dtype == OUTER
    elem["id"] = 42
    elem["tag"] = "abcd"
    inner = elem["inner"]
    assert isinstance(inner, DeviceRecord)
    inner["k"] = -2
    sub = inner["m"]
    assert sub.shape == (2, 3) and sub.dtype == np.float32
    sub[1, 2] = 9.5
    sub[0] = [1.0, 2.0, 3.0]
    got = arr.copy_to_host()
    want = np.zeros(3, OUTER)
    want[1]["id"] = 42
    want[1]["tag"] = "abcd"
    want[1]["inner"]["k"] = -2
    want[1]["inner"]["m"][1, 2] = 9.5
    want[1]["inner"]["m"][0] = [1.0, 2.0, 3.0]
    np.testing.assert_array_equal(got, want)
    assert elem["tag"] == "abcd" and arr[1]["inner"]["m"][1, 2] == 9.5


def test_an_unknown_field_is_a_key_error(device):
    with pytest.raises(KeyError, match="nope"):
        DeviceRecord(PAIR)["nope"]


def test_a_kernel_writes_the_record_in_place(device):
    @cuda.jit
    def bump(r):
        r.n = r.n * 2 + 1
        r.x = r.x + 0.5

    rec, _ = auto_device(host_pair(20, 1.0))
    bump[1, 1](rec)
    assert (rec["n"], rec["x"]) == (41, 1.5)

    arr = cuda.to_device(np.zeros(2, PAIR))
    bump[1, 1](arr[1])  # an element's record: the kernel writes the array
    got = arr.copy_to_host()
    assert list(got["n"]) == [0, 1] and list(got["x"]) == [0.0, 0.5]


def test_copy_and_pickle_give_records_with_the_value(device):
    import pickle

    rec, _ = auto_device(host_pair(9, -0.5))
    dup = rec.copy()
    assert isinstance(dup, DeviceRecord) and dup.gpu_data != rec.gpu_data
    dup["n"] = 1
    assert (rec["n"], dup["n"], dup["x"]) == (9, 1, -0.5)
    back = pickle.loads(pickle.dumps(rec))
    assert isinstance(back, DeviceRecord) and back._numba_type_ == rec._numba_type_
    assert (back["n"], back["x"]) == (9, -0.5)
