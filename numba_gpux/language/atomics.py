"""Atomic read-modify-write operations: ``gpux.atomic.<op>(ary, index, value)``.

Every operation returns the value the element held before the update.  ``ary``
is a global or shared (or local) array; ``index`` an int for 1-D arrays and a
tuple of ints with one entry per dimension otherwise.

Lowering, chosen by what every back end accepts (see docs/language-memory.md):

* integer add, sub, and, or, xor, min, max, exchange and compare-and-swap are
  LLVM ``atomicrmw`` / ``cmpxchg`` in the neutral IR (NVPTX and SPIR-V both
  lower them);
* float min/max/nanmin/nanmax, float exchange and float compare-and-swap are
  ``cmpxchg`` loops (or casts) on the integer bits, also in the neutral IR;
* float add/sub and integer inc/dec are portable intrinsics
  (``__gpux_atomic_fadd_*``, ``__gpux_atomic_inc_*``, ``__gpux_atomic_dec_*``):
  NVPTX has instructions for them, LLVM's SPIR-V back end rejects the
  ``atomicrmw`` forms (``fadd`` needs SPV_EXT_shader_atomic_float_add,
  ``uinc_wrap``/``udec_wrap`` cannot be legalized), so SPIR-V defines them as
  ``cmpxchg`` loops.

All atomics are relaxed (``monotonic``) at device scope (``syncscope("device")``),
as CUDA's ``atomicAdd``.  64-bit atomics need the device feature
``int64_atomics``; the validate stage reports a clear error where it is missing.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.core.errors import TypingError
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import AbstractTemplate, Registry, signature

from .intrinsics import INTRINSICS, Intrinsic, call
from .stubs import Stub

__all__ = ["atomic", "typing_registry", "lowering_registry", "ATOMIC_OPS", "ATOMIC_DTYPES",
           "ORDERING"]

GENERIC = ir.PointerType()
#: ordering (and scope) of every atomic the lowering emits
ORDERING = 'syncscope("device") monotonic'

ATOMIC_DTYPES = (types.int32, types.uint32, types.int64, types.uint64, types.float32,
                 types.float64)
_INTS = ATOMIC_DTYPES[:4]
_UINTS = (types.uint32, types.uint64)

#: op -> (supported dtypes, doc)
ATOMIC_OPS = {
    "add": (ATOMIC_DTYPES, "ary[index] += value"),
    "sub": (ATOMIC_DTYPES, "ary[index] -= value"),
    "and_": (_INTS, "ary[index] &= value"),
    "or_": (_INTS, "ary[index] |= value"),
    "xor": (_INTS, "ary[index] ^= value"),
    "min": (ATOMIC_DTYPES, "ary[index] = min(ary[index], value); for floats, a NaN on "
                           "either side leaves ary[index] unchanged"),
    "max": (ATOMIC_DTYPES, "ary[index] = max(ary[index], value); for floats, a NaN on "
                           "either side leaves ary[index] unchanged"),
    "nanmin": (ATOMIC_DTYPES, "ary[index] = min(ary[index], value) treating NaN as missing "
                              "(numpy.fmin)"),
    "nanmax": (ATOMIC_DTYPES, "ary[index] = max(ary[index], value) treating NaN as missing "
                              "(numpy.fmax)"),
    "exch": (ATOMIC_DTYPES, "ary[index] = value"),
    "inc": (_UINTS, "ary[index] = 0 if ary[index] >= value else ary[index] + 1"),
    "dec": (_UINTS, "ary[index] = value if ary[index] == 0 or ary[index] > value "
                    "else ary[index] - 1"),
}


# ---------------------------------------------------------------- the contract
def _contract(name, ret, args, doc):
    INTRINSICS[name] = Intrinsic(name, ret, tuple(args), doc)


for _sfx, _t in (("f32", ir.FloatType()), ("f64", ir.DoubleType())):
    _contract(f"__gpux_atomic_fadd_{_sfx}", _t, [GENERIC, _t],
              f"Atomically add the {_sfx} value to *ptr (a generic pointer to global or shared "
              f"memory), relaxed, device scope; return the old value. CUDA: atom.add.{_sfx}; "
              f"SPIR-V: a cmpxchg loop on the bits (OpAtomicFAddEXT needs an extension).")
for _sfx, _t in (("u32", ir.IntType(32)), ("u64", ir.IntType(64))):
    _contract(f"__gpux_atomic_inc_{_sfx}", _t, [GENERIC, _t],
              f"Atomically *ptr = (old >= v) ? 0 : old + 1 (unsigned {_sfx}), relaxed, device "
              f"scope; return old. LLVM atomicrmw uinc_wrap semantics (CUDA atomicInc).")
    _contract(f"__gpux_atomic_dec_{_sfx}", _t, [GENERIC, _t],
              f"Atomically *ptr = (old == 0 || old > v) ? v : old - 1 (unsigned {_sfx}), "
              f"relaxed, device scope; return old. LLVM atomicrmw udec_wrap semantics "
              f"(CUDA atomicDec).")


# ---------------------------------------------------------------- stubs
class _Namespace(Stub):
    """A namespace of kernel intrinsics (``gpux.atomic``)."""

    def __init__(self, name, description, members):
        super().__init__(name, description)
        for k, v in members.items():
            setattr(self, k, v)

    def __call__(self, *a, **k):
        raise TypeError(f"{self._name} is a namespace; call one of its functions")


_members = {op: Stub(f"atomic.{op}", f"atomic.{op}(ary, index, value): {doc}; returns the "
                                     f"old value. dtypes: {', '.join(map(str, dts))}.")
            for op, (dts, doc) in ATOMIC_OPS.items()}
_members["cas"] = Stub("atomic.cas", "atomic.cas(ary, index, expected, new): if ary[index] == "
                                     "expected (bitwise for floats), store new; returns the old "
                                     "value.")
atomic = _Namespace("atomic", "Atomic operations on global and shared arrays.", _members)

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.atomics")
_lower = lowering_registry.lower
typing_registry.register_global(atomic, types.Module(atomic))


def _check_array_index(name, ary, idx, dtypes):
    if not isinstance(ary, types.Array):
        raise TypingError(f"{name}: the first argument must be an array, not {ary}")
    if not ary.mutable:
        raise TypingError(f"{name}: the array is read-only")
    if ary.dtype not in dtypes:
        raise TypingError(f"{name} supports arrays of {', '.join(map(str, dtypes))}, "
                          f"not {ary.dtype}")
    idx = types.unliteral(idx)
    if isinstance(idx, types.Integer):
        if ary.ndim != 1:
            raise TypingError(f"{name}: a {ary.ndim}-D array needs a tuple of {ary.ndim} "
                              f"indices, not one int")
        return types.intp
    if isinstance(idx, types.BaseTuple):
        if len(idx) != ary.ndim or not all(isinstance(t, types.Integer) for t in idx):
            raise TypingError(f"{name}: a {ary.ndim}-D array needs {ary.ndim} integer "
                              f"indices, not {idx}")
        return types.UniTuple(types.intp, ary.ndim)
    raise TypingError(f"{name}: the index must be an int or a tuple of ints, not {idx}")


def _op_template(op, dtypes):
    stub = getattr(atomic, op)
    name = f"atomic.{op}"

    class T(AbstractTemplate):
        key = stub

        def generic(self, args, kws):
            if kws or len(args) != 3:
                raise TypingError(f"{name}(ary, index, value) takes 3 positional arguments")
            ary, idx, val = args
            idxty = _check_array_index(name, ary, idx, dtypes)
            if not isinstance(types.unliteral(val), (types.Number, types.Boolean)):
                raise TypingError(f"{name}: the value must be a number, not {val}")
            return signature(ary.dtype, ary, idxty, ary.dtype)

    T.__name__ = f"Atomic_{op}"
    typing_registry.register(T)
    typing_registry.register_global(stub, types.Function(T))


for _op, (_dts, _) in ATOMIC_OPS.items():
    _op_template(_op, _dts)


class _Cas(AbstractTemplate):
    key = atomic.cas

    def generic(self, args, kws):
        if kws or len(args) != 4:
            raise TypingError("atomic.cas(ary, index, expected, new) takes 4 positional arguments")
        ary, idx, _old, _new = args
        idxty = _check_array_index("atomic.cas", ary, idx, ATOMIC_DTYPES)
        return signature(ary.dtype, ary, idxty, ary.dtype, ary.dtype)


typing_registry.register(_Cas)
typing_registry.register_global(atomic.cas, types.Function(_Cas))


# ---------------------------------------------------------------- lowering
def _pointer(context, builder, aryty, ary, idxty, idx):
    if isinstance(idxty, types.BaseTuple):
        indices = cgutils.unpack_tuple(builder, idx, len(idxty))
        indices = [context.cast(builder, i, t, types.intp) for i, t in zip(indices, idxty)]
    else:
        indices = [context.cast(builder, idx, idxty, types.intp)]
    lary = context.make_array(aryty)(context, builder, ary)
    return cgutils.get_item_pointer(context, builder, aryty, lary, indices, wraparound=True)


def _int_of(fty):
    return ir.IntType(32 if isinstance(fty, ir.FloatType) else 64)


def _cas_loop(builder, ptr, val, decide):
    """A cmpxchg loop on the integer bits of *ptr*'s float: stores ``decide(old)``
    (a (store?, new) pair) until no other work-item intervened; returns old."""
    fty = val.type
    ity = _int_of(fty)
    ptr = builder.bitcast(ptr, ity.as_pointer())
    first = builder.load_atomic(ptr, ORDERING, align=ity.width // 8, typ=ity)
    entry = builder.block
    loop = builder.append_basic_block("gpux.atomic.loop")
    attempt = builder.append_basic_block("gpux.atomic.attempt")
    done = builder.append_basic_block("gpux.atomic.done")
    builder.branch(loop)
    builder.position_at_end(loop)
    old_i = builder.phi(ity)
    old_i.add_incoming(first, entry)
    old = builder.bitcast(old_i, fty)
    store, new = decide(old)
    builder.cbranch(store, attempt, done)
    builder.position_at_end(attempt)
    pair = builder.cmpxchg(ptr, old_i, builder.bitcast(new, ity), ORDERING, "monotonic")
    seen = builder.extract_value(pair, 0)
    ok = builder.extract_value(pair, 1)
    old_i.add_incoming(seen, attempt)
    builder.cbranch(ok, done, loop)
    builder.position_at_end(done)
    res = builder.phi(ity)
    res.add_incoming(old_i, loop)
    res.add_incoming(old_i, attempt)
    return builder.bitcast(res, fty)


def _float_minmax(builder, ptr, val, op):
    """numba.cuda semantics: min/max leave memory unchanged when either side is NaN;
    nanmin/nanmax replace a NaN in memory and ignore a NaN value."""
    is_max = op.endswith("max")
    if op.startswith("nan"):
        def decide(old):
            # store when val is a number and (old is NaN or val beats old)
            better = builder.fcmp_unordered("<" if is_max else ">", old, val)
            return builder.and_(builder.fcmp_ordered("ord", val, val), better), val
    else:
        def decide(old):
            better = builder.fcmp_ordered("<" if is_max else ">", old, val)
            return better, val
    return _cas_loop(builder, ptr, val, decide)


_INT_RMW = {"add": "add", "sub": "sub", "and_": "and", "or_": "or", "xor": "xor", "exch": "xchg"}


def _op_impl(op):
    def impl(context, builder, sig, args):
        aryty, idxty, valty = sig.args
        ary, idx, val = args
        dtype = aryty.dtype
        ptr = _pointer(context, builder, aryty, ary, idxty, idx)
        if isinstance(dtype, types.Integer):
            if op in _INT_RMW:
                return builder.atomic_rmw(_INT_RMW[op], ptr, val, ORDERING)
            if op in ("min", "max", "nanmin", "nanmax"):
                rmw = ("u" if not dtype.signed else "") + op.removeprefix("nan")
                return builder.atomic_rmw(rmw, ptr, val, ORDERING)
            if op in ("inc", "dec"):
                return call(builder, f"__gpux_atomic_{op}_u{dtype.bitwidth}",
                            builder.bitcast(ptr, GENERIC), val)
        else:
            sfx = f"f{dtype.bitwidth}"
            if op in ("add", "sub"):
                v = builder.fneg(val) if op == "sub" else val
                return call(builder, f"__gpux_atomic_fadd_{sfx}", builder.bitcast(ptr, GENERIC), v)
            if op == "exch":
                ity = _int_of(val.type)
                old = builder.atomic_rmw("xchg", builder.bitcast(ptr, ity.as_pointer()),
                                         builder.bitcast(val, ity), ORDERING)
                return builder.bitcast(old, val.type)
            if op in ("min", "max", "nanmin", "nanmax"):
                return _float_minmax(builder, ptr, val, op)
        raise NotImplementedError(f"atomic.{op} on {dtype}")  # typing prevents this
    return impl


for _op in ATOMIC_OPS:
    _lower(getattr(atomic, _op), types.Array, types.Any, types.Any)(_op_impl(_op))


@_lower(atomic.cas, types.Array, types.Any, types.Any, types.Any)
def _cas_impl(context, builder, sig, args):
    aryty, idxty, _, _ = sig.args
    ary, idx, expected, new = args
    ptr = _pointer(context, builder, aryty, ary, idxty, idx)
    if isinstance(aryty.dtype, types.Float):
        ity = _int_of(expected.type)
        pair = builder.cmpxchg(builder.bitcast(ptr, ity.as_pointer()), builder.bitcast(expected, ity), builder.bitcast(new, ity),
                               ORDERING, "monotonic")
        return builder.bitcast(builder.extract_value(pair, 0), expected.type)
    pair = builder.cmpxchg(ptr, expected, new, ORDERING, "monotonic")
    return builder.extract_value(pair, 0)
