"""Atomic read-modify-write operations: ``gpux.atomic.<op>(ary, index, value)``.

Every operation returns the value the element held before the update.  ``ary``
is a global or shared (or local) array; ``index`` an int for 1-D arrays and a
tuple of ints with one entry per dimension otherwise.

Each operation lowers to one portable intrinsic per (operation, type):
``__gpux_atomic_<op>_<t>(ptr, value) -> old`` and
``__gpux_atomic_cas_<t>(ptr, expected, new) -> old``, where ``ptr`` is a generic
pointer and ``<t>`` is ``i32``/``i64`` (``u32``/``u64`` where signedness matters:
min, max, inc, dec) or ``f32``/``f64`` (see :data:`ATOMIC_INTRINSICS`).  Targets
whose back end is LLVM define them with :func:`llvm_definition`, which writes
``atomicrmw``/``cmpxchg`` where the back end has the instruction and a
``cmpxchg`` loop on the integer bits where it does not (SPIR-V has no float add
without an extension and cannot legalize ``uinc_wrap``/``udec_wrap``); source
targets (OpenCL C, MSL) map the names to their own atomic functions.

All atomics are relaxed (``monotonic``) at device scope (``syncscope("device")``),
as CUDA's ``atomicAdd``.  64-bit atomics need the device feature
``int64_atomics``; the validate stage reports a clear error where it is missing.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.core.errors import TypingError
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import AbstractTemplate, Registry, signature

from .intrinsics import INTRINSICS, Intrinsic, call, element_pointer
from .stubs import Namespace, Stub

__all__ = ["atomic", "typing_registry", "lowering_registry", "ATOMIC_OPS", "ATOMIC_DTYPES",
           "ATOMIC_INTRINSICS", "ORDERING", "intrinsic_name", "intrinsic_suffix",
           "llvm_definition"]

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
_LLTYPES = {"i32": ir.IntType(32), "u32": ir.IntType(32), "i64": ir.IntType(64),
            "u64": ir.IntType(64), "f32": ir.FloatType(), "f64": ir.DoubleType()}
_SIGNED_OPS = ("min", "max", "inc", "dec")


def intrinsic_suffix(op: str, dtype) -> str:
    """The type suffix of the intrinsic for atomic *op* on *dtype*."""
    if isinstance(dtype, types.Float):
        return f"f{dtype.bitwidth}"
    if op in _SIGNED_OPS:
        return f"{'i' if dtype.signed else 'u'}{dtype.bitwidth}"
    return f"i{dtype.bitwidth}"


def _intrinsic_op(op: str, dtype) -> str:
    if isinstance(dtype, types.Integer) and op in ("nanmin", "nanmax"):
        return op[3:]  # NaN does not exist for integers
    return op.rstrip("_")


def intrinsic_name(op: str, dtype) -> str:
    """The portable intrinsic that ``atomic.<op>`` on an array of *dtype* lowers to."""
    iop = _intrinsic_op(op, dtype)
    return f"__gpux_atomic_{iop}_{intrinsic_suffix(iop, dtype)}"


#: intrinsic name -> (operation, suffix)
ATOMIC_INTRINSICS: dict[str, tuple[str, str]] = {}
for _op, (_dts, _doc) in ATOMIC_OPS.items():
    for _dt in _dts:
        _name = intrinsic_name(_op, _dt)
        _iop, _sfx = _name[len("__gpux_atomic_"):].rsplit("_", 1)
        if _name in ATOMIC_INTRINSICS:
            continue
        ATOMIC_INTRINSICS[_name] = (_iop, _sfx)
        _t = _LLTYPES[_sfx]
        INTRINSICS[_name] = Intrinsic(
            _name, _t, (GENERIC, _t),
            f"Atomically, relaxed, device scope: {_doc.replace('ary[index]', '*ptr').replace('value', 'v')} "
            f"on {_sfx}; *ptr is a generic pointer to global or shared memory; return the "
            f"old value.")
for _sfx in ("i32", "i64", "f32", "f64"):
    _name = f"__gpux_atomic_cas_{_sfx}"
    ATOMIC_INTRINSICS[_name] = ("cas", _sfx)
    _t = _LLTYPES[_sfx]
    INTRINSICS[_name] = Intrinsic(
        _name, _t, (GENERIC, _t, _t),
        f"Atomically, relaxed, device scope: if *ptr == expected (compared bitwise for "
        f"floats) store new; return the old value ({_sfx}).")


def llvm_definition(name: str, ptr: str, native: frozenset = frozenset()) -> str:
    """LLVM IR text defining the atomic intrinsic *name* with pointers spelled *ptr*
    (``"ptr"``, ``"ptr addrspace(4)"``).  *native* names the read-modify-write
    forms the back end lowers itself: ``"fadd"`` (float add/sub) and ``"incdec"``
    (``uinc_wrap``/``udec_wrap``); without them those are ``cmpxchg`` loops, as
    float min/max always are."""
    op, sfx = ATOMIC_INTRINSICS[name]
    t = str(_LLTYPES[sfx])
    it = f"i{sfx[1:]}"
    head = f"define {t} @{name}({ptr} %p, {t} %v{f', {t} %n' if op == 'cas' else ''}) " \
           f"alwaysinline nounwind {{"
    is_float = sfx.startswith("f")
    if op == "cas":
        if is_float:
            body = [f"  %e = bitcast {t} %v to {it}", f"  %ni = bitcast {t} %n to {it}",
                    f"  %pair = cmpxchg {ptr} %p, {it} %e, {it} %ni {ORDERING} monotonic",
                    f"  %oi = extractvalue {{ {it}, i1 }} %pair, 0",
                    f"  %o = bitcast {it} %oi to {t}", f"  ret {t} %o"]
        else:
            body = [f"  %pair = cmpxchg {ptr} %p, {t} %v, {t} %n {ORDERING} monotonic",
                    f"  %o = extractvalue {{ {t}, i1 }} %pair, 0", f"  ret {t} %o"]
        return "\n".join([head, *body, "}"])
    rmw = None
    if not is_float:
        rmw = {"add": "add", "sub": "sub", "and": "and", "or": "or", "xor": "xor",
               "exch": "xchg"}.get(op)
        if op in ("min", "max"):
            rmw = ("" if sfx[0] == "i" else "u") + op
        if op in ("inc", "dec") and "incdec" in native:
            rmw = {"inc": "uinc_wrap", "dec": "udec_wrap"}[op]
    elif op in ("add", "sub") and "fadd" in native:
        rmw = "f" + op
    if rmw is not None:
        return "\n".join([head, f"  %o = atomicrmw {rmw} {ptr} %p, {t} %v {ORDERING}",
                          f"  ret {t} %o", "}"])
    if is_float and op == "exch":
        return "\n".join([head, f"  %vi = bitcast {t} %v to {it}",
                          f"  %oi = atomicrmw xchg {ptr} %p, {it} %vi {ORDERING}",
                          f"  %o = bitcast {it} %oi to {t}", f"  ret {t} %o", "}"])
    # a cmpxchg loop: %store (i1) and %new (t) from %old
    decide = {
        "add": ["  %new = fadd {t} %old, %v"], "sub": ["  %new = fsub {t} %old, %v"],
        "max": ["  %store = fcmp olt {t} %old, %v"], "min": ["  %store = fcmp ogt {t} %old, %v"],
        # a NaN in memory is replaced (a NaN value changes nothing: see ``guard``)
        "nanmax": ["  %store = fcmp ult {t} %old, %v"],
        "nanmin": ["  %store = fcmp ugt {t} %old, %v"],
        "inc": ["  %lt = icmp ult {t} %old, %v", "  %inc = add {t} %old, 1",
                "  %new = select i1 %lt, {t} %inc, {t} 0"],
        "dec": ["  %dec = add {t} %old, -1", "  %lt = icmp ult {t} %dec, %v",
                "  %new = select i1 %lt, {t} %dec, {t} %v"],
    }[op]
    lines = [x.format(t=t) for x in decide]
    store = "%store" if any("%store =" in x for x in lines) else "true"
    new = "%new" if any("%new =" in x for x in lines) else "%v"
    # nanmin/nanmax: a NaN value changes nothing (decided before any atomic), and the
    # others are one integer min/max on the bits (_nan_minmax_fast) with the loop as
    # the fallback for the one case that integer order gets wrong
    guard = op in ("nanmin", "nanmax")
    load = f"load atomic {it}, {ptr} %p {ORDERING}, align {int(it[1:]) // 8}"
    if guard:
        enter = [f"  %vok = fcmp ord {t} %v, %v", "  br i1 %vok, label %fast, label %keep",
                 "keep:", f"  %cur = {load}", f"  %curf = bitcast {it} %cur to {t}",
                 f"  ret {t} %curf", *_nan_minmax_fast(op, t, it, ptr), "slow:"]
        first_from = "%slow"
    else:
        enter, first_from = [], "%entry"
    return "\n".join([
        head, "entry:", *enter, f"  %first = {load}", "  br label %loop", "loop:",
        f"  %oldi = phi {it} [ %first, {first_from} ], [ %seen, %attempt ]",
        f"  %old = bitcast {it} %oldi to {t}",
        *lines,
        f"  br i1 {store}, label %attempt, label %done", "attempt:",
        f"  %newi = bitcast {t} {new} to {it}",
        f"  %pair = cmpxchg {ptr} %p, {it} %oldi, {it} %newi {ORDERING} monotonic",
        f"  %seen = extractvalue {{ {it}, i1 }} %pair, 0",
        f"  %ok = extractvalue {{ {it}, i1 }} %pair, 1",
        "  br i1 %ok, label %done, label %loop", "done:",
        f"  %res = phi {it} [ %oldi, %loop ], [ %oldi, %attempt ]",
        f"  %r = bitcast {it} %res to {t}", f"  ret {t} %r", "}"])


def _nan_minmax_fast(op: str, t: str, it: str, ptr: str) -> list[str]:
    """IR blocks ``fast`` onwards of nanmin/nanmax for a value %v that is not NaN: one
    integer atomic on the bits, then ``ret``, or ``br label %slow`` (the loop).

    Floats of one sign are ordered as their bits are: as signed integers when
    non-negative, in reverse as unsigned integers when negative, and a negative
    value's bits are above every non-negative one's as unsigned integers, below as
    signed.  So for %v >= +0 nanmin is a signed ``min`` of the bits and for %v <= -0
    an unsigned ``umax`` (nanmax: ``max`` / ``umin``), which also replaces a NaN in
    memory, except one NaN per operation: a negative NaN for nanmin (its bits are
    the largest unsigned and negative signed) and a positive one for nanmax.  That
    NaN stays in memory untouched and comes back as the old value, and the ``cmpxchg``
    loop then replaces it.  One atomic instead of a loop of them under contention,
    and fewer live registers."""
    bits = int(it[1:])
    pos, neg = ("min", "umax") if op == "nanmin" else ("max", "umin")
    # the bits of -inf / +inf: a NaN of that sign has bits above them
    ninf, pinf = (0xFF800000, 0x7F800000) if bits == 32 else (0xFFF0000000000000,
                                                            0x7FF0000000000000)
    stuck = (f"  %stuck = icmp ugt {it} %o, {ninf - (1 << bits)}" if op == "nanmin" else
             f"  %stuck = icmp sgt {it} %o, {pinf}")
    # a zero of the sign the integer order would put past the other zero (+0 for
    # nanmax, -0 for nanmin) goes to the loop, whose float compare keeps the zero in
    # memory, as numba.cuda's compare-and-swap loop does
    zero = 0 if op == "nanmax" else -(1 << (bits - 1))
    return [
        "fast:", f"  %vi = bitcast {t} %v to {it}", f"  %vzero = icmp eq {it} %vi, {zero}",
        "  br i1 %vzero, label %slow, label %bits",
        "bits:", f"  %vneg = icmp slt {it} %vi, 0",
        "  br i1 %vneg, label %negv, label %posv",
        "posv:", f"  %op = atomicrmw {pos} {ptr} %p, {it} %vi {ORDERING}", "  br label %check",
        "negv:", f"  %on = atomicrmw {neg} {ptr} %p, {it} %vi {ORDERING}", "  br label %check",
        "check:", f"  %o = phi {it} [ %op, %posv ], [ %on, %negv ]", stuck,
        "  br i1 %stuck, label %slow, label %fastdone",
        "fastdone:", f"  %fr = bitcast {it} %o to {t}", f"  ret {t} %fr"]


# ---------------------------------------------------------------- stubs
_members = {op: Stub(f"atomic.{op}", f"atomic.{op}(ary, index, value): {doc}; returns the "
                                     f"old value. dtypes: {', '.join(map(str, dts))}.")
            for op, (dts, doc) in ATOMIC_OPS.items()}
_members["cas"] = Stub("atomic.cas", "atomic.cas(ary, index, expected, new): if ary[index] == "
                                     "expected (bitwise for floats), store new; returns the old "
                                     "value.")
atomic = Namespace("atomic", "Atomic operations on global and shared arrays.", _members)

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.atomics")
_lower = lowering_registry.lower
typing_registry.register_global(atomic, types.Module(atomic))


def _unoptional(ty):
    """*ty* without its literal value or its Optional (numba.cuda casts an optional
    index or value, from a device function that may return None, as it casts any
    other: the None case is the cast's error at run time)."""
    ty = types.unliteral(ty)
    return ty.type if isinstance(ty, types.Optional) else ty


def _check_array_index(name, ary, idx, dtypes):
    if not isinstance(ary, types.Array):
        raise TypingError(f"{name}: the first argument must be an array, not {ary}")
    if not ary.mutable:
        raise TypingError(f"{name}: the array is read-only")
    if ary.dtype not in dtypes:
        raise TypingError(f"{name} supports arrays of {', '.join(map(str, dtypes))}, "
                          f"not {ary.dtype}")
    # numba.cuda converts any real index to intp (float indices truncate), and
    # its code relies on that: a tuple index unified across branches, one of
    # which mixes signed and unsigned ints, is a tuple of floats
    index_types = (types.Integer, types.Float)
    idx = _unoptional(idx)
    if isinstance(idx, index_types):
        if ary.ndim != 1:
            raise TypingError(f"{name}: a {ary.ndim}-D array needs a tuple of {ary.ndim} "
                              f"indices, not one int")
        return types.intp
    if isinstance(idx, types.BaseTuple):
        if len(idx) != ary.ndim or not all(isinstance(t, index_types) for t in idx):
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
            if not isinstance(_unoptional(val), (types.Number, types.Boolean)):
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
def _op_impl(op):
    def impl(context, builder, sig, args):
        aryty, idxty, valty = sig.args
        ary, idx, val = args
        ptr = element_pointer(context, builder, aryty, ary, idxty, idx)
        return call(builder, intrinsic_name(op, aryty.dtype), builder.bitcast(ptr, GENERIC), val)
    return impl


for _op in ATOMIC_OPS:
    _lower(getattr(atomic, _op), types.Array, types.Any, types.Any)(_op_impl(_op))


@_lower(atomic.cas, types.Array, types.Any, types.Any, types.Any)
def _cas_impl(context, builder, sig, args):
    aryty, idxty, _, _ = sig.args
    ary, idx, expected, new = args
    ptr = element_pointer(context, builder, aryty, ary, idxty, idx)
    name = f"__gpux_atomic_cas_{intrinsic_suffix('cas', aryty.dtype)}"
    return call(builder, name, builder.bitcast(ptr, GENERIC), expected, new)
