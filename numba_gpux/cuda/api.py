"""Host side of the numba.cuda facade: memory, streams, events, devices.

Everything here is a thin layer over ``numba_gpux``'s own device arrays,
devices and runtime protocol (``numba_gpux/launch.py``).  Where a device has
no such thing (pinned or mapped host memory on an OpenCL CPU device, a
compute capability on a non-NVIDIA device) a documented stand-in is used;
``docs/migration.md`` lists each one.
"""

from __future__ import annotations

import contextlib
import threading
from collections import namedtuple

import numpy as np

from .. import memory as _mem
from ..devices import default_device as _default_device
from ..devices import devices as _devices
from ..devices import select_device as _gpux_select_device
from ..errors import DeviceNotFoundError, GpuxUserError, UnsupportedError
from ._arrays import DeviceNDArray, as_facade
from .capability import _facade_provides, capability_of

__all__ = [
    "to_device", "device_array", "device_array_like", "pinned_array", "pinned_array_like",
    "mapped_array", "mapped_array_like", "managed_array", "pinned", "mapped",
    "is_cuda_array", "as_cuda_array", "from_cuda_array_interface",
    "stream", "default_stream", "legacy_default_stream", "per_thread_default_stream",
    "external_stream", "Stream", "event", "Event", "event_elapsed_time", "synchronize",
    "gpus", "select_device", "get_current_device", "list_devices", "current_context",
    "require_context", "reset", "driver_version", "close", "detect", "is_available",
    "is_supported_version", "cuda_error",
    "is_float16_supported", "is_bfloat16_supported", "is_fp8_supported", "defer_cleanup",
    "profile_start", "profile_stop", "profiling", "CudaSupportError", "MemoryInfo",
    "Device", "Context",
]


class CudaSupportError(DeviceNotFoundError):
    """No device that can run kernels was found (numba.cuda's name)."""


MemoryInfo = namedtuple("MemoryInfo", ["free", "total"])


# --------------------------------------------------------------------- devices
def _current():
    try:
        return _default_device()
    except DeviceNotFoundError as e:
        raise CudaSupportError(str(e)) from None


#: CUDA's largest block: threads, and per dimension (every NVIDIA GPU since compute
#: capability 2.0)
_CUDA_THREADS = 1024
_CUDA_BLOCK = (1024, 1024, 64)


class Device:
    """numba.cuda's device object over a ``numba_gpux`` Device.

    ``compute_capability`` is the device's own on an NVIDIA GPU; elsewhere the
    highest CUDA capability all of whose facade features work on the device
    (``capability.py``; ``name`` stays the device's own); attributes such as ``MAX_THREADS_PER_BLOCK`` come from the
    device's limits (``WARP_SIZE`` is a stand-in where the sub-group width is
    chosen per kernel: read ``cuda.warpsize`` inside a kernel for the real one).
    """

    def __init__(self, gdev, devnum: int):
        self.gpux_device = gdev
        self.id = devnum
        self._saved = []

    @property
    def name(self) -> str:
        return self.gpux_device.name

    @property
    def compute_capability(self) -> tuple[int, int]:
        return capability_of(self.gpux_device)

    @property
    def uuid(self) -> str:
        return f"GPU-gpux-{self.gpux_device.spec}"

    @property
    def supports_float16(self) -> bool:
        return "fp16" in self.gpux_device.target_features or self.compute_capability >= (5, 3)

    @property
    def supports_bfloat16(self) -> bool:
        return self.compute_capability >= (8, 0) and _facade_provides("bf16")

    def _limit(self, key, default):
        return self.gpux_device.limits.get(key, default)

    def __getattr__(self, attr):
        if not attr.isupper():
            raise AttributeError(attr)
        # a runtime that can ask its driver (CU_DEVICE_ATTRIBUTE_<attr>) answers itself
        value = self.gpux_device.runtime.device_attribute(attr)
        if value is not None:
            return value
        lim = self.gpux_device.limits
        # at most CUDA's block limits (1024 threads, 1024 x 1024 x 64), which numba.cuda
        # code sizes its shared arrays by: a CPU device's 8192-item work-groups would
        # overrun a cuda.shared.array(1024) indexed by the thread
        block = tuple(min(d, c) for d, c in zip(lim.get("max_block_dims") or _CUDA_BLOCK,
                                                _CUDA_BLOCK))
        grid = tuple(lim.get("max_grid_dims") or (2**31 - 1, 65535, 65535))
        table = {
            "MAX_THREADS_PER_BLOCK": min(self.gpux_device.max_threads_per_block, _CUDA_THREADS),
            "MAX_BLOCK_DIM_X": block[0], "MAX_BLOCK_DIM_Y": block[1], "MAX_BLOCK_DIM_Z": block[2],
            "MAX_GRID_DIM_X": grid[0], "MAX_GRID_DIM_Y": grid[1], "MAX_GRID_DIM_Z": grid[2],
            "MAX_SHARED_MEMORY_PER_BLOCK": lim.get("max_shared_bytes", 49152),
            "MULTIPROCESSOR_COUNT": lim.get("compute_units", 1),
            "WARP_SIZE": lim.get("warp_size", 32),
            "TOTAL_CONSTANT_MEMORY": lim.get("max_constant_bytes", 65536),
            "COMPUTE_CAPABILITY_MAJOR": self.compute_capability[0],
            "COMPUTE_CAPABILITY_MINOR": self.compute_capability[1],
            # copies on a queue run asynchronously to the host, one at a time (libraries
            # size their stream pools by it, and divide by it)
            "UNIFIED_ADDRESSING": 0, "CONCURRENT_KERNELS": 1, "ASYNC_ENGINE_COUNT": 1,
            "PCI_BUS_ID": 0, "PCI_DEVICE_ID": 0, "PCI_DOMAIN_ID": 0,
        }
        try:
            return table[attr]
        except KeyError:
            raise AttributeError(f"device attribute {attr} is not known to numba_gpux") from None

    def get_device_identity(self) -> dict:
        return {"pci_domain_id": 0, "pci_bus_id": 0, "pci_device_id": 0}

    def reset(self) -> None:
        """Wait for the device's work (numba.cuda also destroys its context)."""
        self.gpux_device.runtime.synchronize()

    def __enter__(self):
        self._saved.append(_current())
        _gpux_select_device(self.gpux_device)
        return self

    def __exit__(self, *exc):
        _gpux_select_device(self._saved.pop())

    def __eq__(self, other):
        return isinstance(other, Device) and other.gpux_device is self.gpux_device

    def __hash__(self):
        return hash(id(self.gpux_device))

    def __repr__(self):
        return f"<CUDA device {self.id} '{self.name}' ({self.gpux_device.spec})>"


_wrappers: dict = {}


def _wrap(gdev) -> Device:
    """The facade's device object of *gdev*, whose ``id`` is its place in the device
    list as it is now (``devices.rescan`` can add or remove devices before it)."""
    devs = _devices()
    num = next((i for i, d in enumerate(devs) if d is gdev), len(devs))
    w = _wrappers.get(id(gdev))
    if w is None or w.gpux_device is not gdev:
        w = _wrappers[id(gdev)] = Device(gdev, num)
    w.id = num
    return w


class _DeviceList:
    """``cuda.gpus``: every device numba_gpux found, best first."""

    def __getitem__(self, i) -> Device:
        return _wrap(_devices()[i])

    def __len__(self) -> int:
        return len(_devices())

    def __iter__(self):
        return iter([_wrap(d) for d in _devices()])

    @property
    def lst(self) -> list:
        return list(self)

    @property
    def current(self) -> Device:
        return _wrap(_current())

    def __repr__(self):
        return f"<Managed device list: {list(self)}>"


gpus = _DeviceList()


def list_devices() -> list:
    return gpus.lst


def select_device(device_id: int) -> Device:
    """Make device number *device_id* (an index into ``cuda.gpus``) the current one."""
    devs = _devices()
    if not 0 <= device_id < len(devs):
        raise CudaSupportError(f"no device number {device_id}; found {len(devs)}")
    _gpux_select_device(devs[device_id])
    return _wrap(devs[device_id])


def get_current_device() -> Device:
    return _wrap(_current())


class _Deallocations:
    """``context.deallocations``: numba.cuda defers freeing device memory and frees it
    in batches.  numba_gpux frees an allocation when its last array goes away, so
    nothing is ever pending: ``clear()`` has nothing to do and ``len()`` is 0."""

    def clear(self) -> None:
        """Free pending deallocations (there are none)."""

    @contextlib.contextmanager
    def disable(self):
        yield

    @property
    def is_disabled(self) -> bool:
        return False

    def __len__(self) -> int:
        return 0


class _MemoryManager:
    """``context.memory_manager``: the questions numba.cuda's memory manager answers."""

    interface_version = 1

    def __init__(self, context: "Context"):
        self._context = context

    def get_memory_info(self) -> MemoryInfo:
        return self._context.get_memory_info()

    def defer_cleanup(self):
        return defer_cleanup()

    def reset(self) -> None:
        self._context.reset()

    def initialize(self) -> None:
        pass


class Context:
    """numba.cuda's context: here, a view of one device."""

    def __init__(self, device: Device):
        self.device = device
        self.deallocations = _Deallocations()
        self.memory_manager = _MemoryManager(self)

    def get_memory_info(self) -> MemoryInfo:
        """(free, total) bytes.  Where the driver does not report free memory, free is
        the total less what numba_gpux itself holds allocated on the device."""
        gdev = self.device.gpux_device
        total = int(gdev.limits.get("global_mem_bytes", 0))
        info = gdev.runtime.memory_info()
        if info is not None:
            return MemoryInfo(*info)
        used = _mem.allocated_bytes(gdev)
        return MemoryInfo(max(total - used, 0), total)

    def synchronize(self) -> None:
        self.device.gpux_device.runtime.synchronize()

    def can_access_peer(self, peer_device) -> bool:
        """Whether kernels on this context's device can access *peer_device*'s memory
        directly (a device number or Device).  Copies between devices work either way
        (through the host where the runtimes share nothing)."""
        peer = gpus[peer_device] if isinstance(peer_device, int) else peer_device
        if peer.gpux_device == self.device.gpux_device:
            return True
        return bool(self.device.gpux_device.runtime.can_access_peer(peer.gpux_device.runtime))

    def reset(self) -> None:
        self.synchronize()

    def __repr__(self):
        return f"<Context of {self.device!r}>"


_contexts: dict = {}


def current_context(devnum=None) -> Context:
    """The context of device *devnum* (an index into ``cuda.gpus``; default: current)."""
    dev = gpus[devnum] if devnum is not None else get_current_device()
    ctx = _contexts.get(dev)
    if ctx is None:
        ctx = _contexts[dev] = Context(dev)
    return ctx


def reset() -> None:
    """numba.cuda destroys the current context; numba_gpux waits for the device's work
    (memory is released as arrays are freed)."""
    get_current_device().reset()


def driver_version() -> tuple:
    """The CUDA driver version cuda-python reports, or (0, 0) where there is none."""
    try:
        from cuda.bindings import driver as _drv  # cuda-python 12.6+
    except ImportError:
        return (0, 0)
    try:
        err, ver = _drv.cuDriverGetVersion()
    except Exception:
        return (0, 0)
    return (ver // 1000, (ver % 1000) // 10) if int(err) == 0 else (0, 0)


def require_context(fn):
    """Decorator kept for compatibility: numba_gpux creates contexts on first use."""
    return fn


def close() -> None:
    """Wait for the current device's work to finish (numba.cuda also tears down the
    context; numba_gpux keeps it, and releases memory when arrays are freed)."""
    try:
        _current().runtime.synchronize()
    except CudaSupportError:
        pass


def is_available() -> bool:
    """True when numba_gpux found a device that runs kernels (of any target)."""
    try:
        return bool(_devices())
    except Exception:
        return False


def cuda_error():
    return None if is_available() else "no device found by numba_gpux"


def is_supported_version() -> bool:
    return True


def is_float16_supported() -> bool:
    return is_available() and get_current_device().supports_float16


def is_bfloat16_supported() -> bool:
    return is_available() and get_current_device().supports_bfloat16


def is_fp8_supported() -> bool:
    return False


def detect() -> bool:
    """Print the devices found; True when at least one is usable."""
    devs = _devices()
    print(f"Found {len(devs)} device(s)")
    for i, d in enumerate(devs):
        w = _wrap(d)
        cc = ".".join(map(str, w.compute_capability))
        print(f"id {i:<4} {d.name:>40} [SUPPORTED]")
        print(f"{'':>24}target: {d.target_name} ({d.spec})  compute capability: {cc}")
    print(f"Summary:\n\t{len(devs)}/{len(devs)} devices are supported")
    return bool(devs)


@contextlib.contextmanager
def defer_cleanup():
    yield


def profile_start() -> None:
    """No-op (no profiler is attached by numba_gpux)."""


def profile_stop() -> None:
    """No-op."""


@contextlib.contextmanager
def profiling():
    yield


def synchronize() -> None:
    """Wait for all work queued on the current device."""
    _current().runtime.synchronize()


# --------------------------------------------------------------------- streams
class Stream:
    """A queue of work on one device (an in-order OpenCL queue, a CUDA stream).

    Carries ``gpux_queue`` (the runtime's queue; None for the default one) and
    ``gpux_device``, which the launch path and the runtime read.
    """

    def __init__(self, device, queue):
        self.gpux_device = device
        self.gpux_queue = queue

    @property
    def handle(self):
        return self.gpux_queue

    def __int__(self):
        return 0 if self.gpux_queue is None else id(self.gpux_queue)

    def __eq__(self, other):
        if isinstance(other, Stream):
            return other.gpux_queue is self.gpux_queue and other.gpux_device is self.gpux_device
        return self.gpux_queue is None and other == 0

    def __hash__(self):
        return hash((id(self.gpux_queue), id(self.gpux_device)))

    def __repr__(self):
        kind = "default stream" if self.gpux_queue is None else "stream"
        return f"<{kind} on {self.gpux_device.spec}>"

    def synchronize(self) -> None:
        """Wait for everything queued on this stream."""
        self.gpux_device.runtime.synchronize(self)

    @contextlib.contextmanager
    def auto_synchronize(self):
        """``with stream.auto_synchronize():`` synchronizes the stream on exit."""
        yield self
        self.synchronize()

    def add_callback(self, callback, arg=None) -> None:
        """Call ``callback(stream, status, arg)`` (status 0) from another thread once the
        work queued so far has completed."""
        ev = _record(self)

        def run():
            self.gpux_device.runtime.event_synchronize(ev)
            callback(self, 0, arg)

        threading.Thread(target=run, daemon=True).start()

    def async_done(self):
        """An asyncio future that completes when the work queued so far has."""
        import asyncio

        loop = asyncio.get_event_loop()
        fut = loop.create_future()

        def done(stream, status, arg):
            loop.call_soon_threadsafe(lambda: fut.done() or fut.set_result(stream))

        self.add_callback(done)
        return fut


def stream() -> Stream:
    """A new stream on the current device."""
    dev = _current()
    return Stream(dev, dev.runtime.new_queue())


def default_stream() -> Stream:
    """The current device's default stream (what ``0`` means in numba.cuda)."""
    return Stream(_current(), None)


legacy_default_stream = default_stream
per_thread_default_stream = default_stream


def external_stream(ptr):
    raise UnsupportedError("cuda.external_stream: numba_gpux cannot adopt foreign streams")


def _stream_device(stream_):
    dev = getattr(stream_, "gpux_device", None)
    return dev if dev is not None else _current()


def _record(stream_):
    dev = _stream_device(stream_)
    return dev.runtime.record_event(stream_ if stream_ else None)


class Event:
    """A point in a stream; with ``timing=True`` (always, here) elapsed times work."""

    def __init__(self, timing: bool = True):
        self.timing = timing
        self._ev = None
        self._device = None

    def record(self, stream=0) -> None:
        self._device = _stream_device(stream)
        self._ev = _record(stream)

    def _need(self):
        if self._ev is None:
            raise GpuxUserError("this event was never recorded; call event.record(stream) first")
        return self._ev

    def query(self) -> bool:
        """True when the work before the event has completed (or it was never recorded)."""
        if self._ev is None:
            return True
        return self._device.runtime.event_query(self._ev)

    def synchronize(self) -> None:
        self._device.runtime.event_synchronize(self._need())

    def wait(self, stream=0) -> None:
        """Make later work on *stream* wait for this event."""
        dev = _stream_device(stream)
        dev.runtime.event_wait(self._need(), stream if stream else None)

    def elapsed_time(self, evtend: "Event") -> float:
        """Milliseconds from this event to *evtend* (both recorded)."""
        return self._device.runtime.event_elapsed_ms(self._need(), evtend._need())


def event(timing: bool = True) -> Event:
    return Event(timing)


def event_elapsed_time(evtstart: Event, evtend: Event) -> float:
    return evtstart.elapsed_time(evtend)


# --------------------------------------------------------------------- memory
def to_device(obj, stream=0, copy: bool = True, to=None):
    """Copy a host array to the device of *stream* (default: the current device)."""
    dev = _stream_device(stream)
    if to is not None:
        if copy:
            to.copy_to_device(obj, stream=stream)
        return to
    if isinstance(obj, _mem.DeviceArray):
        return obj
    if not copy:
        host = np.asarray(obj)
        return as_facade(_mem.device_array_like(host, device=dev))
    return as_facade(_mem.to_device(obj, device=dev, stream=stream or None))


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
        return as_facade(_mem.device_array(shape, dtype, order=order, device=dev))
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    dtype = np.dtype(dtype)
    strides = tuple(int(s) for s in strides)
    alloc = _mem.Allocation(dev, _nbytes_for(shape, strides, dtype.itemsize))
    return DeviceNDArray(shape, strides, dtype, alloc, 0)


def device_array_like(ary, stream=0):
    """An uninitialized device array shaped (and ordered) like *ary*."""
    return as_facade(_mem.device_array_like(ary, device=_stream_device(stream)))


def _host_array(shape, dtype, strides, order):
    dtype = np.dtype(dtype)
    if strides is None:
        return np.empty(shape, dtype, order=order)
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    buf = np.empty(_nbytes_for(shape, strides, dtype.itemsize), np.uint8)
    return np.ndarray(shape, dtype, buffer=buf, strides=strides)


def pinned_array(shape, dtype=np.float64, strides=None, order="C"):
    """A host array for fast transfers.  Stand-in: an ordinary NumPy array (OpenCL CPU
    devices share host memory; no page locking is done)."""
    return _host_array(shape, dtype, strides, order)


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


def pinned_array_like(ary):
    return _host_like(ary)


def mapped_array(shape, dtype=np.float64, strides=None, order="C", stream=0,
                 portable=False, wc=False):
    """A host array kernels can use.  Stand-in: a NumPy array that a launch copies to
    the device and back (as for any host array), so results are visible on the host
    when the launch returns; kernels never access host memory directly."""
    return _host_array(shape, dtype, strides, order)


def mapped_array_like(ary, stream=0, portable=False, wc=False):
    return _host_like(ary)


def managed_array(shape, dtype=np.float64, strides=None, order="C", stream=0,
                  attach_global=True):
    """Stand-in for managed (unified) memory: like :func:`mapped_array`."""
    return _host_array(shape, dtype, strides, order)


@contextlib.contextmanager
def pinned(*arylist):
    """No-op stand-in: host arrays are used as they are."""
    yield


@contextlib.contextmanager
def mapped(*arylist, **kws):
    """Yields device copies of the host arrays and copies them back on exit."""
    devs = [to_device(a, stream=kws.get("stream", 0)) for a in arylist]
    try:
        yield devs[0] if len(devs) == 1 else devs
    finally:
        for h, d in zip(arylist, devs):
            d.copy_to_host(h)


def is_cuda_array(obj) -> bool:
    """True for numba_gpux device arrays and objects with ``__cuda_array_interface__``."""
    return isinstance(obj, _mem.DeviceArray) or hasattr(obj, "__cuda_array_interface__")


def as_cuda_array(obj, sync: bool = True):
    """A device array from *obj* (a numba_gpux device array, or a foreign GPU array
    where the current device's target can adopt it)."""
    if isinstance(obj, _mem.DeviceArray):
        return obj
    wrap = getattr(_mem, "from_foreign", None)
    if wrap is not None and hasattr(obj, "__cuda_array_interface__"):
        return as_facade(wrap(obj))
    raise UnsupportedError(f"cannot use a {type(obj).__name__} as a device array on "
                           f"{_current().spec}")


def from_cuda_array_interface(desc, owner=None, sync: bool = True):
    class _Holder:
        __cuda_array_interface__ = desc

    return as_cuda_array(owner if owner is not None else _Holder(), sync)
