"""``numba_gpux.cuda.vector_types``: numba.cuda's CUDA vector types (``float32x4``,
``int2``...), on every target.

A vector type holds 1 to 4 elements of one scalar type, named ``x``, ``y``, ``z``,
``w``. Kernels and device functions build one from scalars and from smaller vectors of
the same element type whose elements add up to its own (``float32x3(float32x2(a, b),
c)``), read its elements as attributes, pass it to and return it from device functions,
and hold it in tuples; arithmetic on them is numba-cuda-mlir's (``vector_arith.py``), and
they are not kernel arguments. The data model is a struct of the elements, which every
target lowers.

``vector_types`` maps each type's name (``float32x4``) to its Numba type; each type's
``user_facing_object`` is the constructor that kernels call, also reachable as
``numba_gpux.cuda.float32x4`` and under the CUDA C aliases (``float4``), whose names
the constructor's ``aliases`` lists.  Besides numba.cuda's element types there are
numba-cuda-mlir's ``float16`` vectors (``float16x2``, CUDA C's ``half2``), usable where
the device has float16.
"""

from __future__ import annotations

from numba.core import cgutils, types
from numba.core.datamodel import models
from numba.core.errors import TypingError
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import AbstractTemplate, AttributeTemplate, Registry, signature

from ..context import add_registries
from ..errors import GpuxUserError
from ..language.types import register_data_model
from . import vector_arith

__all__ = ["vector_types", "VectorType"]

_BASES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64")
#: CUDA C's names of the element types
_ALIASES = {"char": "int8", "short": "int16", "int": "int32", "long": "int64",
            "longlong": "int64", "uchar": "uint8", "ushort": "uint16", "uint": "uint32",
            "ulong": "uint64", "ulonglong": "uint64", "half": "float16", "float": "float32",
            "double": "float64"}
_ATTRS = ("x", "y", "z", "w")

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.cuda.vector_types")


class VectorType(types.Type):
    """The Numba type of a vector of ``num_elements`` elements of ``base_type``."""

    def __init__(self, name: str, base_type, attr_names: tuple, user_facing_object):
        self._base_type = base_type
        self._attr_names = attr_names
        self._user_facing_object = user_facing_object
        super().__init__(name=name)

    @property
    def base_type(self):
        return self._base_type

    @property
    def attr_names(self) -> tuple:
        return self._attr_names

    @property
    def num_elements(self) -> int:
        return len(self._attr_names)

    @property
    def user_facing_object(self):
        return self._user_facing_object


class _VectorModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [(a, fe_type.base_type) for a in fe_type.attr_names])


register_data_model(VectorType, _VectorModel)


class VectorConstructor:
    """What ``cuda.float32x4`` names: called in device code, it builds a vector."""

    def __init__(self, name: str):
        self.__name__ = self.__qualname__ = name
        self.__module__ = __name__
        #: the CUDA C names of the same type (``float4``)
        self.aliases: list = []

    def __call__(self, *args, **kwargs):
        raise GpuxUserError(f"{self.__name__} is built in kernels and device functions, "
                            f"not on the host")

    def __repr__(self):
        return f"<vector type constructor {self.__name__}>"

    def __reduce__(self):  # pickles (kernels captured by Dask) as the module's own object
        return (_constructor, (self.__name__,))


def _constructor(name: str) -> VectorConstructor:
    return vector_types[name].user_facing_object


_SCALARS = (types.Integer, types.Float, types.Boolean)


def _ctor_template(vty: VectorType):
    def generic(self, args, kws):
        if kws:
            raise TypingError(f"{vty.name}() takes no keyword arguments")
        formal, count = [], 0
        for a in args:
            if isinstance(a, VectorType):
                if a.base_type != vty.base_type:
                    raise TypingError(
                        f"{vty.name}(): a vector argument must have {vty.base_type} "
                        f"elements, not {a.name}'s {a.base_type}")
                formal.append(a)
                count += a.num_elements
            elif isinstance(a, _SCALARS):
                formal.append(vty.base_type)
                count += 1
            else:
                raise TypingError(f"{vty.name}(): arguments are scalars or vectors of "
                                  f"{vty.base_type}, not {a}")
        if count != vty.num_elements:
            raise TypingError(f"{vty.name}() needs {vty.num_elements} elements in all "
                              f"(scalars and the elements of vector arguments), got {count}")
        return signature(vty, *formal)

    return type(f"VectorCtor_{vty.name}", (AbstractTemplate,),
                {"key": vty.user_facing_object, "generic": generic})


def _lower_ctor(context, builder, sig, args):
    elems = []
    for ty, val in zip(sig.args, args):  # scalars arrive cast to the element type
        if isinstance(ty, VectorType):
            part = cgutils.create_struct_proxy(ty)(context, builder, value=val)
            elems.extend(getattr(part, a) for a in ty.attr_names)
        else:
            elems.append(val)
    vty = sig.return_type
    out = cgutils.create_struct_proxy(vty)(context, builder)
    for a, v in zip(vty.attr_names, elems):
        setattr(out, a, v)
    return out._getvalue()


@typing_registry.register_attr
class _VectorAttributes(AttributeTemplate):
    key = VectorType

    def generic_resolve(self, ty, attr):
        if attr in ty.attr_names:
            return ty.base_type
        return None


@lowering_registry.lower_getattr_generic(VectorType)
def _lower_attr(context, builder, ty, value, attr):
    return getattr(cgutils.create_struct_proxy(ty)(context, builder, value=value), attr)


#: each vector type's name -> its Numba type (aliases are in the constructors' lists)
vector_types: dict = {}
#: every name a kernel may use (the types' names and their aliases) -> constructor
constructors: dict = {}

for _base in _BASES:
    for _n in (1, 2, 3, 4):
        _name = f"{_base}x{_n}"
        _ctor = VectorConstructor(_name)
        _vty = VectorType(_name, getattr(types, _base), _ATTRS[:_n], _ctor)
        vector_types[_name] = _vty
        constructors[_name] = _ctor
        _tmpl = _ctor_template(_vty)
        typing_registry.register(_tmpl)
        typing_registry.register_global(_ctor, types.Function(_tmpl))
        lowering_registry.lower(_ctor, types.VarArg(types.Any))(_lower_ctor)
for _alias, _base in _ALIASES.items():
    for _n in (1, 2, 3, 4):
        _ctor = constructors[f"{_base}x{_n}"]
        _ctor.aliases.append(f"{_alias}{_n}")
        constructors[f"{_alias}{_n}"] = _ctor
del _base, _n, _name, _ctor, _vty, _tmpl, _alias

globals().update(constructors)
__all__ += sorted(constructors)

add_registries(typing_registry, lowering_registry)
vector_arith.register(VectorType, vector_types)  # + - * / // % on vectors (vector_arith.py)
