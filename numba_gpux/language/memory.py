"""Memory spaces and synchronization: ``gpux.shared``, ``gpux.local``, ``gpux.const``,
``gpux.barrier_count/and/or`` and ``gpux.fence*``.

Lowering (neutral IR, NVPTX address-space numbering):

* a static ``shared.array`` is a module variable in address space 3 (work-group
  memory) cast to generic; each call site has its own variable;
* a dynamic ``shared.array`` (``shape=0``) is the generic pointer returned by
  ``__gpux_dynamic_shared()``, ``__gpux_dynamic_shared_bytes() // itemsize``
  elements long; every dynamic array of a kernel starts at the same address (they
  alias, as in numba.cuda).  How a target provides that memory is its business:
  CUDA uses an ``extern`` shared variable, OpenCL a ``__local`` kernel parameter
  (OpenCL's ``OpenCLOptions.dynamic_shared_params`` and finishing step);
* a ``local.array`` is an ``alloca`` (private memory);
* global NumPy arrays a kernel reads (``const.array_like(ary)`` or a bare global)
  become constant module variables in address space 4 (constant memory) when they
  fit the 64 KiB every target guarantees, else read-only global memory;
* barriers with a predicate and memory fences are portable intrinsics.
"""

from __future__ import annotations


import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.errors import NumbaNotImplementedError, TypingError
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import AbstractTemplate, Registry, signature

from .intrinsics import INTRINSICS, Intrinsic, call
from .stubs import Namespace, Stub

__all__ = ["shared", "local", "const", "barrier_count", "barrier_and", "barrier_or", "nanosleep",
           "fence", "fence_block", "fence_device", "fence_system", "typing_registry",
           "lowering_registry", "make_constant_array", "CONSTANT_MEMORY_LIMIT",
           "LOCAL_ARRAY_LIMIT", "static_shared_bytes",
           "DYNAMIC_SHARED_INTRINSICS"]

I32 = ir.IntType(32)
I64 = ir.IntType(64)
GENERIC = ir.PointerType()
VOID = ir.VoidType()
#: neutral address spaces (interface.NEUTRAL_ADDRSPACES)
AS_SHARED, AS_CONSTANT = 3, 4
#: global arrays larger than this stay in global memory (CUDA's constant bank is 64 KiB)
CONSTANT_MEMORY_LIMIT = 64 * 1024
#: the most bytes one ``local.array`` may take: what CUDA gives a thread (512 KiB of
#: local memory), the least any target allows.  Checked at typing time, so that a
#: huge private array is a clear error instead of an optimizer that never finishes.
LOCAL_ARRAY_LIMIT = 512 * 1024


# ---------------------------------------------------------------- the contract
def _contract(name, ret, args, doc):
    INTRINSICS[name] = Intrinsic(name, ret, tuple(args), doc)


_contract("__gpux_dynamic_shared", GENERIC, [],
          "Generic pointer to the start of the launch's dynamic shared (work-group) memory, "
          "aligned to at least 16 bytes; every call in a kernel returns the same address. "
          "CUDA: an `extern` addrspace(3) variable; OpenCL: a trailing `__local` kernel "
          "parameter added by the target's finishing step (OpenCLOptions.dynamic_shared_params).")
_contract("__gpux_dynamic_shared_bytes", I64, [],
          "Size in bytes of the launch's dynamic shared memory (the `shared_bytes` of "
          "`kernel[grid, block, queue, shared_bytes]`). CUDA: %dynamic_smem_size; OpenCL: a "
          "trailing i64 kernel parameter next to the `__local` one.")
for _op, _what in (("count", "the number of work-items of the group whose predicate is "
                             "non-zero"),
                   ("and", "1 if the predicate is non-zero on every work-item of the group, "
                           "else 0"),
                   ("or", "1 if the predicate is non-zero on some work-item of the group, "
                          "else 0")):
    _contract(f"__gpux_barrier_{_op}", I32, [I32],
              f"Work-group barrier (as __gpux_barrier, ordering shared and global memory) "
              f"that returns {_what}; every work-item must reach it. CUDA: "
              f"__syncthreads_{_op}; OpenCL: barrier + work_group_{'reduce_add' if _op == 'count' else ('all' if _op == 'and' else 'any')}.")
for _scope, _what in (("block", "work-items of the same work-group (CUDA __threadfence_block, "
                                "OpenCL memory_scope_work_group)"),
                      ("device", "every work-item on the device (CUDA __threadfence, "
                                 "OpenCL memory_scope_device)"),
                      ("system", "the device and the host and other devices (CUDA "
                                 "__threadfence_system, OpenCL memory_scope_all_svm_devices)")):
    _contract(f"__gpux_fence_{_scope}", VOID, [],
              f"Sequentially consistent memory fence over shared and global memory, as "
              f"observed by {_what}. No execution barrier.")

_contract("__gpux_nanosleep", VOID, [I32],
          "Suspend the calling work-item for about the given number of nanoseconds (unsigned), "
          "anywhere from 0 to twice that, as CUDA's __nanosleep promises.  Shared default: "
          "return at once (0 ns).  CUDA sm_70+: nanosleep.u32.")


def _shared_nanosleep() -> None:
    from ..overlays import SHARED, registry

    registry(SHARED).define("__gpux_nanosleep", (
        "define void @__gpux_nanosleep(i32 %ns) alwaysinline nounwind {\n  ret void\n}"))


_shared_nanosleep()

DYNAMIC_SHARED_INTRINSICS = ("__gpux_dynamic_shared", "__gpux_dynamic_shared_bytes")


# ---------------------------------------------------------------- stubs
shared = Namespace("shared", "Work-group (shared) memory.", {
    "array": Stub("shared.array",
                  "shared.array(shape, dtype): an array in work-group memory, shared by the "
                  "work-items of a block. shape is an int or a tuple of 1-3 ints known at "
                  "compile time; shape=0 gives the launch's dynamic shared memory (sized by "
                  "kernel[grid, block, queue, shared_bytes]; all dynamic arrays alias)."),
})
local = Namespace("local", "Private (per work-item) memory.", {
    "array": Stub("local.array",
                  "local.array(shape, dtype): an array private to each work-item; shape "
                  "known at compile time."),
})
const = Namespace("const", "Constant memory.", {
    "array_like": Stub("const.array_like",
                       "const.array_like(ary): the global NumPy array ary, copied into the "
                       "kernel's constant memory at compile time (read-only)."),
})
barrier_count = Stub("barrier_count", "barrier_count(pred) -> int32: barrier(); returns how "
                                      "many work-items of the block had pred true.")
barrier_and = Stub("barrier_and", "barrier_and(pred) -> int32: barrier(); returns 1 if pred "
                                  "was true on every work-item of the block, else 0.")
barrier_or = Stub("barrier_or", "barrier_or(pred) -> int32: barrier(); returns 1 if pred "
                                "was true on some work-item of the block, else 0.")
fence = Stub("fence", "fence(scope='device'): a memory fence; scope is 'block' "
                      "('workgroup'), 'device' or 'system'.")
nanosleep = Stub("nanosleep", "nanosleep(ns): suspend this work-item for about ns nanoseconds "
                              "(between 0 and 2*ns; a back-off hint in spin loops).  Targets "
                              "without a sleep instruction return at once.")
fence_block = Stub("fence_block", "fence_block(): memory fence among the work-items of a block.")
fence_device = Stub("fence_device", "fence_device(): memory fence among all work-items of "
                                    "the device.")
fence_system = Stub("fence_system", "fence_system(): memory fence visible to the host and "
                                    "other devices.")

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.memory")
_lower = lowering_registry.lower

for _ns in (shared, local, const):
    typing_registry.register_global(_ns, types.Module(_ns))


def _template(stub, typer, literal=True):
    class T(AbstractTemplate):
        key = stub
        prefer_literal = literal

        def generic(self, args, kws):
            return typer(args, kws)

    T.__name__ = f"Gpux_{getattr(stub, '_name', stub.__name__).replace('.', '_')}"
    typing_registry.register(T)
    typing_registry.register_global(stub, types.Function(T))
    return T


class _NumpyDtype(AbstractTemplate):
    """``np.dtype("float32")`` or ``np.dtype(np.float32)`` in a kernel: a dtype known at
    compile time (e.g. for an array's ``dtype=``), as in Numba's CPU target."""

    key = np.dtype

    def generic(self, args, kws):
        if kws or len(args) != 1:
            return None
        (desc,) = args
        if isinstance(desc, types.StringLiteral):
            text = desc.literal_value
        elif isinstance(desc, types.NumberClass):
            text = str(desc.instance_type)
        else:
            raise TypingError(f"np.dtype() in a kernel takes a string or a NumPy scalar type "
                              f"known at compile time, not {desc}")
        from numba.np.numpy_support import from_dtype

        try:
            nbtype = from_dtype(np.dtype(text))
        except (TypeError, NotImplementedError, NumbaNotImplementedError):
            raise TypingError(f"Invalid NumPy dtype specified: '{text}'") from None
        return signature(types.DType(nbtype), desc)


typing_registry.register(_NumpyDtype)
typing_registry.register_global(np.dtype, types.Function(_NumpyDtype))


@_lower(np.dtype, types.Any)
def _numpy_dtype_impl(context, builder, sig, args):
    return context.get_dummy_value()  # a dtype exists only in the types


# ---------------------------------------------------------------- typing helpers
def _pysig(*names, optional=()):
    import inspect

    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    return inspect.Signature([inspect.Parameter(n, kind) for n in names] +
                             [inspect.Parameter(n, kind, default=None) for n in optional])


def _bind(name, args, kws, params, optional=()):
    """Positional + keyword arguments -> a list in *params* + *optional* order (an
    optional argument not given is None)."""
    every = list(params) + list(optional)
    out = list(args) + [None] * (len(every) - len(args))
    if len(args) > len(every):
        raise TypingError(f"{name}() takes {len(every)} arguments, got {len(args)}")
    for k, v in kws.items():
        if k not in every:
            raise TypingError(f"{name}() got an unexpected keyword argument {k!r}")
        out[every.index(k)] = v
    if any(v is None for v in out[:len(params)]):
        raise TypingError(f"{name}() needs the arguments {', '.join(params)}")
    return out


def _alignment_of(name, alignment) -> int | None:
    """The ``alignment=`` of a shared or local array: None, or a power of two known at
    compile time (numba.cuda's keyword; the address is a multiple of it)."""
    if alignment is None or isinstance(alignment, (types.NoneType, types.Omitted)):
        return None
    if not isinstance(alignment, types.IntegerLiteral):
        from numba.core.errors import RequireLiteralValue

        raise RequireLiteralValue(f"{name}: alignment must be a constant integer, not "
                                  f"{alignment}")
    v = alignment.literal_value
    if v <= 0 or v & (v - 1):
        raise InvalidAlignment(f"{name}: Alignment must be a positive power of 2, not {v}")
    return v


class InvalidAlignment(ValueError):
    """An ``alignment=`` that is no positive power of two: numba.cuda's ValueError, which
    Numba's typing passes on as it is (not a typing failure of one candidate among
    others, which it would report as "no implementation")."""


def _shape_of(name, shape):
    """The shape tuple from the literal type of *shape*."""
    if isinstance(shape, types.IntegerLiteral):
        return (shape.literal_value,)
    if isinstance(shape, types.BaseTuple) and len(shape) > 0:
        if all(isinstance(s, types.IntegerLiteral) for s in shape):
            return tuple(s.literal_value for s in shape)
    # (the templates prefer literals: a value with a literal type never gets here)
    raise TypingError(f"{name}: shape must be an int or a tuple of ints known at compile time "
                      f"(a literal or a global constant), not {shape}")


def _dtype_of(name, dtype):
    if isinstance(dtype, types.DType):
        return dtype.dtype
    if isinstance(dtype, (types.NumberClass, types.TypeRef)):
        return dtype.instance_type
    if isinstance(dtype, types.StringLiteral):
        try:
            from numba.np.numpy_support import from_dtype

            return from_dtype(np.dtype(dtype.literal_value))
        except (TypeError, NotImplementedError, NumbaNotImplementedError):
            # NumPy has no such dtype, or Numba no type for it (numba's wording)
            raise TypingError(f"{name}: Invalid NumPy dtype specified: "
                              f"'{dtype.literal_value}'") from None
    raise TypingError(f"{name}: dtype must be a NumPy or Numba scalar type (np.float32, "
                      f"numba.int64, a record dtype), not {dtype}")


def _itemsize(dt) -> int | None:
    try:
        from numba.np.numpy_support import as_dtype

        return as_dtype(dt).itemsize
    except Exception:  # a type NumPy has no dtype for: its size is checked nowhere here
        return None


def _check_local_size(name, shp, dt) -> None:
    itemsize = _itemsize(dt)
    if itemsize is None:
        return
    nbytes = int(np.prod(shp, dtype=object)) * itemsize
    if nbytes > LOCAL_ARRAY_LIMIT:
        raise TypingError(f"{name}: shape {shp} of {dt} takes {nbytes} bytes, more than the "
                          f"{LOCAL_ARRAY_LIMIT} bytes of private memory a work-item may have; "
                          f"use shared memory or a global array for data this large")


def _array_typer(name, allow_dynamic):
    def typer(args, kws):
        shape, dtype, alignment = _bind(name, args, kws, ["shape", "dtype"], ["alignment"])
        _alignment_of(name, alignment)
        shp = _shape_of(name, shape)
        if shp is None:
            return None  # numba retries with literal argument types
        dt = _dtype_of(name, dtype)
        if any(s < 0 for s in shp):
            raise TypingError(f"{name}: negative size in shape {shp}")
        if 0 in shp and not (allow_dynamic and shp == (0,)):
            what = ("shape=0 (one dimension) asks for dynamic shared memory; "
                    if allow_dynamic else "")
            raise TypingError(f"{name}: {what}a zero size is not allowed in shape {shp}")
        if not allow_dynamic:
            _check_local_size(name, shp, dt)
        # the Python signature lets Numba's lowering fold keyword arguments
        # (numba.cuda code writes shared.array(shape=..., dtype=...))
        alignment = types.Omitted(None) if alignment is None else alignment
        return signature(types.Array(dt, len(shp), "C"), shape, dtype, alignment).replace(
            pysig=_pysig("shape", "dtype", optional=("alignment",)))
    return typer


_template(shared.array, _array_typer("shared.array", True))
_template(local.array, _array_typer("local.array", False))


# ------------------------------------------------ numba.carray / numba.farray
def _cfarray_typer(name, layout):
    """``carray(ptr, shape, dtype=None)``: an array view of the memory a pointer kernel
    argument (``CPointer(dtype)``, or ``voidptr`` with *dtype*) points to.  Numba's
    own overload returns an array made inside a function, which Numba refuses
    without its runtime; this types the call directly."""
    def typer(args, kws):
        if len(args) > 3 or set(kws) - {"dtype"} or (len(args) == 3 and kws):
            raise TypingError(f"{name}(ptr, shape, dtype=None): wrong arguments")
        if len(args) < 2:
            return None
        ptr, shape = args[:2]
        dtype = args[2] if len(args) == 3 else kws.get("dtype")
        if isinstance(ptr, types.CPointer):
            pdt = ptr.dtype
        elif ptr == types.voidptr:
            pdt = None
        else:
            raise TypingError(f"{name}: pointer argument expected, got '{ptr}'")
        if isinstance(dtype, types.NoneType):
            dtype = None
        dt = pdt if dtype is None else _dtype_of(name, dtype)
        if dt is None:
            raise TypingError(f"{name}: explicit dtype required for void* argument")
        if pdt is not None and dt != pdt:
            raise TypingError(f"{name}: mismatching dtype '{dt}' for pointer type '{ptr}'")
        if isinstance(shape, types.Integer):
            ndim = 1
        elif isinstance(shape, types.BaseTuple) and len(shape) and all(
                isinstance(t, types.Integer) for t in shape):
            ndim = len(shape)
        else:
            raise TypingError(f"{name}: invalid shape '{shape}'")
        ret = types.Array(dt, ndim, layout)
        if dtype is None:
            return signature(ret, ptr, shape)
        return signature(ret, ptr, shape, dtype).replace(pysig=_pysig("ptr", "shape", "dtype"))
    return typer


def _register_cfarray():
    from numba.np.numpy_support import carray, farray

    for fn, layout in ((carray, "C"), (farray, "F")):
        _template(fn, _cfarray_typer(fn.__name__, layout), literal=False)

        @_lower(fn, types.Any, types.Any)
        @_lower(fn, types.Any, types.Any, types.Any)
        def _cfarray_impl(context, builder, sig, args):
            aryty, shape_ty = sig.return_type, sig.args[1]
            intp = context.get_value_type(types.intp)
            if isinstance(shape_ty, types.Integer):
                dims = [context.cast(builder, args[1], shape_ty, types.intp)]
            else:
                dims = [context.cast(builder, v, t, types.intp) for v, t in
                        zip(cgutils.unpack_tuple(builder, args[1]), shape_ty)]
            itemsize = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
            strides = [None] * len(dims)
            acc = ir.Constant(intp, itemsize)
            order = range(len(dims) - 1, -1, -1) if aryty.layout == "C" else range(len(dims))
            for k in order:
                strides[k] = acc
                acc = builder.mul(acc, dims[k])
            return _make_array(context, builder, aryty, args[0], dims, strides)


_register_cfarray()


def _const_typer(args, kws):
    (ary,) = _bind("const.array_like", args, kws, ["ary"])
    if not isinstance(ary, types.Array):
        raise TypingError(f"const.array_like takes a global NumPy array, not {ary}")
    return signature(ary, ary)


_template(const.array_like, _const_typer, literal=False)


def _pred_typer(name):
    def typer(args, kws):
        (pred,) = _bind(name, args, kws, ["pred"])
        pred = types.unliteral(pred)
        if isinstance(pred, (types.Boolean, types.Integer, types.Float)):
            return signature(types.int32, pred)
        raise TypingError(f"{name}: the predicate must be a bool or a number, not {pred}")
    return typer


for _stub in (barrier_count, barrier_and, barrier_or):
    _template(_stub, _pred_typer(_stub._name), literal=False)

FENCE_SCOPES = {"block": "block", "workgroup": "block", "work_group": "block", "cta": "block",
                "device": "device", "gpu": "device", "system": "system"}


def _fence_typer(args, kws):
    if not args and not kws:
        return signature(types.none)
    (scope,) = _bind("fence", args, kws, ["scope"])
    if isinstance(scope, types.StringLiteral):
        if scope.literal_value not in FENCE_SCOPES:
            raise TypingError(f"fence: scope must be 'block', 'device' or 'system', not "
                              f"{scope.literal_value!r}")
        return signature(types.none, scope)
    if isinstance(scope, types.UnicodeType):
        return None  # retry with the literal
    raise TypingError(f"fence: scope must be a string literal ('block', 'device', 'system'), "
                      f"not {scope}")


def _nanosleep_typer(args, kws):
    (ns,) = _bind("nanosleep", args, kws, ["ns"])
    if isinstance(types.unliteral(ns), types.Integer):
        return signature(types.none, ns)
    raise TypingError(f"nanosleep: ns must be an integer number of nanoseconds, not {ns}")


_template(nanosleep, _nanosleep_typer, literal=False)
_template(fence, _fence_typer)
for _stub in (fence_block, fence_device, fence_system):
    _template(_stub, lambda args, kws: signature(types.none) if not args and not kws else None,
              literal=False)


# ---------------------------------------------------------------- lowering
def _c_strides(shape, itemsize):
    strides, acc = [], itemsize
    for s in reversed(shape):
        strides.append(acc)
        acc *= s
    return tuple(reversed(strides))


def _make_array(context, builder, aryty, data, shape_vals, stride_vals):
    ary = context.make_array(aryty)(context, builder)
    data = builder.bitcast(data, ary.data.type)
    itemsize = context.get_abi_sizeof(context.get_data_type(aryty.dtype))
    intp = context.get_value_type(types.intp)  # given: a 0-d array has no shape values
    context.populate_array(
        ary, data=data,
        shape=cgutils.pack_array(builder, shape_vals, ty=intp),
        strides=cgutils.pack_array(builder, stride_vals, ty=intp),
        itemsize=context.get_constant(types.intp, itemsize),
        meminfo=None,
    )
    return ary._getvalue()


def _unique_global_name(module, base):
    k = 0
    while f"{base}.{k}" in module.globals:
        k += 1
    return f"{base}.{k}"


def _shape_from_sig(sig):
    s = sig.args[0]
    if isinstance(s, types.IntegerLiteral):
        return (s.literal_value,)
    return tuple(x.literal_value for x in s)


def _align_from_sig(sig, natural: int) -> int:
    """The array's alignment: *natural*, or the ``alignment=`` given if larger."""
    return max(natural, _alignment_of("array", sig.args[2]) or 1)


def _shared_array(context, builder, sig, args):
    aryty = sig.return_type
    shape = _shape_from_sig(sig)
    elty = context.get_data_type(aryty.dtype)
    itemsize = context.get_abi_sizeof(elty)
    align = _align_from_sig(sig, max(16, context.get_abi_alignment(elty)))
    if shape == (0,):
        data = call(builder, "__gpux_dynamic_shared")
        nbytes = call(builder, "__gpux_dynamic_shared_bytes")
        n = builder.udiv(nbytes, ir.Constant(I64, itemsize))
        return _make_array(context, builder, aryty, data, [n], [ir.Constant(I64, itemsize)])
    count = int(np.prod(shape))
    module = builder.module
    name = _unique_global_name(module, f"__gpux_shared.{builder.function.name}")
    gv = ir.GlobalVariable(module, ir.ArrayType(elty, count), name, addrspace=AS_SHARED)
    gv.linkage = "internal"
    gv.initializer = ir.Constant(gv.value_type, ir.Undefined)
    gv.align = align
    data = builder.addrspacecast(gv, GENERIC)
    return _make_array(context, builder, aryty, data,
                       [ir.Constant(I64, s) for s in shape],
                       [ir.Constant(I64, s) for s in _c_strides(shape, itemsize)])


def _local_array(context, builder, sig, args):
    aryty = sig.return_type
    shape = _shape_from_sig(sig)
    elty = context.get_data_type(aryty.dtype)
    itemsize = context.get_abi_sizeof(elty)
    count = int(np.prod(shape))
    # zeroed where it is made, as Numba's alloca_once does, but with a memset: the store of
    # a zero aggregate alloca_once writes is split by SROA and InstCombine in time that
    # grows with the square of its length (20,000 floats took two minutes to compile)
    arrty = ir.ArrayType(elty, count)
    with builder.goto_entry_block():
        data = builder.alloca(arrty, name="gpux.local")
        data.align = _align_from_sig(sig, max(8, context.get_abi_alignment(elty)))
        cgutils.memset(builder, data, ir.Constant(I64, count * itemsize), 0)
    return _make_array(context, builder, aryty, data,
                       [ir.Constant(I64, s) for s in shape],
                       [ir.Constant(I64, s) for s in _c_strides(shape, itemsize)])


for _stub, _impl in ((shared.array, _shared_array), (local.array, _local_array)):
    for _shape in (types.IntegerLiteral, types.BaseTuple):
        _lower(_stub, _shape, types.Any, types.Any)(_impl)  # (shape, dtype, alignment)


@_lower(const.array_like, types.Array)
def _const_array_like(context, builder, sig, args):
    # the global array was already materialized by make_constant_array
    return args[0]


def make_constant_array(context, builder, typ, ary):
    """A global NumPy array as a constant module variable in constant memory
    (neutral address space 4) when it fits :data:`CONSTANT_MEMORY_LIMIT`, else in
    read-only global memory; returns the array structure (generic data pointer)."""
    datatype = context.get_data_type(typ.dtype)
    order = "F" if typ.layout == "F" else "C"
    flat = ary.flatten(order=order)
    consts = cgutils.create_constant_array(ir.IntType(8), bytearray(flat.data))
    module = builder.module
    name = _unique_global_name(module, "__gpux_const")
    addrspace = AS_CONSTANT if ary.nbytes <= CONSTANT_MEMORY_LIMIT else 0
    gv = ir.GlobalVariable(module, consts.type, name, addrspace=addrspace)
    gv.linkage = "internal"
    gv.global_constant = True
    gv.initializer = consts
    gv.align = max(16, context.get_abi_alignment(datatype))
    data = builder.addrspacecast(gv, GENERIC) if addrspace else gv
    # the copy is contiguous in *order* whatever the original layout was
    strides = flat.reshape(ary.shape, order=order).strides
    return _make_array(context, builder, typ, data,
                       [ir.Constant(I64, s) for s in ary.shape],
                       [ir.Constant(I64, s) for s in strides])


def _pred_impl(intrinsic):
    def impl(context, builder, sig, args):
        pred = context.cast(builder, args[0], sig.args[0], types.boolean)
        return call(builder, intrinsic, builder.zext(pred, I32))
    return impl


_lower(barrier_count, types.Any)(_pred_impl("__gpux_barrier_count"))
_lower(barrier_and, types.Any)(_pred_impl("__gpux_barrier_and"))
_lower(barrier_or, types.Any)(_pred_impl("__gpux_barrier_or"))


def _fence_impl(scope):
    def impl(context, builder, sig, args):
        call(builder, f"__gpux_fence_{scope}")
        return context.get_dummy_value()
    return impl


_lower(fence)(_fence_impl("device"))
_lower(fence_block)(_fence_impl("block"))
_lower(fence_device)(_fence_impl("device"))
_lower(fence_system)(_fence_impl("system"))


@_lower(nanosleep, types.Integer)
def _nanosleep_impl(context, builder, sig, args):
    call(builder, "__gpux_nanosleep", context.cast(builder, args[0], sig.args[0], types.uint32))
    return context.get_dummy_value()


@_lower(fence, types.StringLiteral)
def _fence_scope(context, builder, sig, args):
    return _fence_impl(FENCE_SCOPES[sig.args[0].literal_value])(context, builder, sig, args)


_sizes: dict = {}


def _type_size(ty: str) -> int:
    size = _sizes.get(ty)
    if size is None:
        import llvmlite.binding as llvm

        mod = llvm.parse_assembly(f"@g = external global {ty}")
        td = llvm.create_target_data(mod.data_layout or "e")
        size = _sizes[ty] = td.get_abi_size(mod.get_global_variable("g").global_value_type)
    return size


def _variables(neutral_text: str, prefixes: tuple, space: int, kind: str, inits: tuple):
    """The value types of the module variables of *neutral_text* named with one of
    *prefixes*, in *space*, of *kind*, whose initializer starts with one of *inits*."""
    if not any(p in neutral_text for p in prefixes):  # (a quick no)
        return []
    from .. import irtext

    return [ty for name, sp, k, ty, init in irtext.module_variables(neutral_text)
            if name.startswith(prefixes) and sp == space and k == kind and init is not None
            and init.startswith(inits)]


def constant_bytes(neutral_text: str) -> int:
    """Bytes of the constant memory a kernel's neutral module defines: constant arrays
    and the global NumPy arrays it reads (up to CONSTANT_MEMORY_LIMIT each), and the
    format strings of its ``print`` calls."""
    return sum(_type_size(ty) for ty in _variables(
        neutral_text, ("__gpux_const", "__gpux_fmt_"), 4, "constant",
        ('c"', "[", "zeroinitializer")))


def static_shared_bytes(neutral_text: str) -> int:
    """Bytes of the static shared arrays a kernel's neutral module declares (its device
    functions' included), for the launch limit check before a program is built (the
    neutral module's shared arrays, as _shared_array names them)."""
    return sum(_type_size(ty) for ty in _variables(
        neutral_text, ("__gpux_shared.",), 3, "global", ("undef", "zeroinitializer", "poison")))
