"""numba.cuda's extension API through the facade: a type with a struct data model,
typed with ``extending.type_callable`` and lowered with ``cudaimpl.lower`` (IR built
with ``cgutils``), used as a scalar and as the dtype of a local array."""

import numpy as np
from numba.core.types import int32, void

from numba_gpux import cuda
from numba_gpux.cuda import cgutils, cudaimpl, extending, types


class Pair:
    def __init__(self, a, b):
        self.a = a
        self.b = b


class PairType(types.Type):
    def __init__(self):
        super().__init__(name="FacadeTestPair")


pair_type = PairType()


@extending.typeof_impl.register(Pair)
def _typeof_pair(val, c):
    return pair_type


@extending.register_model(PairType)
class _PairModel(extending.core_models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("a", int32), ("b", int32)])


extending.make_attribute_wrapper(PairType, "a", "a")
extending.make_attribute_wrapper(PairType, "b", "b")


@extending.type_callable(Pair)
def _type_pair(context):
    def typer(a, b):
        if isinstance(a, types.Integer) and isinstance(b, types.Integer):
            return pair_type
    return typer


@cudaimpl.lower(Pair, types.Integer, types.Integer)
def _lower_pair(context, builder, sig, args):
    obj = cgutils.create_struct_proxy(pair_type)(context, builder)
    obj.a = context.cast(builder, args[0], sig.args[0], int32)
    obj.b = context.cast(builder, args[1], sig.args[1], int32)
    return obj._getvalue()


def test_the_names_are_numbas_own():
    import numba.core.cgutils
    import numba.core.datamodel.models
    import numba.core.imputils

    assert cgutils is numba.core.cgutils
    assert extending.core_models is numba.core.datamodel.models
    assert cudaimpl.registry is numba.core.imputils.builtin_registry


def test_a_struct_model_type_in_a_local_array(device):
    @cuda.jit(void(int32[::1], int32[::1]))
    def f(outa, outb):
        arr = cuda.local.array(6, dtype=pair_type)
        for i in range(len(arr)):
            arr[i] = Pair(int32(i), int32(3 * i))
        for i in range(len(arr)):
            outa[i] = arr[i].a
            outb[i] = arr[i].b

    outa = np.zeros(6, dtype=np.int32)
    outb = np.zeros(6, dtype=np.int32)
    f[1, 1](outa, outb)
    np.testing.assert_equal(outa, np.arange(6))
    np.testing.assert_equal(outb, 3 * np.arange(6))


def test_an_array_of_a_struct_model_type_in_a_signature(device):
    """A signature may take an array of a struct-model type of numbers (as numba.cuda
    compiles it): the kernel compiles, its shared and local arrays of that type are typed
    with it, and a launch with an array of another element type is a TypeError naming
    the signature.  A struct holding something other than numbers is still refused when
    the kernel compiles."""
    import pytest

    from numba_gpux import GpuxUserError

    @cuda.jit(void(pair_type[::1]))
    def copy_through(x):
        s = cuda.shared.array(4, dtype=pair_type)
        loc = cuda.local.array(4, dtype=pair_type)
        s[0] = x[0]
        loc[0] = s[0]
        x[0] = loc[0]

    typemap = next(iter(copy_through.overloads.values()))._type_annotation.typemap
    assert typemap["s"].dtype == pair_type and typemap["loc"].dtype == pair_type
    with pytest.raises(TypeError, match="FacadeTestPair"):
        copy_through[1, 1](np.zeros(4, np.int64))

    class Holder(types.Type):
        def __init__(self):
            super().__init__(name="FacadeTestHolder")

    holder = Holder()
    extending.register_model(Holder)(
        lambda dmm, fe: extending.core_models.StructModel(
            dmm, fe, [("data", types.CPointer(int32))]))
    with pytest.raises(GpuxUserError, match="arrays of FacadeTestHolder cannot be passed"):
        cuda.jit(void(holder[::1]))(lambda x: None)


# -- an opaque handle: an extension's type with Numba's OpaqueModel ----------------------

class Handle:
    pass


class HandleType(types.Opaque):
    pass


handle_type = HandleType("FacadeTestHandle")
extending.register_model(HandleType)(extending.core_models.OpaqueModel)


@extending.typeof_impl.register(Handle)
def _typeof_handle(val, c):
    return handle_type


@extending.overload_attribute(HandleType, "answer", target="cuda")
def _handle_answer(obj):
    return lambda obj: 42


def test_an_opaque_handle_is_a_kernel_argument(device):
    """A kernel takes an object whose type is opaque (no data reaches the device, as
    unboxing it on the CPU gives Numba's dummy value): what its type gives at compile
    time works, with an eager signature and typed at launch, beside other arguments."""
    @cuda.jit(void(types.int64[::1], handle_type))
    def eager(res, h):
        res[0] = h.answer

    @cuda.jit
    def lazy(res, h, x, pair):
        res[0] = h.answer + x + pair[1]

    res = cuda.to_device(np.zeros(1, np.int64))
    eager[1, 1](res, Handle())
    assert res.copy_to_host()[0] == 42
    lazy[1, 1](res, Handle(), 5, (1, 7))
    assert res.copy_to_host()[0] == 54
