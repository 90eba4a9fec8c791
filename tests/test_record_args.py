"""Records (NumPy structured scalars) as kernel arguments: the kernel reads and writes
the fields, nested arrays included, of a copy on the device; a record taken from an
array is a view, so what the kernel wrote reaches that array after the launch."""

import numba
import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import cuda

DT = np.dtype([("a", "f8"), ("b", "i4"), ("c", "c8"), ("d", "u1", (5,))])


def sample():
    arr = np.zeros(3, dtype=DT)
    arr[1] = (1.5, 7, 2 + 3j, [1, 2, 3, 4, 5])
    return arr


@gpux.jit
def read_fields(r, out):
    out[0] = r.a
    out[1] = r.b
    out[2] = r.c.real
    out[3] = r.c.imag
    out[4] = r.d[4]


@gpux.jit
def write_fields(r, v):
    r.a = v
    r.b = 3
    r["d"][0] = 9


def test_kernel_reads_every_kind_of_field(device):
    arr = sample()
    out = gpux.to_device(np.zeros(5))
    read_fields[1, 1](arr[1], out)
    np.testing.assert_equal(out.copy_to_host(), [1.5, 7, 2, 3, 5])
    read_fields[1, 1](arr.view(np.recarray)[1], out)  # an np.record reads the same
    np.testing.assert_equal(out.copy_to_host(), [1.5, 7, 2, 3, 5])


def test_writes_reach_the_array_the_record_views(device):
    arr = sample()
    before = arr.copy()
    write_fields[1, 1](arr[2], 4.25)
    expect = before.copy()
    expect[2]["a"], expect[2]["b"], expect[2]["d"][0] = 4.25, 3, 9
    np.testing.assert_equal(arr, expect)  # the other records untouched


def test_record_with_an_eager_signature_and_in_a_tuple(device):
    rec_t = numba.from_dtype(DT)

    @cuda.jit((rec_t, numba.float64[::1]))
    def total(r, out):
        out[0] = r.a + r.b + r.d[0]

    @cuda.jit
    def from_tuple(t, out):
        out[0] = t[0].a * t[1]

    arr = sample()
    out = np.zeros(1)
    total[1, 1](arr[1], out)
    assert out[0] == 1.5 + 7 + 1
    from_tuple[1, 1]((arr[1], 2.0), out)
    assert out[0] == 3.0


def test_record_kernels_compile_for_every_target():
    # an aligned record's fields are stored whole (a packed one's byte by byte, as
    # Numba lowers unaligned fields), through the global pointer the kernel gets
    aligned = np.dtype(DT.descr, align=True)
    sig = (numba.from_dtype(aligned), numba.float64)
    ptx = gpux.compile(write_fields, sig, target="cuda", cubin=False).text
    assert ".param .u64 .ptr .global" in ptx
    assert "st.global.b64 \t[%rd1]," in ptx and "st.global.b32 \t[%rd1+8], 3;" in ptx
    assert gpux.compile(write_fields, sig, target="opencl").binary[:4] == b"\x03\x02\x23\x07"


def test_aligned_record(device):
    arr = np.zeros(2, dtype=np.dtype(DT.descr, align=True))
    write_fields[1, 1](arr[0], -2.0)
    assert (arr[0]["a"], arr[0]["b"], arr[0]["d"][0]) == (-2.0, 3, 9)
    assert arr[1]["a"] == 0


def test_a_record_of_the_wrong_type_for_an_eager_signature_is_refused(device):
    other = np.zeros(1, dtype=[("x", "f4")])

    @cuda.jit((numba.from_dtype(DT),))
    def k(r):
        r.a = 1.0

    with pytest.raises(TypeError, match="No matching definition"):
        k[1, 1](other[0])
