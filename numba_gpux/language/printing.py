"""``print()`` in kernels.

Each ``print(a, b, ...)`` becomes one call to ``__gpux_printf_<codes>`` with a
format string built at compile time (a module constant in the neutral
*constant* address space) and its values widened to ``i64`` (code ``l``) or
``double`` (code ``d``), so that one printf reaches the device per call and a
work-item's lines appear in program order.  String literals go into the
format; integers print with ``%ld``/``%lu``, floats with ``%g``, complex
numbers as ``(re+imj)``, booleans as 1/0.

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

from .intrinsics import PRINTF_MAX_ARGS, call, printf_name

__all__ = ["typing_registry", "lowering_registry", "uses_print", "flush_device_output"]

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.printing")

I64 = ir.IntType(64)
F64 = ir.DoubleType()
#: the neutral constant address space (see interface.NEUTRAL_ADDRSPACES)
CONSTANT_AS = 4


def _pieces(context, builder, ty, val):
    """(format piece, [(code, llvm value)]) for one printed value."""
    if isinstance(ty, types.StringLiteral):
        return ty.literal_value.replace("%", "%%"), []
    if isinstance(ty, types.Literal) and not isinstance(ty, types.IntegerLiteral):
        return str(ty.literal_value).replace("%", "%%"), []
    if isinstance(ty, types.NoneType):
        return "None", []
    if isinstance(ty, types.Boolean):
        return "%ld", [("l", builder.zext(val, I64))]
    if isinstance(ty, types.Integer):
        ty = types.unliteral(ty)
        v = context.cast(builder, val, ty, types.int64 if ty.signed else types.uint64)
        return ("%ld" if ty.signed else "%lu"), [("l", v)]
    if isinstance(ty, types.Float):
        return "%g", [("d", context.cast(builder, val, ty, types.float64))]
    if isinstance(ty, types.Complex):
        c = context.make_complex(builder, ty, value=val)
        ft = ty.underlying_float
        re = context.cast(builder, c.real, ft, types.float64)
        im = context.cast(builder, c.imag, ft, types.float64)
        return "(%g%+gj)", [("d", re), ("d", im)]
    raise errors.NumbaNotImplementedError(
        f"print() in a kernel takes numbers, booleans and string literals, not {ty}")


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


@lowering_registry.lower(print, types.VarArg(types.Any))
def print_impl(context, builder, sig, args):
    fmt, values = [], []
    for ty, val in zip(sig.args, args):
        piece, vals = _pieces(context, builder, ty, val)
        fmt.append(piece)
        values.extend(vals)
    if len(values) > PRINTF_MAX_ARGS:
        raise errors.NumbaNotImplementedError(
            f"print() in a kernel prints at most {PRINTF_MAX_ARGS} numbers per call "
            f"(got {len(values)}); split it into several print() calls")
    text = " ".join(fmt) + "\n"
    codes = "".join(c for c, _ in values)
    call(builder, printf_name(codes), _format_global(builder.module, text),
         *[v for _, v in values])
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
