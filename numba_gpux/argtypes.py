"""The Numba types of a launch's arguments, and the error for a value no kernel takes.

The common kinds (Python ints, floats and bools, device arrays) are typed by a table
lookup; anything else through Numba's ``typeof``.  A value that has no type a kernel
can take (a dict, a set, a tuple holding one) is a :class:`LaunchTypeError` that names
the kernel, the parameter and the caller's line (:func:`argument_types`).
"""

from __future__ import annotations

import os
import sys

import numpy as np
from numba.core import types
from numba.core.typing.typeof import Purpose, typeof

from .errors import GpuxUserError, LaunchTypeError
from .memory import DeviceArray

__all__ = ["argument_types", "caller_location", "check_conversions", "int_positions",
           "int_wrapper", "stride_facts", "layout_stride_facts"]

_I64 = types.int64
_F64 = types.float64
_FAST_TYPES = {
    int: lambda v: _I64 if -(2**63) <= v < 2**63 else typeof(v, Purpose.argument),
    float: lambda v: _F64,
    bool: lambda v: types.boolean,
    DeviceArray: lambda v: v._numba_type_,
}

_PLAIN_ARGS = (np.generic, tuple, complex, DeviceArray)


def _typeof(v):
    f = _FAST_TYPES.get(type(v))
    if f is not None:
        return f(v)
    t = getattr(v, "_numba_type_", None)
    if t is not None:
        return t
    try:
        return typeof(v, Purpose.argument)
    except ValueError:
        raise LaunchTypeError(f"cannot pass an argument of type {_what(v)} to a kernel; "
                            f"kernels take arrays, numbers, booleans, records and tuples of "
                            f"those") from None


def _star_args(dispatcher, argtypes: tuple) -> tuple:
    """*argtypes* with the type of the tuple that a kernel's ``*args`` parameter gets
    (launch.bind_arguments packs it) as Numba's ``StarArgTuple``, what Numba types a
    ``*args`` parameter as."""
    star = getattr(dispatcher, "_star_index", None)
    if star is None or star >= len(argtypes) or not isinstance(argtypes[star], types.BaseTuple) \
            or isinstance(argtypes[star], (types.StarArgTuple, types.StarArgUniTuple)):
        return argtypes
    return (argtypes[:star] + (types.StarArgTuple(tuple(argtypes[star].types)),)
            + argtypes[star + 1:])


def _what(v) -> str:
    """The type of the value *v* that no kernel can take, as an error names it: the
    type name, and for a tuple the first element that is the problem."""
    if isinstance(v, tuple):
        for k, item in enumerate(v):
            try:
                _typeof(item)
            except GpuxUserError:
                return f"tuple (its item {k} is a {_what(item)})"
    return type(v).__name__


def caller_location() -> str:
    """``File "...", line N`` and the source line of the innermost frame outside this
    package (the user's launch or call), or '' if there is none."""
    import linecache

    pkg = os.path.dirname(os.path.abspath(__file__)) + os.sep
    f = sys._getframe(1)
    while f is not None and os.path.abspath(f.f_code.co_filename).startswith(pkg):
        f = f.f_back
    if f is None:
        return ""
    src = linecache.getline(f.f_code.co_filename, f.f_lineno).strip()
    return f'File "{f.f_code.co_filename}", line {f.f_lineno}' + (f"\n    {src}" if src else "")


def argument_types(dispatcher, args) -> tuple:
    """The Numba types of a launch's (or call's) *args*; an argument no kernel can take
    is a LaunchTypeError naming the kernel, the parameter (name and position), what
    was passed, and the caller's line."""
    try:
        return _star_args(dispatcher, tuple(map(_typeof, args)))
    except GpuxUserError:
        pass
    names = list(dispatcher._pysig.parameters)
    for i, a in enumerate(args):
        try:
            _typeof(a)
        except GpuxUserError:
            name = f" ({names[i]})" if i < len(names) else ""
            hint = (" (pass a dict's arrays or values as separate arguments, or as a tuple)"
                    if isinstance(a, dict) else "")
            where = caller_location()
            raise LaunchTypeError(
                f"kernel {dispatcher.__name__}: argument {i}{name} is a {_what(a)}, which "
                f"cannot be passed to a kernel; kernels take arrays, numbers, booleans, "
                f"records and tuples of those{hint}" + (f"\n\n{where}" if where else "")
            ) from None
    raise AssertionError("unreachable: every argument has a type")


def int_wrapper(ty):
    """Python int -> the value a C cast to the integer type *ty* gives (wraps around)."""
    size = 1 << ty.bitwidth
    if ty.signed:
        half = size >> 1
        return lambda v: ((int(v) + half) % size) - half
    return lambda v: int(v) % size


def check_conversions(dispatcher, argtypes, compiled) -> None:
    """A :class:`LaunchTypeError` (before anything runs) where an argument of a type in
    *argtypes* is a number the parameter of *compiled* (the signature matched) cannot
    take as it is: a float or a complex for an integer parameter, a complex for a
    float one (numba.cuda raises the TypeError of ctypes' conversion there)."""
    names = list(dispatcher._pysig.parameters)
    for i, (a, t) in enumerate(zip(argtypes, compiled)):
        if isinstance(t, types.Integer) and isinstance(a, (types.Float, types.Complex)) \
                or isinstance(t, types.Float) and isinstance(a, types.Complex):
            name = names[i] if i < len(names) else "*args"
            raise LaunchTypeError(
                f"kernel {dispatcher.__name__}: argument {i} ({name}) is a {a}, but its "
                f"parameter is {t} (the signature compiled): pass a {t} value")


def int_positions(args, argtypes, compiled) -> tuple:
    """The positions of *args* (of types *argtypes*) that are Python ints in the int64
    range passed as int64 parameters (*compiled*, the signature compiled): the
    arguments whose signs pick a launch's code on a target with ``int_argument_facts``."""
    return tuple(i for i, a in enumerate(args) if type(a) is int and i < len(compiled)
                 and argtypes[i] == _I64 and compiled[i] == _I64)


def stride_facts(args) -> tuple:
    """``(position, innermost stride in bytes)`` of the device arrays among *args* whose
    launch runs code compiled for that stride (``Target.array_stride_facts``)."""
    return tuple((i, a._stride_fact_) for i, a in enumerate(args)
                 if isinstance(a, DeviceArray) and a._stride_fact_)


def layout_stride_facts(argtypes, compiled, target) -> tuple:
    """``(position, item size in bytes)`` of the C-contiguous arrays among *argtypes*
    that the signature *compiled* takes as layout "A" (``cuda.jit("void(float32[:, :])")``
    given NumPy's or ``to_device``'s arrays): their innermost stride is their item size,
    which the code may know as the stride facts of views do (``Target.array_stride_facts``
    lists 1 element).  (A C-contiguous array with an innermost extent of 1 may have
    another stride there; its only index is 0, so the code means the same.)"""
    if 1 not in target.array_stride_facts:
        return ()
    from numba.np.numpy_support import as_dtype

    out = []
    for i, (a, c) in enumerate(zip(argtypes, compiled)):
        if isinstance(a, types.Array) and isinstance(c, types.Array) and a.ndim >= 1 \
                and a.layout == "C" and c.layout == "A":
            try:
                out.append((i, as_dtype(c.dtype).itemsize))
            except NotImplementedError:  # (a dtype NumPy has no name for: no fact)
                continue
    return tuple(out)
