"""The CUDA Array Interface (version 3) as data: reading another library's
``__cuda_array_interface__`` and writing ours, for any runtime that has one.

A runtime decides what the ``data`` pointer means (a CUDA device pointer; on OpenCL,
an address of the runtime's own for its buffers); the layout rules are the same.
"""

from __future__ import annotations

import numpy as np

__all__ = ["read", "write", "c_strides"]


def c_strides(shape, itemsize: int) -> tuple:
    """The byte strides of a C-contiguous array of *shape*."""
    acc, out = int(itemsize), []
    for n in reversed(tuple(shape)):
        out.append(acc)
        acc *= max(int(n), 1)
    return tuple(reversed(out))


def read(cai: dict) -> tuple:
    """(lowest byte address, shape, strides in bytes, dtype) of the memory a
    ``__cuda_array_interface__`` describes: the lowest address the array reaches, so
    that negative strides start below ``data``.  Masked arrays are a
    NotImplementedError, as in numba.cuda."""
    if cai.get("mask") is not None:
        raise NotImplementedError("Masked arrays are not supported")
    descr = cai.get("descr")
    dtype = np.dtype(descr) if descr and len(descr) > 1 else np.dtype(cai["typestr"])
    shape = tuple(int(s) for s in cai["shape"])
    strides = cai.get("strides")
    strides = c_strides(shape, dtype.itemsize) if strides is None else \
        tuple(int(s) for s in strides)
    ptr = int(cai["data"][0] or 0)
    low = sum((n - 1) * s for n, s in zip(shape, strides) if n > 0 and s < 0)
    return ptr + low, shape, strides, dtype


def write(address: int, shape, strides, dtype, readonly: bool = False,
          stream: int | None = None) -> dict:
    """``__cuda_array_interface__`` of an array at *address* (its first element):
    ``strides`` None where they are C-contiguous, ``data`` 0 for an empty array."""
    shape, strides, dtype = tuple(shape), tuple(strides), np.dtype(dtype)
    contiguous = all(s == c for n, s, c in zip(shape, strides, c_strides(shape, dtype.itemsize))
                     if n > 1)
    empty = any(int(n) == 0 for n in shape)
    return {"shape": shape, "strides": None if contiguous or empty else strides,
            "typestr": dtype.str, "data": (0 if empty else int(address), bool(readonly)),
            "version": 3, "stream": stream}
