"""Foreign device code: ``cuda.declare_device`` and the code ``cuda.jit(link=...)`` links.

``declare_device(name, sig, link=...)`` returns a :class:`DeclaredDevice`, a Numba
``@intrinsic`` that kernels call: its lowering calls the external symbol *name*
following numba.cuda's device ABI for foreign functions (``abi="numba"``:
``extern "C" __device__ int name(T *ret, args...)``, the status it returns ignored;
``abi="c"``: ``T name(args...)``), and records in the module (``numba_gpux.linking``)
the symbol and the code to link with it.  The CUDA target links that code when it
emits the kernel; any other target rejects the kernel with an UnsupportedError.
"""

from __future__ import annotations

import inspect

from llvmlite import ir
from numba.core import cgutils, sigutils, types
from numba.core.extending import _Intrinsic
from numba.core.typing import signature

from .. import linking
from ..errors import UnsupportedError

__all__ = ["DeclaredDevice", "declare_device", "link_inputs"]


def link_inputs(link, what: str) -> tuple[linking.LinkInput, ...]:
    """The inputs of numba.cuda's ``link=`` value (None, a path or LinkableCode, or a
    list of them): files (their kind by extension; a missing one is an error naming it
    now) and ``cuda.PTXSource``/``CUSource``/... objects held in memory."""
    from .cudadrv.linkable_code import LinkableCode

    def convert(item):
        if not isinstance(item, LinkableCode):
            return None
        if item.setup_callback is not None or item.teardown_callback is not None:
            raise UnsupportedError(f"{what}: {item.name!r} has a setup or teardown "
                                   f"callback, which numba_gpux does not run")
        return linking.from_code(_KIND.get(item.kind, item.kind), item.data, item.name)

    return linking.inputs(link, what, convert, (LinkableCode,),
                          "file paths or LinkableCode objects")


#: LinkableCode.kind -> linking's kind
_KIND = {"ptx": "ptx", "cu": "cu", "fatbin": "fatbin", "cubin": "cubin",
         "archive": "archive", "object": "object", "ltoir": "ltoir"}


def _numba_abi_call(context, builder, name: str, sig, args):
    """``int name(T *ret, args...)`` called, the result read from the slot."""
    dmm = context.data_model_manager
    retmodel = dmm[sig.return_type]
    packer = context.get_arg_packer(sig.args)
    fnty = ir.FunctionType(ir.IntType(32), [retmodel.get_return_type().as_pointer(),
                                            *packer.argument_types])
    fn = cgutils.get_or_insert_function(builder.module, fnty, name)
    slot = cgutils.alloca_once(builder, retmodel.get_return_type())
    builder.call(fn, [slot, *packer.as_arguments(builder, args)])
    return retmodel.from_return(builder, builder.load(slot))


def _c_abi_call(context, builder, name: str, sig, args):
    """``T name(args...)``, scalars and pointers passed as they are."""
    void = sig.return_type in (types.void, types.none)
    ret = ir.VoidType() if void else context.get_value_type(sig.return_type)
    fnty = ir.FunctionType(ret, [context.get_value_type(t) for t in sig.args])
    fn = cgutils.get_or_insert_function(builder.module, fnty, name)
    res = builder.call(fn, list(args))
    return context.get_dummy_value() if void else res


class DeclaredDevice(_Intrinsic):
    """A foreign device function declared with ``cuda.declare_device``, callable from
    kernels and device functions with the declared signature."""

    def __init__(self, name: str, sig, inputs: tuple, abi: str):
        self.symbol = name
        self.sig = sig
        self.link = tuple(inputs)
        self.abi = abi
        call = _numba_abi_call if abi == "numba" else _c_abi_call

        def codegen(context, builder, sig_, args):
            # the symbol, and the code that defines it, recorded in the module: the
            # target links it or rejects the kernel (numba_gpux.linking)
            linking.add_to_module(builder.module, linking.records(self.link, (name,)))
            return call(context, builder, name, sig_, args)

        def typer(typingctx, *args):
            # the declared types, to which the call's arguments convert (a value that
            # cannot, such as an array for a float, matches no signature)
            if len(args) != len(sig.args) or any(
                    typingctx.can_convert(a, f) is None for a, f in zip(args, sig.args)):
                return None
            return signature(sig.return_type, *sig.args), codegen

        # Numba binds a call's arguments by the typer's signature: one parameter per
        # argument of the declared function (a *args typer would get them as a tuple)
        P = inspect.Parameter
        typer.__signature__ = inspect.Signature(
            [P("typingctx", P.POSITIONAL_OR_KEYWORD)]
            + [P(f"a{i}", P.POSITIONAL_OR_KEYWORD) for i in range(len(sig.args))])
        typer.__name__ = typer.__qualname__ = name
        super().__init__(name, typer)
        self._register()
        self.__doc__ = f"The foreign device function {name}{sig}."

    def __gpux_cache_key__(self) -> str:
        """What a kernel calling it compiles to depends on: the symbol, signature and
        ABI, and the content of the code linked (read now)."""
        return "|".join([self.symbol, str(self.sig), self.abi,
                         *(f"{i.kind}:{i.name}:{i.digest()}" for i in self.link)])

    def __reduce__(self):
        return (_declared, (self.symbol, self.sig, self.link, self.abi))

    def __repr__(self):
        return f"<declared device function {self.symbol}{self.sig}>"


def _declared(name, sig, inputs, abi):
    return DeclaredDevice(name, sig, inputs, abi)


def declare_device(name, sig, link=None, use_cooperative=False, abi="numba") -> DeclaredDevice:
    """numba.cuda's ``declare_device``: the foreign device function *name* of
    signature *sig* (``"float32(float32, float32)"``; a return type is required),
    defined in the code of *link* (file paths by extension: ``.cu`` compiled with
    NVRTC, ``.ptx``, ``.cubin``, ``.fatbin``, ``.o``, ``.a``, ``.ltoir``; or
    ``cuda.PTXSource``/``CUSource``/... objects), linked into every kernel that calls
    it.  Kernels calling it compile for the CUDA target only (elsewhere an
    UnsupportedError names the function and the target).  ``abi="numba"`` (the
    default) calls ``int name(T *ret, args...)``, ``abi="c"`` ``T name(args...)``."""
    if abi not in ("numba", "c"):
        raise NotImplementedError(f"Unsupported ABI: {abi}")
    if use_cooperative:
        raise UnsupportedError(f"cuda.declare_device({name!r}, use_cooperative=True): "
                               f"numba_gpux launches kernels cooperatively only when their "
                               f"Python code synchronizes the grid")
    if not isinstance(name, str) or not name:
        raise TypeError(f"declare_device(): the name must be a non-empty str, not {name!r}")
    argtypes, restype = sigutils.normalize_signature(sig)
    if restype is None:
        raise TypeError("Return type must be provided for device declarations")
    inputs = link_inputs(link, f"cuda.declare_device({name!r})")
    return DeclaredDevice(name, signature(restype, *argtypes), inputs, abi)
