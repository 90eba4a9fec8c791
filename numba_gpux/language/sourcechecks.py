"""Errors that name the user's source line: constructs GPU code cannot have, found
in the bytecode before typing (:func:`reject_unsupported_constructs`), and failures
inside the code that types or lowers one operation, reported at the statement that
asked for it (:func:`lowering_failure`, :func:`host_library_failure`,
:func:`attribute_failure`)."""

from __future__ import annotations

import difflib

from numba.core import ir
from numba.core.errors import NumbaError

from ..errors import (GpuxUserError, InternalCompilerError, UndefinedNameError,
                      UnknownAttributeError, UnsupportedError, format_loc)

__all__ = ["lowering_failure", "host_library_failure", "attribute_failure",
           "reject_unsupported_constructs", "SourceLoc"]

_OPERATORS = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
              "pow": "**", "lshift": "<<", "rshift": ">>", "and_": "&", "or_": "|", "xor": "^",
              "matmul": "@", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">",
              "ge": ">=", "neg": "unary -", "pos": "unary +", "invert": "~", "not_": "not"}


def lowering_failure(exc, pyfunc):
    """The error to raise for *exc*, an exception other than Numba's own errors raised
    by the code that lowers one operation of *pyfunc* (Numba's, a library's or the
    project's): the bare exception names neither the source line nor the operation.
    None where *exc* is not such a failure.  A lowering function of numba-gpux's own
    that fails is an InternalCompilerError; any other is an UnsupportedError."""
    from numba.core.lowering import BaseLower

    if isinstance(exc, (NumbaError, GpuxUserError, InternalCompilerError)):
        return None
    lower = inst = None
    last_module = ""
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        this = frame.f_locals.get("self")
        if isinstance(this, BaseLower):
            lower = this
            inst = frame.f_locals.get("inst", inst)
        module = frame.f_globals.get("__name__", "")
        if not module.startswith(("llvmlite.", "numba.core.cgutils")):  # helpers: skipped
            last_module = module
        tb = tb.tb_next
    if lower is None or inst is None:
        return None

    def typed(variables) -> str:
        try:
            return ", ".join(str(lower.typeof(v.name)) for v in variables)
        except Exception:  # noqa: BLE001 - the description is best effort
            return "..."

    what = "this statement"
    value = getattr(inst, "value", None)
    if isinstance(value, ir.Expr):
        if value.op in ("binop", "inplace_binop", "unary"):
            fn = getattr(value, "fn", None)
            name = getattr(fn, "__name__", str(fn))
            what = (f"the operator {_OPERATORS.get(name, name)} on "
                    f"({typed(value.list_vars())})")
        elif value.op == "call":
            what = f"the call of {typed([value.func])} with ({typed(value.args)})"
        else:
            what = f"the expression {value.op!r} on ({typed(value.list_vars())})"
    name = getattr(pyfunc, "__qualname__", getattr(pyfunc, "__name__", "kernel"))
    message = f"{name}: generating code for {what} failed: {type(exc).__name__}: {exc}"
    if last_module.startswith("numba_gpux"):
        return InternalCompilerError("lower", f"{message}\n{format_loc(inst.loc)}")
    return UnsupportedError(f"{message} (in the lowering of {last_module}; "
                            f"write the operation another way)", inst.loc)


#: the operations of an f-string with a value in it (3.10-3.12; 3.13 and later)
_FORMAT_OPS = frozenset({"FORMAT_VALUE", "BUILD_STRING", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC",
                         "CONVERT_VALUE"})


def _statement_loc(exc, pyfunc):
    """The location of the innermost statement of *pyfunc* being typed or lowered when
    *exc* was raised (read from its traceback), or None."""
    code = getattr(pyfunc, "__code__", None)
    filename = getattr(code, "co_filename", None)
    loc = None
    tb = exc.__traceback__
    while tb is not None:
        f_locals = tb.tb_frame.f_locals
        for cand in (getattr(f_locals.get("inst"), "loc", None),
                     getattr(f_locals.get("self"), "loc", None), f_locals.get("loc")):
            if isinstance(cand, ir.Loc) and cand.filename == filename:
                loc = cand
        tb = tb.tb_next
    return loc


def host_library_failure(exc, pyfunc):
    """An UnsupportedError at *pyfunc*'s line for *exc*, an ImportError raised while
    typing a call whose implementation needs a host library (Numba's ``np.linalg``
    asks for SciPy's LAPACK): the bare ImportError names no line, and installing the
    library would not make the call possible in GPU code.  None for anything else."""
    if not isinstance(exc, ImportError):
        return None
    loc = _statement_loc(exc, pyfunc)
    if loc is None:
        return None
    name = getattr(pyfunc, "__qualname__", "kernel")
    return UnsupportedError(
        f"{name}: this statement calls an implementation that needs a host library "
        f"({type(exc).__name__}: {exc}); GPU code cannot call it", loc)


def attribute_failure(exc, pyfunc):
    """An UnknownAttributeError at *pyfunc*'s line for *exc*, the AttributeError that
    Numba's typing lets out when GPU code reads an attribute a module does not have
    (``cuda.gridd(1)``, ``math.sqr(x)``): the bare error names no line.  The module's
    names closest to it are suggested.  None for anything else."""
    if not isinstance(exc, AttributeError) or isinstance(exc, GpuxUserError):
        return None
    module = attr = None
    tb = exc.__traceback__
    while tb is not None:  # Numba's look-up of a module's attribute: its module and name
        frame = tb.tb_frame
        if frame.f_code.co_name == "resolve_module_constants":
            module = getattr(frame.f_locals.get("typ"), "pymod", None)
            attr = frame.f_locals.get("attr")
        tb = tb.tb_next
    loc = _statement_loc(exc, pyfunc)
    if module is None or not isinstance(attr, str) or loc is None:
        return None
    try:
        names = [n for n in dir(module) if not n.startswith("_")]
    except Exception:  # noqa: BLE001 - the suggestion is best effort
        names = []
    close = difflib.get_close_matches(attr, names, n=3)
    hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
    name = getattr(pyfunc, "__qualname__", "kernel")
    return UnknownAttributeError(
        f"{name}: AttributeError: module {module.__name__!r} has no attribute "
        f"{attr!r}{hint}", loc)


class SourceLoc:
    """A source location (what errors.format_loc reads) outside Numba's IR."""

    def __init__(self, filename: str, line: int):
        self.filename = filename
        self.line = line


#: the instructions that open a protected range before Python 3.11
_SETUP_OPS = frozenset({"SETUP_FINALLY", "SETUP_WITH", "SETUP_ASYNC_WITH", "SETUP_EXCEPT"})


def _try_message(name: str) -> str:
    return (f"{name}: try/except, try/finally and with-blocks are not supported in "
            f"GPU code (exceptions cannot be caught on the device; with debug=True a raised "
            f"exception is reported on the host)")


def reject_unsupported_constructs(pyfunc) -> None:
    """Constructs GPU code cannot have, reported with the source line before Numba
    gets to them (its errors for these name internals, not the construct, or no line):
    try/with blocks, generator functions and names defined nowhere."""
    import builtins
    import dis
    import inspect

    code = getattr(pyfunc, "__code__", None)
    if code is None:
        return
    name = pyfunc.__qualname__
    instrs = list(dis.get_instructions(code))

    # the line of each instruction: ``positions`` from Python 3.11, before that the last
    # ``starts_line`` at or above it
    lines: dict[int, int] = {}
    current = code.co_firstlineno
    for ins in instrs:
        if ins.starts_line is not None:
            current = ins.starts_line
        lines[ins.offset] = current

    def line_of(ins) -> int:
        pos = getattr(ins, "positions", None)
        return (pos.lineno if pos is not None and pos.lineno else None) or lines[ins.offset]

    if code.co_flags & (inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR | inspect.CO_COROUTINE):
        where = next((ins for ins in instrs if ins.opname in ("YIELD_VALUE", "RETURN_GENERATOR")
                      and line_of(ins) != code.co_firstlineno), None)
        loc = SourceLoc(code.co_filename, line_of(where) if where else code.co_firstlineno)
        raise UnsupportedError(
            f"{name}: a generator (or async) function cannot be a kernel or device function; "
            f"write results into an array argument instead of yielding them", loc)
    entries = getattr(dis.Bytecode(code), "exception_entries", None)
    if entries is None:
        # before Python 3.11 a protected range begins with its SETUP_* instruction
        setups = [ins for ins in instrs if ins.opname in _SETUP_OPS]
        if setups:
            raise UnsupportedError(_try_message(name), SourceLoc(code.co_filename,
                                                                 line_of(setups[0])))
    elif entries:
        start = min(e.start for e in entries)
        # the line of the instruction just before the protected range: the ``try:``
        # (its NOP) or the ``with`` statement, not the first line of the block
        line = code.co_firstlineno
        for ins in instrs:
            if ins.offset >= start:
                break
            line = line_of(ins)
        raise UnsupportedError(_try_message(name), SourceLoc(code.co_filename, line))
    if (getattr(pyfunc, "__module__", None) or "").partition(".")[0] != "numba":
        fmt = next((ins for ins in instrs if ins.opname in _FORMAT_OPS), None)
        if fmt is not None:  # (typing it compiled Numba's str() and failed inside Numba)
            raise UnsupportedError(
                f"{name}: an f-string makes a new string, which GPU code cannot: strings are "
                f"constants there (compared, measured with len(), passed to device "
                f"functions, printed); print the values themselves: print('val', x)",
                SourceLoc(code.co_filename, line_of(fmt)))
    glb = getattr(pyfunc, "__globals__", {})
    for ins in instrs:
        if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and isinstance(ins.argval, str):
            if ins.argval not in glb and not hasattr(builtins, ins.argval):
                if ins.argval == getattr(pyfunc, "__name__", None):
                    # a call of itself, compiled (an eager signature) before its name is
                    # bound: typing finds the function being compiled (the kernel
                    # object registers itself with Numba's typing while it compiles)
                    continue
                loc = SourceLoc(code.co_filename, line_of(ins))
                raise UndefinedNameError(f"{name}: NameError: name {ins.argval!r} is not defined",
                                         loc)
