"""Scale out with Dask: one device per worker, kernels over the blocks of dask arrays.

Needs the ``dask`` extra (``pip install 'numba-gpux[dask]'``: dask[array],
distributed, cloudpickle).  Built on numba_gpux's public API only::

    from distributed import Client, LocalCluster
    import numba_gpux.dask as gd

    client = Client(LocalCluster(n_workers=2, threads_per_worker=1))
    client.register_plugin(gd.DevicePlugin(cache_dir="/shared/gpux-cache"))
    y = gd.map_overlap(stencil, x, depth=1, boundary="reflect")   # x: a dask array
    y.compute()

Each block goes through one launch: its arrays are copied to the worker's
device, the kernel runs with a launch configuration computed from that
block's shape, and the output block comes back as a NumPy array (blocks stay
NumPy arrays between tasks, as Dask expects).  See docs/scaling.md.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os
import threading
import zlib

import numpy as np

import numba_gpux as gpux

try:
    import dask.array as _da
    from dask.base import normalize_token as _normalize_token
    from distributed import WorkerPlugin as _WorkerPlugin
except ImportError as e:  # pragma: no cover - the extra is missing
    raise ImportError("numba_gpux.dask needs dask and distributed: "
                      "pip install 'numba-gpux[dask]'") from e

__all__ = ["DevicePlugin", "map_blocks", "map_overlap", "default_launch", "worker_device"]

#: the device a DevicePlugin pinned this worker process to (None outside such a worker)
_pinned: "gpux.Device | None" = None


def worker_device() -> "gpux.Device":
    """The device this process runs blocks on: the one a :class:`DevicePlugin`
    pinned the worker to, else the current device."""
    return _pinned or gpux.default_device()


def _worker_index(worker) -> int:
    """A stable number for *worker*: its name when that is an int (LocalCluster
    numbers its workers 0, 1, ...), else a hash of the name; a worker restarted by
    its nanny keeps its name, hence its device."""
    name = getattr(worker, "name", None)
    try:
        return int(name)
    except (TypeError, ValueError):
        return zlib.crc32(str(name).encode())


def _default_specs() -> list[str]:
    best = gpux.default_device()
    return [d.spec for d in gpux.devices() if d.target_name == best.target_name]


class DevicePlugin(_WorkerPlugin):
    """Pins each worker process to one device, as dask-cuda does with
    ``CUDA_VISIBLE_DEVICES``: worker number *i* (``worker.name``) gets
    ``devices[i % len(devices)]``.

    *devices*: device specs or Devices, as the workers see them (default: every
    device of the best device's target, e.g. every CUDA GPU, among those
    ``NUMBA_GPUX_VISIBLE_DEVICES`` leaves visible).  The worker's
    ``NUMBA_GPUX_DEVICE`` and ``NUMBA_GPUX_VISIBLE_DEVICES`` are set to its
    device, for the processes it starts.  *cache_dir*: a
    directory every worker keeps finished code in (``NUMBA_GPUX_CACHE_DIR``), so
    that a kernel declared with ``cache=True`` is compiled by one worker and
    loaded from disk by the others.  Register it with
    ``client.register_plugin(DevicePlugin(...))``; workers that join or restart
    later run it too.
    """

    name = "numba-gpux-device"

    def __init__(self, devices=None, cache_dir: str | None = None):
        self.devices = None if devices is None else [
            d.spec if isinstance(d, gpux.Device) else str(d) for d in devices]
        if self.devices is not None and not self.devices:
            raise gpux.GpuxUserError("DevicePlugin(devices=[]): give at least one device")
        self.cache_dir = None if cache_dir is None else os.path.abspath(cache_dir)

    def setup(self, worker) -> None:
        global _pinned
        if self.cache_dir is not None:
            # set before this worker compiles anything; child processes inherit it
            os.makedirs(self.cache_dir, exist_ok=True)
            os.environ["NUMBA_GPUX_CACHE_DIR"] = self.cache_dir
        specs = self.devices or _default_specs()
        dev = gpux.select_device(specs[_worker_index(worker) % len(specs)])
        # processes the worker starts see and use only its device
        os.environ["NUMBA_GPUX_DEVICE"] = dev.spec
        os.environ["NUMBA_GPUX_VISIBLE_DEVICES"] = dev.spec
        _pinned = dev

    def teardown(self, worker) -> None:
        global _pinned
        _pinned = None


# ------------------------------------------------------------------ launch configuration
_BLOCKDIMS = {1: (256,), 2: (16, 16), 3: (8, 8, 4)}


def default_launch(shape: tuple, device=None) -> tuple[tuple, tuple]:
    """(griddim, blockdim) with one thread per element of *shape* (1 to 3 axes):
    axis ``i`` of the block is axis ``i`` of ``gpux.grid(ndim)``."""
    shape = tuple(int(n) for n in shape) or (1,)
    if len(shape) > 3:
        raise gpux.GpuxUserError(f"blocks of {len(shape)} axes need a launch configuration: "
                                 f"pass config=callable(shape) -> (griddim, blockdim)")
    block = list(_BLOCKDIMS[len(shape)])
    limit = (device or worker_device()).max_threads_per_block
    while math.prod(block) > limit:
        block[block.index(max(block))] //= 2
    grid = tuple(max(1, -(-n // b)) for n, b in zip(shape, block))
    return grid, tuple(block)


# ------------------------------------------------------------------ compile once per cluster
_warm: set = set()
_warm_lock = threading.Lock()


def _compile_once(kernel, args, device) -> None:
    """Before a cached kernel's first launch in this process, compile its finished code
    while holding a cluster-wide lock named after that code, so that one worker
    compiles it and the others, waiting, load it from the shared disk cache."""
    argtypes = kernel.typeof_args(args)
    key = (id(kernel), argtypes, device.spec)
    if key in _warm:
        return
    with _warm_lock:
        if key in _warm:
            return
        try:
            from distributed import Lock, get_worker

            get_worker()
        except (ImportError, ValueError):
            _warm.add(key)  # not in a distributed worker: nothing to share
            return
        # the same name in every worker for the same code: the kernel's source, the
        # argument types and the target
        py = kernel.py_func
        ident = f"{py.__module__}.{kernel.__qualname__}|{_source(py)}|{argtypes}|" \
                f"{device.target.fingerprint}"
        lock = Lock(f"numba-gpux-compile-{hashlib.sha256(ident.encode()).hexdigest()[:32]}")
        if lock.acquire(timeout=_LOCK_TIMEOUT_S):
            try:
                kernel.code_for(argtypes, device.target)
            finally:
                lock.release()
        _warm.add(key)  # (after a timeout the launch compiles, as without the lock)


#: how long a worker waits for another one compiling the same kernel
_LOCK_TIMEOUT_S = 300


def _source(py_func) -> str:
    try:
        return inspect.getsource(py_func)
    except (OSError, TypeError):  # no source file: the code object's bytes stand for it
        code = getattr(py_func, "__code__", None)
        return code.co_code.hex() if code is not None else ""


# ------------------------------------------------------------------ the task function
class _BlockKernel:
    """One block through the kernel: the task function of :func:`map_blocks`.

    *template* lists the kernel's arguments before the output: ``None`` for
    the next array block, ``("value", v)`` for a value passed as is.
    """

    def __init__(self, kernel, template, dtype, out_shape, config, fill):
        self.kernel = kernel
        self.template = template
        self.dtype = np.dtype(dtype)
        self.out_shape = out_shape
        self.config = config
        self.fill = fill
        self._launch = _as_launch(config)

    def __call__(self, *blocks, block_info=None):
        dev = worker_device()
        it = iter(blocks)
        args = []
        for t in self.template:
            if t is None:
                args.append(gpux.to_device(np.ascontiguousarray(next(it)), device=dev))
            else:
                args.append(t[1])
        if self.out_shape is not None:
            shape = tuple(self.out_shape)
        elif block_info and None in block_info:
            shape = tuple(block_info[None]["chunk-shape"])
        else:
            shape = np.shape(blocks[0])
        if self.fill is None:
            out = gpux.device_array(shape, self.dtype, device=dev)
        else:
            out = gpux.to_device(np.full(shape, self.fill, self.dtype), device=dev)
        args.append(out)
        # one thread per output element, or per element of the first array's block
        # where the output block has a shape of its own (partial results)
        over = shape if self.out_shape is None else np.shape(blocks[0])
        if math.prod(over) == 0:
            return out.copy_to_host()
        griddim, blockdim = self._launch(over, dev)
        if getattr(self.kernel, "cache", False):
            _compile_once(self.kernel, args, dev)
        self.kernel[griddim, blockdim, dev](*args)
        return out.copy_to_host()


    def __getstate__(self):
        state = dict(self.__dict__)
        del state["_launch"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._launch = _as_launch(self.config)


def _as_launch(config):
    """*config* as ``launch(shape, device) -> (griddim, blockdim)``."""
    if config is None:
        return default_launch
    if not callable(config):
        raise gpux.GpuxUserError(f"config must be callable(shape) or callable(shape, device) "
                                 f"returning (griddim, blockdim), not {config!r}")
    try:
        two = len(inspect.signature(config).parameters) >= 2
    except (TypeError, ValueError):
        two = False
    return config if two else (lambda shape, device: config(shape))


def _split_args(args):
    """(template, dask arrays): the kernel's leading arguments as a template of
    array slots and values, and the arrays that fill the slots in order."""
    template, arrays = [], []
    for a in args:
        if isinstance(a, _da.Array):
            template.append(None)
            arrays.append(a)
        elif isinstance(a, np.ndarray) and a.ndim > 0:
            template.append(None)
            arrays.append(_da.from_array(a))
        else:
            template.append(("value", a))
    if not arrays:
        raise gpux.GpuxUserError("map_blocks/map_overlap need at least one array argument")
    return template, arrays


def _check_kernel(kernel) -> None:
    if not isinstance(kernel, gpux.GpuxFunction) or kernel.is_device:
        raise gpux.GpuxUserError(f"map_blocks/map_overlap run a kernel (@numba_gpux.jit), "
                                 f"not {kernel!r}")


def map_blocks(kernel, *args, dtype=None, out_shape: tuple | None = None, config=None,
               fill=None, name: str | None = None) -> "_da.Array":
    """Run *kernel* once per block of the dask arrays in *args*; a dask array.

    The kernel is called as ``kernel(*args, out)``: each dask (or NumPy) array
    in *args* becomes that block of it on the worker's device, every other
    value is passed as is, and ``out`` is a new device array for the output
    block (of *dtype*, default the first array's; filled with *fill* when
    given).  The output's blocks have the first array's block shapes, or
    *out_shape* for every block (per-block partial results, e.g. a reduction's).
    The launch configuration is computed per block: ``config(shape)`` or
    ``config(shape, device)`` -> (griddim, blockdim), default
    :func:`default_launch` (one thread per output element).
    """
    _check_kernel(kernel)
    template, arrays = _split_args(args)
    first = arrays[0]
    dtype = np.dtype(dtype or first.dtype)
    kw = {}
    if out_shape is not None:
        out_shape = tuple(int(n) for n in out_shape)
        if len(out_shape) != first.ndim:
            raise gpux.GpuxUserError(f"out_shape {out_shape} must have the {first.ndim} axes of "
                                     f"the arrays' blocks")
        kw["chunks"] = tuple((n,) * nb for n, nb in zip(out_shape, first.numblocks))
    fn = _BlockKernel(kernel, template, dtype, out_shape, config, fill)
    return _da.map_blocks(fn, *arrays, dtype=dtype, meta=np.empty((0,) * first.ndim, dtype),
                          token=name or f"gpux-{kernel.__name__}", **kw)


def map_overlap(kernel, *args, depth, boundary="reflect", trim: bool = True, dtype=None,
                config=None, fill=None, name: str | None = None) -> "_da.Array":
    """Like :func:`map_blocks`, for stencils: every block is given *depth* more
    elements of its neighbours on each side (``boundary`` says what lies beyond the
    array's edges: ``'reflect'``, ``'periodic'``, ``'nearest'``, ``'none'`` or a
    constant), the kernel runs over the enlarged block and, with *trim*, the halo is
    cut from each output block."""
    _check_kernel(kernel)
    template, arrays = _split_args(args)
    dtype = np.dtype(dtype or arrays[0].dtype)
    fn = _BlockKernel(kernel, template, dtype, None, config, fill)
    return _da.map_overlap(fn, *arrays, depth=depth, boundary=boundary, trim=trim, dtype=dtype,
                           meta=np.empty((0,) * arrays[0].ndim, dtype),
                           token=name or f"gpux-{kernel.__name__}-overlap")


@_normalize_token.register(gpux.GpuxFunction)
def _tokenize_kernel(fn):
    # dask names tasks by a token of their function: a kernel's is its identity
    from numba_gpux.serialize import function_id

    return ("numba_gpux", fn.__qualname__, function_id(fn))


@_normalize_token.register(_BlockKernel)
def _tokenize_block_kernel(b):
    return ("numba_gpux-block", _tokenize_kernel(b.kernel), _normalize_token(b.template),
            str(b.dtype), b.out_shape, _normalize_token(b.config), b.fill)
