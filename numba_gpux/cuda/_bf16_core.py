"""The ``bfloat16`` type of the numba.cuda facade and its conversions, on every target.

A bfloat16 is the upper half of a float32: 1 sign bit, 8 exponent bits, 7 stored
significand bits.  Its data model is a 16-bit integer holding those bits, so every
target stores, loads and passes it like an ``int16``; arithmetic is float32
arithmetic, and the float32 result is rounded to bfloat16 with integer operations
on its bits.  Because a float32 holds more than twice a bfloat16's precision plus
two bits, adding, subtracting, multiplying, dividing or taking the square root in
float32 and rounding once gives the correctly rounded bfloat16 result, as CUDA's
bfloat16 instructions do (``fma`` takes a round-to-odd step, see ``bf16.hfma``).

Conversions follow CUDA's ``cuda_bf16.h``:

- to bfloat16 (from floats and integers), in four rounding modes (:data:`RN` to
  nearest even, :data:`RZ` toward zero, :data:`RD` down, :data:`RU` up), each
  correctly rounded from the exact source value (a float64 or a 64-bit integer
  is rounded once, never through an intermediate float32 rounding); every NaN
  becomes the canonical NaN ``0x7FFF``;
- from bfloat16 to integers: rounded in the mode asked for, saturated to the
  integer's range, NaN giving 0;
- from bfloat16 to float32 and float64: exact.

The implicit conversions of numba.cuda's ``bfloat16`` (``arr_f32[i] = bf``,
``bfloat16(x)``, ``arr_i16[i] = bf``) are these in the modes CUDA's C++ type uses:
to nearest even into bfloat16, toward zero into integers.
"""

from __future__ import annotations

import sys

import numpy as np
from llvmlite import ir
from numba.core import types
from numba.core.datamodel.models import PrimitiveModel
from numba.core.extending import intrinsic, register_model
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typeconv import Conversion
from numba.core.typing.templates import Registry, signature

from ..context import add_registries
from ..dispatcher import jit as _jit

__all__ = ["Bfloat16", "bfloat16", "RN", "RZ", "RD", "RU", "CANONICAL_NAN",
           "typing_registry", "lowering_registry", "host_bits", "register_ml_dtypes"]

#: rounding modes of the conversions (CUDA's suffixes _rn, _rz, _rd, _ru)
RN, RZ, RD, RU = 0, 1, 2, 3
#: the NaN every conversion to bfloat16 and every NaN-producing intrinsic returns
CANONICAL_NAN = 0x7FFF

_I16 = ir.IntType(16)
_I32 = ir.IntType(32)


class Bfloat16(types.Number):
    """Numba's type of a bfloat16 value (numba.cuda's ``types.bfloat16``).

    Conversions as numba.cuda declares them: to float32 and float64 safe (same
    exponent range, more significand bits), to float16 and to integers unsafe;
    from floats unsafe, from 8-bit integers safe (exact), from wider ones unsafe.
    """

    def __init__(self):
        super().__init__(name="bfloat16")
        self.bitwidth = 16

    def can_convert_to(self, typingctx, other):
        if isinstance(other, types.Float):
            return Conversion.safe if other.bitwidth >= 32 else Conversion.unsafe
        if isinstance(other, types.Integer):
            return Conversion.unsafe
        return None

    def can_convert_from(self, typingctx, other):
        if isinstance(other, types.Float):
            return Conversion.unsafe
        if isinstance(other, types.Integer):
            return Conversion.safe if other.bitwidth == 8 else Conversion.unsafe
        return None

    def cast_python_value(self, value):
        """``bfloat16(x)`` on the host: ml_dtypes' bfloat16 scalar, as numba.cuda's
        NumPy dtype for it."""
        try:
            import ml_dtypes
        except ImportError:
            raise TypeError("bfloat16(x) on the host needs the ml_dtypes package "
                            "(pip install ml_dtypes); in kernels it needs nothing") from None
        return ml_dtypes.bfloat16(value)

    def unify(self, typingctx, other):
        # Number.unify goes through NumPy dtypes, which know no bfloat16: a phi of a
        # bfloat16 and a float32 or float64 is that float (exact), others do not unify
        if isinstance(other, types.Float) and other.bitwidth >= 32:
            return other
        return None


#: the one instance (``numba_gpux.cuda.types.bfloat16``)
bfloat16 = Bfloat16()


@register_model(Bfloat16)
class _Bfloat16Model(PrimitiveModel):
    # Numba's default models, which the shared context's chain up to (importing the
    # kernel language's own type module here would load Numba's math lowering)
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _I16)

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.cuda.bf16")


# ------------------------------------------------------------------ bit access
def bit_casts(fty, bits: int):
    """The intrinsics ``(to_bits, from_bits)`` of the 16- or 32-bit float type *fty*
    (half, float, or bfloat16, whose values are their bits already): its bits as an
    unsigned integer, and the value of the low *bits* bits of any integer.  (The code
    generators close over numbers and Numba types only, which the cache key can read.)"""
    uty = getattr(types, f"uint{bits}")

    @intrinsic
    def to_bits(typingctx, x):
        if x == fty:
            def codegen(context, builder, sig, args):
                v = args[0]
                return v if isinstance(v.type, ir.IntType) else builder.bitcast(
                    v, ir.IntType(bits))
            return signature(uty, x), codegen
        return None

    @intrinsic
    def from_bits(typingctx, u):
        if isinstance(u, types.Integer):
            def codegen(context, builder, sig, args):
                v = args[0]
                if u.bitwidth > bits:
                    v = builder.trunc(v, ir.IntType(bits))
                elif u.bitwidth < bits:
                    v = builder.zext(v, ir.IntType(bits))
                llty = context.get_value_type(fty)
                return v if llty == v.type else builder.bitcast(v, llty)
            return signature(fty, u), codegen
        return None

    return to_bits, from_bits


#: a float32's 32 bits as a uint32, and the float32 of an integer's low 32 bits
f32_bits, f32_from_bits = bit_casts(types.float32, 32)
#: a bfloat16's 16 bits as a uint16, and the bfloat16 of an integer's low 16 bits
bf16_bits, bf16_from_bits = bit_casts(bfloat16, 16)


_device = _jit(device=True, inline=True)


# ------------------------------------------------------- to bfloat16 (rounding)
@_device
def _round_f32_bits(x, mode):
    """The bfloat16 bits (an int64) of the float32 *x* rounded in *mode*."""
    b = np.int64(f32_bits(x))
    if (b & 0x7FFFFFFF) > 0x7F800000:
        return CANONICAL_NAN
    head = b >> 16
    rest = b & 0xFFFF
    negative = (b >> 31) != 0
    if mode == RN:
        if rest > 0x8000 or (rest == 0x8000 and (head & 1) == 1):
            head += 1
    elif mode == RD:
        if rest != 0 and negative:
            head += 1
    elif mode == RU:
        if rest != 0 and not negative:
            head += 1
    return head


@_device
def from_f32(x, mode):
    """float32 -> bfloat16 in *mode* (a carry into the exponent is the next binade,
    and past the largest finite value infinity, as the format works)."""
    return bf16_from_bits(_round_f32_bits(x, mode))


@_device
def _f64_to_f32_odd(d):
    """float64 -> float32 rounded to odd: the value truncated toward zero, its last
    bit set where that lost anything.  Rounding that once more to the 8 bits of a
    bfloat16, in any mode, gives the bfloat16 the float64 rounds to directly."""
    f = np.float32(d)
    if f != f:
        return f
    u = np.int64(f32_bits(f))
    back = np.float64(f)
    if back != d:
        if abs(back) > abs(d):
            u -= 1  # one step toward zero: the bits are sign and magnitude
        u |= 1
    return f32_from_bits(u)


@_device
def from_f64(d, mode):
    """float64 -> bfloat16 in *mode*, rounded once from the float64 value."""
    return from_f32(_f64_to_f32_odd(d), mode)


@_device
def _from_magnitude(m, negative, mode):
    """The integer of magnitude *m* (a uint64) and sign *negative* -> bfloat16 in
    *mode*: the bits below the 24 that a float32 holds are folded into a sticky last
    bit (round to odd), so the float32 built from it is exact or marked inexact."""
    shift = 0
    sticky = np.uint64(0)
    while m >= np.uint64(16777216):
        sticky |= m & np.uint64(255)
        m >>= np.uint64(8)
        shift += 8
    if sticky != np.uint64(0):
        m |= np.uint64(1)
    f = np.float32(m) * f32_from_bits((shift + 127) << 23)
    if negative:
        f = -f
    return from_f32(f, mode)


@_device
def from_signed(n, mode):
    """A signed integer -> bfloat16 in *mode*."""
    v = np.int64(n)
    m = np.uint64(v)
    if v < 0:
        m = np.uint64(0) - m
    return _from_magnitude(m, v < 0, mode)


@_device
def from_unsigned(n, mode):
    """An unsigned integer -> bfloat16 in *mode*."""
    return _from_magnitude(np.uint64(n), False, mode)


# ----------------------------------------------------------- from bfloat16
@_device
def to_f32(a):
    """bfloat16 -> float32 (exact)."""
    return f32_from_bits(np.uint32(bf16_bits(a)) << np.uint32(16))


@_device
def is_nan(a):
    return (np.int64(bf16_bits(a)) & 0x7FFF) > 0x7F80


@_device
def round_integral(f, mode):
    """The float32 *f* (finite) rounded to an integral value in *mode*, as a float32
    (for bfloat16 and float16 values, which float32 holds exactly)."""
    if not abs(f) < np.float32(8388608.0):
        return f  # float32 values from 2**23 on are integers already
    t = np.int64(f)  # toward zero
    tf = np.float32(t)
    if mode == RN:
        rest = f - tf
        if rest > np.float32(0.5) or (rest == np.float32(0.5) and (t & 1) == 1):
            t += 1
        elif rest < np.float32(-0.5) or (rest == np.float32(-0.5) and (t & 1) == 1):
            t -= 1
    elif mode == RD:
        if tf > f:
            t -= 1
    elif mode == RU:
        if tf < f:
            t += 1
    return np.float32(t)


def _to_int_function(nbtype, to_float32, prefix, nan_is_sign_bit):
    cast = getattr(np, str(nbtype))
    bits = nbtype.bitwidth
    if nbtype.signed:
        above = float(2 ** (bits - 1))  # the first value out of range (a power of two)
        lowest = float(-(2 ** (bits - 1)))
        hi, lo = cast(2 ** (bits - 1) - 1), cast(-(2 ** (bits - 1)))
    else:
        above, lowest = float(2 ** bits), 0.0
        hi, lo = cast(2 ** bits - 1), cast(0)
    above32, lowest32 = np.float32(above), np.float32(lowest)
    nan = cast(0)
    if nan_is_sign_bit and bits == 64:
        nan = cast(-(2 ** 63) if nbtype.signed else 2 ** 63)

    def convert(a, mode):
        f = to_float32(a)
        if f != f:
            return nan
        r = round_integral(f, mode)
        if r >= above32:
            return hi
        if r < lowest32:
            return lo
        return cast(r)

    convert.__name__ = f"{prefix}_to_{nbtype}"
    return _device(convert)


def to_int_functions(to_float32, prefix, nan_is_sign_bit=False):
    """Integer type -> a device function ``(a, mode) -> integer`` converting a 16-bit
    float (*to_float32* widens it exactly) rounded in *mode*, saturated to the integer's
    range; NaN gives 0, or 0x8000000000000000 for the 64-bit types where
    *nan_is_sign_bit* (cuda_fp16.h's ``__half2ll_r*``/``__half2ull_r*``; CUDA's
    ``cvt.{rni,rzi,rmi,rpi}`` otherwise)."""
    return {t: _to_int_function(t, to_float32, prefix, nan_is_sign_bit)
            for t in types.integer_domain}


#: integer type -> its device function ``(bfloat16, mode) -> integer``
TO_INT = to_int_functions(to_f32, "bf16")


# --------------------------------------------------------- implicit casts
@lowering_registry.lower_cast(types.Float, Bfloat16)
def _float_to_bf16(context, builder, fromty, toty, val):
    if fromty.bitwidth > 32:
        impl, ty = from_f64, fromty
    else:
        impl, ty = from_f32, types.float32
        val = context.cast(builder, val, fromty, ty)  # float16 -> float32 is exact
    return context.compile_internal(builder, lambda x: impl(x, RN), signature(toty, ty), [val])


@lowering_registry.lower_cast(types.Integer, Bfloat16)
def _int_to_bf16(context, builder, fromty, toty, val):
    impl = from_signed if fromty.signed else from_unsigned
    return context.compile_internal(builder, lambda x: impl(x, RN), signature(toty, fromty),
                                    [val])


@lowering_registry.lower_cast(types.Boolean, Bfloat16)
def _bool_to_bf16(context, builder, fromty, toty, val):
    one = ir.Constant(_I16, 0x3F80)
    return builder.select(context.cast(builder, val, fromty, types.boolean), one,
                          ir.Constant(_I16, 0))


@lowering_registry.lower_cast(Bfloat16, types.Float)
def _bf16_to_float(context, builder, fromty, toty, val):
    bits = builder.shl(builder.zext(val, _I32), ir.Constant(_I32, 16))
    f = builder.bitcast(bits, ir.FloatType())
    return context.cast(builder, f, types.float32, toty)


@lowering_registry.lower_cast(Bfloat16, types.Integer)
def _bf16_to_int(context, builder, fromty, toty, val):
    impl = TO_INT[types.unliteral(toty)]
    return context.compile_internal(builder, lambda x: impl(x, RZ), signature(toty, fromty),
                                    [val])


@lowering_registry.lower_cast(Bfloat16, types.Boolean)
def _bf16_to_bool(context, builder, fromty, toty, val):
    # nonzero, NaN included (Python's bool of a float)
    magnitude = builder.and_(val, ir.Constant(_I16, 0x7FFF))
    return builder.icmp_unsigned("!=", magnitude, ir.Constant(_I16, 0))


@lowering_registry.lower_constant(Bfloat16)
def _bf16_constant(context, builder, ty, pyval):
    return ir.Constant(_I16, host_bits(pyval))


def host_bits(value) -> int:
    """The bits of the bfloat16 nearest to the number *value* (ties to even, every NaN
    the canonical one), computed on the host."""
    d = float(value)
    if d != d:
        return CANONICAL_NAN
    f = np.float32(d)  # float64 -> float32 rounded to odd, then to 8 bits
    u = int(np.array(f).view(np.uint32))
    if float(f) != d:
        if abs(float(f)) > abs(d):
            u -= 1
        u |= 1
    head, rest = u >> 16, u & 0xFFFF
    if rest > 0x8000 or (rest == 0x8000 and head & 1):
        head += 1
    return head


_ml_dtypes_registered = False


def register_ml_dtypes() -> bool:
    """Make ``ml_dtypes.bfloat16`` mean :data:`bfloat16` to Numba: NumPy arrays of that
    dtype (and device arrays made from them) are arrays of bfloat16, its scalars are
    bfloat16 constants, and ``ml_dtypes.bfloat16(x)`` in a kernel is ``bfloat16(x)``.

    Done when this module is imported if ``ml_dtypes`` is imported already, else on
    the first call (importing ``ml_dtypes`` takes about a second, which importing the
    facade does not pay for a package it may never use).  False where ml_dtypes is
    not installed."""
    global _ml_dtypes_registered
    if _ml_dtypes_registered:
        return True
    try:
        import ml_dtypes
    except ImportError:
        return False
    from numba.core.extending import typeof_impl
    from numba.np import numpy_support

    numpy_support.FROM_DTYPE[np.dtype(ml_dtypes.bfloat16)] = bfloat16
    typeof_impl.register(ml_dtypes.bfloat16)(lambda val, c: bfloat16)
    typing_registry.register_global(ml_dtypes.bfloat16, types.NumberClass(bfloat16))
    _ml_dtypes_registered = True
    return True


if "ml_dtypes" in sys.modules:
    register_ml_dtypes()

add_registries(typing_registry, lowering_registry)
