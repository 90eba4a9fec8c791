"""The portable intrinsics: the contract between the shared lowering and targets.

The shared lowering emits calls to the functions below, in the neutral IR
(generic pointers are ``ptr``; ``i64`` indices).  Every target provides a
definition of each one it supports in its overlay registry; a kernel that
uses an intrinsic its target does not define fails validation with the name
of the intrinsic and the target.

Each entry's ``doc`` states what a target must implement.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

__all__ = ["Intrinsic", "INTRINSICS", "call", "declare", "MATH_UNARY", "MATH_BINARY", "math_name"]

I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID = ir.VoidType()


@dataclass(frozen=True)
class Intrinsic:
    name: str
    ret: ir.Type
    args: tuple
    doc: str


INTRINSICS: dict[str, Intrinsic] = {}


def _add(name, ret, args, doc):
    INTRINSICS[name] = Intrinsic(name, ret, tuple(args), doc)


_add("__gpux_thread_idx", I64, [I32],
     "Index of the work-item within its work-group along dimension d (0, 1, 2); "
     "OpenCL get_local_id, CUDA threadIdx.")
_add("__gpux_block_idx", I64, [I32],
     "Index of the work-group within the grid along dimension d; OpenCL get_group_id, CUDA blockIdx.")
_add("__gpux_block_dim", I64, [I32],
     "Work-group size along dimension d; OpenCL get_local_size, CUDA blockDim.")
_add("__gpux_grid_dim", I64, [I32],
     "Number of work-groups along dimension d; OpenCL get_num_groups, CUDA gridDim.")
_add("__gpux_barrier", VOID, [],
     "Work-group execution barrier that also orders work-group (shared) and global "
     "memory; every work-item of the group must reach it.")

#: math functions lowered to __gpux_<name>_<f32|f64>; a target defines each
#: with the device's own implementation (libdevice, OpenCL builtins, metal::)
MATH_UNARY = (
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "exp", "exp2", "expm1", "log", "log2", "log10",
    "log1p", "sqrt", "fabs", "floor", "ceil", "trunc", "erf", "erfc", "tgamma",
    "lgamma", "cbrt", "rint",
)
MATH_BINARY = ("pow", "atan2", "hypot", "fmod", "copysign", "fmin", "fmax")

_FT = {"f32": ir.FloatType(), "f64": ir.DoubleType()}
for _fn in MATH_UNARY:
    for _sfx, _t in _FT.items():
        _add(f"__gpux_{_fn}_{_sfx}", _t, [_t], f"C99 {_fn} on {_sfx}, correctly rounded to the target's documented ulp bound.")
for _fn in MATH_BINARY:
    for _sfx, _t in _FT.items():
        _add(f"__gpux_{_fn}_{_sfx}", _t, [_t, _t], f"C99 {_fn} on {_sfx}.")


def math_name(fn: str, llty: ir.Type) -> str:
    return f"__gpux_{fn}_{'f32' if isinstance(llty, ir.FloatType) else 'f64'}"


def declare(module: ir.Module, name: str) -> ir.Function:
    """Declare the intrinsic *name* in *module* (idempotent)."""
    spec = INTRINSICS[name]
    fnty = ir.FunctionType(spec.ret, spec.args)
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, fnty, name)
    return fn


def call(builder: ir.IRBuilder, name: str, *args):
    """Emit a call to the portable intrinsic *name*."""
    return builder.call(declare(builder.module, name), list(args))
