"""A runtime that implements only the required part of the contract
(``numba_gpux.interface.Runtime``), written directly over pyopencl, and the target
entry that registers its devices as ``minimal``.

It is what a new back end starts from: memory, programs, kernels, launches and a
wait, on one in-order queue.  Everything optional (launchers from ``prepare``,
kernel attributes, program binaries, queues and events, foreign arrays...) is the
base class's default.  The devices run the OpenCL target's code (SPIR-V), so the
launch follows that target's ABI: scalars as their bytes (``packed_scalars``), and
a kernel that takes dynamic shared memory has two more parameters, a ``__local``
buffer and its size.
"""

from __future__ import annotations

import warnings

import numpy as np

from numba_gpux.devices import Device
from numba_gpux.interface import Runtime, TargetEntry

__all__ = ["MinimalRuntime", "REQUIRED", "target_entry"]

#: what the contract requires of every runtime
REQUIRED = ("alloc", "free", "write", "read", "load", "kernel", "launch", "synchronize")


class MinimalRuntime(Runtime):
    """One OpenCL device, one context, one in-order queue."""

    packed_scalars = True  # clSetKernelArg takes a scalar's bytes

    def __init__(self, cl_device):
        import pyopencl as cl

        self.cl = cl
        self.context = cl.Context([cl_device])
        self.queue = cl.CommandQueue(self.context)
        #: kernels launched (the contract test checks that each test ran here)
        self.launches = 0

    def alloc(self, nbytes):
        return self.cl.Buffer(self.context, self.cl.mem_flags.READ_WRITE, int(nbytes))

    def free(self, handle):
        handle.release()

    def write(self, handle, offset, host, queue=None):
        self.cl.enqueue_copy(self.queue, handle, host, dst_offset=int(offset), is_blocking=True)

    def read(self, host, handle, offset, queue=None):
        self.cl.enqueue_copy(self.queue, host, handle, src_offset=int(offset), is_blocking=True)

    def load(self, artifact):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", self.cl.CompilerWarning)
            return self.cl.Program(self.context, artifact.binary).build()

    def kernel(self, program, name):
        return self.cl.Kernel(program, name)

    def launch(self, kernel, griddim, blockdim, args, shared_bytes, queue):
        for i, a in enumerate(args):
            kernel.set_arg(i, a)
        n = len(args)
        if kernel.num_args == n + 2:  # dynamic shared memory: a __local buffer, its size
            kernel.set_arg(n, self.cl.LocalMemory(max(int(shared_bytes), 16)))
            kernel.set_arg(n + 1, np.uint64(shared_bytes).tobytes())
        size = tuple(g * b for g, b in zip(griddim, blockdim))
        self.cl.enqueue_nd_range_kernel(self.queue, kernel, size, tuple(blockdim))
        self.launches += 1

    def synchronize(self, queue=None):
        self.queue.finish()


def _features(cl_device) -> frozenset:
    ext = set(cl_device.extensions.split())
    feats = set()
    if cl_device.double_fp_config:
        feats.add("fp64")
    if {"cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"} <= ext:
        feats.add("int64_atomics")
    return frozenset(feats)


def discover() -> list:
    """Every OpenCL device that takes SPIR-V, as a ``minimal`` device."""
    import pyopencl as cl

    from numba_gpux.targets.opencl.target import INDEX_LIMITS

    found, counts = [], {}
    for plat in cl.get_platforms():
        for dev in plat.get_devices():
            if "SPIR-V" not in (dev.il_version or ""):
                continue
            kind = "gpu" if dev.type & cl.device_type.GPU else "cpu"
            counts[kind] = counts.get(kind, -1) + 1
            limits = {"max_threads_per_block": int(dev.max_work_group_size),
                      "max_block_dims": tuple(int(x) for x in dev.max_work_item_sizes),
                      "max_grid_dims": INDEX_LIMITS.grid,
                      "max_shared_bytes": int(dev.local_mem_size)}
            found.append(Device(target_name="minimal", index=len(found), name=dev.name.strip(),
                                kind=kind, vendor=dev.vendor.strip(),
                                runtime=MinimalRuntime(dev), limits=limits,
                                target_features=_features(dev), platform=plat.name.strip(),
                                kind_index=counts[kind]))
    return found


def _make_target(device=None, **kw):
    from numba_gpux.targets.opencl.target import make_target

    return make_target(device, **kw)


def target_entry() -> TargetEntry:
    # below the real targets: nothing picks these devices unless asked
    return TargetEntry(name="minimal", make_target=_make_target, discover=discover,
                       priority=-100, doc="the OpenCL target's code on a minimal runtime")
