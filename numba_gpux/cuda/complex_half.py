"""``numba_gpux.cuda.complex_half``: ``types.complex32``, numba-cuda-mlir's complex
number of two ``float16`` parts.

Stored as Numba stores every complex type: a struct of the real and the imaginary
part (here two ``float16``, 4 bytes).  In kernels and device functions:

- ``complex32(x)`` converts a number (a real becomes the real part), and
  ``complex32(re, im)`` builds one from two real numbers (each rounded to float16);
- ``.real`` and ``.imag`` are ``float16``; ``.conjugate()`` as for every complex type;
- arithmetic and comparisons promote to ``complex64`` (as numba-cuda-mlir's conversion
  rules do: float16 converts safely to complex32, complex32 promotes to complex64), so
  ``z * z`` is a complex64; ``complex32(...)`` or storing into a complex32 place rounds
  it back;
- local and shared arrays hold them (``cuda.local.array(n, complex32)``), each element
  stored as its two halves.

NumPy has no complex32 dtype, so arrays of complex32 have no NumPy form: host and
device hold the same 4-byte pairs as a ``float16`` array whose last axis has length 2
(real, imaginary).  :func:`to_halves` and :func:`from_halves` convert on the host; a
kernel reads ``complex32(a[i, 0], a[i, 1])`` and writes ``.real``/``.imag``.
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.core.errors import TypingError
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typeconv.rules import default_casting_rules
from numba.core.typing.templates import AbstractTemplate, AttributeTemplate, Registry, signature

from ..context import add_registries

__all__ = ["complex32", "to_halves", "from_halves"]

#: the Numba type (Numba itself has complex64 and complex128 only)
complex32 = types.Complex("complex32", types.float16)

# the conversions numba-cuda-mlir declares: half -> complex32 exactly, complex32 ->
# complex64 as the promotion its arithmetic takes (and back only explicitly)
default_casting_rules.safe(types.float16, complex32)
default_casting_rules.promote_unsafe(complex32, types.complex64)

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.cuda.complex_half")

_CLASS = types.NumberClass(complex32)
_REALS = (types.Integer, types.Float, types.Boolean)


class _Complex32Call(AbstractTemplate):
    key = complex32

    def generic(self, args, kws):
        if kws:
            raise TypingError("complex32() takes no keyword arguments")
        if len(args) == 1 and isinstance(args[0], (types.Number, types.Boolean)):
            return signature(complex32, args[0])
        if len(args) == 2 and all(isinstance(a, _REALS) for a in args):
            return signature(complex32, *args)
        raise TypingError(f"complex32() takes a number, or a real and an imaginary part "
                          f"(two real numbers), not ({', '.join(map(str, args))})")


@typing_registry.register_attr
class _Complex32Class(AttributeTemplate):
    # keyed by this one NumberClass instance: the typing context asks it (alone) for
    # complex32's own attributes, so the two-argument call is typed here
    key = _CLASS

    def resolve___call__(self, classty):
        return types.Function(_Complex32Call)


# Numba looks lowerings of number-class calls up by the class NumberClass; it has the
# one-argument conversion, this the two-part construction of any complex type that
# typing allows it for (above: complex32's)
@lowering_registry.lower(types.NumberClass, types.Any, types.Any)
def _lower_two_parts(context, builder, sig, args):
    ty = sig.return_type
    if not isinstance(ty, types.Complex):
        raise NotImplementedError(f"{ty}(a, b): only complex types are built from two parts")
    z = context.make_complex(builder, ty)
    z.real = context.cast(builder, args[0], sig.args[0], ty.underlying_float)
    z.imag = context.cast(builder, args[1], sig.args[1], ty.underlying_float)
    return z._getvalue()


def to_halves(values) -> np.ndarray:
    """Host: complex (or real) values -> the float16 array (shape + (2,)) that holds
    them as complex32 (real and imaginary part of each, rounded to float16)."""
    a = np.asarray(values)
    out = np.empty(a.shape + (2,), np.float16)
    out[..., 0] = a.real
    out[..., 1] = a.imag if np.iscomplexobj(a) else 0
    return out


def from_halves(halves) -> np.ndarray:
    """Host: a float16 array whose last axis is (real, imaginary) -> complex64 values."""
    h = np.asarray(halves)
    if h.dtype != np.float16 or h.ndim == 0 or h.shape[-1] != 2:
        raise ValueError(f"complex32 data is a float16 array whose last axis has length 2 "
                         f"(real, imaginary), not {h.dtype} of shape {h.shape}")
    return h[..., 0].astype(np.complex64) + 1j * h[..., 1].astype(np.complex64)


add_registries(typing_registry, lowering_registry)
