"""The kernel language: stubs users call, their typing, and their lowering to
portable ``__gpux_*`` intrinsics.  Importing this package registers nothing
with Numba's CPU target; the shared GPU context installs these registries."""

from .stubs import (  # noqa: F401
    grid, gridsize, thread_idx, block_idx, block_dim, grid_dim, barrier,
)

__all__ = ["grid", "gridsize", "thread_idx", "block_idx", "block_dim", "grid_dim", "barrier"]
