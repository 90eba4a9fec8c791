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
    cbrt, select, round, debug_errors, print
"""

from __future__ import annotations

__all__ = ["SKIPLIST", "reason_for", "check"]

_OPENCL_C = ("the OpenCL C source target (targets/opencl/source.py) defines no {what} in "
             "its source registry 'opencl-c.src' yet")

SKIPLIST: dict[tuple[str, str], str] = {
    # The OpenCL C source emitter (a stand-in for source targets such as Metal).
    ("opencl-c", "shared_dynamic"): "the C source emitter has no dynamic shared memory (it "
                                    "would need a __local kernel parameter as the SPIR-V "
                                    "target adds)",
    ("opencl-c", "barrier_pred"): _OPENCL_C.format(what="__gpux_barrier_count/and/or"),
    ("opencl-c", "fence_system"): _OPENCL_C.format(what="__gpux_fence_system"),
    ("opencl-c", "brev"): _OPENCL_C.format(what="__gpux_brev_i32/i64"),
    ("opencl-c", "atomics_int32"): _OPENCL_C.format(what="__gpux_atomic_*"),
    ("opencl-c", "atomics_int64"): _OPENCL_C.format(what="__gpux_atomic_*"),
    ("opencl-c", "atomics_float32"): _OPENCL_C.format(what="__gpux_atomic_*"),
    ("opencl-c", "atomics_float64"): _OPENCL_C.format(what="__gpux_atomic_*"),
    ("opencl-c", "debug_errors"): "the C source emitter does not accept the debug error "
                                  "buffer's raw compare-and-swap (atomics reach source "
                                  "targets only as __gpux_atomic_* calls)",
    ("opencl-c", "print"): _OPENCL_C.format(what="__gpux_printf_*"),
    ("metal", "debug_errors"): "the Metal target has no debug error buffer yet",
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
