"""``cuda.Reduce`` / ``cuda.reduce``: numba.cuda's reduction-kernel builder.

Integers and floats go to the portable ``numba_gpux.algorithms.reduce`` with the
user's function as its operator: the variant and launch shapes each device's tuning
hooks choose (contiguous chunks on CPU devices).  Like numba.cuda's kernels, which
fold block-strided elements, it takes the function to be associative and
commutative.  Other dtypes (bool, complex, records) take passes in which every
thread folds a chunk of the input into one partial result, until one value is left.
In both, ``init`` is folded in once.
"""

from __future__ import annotations

import numpy as np

from .. import language as _lang
from ..dispatcher import GpuxFunction
from ..dispatcher import jit as _gpux_jit
from ..memory import DeviceArray
from .decorators import NUMBA_CUDA_SEMANTICS

__all__ = ["Reduce", "reduce"]

_CHUNK = 256


def _factory(fn):
    @_gpux_jit
    def fold(src, dst, chunk, init, use_init):
        t = _lang.grid(1)
        start = t * chunk
        n = src.shape[0]
        if start < n:
            end = start + chunk
            if end > n:
                end = n
            acc = src[start]
            for i in range(start + 1, end):
                acc = fn(acc, src[i])
            if use_init:
                acc = fn(init, acc)
            dst[t] = acc

    return fold


class Reduce:
    """A reduction with a binary function; keep the object to reuse its kernels."""

    _cache: dict = {}

    def __init__(self, functor):
        if isinstance(functor, GpuxFunction):
            self._device_fn = functor
        else:
            self._device_fn = _gpux_jit(device=True, inline=True,
                                        semantics=NUMBA_CUDA_SEMANTICS)(functor)
        self._functor = functor
        self.__name__ = getattr(functor, "__name__", "reduce")
        self.__doc__ = getattr(functor, "__doc__", None)

    def _kernel(self):
        k = self._cache.get(self._functor)
        if k is None:
            k = self._cache[self._functor] = _factory(self._device_fn)
        return k

    def __call__(self, arr, size=None, res=None, init=0, stream=0):
        """Reduce the 1-D host or device array *arr* (its first *size* elements).

        Returns the result, or writes it to ``res[0]`` (a device array) and
        returns None.
        """
        from ._memory_api import device_array, to_device

        if arr.ndim != 1:
            raise TypeError("only support 1D array")
        if size is not None:
            arr = arr[:size]
        init = arr.dtype.type(init)
        if arr.size < 1:
            return init
        if arr.dtype.kind in "iuf":
            from ..algorithms import reduce as _reduce

            if isinstance(arr, DeviceArray) and stream:
                stream.synchronize()  # (the portable reduce runs on the default queue)
            got = _reduce(arr, self._device_fn, init=init)
            if res is None:
                return got
            res[:1].copy_to_device(np.array([got], res.dtype), stream=stream)
            return None
        if not isinstance(arr, DeviceArray):
            arr = to_device(np.ascontiguousarray(arr), stream=stream)
        kernel = self._kernel()
        src, n = arr, arr.size
        while True:
            parts = (n + _CHUNK - 1) // _CHUNK
            last = parts == 1
            dst = device_array(parts, dtype=arr.dtype, stream=stream)
            kernel.forall(parts, 0, stream)(src, dst, np.int64(_CHUNK), init, last)
            if last:
                break
            src, n = dst, parts
        if res is not None:
            res[:1].copy_to_device(dst, stream=stream)
            return None
        return dst.copy_to_host(stream=stream)[0]


reduce = Reduce
