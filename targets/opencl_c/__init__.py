"""The OpenCL C target (``opencl-c``): OpenCL C source written by the C-family emitter
(``targets/cfamily``), built and run through pyopencl with the OpenCL target's runtime."""

from __future__ import annotations

from numba_gpux.interface import TargetEntry

__all__ = ["target_entry"]


def _make_source_target(device=None, **kw):
    from .target import make_target

    return make_target(device, **kw)


def _discover_source():
    from .target import discover

    return discover()


def target_entry() -> TargetEntry:
    """The OpenCL C route (``opencl-c``): devices without SPIR-V, or every device with
    ``NUMBA_GPUX_OPENCL_C=1`` (then preferred over SPIR-V)."""
    from numba_gpux import config

    return TargetEntry(name="opencl-c", make_target=_make_source_target, discover=_discover_source,
                       priority=15 if config.opencl_c_route() else 5,
                       doc="OpenCL devices through OpenCL C source (clCreateProgramWithSource)",
                       extra={"driver_modules": ("pyopencl",)})
