"""CUDA runtime binding on cuda-python's driver API (``cuda.bindings.driver``).

Discovery returns ``[]`` when cuda-python, the driver or a GPU is missing.
One primary context per device, made current lazily on each thread that uses
it.  Allocations are plain ``cuMemAlloc`` device pointers (ints), so the
launch path passes an array's pointer with its byte offset added, and a launch
packs the flat parameters into one buffer of 8-byte slots.  Implements the
runtime contract (``numba_gpux.interface.Runtime``).
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading
import weakref

import numpy as np

from numba_gpux.devices import Device
from numba_gpux.errors import DriverError, GpuxUserError, LaunchError
from numba_gpux.interface import Runtime
from numba_gpux.waiting import wait_blocking

__all__ = ["discover", "CUDARuntime", "CUDAError", "cluster_launch_config"]


class CUDAError(DriverError):
    """A CUDA driver call failed."""


_drv = None
#: this process initialized the driver: a child forked after that cannot use CUDA
_initialized = False
#: this process was forked after its parent initialized the driver
_forked = False


def _after_fork_in_child() -> None:
    global _forked
    _forked = _initialized


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_after_fork_in_child)


#: the CUDA driver's library as the dynamic loader names it (cuda-python loads it so)
_DRIVER_LIBRARY = "nvcuda.dll" if os.name == "nt" else "libcuda.so.1"


def _driver_library_loads() -> bool:
    """Whether the loader finds the driver's library: without it cuda-python's driver
    binding cannot work, and importing it costs some 25 ms of a first device look-up."""
    try:
        ctypes.CDLL(_DRIVER_LIBRARY)
    except OSError:
        return False
    return True


def _driver():
    global _drv
    if _drv is None:
        from cuda.bindings import driver

        _drv = driver
    return _drv


#: bytes of the driver's JIT error log that a failed PTX load reports
JIT_LOG_BYTES = 64 * 1024


def _jit_error_log(drv, image: bytes) -> str:
    """The driver's JIT error log for the PTX *image* that just failed to load: loaded
    once more with a log buffer (cuModuleLoadDataEx).  Only for the error message: a
    driver or binding that cannot say gives '' (and a module that loads this time is
    unloaded again)."""
    try:
        buf = bytearray(JIT_LOG_BYTES)
        opt = drv.CUjit_option
        err, mod = drv.cuModuleLoadDataEx(
            image, 2, [opt.CU_JIT_ERROR_LOG_BUFFER, opt.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES],
            [buf, JIT_LOG_BYTES])
        if err == drv.CUresult.CUDA_SUCCESS:
            drv.cuModuleUnload(mod)
        return bytes(buf).split(b"\0", 1)[0].decode(errors="replace").strip()
    except Exception:  # noqa: BLE001 - the log is a courtesy of the error message
        return ""


def _check_fork() -> None:
    """A process forked after its parent initialized CUDA cannot use the driver (its
    calls fail with CUDA_ERROR_NOT_INITIALIZED): numba.cuda's error, which says why."""
    if _forked:
        raise CUDAError("CUDA initialized before forking: a process forked after its "
                        "parent used CUDA cannot use it (start workers with the 'spawn' "
                        "or 'forkserver' method)")


def _check(result):
    """cuda-python returns (CUresult, values...); raise on an error, return the values."""
    err, *rest = result if isinstance(result, tuple) else (result,)
    drv = _driver()
    if err != drv.CUresult.CUDA_SUCCESS:
        _check_fork()
        _, name = drv.cuGetErrorName(err)
        _, text = drv.cuGetErrorString(err)
        name = name.decode() if isinstance(name, bytes) else str(name)
        text = text.decode() if isinstance(text, bytes) else str(text)
        raise CUDAError(f"{name}: {text}")
    if not rest:
        return None
    return rest[0] if len(rest) == 1 else tuple(rest)


_ATTRS = {
    "max_threads_per_block": "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK",
    "max_block_dim_x": "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X",
    "max_block_dim_y": "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y",
    "max_block_dim_z": "CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z",
    "max_grid_dim_x": "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X",
    "max_grid_dim_y": "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y",
    "max_grid_dim_z": "CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z",
    "max_shared_bytes": "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN",
    "default_shared_bytes": "CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK",
    "compute_units": "CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT",
    "warp_size": "CU_DEVICE_ATTRIBUTE_WARP_SIZE",
    "cc_major": "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR",
    "cc_minor": "CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR",
}


def _attribute(drv, dev, which) -> int:
    """The driver's attribute *which* (a ``CUdevice_attribute``) of *dev*."""
    return int(_check(drv.cuDeviceGetAttribute(which, dev)))


def _attributes(drv, dev) -> dict:
    return {key: _attribute(drv, dev, getattr(drv.CUdevice_attribute, name))
            for key, name in _ATTRS.items()}


def discover() -> list[Device]:
    """Every CUDA GPU, or [] without cuda-python, a driver or a GPU (never raises)."""
    if not _driver_library_loads():
        return []
    try:
        drv = _driver()
        _check(drv.cuInit(0))
        global _initialized
        _initialized = True
        count = int(_check(drv.cuDeviceGetCount()))
    except Exception:
        return []
    found: list[Device] = []
    for i in range(count):
        try:
            dev = _check(drv.cuDeviceGet(i))
            raw = _check(drv.cuDeviceGetName(256, dev))
            name = raw.split(b"\0", 1)[0].decode(errors="replace").strip()
            a = _attributes(drv, dev)
            total = int(_check(drv.cuDeviceTotalMem(dev)))
            version = int(_check(drv.cuDriverGetVersion()))
        except Exception:
            continue
        cc = (a["cc_major"], a["cc_minor"])
        limits = {
            "compute_capability": cc,
            "max_threads_per_block": a["max_threads_per_block"],
            "max_block_dims": (a["max_block_dim_x"], a["max_block_dim_y"], a["max_block_dim_z"]),
            "max_grid_dims": (a["max_grid_dim_x"], a["max_grid_dim_y"], a["max_grid_dim_z"]),
            "max_shared_bytes": a["max_shared_bytes"],
            "default_shared_bytes": a["default_shared_bytes"],
            "compute_units": a["compute_units"],
            "warp_size": a["warp_size"],
            "global_mem_bytes": total,
            "driver_version": f"{version // 1000}.{version % 1000 // 10}",
        }
        feats = frozenset({"fp64", "int64_atomics", "float_atomics", "subgroups"}
                          | ({"fp16"} if cc >= (5, 3) else set()))
        found.append(Device(
            target_name="cuda", index=len(found), name=name, kind="gpu", vendor="NVIDIA",
            runtime=CUDARuntime(i, dev, limits), limits=limits, target_features=feats,
            platform="CUDA", kind_index=len(found)))
    return found


#: dropped modules waiting to be unloaded before a load synchronizes the context to
#: unload them (see CUDARuntime.load)
DEAD_MODULES_MAX = 64

# struct formats of one 8-byte kernel-parameter slot per ABI leaf
_SLOT = {np.dtype(np.float32): "f4x", np.dtype(np.float64): "d", np.dtype(np.int8): "b7x",
         np.dtype(np.uint8): "B7x", np.dtype(np.int16): "h6x", np.dtype(np.uint16): "H6x",
         np.dtype(np.int32): "i4x", np.dtype(np.uint32): "I4x", np.dtype(np.int64): "q",
         np.dtype(np.uint64): "Q", np.dtype(np.float16): "e6x", np.dtype(np.bool_): "?7x"}


class _Module:
    """A loaded CUmodule, unloaded once nothing uses it (see :meth:`CUDARuntime.load`)."""

    __slots__ = ("handle", "__weakref__")

    def __init__(self, handle):
        self.handle = handle


class _Kernel:
    """A loaded CUfunction and its parameter buffer (see :meth:`CUDARuntime.prepare`)."""

    __slots__ = ("function", "name", "module", "packer", "buffer", "pointers", "lock",
                 "shared_set", "nonportable")

    def __init__(self, function, name, module):
        self.function = function
        self.name = name
        self.module = module  # keeps the module loaded while the kernel lives
        #: clusters of more than 8 blocks were allowed (cluster launches)
        self.nonportable = False
        #: ``pack_into(buffer, 0, *flat_args)``: one 8-byte slot per parameter
        self.packer = None
        self.buffer = None
        self.pointers = 0
        self.lock = threading.Lock()
        self.shared_set = 0


def cluster_launch_config(drv, griddim, blockdim, shared_bytes: int, stream: int, cluster):
    """The ``CUlaunchConfig`` of cuLaunchKernelEx for a launch of *griddim* blocks of
    *blockdim* threads in thread-block clusters of *cluster* blocks (3-tuples each;
    the cluster-dimension launch attribute), on the CUstream *stream* (an int)."""
    config = drv.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = (int(g) for g in griddim)
    config.blockDimX, config.blockDimY, config.blockDimZ = (int(b) for b in blockdim)
    config.sharedMemBytes = int(shared_bytes)
    config.hStream = drv.CUstream(int(stream))
    attr = drv.CUlaunchAttribute()
    attr.id = drv.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    dim = attr.value.clusterDim
    dim.x, dim.y, dim.z = (int(c) for c in cluster)
    config.attrs = [attr]
    config.numAttrs = 1
    return config


def parameter_format(params) -> str:
    """The struct format of the parameter buffer of a kernel with the flat parameters
    *params* (``interface.PARAM_KINDS``): one 8-byte slot each, little-endian."""
    fmt = ["<"]
    for kind, t in params:
        if kind in ("buffer", "i64"):
            fmt.append("q" if kind == "i64" else "Q")
        elif kind == "i8":
            fmt.append("b7x")
        else:
            fmt.append(_SLOT[np.dtype(t)])
    return "".join(fmt)


class CUDARuntime(Runtime):
    """One CUDA device: its primary context, default stream, memory, modules and launches."""

    #: allocations are device addresses: integer device pointers are real ones
    #: (memory.device_pointer), and one into no numba_gpux allocation passes as it is
    buffers_are_addresses = True
    #: an array's pointer is its buffer plus its byte offset: this target defines
    #: ``__gpux_array_offset`` as 0 (overlays), so the kernel neither loads nor keeps
    #: the offset live
    pointer_includes_offset = True

    #: a launch whose queue carries ``gpux_cluster`` (a 3-tuple of blocks) runs in
    #: thread-block clusters of that shape: on devices of compute capability 9.0+
    @property
    def launches_clusters(self) -> bool:
        return tuple(self.limits.get("compute_capability", (0, 0))) >= (9, 0)

    def __init__(self, ordinal: int, cu_device, limits: dict):
        self.ordinal = ordinal
        self.cu_device = cu_device
        self.limits = limits
        self._ctx = None
        self._lock = threading.Lock()
        self._tls = threading.local()
        #: a kernel was launched since the last completed context-wide synchronize: a
        #: wait may be long, so it goes through numba_gpux.waiting (Ctrl-C is handled)
        self.busy = False
        #: modules whose program was dropped, unloaded once no launch can still use them
        self._dead_modules: list = []
        #: modules loaded and not yet unloaded
        self.loaded_modules = 0
        #: the device malloc heap's size last set (set_heap_size), None: the driver's
        self._heap_size: int | None = None

    def device_attribute(self, name: str) -> int | None:
        """The driver's ``CU_DEVICE_ATTRIBUTE_<name>`` of this device (numba.cuda's
        ``device.<NAME>``), or None if the driver has no attribute of that name."""
        drv = _driver()
        which = getattr(drv.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}", None)
        return None if which is None else _attribute(drv, self.cu_device, which)

    def is_device_address(self, address: int) -> bool | None:
        """Whether the driver knows *address* as memory of a context (device, pinned,
        managed or another library's allocation): a made-up address or a freed one is
        refused before a kernel would fault on it and leave the context unusable."""
        drv = _driver()
        self._current()
        err, _ = drv.cuPointerGetAttribute(
            drv.CUpointer_attribute.CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, address)
        return err == drv.CUresult.CUDA_SUCCESS

    def can_access_peer(self, other) -> bool:
        """Whether this device's kernels can access *other*'s memory directly
        (cuDeviceCanAccessPeer; numba.cuda's ``context.can_access_peer``)."""
        if not isinstance(other, CUDARuntime):  # not a CUDA device
            return False
        return bool(_check(_driver().cuDeviceCanAccessPeer(self.cu_device, other.cu_device)))

    # -- context --------------------------------------------------------------
    def _current(self):
        """Make this device's primary context current on the calling thread."""
        if getattr(self._tls, "ctx", None) is None or _forked:
            _check_fork()
            drv = _driver()
            with self._lock:
                if self._ctx is None:
                    self._ctx = _check(drv.cuDevicePrimaryCtxRetain(self.cu_device))
            _check(drv.cuCtxSetCurrent(self._ctx))
            self._tls.ctx = self._ctx
        return self._ctx

    @staticmethod
    def _stream(queue) -> int:
        """The CUstream handle (an int; 0 = the default stream) of *queue*: one of
        ours, an object carrying one as ``.gpux_queue``, or a foreign stream object
        (PyTorch's ``.cuda_stream``, CuPy's ``.ptr``)."""
        if queue is None or queue == 0:
            return 0
        q = getattr(queue, "gpux_queue", queue)
        if q is None:
            return 0
        protocol = getattr(q, "__cuda_stream__", None)  # cuda.core's Stream, CuPy 14...
        if protocol is not None:
            return int(protocol()[1])
        for attr in ("cuda_stream", "ptr"):
            v = getattr(q, attr, None)
            if isinstance(v, int):
                return v
        return int(q)

    def _wait(self, fn):
        """``fn()``, a driver call that may block until the device has finished earlier
        work: through numba_gpux.waiting once a kernel may be running (Ctrl-C raises at
        once); the call runs with this device's context current on whichever thread
        makes it."""
        if not self.busy:
            return fn()

        def call():
            self._current()
            return fn()

        return wait_blocking(call)

    # -- memory ---------------------------------------------------------------
    def alloc(self, nbytes: int) -> int:
        self._current()
        drv = _driver()
        try:
            return int(_check(drv.cuMemAlloc(int(nbytes))))
        except CUDAError as e:
            raise GpuxUserError(f"cannot allocate {nbytes} bytes on CUDA device "
                                f"{self.ordinal}: {e}") from None

    def free(self, handle) -> None:
        if handle:
            drv = _driver()
            self._current()
            drv.cuMemFree(drv.CUdeviceptr(int(handle)))

    def write(self, handle, offset: int, host: np.ndarray, queue=None) -> None:
        self._current()
        drv = _driver()
        host = np.ascontiguousarray(host) if not (host.flags.c_contiguous or
                                                  host.flags.f_contiguous) else host
        s = self._stream(queue)
        dst = drv.CUdeviceptr(int(handle) + int(offset))

        def copy():  # holds *host* until the copy is done, also after an interrupt
            _check(drv.cuMemcpyHtoDAsync(dst, host.ctypes.data, host.nbytes, s))
            _check(drv.cuStreamSynchronize(s))

        self._wait(copy)

    def read(self, host: np.ndarray, handle, offset: int, queue=None) -> None:
        self._current()
        drv = _driver()
        s = self._stream(queue)
        src = drv.CUdeviceptr(int(handle) + int(offset))

        def copy():  # a copy into pageable memory blocks until it is done
            _check(drv.cuMemcpyDtoHAsync(host.ctypes.data, src, host.nbytes, s))
            _check(drv.cuStreamSynchronize(s))

        self._wait(copy)

    def copy(self, dst, dst_offset: int, src, src_offset: int, nbytes: int, queue=None) -> None:
        """Device-to-device copy (ordered on *queue*)."""
        self._current()
        drv = _driver()
        _check(drv.cuMemcpyDtoDAsync(drv.CUdeviceptr(int(dst) + int(dst_offset)),
                                     drv.CUdeviceptr(int(src) + int(src_offset)),
                                     int(nbytes), self._stream(queue)))

    def memset(self, handle, offset: int, byte: int, nbytes: int, queue=None) -> None:
        """cuMemsetD8Async on *queue*; on the default stream, waited for (numba.cuda's
        ``device_memset`` without a stream is synchronous)."""
        self._current()
        drv = _driver()
        s = self._stream(queue)
        _check(drv.cuMemsetD8Async(drv.CUdeviceptr(int(handle) + int(offset)),
                                   int(byte) & 0xFF, int(nbytes), s))
        if s == 0:
            self._wait(lambda: _check(drv.cuStreamSynchronize(0)))

    def memory_info(self) -> tuple[int, int]:
        """(free, total) bytes of this device (cuMemGetInfo)."""
        self._current()
        free, total = _check(_driver().cuMemGetInfo())
        return int(free), int(total)

    def host_register(self, address: int, nbytes: int, mapped: bool = False) -> tuple:
        """cuMemHostRegister (portable: every context; with *mapped*, device-mapped, and the
        buffer is its device address from cuMemHostGetDevicePointer)."""
        self._current()
        drv = _driver()
        flags = drv.CU_MEMHOSTREGISTER_PORTABLE
        if mapped:
            flags |= drv.CU_MEMHOSTREGISTER_DEVICEMAP
        token = int(address)
        err = drv.cuMemHostRegister(int(address), int(nbytes), flags)
        err = err[0] if isinstance(err, tuple) else err
        if err == drv.CUresult.CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
            # pages of the range are pinned already (by another array sharing a page, or
            # by other code): the memory is pinned, and it is not ours to unregister
            token = None
        else:
            _check((err,))
        buf = None
        if mapped:
            buf = int(_check(drv.cuMemHostGetDevicePointer(int(address), 0)))
        return token, buf

    def host_unregister(self, token) -> None:
        if token is not None:
            self._current()
            _check(_driver().cuMemHostUnregister(int(token)))

    def alloc_managed(self, nbytes: int, attach_global: bool = True) -> tuple:
        """cuMemAllocManaged: the same address on the host and the device."""
        self._current()
        drv = _driver()
        flag = (drv.CUmemAttach_flags.CU_MEM_ATTACH_GLOBAL if attach_global
                else drv.CUmemAttach_flags.CU_MEM_ATTACH_HOST)
        try:
            ptr = int(_check(drv.cuMemAllocManaged(max(int(nbytes), 1), flag.value)))
        except CUDAError as e:
            raise GpuxUserError(f"cannot allocate {nbytes} bytes of managed memory on CUDA "
                                f"device {self.ordinal}: {e}") from None
        return ptr, ptr, None

    # -- code -----------------------------------------------------------------
    def load(self, artifact) -> _Module:
        """A CUmodule from the artifact's cubin (if it loads) or else its PTX (driver JIT).

        The module is unloaded when the program (and every kernel from it) is dropped,
        so that programs live as long as kernels can launch them (numba_gpux.launch
        keeps a bounded number of recent ones besides).  A launch may still be running
        then, so the unload waits for a context-wide synchronize: the next one, or one
        made here once :data:`DEAD_MODULES_MAX` dropped modules are waiting."""
        self._current()
        if len(self._dead_modules) >= DEAD_MODULES_MAX:
            self._synchronize_context()
        drv = _driver()
        errors = []
        if artifact.binary:
            try:
                return self._module(_check(drv.cuModuleLoadData(artifact.binary)))
            except CUDAError as e:  # e.g. a cubin from a newer ptxas than the driver
                errors.append(f"cubin: {e}")
        ptx = artifact.text
        if ptx is None:
            raise LaunchError(f"CUDA cannot load a {artifact.kind} artifact without PTX")
        if artifact.info.get("link"):  # foreign code to link: the driver's linker
            return self._load_linked(drv, artifact, errors)
        image = ptx.encode() + b"\0"
        try:
            return self._module(_check(drv.cuModuleLoadData(image)))
        except CUDAError as e:
            from numba_gpux.errors import InternalCompilerError

            errors.append(f"PTX: {e}")
            names = ", ".join(artifact.kernels) or "a module without kernels"
            log = _jit_error_log(drv, image)
            log = f"\n--- driver JIT log ---\n{log}\n--- end of log ---" if log else ""
            raise InternalCompilerError("load", f"the CUDA driver rejected the module of {names} ("
                                        + "; ".join(errors) + ")" + log, ptx) from None

    def _load_linked(self, drv, artifact, errors: list) -> _Module:
        """The module of the kernel's PTX linked with its foreign code by the driver's
        linker (linker.py), where no linked cubin was made or loaded."""
        from .linker import link_driver

        images = artifact.info.get("link_images")
        names = ", ".join(artifact.kernels) or "module"
        if images is None:
            raise LaunchError(f"the code of {names} was compiled without linking its "
                              f"foreign code (a PTX-only compile): it cannot be loaded")
        cubin = link_driver(drv, _check, artifact.text, names, images)
        try:
            return self._module(_check(drv.cuModuleLoadData(cubin)))
        except CUDAError as e:
            errors.append(f"linked cubin: {e}")
            raise LaunchError(f"the CUDA driver rejected the linked module of {names} ("
                              + "; ".join(errors) + ")") from None

    def _module(self, handle) -> _Module:
        mod = _Module(handle)
        self.loaded_modules += 1
        # not at exit: the driver unloads everything itself when the process ends
        weakref.finalize(mod, self._dead_modules.append, handle).atexit = False
        return mod

    def _unload_dead(self) -> None:
        """Unload the dropped modules (after a context-wide synchronize: no launch
        from them can be running)."""
        drv = _driver()
        while self._dead_modules:
            try:
                handle = self._dead_modules.pop()
            except IndexError:  # another thread took the last one
                break
            drv.cuModuleUnload(handle)
            self.loaded_modules -= 1

    def kernel(self, program: _Module, name: str) -> _Kernel:
        self._current()
        fn = _check(_driver().cuModuleGetFunction(program.handle, name.encode()))
        return _Kernel(fn, name, program)

    def kernel_attributes(self, kernel: _Kernel) -> dict:
        """What the driver reports of a loaded kernel (cuFuncGetAttribute)."""
        drv = _driver()
        attr = drv.CUfunction_attribute
        ask = lambda what: int(_check(drv.cuFuncGetAttribute(what, kernel.function)))  # noqa: E731
        return {"max_threads_per_block": ask(attr.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
                "shared_mem_per_block": ask(attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
                "local_mem_per_thread": ask(attr.CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
                "const_mem_size": ask(attr.CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES),
                "regs_per_thread": ask(attr.CU_FUNC_ATTRIBUTE_NUM_REGS)}

    def set_heap_size(self, nbytes: int) -> None:
        """The device malloc heap's size (cudaLimitMallocHeapSize), which arrays that
        kernels make come from; the driver takes it before the context's first launch
        that uses malloc, and refuses a change after.  Set once per size asked for."""
        nbytes = int(nbytes)
        if self._heap_size == nbytes:
            return
        self._current()
        drv = _driver()
        _check(drv.cuCtxSetLimit(drv.CUlimit.CU_LIMIT_MALLOC_HEAP_SIZE, nbytes))
        self._heap_size = nbytes

    def set_shared_memory_carveout(self, kernel: _Kernel, percent: int) -> None:
        """The kernel's preferred share of L1/shared memory for shared memory."""
        drv = _driver()
        attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
        _check(drv.cuFuncSetAttribute(kernel.function, attr, percent))

    def set_cache_config(self, kernel: _Kernel, prefer: str) -> None:
        """The kernel's preferred L1/shared split (cuFuncSetCacheConfig)."""
        drv = _driver()
        flag = {"none": "CU_FUNC_CACHE_PREFER_NONE", "shared": "CU_FUNC_CACHE_PREFER_SHARED",
                "cache": "CU_FUNC_CACHE_PREFER_L1", "equal": "CU_FUNC_CACHE_PREFER_EQUAL"}[prefer]
        self._current()
        _check(drv.cuFuncSetCacheConfig(kernel.function, getattr(drv.CUfunc_cache, flag)))

    def native_handle(self, kernel: _Kernel):
        """The kernel's ``CUfunction`` (cuda.bindings)."""
        return kernel.function

    def prepare(self, kernel: _Kernel, params) -> None:
        """The kernel's parameter buffer: one 8-byte slot per parameter, and the array
        of pointers to the slots that cuLaunchKernel takes."""
        n = len(params)
        kernel.packer = struct.Struct(parameter_format(params)).pack_into
        kernel.buffer = ctypes.create_string_buffer(max(8 * n, 8))
        base = ctypes.addressof(kernel.buffer)
        ptrs = (ctypes.c_void_p * max(n, 1))(*[base + 8 * i for i in range(n)])
        kernel.pointers = ptrs
        kernel.shared_set = self.limits.get("default_shared_bytes", 48 * 1024)

    def cooperative_groups(self, kernel: _Kernel, block_threads: int, shared_bytes: int) -> int:
        """Blocks of *kernel* resident at once on the whole device, as numba.cuda's
        ``max_cooperative_grid_blocks``: the driver's occupancy of one multiprocessor
        (cuOccupancyMaxActiveBlocksPerMultiprocessor) times their number."""
        self._current()
        drv = _driver()
        per_sm = int(_check(drv.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            kernel.function, int(block_threads), int(shared_bytes))))
        sms = self.device_attribute("MULTIPROCESSOR_COUNT") or 0
        return per_sm * int(sms)

    def launch_cooperative(self, kernel: _Kernel, griddim, blockdim, args, shared_bytes,
                           queue) -> None:
        """``launch`` through cuLaunchCooperativeKernel: the driver runs all blocks at
        once (or refuses a grid larger than the device holds)."""
        self.launch(kernel, griddim, blockdim, args, shared_bytes, queue, cooperative=True)

    def launch(self, kernel: _Kernel, griddim, blockdim, args, shared_bytes, queue,
               cooperative: bool = False) -> None:
        self._current()
        drv = _driver()
        if shared_bytes > kernel.shared_set:  # above 48 KiB: opt in per kernel
            _check(drv.cuFuncSetAttribute(
                kernel.function,
                drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                int(shared_bytes)))
            kernel.shared_set = int(shared_bytes)
        cluster = getattr(queue, "gpux_cluster", None)
        if cluster is not None:
            self._prepare_cluster(kernel, cluster, cooperative)
        self.busy = True
        with kernel.lock:  # the driver copies the parameters before cuLaunchKernel returns
            kernel.packer(kernel.buffer, 0, *args)
            if cluster is not None:
                config = cluster_launch_config(drv, griddim, blockdim, int(shared_bytes),
                                               self._stream(queue), cluster)
                _check(drv.cuLaunchKernelEx(config, kernel.function,
                                            ctypes.addressof(kernel.pointers), 0))
                return
            if cooperative:
                _check(drv.cuLaunchCooperativeKernel(
                    kernel.function, griddim[0], griddim[1], griddim[2],
                    blockdim[0], blockdim[1], blockdim[2], int(shared_bytes),
                    self._stream(queue), ctypes.addressof(kernel.pointers)))
                return
            _check(drv.cuLaunchKernel(
                kernel.function, griddim[0], griddim[1], griddim[2],
                blockdim[0], blockdim[1], blockdim[2], int(shared_bytes),
                self._stream(queue), ctypes.addressof(kernel.pointers), 0))

    def _prepare_cluster(self, kernel: _Kernel, cluster, cooperative: bool) -> None:
        """Check a launch in clusters of *cluster* blocks on this device; more than the
        portable 8 blocks per cluster are allowed to the kernel (the driver refuses
        what the device cannot)."""
        if not self.launches_clusters:
            cc = self.limits.get("compute_capability", (0, 0))
            raise LaunchError(f"thread-block clusters need compute capability 9.0 or newer; "
                              f"this device has {cc[0]}.{cc[1]}")
        if cooperative:
            raise LaunchError("a kernel that synchronizes its grid cannot be launched in "
                              "thread-block clusters here (give cluster=1)")
        if cluster[0] * cluster[1] * cluster[2] > 8 and not kernel.nonportable:
            drv = _driver()
            attr = drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED
            _check(drv.cuFuncSetAttribute(kernel.function, attr, 1))
            kernel.nonportable = True

    def synchronize(self, queue=None) -> None:
        self._current()
        drv = _driver()
        s = self._stream(queue)
        if s == 0:
            self._synchronize_context()
        else:
            self._wait(lambda: _check(drv.cuStreamSynchronize(s)))

    def _synchronize_context(self) -> None:
        """Wait for all work of this device's context; then nothing of ours is running,
        so dropped modules are unloaded and later waits are direct until a launch."""
        drv = _driver()
        self._wait(lambda: _check(drv.cuCtxSynchronize()))
        self.busy = False
        if self._dead_modules:
            self._unload_dead()

    def idle(self) -> bool:
        """Nothing launched since the last context-wide synchronize (asked of no driver)."""
        return not self.busy

    # -- queues and events ------------------------------------------------------
    def new_queue(self):
        """A new non-blocking stream on this device."""
        self._current()
        drv = _driver()
        return _check(drv.cuStreamCreate(drv.CUstream_flags.CU_STREAM_NON_BLOCKING.value))

    def release_queue(self, queue) -> None:
        """cuStreamDestroy (the driver releases the stream once its work is done)."""
        self._current()
        _driver().cuStreamDestroy(queue)

    def release_event(self, event) -> None:
        self._current()
        _driver().cuEventDestroy(event)

    def adopt_queue(self, handle: int):
        """Another library's CUstream (an int handle): launches and copies use it."""
        return int(handle)

    def record_event(self, queue=None):
        self._current()
        drv = _driver()
        ev = _check(drv.cuEventCreate(drv.CUevent_flags.CU_EVENT_DEFAULT.value))
        _check(drv.cuEventRecord(ev, self._stream(queue)))
        return ev

    def event_query(self, event) -> bool:
        drv = _driver()
        err = drv.cuEventQuery(event)[0]
        if err == drv.CUresult.CUDA_ERROR_NOT_READY:
            return False
        _check((err,))
        return True

    def event_synchronize(self, event) -> None:
        drv = _driver()

        def call():
            self._current()
            _check(drv.cuEventSynchronize(event))

        wait_blocking(call)

    def event_wait(self, event, queue=None) -> None:
        self._current()
        _check(_driver().cuStreamWaitEvent(self._stream(queue), event, 0))

    def event_elapsed_ms(self, start, end) -> float:
        return float(_check(_driver().cuEventElapsedTime(start, end)))

    # -- interop ------------------------------------------------------------------
    def array_interface(self, handle, offset, shape, strides, dtype, readonly=False,
                        queue=None) -> dict:
        """``__cuda_array_interface__`` (version 3) of a view on one of our allocations."""
        from numba_gpux import cai

        stream = self._stream(queue)
        return cai.write(int(handle) + int(offset), shape, strides, dtype, readonly,
                         int(stream) if stream else None)

    def foreign_array(self, obj):
        """(pointer, byte offset, shape, strides in bytes, dtype, owner) of an object
        exposing ``__cuda_array_interface__`` (CuPy, PyTorch, Numba, JAX...) or
        ``__dlpack__`` on a CUDA device; None for anything else."""
        cai = getattr(obj, "__cuda_array_interface__", None)
        if cai is None:
            from .interop import from_dlpack

            return from_dlpack(obj)
        from numba_gpux import cai as _cai

        low, shape, strides, dtype = _cai.read(cai)
        stream = cai.get("stream")
        if stream not in (None, 0, 1, 2):
            # the producer's work on its stream must finish before ours reads the data
            self._current()
            drv = _driver()
            self._wait(lambda: _check(drv.cuStreamSynchronize(int(stream))))
        ptr = int(cai["data"][0] or 0)
        return low, ptr - low, shape, strides, dtype, obj

    def array_attribute(self, array, name: str):
        """``__cuda_array_interface__``, ``__dlpack__`` and ``__dlpack_device__`` of
        our device arrays."""
        if name == "__cuda_array_interface__":
            return self.array_interface(array.handle, array.offset, array.shape, array.strides,
                                        array.dtype)
        if name in ("__dlpack__", "__dlpack_device__"):
            from . import interop

            return getattr(interop, name.strip("_"))(self, array)
        raise AttributeError(f"'DeviceArray' object has no attribute {name!r}")
