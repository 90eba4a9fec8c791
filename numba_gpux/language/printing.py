"""``print()`` in kernels.

Each ``print(a, b, ...)`` becomes one call to ``__gpux_printf_<codes>`` with a
format string built at compile time (a module constant in the neutral
*constant* address space) and its values widened to ``i64`` (code ``l``) or
``double`` (code ``d``), so that one printf reaches the device per call and a
work-item's lines appear in program order.  String literals go into the
format; integers print with ``%ld``/``%lu``, floats with ``%g``, complex
numbers as ``(re+imj)``, booleans as ``True``/``False`` (the print branches on
each, every branch a printf with a constant format), tuples as Python writes
them and ``threadIdx`` & co as ``(x, y, z)``.

On the host, the launch of a kernel that prints waits for the kernel and
flushes the C library's stdout (where device runtimes write), after flushing
Python's ``sys.stdout`` first, so output keeps its order with the host's own.
"""

from __future__ import annotations

import ctypes
import hashlib
import sys

from llvmlite import ir
from numba.core import errors, types
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import Registry

from ..errors import UnprintableError
from .intrinsics import PRINTF_MAX_ARGS, call, printf_name

__all__ = ["typing_registry", "lowering_registry", "uses_print", "flush_device_output"]

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.printing")

I64 = ir.IntType(64)
F64 = ir.DoubleType()
#: the neutral constant address space (see interface.NEUTRAL_ADDRSPACES)
CONSTANT_AS = 4


class _Bool:
    """A bool's place in a format: ``True`` or ``False`` is chosen at run time."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def _pieces(context, builder, ty, val, conv="%g"):
    """(format tokens, [(code, llvm value)]) for one printed value, floats written with
    the printf conversion *conv*; a token is text or a :class:`_Bool`."""
    from .stubs import Dim3Stub

    if isinstance(ty, types.StringLiteral):
        return [ty.literal_value.replace("%", "%%")], []
    if isinstance(ty, types.BooleanLiteral):
        return [str(ty.literal_value)], []
    if isinstance(ty, types.Literal) and not isinstance(ty, types.IntegerLiteral):
        return [str(ty.literal_value).replace("%", "%%")], []
    if isinstance(ty, types.NoneType):
        return ["None"], []
    if isinstance(ty, types.Boolean):
        return [_Bool(val)], []
    if isinstance(ty, types.Integer):
        ty = types.unliteral(ty)
        v = context.cast(builder, val, ty, types.int64 if ty.signed else types.uint64)
        return ["%ld" if ty.signed else "%lu"], [("l", v)]
    if isinstance(ty, types.Float):
        return [conv], [("d", context.cast(builder, val, ty, types.float64))]
    if isinstance(ty, types.Complex):
        c = context.make_complex(builder, ty, value=val)
        ft = ty.underlying_float
        re = context.cast(builder, c.real, ft, types.float64)
        im = context.cast(builder, c.imag, ft, types.float64)
        return [f"({conv}{conv[0]}+{conv[1:]}j)"], [("d", re), ("d", im)]
    if isinstance(ty, types.Number):  # an extension's number type (bfloat16): as a float
        return [conv], [("d", context.cast(builder, val, ty, types.float64))]
    if isinstance(ty, types.BaseTuple):  # as Python: (a, b) and (a,)
        tokens, values = ["("], []
        for i, t in enumerate(ty.types):
            if i:
                tokens.append(", ")
            tk, vs = _pieces(context, builder, t, builder.extract_value(val, i), conv)
            tokens.extend(tk)
            values.extend(vs)
        tokens.append(",)" if len(ty.types) == 1 else ")")
        return tokens, values
    if isinstance(ty, types.Module) and isinstance(ty.pymod, Dim3Stub):  # threadIdx & co
        vals = [("l", call(builder, ty.pymod._intrinsic, ir.Constant(ir.IntType(32), d)))
                for d in range(3)]
        return ["(%ld, %ld, %ld)"], vals
    raise UnprintableError(
        f"print() in a kernel takes numbers, booleans, string literals, tuples of those and "
        f"thread/block indices, not {ty}")


def _printf(builder, tokens, codes, values, tags=""):
    """One printf per executed print(): a bool picks between two branches, each a
    printf with its own constant format (formats must be constants on every target).

    Each branch also passes one unused trailing value per bool, an i64 for True and
    a double for False (printf ignores arguments beyond its format), so that every
    branch calls a different printf intrinsic: LLVM never merges calls to different
    functions into one call whose format is a phi of the branches' formats."""
    for k, tok in enumerate(tokens):
        if isinstance(tok, _Bool):
            with builder.if_else(tok.value) as (then, otherwise):
                for taken, (block, code) in zip(("True", "False"), ((then, "l"), (otherwise, "d"))):
                    with block:
                        _printf(builder, tokens[:k] + [taken] + tokens[k + 1:], codes, values,
                                tags + code)
            return
    extra = [ir.Constant(I64, 0) if c == "l" else ir.Constant(F64, 0.0) for c in tags]
    call(builder, printf_name(codes + tags), _format_global(builder.module, "".join(tokens)),
         *values, *extra)


#: bools in one print() (each doubles the printf calls in the code)
MAX_PRINTED_BOOLS = 6


def _format_global(module: ir.Module, text: str):
    data = bytearray(text.encode("utf-8") + b"\0")
    name = "__gpux_fmt_" + hashlib.sha1(bytes(data)).hexdigest()[:16]
    gv = module.globals.get(name)
    if gv is None:
        arr = ir.ArrayType(ir.IntType(8), len(data))
        gv = ir.GlobalVariable(module, arr, name, addrspace=CONSTANT_AS)
        gv.global_constant = True
        gv.linkage = "internal"
        gv.initializer = ir.Constant(arr, data)
    return gv


def _raw_format(ty, conv: str) -> str:
    """The printf format of one value as CUDA's vprintf gets it (numba.cuda's:
    ``%lld``/``%llu``, floats with *conv*, ``%s`` for strings and booleans), which
    a print() of too many values prints instead of the values."""
    from .stubs import Dim3Stub

    if isinstance(ty, (types.StringLiteral, types.Boolean, types.BooleanLiteral)):
        return "%s"
    if isinstance(ty, types.Integer):
        return "%lld" if types.unliteral(ty).signed else "%llu"
    if isinstance(ty, types.Number) and not isinstance(ty, types.Complex):
        return conv  # floats, and an extension's numbers printed as floats
    if isinstance(ty, types.BaseTuple):
        inner = ", ".join(_raw_format(t, conv) for t in ty.types)
        return f"({inner},)" if len(ty.types) == 1 else f"({inner})"
    if isinstance(ty, types.Module) and isinstance(ty.pymod, Dim3Stub):
        return "(%d, %d, %d)"
    return "%s"


@lowering_registry.lower(print, types.VarArg(types.Any))
def print_impl(context, builder, sig, args):
    from .semantics import current_semantics

    rules = current_semantics()
    tokens, values = [], []
    for i, (ty, val) in enumerate(zip(sig.args, args)):
        tk, vals = _pieces(context, builder, ty, val, rules.print_float)
        tokens.extend(([" "] if i else []) + tk)
        values.extend(vals)
    tokens.append("\n")
    nbools = sum(isinstance(t, _Bool) for t in tokens)
    if len(sig.args) > PRINTF_MAX_ARGS and rules.print_too_many == "format":
        # as CUDA's printf, which formats at most 32 values: the format string itself
        # is printed, and the compile warns
        import warnings

        warnings.warn(f"CUDA print() cannot print more than {PRINTF_MAX_ARGS} items. The raw "
                      f"format string will be emitted by the kernel instead.",
                      errors.NumbaWarning)
        raw = " ".join(_raw_format(t, rules.print_float) for t in sig.args) + "\n"
        _printf(builder, [raw.replace("%", "%%")], "", [])
        return context.get_dummy_value()
    if len(values) + nbools > PRINTF_MAX_ARGS:
        raise UnprintableError(
            f"print() in a kernel prints at most {PRINTF_MAX_ARGS} numbers and booleans per "
            f"call (got {len(values) + nbools}); split it into several print() calls")
    if nbools > MAX_PRINTED_BOOLS:
        raise UnprintableError(
            f"print() in a kernel prints at most {MAX_PRINTED_BOOLS} booleans per call; "
            f"split it into several print() calls")
    _printf(builder, tokens, "".join(c for c, _ in values), [v for _, v in values])
    return context.get_dummy_value()


def uses_print(neutral_ir: str) -> bool:
    """Whether a kernel's neutral IR prints (its launches then flush device output)."""
    return "__gpux_printf_" in neutral_ir


_libc = None


def flush_device_output() -> None:
    """Flush the C library's stdout, where device runtimes write printf output."""
    global _libc
    if _libc is None:
        try:
            _libc = ctypes.CDLL(None)
        except OSError:
            _libc = False
    if _libc:
        _libc.fflush(None)
    sys.stdout.flush()
