"""Scalar types beyond int/float: float16, complex64/complex128 with ``cmath``, records.

* **float16** values are LLVM ``half``.  ``a op b`` on two float16 values is
  float16 (NumPy's rule); add, sub, mul, div computed in half are exactly the
  float32 results rounded once.  ``math.<fn>`` on float16 calls
  ``__gpux_<fn>_f16``, whose shared default (registry ``"shared"``) goes
  through ``__gpux_<fn>_f32``; targets with half-precision math override it.
* **complex** arithmetic is Numba's own lowering; ``cmath`` functions come from
  Numba's ``cmathimpl`` and reach the device through the real math intrinsics.
  ``z ** w`` with a complex exponent is ``exp(w * log(z))`` (Numba's host
  version calls a C helper that does not exist on a device).
* **records** (structured dtypes) in arrays use Numba's record model: read and
  write fields (``a[i].x``, ``a[i]['x']``), pass record arrays to kernels.
"""

from __future__ import annotations

import math
import operator

from llvmlite import ir
from numba.core import datamodel, types
from numba.core.datamodel.models import OpaqueModel, PrimitiveModel
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import Registry, signature

from ..overlays import SHARED, registry as overlay_registry
from .functions import GpuxFunctionType
from .intrinsics import MATH_BINARY, MATH_UNARY, call

__all__ = ["typing_registry", "lowering_registry", "data_model_manager", "register_data_model"]

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.types")
_lower = lowering_registry.lower

F16 = types.float16
HALF = ir.HalfType()

# --------------------------------------------------------------- data models
_dmm = datamodel.DataModelManager()


def _float_model(dmm, fe_type):
    if fe_type == F16:
        return PrimitiveModel(dmm, fe_type, HALF)
    return datamodel.default_manager[fe_type]


_dmm.register(types.Float, _float_model)


def register_data_model(fetypecls, handler) -> None:
    """Give the frontend type class *fetypecls* the data model *handler* in the
    shared context (numba looks models up by exact class, so subclasses of
    Numba's types need their own entry)."""
    _dmm.register(fetypecls, handler)


# A device function named in a kernel is also a value: passed to another device
# function, or held in a variable (``f = g if c else h`` is a phi of it), it needs a
# data model, which the exact-class lookup does not inherit from types.Dispatcher.
register_data_model(GpuxFunctionType, OpaqueModel)

_manager = None


def data_model_manager():
    """Numba's data models plus float16 as LLVM ``half`` (the shared context uses this)."""
    global _manager
    if _manager is None:
        _manager = _dmm.chain(datamodel.default_manager)
    return _manager


# ------------------------------------------------------ float16 arithmetic
from .templates import exact_template  # noqa: E402


def _half_template(key, nargs):
    """``key`` on float16 arguments only (:func:`exact_template`)."""
    exact_template(typing_registry, key, nargs, F16, F16, "Float16")


for _op in (operator.add, operator.sub, operator.mul, operator.truediv,
            operator.iadd, operator.isub, operator.imul, operator.itruediv):
    _half_template(_op, 2)
_half_template(operator.neg, 1)
# abs() of a float16 is a float16, as NumPy's and numba.cuda's (Numba's own template has
# float32 and float64 only: the value would widen, and what follows round as float32)
_half_template(abs, 1)


def _half_via_f32(base):
    def impl(context, builder, sig, args):
        fargs = [context.cast(builder, v, t, F16) for v, t in zip(args, sig.args)]
        return call(builder, f"__gpux_{base}_f16", *fargs)
    return impl


def _register_half_math():
    from .lowering import MATH_FUNCS

    for fn, base in MATH_FUNCS.items():
        if f"__gpux_{base}_f16" not in _INTRINSIC_NAMES:
            continue
        nargs = 2 if base in MATH_BINARY else 1

        _half_template(fn, nargs)
        _lower(fn, *([F16] * nargs))(_half_via_f32(base))


def _shared_half_math(fn: str, nargs: int) -> str:
    params = ", ".join(f"half %a{i}" for i in range(nargs))
    body = "".join(f"  %f{i} = fpext half %a{i} to float\n" for i in range(nargs))
    fargs = ", ".join(f"float %f{i}" for i in range(nargs))
    return (f"declare float @__gpux_{fn}_f32({', '.join(['float'] * nargs)})\n"
            f"define half @__gpux_{fn}_f16({params}) alwaysinline nounwind {{\n{body}"
            f"  %r = call float @__gpux_{fn}_f32({fargs})\n"
            f"  %h = fptrunc float %r to half\n  ret half %h\n}}")


def _fill_shared_overlays():
    reg = overlay_registry(SHARED)
    for fn in MATH_UNARY:
        reg.define(f"__gpux_{fn}_f16", _shared_half_math(fn, 1))
    for fn in MATH_BINARY:
        reg.define(f"__gpux_{fn}_f16", _shared_half_math(fn, 2))


from .intrinsics import INTRINSICS as _INTRINSICS  # noqa: E402

_INTRINSIC_NAMES = set(_INTRINSICS)
_register_half_math()
_fill_shared_overlays()


@_lower(math.isnan, F16)
def _isnan_f16(context, builder, sig, args):
    from .lowering import float_class

    return float_class(context, builder, args[0], "isnan")


# float(x) keeps a float's own type (Numba's rule for float32): float16 stays float16
_half_template(float, 1)


@_lower(float, F16)
def _float_of_f16(context, builder, sig, args):
    return args[0]


# ------------------------------------------------------------------ complex
def _install_cmath():
    from numba.cpython import cmathimpl

    src = cmathimpl.registry
    lowering_registry.functions.extend(src.functions)
    lowering_registry.getattrs.extend(src.getattrs)
    lowering_registry.setattrs.extend(src.setattrs)
    lowering_registry.casts.extend(src.casts)
    lowering_registry.constants.extend(src.constants)


_install_cmath()


def _complex_pow(context, builder, sig, args):
    # z ** w in polar form, |z| ** w.real and the phase kept apart (as CPython
    # and numba do it), so that 1j ** 1.0 is 1j and 0j ** 0j is 1; a zero z to another
    # power, where CPython raises, as the compile's semantics say.  A square is z * z
    # (as Numba's CPU target), except in numba.cuda's semantics, whose formula takes
    # every power (1j ** 2 is -1+1.2246e-16j there)
    from .semantics import current_semantics

    polar_zero = current_semantics().complex_zero_power == "polar"

    def cpow(z, w):
        if not polar_zero and w.imag == 0 and w.real == 2:
            return z * z
        if w.real == 0 and w.imag == 0:
            return complex(1.0, 0.0)
        if z.real == 0 and z.imag == 0:
            if polar_zero:
                if w.real == 0:
                    return 0j
            elif w.real > 0:
                return 0j
            else:
                return complex(math.nan, math.nan)
        vabs = math.hypot(z.real, z.imag)
        length = vabs ** w.real
        at = math.atan2(z.imag, z.real)
        phase = at * w.real
        if w.imag != 0:
            length /= math.exp(at * w.imag)
            phase += w.imag * math.log(vabs)
        return complex(length * math.cos(phase), length * math.sin(phase))

    return context.compile_internal(builder, cpow, sig, args)


for _ct in (types.complex64, types.complex128):
    _lower(operator.pow, _ct, _ct)(_complex_pow)
    _lower(operator.ipow, _ct, _ct)(_complex_pow)
    _lower(pow, _ct, _ct)(_complex_pow)


def _half_div(context, builder, sig, args):
    # Numba's division checks for zero with helpers that know only float/double;
    # dividing in float32 and rounding once gives the same float16 result
    f32 = types.float32
    a, b = (context.cast(builder, v, t, f32) for v, t in zip(args, sig.args))
    impl = context.get_function(operator.truediv, signature(f32, f32, f32))
    return context.cast(builder, impl(builder, (a, b)), f32, F16)


for _op in (operator.truediv, operator.itruediv):
    _lower(_op, F16, F16)(_half_div)
