"""``numba_gpux.cuda.random``: numba.cuda's xoroshiro128+ generator, from
:mod:`numba_gpux.random` (same names, same state layout semantics)."""

from __future__ import annotations

_NAMES = (
    "create_xoroshiro128p_states", "init_xoroshiro128p_states", "xoroshiro128p_uniform_float32",
    "xoroshiro128p_uniform_float64", "xoroshiro128p_normal_float32",
    "xoroshiro128p_normal_float64", "xoroshiro128p_next", "xoroshiro128p_jump",
    "xoroshiro128p_dtype", "xoroshiro128p_type",
)

try:
    import importlib as _importlib

    _impl = _importlib.import_module("numba_gpux.random")
except ModuleNotFoundError as _e:  # the portable generator is not there yet
    if _e.name != "numba_gpux.random":
        raise
    _impl = None

__all__ = []
for _n in _NAMES:
    _obj = getattr(_impl, _n, None) if _impl is not None else None
    if _obj is None:
        from .intrinsics import _unavailable

        if _n.startswith(("create_", "init_")):
            def _obj(*args, _n=_n, **kws):
                from ..errors import UnsupportedError

                raise UnsupportedError(f"cuda.random.{_n}: numba_gpux.random is not available")
        elif _n in ("xoroshiro128p_dtype", "xoroshiro128p_type"):
            continue
        else:
            _obj = _unavailable(f"random.{_n}", "numba_gpux.random is not available yet")
    globals()[_n] = _obj
    __all__.append(_n)
