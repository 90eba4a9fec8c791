"""The compute capability a device shows to numba.cuda code.

numba.cuda programs choose code paths by ``compute_capability`` (``if cc >= (5, 3):``
float16 arithmetic, ``if cc >= (6, 0):`` grid synchronization, tables indexed by
it).  An NVIDIA GPU reports its own.  Every other device reports the highest CUDA
capability all of whose features that the facade offers work on that device, and
never more: the capability is derived from data, the device's target features and
what its target can do (:data:`LEVELS` and :func:`derive`), never from its name.

Capabilities that add no feature the facade offers over an earlier one (5.0, 5.2,
6.1, 6.2, 7.2, 7.5, 8.6, 8.7) are not in :data:`LEVELS`: code cannot tell them from
that earlier one by what works, and the earlier one is the one that never claims
more.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

__all__ = ["LEVELS", "FEATURES", "derive", "capability_of", "device_features", "missing_at"]

#: (capability, the facade features it adds, what numba.cuda code may use from then on),
#: in increasing order; a level's code may use every feature of the levels before it
LEVELS: tuple = (
    ((1, 1), (), "kernels; 32-bit integer atomics"),
    ((1, 2), ("int64_atomics", "warp32"),
     "64-bit integer atomics; warp votes over 32 lanes (all_sync, any_sync)"),
    ((1, 3), ("fp64",), "float64 arithmetic"),
    ((2, 0), (), "float32 atomic add; ballot_sync; syncthreads_count/and/or; print"),
    ((3, 0), (), "warp shuffles (shfl_sync and its forms) over 32 lanes"),
    ((3, 5), (), "the oldest capability numba.cuda runs on"),
    ((5, 3), ("fp16",), "float16 arithmetic and cuda.fp16"),
    ((6, 0), ("grid_sync",), "cooperative groups: cuda.cg.this_grid().sync(); native "
                             "float64 atomic add"),
    ((7, 0), ("independent_thread_scheduling",),
     "independent thread scheduling: warp functions with partial masks in divergent "
     "code, match_any_sync/match_all_sync, nanosleep"),
    ((8, 0), ("bfloat16",), "bfloat16 arithmetic (cuda.bf16)"),
    ((8, 9), ("fp8",), "fp8 types"),
    ((9, 0), ("clusters",), "thread-block clusters"),
)

#: facade feature -> how a device has it (for docs and error messages)
FEATURES: dict = {
    "int64_atomics": "the target feature 'int64_atomics'",
    "warp32": "sub-groups of 32 lanes for the facade's kernels: the target's sub-groups "
              "are always 32 wide, or it can require that width (feature "
              "'required_subgroup_size' and the target's sub-group size metadata)",
    "fp64": "the target feature 'fp64'",
    "fp16": "the target feature 'fp16'",
    "grid_sync": "the facade provides cuda.cg (a grid-wide barrier)",
    "independent_thread_scheduling": "the target feature 'independent_thread_scheduling' "
                                     "(lanes of a warp that diverge progress and "
                                     "synchronize by mask)",
    "bfloat16": "the target feature 'bfloat16' and the facade provides cuda.bf16",
    "fp8": "the target feature 'fp8'",
    "clusters": "the target feature 'clusters'",
}


def missing_at(features: Iterable[str]) -> tuple | None:
    """The first level (capability, its missing features) that *features* do not
    reach, or None where every level is reached."""
    have = frozenset(features)
    for cc, needs, _ in LEVELS:
        lacking = tuple(f for f in needs if f not in have)
        if lacking:
            return cc, lacking
    return None


def derive(features: Iterable[str]) -> tuple[int, int]:
    """The highest capability of :data:`LEVELS` all of whose features, and those of
    every level before it, are in *features* (a set of facade feature names)."""
    have = frozenset(features)
    best = (0, 0)
    for cc, needs, _ in LEVELS:
        if not all(f in have for f in needs):
            break
        best = cc
    return best


def _warp32(target) -> bool:
    if not target.has("subgroups"):
        return False
    if target.subgroup_width == 32:
        return True
    return bool(target.subgroup_size_metadata) and target.has("required_subgroup_size")


def _facade_provides(name: str) -> bool:
    """Whether ``numba_gpux.cuda.<name>`` is a working feature, not a placeholder
    (the facade package, this module's parent, is imported before this module)."""
    from .intrinsics import Unavailable

    obj = getattr(sys.modules[__package__], name, None)
    return obj is not None and not isinstance(obj, Unavailable)


def device_features(device) -> frozenset:
    """The facade features (names of :data:`FEATURES`) a ``numba_gpux`` Device has:
    its target's features and what its target description says it can run."""
    target = device.target
    have = set(target.features)
    if _warp32(target):
        have.add("warp32")
    if _facade_provides("cg"):
        have.add("grid_sync")
    if "bfloat16" in have and not _facade_provides("bf16"):
        have.discard("bfloat16")
    return frozenset(have)


def capability_of(device) -> tuple[int, int]:
    """*device*'s compute capability for numba.cuda code: an NVIDIA GPU's own (its
    ``limits["compute_capability"]``), else :func:`derive` of its features."""
    cc = device.limits.get("compute_capability")
    if cc:
        return (int(cc[0]), int(cc[1]))
    return derive(device_features(device))
