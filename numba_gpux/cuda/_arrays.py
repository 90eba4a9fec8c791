"""The facade's device-array class: ``DeviceNDArray``, numba_gpux's
:class:`~numba_gpux.DeviceArray` with numba.cuda's semantics where they differ from
NumPy's (``cudadrv.devicearray`` and ``numba_gpux.cuda`` export it)."""

from __future__ import annotations

import ctypes

from .. import memory as _mem

__all__ = ["DeviceNDArray", "DeviceNDArrayBase", "as_facade", "transpose_2d"]

DeviceNDArrayBase = _mem.DeviceArray


class DeviceNDArray(DeviceNDArrayBase):
    """A device array made through ``numba_gpux.cuda``: numba.cuda's semantics where
    they differ from NumPy's."""

    def transpose(self, axes=None):
        """For a 2-D array, a new C-contiguous array holding the transpose (numba.cuda's
        ``DeviceNDArray.transpose``); the identity permutation gives the array itself;
        other ranks get a view with the axes permuted."""
        if axes is not None and tuple(axes) == tuple(range(self.ndim)):
            return self
        if self.ndim != 2:
            return super().transpose(axes)
        if axes is not None and sorted(int(a) % 2 for a in axes) != [0, 1]:
            raise ValueError(f"invalid axes list {tuple(axes)!r}")
        return transpose_2d(self)

    @property
    def gpu_data(self) -> "GpuData":
        """numba.cuda's memory pointer of the array's data (``device_pointer``)."""
        return GpuData(self)

    @property
    def device_ctypes_pointer(self) -> ctypes.c_void_p:
        """The data's integer device pointer as a ``ctypes.c_void_p``."""
        return GpuData(self).device_ctypes_pointer


class GpuData:
    """The data of a device array as numba.cuda's ``MemoryPointer`` shows it:
    ``device_pointer`` is an integer device pointer (see ``memory.device_pointer``)
    that kernels with ``CPointer`` parameters take, ``size`` the bytes it spans."""

    __slots__ = ("_array",)

    def __init__(self, array):
        self._array = array

    @property
    def device_pointer(self) -> int:
        a = self._array
        return _mem.device_pointer(a._alloc) + a.offset

    @property
    def device_ctypes_pointer(self) -> ctypes.c_void_p:
        return ctypes.c_void_p(self.device_pointer)

    @property
    def size(self) -> int:
        return self._array.nbytes

    @property
    def owner(self):
        return self._array

    def _span(self):
        a = self._array
        return (id(a._alloc), a.offset, a.nbytes)

    # the same memory is the same data: an array and its dtype views (``a.view(np.int64)``)
    # compare equal, as numba.cuda's views share their MemoryPointer
    def __eq__(self, other):
        if not isinstance(other, GpuData):
            return NotImplemented
        return self._span() == other._span()

    def __hash__(self):
        return hash(self._span())


def as_facade(arr):
    """*arr* (a numba_gpux device array made for the facade) as a ``DeviceNDArray``."""
    if type(arr) is DeviceNDArrayBase:
        arr.__class__ = DeviceNDArray
    return arr


_kernel = None


def _transpose_kernel():
    global _kernel
    if _kernel is None:
        from ..dispatcher import jit
        from ..language import grid

        @jit
        def transpose_kernel(src, dst):
            i, j = grid(2)
            if i < dst.shape[0] and j < dst.shape[1]:
                dst[i, j] = src[j, i]

        _kernel = transpose_kernel
    return _kernel


def transpose_2d(a, b=None):
    """Write the transpose of the 2-D device array *a* into *b* (by default a new
    C-contiguous ``DeviceNDArray`` on *a*'s device) with a kernel, and return *b*."""
    from ..errors import GpuxUserError

    if a.ndim != 2:
        raise GpuxUserError(f"transpose needs a 2-D array, got {a.ndim}-D")
    shape = (a.shape[1], a.shape[0])
    if b is None:
        b = as_facade(_mem.device_array(shape, a.dtype, device=a.device))
    if b.shape != shape or b.dtype != a.dtype:
        raise GpuxUserError(f"transpose: output must be {a.dtype} of shape {shape}, "
                            f"got {b.dtype} {b.shape}")
    if b.size:
        tile = 16
        blocks = ((shape[0] + tile - 1) // tile, (shape[1] + tile - 1) // tile)
        _transpose_kernel()[blocks, (tile, tile), a.device](a, b)
    return b
