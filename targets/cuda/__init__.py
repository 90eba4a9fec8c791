"""The CUDA target: PTX through LLVM's NVPTX back end and libdevice, run by cuda-python."""

from numba_gpux.interface import TargetEntry

__all__ = ["target_entry"]


def _make_target(device=None, **kw):
    from .target import make_target

    return make_target(device, **kw)


def _discover():
    try:
        from .launch import discover
    except ImportError:
        return []
    return discover()


def target_entry() -> TargetEntry:
    return TargetEntry(name="cuda", make_target=_make_target, discover=_discover, priority=20,
                       doc="NVIDIA GPUs through PTX and the CUDA driver (cuda-python)",
                       extra={"driver_modules": ("cuda.bindings",)})
