"""``cuda.cudadecl``: typing templates registered there type kernels (with their
lowerings in ``cuda.cudaimpl``); ``cuda.errors``: numba.cuda's error module;
``cuda.extending._Intrinsic``: the class of ``intrinsic``'s objects."""

from __future__ import annotations

import numpy as np
import pytest
from numba.core import errors as numba_errors
from numba.core import extending as numba_extending
from numba.core import types
from numba.core.typing.templates import AttributeTemplate, ConcreteTemplate, signature

from numba_gpux import cuda
from numba_gpux.cuda import cudadecl, cudaimpl, errors
from numba_gpux.cuda.extending import _Intrinsic, intrinsic


def triple(x):
    """Typed by a template registered in cudadecl, lowered through cudaimpl."""
    raise NotImplementedError


@cudadecl.register_global(triple)
class _TripleTemplate(ConcreteTemplate):
    cases = [signature(types.int64, types.int64), signature(types.float64, types.float64)]


@cudaimpl.lower(triple, types.int64)
def _lower_triple_int(context, builder, sig, args):
    return builder.mul(args[0], context.get_constant(types.int64, 3))


@cudaimpl.lower(triple, types.float64)
def _lower_triple_float(context, builder, sig, args):
    return builder.fmul(args[0], context.get_constant(types.float64, 3.0))


class Meters(types.Type):
    def __init__(self):
        super().__init__(name="Meters")


class _Length:
    """A host object kernels see as ``Meters``: its ``.scale`` attribute is typed by
    a cudadecl attribute template and lowered by cudaimpl.lower_attr."""


@numba_extending.typeof_impl.register(_Length)
def _typeof_length(val, c):
    return Meters()


@numba_extending.register_model(Meters)
class _MetersModel(numba_extending.models.OpaqueModel):
    pass


@cudadecl.register_attr
class _MetersAttrs(AttributeTemplate):
    key = Meters

    def resolve_scale(self, ty):
        return types.int32


@cudaimpl.lower_constant(Meters)
def _lower_length_constant(context, builder, ty, pyval):
    return context.get_constant_null(ty)  # the object carries no data


@cudaimpl.lower_attr(Meters, "scale")
def _lower_scale(context, builder, ty, val):
    return context.get_constant(types.int32, 1000)


def test_a_global_typed_in_cudadecl_compiles_and_runs(device):
    @cuda.jit
    def k(n, x, out, fout):
        out[0] = triple(n)
        fout[0] = triple(x)

    out = np.zeros(1, np.int64)
    fout = np.zeros(1, np.float64)
    k[1, 1](14, 0.5, out, fout)
    assert out[0] == 42 and fout[0] == 1.5


def test_an_attribute_typed_in_cudadecl(device):
    @cuda.jit(device=True)
    def scale_of(length):
        return length.scale

    @cuda.jit
    def k(out):
        out[0] = scale_of(_LENGTH)

    out = np.zeros(1, np.int32)
    k[1, 1](out)
    assert out[0] == 1000


_LENGTH = _Length()


def test_an_argument_type_cudadecl_does_not_know_is_a_typing_error(device):
    @cuda.jit
    def k(out):
        out[0] = triple(1j)

    with pytest.raises(numba_errors.TypingError):
        k[1, 1](np.zeros(1, np.complex128))


def test_errors_module_names():
    assert errors.LoweringError is numba_errors.LoweringError
    assert errors.CudaLoweringError is numba_errors.LoweringError
    assert errors.UnsupportedBytecodeError is numba_errors.UnsupportedBytecodeError
    assert errors.KernelRuntimeError is cuda.KernelRuntimeError


def test_normalize_kernel_dimensions():
    assert errors.normalize_kernel_dimensions(4, (8, 2)) == ((4, 1, 1), (8, 2, 1))
    assert errors.normalize_kernel_dimensions([2, 3, 4], 1) == ((2, 3, 4), (1, 1, 1))
    with pytest.raises(ValueError, match="launch configuration was not specified"):
        errors.normalize_kernel_dimensions(None, 32)
    with pytest.raises(ValueError, match="1, 2 or 3 integers"):
        errors.normalize_kernel_dimensions((1, 1, 1, 1), 32)
    with pytest.raises(TypeError, match="sequence of integers"):
        errors.normalize_kernel_dimensions(1, 2.5)


def test_intrinsic_objects_are_numbas_intrinsic_class():
    @intrinsic
    def nothing(typingctx):
        return signature(types.none), lambda context, builder, sig, args: None

    assert _Intrinsic is numba_extending._Intrinsic
    assert isinstance(nothing, _Intrinsic)


def halve(x):
    """Registered in cudadecl by the test below, after a compile."""
    raise NotImplementedError


def test_a_template_registered_after_compiling_is_seen(device):
    @cuda.jit
    def first(out):
        out[0] = 1

    first[1, 1](np.zeros(1))  # the typing context exists now

    @cudadecl.register_global(halve)
    class _Halve(ConcreteTemplate):
        cases = [signature(types.float64, types.float64)]

    @cudaimpl.lower(halve, types.float64)
    def _lower_halve(context, builder, sig, args):
        return builder.fmul(args[0], context.get_constant(types.float64, 0.5))

    @cuda.jit
    def second(x, out):
        out[0] = halve(x)

    out = np.zeros(1)
    second[1, 1](5.0, out)
    assert out[0] == 2.5
