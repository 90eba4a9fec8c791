"""numba.cuda's C ABI for a device function compiled on its own
(``cuda.compile(..., device=True, abi="c")``, the default of ``cuda.compile`` and
``compile_all``): a function named as the Python function (or ``abi_info["abi_name"]``)
that takes the arguments as C does and returns the value, with no status word and no
pointer for the result, so CUDA C++ code can declare and call it.

It is a wrapper, made in the neutral IR, around the function as Numba lowered it: it
calls it with Numba's calling convention and returns what it returned.  As in
numba.cuda, exceptions do not cross it (the status is dropped), and an Optional result
is the value, or a zero of its type where the function returned None.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types

__all__ = ["symbol", "compile_c_abi"]


def _escaped(name: str) -> str:
    """*name* as a PTX identifier: ASCII letters, digits and ``_`` kept, every other
    byte of its UTF-8 as ``_XX`` (hex), and a leading digit after ``_``, as numba.cuda
    escapes a function's name (``<lambda>`` is ``_3clambda_3e``)."""
    out = "".join(c if c.isascii() and (c.isalnum() or c == "_")
                  else "".join(f"_{b:02x}" for b in c.encode("utf-8", "surrogatepass"))
                  for c in name)
    return f"_{out}" if out[:1].isdigit() else out


def _valid_ptx_name(name: str) -> bool:
    return bool(name) and name.isascii() and not name[0].isdigit() and \
        all(c.isalnum() or c in "_$" for c in name)


def symbol(py_func, abi_info) -> str:
    """The C ABI function's name: ``abi_info["abi_name"]`` as given, else the Python
    function's name, escaped.  A ValueError for a name PTX cannot spell (LLVM's NVPTX
    back end would abort the process on it)."""
    info = dict(abi_info or {})
    unknown = set(info) - {"abi_name"}
    if unknown:
        raise ValueError(f"abi_info: the C ABI takes only 'abi_name', not "
                         f"{', '.join(sorted(map(repr, unknown)))}")
    name = info.get("abi_name")
    if name is None:
        return _escaped(py_func.__name__)
    if not isinstance(name, str) or not _valid_ptx_name(name):
        raise ValueError(f"abi_info['abi_name'] must be a name PTX can spell (ASCII letters, "
                         f"digits, '_' and '$', not starting with a digit), not {name!r}")
    return name


def _wrapper_text(res, name: str) -> str:
    """The neutral module of *res* (a device function's NeutralResult) with the C ABI
    function *name* calling it."""
    from ..context import target_context

    context = target_context()
    argtys, resty = tuple(res.argtypes), res.return_type
    value_ty = resty.type if isinstance(resty, types.Optional) else resty
    returns = value_ty not in (types.none, types.void)
    packer = context.get_arg_packer(argtys)
    retty = context.data_model_manager[value_ty].get_return_type() if returns \
        else ir.VoidType()
    module = context.create_module(f"{name}.cabi")
    fn = ir.Function(module, ir.FunctionType(retty, list(packer.argument_types)), name)
    builder = ir.IRBuilder(fn.append_basic_block("entry"))
    args = packer.from_arguments(builder, list(fn.args))
    callee = cgutils.get_or_insert_function(
        module, context.call_conv.get_function_type(resty, argtys), res.fndesc.llvm_func_name)
    status, out = context.call_conv.call_function(builder, callee, resty, argtys, args)
    if not returns:
        builder.ret_void()
    else:
        if isinstance(resty, types.Optional):
            # Numba's convention returns the value, its status says whether it is None:
            # then a zero of the value's type
            out = builder.select(status.is_none, context.get_constant_null(value_ty), out)
        builder.ret(context.get_return_value(builder, value_ty, out))
    lib = context.codegen().create_library(name)
    lib.add_ir_module(module)
    lib.add_linking_library(res.library)
    return lib.neutral_ir(simplify=True, entry_points=(name,))


def compile_c_abi(fn, res, name: str, target):
    """The Artifact of *res* (of device function *fn*) behind the C ABI function *name*,
    for *target*: only *name* is exported."""
    from ..cache import compile_target

    return compile_target(_wrapper_text(res, name), (), target, fn.options, name=name,
                          exports=(name,))
