"""Per-target skip list of the conformance suite.

``SKIPLIST`` maps ``(target name, feature)`` to the reason the feature is not
expected to work on that target.  Conformance tests name the features they
exercise with ``@pytest.mark.feature("...")`` (or call :func:`check`); the
suite's ``conftest.py`` skips a test whose device's target lists one of them,
with the reason given here.  Features a *device* may lack (``int64_atomics``,
``fp64``...) are skipped from the device's own capabilities instead
(``@pytest.mark.needs("int64_atomics")``).

Feature names used by the suite:
    shared_static, shared_dynamic, local_array, const_array, barrier, barrier_pred,
    fence_block, fence_device, fence_system, atomics_int32, atomics_int64,
    atomics_float32, atomics_float64, atomics_shared, popc, clz, ffs, brev, fma,
    cbrt, select, round, debug_errors, debug_errors_after_barrier, grid_sync, print
"""

from __future__ import annotations

__all__ = ["SKIPLIST", "reason_for", "check"]

SKIPLIST: dict[tuple[str, str], str] = {
    # PoCL 3.0's CPU driver gives wrong barrier_count/and/or results when several
    # work-groups run at once (16 of 60 launches of 5 work-groups; never with one):
    # work-groups interfere through the kernel-scope __local counter the OpenCL C
    # route uses (OpenCL C 1.2 has no work-group collectives).  A one-element
    # __local array instead made PoCL segfault.  Flaky results are not a pass.
    ("opencl-c", "barrier_pred"): "barrier_count/and/or through OpenCL C are wrong on PoCL "
                                  "3.0 with concurrent work-groups (see skiplist.py)",
    # PoCL 3.0 through OpenCL C loses a debug kernel's error raised after a barrier
    # (the barrier sits in the C source's do { ... break; } while (0) region; the
    # same without grid sync, with barrier() alone): no error is reported
    ("opencl-c", "debug_errors_after_barrier"): "a debug error after a barrier is not "
                                                "reported through OpenCL C on PoCL 3.0 "
                                                "(see skiplist.py)",
    ("metal", "print"): "Metal kernels cannot print (no printf in Metal Shading Language)",
    # Metal Shading Language has no 64-bit types in atomics and no doubles.
    ("metal", "atomics_int64"): "Metal has no 64-bit atomic read-modify-write operations",
    ("metal", "atomics_float64"): "Metal has no double precision",
    ("metal", "fence_system"): "Metal has no fence that orders memory for the host while a "
                               "kernel runs",
}


def reason_for(target: str, features) -> str | None:
    """The skip reason for the first of *features* listed for *target*, else None."""
    for f in features:
        r = SKIPLIST.get((target, f))
        if r is not None:
            return f"{target}: {r}"
    return None


def check(device, *features) -> None:
    """Skip the running test if *device*'s target lists one of *features*."""
    import pytest

    r = reason_for(device.target_name, features) if device is not None else None
    if r is not None:
        pytest.skip(r)
