"""The facade's device-array class: ``DeviceNDArray``, numba_gpux's
:class:`~numba_gpux.DeviceArray` with numba.cuda's semantics where they differ from
NumPy's (``cudadrv.devicearray`` and ``numba_gpux.cuda`` export it)."""

from __future__ import annotations

import ctypes

import numpy as np

from .. import memory as _mem

__all__ = ["DeviceNDArray", "DeviceNDArrayBase", "as_facade", "transpose_2d"]

DeviceNDArrayBase = _mem.DeviceArray


#: numba.cuda's message for a copy between memory that is not one contiguous range
errmsg_contiguous_buffer = ("Array contains non-contiguous buffer and cannot be transferred as "
                            "a single memory region. Please ensure contiguous buffer with numpy "
                            ".ascontiguousarray()")


def _core(ary):
    """*ary* without its broadcast (stride 0) dimensions, as numba.cuda's ``array_core``."""
    if not ary.strides or not ary.size or 0 not in ary.strides:
        return ary
    index = tuple(0 if s == 0 else slice(None) for s in ary.strides)
    if isinstance(ary, _mem.DeviceArray):
        return _mem._index_view(ary, index)  # a view also when it is 0-d
    return ary[index]


def _sentry_contiguous(ary) -> None:
    core = _core(ary)
    if not (core.flags["C_CONTIGUOUS"] or core.flags["F_CONTIGUOUS"]):
        raise ValueError(errmsg_contiguous_buffer)


def _check_compatible(a, b) -> None:
    """numba.cuda's ``check_array_compatibility`` of two array cores."""
    if a.dtype != b.dtype:
        raise TypeError(f"incompatible dtype: {a.dtype} vs. {b.dtype}")
    if a.shape != b.shape:
        raise ValueError(f"incompatible shape: {a.shape} vs. {b.shape}")
    if a.size and a.strides != b.strides:
        raise ValueError(f"incompatible strides: {a.strides} vs. {b.strides}")


class DeviceNDArray(DeviceNDArrayBase):
    """A device array made through ``numba_gpux.cuda``: numba.cuda's semantics where
    they differ from NumPy's.

    Made as numba.cuda makes one, ``DeviceNDArray(shape, strides, dtype, stream=0,
    gpu_data=None)`` (*gpu_data*: memory from ``context.memalloc`` or another memory
    pointer), or as a ``numba_gpux.DeviceArray`` (an allocation and a byte offset in
    place of *stream* and *gpu_data*).  ``stream`` is the array's default stream for
    its copies (``bind``)."""

    #: the stream copies of this array use when given none (numba.cuda's ``stream``)
    stream = 0

    def __init__(self, shape, strides, dtype, stream=0, gpu_data=None):
        if isinstance(stream, _mem.Allocation):  # the core's form: (alloc, offset)
            super().__init__(shape, strides, dtype, stream, gpu_data or 0)
            return
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        for n in shape:
            if not isinstance(n, (int, np.integer)):
                raise TypeError(f"shape elements must be integers, got {type(n).__name__}")
        shape = tuple(int(n) for n in shape)
        strides = (strides,) if isinstance(strides, (int, np.integer)) else tuple(strides)
        if len(strides) != len(shape):
            raise ValueError("strides not match ndim")
        dtype = np.dtype(dtype)
        size = int(np.prod(shape, dtype=np.int64))
        low = sum((n - 1) * s for n, s in zip(shape, strides) if s < 0 and n > 0)
        span = 0 if not size else \
            sum((n - 1) * abs(s) for n, s in zip(shape, strides)) + dtype.itemsize
        dev = _device_of(gpu_data)
        if gpu_data is None or not int(getattr(gpu_data, "device_pointer", 0) or 0):
            alloc, base = _new_allocation(dev, span)
            offset = base - low
        else:
            alloc, offset = _memory_at(gpu_data, dev, span)
        super().__init__(shape, strides, dtype, alloc, offset)
        self.stream = stream

    # -- numba.cuda's attributes ----------------------------------------------------
    @property
    def alloc_size(self) -> int:
        """The bytes this array's elements span (0 for an empty array)."""
        lo, hi = self._extent()
        return hi - lo

    def bind(self, stream=0) -> "DeviceNDArray":
        """A view of the same memory whose copies default to *stream*."""
        clone = self.__copy__()
        clone.stream = stream
        return clone

    def _default_stream(self, stream):
        return stream if stream else self.stream

    def __copy__(self) -> "DeviceNDArray":
        out = DeviceNDArrayBase.view_as(self, self.shape, self.strides, self.offset)
        out.stream = self.stream
        return out

    def view_as(self, shape, strides, offset):
        out = super().view_as(shape, strides, offset)
        out.stream = self.stream
        return out

    def view(self, dtype):
        out = super().view(dtype)
        out.stream = self.stream
        return out

    @property
    def __cuda_array_interface__(self) -> dict:
        """The CUDA Array Interface (version 3): the device's runtime's where it has one
        (CUDA); elsewhere (OpenCL buffers have no addresses) with the integer device
        pointer numba_gpux gives the memory (``device_ctypes_pointer``), which this
        device's arrays and kernels take back.  ``stream`` is this array's stream
        (None for the default stream)."""
        rt = self.device.runtime
        try:
            cai = dict(rt.array_attribute(self, "__cuda_array_interface__"))
        except AttributeError:
            if rt.buffers_are_addresses:
                raise
            from .. import cai as _cai

            cai = _cai.write(_mem.device_pointer(self._alloc) + self.offset, self.shape,
                             self.strides, self.dtype)
        stream = self.stream
        cai["stream"] = int(stream) if stream else None
        return cai

    # -- copies ---------------------------------------------------------------------
    def copy_to_device(self, ary, stream=0) -> None:
        """Copy *ary* (a host or device array of this array's shape, dtype and, broadcast
        dimensions aside, strides) into this contiguous array, as numba.cuda does: a
        ValueError for non-contiguous memory or different strides, a TypeError for
        another dtype."""
        if ary.size == 0:
            return
        _sentry_contiguous(self)
        stream = self._default_stream(stream)
        mine = _core(self)
        if isinstance(ary, _mem.DeviceArray):
            _sentry_contiguous(ary)
            theirs = _core(ary)
            _check_compatible(mine, theirs)
            rt = self.device.runtime
            lo_s, hi_s = theirs._extent()
            if ary.device is self.device:
                rt.copy(mine.handle, mine._extent()[0], theirs.handle, lo_s, hi_s - lo_s,
                        stream or None)
                rt.synchronize(stream or None)
            else:
                DeviceNDArrayBase.copy_to_device(mine, theirs.copy_to_host(), stream or None)
            return
        theirs = np.asarray(_core(np.asarray(ary)),
                            order="C" if mine.flags["C_CONTIGUOUS"] else "F")
        _check_compatible(mine, theirs)
        DeviceNDArrayBase.copy_to_device(mine, theirs, stream or None)

    def copy_to_host(self, ary=None, stream=0):
        """Copy to a new (or the given) host array; numba.cuda copies one range of bytes,
        so an array with a negative stride is a NotImplementedError (``numba_gpux``'s
        own ``DeviceArray.copy_to_host`` copies those too)."""
        if self.size and any(s < 0 for s in self.strides):
            raise NotImplementedError(f"D->H copy not implemented for negative strides: "
                                      f"{self.strides}")
        if ary is not None and self.size == 0 and ary.size == 0 and ary.shape == self.shape:
            return ary
        if self.dtype == object:  # (the device holds no Python objects: _memory_api)
            objects = getattr(self, "_host_objects", None)
            if objects is None or objects.shape != self.shape:
                raise _mem.DeviceArrayTypeError(
                    "copy_to_host: this array of Python objects is a view of one made by "
                    "to_device, whose objects only the whole array gives back")
            if ary is None:
                return objects.copy()
            ary[...] = objects
            return ary
        return super().copy_to_host(ary, self._default_stream(stream) or None)

    def __getitem__(self, index):
        """As numba_gpux's, except that one element of an array of records is a
        ``DeviceRecord`` over that element (numba.cuda's), not a host copy."""
        if self.dtype.names is not None:
            rec = _record_view(self, index)
            if rec is not None:
                return rec
        return super().__getitem__(index)

    def getitem(self, item, stream=0):
        """``self[item]``: a view, or an element copied to the host in order on
        *stream* (numba.cuda's), whose copy it waits for."""
        stream = self._default_stream(stream)
        if not stream or self.dtype.names is not None:
            return self[item]
        view = _mem._index_view(self, item)
        if view.ndim:
            return self[item]
        host = DeviceNDArrayBase.copy_to_host(view, None, stream)
        stream.synchronize()
        return host[()]

    def __setitem__(self, key, value) -> None:
        self._do_setitem(key, value)

    def setitem(self, key, value, stream=0) -> None:
        """``self[key] = value`` ordered on *stream*, which it does not wait for."""
        self._do_setitem(key, value, stream)

    def _do_setitem(self, key, value, stream=0) -> None:
        stream = self._default_stream(stream)
        target = _mem._index_view(self, key)  # (0-d for one element)
        rhs = value if isinstance(value, _mem.DeviceArray) else \
            np.asarray(value, dtype=self.dtype)
        if rhs.ndim > target.ndim:
            raise ValueError(f"Can't assign {rhs.ndim}-D array to {target.ndim}-D self")
        shape = (1,) * (target.ndim - rhs.ndim) + tuple(rhs.shape)
        for axis, (lhs_n, rhs_n) in enumerate(zip(target.shape, shape)):
            if rhs_n != 1 and lhs_n != rhs_n:
                raise ValueError(f"Can't copy sequence with size {rhs_n} to array axis "
                                 f"{axis} with dimension {lhs_n}")
        if isinstance(rhs, _mem.DeviceArray):
            rhs = rhs.copy_to_host()
        DeviceNDArrayBase.copy_to_device(target, rhs, stream or None)
        if not stream:
            _synchronize_default_stream(self.device)

    def transpose(self, axes=None):
        """For a 2-D array, a new C-contiguous array holding the transpose (numba.cuda's
        ``DeviceNDArray.transpose``); the identity permutation gives the array itself;
        other ranks are a NotImplementedError, as in numba.cuda (``numba_gpux``'s own
        ``DeviceArray.transpose`` gives a view of any rank)."""
        if axes is not None and tuple(axes) == tuple(range(self.ndim)):
            return self
        if self.ndim != 2:
            raise NotImplementedError("transposing a non-2D DeviceNDArray isn't supported")
        if axes is not None and sorted(int(a) % 2 for a in axes) != [0, 1]:
            raise ValueError(f"invalid axes list {tuple(axes)!r}")
        return transpose_2d(self)

    @property
    def gpu_data(self) -> "GpuData":
        """numba.cuda's memory pointer of the array's data (``device_pointer``)."""
        return GpuData(self)

    @property
    def device_ctypes_pointer(self) -> ctypes.c_void_p:
        """The data's integer device pointer as a ``ctypes.c_void_p``."""
        return GpuData(self).device_ctypes_pointer


class GpuData:
    """The data of a device array as numba.cuda's ``MemoryPointer`` shows it:
    ``device_pointer`` is an integer device pointer (see ``memory.device_pointer``)
    that kernels with ``CPointer`` parameters take, ``size`` the bytes it spans."""

    __slots__ = ("_array",)

    def __init__(self, array):
        self._array = array

    @property
    def device_pointer(self) -> int:
        a = self._array
        return _mem.device_pointer(a._alloc) + a.offset

    @property
    def device_ctypes_pointer(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.device_pointer)

    @property
    def size(self) -> int:
        return self._array.nbytes

    @property
    def owner(self):
        return self._array

    def _span(self):
        a = self._array
        return (id(a._alloc), a.offset, a.nbytes)

    # the same memory is the same data: an array and its dtype views (``a.view(np.int64)``)
    # compare equal, as numba.cuda's views share their MemoryPointer
    def __eq__(self, other):
        if not isinstance(other, GpuData):
            return NotImplemented
        return self._span() == other._span()

    def __hash__(self):
        return hash(self._span())


def _new_allocation(dev, nbytes):
    """(allocation, byte offset) of *nbytes* of new memory on *dev* for a facade array:
    numba_gpux's (``_emm``, which sits above this module, puts its function here when
    it loads: the memory of an External Memory Management plug-in where one is used)."""
    return _mem.Allocation(dev, nbytes), 0


def _record_view(array, index):
    """A ``DeviceRecord`` over ``array[index]`` when that is one element, else None
    (``_records``, which sits above this module, puts its function here when it loads:
    the facade's package imports it)."""
    return None


def _synchronize_default_stream(device) -> None:
    """Wait for *device*'s default stream (the facade's ``api`` puts its stream's
    ``synchronize`` here when it loads: it sits above this module)."""
    device.runtime.synchronize()


def _device_of(gpu_data):
    """The device of *gpu_data* (a memory pointer with a ``context``), else the current
    device."""
    ctx = getattr(gpu_data, "context", None)
    if ctx is not None and hasattr(ctx, "device"):
        return ctx.device.gpux_device
    from ..devices import default_device

    return default_device()


def _memory_at(gpu_data, dev, span):
    """(allocation, byte offset) of the memory pointer *gpu_data* on *dev*: the
    allocation of numba_gpux's it points into, or, for memory another library owns
    (an address the runtime can use), a borrowed one that keeps *gpu_data* alive."""
    ptr = int(gpu_data.device_pointer)
    alloc, offset = _mem.allocation_at(ptr, dev)
    if alloc is not None:
        return alloc, offset
    handle, offset = _mem.resolve_pointer(ptr, dev)  # a LaunchError where unusable
    return _mem.Allocation.borrowed(dev, handle, offset + span, gpu_data), offset


def as_facade(arr):
    """*arr* (a numba_gpux device array made for the facade) as a ``DeviceNDArray``."""
    if type(arr) is DeviceNDArrayBase:
        arr.__class__ = DeviceNDArray
    return arr


_kernel = None


def _transpose_kernel():
    global _kernel
    if _kernel is None:
        from ..dispatcher import jit
        from ..language import grid

        @jit
        def transpose_kernel(src, dst):
            i, j = grid(2)
            if i < dst.shape[0] and j < dst.shape[1]:
                dst[i, j] = src[j, i]

        _kernel = transpose_kernel
    return _kernel


def transpose_2d(a, b=None):
    """Write the transpose of the 2-D device array *a* into *b* (by default a new
    C-contiguous ``DeviceNDArray`` on *a*'s device) with a kernel, and return *b*."""
    from ..errors import GpuxUserError

    if a.ndim != 2:
        raise GpuxUserError(f"transpose needs a 2-D array, got {a.ndim}-D")
    shape = (a.shape[1], a.shape[0])
    if b is None:
        b = as_facade(_mem.device_array(shape, a.dtype, device=a.device))
    if b.shape != shape or b.dtype != a.dtype:
        raise GpuxUserError(f"transpose: output must be {a.dtype} of shape {shape}, "
                            f"got {b.dtype} {b.shape}")
    if b.size:
        tile = 16
        blocks = ((shape[0] + tile - 1) // tile, (shape[1] + tile - 1) // tile)
        _transpose_kernel()[blocks, (tile, tile), a.device](a, b)
    return b
