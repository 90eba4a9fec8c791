"""Device arrays, transfers and array interop.

A :class:`DeviceArray` is a view (shape, strides in bytes, byte offset) on
an allocation made by a device's runtime.  Slicing gives a strided view
without copying.
"""

from __future__ import annotations

import bisect
import functools
import math
import operator
import threading
import weakref
from typing import Any

import numpy as np
from numba.core import types
from numba.np.numpy_support import from_dtype
from numba.core.typing.typeof import typeof_impl

from .allocation import (  # noqa: F401 - memory's names for them, as before
    ALLOC_GRANULE, Allocation, PendingFrees, allocated_bytes, defer_frees, padded_size,
    pending_frees,
)
from .devices import Device, _match, default_device
from .errors import GpuxUserError, LaunchError

__all__ = ["DeviceArrayError", "DeviceArrayTypeError", "allocation_at", "PendingFrees",
           "defer_frees", "pending_frees", "DeviceArray", "to_device", "device_array", "device_array_like", "is_device_array",
           "HostArg", "In", "Out", "InOut", "from_foreign"]


class DeviceArrayError(GpuxUserError, ValueError):
    """A device-array operation the array's shape, strides or dtype do not allow (a
    ValueError, as NumPy's for the same operation)."""


class DeviceArrayTypeError(DeviceArrayError, TypeError):
    """A device-array operation the dtype of an operand does not allow: also a TypeError,
    as numba.cuda's for a copy between arrays of different dtypes."""


# -- integer device pointers ------------------------------------------------------
# numba.cuda code passes raw device pointers (``a.gpu_data.device_pointer``) to kernels
# with ``CPointer`` parameters.  A runtime whose buffers are device addresses
# (``buffers_are_addresses``) gives each allocation its address; on the others (OpenCL
# buffers have none) an allocation gets a range of made-up addresses.  Either way a
# pointer passed to a kernel is resolved into (buffer, offset) through the allocations
# that have given out pointers; their entries go when they are freed.
_VIRTUAL_BASE = 1 << 44
_VIRTUAL_GAP = 1 << 16
_ptr_bases: list = []           # sorted starts of the ranges given out
_ptr_allocs: dict = {}          # start -> weak reference to its Allocation
_ptr_of = weakref.WeakKeyDictionary()  # Allocation -> start
_ptr_next = [_VIRTUAL_BASE]
_ptr_lock = threading.Lock()


def device_pointer(alloc: "Allocation") -> int:
    """The integer device pointer of the start of *alloc*."""
    base = _ptr_of.get(alloc)
    if base is not None:
        return base
    with _ptr_lock:
        base = _ptr_of.get(alloc)
        if base is None:
            if alloc.device.runtime.buffers_are_addresses:
                base = int(alloc.handle)
            else:
                base = _ptr_next[0]
                span = padded_size(alloc.nbytes) + _VIRTUAL_GAP
                _ptr_next[0] += -(-span // _VIRTUAL_GAP) * _VIRTUAL_GAP
            if base not in _ptr_allocs:  # (else an address of a freed allocation, reused)
                bisect.insort(_ptr_bases, base)
            _ptr_allocs[base] = weakref.ref(alloc, functools.partial(_forget_pointer, base))
            _ptr_of[alloc] = base
    return base


def _forget_pointer(base: int, ref) -> None:
    with _ptr_lock:
        if _ptr_allocs.get(base) is ref:
            del _ptr_allocs[base]
            i = bisect.bisect_left(_ptr_bases, base)
            if i < len(_ptr_bases) and _ptr_bases[i] == base:
                del _ptr_bases[i]


def allocation_at(value, device) -> tuple:
    """(allocation, byte offset) of the integer device pointer *value*: the live
    allocation of numba_gpux's it points into, or (None, 0).  A LaunchError when it is
    not an integer, or points into memory of another device than *device* (if given)."""
    try:
        v = int(value)
    except (TypeError, ValueError):
        raise LaunchError(f"a pointer argument must be an integer device pointer "
                          f"(array.gpu_data.device_pointer), not {type(value).__name__}") from None
    with _ptr_lock:
        i = bisect.bisect_right(_ptr_bases, v) - 1
        ref = _ptr_allocs.get(_ptr_bases[i]) if i >= 0 else None
        alloc = ref() if ref is not None else None
        base = _ptr_bases[i] if alloc is not None else 0
    if alloc is not None and v - base <= padded_size(alloc.nbytes):
        if device is not None and alloc.device is not device:
            raise LaunchError(f"the pointer 0x{v:x} points into memory of {alloc.device.spec}, "
                              f"but the kernel launches on {device.spec}")
        return alloc, v - base
    return None, 0


def resolve_pointer(value, device) -> tuple:
    """(buffer handle, byte offset) of the integer device pointer *value* on *device*;
    a LaunchError when it points into no live allocation of *device*."""
    alloc, offset = allocation_at(value, device)
    if alloc is not None:
        return alloc.handle, offset
    v = int(value)
    if (device is not None and device.runtime.buffers_are_addresses
            and device.runtime.is_device_address(v) is not False):
        return v, 0  # another library's memory: the address is what the kernel gets
    raise LaunchError(f"the pointer 0x{v:x} does not point into a live numba_gpux device "
                      f"allocation{'' if device is None else ' on ' + device.spec}")


#: (id of a Numba array type, id of a device) -> (small int, the type, the device);
#: the int is the arrays' launch key, the objects kept alive so that no id is reused
_launch_keys: dict = {}


def _launch_key(numba_type, device, stride: int = 0) -> int:
    k = (id(numba_type), id(device), stride)
    got = _launch_keys.get(k)
    if got is None:
        got = _launch_keys.setdefault(k, (len(_launch_keys), numba_type, device))
    return got[0]


def _stride_fact(a: "DeviceArray") -> int:
    """The innermost stride in bytes of the layout-"A" array *a* when its launch compiles
    code for it (``Target.array_stride_facts``, in elements), else 0."""
    if a.shape[-1] < 2:
        return 0
    try:
        facts = a._alloc.device.target.array_stride_facts
    except Exception:  # noqa: BLE001 - no target for the device: a launch will say why
        return 0
    step, rest = divmod(a.strides[-1], a.dtype.itemsize)
    return a.strides[-1] if facts and not rest and step in facts else 0


#: (dtype, ndim, layout) -> Numba's array type, for dtypes without fields (a record
#: type's alignment is not part of NumPy's dtype equality): made once, as arrays are
#: made at every launch of many programs
_array_types: dict = {}


def _array_type(dtype, ndim: int, layout: str):
    k = (dtype, ndim, layout)
    t = _array_types.get(k)
    if t is None:
        t = types.Array(from_dtype(dtype), ndim, layout)
        if dtype.fields is None:
            _array_types[k] = t
    return t


def _layout(shape, strides, itemsize) -> str:
    c = f = True
    expect = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n > 1 and s != expect:
            c = False
        expect *= n
    expect = itemsize
    for n, s in zip(shape, strides):
        if n > 1 and s != expect:
            f = False
        expect *= n
    if c:
        return "C"
    if f:
        return "F"
    return "A"


@functools.lru_cache(maxsize=256)
def _flags(shape, strides, dtype) -> np.flagsobj:
    """NumPy's flags of a read-only array of *shape*, *strides* and *dtype* (a copy's
    checks ask them twice each: made once per layout)."""
    dummy = np.lib.stride_tricks.as_strided(np.empty(1, dtype), shape, strides,
                                            writeable=False)
    return dummy.flags


def _c_strides(shape, itemsize):
    strides = []
    acc = itemsize
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


class DeviceArray:
    """An array in device memory."""

    __array_priority__ = 1000
    #: a kernel that reads one from a global or closure variable gets it as a hidden
    #: argument (language/checks.py's CaptureDeviceArrays), never as a constant
    _gpux_device_memory_ = True

    def __init__(self, shape, strides, dtype, alloc: Allocation, offset: int = 0) -> None:
        self.shape = tuple(map(int, shape))
        self.dtype = np.dtype(dtype)
        self.strides = tuple(map(int, strides))
        self._alloc = alloc
        self.offset = int(offset)
        self.ndim = len(self.shape)
        size = 1
        for n in self.shape:
            size *= n
        self.size = size
        self.layout = _layout(self.shape, self.strides, self.dtype.itemsize)
        if self.ndim == 0 or self.size == 0:
            self.layout = "C"
        self._numba_type_ = _array_type(self.dtype, self.ndim, self.layout)
        #: the innermost stride a launch's code may take as a constant (bytes), else 0
        self._stride_fact_ = _stride_fact(self) if self.layout == "A" else 0
        # launch.py's key for this argument: hashed in C, and fixed by the Numba
        # type, the device (so that an array of another device misses the
        # launch's shims and gets its error) and the stride fact.  Set with _numba_type_.
        self._launch_key_ = _launch_key(self._numba_type_, alloc.device, self._stride_fact_)

    def __getattr__(self, name: str) -> Any:
        # array protocols a runtime provides (e.g. a driver's array-interface
        # dunders): ``runtime.array_attribute(array, name)`` or AttributeError
        alloc = self.__dict__.get("_alloc")
        if alloc is None or not name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return alloc.device.runtime.array_attribute(self, name)

    # -- properties -----------------------------------------------------------
    @property
    def device(self) -> Device:
        return self._alloc.device

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    def __sizeof__(self) -> int:
        # the device memory it holds, as a NumPy array's counts its data: what
        # sys.getsizeof and so Dask's memory accounting (dask.sizeof, whose hook for
        # numba.cuda's arrays keys on the module name "numba") see
        return object.__sizeof__(self) + self.nbytes

    def is_c_contiguous(self) -> bool:
        return self.layout == "C"

    def is_f_contiguous(self) -> bool:
        return self.layout == "F" or (self.ndim <= 1 and self.layout == "C")

    @property
    def flags(self) -> np.flagsobj:
        """NumPy's flags for this shape and strides (``flags.c_contiguous``,
        ``flags['C_CONTIGUOUS']``), from a never-read strided dummy."""
        return _flags(self.shape, self.strides, self.dtype)

    @property
    def handle(self) -> Any:
        return self._alloc.handle

    def __len__(self) -> int:
        if self.ndim == 0:
            raise TypeError("len() of a 0-d device array")
        return self.shape[0]

    def __repr__(self) -> str:
        return (f"<DeviceArray shape={self.shape} dtype={self.dtype} layout={self.layout} "
                f"on {self.device.spec}>")

    # -- extent ---------------------------------------------------------------
    def _extent(self) -> tuple[int, int]:
        """[lo, hi) byte range (relative to the allocation) that this view touches."""
        if self.size == 0:
            return self.offset, self.offset
        lo = hi = self.offset
        for n, s in zip(self.shape, self.strides):
            if s >= 0:
                hi += (n - 1) * s
            else:
                lo += (n - 1) * s
        return lo, hi + self.dtype.itemsize

    def _contiguous_order(self):
        if self.layout == "C":
            return "C"
        if self.layout == "F":
            return "F"
        return None

    # -- transfers ----------------------------------------------------------
    def copy_to_host(self, ary: np.ndarray | None = None, stream=None) -> np.ndarray:
        """Copy to a new (or the given) host array and return it."""
        rt = self.device.runtime
        if ary is not None:
            # as numba.cuda: the dtypes equal (a TypeError), the shapes equal but for
            # axes of length 1 (a (1, 8) array takes an (8,) one)
            if ary.dtype != self.dtype:
                raise DeviceArrayTypeError(f"copy_to_host: incompatible dtype: host array is "
                                           f"{ary.dtype}, device array is {self.dtype}")
            if ary.shape != self.shape:
                if [n for n in ary.shape if n != 1] != [n for n in self.shape if n != 1]:
                    raise DeviceArrayError(f"copy_to_host: incompatible shape: host array is "
                                           f"{ary.shape}, device array is {self.shape}")
                out = self.copy_to_host(stream=stream)
                ary[...] = out.reshape(ary.shape)
                return ary
        if self.size == 0:
            return ary if ary is not None else np.empty(self.shape, self.dtype)
        order = self._contiguous_order()
        if order == "C" and ary is not None and ary.flags.c_contiguous and \
                ary.flags.writeable:
            rt.read(ary, self.handle, self.offset, stream)  # straight into it: one copy
            return ary
        if order is not None:
            out = np.empty(self.shape, self.dtype, order=order)
            rt.read(out, self.handle, self.offset, stream)
        else:
            lo, hi = self._extent()
            raw = np.empty(hi - lo, np.uint8)
            rt.read(raw, self.handle, lo, stream)
            view = np.lib.stride_tricks.as_strided(
                raw[self.offset - lo:].view(self.dtype) if (self.offset - lo) % self.itemsize == 0
                else np.frombuffer(raw.tobytes()[self.offset - lo:], self.dtype),
                shape=self.shape, strides=self.strides)
            out = np.array(view)
        if ary is not None:
            ary[...] = out
            return ary
        return out

    def copy_to_device(self, ary, stream=None) -> None:
        """Copy a host array (or another device array) of the same shape into this one."""
        if isinstance(ary, DeviceArray):
            ary = ary.copy_to_host()
        ary = np.asarray(ary)
        if ary.shape != self.shape:
            try:
                ary = np.broadcast_to(ary, self.shape)
            except ValueError:
                raise DeviceArrayError(f"copy_to_device: cannot copy shape {ary.shape} into "
                                       f"{self.shape}") from None
        ary = ary.astype(self.dtype, copy=False)
        if self.size == 0:
            return
        rt = self.device.runtime
        order = self._contiguous_order()
        if order is not None:
            src = np.require(ary, requirements=[order])
            rt.write(self.handle, self.offset, src, stream)
            return
        # strided destination: read the covered range, patch it, write it back
        lo, hi = self._extent()
        raw = np.empty(hi - lo, np.uint8)
        rt.read(raw, self.handle, lo, stream)
        view = np.lib.stride_tricks.as_strided(
            raw[self.offset - lo:].view(self.dtype), shape=self.shape, strides=self.strides)
        view[...] = ary
        rt.write(self.handle, lo, raw, stream)

    # -- views ----------------------------------------------------------------
    def __getitem__(self, index) -> Any:
        view = _index_view(self, index)
        if view.ndim == 0:
            return view.copy_to_host()[()]
        return view

    def __setitem__(self, index, value) -> None:
        view = _index_view(self, index)
        view.copy_to_device(np.asarray(value, dtype=self.dtype))

    def view_as(self, shape, strides, offset) -> "DeviceArray":
        """A view on the same memory, of this array's class."""
        return type(self)(shape, strides, self.dtype, self._alloc, offset)

    def reshape(self, *newshape, order: str = "C") -> "DeviceArray":
        if len(newshape) == 1 and isinstance(newshape[0], (tuple, list)):
            newshape = tuple(newshape[0])
        # integers only, as NumPy's; multiplied with math.prod (np.prod of a short list
        # costs microseconds, and an axis reduce makes several reshapes)
        newshape = list(map(operator.index, newshape))
        if newshape.count(-1) > 1:
            raise DeviceArrayError("reshape: only one dimension can be -1")
        if -1 in newshape:
            known = math.prod(n for n in newshape if n != -1)
            newshape[newshape.index(-1)] = self.size // known if known else 0
        if math.prod(newshape) != self.size:
            raise DeviceArrayError(f"cannot reshape array of size {self.size} into "
                                   f"{tuple(newshape)}")
        if order not in ("C", "F"):
            raise DeviceArrayError("reshape: order must be 'C' or 'F'")
        mine = self._contiguous_order()
        if mine is None or (mine != order and self.ndim > 1 and self.size > 1):
            raise NotImplementedError("reshape needs a contiguous array in the same order")
        s = _c_strides(newshape, self.itemsize)
        if order == "F":
            s = tuple(reversed(_c_strides(list(reversed(newshape)), self.itemsize)))
        return self.view_as(newshape, s, self.offset)

    def ravel(self, order: str = "C", stream=None) -> "DeviceArray":
        """A 1-D view of a contiguous array, its elements in *order* ('C', 'F'; 'A' and
        'K': the array's own order, as NumPy's); NotImplementedError for an array not
        contiguous in that order (NumPy would copy)."""
        if order not in ("C", "F", "A", "K"):
            raise DeviceArrayError(f"ravel: order must be one of 'C', 'F', 'A' or 'K', "
                                   f"not {order!r}")
        if order in ("A", "K"):
            order = "F" if self.layout == "F" else "C"
        return self.reshape(self.size, order=order)

    def split(self, section: int, stream=None) -> list["DeviceArray"]:
        if self.ndim != 1:
            raise NotImplementedError("split works on 1-D arrays")
        return [self[i:i + section] for i in range(0, self.size, section)]

    @property
    def T(self) -> "DeviceArray":
        return self.transpose()

    def transpose(self, axes=None) -> "DeviceArray":
        """A view with the axes permuted (reversed by default), as NumPy's."""
        if axes is None:
            axes = tuple(reversed(range(self.ndim)))
        axes = tuple(operator.index(a) % self.ndim if self.ndim else a for a in axes)
        if sorted(axes) != list(range(self.ndim)):
            raise DeviceArrayError(f"transpose: axes {axes} are not a permutation of "
                                   f"{self.ndim} axes")
        return self.view_as(tuple(self.shape[a] for a in axes),
                            tuple(self.strides[a] for a in axes), self.offset)

    def view(self, dtype) -> "DeviceArray":
        """The same memory read as *dtype*; a different item size rescales the last
        dimension, which must then be contiguous (as NumPy's ``view``)."""
        dtype = np.dtype(dtype)
        shape, strides = list(self.shape), list(self.strides)
        if dtype.itemsize != self.itemsize:
            # NumPy's errors and messages for the same views
            if self.ndim == 0 or (strides[-1] != self.itemsize and shape[-1] != 1):
                raise DeviceArrayError("To change to a dtype of a different size, the last "
                                       "axis must be contiguous")
            last = shape[-1] * self.itemsize
            if last % dtype.itemsize:
                raise DeviceArrayError("When changing to a larger dtype, its size must be a "
                                       "divisor of the total size in bytes of the last axis "
                                       "of the array.")
            shape[-1] = last // dtype.itemsize
            strides[-1] = dtype.itemsize
        return type(self)(shape, strides, dtype, self._alloc, self.offset)

    def _same_class(self, other: "DeviceArray") -> "DeviceArray":
        if type(other) is not type(self):
            other.__class__ = type(self)
        return other

    def flatten(self, order: str = "C") -> "DeviceArray":
        """A 1-D contiguous copy on the same device."""
        return self._same_class(to_device(self.copy_to_host().flatten(order=order),
                                          device=self.device))

    def copy(self) -> "DeviceArray":
        return self._same_class(to_device(self.copy_to_host(), device=self.device))

    def __reduce__(self):
        # pickled as its host data (docs/scaling.md): the unpickling process copies it
        # to its own current device; views come back as contiguous arrays
        if type(self) is DeviceArray:
            return _rebuild_device_array, (self.copy_to_host(),)
        return _rebuild_device_array, (self.copy_to_host(), type(self))  # a subclass stays one

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        if copy is False:
            raise ValueError("`copy=False` is not supported: a device array's data reaches "
                             "the host only as a copy")
        out = self.copy_to_host()
        return out if dtype is None else out.astype(dtype)


def _rebuild_device_array(host, cls=None):
    out = to_device(host)
    if cls is not None and cls is not DeviceArray and issubclass(cls, DeviceArray):
        out.__class__ = cls
    return out


def _index_view(a: DeviceArray, index) -> DeviceArray:
    if not isinstance(index, tuple):
        index = (index,)
    if any(i is Ellipsis for i in index):
        k = index.index(Ellipsis)
        fill = a.ndim - (len(index) - 1 - sum(i is None for i in index))
        index = index[:k] + (slice(None),) * fill + index[k + 1:]
    shape, strides = [], []
    offset = a.offset
    dim = 0
    for i in index:
        if i is None:
            shape.append(1)
            strides.append(0)
            continue
        if dim >= a.ndim:
            raise IndexError(f"too many indices for a {a.ndim}-d device array")
        n, s = a.shape[dim], a.strides[dim]
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            count = len(range(start, stop, step))
            offset += start * s
            shape.append(count)
            strides.append(s * step)
        else:
            try:
                k = operator.index(i)
            except TypeError:
                raise IndexError(f"device arrays take ints, slices, None and ..., not {i!r}") from None
            if k < 0:
                k += n
            if not 0 <= k < n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            offset += k * s
        dim += 1
    shape.extend(a.shape[dim:])
    strides.extend(a.strides[dim:])
    return a.view_as(shape, strides, offset)


class HostArg:
    """A host array passed to a kernel with an explicit direction of copy
    (numba.cuda's ``In``/``Out``/``InOut``); the launch copies it to the
    device before and/or back after the kernel."""

    __slots__ = ("ary",)
    copy_in = True
    copy_out = True

    def __init__(self, ary):
        self.ary = ary


class In(HostArg):
    """Copied to the device before the launch, not back."""

    copy_out = False


class Out(HostArg):
    """Copied back to the host after the launch, not to the device before it."""

    copy_in = False


class InOut(HostArg):
    """Copied to the device before and back after the launch (as a bare host array is)."""


@typeof_impl.register(DeviceArray)
def _typeof_device_array(val, c):
    return val._numba_type_


def is_device_array(obj) -> bool:
    return isinstance(obj, DeviceArray)


def from_foreign(obj, device=None) -> DeviceArray | None:
    """A :class:`DeviceArray` view (no copy) on another library's device array, or None.

    The device's runtime recognizes the objects it can share memory with
    (``Runtime.foreign_array(obj)`` -> (handle, byte offset, shape, strides in
    bytes, dtype, owner) or None; by default a runtime shares nothing).
    """
    if isinstance(obj, DeviceArray):
        return obj
    dev = _device(device)
    got = dev.runtime.foreign_array(obj)
    if got is None:
        return _own_through_interface(obj, dev)
    handle, offset, shape, strides, dtype, owner = got
    dtype = np.dtype(dtype)
    nbytes = _end(offset, shape, strides, dtype.itemsize)
    return DeviceArray(shape, strides, dtype, Allocation.borrowed(dev, handle, nbytes, owner),
                       offset)


def _end(first: int, shape, strides, itemsize: int) -> int:
    """One past the last byte an array reaches whose first element is at byte *first*
    (negative strides reach below it, not past it)."""
    return first + itemsize + sum((n - 1) * s for n, s in zip(shape, strides) if n > 0 and s > 0)


def _own_through_interface(obj, dev) -> DeviceArray | None:
    """A view of one of our allocations on *dev* that *obj*'s ``__cuda_array_interface__``
    points into by the integer pointer numba_gpux gave it (:func:`device_pointer`: the
    address of a device whose buffers have none); None for any other pointer.  An array
    reaching past its allocation is an error."""
    desc = getattr(obj, "__cuda_array_interface__", None)
    if desc is None or dev.runtime.buffers_are_addresses:
        return None
    from . import cai

    low, shape, strides, dtype = cai.read(desc)
    if any(n == 0 for n in shape):  # no memory is read (the pointer is 0)
        return DeviceArray(shape, strides, dtype, Allocation(dev, dtype.itemsize))
    try:
        alloc, offset = allocation_at(low, dev)
    except LaunchError:  # memory of another device
        return None
    if alloc is None:
        return None
    first = offset + int(desc["data"][0]) - low
    end = _end(first, shape, strides, dtype.itemsize)
    if end > alloc.nbytes:
        raise GpuxUserError(f"__cuda_array_interface__ of a {type(obj).__name__}: the array "
                            f"ends {end - alloc.nbytes} bytes past its allocation")
    return DeviceArray(shape, strides, dtype, alloc, first)


def _device(device):
    if device is None:
        return default_device()
    if isinstance(device, Device):
        return device
    return _match(str(device))


def device_array(shape, dtype=np.float64, order: str = "C", device=None, stream=None) -> DeviceArray:
    """An uninitialized device array."""
    try:
        if isinstance(shape, (int, np.integer)):
            shape = (operator.index(shape),)
        else:
            shape = tuple(map(operator.index, shape))
    except TypeError:
        raise TypeError(f"device array dimensions must be integers, not {shape}") from None
    count = 1
    for s in shape:
        if s < 0:
            raise DeviceArrayError(f"negative dimensions are not allowed: {shape}")
        count *= s
    dtype = np.dtype(dtype)
    dev = _device(device)
    nbytes = count * dtype.itemsize if shape else dtype.itemsize
    if order not in ("C", "F") and shape:  # (numba.cuda's error, and its message)
        raise DeviceArrayError(f"must be either C/F order (order={order!r})")
    strides = _c_strides(shape, dtype.itemsize)
    if order == "F":
        strides = tuple(reversed(_c_strides(tuple(reversed(shape)), dtype.itemsize)))
    return DeviceArray(shape, strides, dtype, Allocation(dev, nbytes), 0)


def device_array_like(ary, device=None, stream=None) -> DeviceArray:
    """An uninitialized contiguous device array with the shape and dtype of *ary*, its
    axes laid out in the order of *ary*'s strides (NumPy's ``empty_like``, order 'K'):
    C or F for a contiguous array, and for a strided view the order its strides give."""
    order = "F" if (getattr(ary, "flags", None) is not None and ary.flags.f_contiguous
                    and not ary.flags.c_contiguous) else "C"
    if isinstance(ary, DeviceArray):
        order = "F" if ary.layout == "F" else "C"
    strides = getattr(ary, "strides", None)
    if order == "C" and strides and len(ary.shape) > 1 and \
            not (isinstance(ary, DeviceArray) and ary.layout == "C") and \
            not (isinstance(ary, np.ndarray) and ary.flags.c_contiguous):
        # outermost axis (largest stride) first, ties kept in axis order, as NumPy
        perm = sorted(range(len(strides)), key=lambda k: -abs(strides[k]))
        inner = device_array(tuple(ary.shape[k] for k in perm), ary.dtype, device=device)
        return inner.transpose(tuple(perm.index(k) for k in range(len(perm))))
    return device_array(ary.shape, ary.dtype, order=order, device=device)


def to_device(ary, device=None, stream=None, copy: bool = True, to=None) -> DeviceArray:
    """Copy a host array to the device.  A device array is returned as is, unless
    *device* names another device than its own: then it is copied there."""
    if isinstance(ary, DeviceArray):
        if device is None or _device(device) is ary.device:
            return ary
        ary = ary.copy_to_host()  # through the host: the devices share no memory
    host = np.asarray(ary)
    if host.dtype == object:
        raise DeviceArrayTypeError("object arrays cannot be copied to a device")
    if not (host.flags.c_contiguous or host.flags.f_contiguous):
        host = np.ascontiguousarray(host)
    if to is not None:
        to.copy_to_device(host)
        return to
    d = device_array_like(host, device=device)
    if host.size:
        d._alloc.device.runtime.write(d.handle, 0, host, stream)
    return d
