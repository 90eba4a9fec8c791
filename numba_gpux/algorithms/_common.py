"""Shared helpers: host/device arguments, operators, kernel factories."""

from __future__ import annotations

import threading

import numpy as np

from .. import dispatcher as _dispatcher
from ..allocation import Allocation
from ..errors import GpuxUserError
from ..memory import DeviceArray, device_array, to_device

__all__ = ["as_device", "finish", "resolve_op", "Op", "kernel_cache", "cdiv", "device_of",
           "reinterpret", "empty", "host_readable"]

jit = _dispatcher.jit
GpuxFunction = _dispatcher.GpuxFunction


def device_of(device, *arrays):
    """The device to run on: *device* (a Device or a spec such as ``"opencl:cpu:0"``),
    else the device of the first device array, else the current device."""
    from ..devices import default_device, lookup_device

    if device is not None:
        return lookup_device(device)
    for a in arrays:
        if isinstance(a, DeviceArray):
            return a.device
    return default_device()


def as_device(x, device, what: str = "argument"):
    """(device array, True if *x* was a host array)."""
    if isinstance(x, DeviceArray):
        return x, False
    try:
        h = np.asarray(x)
    except Exception:
        raise GpuxUserError(f"{what} must be a NumPy array or a device array, not "
                            f"{type(x).__name__}") from None
    if h.dtype == object:
        raise GpuxUserError(f"{what} has dtype object; algorithms take numeric arrays")
    return to_device(np.ascontiguousarray(h), device=device), True


def finish(d: DeviceArray, host: bool):
    """Return *d* as a host array when the input was one."""
    return d.copy_to_host() if host else d


def empty(shape, dtype, device) -> DeviceArray:
    return device_array(shape, dtype=np.dtype(dtype), device=device)


class _Managed:
    """``Runtime.alloc_managed`` memory, released with this object."""

    __slots__ = ("rt", "handle", "address", "keep")

    def __init__(self, rt, nbytes: int) -> None:
        self.rt = rt
        self.handle, self.address, self.keep = rt.alloc_managed(nbytes)

    def __del__(self):
        try:
            self.rt.free(self.handle)
        except Exception:
            pass


_scratch = threading.local()  # .by_device: {device: (Allocation, host bytes)}, this thread's


def host_readable(device, count: int, dtype):
    """``(device array, host array)``: *count* elements of *dtype* that a kernel writes and
    the host then reads in place once ``device.runtime.synchronize()`` has returned, with
    no transfer (a read queued after a kernel costs a CPU driver some 25 us: it wakes the
    driver's threads again).  The memory is this thread's, reused by its next call: read it
    before then.  None where the device's memory is not the host's
    (``Runtime.shares_host_memory``)."""
    rt = device.runtime
    if not rt.shares_host_memory():
        return None
    dt = np.dtype(dtype)
    nbytes = max(count, 1) * dt.itemsize
    table = getattr(_scratch, "by_device", None)
    if table is None:
        table = _scratch.by_device = {}
    got = table.get(device)
    if got is None or got[1].size < nbytes:
        import ctypes

        size = max(4096, 1 << (nbytes - 1).bit_length())
        try:
            mem = _Managed(rt, size)
        except NotImplementedError:
            return None
        raw = (ctypes.c_ubyte * size).from_address(mem.address)
        raw.owner = mem  # (the host array keeps the memory)
        got = table[device] = (Allocation.borrowed(device, mem.handle, size, mem),
                               np.ctypeslib.as_array(raw))
    d = DeviceArray((count,), (dt.itemsize,), dt, got[0], 0)
    return d, got[1][:count * dt.itemsize].view(dt)


def reinterpret(d: DeviceArray, dtype) -> DeviceArray:
    """The same memory seen as *dtype* of the same item size (a bit cast)."""
    dt = np.dtype(dtype)
    if dt.itemsize != d.dtype.itemsize:
        raise GpuxUserError(f"cannot reinterpret {d.dtype} as {dt}")
    return DeviceArray(d.shape, d.strides, dt, d._alloc, d.offset)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class kernel_cache:
    """Kernels made by a factory, once per key (a key names every compile-time constant)."""

    def __init__(self, factory):
        self.factory = factory
        self._made: dict = {}
        self._lock = threading.Lock()

    def __call__(self, *key):
        k = self._made.get(key)
        if k is None:
            with self._lock:
                k = self._made.get(key)
                if k is None:
                    k = self._made[key] = self.factory(*key)
        return k


# --------------------------------------------------------------------------- operators

@jit(device=True)
def op_add(a, b):
    return a + b


@jit(device=True)
def op_mul(a, b):
    return a * b


@jit(device=True)
def op_min(a, b):
    # NaN-propagating, like np.minimum
    if a < b or a != a:
        return a
    return b


@jit(device=True)
def op_max(a, b):
    if a > b or a != a:
        return a
    return b


def _min_identity(dt):
    return np.inf if dt.kind == "f" else np.iinfo(dt).max


def _max_identity(dt):
    return -np.inf if dt.kind == "f" else np.iinfo(dt).min


class Op:
    """A binary operator: a device function, its NumPy name and identity (if known), and
    for the built-in operators the NumPy ufunc that computes the same on the host."""

    def __init__(self, fn, name, identity=None, ufunc=None):
        self.fn = fn
        self.name = name
        self._identity = identity
        self.ufunc = ufunc

    def identity(self, dtype):
        if self._identity is None:
            return None
        v = self._identity(np.dtype(dtype)) if callable(self._identity) else self._identity
        return np.dtype(dtype).type(v)

    def __repr__(self):
        return f"<op {self.name}>"


_BUILTIN = {
    "add": Op(op_add, "add", 0, np.add), "sum": None, "+": None,
    "mul": Op(op_mul, "multiply", 1, np.multiply), "multiply": None, "prod": None, "*": None,
    "min": Op(op_min, "minimum", _min_identity, np.minimum), "minimum": None,
    "max": Op(op_max, "maximum", _max_identity, np.maximum), "maximum": None,
}
for _alias, _target in (("sum", "add"), ("+", "add"), ("multiply", "mul"), ("prod", "mul"),
                        ("*", "mul"), ("minimum", "min"), ("maximum", "max")):
    _BUILTIN[_alias] = _BUILTIN[_target]
_BY_UFUNC = {np.add: "add", np.multiply: "mul", np.minimum: "min", np.maximum: "max"}
_wrapped: dict = {}


def resolve_op(op) -> Op:
    """An Op from a name ('add', 'mul', 'min', 'max'), a NumPy ufunc of those, a
    ``@jit(device=True)`` function or a plain Python function of two arguments."""
    if isinstance(op, Op):
        return op
    if isinstance(op, np.ufunc) and op in _BY_UFUNC:
        return _BUILTIN[_BY_UFUNC[op]]
    if isinstance(op, str):
        got = _BUILTIN.get(op.lower())
        if got is None:
            raise GpuxUserError(f"unknown operator {op!r}; use 'add', 'mul', 'min', 'max' or a "
                                f"device function of two arguments")
        return got
    if isinstance(op, GpuxFunction):
        if not op.is_device:
            raise GpuxUserError(f"{op.__name__} is a kernel; the operator must be a device "
                                f"function (@jit(device=True))")
        return Op(op, op.__name__)
    if callable(op):
        fn = _wrapped.get(op)
        if fn is None:
            fn = _wrapped[op] = jit(device=True)(op)
        return Op(fn, getattr(op, "__name__", "op"))
    raise GpuxUserError(f"operator must be a name or a device function, not {op!r}")


def scalar(value, dtype, what: str):
    """*value* as a NumPy scalar of *dtype* (for kernel arguments)."""
    try:
        return np.dtype(dtype).type(value)
    except (TypeError, ValueError, OverflowError):
        raise GpuxUserError(f"{what} {value!r} cannot be represented as {np.dtype(dtype)}") from None
