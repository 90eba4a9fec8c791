"""The Metal target: Metal Shading Language from the source emitter, run through pyobjc-framework-Metal."""

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
    return TargetEntry(name="metal", make_target=_make_target, discover=_discover, priority=20,
                       doc="Apple GPUs through Metal Shading Language (pyobjc-framework-Metal)",
                       extra={"driver_modules": ("Metal",)})
