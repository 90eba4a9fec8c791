"""The rounding and bit-level helpers of :mod:`.fp16`: CUDA's ``cuda_fp16.h``
conversions on ``float16`` values (LLVM ``half``), correctly rounded in each mode.

- float32 -> half in a mode: the nearest half (the device's conversion, round to
  nearest even), then one step of the last bit toward the mode's direction where the
  nearest lies on the wrong side of the exact value (a half one step away from the
  nearest is the directed rounding's answer whenever the nearest is not);
- float64 -> half: through float32 rounded to odd (24 bits hold more than twice a
  half's 11 plus two, so rounding that once more is rounding the float64 once);
- integers -> half: through float32, exact below 2**24, and every integer above
  that is past the largest half in every mode;
- half -> integers: rounded in the mode asked for, saturated to the integer's range,
  NaN giving 0 (0x8000000000000000 for the 64-bit types, as CUDA documents);
- every NaN a conversion makes is the canonical NaN ``0x7FFF``.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.core.extending import intrinsic
from numba.core.typing.templates import signature

from ._bf16_core import (RD, RN, RU, RZ, _f64_to_f32_odd, bit_casts, f32_bits, f32_from_bits,
                         to_int_functions)
from ..dispatcher import jit as _jit

__all__ = ["RN", "RZ", "RD", "RU", "CANONICAL_NAN", "half_bits", "half_from_bits",
           "from_f32", "from_f64", "fma", "sat", "TO_INT"]

#: the NaN CUDA's half conversions and NaN-producing intrinsics return
CANONICAL_NAN = 0x7FFF

_device = _jit(device=True, inline=True)
_F0, _F1 = np.float32(0.0), np.float32(1.0)
_INF = np.float32(np.inf)


#: a float16's 16 bits as a uint16, and the float16 of an integer's low 16 bits
half_bits, half_from_bits = bit_casts(types.float16, 16)


@_device
def is_nan(h):
    return (np.int64(half_bits(h)) & 0x7FFF) > 0x7C00


@_device
def canonical(h):
    """*h*, or the canonical NaN where it is a NaN."""
    if is_nan(h):
        return half_from_bits(CANONICAL_NAN)
    return h


# ------------------------------------------------------------------ to half
@_device
def from_f32(x, mode):
    """float32 -> float16 in *mode* (a step past the largest finite value is infinity,
    a step down from infinity the largest finite value, as the bits work)."""
    if x != x:
        return half_from_bits(CANONICAL_NAN)
    n = np.float16(x)  # to nearest, ties to even
    if mode == RN:
        return n
    back = np.float32(n)
    b = np.int64(half_bits(n))
    negative = (b & 0x8000) != 0
    if mode == RZ:
        if abs(back) > abs(x):
            b -= 1  # one step toward zero: the bits are sign and magnitude
    elif mode == RD:
        if back > x:
            b = b + 1 if negative else b - 1
    elif back < x:  # RU
        b = b - 1 if negative else b + 1
    return half_from_bits(b)


@_device
def from_f64(d, mode):
    """float64 -> float16 in *mode*, rounded once from the float64 value."""
    return from_f32(_f64_to_f32_odd(d), mode)


# ------------------------------------------------------------------ arithmetic
@_device
def fma(a, b, c):
    """a * b + c of three float16 values rounded once to float16 (CUDA's fma.rn.f16):
    the product of two 11-bit significands is exact in float32 (and within its normal
    range), the sum's rounding error is recovered exactly (Knuth's two-sum), and an
    inexact sum gets an odd last bit, so that rounding it to half rounds the exact
    value once."""
    x, y, z = np.float32(a), np.float32(b), np.float32(c)
    p = x * y
    s = p + z
    if s - s != _F0:  # infinite or NaN
        return canonical(np.float16(s))
    back = s - p
    err = (p - (s - back)) + (z - back)
    if err != _F0:
        u = np.int64(f32_bits(s))
        if (u & 1) == 0:
            if (err > _F0) == (s > _F0):
                u += 1  # the exact value is further from zero
            else:
                u -= 1
        s = f32_from_bits(u)
    return np.float16(s)


@_device
def sat(h):
    """[0, 1] clamp of a float16, NaN giving +0 (CUDA's .sat)."""
    f = np.float32(h)
    if not f > _F0:
        return np.float16(0.0)
    if f > _F1:
        return np.float16(1.0)
    return h


# ------------------------------------------------------------------ to integers
@_device
def _to_f32(a):
    return np.float32(a)


#: integer type -> its device function ``(float16, mode) -> integer``
TO_INT = to_int_functions(_to_f32, "f16", nan_is_sign_bit=True)


# ------------------------------------------------------------------ atomics
_I8, _I16, _I32, _I64 = ir.IntType(8), ir.IntType(16), ir.IntType(32), ir.IntType(64)


@intrinsic
def atomic_add_ptr(typingctx, ptr, val):
    """``*ptr += val`` atomically for a ``CPointer(float16)`` *ptr*, returning the old
    value: a compare-and-swap loop (the kernel language's 32-bit ``cas``) on the
    aligned 32-bit word holding the half, the other half of the word left as it is
    (CUDA's own atomicAdd on __half before sm_70)."""
    if not (isinstance(ptr, types.CPointer) and ptr.dtype == types.float16):
        return None
    if not isinstance(val, (types.Number, types.Boolean)):
        return None

    def codegen(context, builder, sig, args):
        from ..language.atomics import GENERIC
        from ..language.intrinsics import call

        p, v = args
        h = context.cast(builder, v, sig.args[1], types.float16)
        raw = p if p.type.is_opaque else builder.bitcast(p, _I8.as_pointer(
            getattr(p.type, "addrspace", 0)))
        off = builder.and_(builder.ptrtoint(p, _I64), ir.Constant(_I64, 2))
        word = builder.gep(raw, [builder.neg(off)], source_etype=_I8) \
            if p.type.is_opaque else builder.gep(raw, [builder.neg(off)])
        word = builder.bitcast(word, GENERIC)
        shift = builder.trunc(builder.shl(off, ir.Constant(_I64, 3)), _I32)
        mask = builder.shl(ir.Constant(_I32, 0xFFFF), shift)
        first = call(builder, "__gpux_atomic_cas_i32", word, ir.Constant(_I32, 0),
                     ir.Constant(_I32, 0))  # an atomic read (stores only over a zero)
        entry = builder.block
        loop = builder.append_basic_block("f16_atomic_add.loop")
        done = builder.append_basic_block("f16_atomic_add.done")
        builder.branch(loop)
        builder.position_at_end(loop)
        old = builder.phi(_I32)
        old.add_incoming(first, entry)
        cur = builder.bitcast(builder.trunc(builder.lshr(old, shift), _I16), ir.HalfType())
        total = builder.fptrunc(builder.fadd(builder.fpext(cur, ir.FloatType()),
                                             builder.fpext(h, ir.FloatType())),
                                ir.HalfType())
        bits = builder.shl(builder.zext(builder.bitcast(total, _I16), _I32), shift)
        new = builder.or_(builder.and_(old, builder.not_(mask)), bits)
        seen = call(builder, "__gpux_atomic_cas_i32", word, old, new)
        old.add_incoming(seen, builder.block)
        builder.cbranch(builder.icmp_unsigned("==", seen, old), done, loop)
        builder.position_at_end(done)
        return cur

    return signature(types.float16, ptr, val), codegen
