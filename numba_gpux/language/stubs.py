"""Host-side stand-ins for the kernel language.

These objects exist so that kernels can name them; calling them on the host
raises a clear error.  Their typing and lowering live in ``typing.py`` and
``lowering.py``.
"""

from __future__ import annotations

__all__ = ["Stub", "Namespace", "Dim3Stub", "grid", "gridsize", "thread_idx", "block_idx",
           "block_dim", "grid_dim", "barrier"]


class Stub:
    """A kernel-language name; only meaningful inside a kernel."""

    _description = ""

    def __init__(self, name: str, description: str = ""):
        self._name = name
        self._description = description
        self.__doc__ = description
        # named like the function it stands for (``shared.array``: __name__ "array"),
        # which is how Numba's typing errors name it
        self.__name__ = name.rpartition(".")[2]
        self.__qualname__ = name

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            f"{self._name}() is part of the kernel language and can only be used "
            f"inside a function compiled with @numba_gpux.jit"
        )

    def __repr__(self) -> str:
        return f"<function {self._name} (a numba_gpux kernel intrinsic)>"

    def __reduce__(self):
        return self._name


class Namespace(Stub):
    """A namespace of kernel intrinsics (``gpux.shared``, ``gpux.atomic``): its members
    are attributes; calling it is an error."""

    def __init__(self, name, description, members):
        super().__init__(name, description)
        for k, v in members.items():
            setattr(self, k, v)

    def __call__(self, *a, **k):
        raise TypeError(f"{self._name} is a namespace; call one of its functions")


class Dim3Stub(Stub):
    """A (x, y, z) index or size; read ``.x``, ``.y`` or ``.z`` in a kernel."""

    def __init__(self, name: str, intrinsic: str, description: str):
        super().__init__(name, description)
        self._intrinsic = intrinsic

    def __getattr__(self, attr):
        if attr in ("x", "y", "z"):
            raise AttributeError(f"{self._name}.{attr} is only available inside a kernel")
        raise AttributeError(attr)


grid = Stub("grid", "grid(ndim): the absolute index of this work-item (an int for ndim=1, "
                    "else a tuple), blockIdx * blockDim + threadIdx per dimension.")
gridsize = Stub("gridsize", "gridsize(ndim): the total number of work-items along each dimension.")
thread_idx = Dim3Stub("thread_idx", "__gpux_thread_idx", "Index within the block (work-group).")
block_idx = Dim3Stub("block_idx", "__gpux_block_idx", "Index of the block in the grid.")
block_dim = Dim3Stub("block_dim", "__gpux_block_dim", "Threads per block, per dimension.")
grid_dim = Dim3Stub("grid_dim", "__gpux_grid_dim", "Blocks in the grid, per dimension.")
barrier = Stub("barrier", "barrier(): wait until every thread of the block reaches this point; "
                          "orders shared and global memory.")
