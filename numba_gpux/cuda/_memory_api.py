"""Device arrays and host memory of the numba.cuda facade: ``to_device``,
``device_array``, pinned, mapped and managed arrays, ``pinned``/``mapped`` blocks,
and arrays of other libraries (``as_cuda_array``).

numba.cuda's semantics over ``numba_gpux.memory`` (arrays made here are
``DeviceNDArray``); the streams, devices and contexts are ``api``'s.
"""

from __future__ import annotations

import contextlib

import numpy as np

from .. import memory as _mem
from ..errors import UnsupportedError
from . import _arrays
from . import _context_memory as _cm
from ._arrays import DeviceNDArray, as_facade
from .api import (_current, _stream_device, context_of_gpux_device, current_context,
                  external_stream)

__all__ = ["MappedNDArray", "ManagedNDArray", "to_device", "device_array", "device_array_like", "pinned_array", "pinned_array_like",
           "mapped_array", "mapped_array_like", "managed_array", "pinned", "mapped",
           "is_cuda_array", "as_cuda_array", "from_cuda_array_interface"]


def _on_stream(arr, stream):
    """*arr* as a facade array whose copies default to *stream* (numba.cuda's
    ``stream`` of an array made with one)."""
    arr = as_facade(arr)
    if stream:
        arr.stream = stream
    return arr


def _plugin_array(dev, shape, dtype, order="C", stream=0):
    """An uninitialized array of memory from the EMM plug-in of *dev*'s context, or None
    where none is used (``_emm``)."""
    if not _cm.plugins_in_use or context_of_gpux_device(dev).plugin is None:
        return None
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    dtype = np.dtype(dtype)
    strides = _mem._c_strides(shape, dtype.itemsize) if order != "F" else \
        tuple(reversed(_mem._c_strides(tuple(reversed(shape)), dtype.itemsize)))
    alloc, offset = _arrays._new_allocation(dev, _nbytes_for(shape, strides, dtype.itemsize))
    return _on_stream(DeviceNDArray(shape, strides, dtype, alloc, offset), stream)


def to_device(obj, stream=0, copy: bool = True, to=None):
    """Copy a host array to the device of *stream* (default: the current device).  As in
    numba.cuda, a broadcast array (strides 0) keeps its strides on the device: only
    the data it repeats is copied."""
    dev = _stream_device(stream)
    if to is not None:
        if copy:
            to.copy_to_device(obj, stream=stream)
        return to
    if isinstance(obj, _mem.DeviceArray):
        return obj
    if isinstance(obj, np.void) and obj.dtype.names is not None:
        # one record (a record array's element): a DeviceRecord, as numba.cuda's, which
        # a kernel takes as a Record argument (np.asarray would make it a 0-d array)
        from ._records import from_record_like

        rec = from_record_like(obj, stream=stream)
        if copy:
            rec.copy_to_device(obj, stream=stream)
        return rec
    host = np.asarray(obj)
    if host.dtype == object:
        return _on_stream(_object_array(dev, host), stream)
    if host.size and 0 not in host.strides and (arr := _plugin_array(
            dev, host.shape, host.dtype, _order_of(host), stream)) is not None:
        if copy:
            arr.copy_to_device(host, stream=stream)
        return arr
    if not copy:
        return _on_stream(_mem.device_array_like(host, device=dev), stream)
    if host.size == 0:  # nothing to copy: the host's shape and strides, as numba.cuda
        empty = DeviceNDArray(host.shape, host.strides, host.dtype, _mem.Allocation(dev, 0))
        return _on_stream(empty, stream)
    if 0 in host.strides:
        from ._arrays import _core

        core = _on_stream(_mem.to_device(np.ascontiguousarray(_core(host)), device=dev,
                                         stream=stream or None), stream)
        inner = iter(core.strides)
        strides = tuple(0 if s == 0 else next(inner) for s in host.strides)
        return core.view_as(host.shape, strides, core.offset)
    return _on_stream(_mem.to_device(obj, device=dev, stream=stream or None), stream)


def _object_array(dev, host: np.ndarray) -> DeviceNDArray:
    """An array of Python objects (``to_device(None)``, an unused optional argument, as
    numba.cuda makes one): device memory of its shape (a pointer's size per element,
    nothing written: the device holds no Python objects), which no kernel takes, and
    whose ``copy_to_host`` gives the objects back, as numba.cuda's does."""
    host = np.array(host, dtype=object, order="C")   # (a shallow copy: the same objects)
    arr = DeviceNDArray(host.shape, host.strides, host.dtype)
    arr._host_objects = host
    return arr


def _nbytes_for(shape, strides, itemsize):
    if not shape:
        return itemsize
    if any(n == 0 for n in shape):
        return 0
    return sum((n - 1) * abs(s) for n, s in zip(shape, strides)) + itemsize


def device_array(shape, dtype=np.float64, strides=None, order="C", stream=0):
    """An uninitialized device array."""
    dev = _stream_device(stream)
    if strides is None:
        if (arr := _plugin_array(dev, shape, dtype, order, stream)) is not None:
            return arr
        return _on_stream(_mem.device_array(shape, dtype, order=order, device=dev), stream)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    dtype = np.dtype(dtype)
    strides = tuple(int(s) for s in strides)
    alloc, offset = _arrays._new_allocation(dev, _nbytes_for(shape, strides, dtype.itemsize))
    return _on_stream(DeviceNDArray(shape, strides, dtype, alloc, offset), stream)


def _order_of(ary) -> str:
    flags = getattr(ary, "flags", None)
    return "F" if flags is not None and flags["F_CONTIGUOUS"] and not flags["C_CONTIGUOUS"] \
        else "C"


def device_array_like(ary, stream=0):
    """An uninitialized device array shaped (and ordered) like *ary*."""
    dev = _stream_device(stream)
    if (arr := _plugin_array(dev, ary.shape, ary.dtype, _order_of(ary), stream)) is not None:
        return arr
    return _on_stream(_mem.device_array_like(ary, device=_stream_device(stream)), stream)


def _host_array(shape, dtype, strides, order):
    dtype = np.dtype(dtype)
    if strides is None:
        return np.empty(shape, dtype, order=order)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    buf = np.empty(_nbytes_for(shape, strides, dtype.itemsize), np.uint8)
    return np.ndarray(shape, dtype, buffer=buf, strides=strides)


def _nbytes_of(shape, dtype, strides):
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if strides is None:
        return shape, int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return shape, _nbytes_for(shape, tuple(strides), dtype.itemsize)


def _array_over(mem, shape, dtype, strides, order):
    if strides is None:
        return np.ndarray(shape, dtype, buffer=mem, order=order)
    return np.ndarray(shape, dtype, buffer=mem, strides=strides)


class MappedNDArray(np.ndarray):
    """A host array over mapped or managed memory (``mapped_array``, ``managed_array``):
    an ordinary NumPy array on the host; passed to a kernel, the kernel uses the same
    memory (no copy in or back: synchronize before reading the results, as with
    numba.cuda); on a device with an array interface (CUDA) also
    ``__cuda_array_interface__`` of that memory, with the array's ``stream``."""

    def __array_finalize__(self, obj):
        self.stream = getattr(obj, "stream", 0)

    def device_view(self) -> DeviceNDArray:
        """A device array of this array's memory (no copy); a TypeError for a result
        of arithmetic on it, which is ordinary host memory."""
        from ._memory_pointers import _memory_of_host_array

        mem = _memory_of_host_array(self)
        if mem is None:
            raise TypeError("this array is not in mapped or managed memory")
        gdev = mem.context.device.gpux_device
        first = self.__array_interface__["data"][0] - mem.host_pointer
        alloc, offset = _mem.allocation_at(mem.device_pointer + first, gdev)
        view = DeviceNDArray(self.shape, self.strides, self.dtype, alloc, offset)
        view.stream = self.stream
        return view

    def _gpux_device_view_(self, device):
        """What a launch on *device* passes for this array: its device view, when the
        memory is that device's (else None: it is copied as any host array)."""
        try:
            view = self.device_view()
        except TypeError:
            return None
        return view if view.device is device else None

    @property
    def __cuda_array_interface__(self) -> dict:
        try:
            view = self.device_view()
        except TypeError:
            raise AttributeError("__cuda_array_interface__") from None
        return view.__cuda_array_interface__


class ManagedNDArray(MappedNDArray):
    """A host array over managed memory (``managed_array``)."""


def _mapped(arr, stream, cls=MappedNDArray):
    out = arr.view(cls)
    out.stream = stream
    return out


def pinned_array(shape, dtype=np.float64, strides=None, order="C"):
    """A host array in page-locked memory (``context.memhostalloc``; OpenCL has no
    page-locking: there it is page-aligned host memory)."""
    shape, nbytes = _nbytes_of(shape, dtype, strides)
    mem = current_context().memhostalloc(nbytes)
    return _array_over(mem, shape, dtype, strides, order)


def _host_like(ary):
    """An empty host array shaped like *ary*, host or device, its axes in *ary*'s stride
    order (NumPy's empty_like); a device array's data is not copied to find out."""
    if isinstance(ary, np.ndarray):
        return np.empty_like(ary)
    dtype = np.dtype(ary.dtype)
    # a view of one element with *ary*'s strides: empty_like reads only its layout
    layout = np.lib.stride_tricks.as_strided(np.empty(1, dtype), shape=ary.shape,
                                             strides=ary.strides, writeable=False)
    return np.empty_like(layout)


def _like(make, ary, **kw):
    """*make* (pinned, mapped or managed) of *ary*'s shape and dtype, its axes in
    *ary*'s stride order."""
    layout = _host_like(ary)
    return make(layout.shape, layout.dtype, strides=layout.strides, **kw)


def pinned_array_like(ary):
    return _like(pinned_array, ary)


def mapped_array(shape, dtype=np.float64, strides=None, order="C", stream=0,
                 portable=False, wc=False):
    """A host array in memory kernels also address (``context.memhostalloc(mapped=True)``):
    ``driver.device_memset`` and the copies of ``cudadrv.driver`` reach it as device
    memory.  Passed to a kernel it is copied in and back as any host array.  Where the
    device cannot address host memory (an OpenCL device that does not share the
    host's memory), an ordinary host array."""
    shape, nbytes = _nbytes_of(shape, dtype, strides)
    try:
        mem = current_context().memhostalloc(nbytes, mapped=True, portable=portable, wc=wc)
    except NotImplementedError:
        return _host_array(shape, dtype, strides, order)
    return _mapped(_array_over(mem, shape, dtype, strides, order), stream)


def mapped_array_like(ary, stream=0, portable=False, wc=False):
    return _like(mapped_array, ary, stream=stream, portable=portable, wc=wc)


def managed_array(shape, dtype=np.float64, strides=None, order="C", stream=0,
                  attach_global=True):
    """A host array in memory the host and kernels both address
    (``context.memallocmanaged``), or, where the device has none, an ordinary host
    array; passed to a kernel it is copied in and back as any host array."""
    shape, nbytes = _nbytes_of(shape, dtype, strides)
    try:
        mem = current_context().memallocmanaged(nbytes, attach_global=attach_global)
    except NotImplementedError:
        return _host_array(shape, dtype, strides, order)
    return _mapped(_array_over(mem, shape, dtype, strides, order), stream, ManagedNDArray)


@contextlib.contextmanager
def pinned(*arylist):
    """Page-lock the host arrays' memory for the block (``context.mempin``)."""
    from ._memory_pointers import host_memory_extents

    ctx = current_context()
    held = []
    for a in arylist:
        lo, hi = host_memory_extents(a)
        held.append(ctx.mempin(a, lo, max(hi - lo, 1)))
    try:
        yield
    finally:
        for mem in held:
            mem.free()


@contextlib.contextmanager
def mapped(*arylist, **kws):
    """Device arrays over the host arrays' own memory for the block (``context.mempin``
    with *mapped*), or, where the device cannot address host memory, device copies
    that are copied back at the end."""
    from ._memory_pointers import host_memory_extents

    ctx = current_context()
    gdev = ctx.device.gpux_device
    devs, copies, held = [], [], []
    try:
        for a in arylist:
            lo, hi = host_memory_extents(a)
            try:
                mem = ctx.mempin(a, lo, max(hi - lo, 1), mapped=True)
            except NotImplementedError:
                devs.append(to_device(a, stream=kws.get("stream", 0)))
                copies.append((a, devs[-1]))
                continue
            held.append(mem)
            handle, offset = _mem.resolve_pointer(mem.device_pointer, gdev)
            alloc = _mem.Allocation.borrowed(gdev, handle, max(hi - lo, 1), mem)
            start = a.__array_interface__["data"][0] - lo
            devs.append(DeviceNDArray(a.shape, a.strides, a.dtype, alloc, offset + start))
        yield devs[0] if len(devs) == 1 else devs
    finally:
        for h, d in copies:
            d.copy_to_host(h)
        if held:  # work queued on the arrays ends before they are unmapped
            gdev.runtime.synchronize()
        for mem in held:  # unmapped now, so that the memory can be mapped again
            mem.free()


def is_cuda_array(obj) -> bool:
    """True for numba_gpux device arrays and objects with ``__cuda_array_interface__``."""
    return isinstance(obj, _mem.DeviceArray) or hasattr(obj, "__cuda_array_interface__")


def _interface_stream(desc, sync: bool):
    """The stream of a ``__cuda_array_interface__`` (None: none), waited for when
    *sync* and ``config.CUDA_ARRAY_INTERFACE_SYNC`` (the CAI v3 consumer's duty)."""
    from . import config as _config

    if desc.get("mask") is not None:
        raise NotImplementedError("Masked arrays are not supported")
    ptr = desc.get("stream")
    if ptr is None:
        return None
    if isinstance(ptr, bool) or not isinstance(ptr, int) or ptr == 0:
        raise ValueError(f"invalid stream {ptr!r} in __cuda_array_interface__ "
                         f"(an integer handle other than 0, or None)")
    stream_ = external_stream(ptr)
    if sync and _config.CUDA_ARRAY_INTERFACE_SYNC:
        stream_.synchronize()
    return stream_


def as_cuda_array(obj, sync: bool = True):
    """A device array from *obj*: a numba_gpux device array itself, or a view of
    another library's GPU array (``__cuda_array_interface__``) where the current
    device's target can use its memory.  The view's stream is the producer's, waited
    for first when *sync* (and ``config.CUDA_ARRAY_INTERFACE_SYNC``); masked arrays are
    a NotImplementedError, as in numba.cuda."""
    if isinstance(obj, _mem.DeviceArray):
        return obj
    desc = getattr(obj, "__cuda_array_interface__", None)
    if desc is None:
        raise TypeError(f"{type(obj).__name__} is not a device array and has no "
                        f"__cuda_array_interface__")
    stream_ = _interface_stream(desc, sync)
    wrapped = _mem.from_foreign(obj)
    if wrapped is None:
        raise UnsupportedError(f"cannot use a {type(obj).__name__} as a device array on "
                               f"{_current().spec}")
    return _on_stream(wrapped, stream_)


def from_cuda_array_interface(desc, owner=None, sync: bool = True):
    """A device array viewing the memory *desc* (a ``__cuda_array_interface__``
    dictionary) describes; *owner* is kept alive with it."""

    class _Holder:
        __cuda_array_interface__ = desc

        def __init__(self, keep):
            self.keep = keep

    return as_cuda_array(_Holder(owner), sync)
