"""The kernel argument ABI, shared by the device-side wrapper and the host-side shims.

Every kernel argument is flattened into scalars and buffers:

* an array becomes ``(buffer, byte_offset, shape[0..n), strides[0..n))``
  where the buffer is a pointer in the neutral *global* address space and
  shape and strides (in bytes) are ``i64``.  The entry point finds the data at
  ``buffer + __gpux_array_offset(byte_offset)``: the portable intrinsic returns
  its argument by default; a target whose launcher passes ``buffer +
  byte_offset`` as the pointer (CUDA, where buffers are device addresses)
  defines it as 0, so the offset is neither loaded nor kept live in the kernel;
* a pointer (``CPointer(dtype)``, ``voidptr``: numba.cuda's raw device pointers)
  becomes ``(buffer, byte_offset)``, the first two leaves of an array; the host
  passes an integer device pointer (``memory.device_pointer``), resolved at launch
  into the allocation it points into and the offset in it;
* a record (a NumPy structured scalar, ``numba.types.Record``) becomes ``(buffer,
  byte_offset)`` too: the host copies the record's bytes to the device for the launch
  (and back after it), and the kernel gets a pointer to them, Numba's value of a
  record;
* a bool becomes ``i8``; integers and floats stay themselves;
* a complex number becomes ``(real, imag)``; tuples are flattened in order.
"""

from __future__ import annotations

from typing import NamedTuple

from numba.core import types

from .errors import GpuxUserError

__all__ = ["Param", "flatten_type", "ARRAY", "POINTER", "RECORD", "SCALAR", "BOOL",
           "DATETIME_TYPES", "is_pointer", "param_starts", "LaunchFacts", "NO_FACTS"]

ARRAY, POINTER, RECORD, SCALAR, BOOL = "array", "pointer", "record", "scalar", "bool"

#: NumPy's datetime64 and timedelta64 (any unit): a signed 64-bit count of units,
#: NaT being its smallest value, in arrays and as scalars
DATETIME_TYPES = (types.NPDatetime, types.NPTimedelta)


def is_pointer(ty) -> bool:
    """A raw pointer kernel argument type."""
    return isinstance(ty, types.CPointer) or ty == types.voidptr


class Param:
    """One flattened leaf of an argument type: (kind, numba type)."""

    __slots__ = ("kind", "ty")

    def __init__(self, kind: str, ty):
        self.kind = kind
        self.ty = ty

    def __repr__(self):
        return f"Param({self.kind}, {self.ty})"


def _plain_struct(ty) -> bool:
    """An extension type whose data model is a struct of numbers and booleans only (an
    element of fixed size with no pointers: arrays of it can live in device memory)."""
    from numba.core import datamodel

    try:
        model = datamodel.default_manager.lookup(ty)
    except Exception:  # noqa: BLE001 - no data model: not an element type
        return False
    if not isinstance(model, datamodel.models.StructModel):
        return False
    members = getattr(model, "_members", ())
    return bool(members) and all(isinstance(m, (types.Number, types.Boolean)) or
                                 _plain_struct(m) for m in members)


def flatten_type(ty, where: str = "argument") -> list[Param]:
    """The leaves of a kernel argument type, in ABI order."""
    if isinstance(ty, types.Array):
        if not (isinstance(ty.dtype, (types.Number, types.Boolean, types.Record,
                                      types.CharSeq, types.UnicodeCharSeq) + DATETIME_TYPES)
                or _plain_struct(ty.dtype)):
            raise GpuxUserError(f"{where}: arrays of {ty.dtype} cannot be passed to a kernel")
        return [Param(ARRAY, ty)]
    if is_pointer(ty):
        return [Param(POINTER, ty)]
    if isinstance(ty, types.Record):
        return [Param(RECORD, ty)]
    if isinstance(ty, types.Boolean):
        return [Param(BOOL, ty)]
    if isinstance(ty, types.Complex):
        return [Param(SCALAR, ty.underlying_float), Param(SCALAR, ty.underlying_float)]
    if isinstance(ty, (types.Integer, types.Float)):
        return [Param(SCALAR, ty)]
    if isinstance(ty, DATETIME_TYPES):  # NumPy's datetime64/timedelta64: an int64 count
        return [Param(SCALAR, ty)]
    if isinstance(ty, types.BaseTuple):
        out: list[Param] = []
        for i, t in enumerate(ty.types):
            out.extend(flatten_type(t, f"{where}[{i}]"))
        return out
    if isinstance(ty, (types.EnumMember, types.IntEnumMember)):
        return flatten_type(ty.dtype, where)
    if isinstance(ty, types.NoneType):  # ``out=None``: no leaves, the kernel sees None
        return []
    if isinstance(ty, types.Opaque):
        # an opaque handle (an extension's type with Numba's OpaqueModel): no data
        # reaches the device; the kernel sees Numba's dummy value, as a CPU function
        # unboxing it does, and can use what its type gives at compile time
        return []
    raise GpuxUserError(
        f"{where} of type {ty} cannot be passed to a kernel; kernels take arrays, "
        f"numbers, booleans, records, opaque handles and tuples of those"
    )


def param_starts(argtypes) -> list[int]:
    """The position of each argument's first parameter in the kernel entry point's
    flat parameter list (an array's leaf is ``2 + 2 * ndim`` parameters, a pointer's
    and a record's 2, any other leaf 1)."""
    starts, pos = [], 0
    for ty in argtypes:
        starts.append(pos)
        for leaf in flatten_type(ty):
            pos += (2 + 2 * leaf.ty.ndim if leaf.kind == ARRAY
                    else 2 if leaf.kind in (POINTER, RECORD) else 1)
    return starts


class LaunchFacts(NamedTuple):
    """What a launch tells the code compiled for it, beside its argument types: each
    set of facts is its own code (``GpuxFunction.code_for``), in every cache key.

    * ``nonneg``: positions of the int64 arguments that are >= 0
      (``Target.int_argument_facts``; their parameters get ``range(i64 0, 2**63)``);
    * ``strides``: ``(position, bytes)`` of the layout-"A" arrays whose innermost
      stride is that constant (``Target.array_stride_facts``; a ``range`` of one value
      on the stride's parameter);
    * ``wide``: the launch has 2**32 or more work-items along a dimension, so the
      global index is the portable sum, not a target's built-in that a driver computes
      in 32 bits (the artifact's info ``global_ids_32bit``);
    * ``lanes``: the launch exchanges the grid's first two dimensions, and the code
      every index it asks for (``lanes.exchange_first_dims``), so that the work-items
      of dimension 1 are neighbouring lanes (``launch.lanes_follow_memory``);
    * ``warp_rows``: the launch's blocks are rows of whole warps (``blockDim.x`` a
      multiple of the warp width, or blocks one row high), so a kernel that shares
      work-group memory runs its warps in lockstep where it reads a y or z index too
      (``stages._warp_lockstep``);
    * ``block``: ``(x, y, z)``, the launch's blocks, which it runs as rows of ``x * y *
      z`` threads (``lanes.flatten_block``), so that a kernel with warp operations gets
      CUDA's warps in blocks that are not rows of whole warps (``stages.warp_ops_width``).
    """

    nonneg: tuple = ()
    strides: tuple = ()
    wide: bool = False
    lanes: bool = False
    warp_rows: bool = False
    block: tuple = ()

    def param_ranges(self, argtypes) -> dict:
        """``{parameter position: (lo, hi)}`` of the entry point's parameters that carry
        these facts, for a kernel of *argtypes* (an array's leaves are buffer, offset,
        shape, strides: its innermost stride is the last)."""
        starts = param_starts(argtypes)
        ranges = {starts[i]: (0, 2 ** 63) for i in self.nonneg}
        for i, stride in self.strides:
            ranges[starts[i] + 1 + 2 * argtypes[i].ndim] = (stride, stride + 1)
        return ranges


#: a launch that tells the code nothing
NO_FACTS = LaunchFacts()
