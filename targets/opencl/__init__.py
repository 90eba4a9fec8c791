"""The OpenCL target: SPIR-V from LLVM's SPIR-V back end, run through pyopencl."""

from __future__ import annotations

from numba_gpux.interface import TargetEntry

__all__ = ["target_entry"]


def _make_target(device=None, **kw):
    from .target import make_target

    return make_target(device, **kw)


def _discover():
    from .drivers import discover

    return discover()


def target_entry() -> TargetEntry:
    return TargetEntry(name="opencl", make_target=_make_target, discover=_discover, priority=10,
                       doc="OpenCL devices that accept SPIR-V (clCreateProgramWithIL)",
                       extra={"driver_modules": ("pyopencl",)})
