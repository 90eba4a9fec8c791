"""The one generated piece of launch code: a kernel's arguments as its flat parameters.

For each argument signature the launch path generates ``flatten(args) -> list``
(:func:`_build_flatten`), which turns the arguments into the leaves of the kernel
ABI (``abi.py``): an array into (buffer, byte offset, *shape, *strides), a
complex number into two floats, a tuple into its items' leaves, and so on.  It
writes them in the form the device's runtime declares (``interface.Runtime``):
buffers as its handles or as device addresses with the array's offset added
(``pointer_includes_offset``), scalars as numbers or as their little-endian bytes
(``packed_scalars``).  A runtime then only hands the list to its driver.
"""

from __future__ import annotations

import struct

import numpy as np
from numba.core import types

from . import abi
from .errors import GpuxUserError
from .interface import Runtime
from .memory import resolve_pointer

__all__ = ["buffer_leaves"]


def _np_scalar(ty):
    return np.dtype(str(ty)).type


def _remembering(pack, cap: int = 1024):
    """*pack* for integers, giving the same bytes object for a value packed recently: a
    runtime that compares each launch's leaves with the last launch's by identity first
    (OpenCL's launcher) then skips an unchanged loop bound or size without comparing
    bytes.  Integers only: equal floats can differ in their bytes (0.0 and -0.0)."""
    memo: dict = {}
    get = memo.get

    def packed(v):
        b = get(v)
        if b is None:
            b = pack(v)
            if len(memo) >= cap:
                memo.clear()
            memo[v] = b
        return b

    return packed


#: little-endian packers of the scalar leaves by kind and width ("f4": float32), for
#: runtimes with ``packed_scalars``; generated code calls them as ``_pk_<kind and width>``
_PACKERS = {c: (_remembering if c[0] in "iu" else lambda p: p)(struct.Struct("<" + f).pack)
            for c, f in (("i1", "b"), ("i2", "h"), ("i4", "i"), ("i8", "q"), ("u1", "B"),
                         ("u2", "H"), ("u4", "I"), ("u8", "Q"), ("f2", "e"), ("f4", "f"),
                         ("f8", "d"))}
_pack_i64 = _PACKERS["i8"]
_BYTE = (b"\x00", b"\x01")


def buffer_leaves(runtime, handle, offset: int, ints: tuple = ()) -> tuple:
    """The leaves (buffer, byte offset, *ints) of a buffer at *offset* with the
    ``i64`` leaves *ints* after it (shape and strides), as *runtime* takes them
    (``Runtime.pointer_includes_offset``, ``Runtime.packed_scalars``)."""
    if runtime.pointer_includes_offset:
        handle = handle + offset
    if runtime.packed_scalars:
        return (handle, _pack_i64(offset), *map(_pack_i64, ints))
    return (handle, offset, *ints)


def _array_flat(x) -> tuple:
    """A device array's leaves in the kernel ABI: (buffer, byte offset, *shape,
    *strides), as its device's runtime takes them, kept on the array.  Like its
    ``_launch_key_``, this relies on a device array's buffer, offset, shape and
    strides never changing (views are new arrays)."""
    alloc = x._alloc
    t = buffer_leaves(alloc.device.runtime, alloc.handle, x.offset, (*x.shape, *x.strides))
    x._gpux_flat_ = t
    return t


def _pointer_flat(value, device) -> tuple:
    """An integer device pointer's leaves (buffer, byte offset) on *device*."""
    handle, offset = resolve_pointer(value, device)
    return buffer_leaves(device.runtime if device is not None else Runtime, handle, offset)


def _build_flatten(argtypes, device=None):
    """Generate ``flatten(args) -> list`` for *argtypes*, plus the leaf parameter list
    (``interface.PARAM_KINDS``), in the form the runtime of *device* takes
    (``Runtime.packed_scalars``: scalars as their bytes; arrays' and pointers'
    leaves follow their runtime, see :func:`buffer_leaves`).  Pointer arguments
    are resolved into allocations of *device*."""
    packed = device is not None and device.runtime.packed_scalars
    n = len(argtypes)
    head = ["def flatten(a):",
            f"    {''.join(f'a{i}, ' for i in range(n))}= a" if n else "    pass"]
    lines = ["    return ["]
    env: dict = {"_array_flat": _array_flat, "_pointer_flat": _pointer_flat,
                 "_device": device, "_i8": np.int64, "_byte": _BYTE}
    params: list = []
    nflat = 0

    def scalar(expr: str, dtype) -> str:
        """*expr*, a number of the NumPy type *dtype*, as the runtime takes it."""
        if not packed:
            return expr
        code = np.dtype(dtype).str[1:]  # kind and width: "f4", "i8", ...
        env[f"_pk_{code}"] = _PACKERS[code]
        return f"_pk_{code}({expr})"

    def emit(expr: str, ty):
        nonlocal nflat
        if isinstance(ty, types.Array):
            params.append(("buffer", ty))
            params.append(("i64", None))
            params.extend([("i64", None)] * (2 * ty.ndim))
            # one attribute load per array (its leaves, computed on first use)
            f = f"f{nflat}"
            nflat += 1
            head.extend(["    try:", f"        {f} = {expr}._gpux_flat_",
                         "    except AttributeError:", f"        {f} = _array_flat({expr})"])
            lines.append(f"        *{f},")
        elif isinstance(ty, types.Record):  # a structured scalar's device copy
            params.append(("buffer", ty))
            params.append(("i64", None))
            lines.append(f"        *{expr}._gpux_flat_,")
        elif abi.is_pointer(ty):  # an integer device pointer: (buffer, offset)
            params.append(("buffer", ty))
            params.append(("i64", None))
            lines.append(f"        *_pointer_flat({expr}, _device),")
        elif isinstance(ty, types.Boolean):
            params.append(("i8", np.int8))
            lines.append(f"        {'_byte[1]' if packed else '1'} if {expr} else "
                         f"{'_byte[0]' if packed else '0'},")
        elif isinstance(ty, types.Complex):
            ft = _np_scalar(ty.underlying_float)
            params.extend([("scalar", ft), ("scalar", ft)])
            lines.append(f"        {scalar(f'{expr}.real', ft)}, {scalar(f'{expr}.imag', ft)},")
        elif isinstance(ty, (types.Integer, types.Float)):
            st = _np_scalar(ty)
            params.append(("scalar", st))
            lines.append(f"        {scalar(expr, st)},")
        elif isinstance(ty, abi.DATETIME_TYPES):  # np.datetime64/timedelta64: its int64
            params.append(("scalar", np.int64))
            lines.append(f"        {scalar(f'{expr}.view(_i8)', np.int64)},")
        elif isinstance(ty, (types.EnumMember, types.IntEnumMember)):  # its value's leaves
            emit(f"{expr}.value", ty.dtype)
        elif isinstance(ty, types.BaseTuple):
            for i, t in enumerate(ty.types):
                emit(f"{expr}[{i}]", t)
        elif isinstance(ty, (types.NoneType, types.Opaque)):
            pass  # None, an opaque handle: nothing to pass (abi.py)
        else:
            abi.flatten_type(ty)  # raises the user-facing error
            raise GpuxUserError(f"unsupported kernel argument type {ty}")

    for i, ty in enumerate(argtypes):
        emit(f"a{i}", ty)
    lines.append("    ]")
    src = "\n".join(head + lines)
    # (the packers' names in the text say which it calls)
    key = (src, device) if "_pointer_flat" in src else src
    fn = _flatten_fns.get(key)  # signatures of one structure share the function
    if fn is None:
        exec(src, env)  # noqa: S102 - generated from types only
        fn = _flatten_fns[key] = env["flatten"]
    return fn, params


_flatten_fns: dict = {}
