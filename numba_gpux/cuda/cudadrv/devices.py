"""``numba_gpux.cuda.cudadrv.devices``: numba.cuda's device list and context access."""

from __future__ import annotations

from ..api import current_context, get_current_device, gpus, require_context, reset

__all__ = ["gpus", "get_context", "require_context", "reset", "get_current_device"]


def get_context(devnum=None):
    """The context of device *devnum* (the current device by default)."""
    return current_context(devnum)
