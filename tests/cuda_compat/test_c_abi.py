"""numba.cuda's C ABI for a device function compiled on its own (``cuda.compile``'s and
``compile_all``'s default, ``compile_ptx(device=True, abi="c")``): a ``.func`` named as
the Python function (or ``abi_info["abi_name"]``) that takes its arguments and returns
its value as C does.  The wrapper's code is run here on the host (its LLVM IR, made for
NVPTX, is JIT-compiled for this CPU) to check what it computes, and ptxas checks the PTX."""

import ctypes
import re

import llvmlite.binding as llvm
import pytest
from numba.core import types

from numba_gpux import cuda
from numba_gpux.cuda import float64, int32, int64
from numba_gpux.cuda.compiler import _artifact
from numba_gpux.targets.cuda import toolkit


def f_module(x, y):
    return x * 3 + y


def maybe_none(x):
    if x > 0:
        return x + 1
    else:
        return


def _func_line(ptx):
    heads = [line for line in ptx.splitlines() if line.startswith(".visible .func")]
    assert len(heads) == 1, heads          # one exported function, the wrapper
    return heads[0]


def _on_host(art, name, restype, *argtypes):
    """The function *name* of *art*'s optimized LLVM IR, compiled for this CPU."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(art.llvm_ir)
    mod.triple = llvm.get_process_triple()
    tm = llvm.Target.from_default_triple().create_target_machine()
    mod.data_layout = str(tm.target_data)
    engine = llvm.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    fn = ctypes.CFUNCTYPE(restype, *argtypes)(engine.get_function_address(name))
    fn.engine = engine                     # kept alive with the function
    return fn


@pytest.mark.parametrize("sig, width", [(int32(int32, int32), 32), (int64(int64, int64), 64)])
def test_the_function_is_named_as_python_and_returns_its_value(sig, width):
    ptx, resty = cuda.compile(f_module, sig)
    assert resty == sig.return_type
    head = _func_line(ptx)
    assert re.fullmatch(rf"\.visible \.func\s+\(\.param \.b{width} func_retval0\) f_module\(",
                        head), head
    assert "NumbaEnv" not in ptx
    art, _ = _artifact(f_module, sig, abi="c")
    c = ctypes.c_int32 if width == 32 else ctypes.c_int64
    fn = _on_host(art, "f_module", c, c, c)
    assert fn(5, 7) == 22 and fn(-4, 1) == -11


def test_abi_name_and_a_lambda_name():
    ptx, _ = cuda.compile_ptx(f_module, int32(int32, int32), device=True, abi="c",
                              abi_info={"abi_name": "_Z4funcii"})
    assert _func_line(ptx).endswith(" _Z4funcii(")
    ptx, _ = cuda.compile(lambda x: x, int32(int32))
    assert _func_line(ptx).endswith(" _3clambda_3e(")     # escaped as numba.cuda escapes it
    codes, _ = cuda.compile_all(lambda x: x, int32(int32), abi_info={"abi_name": "blah"},
                                output="ptx")
    assert _func_line(codes[0]).endswith(" blah(")


@pytest.mark.parametrize("info, message", [
    ({"abi_name": "has space"}, "PTX can spell"), ({"abi_name": "9lives"}, "PTX can spell"),
    ({"abi_name": "naïve"}, "PTX can spell"), ({"abi_name": 3}, "PTX can spell"),
    ({"name": "x"}, "only 'abi_name'"),
])
def test_a_bad_abi_name_is_a_value_error(info, message):
    with pytest.raises(ValueError, match=message):
        cuda.compile(f_module, int32(int32, int32), abi_info=info)


def test_the_inferred_return_type_and_an_optional_result():
    ptx, resty = cuda.compile(lambda a, b: a == b, (int32, int32))
    assert resty == types.boolean
    art, resty = _artifact(maybe_none, (int64,), abi="c")
    assert resty == types.Optional(types.int64)
    fn = _on_host(art, "maybe_none", ctypes.c_int64, ctypes.c_int64)
    assert fn(5) == 6
    assert fn(-3) == 0                      # None: a zero of the value's type


def test_no_result_and_a_float_result():
    def nothing():
        pass

    ptx, resty = cuda.compile(nothing, ())
    assert resty == types.none and _func_line(ptx) == ".visible .func nothing()"

    def hypot2(x, y):
        return x * x + y * y

    art, _ = _artifact(hypot2, float64(float64, float64), abi="c")
    fn = _on_host(art, "hypot2", ctypes.c_double, ctypes.c_double, ctypes.c_double)
    assert fn(3.0, 4.0) == 25.0


def test_the_numba_abi_keeps_numbas_convention():
    ptx, _ = cuda.compile(f_module, int32(int32, int32), abi="numba")
    head = _func_line(ptx)
    assert " f_module(" not in head and "f_module" in head    # Numba's mangled name


@pytest.mark.skipif(toolkit.find_ptxas() is None, reason="ptxas is not installed")
@pytest.mark.parametrize("fn, sig", [
    (f_module, int32(int32, int32)),
    (lambda z: z / 2, types.complex128(types.complex128)),
    (maybe_none, (int64,)),
])
def test_ptxas_accepts_it(fn, sig):
    ptx, _ = cuda.compile(fn, sig, cc=(8, 0))
    ok, messages = toolkit.ptxas_check(ptx, (8, 0))
    assert ok, messages
