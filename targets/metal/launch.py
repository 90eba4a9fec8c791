"""Metal runtime binding (pyobjc-framework-Metal): discovery, memory, libraries, launches.

Off macOS, or without ``pyobjc-framework-Metal``, :func:`discover` returns no
devices and nothing else here is used.  Buffers use shared storage (unified
memory), so transfers are copies through ``MTLBuffer.contents()``.  Scalar
kernel arguments are packed into one argument block (see ``msl.py``) with
NumPy's C-layout structured dtypes; buffers bind at 1, 2, ...
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from numba_gpux.devices import Device
from numba_gpux.interface import Runtime

__all__ = ["discover", "MetalRuntime"]


def discover() -> list[Device]:
    if sys.platform != "darwin":
        return []
    try:
        import Metal
    except ImportError:
        return []
    try:
        devs = list(Metal.MTLCopyAllDevices() or [])
        if not devs:
            d = Metal.MTLCreateSystemDefaultDevice()
            devs = [d] if d is not None else []
    except Exception:
        return []
    found = []
    for n, d in enumerate(devs):
        try:
            limits = {
                "max_threads_per_block": int(d.maxThreadsPerThreadgroup().width),
                "max_shared_bytes": int(d.maxThreadgroupMemoryLength()),
                "max_alloc_bytes": int(d.maxBufferLength()),
            }
            from .target import INDEX_LIMITS  # what the compiler assumes

            limits["max_grid_dims"] = INDEX_LIMITS.grid
        except Exception:
            limits = {}
        found.append(Device(target_name="metal", index=n, name=str(d.name()), kind="gpu",
                            vendor="Apple", runtime=MetalRuntime(d), limits=limits,
                            target_features=frozenset({"fp16", "subgroups"}), platform="Metal",
                            kind_index=n))
    return found


class _Kernel:
    __slots__ = ("pso", "name", "slots", "dtype", "scalar_pos", "dsmem")

    def __init__(self, pso, name, dsmem=False):
        self.pso, self.name, self.dsmem = pso, name, dsmem
        self.slots, self.dtype, self.scalar_pos = [], None, []


class MetalRuntime(Runtime):
    """One Metal device, its command queue, and the last command buffer committed."""

    def __init__(self, mtl_device):
        self.device = mtl_device
        self._queue = None
        self._last = None
        self._lock = threading.Lock()

    @property
    def queue(self):
        if self._queue is None:
            with self._lock:
                if self._queue is None:
                    self._queue = self.device.newCommandQueue()
        return self._queue

    # -- memory ---------------------------------------------------------------
    def alloc(self, nbytes: int):
        import Metal

        return self.device.newBufferWithLength_options_(max(int(nbytes), 1),
                                                        Metal.MTLResourceStorageModeShared)

    def free(self, handle) -> None:
        pass  # released with the last Python reference

    def _view(self, handle) -> np.ndarray:
        mv = handle.contents().as_buffer(handle.length())
        return np.frombuffer(mv, dtype=np.uint8)

    def write(self, handle, offset: int, host: np.ndarray, queue=None) -> None:
        self.synchronize()
        src = np.ascontiguousarray(host).view(np.uint8).reshape(-1)
        self._view(handle)[int(offset):int(offset) + src.size] = src

    def read(self, host: np.ndarray, handle, offset: int, queue=None) -> None:
        self.synchronize()
        dst = host.view(np.uint8).reshape(-1)
        dst[:] = self._view(handle)[int(offset):int(offset) + dst.size]

    # -- code -----------------------------------------------------------------
    def load(self, artifact):
        import Metal

        from numba_gpux.errors import InternalCompilerError

        opts = Metal.MTLCompileOptions.new()
        opts.setFastMathEnabled_(False)
        lib, err = self.device.newLibraryWithSource_options_error_(artifact.text, opts, None)
        if lib is None:
            raise InternalCompilerError("load", f"the Metal compiler rejected the generated MSL: "
                                        f"{err}", artifact.text)
        # kernels reading dynamic shared memory take a threadgroup buffer (msl.py)
        return lib, "_gpux_dsmem" in artifact.text

    def kernel(self, program, name: str):
        from numba_gpux.errors import InternalCompilerError

        program, dsmem = program
        fn = program.newFunctionWithName_(name)
        if fn is None:
            raise InternalCompilerError("load", f"kernel {name} is not in the Metal library")
        pso, err = self.device.newComputePipelineStateWithFunction_error_(fn, None)
        if pso is None:
            raise InternalCompilerError("load", f"Metal pipeline state for {name}: {err}")
        return _Kernel(pso, name, dsmem)

    def prepare(self, kernel, params) -> None:
        """Buffers bind at 1, 2, ...; scalars go, in order, into the argument block at 0."""
        fields = []
        slot = 1
        for pos, (kind, t) in enumerate(params):
            if kind == "buffer":
                kernel.slots.append((pos, slot))
                slot += 1
            else:
                dt = np.int64 if kind == "i64" else t
                fields.append((f"f{len(fields)}", np.dtype(dt)))
                kernel.scalar_pos.append(pos)
        kernel.dtype = np.dtype(fields, align=True) if fields else None

    def launch(self, kernel, griddim, blockdim, args, shared_bytes, queue) -> None:
        import Metal

        cb = self.queue.commandBuffer()
        enc = cb.computeCommandEncoder()
        enc.setComputePipelineState_(kernel.pso)
        if kernel.dtype is not None:
            block = np.zeros((), kernel.dtype)
            for n, pos in enumerate(kernel.scalar_pos):
                block[f"f{n}"] = args[pos]
            data = block.tobytes()
            enc.setBytes_length_atIndex_(data, len(data), 0)
        for pos, slot in kernel.slots:
            enc.setBuffer_offset_atIndex_(args[pos], 0, slot)
        if kernel.dsmem:
            from .msl import DSMEM_BYTES_INDEX

            # threadgroup memory lengths are multiples of 16 bytes and not zero
            enc.setThreadgroupMemoryLength_atIndex_(max(16, (int(shared_bytes) + 15) // 16 * 16), 0)
            size = np.uint64(shared_bytes).tobytes()
            enc.setBytes_length_atIndex_(size, len(size), DSMEM_BYTES_INDEX)
        enc.dispatchThreadgroups_threadsPerThreadgroup_(Metal.MTLSizeMake(*griddim),
                                                        Metal.MTLSizeMake(*blockdim))
        enc.endEncoding()
        cb.commit()
        self._last = cb

    def synchronize(self, queue=None) -> None:
        cb, self._last = self._last, None
        if cb is not None:
            cb.waitUntilCompleted()
