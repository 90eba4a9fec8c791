"""``cuda.jit``: numba.cuda's decorator, mapped onto :func:`numba_gpux.jit`.

The result is an ordinary :class:`numba_gpux.GpuxFunction`: the same
compiler, caches and launch path as ``@numba_gpux.jit``.
"""

from __future__ import annotations

from ..dispatcher import GpuxFunction
from ..dispatcher import jit as _gpux_jit
from ..errors import UnsupportedError

__all__ = ["jit", "declare_device", "WARP_SIZE"]

#: numba.cuda's warp width, which the facade's kernels get as their sub-group width
WARP_SIZE = 32


def jit(func_or_sig=None, device: bool = False, inline="never", forceinline: bool = False,
        link=(), debug=None, opt=None, lineinfo: bool = False, cache: bool = False,
        launch_bounds=None, lto: bool = False, boundscheck=None, fastmath: bool = False,
        max_registers=None, extensions=None, **kws) -> GpuxFunction:
    """Compile a kernel (or, with ``device=True``, a device function), as numba.cuda does.

    Accepted as in numba.cuda: a signature or list of signatures (eager
    compilation), ``device``, ``inline``, ``forceinline``, ``debug``, ``opt``,
    ``fastmath``, ``lineinfo``, ``cache``, ``boundscheck``, ``max_registers``,
    ``launch_bounds``, ``shared_memory_carveout``, ``lto`` and ``extensions``
    (objects whose ``prepare_args`` is applied to each argument before a launch:
    GpuxFunction.extensions).
    ``link`` (CUDA C/PTX files) is not supported.
    """
    if link:
        raise UnsupportedError("cuda.jit(link=...): linking CUDA C, PTX or LTO-IR files is not "
                               "supported by numba_gpux (kernels must be Python)")
    argtypes = kws.pop("argtypes", None)
    restype = kws.pop("restype", None)
    carveout = kws.pop("shared_memory_carveout", None)
    kws.pop("nopython", None)
    if kws:
        raise TypeError(f"cuda.jit() got unexpected keyword argument(s): {', '.join(sorted(kws))}")
    if argtypes is not None and func_or_sig is None:
        from numba.core import types, typing

        func_or_sig = typing.signature(restype or types.void, *argtypes)
    # numba.cuda code assumes warps of 32 lanes: kernels that use warp (sub-group)
    # operations ask for 32-wide sub-groups (an error on a device that cannot)
    options = dict(device=device, fastmath=fastmath, debug=bool(debug),
                   opt=3 if opt is None else opt, inline=inline, cache=cache,
                   lineinfo=lineinfo, forceinline=forceinline, subgroup_size=WARP_SIZE)
    if boundscheck is not None:
        options["boundscheck"] = boundscheck
    if max_registers is not None:
        options["max_registers"] = max_registers
    if launch_bounds is not None:
        options["launch_bounds"] = launch_bounds
    if carveout is not None:
        options["shared_memory_carveout"] = carveout

    # numba.cuda launches a kernel given one signature (not a list) with whatever
    # arrays it gets: integer arrays of the signature's width are viewed as its type
    single = func_or_sig is not None and not callable(func_or_sig) \
        and not isinstance(func_or_sig, list)

    def finish(made):
        if callable(made) and not isinstance(made, GpuxFunction):  # a decorator
            return lambda fn: finish(made(fn))
        if extensions:
            made.extensions = extensions
        if single and not device:
            made.bitcast_arrays = True
        made.inspect_target = _ptx_target
        if not device:
            made.host_copy_warning = _host_copy_warning
        return made

    if func_or_sig is None:
        return finish(lambda fn: _gpux_jit(fn, **options))
    return finish(_gpux_jit(func_or_sig, **options))


def _host_copy_warning():
    """numba.cuda's warning for a launch that copies host arrays: at every such launch
    while ``config.CUDA_WARN_ON_IMPLICIT_COPY`` is set (its default), with its text."""
    from .core import config

    if config.CUDA_WARN_ON_IMPLICIT_COPY and not config.DISABLE_PERFORMANCE_WARNINGS:
        return ("Host array used in CUDA kernel will incur copy overhead to/from device "
                "(the NumPy array is copied to the device and back at each launch; "
                "cuda.to_device() keeps it there)")
    return None


def _ptx_target():
    """What ``kernel.inspect_asm()`` shows, as in numba.cuda: PTX, for the current
    device's compute capability (the CUDA target's default off NVIDIA GPUs)."""
    from ..devices import default_device, resolve_target
    from ..errors import DeviceNotFoundError

    try:
        dev = default_device()
    except DeviceNotFoundError:  # PTX needs no device
        return resolve_target("cuda", cubin=False)
    if dev.target.name == "cuda":  # the code the kernel launches with
        return dev
    return resolve_target("cuda", cubin=False)


def declare_device(name, sig, link=None, use_cooperative=False):
    raise UnsupportedError(f"cuda.declare_device({name!r}): external device functions written "
                           f"in CUDA C are not supported by numba_gpux")
