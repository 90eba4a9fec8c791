"""What the library checks print at the end: one line a check, and their exit status."""

from __future__ import annotations


def report(checks) -> int:
    """Print each of *checks* (name, largest difference, tolerance) and return the exit
    status: 1 if a difference is above its tolerance, else 0."""
    bad = 0
    for name, diff, tol in checks:
        ok = diff <= tol
        bad += not ok
        print(f"{name}: largest difference {diff:.3g}{'' if ok else '  OFF'}")
    return 1 if bad else 0
