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
import weakref

from .. import memory as _mem
from ..devices import default_device as _default_device
from ..devices import devices as _devices
from ..devices import select_device as _gpux_select_device
from ..errors import DeviceNotFoundError, GpuxUserError
from . import _arrays
from ._context_memory import ContextMemory, MemoryInfo
from ._context_memory import deallocations_of as _deallocations
from .capability import _facade_provides, capability_of

__all__ = [
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

    @property
    def msg(self) -> str:
        """The message (numba.cuda's attribute)."""
        return str(self)




# --------------------------------------------------------------------- devices
#: numba.cuda's message where ``NUMBA_DISABLE_CUDA=1`` (config.DISABLE_CUDA)
_DISABLED = "CUDA is disabled due to setting NUMBA_DISABLE_CUDA=1"


def _disabled() -> bool:
    from . import config

    return bool(getattr(config, "DISABLE_CUDA", 0))


# ------------------------------------------------------------ driver initialization
#: the facade's driver object (``cudadrv.driver.driver``) and its CudaAPIError class,
#: registered by that module: its ``cuInit(0)`` is called on the facade's first use of
#: a device, as numba.cuda calls its driver's (so a replaced ``driver.cuInit`` is honoured)
_driver = None
_driver_error: type = ()
#: whether the first use has called it, and numba.cuda's record of its failure,
#: ``"<message> (<code>)"`` (what ``cuda_error()`` returns)
_initialized = False
_init_error: str | None = None


def register_driver(driver, api_error: type) -> None:
    """Called by ``cudadrv.driver``: *driver* is initialized on first use of a device."""
    global _driver, _driver_error
    _driver, _driver_error = driver, api_error


def _ensure_initialized() -> None:
    """numba.cuda's driver initialization, once: ``driver.cuInit(0)``, whose
    CudaAPIError becomes a CudaSupportError "Error at driver init: <message> (<code>)"
    now and on every later use of a device."""
    global _initialized, _init_error
    if not _initialized:
        _initialized = True
        if _driver is not None:
            try:
                _driver.cuInit(0)
            except _driver_error as e:
                _init_error = f"{e.msg} ({e.code})"
    if _init_error is not None:
        raise CudaSupportError(f"Error at driver init: {_init_error}")


def _current():
    if _disabled():  # numba.cuda's switch: the facade uses no device at all
        raise CudaSupportError(_DISABLED)
    if _init_error is not None or not _initialized:
        _ensure_initialized()
    try:
        dev = _default_device()
    except DeviceNotFoundError as e:
        raise CudaSupportError(str(e)) from None
    if _mem.pending_frees(dev) is None:  # the facade frees memory as numba.cuda does
        _deallocations(dev)
    return dev


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

    def __init__(self, devnum: int, *, _gdev=None):
        # Device(devnum) or Device(devnum=n), as numba.cuda's cudadrv.driver.Device
        if _gdev is None:
            devnum = int(devnum)
            devs = _devices()
            if not 0 <= devnum < len(devs):
                raise CudaSupportError(f"no device number {devnum}; found {len(devs)}")
            _gdev = devs[devnum]
        self.gpux_device = _gdev
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
        # cuda.bf16 computes in float32 and rounds with integer operations, so it runs,
        # with numba.cuda's results, on every device (not only from capability 8.0)
        return _facade_provides("bf16")

    def _limit(self, key, default):
        return self.gpux_device.limits.get(key, default)

    @property
    def _device(self) -> "Device":
        """numba.cuda's ``gpus[i]._device``, the driver's device behind the one
        ``cuda.gpus`` manages, which libraries read the name from to pick their
        tuning (fbpic): the facade has one object for both, this one."""
        return self

    @property
    def primary_context(self) -> "Context":
        """The device's context (numba.cuda's primary context: the one kernels use)."""
        return _context_of(self)

    def get_primary_context(self) -> "Context":
        """:attr:`primary_context`, made ready to use (numba.cuda's)."""
        ctx = _context_of(self)
        ctx.prepare()
        return ctx

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
            # what the facade provides on every device: mapped and managed arrays,
            # cooperative launches (cg.this_grid().sync()), no exclusive compute modes
            "CAN_MAP_HOST_MEMORY": 1, "MANAGED_MEMORY": 1, "COOPERATIVE_LAUNCH": 1,
            "COMPUTE_MODE": 0,
            # a compute unit runs at least one work-group of the largest size, with the
            # work-group's local memory
            "MAX_THREADS_PER_MULTI_PROCESSOR": min(self.gpux_device.max_threads_per_block,
                                                   _CUDA_THREADS),
            "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR": lim.get("max_shared_bytes", 49152),
            "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN": lim.get("max_shared_bytes", 49152),
        }
        try:
            return table[attr]
        except KeyError:
            raise AttributeError(f"device attribute {attr} is not known to numba_gpux "
                                 f"on {self.gpux_device.spec} (its driver does not report "
                                 f"it)") from None

    def get_device_identity(self) -> dict:
        return {"pci_domain_id": 0, "pci_bus_id": 0, "pci_device_id": 0}

    def reset(self) -> None:
        """Wait for the device's work (numba.cuda also destroys its context)."""
        self.gpux_device.runtime.synchronize()

    def __enter__(self):
        if getattr(_held, "depth", 0) and _current() is not self.gpux_device:
            raise RuntimeError("Cannot switch CUDA-context.")
        self._saved.append(_current())
        _gpux_select_device(self.gpux_device)
        _context_stack().append(_context_of(self))
        return self

    def __exit__(self, *exc):
        st = _context_stack()
        if st and st[-1].device == self:
            st.pop()
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
        w = _wrappers[id(gdev)] = Device(num, _gdev=gdev)
    w.id = num
    return w


class _DeviceList:
    """``cuda.gpus``: every device numba_gpux found, best first."""

    def __getitem__(self, i):
        """The device at *i*; a list of them for a slice (``cuda.gpus[1:]``)."""
        if isinstance(i, slice):
            return [_wrap(d) for d in _devices()[i]]
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


class Context(ContextMemory):
    """numba.cuda's context: here, a view of one device.  Its memory calls, pending
    frees and ``memory_manager`` (an EMM plug-in where one is installed) are
    :class:`~._context_memory.ContextMemory`'s."""

    def __init__(self, device: Device):
        self.device = device
        self._init_memory()

    @property
    def handle(self) -> int:
        """An integer naming this context (numba.cuda: the driver's CUcontext)."""
        return id(self)

    def push(self) -> None:
        """Make this context the active one of this thread (until :meth:`pop`)."""
        _context_stack().append(self)

    def pop(self) -> None:
        """Undo :meth:`push` (this context must be the active one)."""
        st = _context_stack()
        if not st or st[-1] is not self:
            raise RuntimeError("this context is not the active one of this thread")
        st.pop()

    def create_stream(self) -> "Stream":
        """A new stream on this context's device."""
        return _new_stream(self.device.gpux_device)

    def create_event(self, timing: bool = True) -> "Event":
        return Event(timing)

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

    def get_active_blocks_per_multiprocessor(self, func, blocksize, memsize, flags=None) -> int:
        """Occupancy: blocks of *func* (``library.get_cufunc()``) of *blocksize* threads
        and *memsize* dynamic shared bytes that one multiprocessor runs at once
        (``compiled.Function.active_blocks_per_multiprocessor``)."""
        return _loaded(func, "get_active_blocks_per_multiprocessor") \
            .active_blocks_per_multiprocessor(blocksize, memsize, flags)

    def get_max_potential_block_size(self, func, b2d_func, memsize, blocksizelimit,
                                     flags=None) -> tuple:
        """``(grid, block)``: the block size of the highest occupancy for *func*, and the
        fewest blocks that fill the device (``compiled.Function.max_potential_block_size``)."""
        return _loaded(func, "get_max_potential_block_size") \
            .max_potential_block_size(b2d_func, memsize, blocksizelimit, flags)

    def reset(self) -> None:
        """Wait for the device's work and make the pending frees (numba.cuda also
        destroys the context; numba_gpux keeps it).  An EMM plug-in is reset, and
        initialized again before the context's next use."""
        self.synchronize()
        self.deallocations.clear()
        self._unprepare()

    def __repr__(self):
        return f"<Context of {self.device!r}>"


def _loaded(func, what: str):
    """*func* if it is a kernel loaded on a device (``compiled.Function``)."""
    if not hasattr(func, "max_potential_block_size"):
        raise TypeError(f"{what} takes a kernel's function (kernel.overloads[sig].library"
                        f".get_cufunc()), not {type(func).__name__}")
    return func


_contexts: dict = {}


def _context_of(dev: Device) -> Context:
    ctx = _contexts.get(dev)
    if ctx is None:
        ctx = _contexts.setdefault(dev, Context(dev))
    return ctx


_active = threading.local()


def _context_stack() -> list:
    """This thread's stack of active contexts (numba.cuda's: ``with cuda.gpus[n]:``
    pushes one, and asking for the current context pushes it when none is active)."""
    st = getattr(_active, "stack", None)
    if st is None:
        st = _active.stack = []
    return st


def current_context(devnum=None) -> Context:
    """The context of device *devnum* (an index into ``cuda.gpus``; default: current),
    made active on this thread when none is."""
    dev = gpus[devnum] if devnum is not None else get_current_device()
    ctx = _context_of(dev)
    st = _context_stack()
    if not st:
        st.append(ctx)
    ctx.prepare()
    return ctx


def context_of_gpux_device(gdev) -> Context:
    """The facade's context of the numba_gpux device *gdev*."""
    return _context_of(_wrap(gdev))


class ActiveContext:
    """``driver.get_active_context()``: the context active on this thread
    (``context_handle``, ``devnum``; None without one), also as a ``with`` block."""

    def __init__(self):
        st = _context_stack()
        top = st[-1] if st else None
        self.context = top
        self.context_handle = None if top is None else top.handle
        self.devnum = None if top is None else top.device.id

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None

    def __bool__(self):
        return self.context_handle is not None


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


_held = threading.local()


def require_context(fn):
    """Decorator: *fn* runs with the current device's context, which it cannot switch
    (``with cuda.gpus[n]:`` for another device inside it is a RuntimeError, as in
    numba.cuda).  Contexts are made on first use."""
    import functools

    @functools.wraps(fn)
    def with_context(*args, **kwargs):
        current_context()
        _held.depth = getattr(_held, "depth", 0) + 1
        try:
            return fn(*args, **kwargs)
        finally:
            _held.depth -= 1

    return with_context


def close() -> None:
    """Wait for the current device's work to finish (numba.cuda also tears down the
    context; numba_gpux keeps it, and releases memory when arrays are freed)."""
    try:
        _current().runtime.synchronize()
    except CudaSupportError:
        pass


def is_available() -> bool:
    """True when numba_gpux found a device that runs kernels (of any target), and
    ``NUMBA_DISABLE_CUDA`` is not set."""
    if _disabled() or _init_error is not None:
        return False
    try:
        return bool(_devices())
    except Exception:
        return False


def cuda_error():
    """Why the facade has no device (None when it has one)."""
    if _disabled():
        return _DISABLED
    if _init_error is not None:  # numba.cuda's record of a failed cuInit
        return _init_error
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
    # numba.cuda's wording ("Found N CUDA devices"), which programs and tests read; the
    # devices that are not NVIDIA GPUs say what they are on their own lines
    print(f"Found {len(devs)} CUDA devices")
    for i, d in enumerate(devs):
        w = _wrap(d)
        cc = ".".join(map(str, w.compute_capability))
        print(f"id {i:<4} {d.name!r:<40} [SUPPORTED]")
        print(f"{'Compute Capability':>40}: {cc}")
        print(f"{'numba_gpux target':>40}: {d.target_name} ({d.spec})")
    print(f"Summary:\n\t{len(devs)}/{len(devs)} devices are supported")
    return bool(devs)


def defer_cleanup():
    """A block in which no device memory of the current device is freed (numba.cuda's
    ``cuda.defer_cleanup()``): frees made meanwhile stay pending until after it."""
    return current_context().defer_cleanup()


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

    def __init__(self, device, queue, external: bool = False):
        self.gpux_device = device
        self.gpux_queue = queue
        #: a stream of another library's (``cuda.external_stream``)
        self.external = external

    @property
    def handle(self):
        """The driver's handle, whose ``int()`` is the number an array interface
        carries (0 for the default stream): on CUDA the ``CUstream``; for a queue
        without a number of its own (OpenCL's) an int that :func:`external_stream`
        takes back, with the queue itself as ``.queue``."""
        q = self.gpux_queue
        if q is None:
            return 0
        try:
            int(q)
        except TypeError:
            h = _QueueHandle(int(self))
            h.queue = q
            return h
        return q

    def __int__(self):
        q = self.gpux_queue
        if q is None:
            return 0
        try:
            return int(q)
        except TypeError:  # a queue object without a number (OpenCL): its pointer,
            n = int(getattr(q, "int_ptr", 0) or id(q))  # which external_stream takes back
            _numbered[n] = self
            return n

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
        rt = self.gpux_device.runtime

        def run():
            try:
                rt.event_synchronize(ev)
            finally:
                _release(rt.release_event, ev)
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


def _synchronize_default_stream(device) -> None:
    Stream(device, None).synchronize()


_arrays._synchronize_default_stream = _synchronize_default_stream  # assignments wait so


def _new_stream(dev) -> Stream:
    """A new stream on *dev*, whose queue the runtime releases when the stream goes."""
    s = Stream(dev, dev.runtime.new_queue())
    weakref.finalize(s, _release, dev.runtime.release_queue, s.gpux_queue)
    return s


def _release(release, obj) -> None:
    try:
        release(obj)
    except Exception:  # noqa: BLE001 - at exit the driver may be gone already
        pass


def stream() -> Stream:
    """A new stream on the current device."""
    return _new_stream(_current())


def default_stream() -> Stream:
    """The current device's default stream (what ``0`` means in numba.cuda)."""
    return Stream(_current(), None)


legacy_default_stream = default_stream
per_thread_default_stream = default_stream


#: streams whose int() is a number of ours, not the driver's (OpenCL queues): by number
_numbered: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


class _QueueHandle(int):
    """A queue's number (``Stream.handle`` where the queue has none of its own): an
    int, as numba.cuda's handles convert to one, with ``value`` as ctypes pointers
    have and ``queue``, the runtime's queue."""

    queue = None

    @property
    def value(self) -> int:
        return int(self)


def external_stream(ptr) -> Stream:
    """A stream made by other code, from its driver handle: a ``CUstream`` (an int) on
    CUDA, a ``pyopencl.CommandQueue`` on OpenCL (or the ``int()`` of one of our streams
    there, as an array interface carries it); kernels and copies on it are ordered
    with that code's work, and the other code keeps it and destroys it.  Where the
    current device's runtime has no such queues, NotImplementedError naming it."""
    own = _numbered.get(int(ptr)) if isinstance(ptr, int) else None
    if own is not None:  # one of ours, by the number an array interface carried
        return Stream(own.gpux_device, own.gpux_queue, external=True)
    dev = _current()
    return Stream(dev, dev.runtime.adopt_queue(ptr), external=True)


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
        self._forget()
        self._device = _stream_device(stream)
        self._ev = _record(stream)
        self._finalizer = weakref.finalize(self, _release, self._device.runtime.release_event,
                                           self._ev)

    def _forget(self) -> None:
        """Release the event recorded before (if any)."""
        fin = getattr(self, "_finalizer", None)
        if fin is not None:
            fin()

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
