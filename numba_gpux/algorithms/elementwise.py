"""``foreach`` and ``map``: one device-function call per index or element."""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.np.numpy_support import as_dtype, from_dtype

from .. import language as gl
from ..errors import GpuxUserError
from ..memory import DeviceArray
from . import _tuning
from ._common import (
    GpuxFunction, as_device, cdiv, device_of, empty, finish, jit, kernel_cache,
)

__all__ = ["foreach", "map", "astype"]


def _device_fn(fn, what):
    if isinstance(fn, GpuxFunction):
        if not fn.is_device:
            raise GpuxUserError(f"{what}: {fn.__name__} is a kernel; pass a device function")
        return fn
    if callable(fn):
        return jit(device=True)(fn)
    raise GpuxUserError(f"{what}: expected a function, not {fn!r}")


def _loop(flat: bool, body: str) -> str:
    """The body of a 1-D kernel: for ``ipt`` elements, a grid-stride loop; *flat*: one
    element per work-item and no loop (``ipt`` unused), the shape CPU drivers
    vectorize across work-items (a loop around the body they do not: 3-4x slower on
    Intel's OpenCL CPU driver)."""
    if flat:
        return f"    i = grid(1)\n    if i < n:\n        {body}\n"
    return (f"    i = grid(1)\n"
            f"    g = gridsize(1)\n"
            f"    for _ in range(ipt):\n"
            f"        if i < n:\n"
            f"            {body}\n"
            f"        i += g\n")


def _make_foreach(fn, nargs, flat=False):
    names = ", ".join(f"a{i}" for i in range(nargs))
    src = (f"def foreach_kernel(n, ipt{', ' if nargs else ''}{names}):\n"
           + _loop(flat, f"fn(i{', ' if nargs else ''}{names})"))
    env = {"fn": fn, "grid": gl.grid, "gridsize": gl.gridsize}
    exec(src, env)  # noqa: S102 - generated from an argument count only
    return jit(env["foreach_kernel"])


_foreach_kernels = kernel_cache(_make_foreach)


_MAP_HOOKS = ("algorithms.map_block_size", "algorithms.map_items_per_thread")


def _launch_1d(kernels, fkey, n, device, dtype, *args, subject="algorithms.map", writes=()):
    """Launch ``kernels(*fkey, flat)`` over *n* elements: the map hooks, autotuned per
    dtype and size, say how many each work-item handles (1: the variant without a
    loop) and the work-group size."""

    def run(key):
        bs = _tuning.map_block_size(device, dtype, key)
        ipt = _tuning.map_items_per_thread(device, dtype, key)
        blocks = max(1, cdiv(cdiv(n, ipt), bs))
        kernels(*fkey, ipt == 1)[blocks, bs](n, ipt, *args)

    _tuning.tuned(subject, _MAP_HOOKS, device, dtype, n, run, writes=writes)


def foreach(fn, n: int, *args, device=None) -> None:
    """Call the device function ``fn(i, *args)`` for every ``i`` in ``range(n)``.

    *args* are device arrays (or NumPy arrays, copied in and back), numbers or
    tuples, exactly as for a kernel; *fn* returns nothing.
    """
    fn = _device_fn(fn, "foreach")
    n = int(n)
    if n < 0:
        raise GpuxUserError(f"foreach: n must be non-negative, not {n}")
    if n == 0:
        return
    dev = device_of(device, *args)
    # what fn writes is put back before each candidate, should this call tune
    _launch_1d(_foreach_kernels, (fn, len(args)), n, dev, None, *args,
               subject="algorithms.foreach", writes=[a for a in args if hasattr(a, "shape")])


def _make_map(fn, nin, flat=False):
    ins = ", ".join(f"x{i}" for i in range(nin))
    calls = ", ".join(f"x{i}[i]" for i in range(nin))
    src = (f"def map_kernel(n, ipt, out, {ins}):\n" + _loop(flat, f"out[i] = fn({calls})"))
    env = {"fn": fn, "grid": gl.grid, "gridsize": gl.gridsize}
    exec(src, env)  # noqa: S102
    return jit(env["map_kernel"])


_map_kernels = kernel_cache(_make_map)


@jit(device=True)
def _identity(v):
    return v


def _flat(d: DeviceArray) -> DeviceArray:
    if d.ndim == 1:
        return d
    if not d.is_c_contiguous:
        d = d.copy()
    return d.reshape(d.size)


def map(fn, *arrays, out=None, dtype=None, device=None):
    """``out[i] = fn(a[i], b[i], ...)`` elementwise over arrays of one shape.

    *fn* is a device function (or a plain Python function, compiled as one).
    The result dtype is *dtype*, else that of *out*, else what *fn* returns for
    the inputs' element types.  NumPy inputs give a NumPy result; device
    arrays give a device array.
    """
    fn = _device_fn(fn, "map")
    if not arrays:
        raise GpuxUserError("map: give at least one array")
    dev = device_of(device, *arrays)
    ds, hosts = [], []
    for i, a in enumerate(arrays):
        d, h = as_device(a, dev, f"map: argument {i}")
        ds.append(d)
        hosts.append(h)
    shape = ds[0].shape
    for i, d in enumerate(ds[1:], 1):
        if d.shape != shape:
            raise GpuxUserError(f"map: argument {i} has shape {d.shape}, argument 0 has {shape}")
    if out is not None:
        if not isinstance(out, DeviceArray):
            raise GpuxUserError("map: out must be a device array")
        if out.shape != shape:
            raise GpuxUserError(f"map: out has shape {out.shape}, the inputs {shape}")
        res = out
    else:
        if dtype is None:
            argtys = tuple(from_dtype(d.dtype) for d in ds)
            ret = fn.neutral(argtys).return_type
            if not isinstance(ret, (types.Number, types.Boolean)):
                raise GpuxUserError(f"map: {fn.__name__} returns {ret}; map needs a number")
            dtype = as_dtype(ret)
        res = empty(shape, dtype, dev)
    n = int(np.prod(shape)) if shape else 1
    if n:
        flat_out = res if res.is_c_contiguous else None
        if flat_out is None:
            raise GpuxUserError("map: out must be C-contiguous")
        # a given out may also be an input: put back before each candidate, should this
        # call tune
        _launch_1d(_map_kernels, (fn, len(ds)), n, dev, res.dtype, _flat(flat_out),
                   *[_flat(d) for d in ds], writes=[res] if out is not None else [])
    return finish(res, out is None and all(hosts))


def astype(d: DeviceArray, dtype) -> DeviceArray:
    """A copy of the device array *d* converted to *dtype* (same shape)."""
    if np.dtype(dtype) == d.dtype:
        return d
    return map(_identity, d, dtype=dtype, device=d.device)
