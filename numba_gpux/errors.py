"""The two kinds of error numba-gpux raises.

* :class:`GpuxUserError` and its subclasses: the user's code or launch is at
  fault.  The message names the kernel's Python source location where there is
  one, and says what to do.
* :class:`InternalCompilerError`: the compiler failed on input it should have
  handled.  The message names the stage and carries the IR it was working on.
"""

from __future__ import annotations

from numba.core.errors import NumbaNotImplementedError, TypingError

__all__ = [
    "DriverError",
    "GpuxUserError",
    "UnsupportedError",
    "NotReportedError",
    "UndefinedNameError",
    "UnprintableError",
    "LaunchError",
    "LaunchTypeError",
    "DeviceNotFoundError",
    "ValidationError",
    "InternalCompilerError",
    "UnknownAttributeError",
    "ToolchainError",
]


class GpuxUserError(Exception):
    """An error the user's code or call caused."""


class UnsupportedError(GpuxUserError):
    """A construct the compiler cannot handle for a kernel."""

    def __init__(self, message: str, loc=None) -> None:
        self.loc = loc
        if loc is not None:
            message = f"{message}\n\n{format_loc(loc)}"
        super().__init__(message)


class NotReportedError(UnsupportedError, NotImplementedError):
    """A question about a kernel or device that the device's driver does not answer
    (OpenCL reports no register count): a NotImplementedError naming the device."""


class UndefinedNameError(UnsupportedError, TypingError):
    """GPU code reads a name that is defined nowhere: also Numba's ``TypingError``, which
    numba.cuda raises for it (and code written for numba.cuda catches)."""

    def __init__(self, message: str, loc=None) -> None:
        UnsupportedError.__init__(self, message, loc)
        self.loc = loc


class UnknownAttributeError(UnsupportedError, AttributeError):
    """GPU code reads an attribute that a module does not have (``cuda.gridd(1)``): the
    builtin ``AttributeError``, which numba.cuda raises for it, at the source line."""


class UnprintableError(NumbaNotImplementedError, NotImplementedError):
    """``print()`` in GPU code of a value it cannot print (an array, a dict), or of more
    values than one device printf takes.  Numba's error for what it does not implement,
    raised at the line, and also the builtin ``NotImplementedError``, which numba.cuda
    raises for it (and code written for numba.cuda catches)."""


class LaunchError(GpuxUserError, ValueError):
    """A kernel launch was rejected before anything ran."""


class LaunchTypeError(LaunchError, TypeError):
    """A launch was given a value of the wrong type (a float grid size, say)."""


class DeviceNotFoundError(GpuxUserError, RuntimeError):
    """No usable device matched the request."""


class ValidationError(GpuxUserError):
    """The finished kernel breaks a rule of its target; all problems are listed."""

    def __init__(self, kernel: str, target: str, problems: list[str]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"kernel {kernel!r} cannot be compiled for {target}:\n{lines}")


class ToolchainError(GpuxUserError, RuntimeError):
    """A tool or library a target needs (ptxas, libdevice, a driver) is missing."""


class DriverError(RuntimeError):
    """A device driver call failed (numba_gpux.cuda's ``CudaDriverError``)."""


class InternalCompilerError(RuntimeError):
    """A bug in numba-gpux: a stage failed on input it should have handled."""

    def __init__(self, stage: str, message: str, ir: str | None = None) -> None:
        self.stage = stage
        self.ir = ir
        text = f"internal compiler error in stage {stage!r}: {message}"
        if ir:
            snippet = ir if len(ir) < 4000 else ir[:4000] + "\n... (truncated)"
            text += f"\n--- IR ---\n{snippet}"
        text += "\nPlease report this with the kernel that triggered it."
        super().__init__(text)


def format_loc(loc) -> str:
    """Render a numba ``ir.Loc`` (or anything with filename/line) as a source pointer."""
    filename = getattr(loc, "filename", "<unknown>")
    line = getattr(loc, "line", None)
    text = f'File "{filename}", line {line}'
    try:
        import linecache

        src = linecache.getline(filename, line).rstrip() if line else ""
        if src:
            text += f"\n    {src.strip()}"
    except Exception:  # pragma: no cover - best effort only
        pass
    return text
