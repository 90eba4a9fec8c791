"""Launch and allocation limits, checked before anything runs.

Every check reads the device's ``limits`` (data each target fills in at
discovery) and names the kernel, the value and the limit, so that a launch the
device cannot take is a :class:`LaunchError` before a program is built or a
command enqueued, never a driver error, a hang or a wrapped-around size.

Keys read from ``Device.limits`` (each optional; a missing key is not checked,
except the index range below):

``max_threads_per_block``, ``max_block_dims``
    threads of one block, in all and per dimension
``max_grid_dims``
    blocks of the grid per dimension; without it, :data:`INDEX_RANGE`
``max_shared_bytes``
    shared (work-group) memory of one block: a kernel's static shared arrays
    plus the launch's dynamic shared memory
``max_alloc_bytes`` (else ``global_mem_bytes``)
    the largest single allocation
"""

from __future__ import annotations

from .errors import GpuxUserError, LaunchError

__all__ = ["INDEX_RANGE", "check_config", "check_static_shared", "check_alloc",
           "AllocationTooLargeError", "launch_bounds_tuple"]

#: the most blocks (and threads) one grid dimension may have where a device states no
#: limit: the signed 32-bit range that CUDA's grid x dimension, Metal's threadgroup
#: counts and numba.cuda code's 32-bit indices share
INDEX_RANGE = 2**31 - 1


class AllocationTooLargeError(GpuxUserError, MemoryError):
    """An allocation larger than the device's largest allowed single allocation."""


def _dims(d) -> str:
    return "x".join(str(v) for v in d)


def check_config(device, name: str, griddim, blockdim, shared_bytes: int,
                 static_shared: int = 0) -> None:
    """Raise :class:`LaunchError` if *device* cannot take this launch of kernel *name*."""
    lim = device.limits
    where = f"kernel {name} on {device.spec}"
    total = blockdim[0] * blockdim[1] * blockdim[2]
    maxt = lim.get("max_threads_per_block")
    if maxt is not None and total > maxt:
        raise LaunchError(f"{where}: a block of {_dims(blockdim)} = {total} threads exceeds "
                          f"the {maxt} threads per block the device allows")
    dims = lim.get("max_block_dims") or (INDEX_RANGE,) * 3
    for axis, (b, m) in enumerate(zip(blockdim, dims)):
        if b > m:
            raise LaunchError(f"{where}: block dimension {'xyz'[axis]} = {b} exceeds the "
                              f"maximum {m}")
    gd = lim.get("max_grid_dims") or (INDEX_RANGE,) * 3
    for axis, (g, m) in enumerate(zip(griddim, gd)):
        if g > m:
            raise LaunchError(f"{where}: grid dimension {'xyz'[axis]} = {g} blocks exceeds the "
                              f"maximum {m}")
        if g * blockdim[axis] > 2**63 - 1:
            raise LaunchError(f"{where}: {g} blocks of {blockdim[axis]} threads in dimension "
                              f"{'xyz'[axis]} exceed the 64-bit index range")
    ms = lim.get("max_shared_bytes")
    if ms is not None and shared_bytes + static_shared > ms:
        what = (f"{shared_bytes} bytes of dynamic shared memory" if not static_shared else
                f"{static_shared} bytes of static and {shared_bytes} bytes of dynamic shared "
                f"memory")
        raise LaunchError(f"{where}: {what} exceed the {ms} bytes of shared memory a block "
                          f"may have")


def check_static_shared(device, name: str, static_shared: int) -> None:
    """Raise before a kernel whose static shared arrays do not fit is built for *device*."""
    ms = device.limits.get("max_shared_bytes")
    if ms is not None and static_shared > ms:
        raise LaunchError(f"kernel {name} on {device.spec}: its shared arrays take "
                          f"{static_shared} bytes, more than the {ms} bytes of shared memory "
                          f"a block may have")


def check_alloc(device, nbytes: int) -> None:
    """Raise :class:`AllocationTooLargeError` if *device* cannot allocate *nbytes* at once."""
    lim = device.limits
    key = "max_alloc_bytes" if "max_alloc_bytes" in lim else "global_mem_bytes"
    m = lim.get(key)
    if m is not None and nbytes > m:
        what = ("largest single allocation" if key == "max_alloc_bytes" else "memory")
        raise AllocationTooLargeError(
            f"cannot allocate {nbytes} bytes on {device.spec}: the device's {what} is "
            f"{m} bytes")


def launch_bounds_tuple(value) -> tuple:
    """A kernel's ``launch_bounds`` option as a tuple of one to three positive ints (() for None)."""
    if value is None:
        return ()
    bounds = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if len(bounds) > 3:
        raise ValueError(f"Got {len(bounds)} launch bounds: {bounds}. A maximum of three are "
                         f"supported: (max_threads_per_block, min_blocks_per_sm, "
                         f"max_blocks_per_cluster)")
    if not bounds or not all(type(b) is int and b > 0 for b in bounds):
        raise ValueError(f"launch_bounds must be a positive int or a tuple of one to three "
                         f"positive ints, not {value!r}")
    return bounds
