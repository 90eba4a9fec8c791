"""Scalar spelling for the C-family emitter: storage types, literals, constant data,
and integers of 65..128 bits as two 64-bit words.

Values keep unsigned storage types (``uchar``..``ulong``, ``bool``, ``half``,
``float``, ``double``) so that LLVM's wrapping arithmetic is C's unsigned
arithmetic; signed operations cast to the signed type of the same width.
LLVM makes integers wider than 64 bits for closed forms of loop sums; they are
``_gpux_wide`` structs operated on by the helpers in :data:`WIDE_HELPERS`.
"""

from __future__ import annotations

import math
import struct

from numba_gpux.errors import GpuxUserError
from .dialect import Dialect
from .irmodel import Inst, Ty, Val, struct_offsets, type_size_align

__all__ = ["SourceEmitError", "ctype", "stype", "odd_width", "signed_value", "masked",
           "float_literal", "WIDE_HELPERS", "wide_expr",
           "serialize"]

_UNSIGNED = {1: "bool", 8: "uchar", 16: "ushort", 32: "uint", 64: "ulong"}
_SIGNED = {8: "char", 16: "short", 32: "int", 64: "long"}
_FLOAT = {16: "half", 32: "float", 64: "double"}


#: integers of 65..128 bits (LLVM makes them for closed forms of loop sums) as two words;
#: ``{p}`` is the dialect's helper prefix, ``{mulhi}`` its high-half multiply
WIDE_HELPERS = """typedef struct { ulong lo; ulong hi; } _gpux_wide;
{p} _gpux_wide _gpux_w(ulong lo, ulong hi) { _gpux_wide r; r.lo = lo; r.hi = hi; return r; }
{p} _gpux_wide _gpux_w_mask(_gpux_wide a, uint n) {
  if (n < 128u) a.hi &= (1ul << (n - 64u)) - 1ul;
  return a;
}
{p} _gpux_wide _gpux_w_sext(_gpux_wide a, uint n) {
  if (n < 128u && ((a.hi >> (n - 65u)) & 1ul)) a.hi |= ~((1ul << (n - 64u)) - 1ul);
  return a;
}
{p} _gpux_wide _gpux_w_add(_gpux_wide a, _gpux_wide b, uint n) {
  _gpux_wide r; r.lo = a.lo + b.lo; r.hi = a.hi + b.hi + (r.lo < a.lo ? 1ul : 0ul);
  return _gpux_w_mask(r, n);
}
{p} _gpux_wide _gpux_w_sub(_gpux_wide a, _gpux_wide b, uint n) {
  _gpux_wide r; r.lo = a.lo - b.lo; r.hi = a.hi - b.hi - (a.lo < b.lo ? 1ul : 0ul);
  return _gpux_w_mask(r, n);
}
{p} _gpux_wide _gpux_w_mul(_gpux_wide a, _gpux_wide b, uint n) {
  _gpux_wide r; r.lo = a.lo * b.lo; r.hi = {mulhi}(a.lo, b.lo) + a.lo * b.hi + a.hi * b.lo;
  return _gpux_w_mask(r, n);
}
{p} _gpux_wide _gpux_w_and(_gpux_wide a, _gpux_wide b, uint n) { return _gpux_w(a.lo & b.lo, a.hi & b.hi); }
{p} _gpux_wide _gpux_w_or(_gpux_wide a, _gpux_wide b, uint n) { return _gpux_w(a.lo | b.lo, a.hi | b.hi); }
{p} _gpux_wide _gpux_w_xor(_gpux_wide a, _gpux_wide b, uint n) { return _gpux_w(a.lo ^ b.lo, a.hi ^ b.hi); }
{p} _gpux_wide _gpux_w_shl(_gpux_wide a, _gpux_wide b, uint n) {
  ulong s = b.lo; _gpux_wide r;
  if (s == 0ul) return a;
  if (s >= 64ul) { r.hi = a.lo << (s - 64ul); r.lo = 0ul; }
  else { r.hi = (a.hi << s) | (a.lo >> (64ul - s)); r.lo = a.lo << s; }
  return _gpux_w_mask(r, n);
}
{p} _gpux_wide _gpux_w_lshr(_gpux_wide a, _gpux_wide b, uint n) {
  ulong s = b.lo; _gpux_wide r;
  if (s == 0ul) return a;
  if (s >= 64ul) { r.lo = a.hi >> (s - 64ul); r.hi = 0ul; }
  else { r.lo = (a.lo >> s) | (a.hi << (64ul - s)); r.hi = a.hi >> s; }
  return r;
}
{p} _gpux_wide _gpux_w_ashr(_gpux_wide a, _gpux_wide b, uint n) {
  ulong s = b.lo; _gpux_wide r; a = _gpux_w_sext(a, n);
  ulong fill = ((long)a.hi < 0l) ? ~0ul : 0ul;
  if (s == 0ul) return _gpux_w_mask(a, n);
  if (s >= 64ul) { r.lo = (ulong)((long)a.hi >> (s - 64ul)); r.hi = fill; }
  else { r.lo = (a.lo >> s) | (a.hi << (64ul - s)); r.hi = (ulong)((long)a.hi >> s); }
  return _gpux_w_mask(r, n);
}
{p} bool _gpux_w_eq(_gpux_wide a, _gpux_wide b, uint n) { return a.lo == b.lo && a.hi == b.hi; }
{p} bool _gpux_w_ult(_gpux_wide a, _gpux_wide b, uint n) {
  return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}
{p} bool _gpux_w_slt(_gpux_wide a, _gpux_wide b, uint n) {
  a = _gpux_w_sext(a, n); b = _gpux_w_sext(b, n);
  return (long)a.hi < (long)b.hi || (a.hi == b.hi && a.lo < b.lo);
}"""


class SourceEmitError(GpuxUserError):
    """The kernel uses something the source dialect cannot express."""


def _storage_bits(bits: int) -> int:
    return 8 if bits <= 8 else 16 if bits <= 16 else 32 if bits <= 32 else 64


def odd_width(ty: Ty) -> bool:
    """An integer of 2..63 bits other than 8, 16 and 32 (the optimizer makes such
    induction variables, e.g. ``i2`` for ``j & 3``): it is stored zero-extended in the
    next C type, and operations that can set the bits above its width mask them off."""
    return ty.kind == "int" and 1 < ty.bits < 64 and ty.bits not in _SIGNED


def ctype(ty: Ty) -> str:
    """The storage type of a value of LLVM type *ty* (unsigned for integers)."""
    if ty.kind == "int":
        if 64 < ty.bits <= 128:
            return "_gpux_wide"
        if ty.bits in _UNSIGNED:
            return _UNSIGNED[ty.bits]
        if 1 < ty.bits < 64:
            return _UNSIGNED[_storage_bits(ty.bits)]
        raise SourceEmitError(f"{ty.bits}-bit integers cannot be written as source")
    if ty.kind == "float":
        return _FLOAT[ty.bits]
    raise SourceEmitError(f"values of type {ty} cannot be written as source")


def stype(ty: Ty) -> str:
    """The signed integer type of the storage of *ty* (for an odd width, only a value
    made by :func:`signed_value` holds the signed number)."""
    return _SIGNED[_storage_bits(ty.bits)]


def signed_value(e: str, ty: Ty) -> str:
    """Expression *e* of integer type *ty* as a number of its signed storage type."""
    st = stype(ty)
    if not odd_width(ty):
        return f"({st}){e}"
    k = 64 - ty.bits
    return f"(({st})(((long)((ulong){e} << {k}u)) >> {k}u))"


def masked(e: str, ty: Ty) -> str:
    """*e* in the storage type of *ty*, with the bits above an odd width cleared."""
    if not odd_width(ty):
        return f"(({ctype(ty)})({e}))"
    return f"(({ctype(ty)})(({e}) & {(1 << ty.bits) - 1}ul))"


def _decimal(v: float, bits: int) -> str:
    import numpy as np

    t = {16: np.float16, 32: np.float32, 64: np.float64}[bits]
    r = repr(float(t(v))) if bits == 64 else np.format_float_positional(t(v), unique=True, trim="0") \
        if abs(v) >= 1e-4 and abs(v) < 1e16 or v == 0 else np.format_float_scientific(t(v), unique=True)
    if "e" not in r and "." not in r and "inf" not in r and "nan" not in r:
        r += ".0"
    return r


def float_literal(v: float, bits: int, d: Dialect) -> str:
    """A literal of the *bits*-wide float *v* (NaN and infinities as bit casts)."""
    if math.isnan(v) or math.isinf(v):
        if bits == 64:
            b = struct.unpack("<Q", struct.pack("<d", v))[0]
            return d.bitcast.format(t="double", x=f"0x{b:x}ul")
        b = struct.unpack("<I", struct.pack("<f", v))[0]
        lit = d.bitcast.format(t="float", x=f"0x{b:x}u")
        return lit if bits == 32 else f"((half){lit})"
    h = float(v).hex() if d.float_style == "hex" else _decimal(v, bits)
    if bits == 64:
        return h
    if bits == 32:
        return h + "f"
    return f"((half){h}f)"


def wide_expr(fn, i: Inst) -> str:
    """The expression of instruction *i* on integers of 65..128 bits, through the
    two-word helpers (*fn*: the function being written)."""
    fn.need_wide()
    op, a = i.op, i.args
    n = (i.ty.bits if i.ty.kind == "int" and i.ty.bits > 64 else a[0].ty.bits)
    if n > 128:
        raise SourceEmitError(f"{n}-bit integers cannot be written as source")

    def W(v: Val) -> str:
        if v.ty.bits > 64:
            return fn.expr(v)
        e = fn.expr(v)
        return f"_gpux_w((ulong){e}, 0ul)"
    if op in ("add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr"):
        return f"_gpux_w_{op}({W(a[0])}, {W(a[1])}, {n}u)"
    if op == "zext":
        return f"_gpux_w((ulong){fn.expr(a[0])}, 0ul)"
    if op == "sext":
        src = a[0].ty.bits
        e = fn.expr(a[0])
        lo = e if src == 64 else f"(ulong)(long){signed_value(e, a[0].ty)}" if src > 1 else f"(ulong)-(long){e}"
        return f"_gpux_w_mask(_gpux_w({lo}, ((long)({lo}) < 0l) ? ~0ul : 0ul), {n}u)"
    if op == "trunc":
        if i.ty.bits > 64:
            return f"_gpux_w_mask({fn.expr(a[0])}, {i.ty.bits}u)"
        return masked(f"({fn.expr(a[0])}).lo", i.ty) if i.ty.bits > 1 else \
            f"((({fn.expr(a[0])}).lo & 1ul) != 0ul)"
    if op == "icmp":
        x, y = W(a[0]), W(a[1])
        p = i.pred
        if p in ("eq", "ne"):
            r = f"_gpux_w_eq({x}, {y}, {n}u)"
            return r if p == "eq" else f"(!{r})"
        f = "_gpux_w_slt" if p[0] == "s" else "_gpux_w_ult"
        if p[1:] == "lt":
            return f"{f}({x}, {y}, {n}u)"
        if p[1:] == "gt":
            return f"{f}({y}, {x}, {n}u)"
        if p[1:] == "le":
            return f"(!{f}({y}, {x}, {n}u))"
        return f"(!{f}({x}, {y}, {n}u))"
    if op in ("freeze",):
        return fn.expr(a[0])
    raise SourceEmitError(f"`{i.text}`: {n}-bit integer {op} cannot be written as source")


def serialize(v: Val, ty: Ty, buf: bytearray, off: int):
    """Write the constant *v* of type *ty* into *buf* at byte *off* (little endian)."""
    if v.kind in ("undef", "null") or (v.kind == "agg" and v.value == "zero"):
        return
    if v.kind == "int":
        n = type_size_align(ty)[0]
        buf[off:off + n] = (v.value & ((1 << (8 * n)) - 1)).to_bytes(n, "little")
    elif v.kind == "float":
        fmt = {16: "<e", 32: "<f", 64: "<d"}[ty.bits]
        b = struct.pack(fmt, v.value)
        buf[off:off + len(b)] = b
    elif v.kind == "agg":
        if ty.kind in ("array", "vector"):
            es = type_size_align(ty.elem)[0]
            for k, item in enumerate(v.value):
                serialize(item, ty.elem, buf, off + k * es)
        elif ty.kind == "struct":
            for item, fty, fo in zip(v.value, ty.fields, struct_offsets(ty)):
                serialize(item, fty, buf, off + fo)
    else:
        raise SourceEmitError(f"cannot write constant data of kind {v.kind} ({ty})")
