"""numba.cuda's ``DeviceRecord``: one NumPy structured scalar (a record) in device
memory, as ``cudadrv.devicearray`` exports it.

A ``DeviceRecord`` is a 0-d :class:`~numba_gpux.cuda.cudadrv.devicearray.DeviceNDArray`
whose Numba type is the record's (``numba.np.numpy_support.from_dtype``), so a kernel
given one gets the record by reference and its stores stay on the device.  Indexing
it by a field name gives, as numba.cuda does, a ``DeviceRecord`` for a nested record,
a device array over the field's memory for a field with a shape, and the field's value
(copied to the host) for a scalar field; assigning to a field name writes that field
on the device.  Taking one element of a device array of records gives a
``DeviceRecord`` over that element.
"""

from __future__ import annotations

import numpy as np
from numba.np.numpy_support import from_dtype

from .. import memory as _mem
from ..flatten import buffer_leaves
from . import _arrays
from ._arrays import DeviceNDArray, DeviceNDArrayBase

__all__ = ["DeviceRecord", "from_record_like", "record_view"]


class DeviceRecord(DeviceNDArray):
    """A record of dtype *dtype* in device memory: new memory, or *gpu_data*'s (a
    memory pointer, as ``DeviceNDArray`` takes it).  *stream* is its default stream
    for copies."""

    def __init__(self, dtype, stream=0, gpu_data=None):
        dtype = np.dtype(dtype)
        if dtype.names is None:
            raise TypeError(f"a DeviceRecord holds a structured dtype, not {dtype}")
        super().__init__((), (), dtype, stream, gpu_data)
        ty = from_dtype(dtype)
        self._numba_type_ = ty
        self._launch_key_ = _mem._launch_key(ty, self._alloc.device)
        # a kernel takes a record as (buffer, byte offset): flatten.py's Record leaves
        self._gpux_flat_ = buffer_leaves(self._alloc.device.runtime, self._alloc.handle,
                                         self.offset)

    def view_as(self, shape, strides, offset):
        if tuple(shape) == ():
            out = DeviceRecord(self.dtype, self._alloc, offset)
        else:
            out = DeviceNDArray(shape, strides, self.dtype, self._alloc, offset)
        out.stream = self.stream
        return out

    # -- fields -----------------------------------------------------------------------
    def _field(self, name):
        try:
            typ, offset = self.dtype.fields[name][:2]
        except (KeyError, TypeError):
            raise KeyError(f"record of dtype {self.dtype} has no field {name!r}") from None
        return typ, self.offset + offset

    def _field_view(self, name):
        """The device memory of field *name*: a DeviceRecord, or a DeviceNDArray
        (0-d for a scalar field)."""
        typ, offset = self._field(name)
        if typ.names is not None and typ.shape == ():
            out = DeviceRecord(typ, self._alloc, offset)
        elif typ.shape == ():
            out = DeviceNDArray((), (), typ, self._alloc, offset)
        else:
            base = typ.subdtype[0]
            strides = _mem._c_strides(typ.shape, base.itemsize)
            out = DeviceNDArray(typ.shape, strides, base, self._alloc, offset)
        out.stream = self.stream
        return out

    def __getitem__(self, item):
        return self._do_getitem(item)

    def getitem(self, item, stream=0):
        """``self[item]`` with its copy ordered on *stream*."""
        return self._do_getitem(item, stream)

    def _do_getitem(self, item, stream=0):
        view = self._field_view(item)
        if isinstance(view, DeviceRecord) or view.ndim:
            return view
        stream = self._default_stream(stream)
        return DeviceNDArrayBase.copy_to_host(view, None, stream or None)[()]

    def __setitem__(self, key, value) -> None:
        self._do_setitem(key, value)

    def setitem(self, key, value, stream=0) -> None:
        """``self[key] = value`` ordered on *stream*."""
        self._do_setitem(key, value, stream)

    def _do_setitem(self, key, value, stream=0) -> None:
        target = self._field_view(key)
        host = np.asarray(value, dtype=target.dtype)
        DeviceNDArrayBase.copy_to_device(target, host, self._default_stream(stream) or None)

    # -- copies -----------------------------------------------------------------------
    def copy_to_device(self, ary, stream=0) -> None:
        """Copy the record *ary* (a NumPy record or 0-d structured array, or another
        DeviceRecord) of this dtype into device memory."""
        if isinstance(ary, _mem.DeviceArray):
            ary = DeviceNDArrayBase.copy_to_host(ary)
        host = np.asarray(ary)
        if host.dtype != self.dtype:
            raise TypeError(f"incompatible dtype: {self.dtype} vs. {host.dtype}")
        if host.shape != ():
            raise ValueError(f"incompatible shape: () vs. {host.shape}")
        DeviceNDArrayBase.copy_to_device(self, host, self._default_stream(stream) or None)

    def copy_to_host(self, ary=None, stream=0):
        """The record as a 0-d structured host array, or copied into the host record
        *ary* (field by field, so a record taken from an array writes that array)."""
        got = DeviceNDArrayBase.copy_to_host(self, None, self._default_stream(stream) or None)
        if ary is None:
            return got
        if ary.dtype != self.dtype:
            raise TypeError(f"incompatible dtype: {self.dtype} vs. {ary.dtype}")
        if isinstance(ary, np.ndarray):
            ary[...] = got
        else:  # np.void / np.record: assigned through its fields
            for name in self.dtype.names:
                ary[name] = got[name]
        return ary

    def copy(self) -> "DeviceRecord":
        """A new DeviceRecord on this device holding this record's value."""
        alloc, offset = _arrays._new_allocation(self.device, self.dtype.itemsize)
        out = DeviceRecord(self.dtype, alloc, offset)
        out.stream = self.stream
        out.copy_to_device(self)
        return out

    def __reduce__(self):
        # pickled as its host value, as device arrays are: a DeviceRecord again
        return _rebuild_record, (self.copy_to_host(),)

    def __repr__(self) -> str:
        return f"<DeviceRecord dtype={self.dtype} on {self.device.spec}>"


def _rebuild_record(host) -> DeviceRecord:
    rec = DeviceRecord(host.dtype)
    rec.copy_to_device(host)
    return rec


def from_record_like(rec, stream=0, gpu_data=None) -> DeviceRecord:
    """An uninitialized DeviceRecord of *rec*'s dtype (*rec*: a host or device record),
    or one over *gpu_data*."""
    return DeviceRecord(rec.dtype, stream=stream, gpu_data=gpu_data)


def record_view(array, index):
    """``array[index]`` where that is one element of a record array: a DeviceRecord
    over the element (numba.cuda's indexing of device arrays of records)."""
    view = _mem._index_view(array, index)
    if view.ndim == 0 and array.dtype.names is not None:
        out = DeviceRecord(array.dtype, view._alloc, view.offset)
        out.stream = getattr(array, "stream", 0)
        return out
    return None


_arrays._record_view = record_view  # DeviceNDArray.__getitem__ of one element
