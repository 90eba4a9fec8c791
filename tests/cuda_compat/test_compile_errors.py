"""numba.cuda's checks of a compile request, through cuda.jit, cuda.compile, compile_ptx,
compile_all and compile_for_current_device: the same error types and messages, raised
before anything is made (no GPU needed: the CUDA target's PTX is made here)."""

import re
import warnings

import numpy as np
import pytest
from numba.core import types
from numba.core.errors import NumbaInvalidConfigWarning, TypingError

from numba_gpux import cuda
from numba_gpux.errors import UnsupportedError
from numba_gpux.cuda import float32, int32, uint32


def _sum_first(x, y):
    return x[0] + y[0]


def _add(x, y):
    return x + y


def _nothing():
    pass


ARRAYS = (uint32[::1], uint32[::1])


@pytest.mark.parametrize("make", [
    lambda f: cuda.compile_ptx(f, ARRAYS),
    lambda f: cuda.compile(f, ARRAYS, device=False, abi="numba"),
    lambda f: cuda.compile_all(f, ARRAYS, device=False, abi="numba", output="ptx"),
    lambda f: cuda.compile_for_current_device(f, ARRAYS, device=False, abi="numba"),
    lambda f: cuda.compile_ptx_for_current_device(f, ARRAYS),
], ids=["compile_ptx", "compile", "compile_all", "for_current_device", "ptx_for_current"])
def test_a_kernel_that_returns_a_value_is_a_type_error_naming_the_line(make):
    with pytest.raises(TypeError, match="must have void return type") as info:
        make(_sum_first)
    text = str(info.value)
    assert "uint64" in text                                  # what it returns
    assert "return x[0] + y[0]" in text and __file__ in text  # and where


@pytest.mark.parametrize("sig", ["int32(int32[::1])", int32(int32[::1]),
                                 ["void(float32[::1])", "float32(float32[::1])"]])
def test_cuda_jit_refuses_a_kernel_signature_with_a_return_type(sig):
    with pytest.raises(TypeError, match="must have void return type"):
        cuda.jit(sig)(lambda x: None)
    # a device function returns what its signature says
    dev = cuda.jit("int32(int32)", device=True)(lambda x: x + 1)
    assert dev is not None


def test_explicit_kernel_signature_with_a_return_type_is_refused_by_compile_ptx():
    with pytest.raises(TypeError, match="must have void return type"):
        cuda.compile_ptx(_nothing, types.int32())
    ptx, resty = cuda.compile_ptx(_nothing, types.void())
    assert resty == types.void and ".entry" in ptx


def test_a_kernel_returning_a_value_at_launch_is_numbas_typing_error(device):
    # numba.cuda types a launched kernel as returning void: a returned value does not
    # convert to none, and the message names the line
    @cuda.jit
    def k(a):
        return a[0]

    with pytest.raises(TypingError, match="No conversion from int32 to none") as info:
        k[1, 1](np.zeros(4, np.int32))
    assert "return a[0]" in str(info.value)


def test_the_inferred_return_type_of_a_device_function_is_returned():
    ptx, resty = cuda.compile(_add, (int32, int32))
    assert resty == types.int64
    ptx, resty = cuda.compile(_add, int32(int32, int32))
    assert resty == int32
    codes, resty = cuda.compile_all(_add, (float32, float32), output="ptx")
    assert resty == float32 and ".func" in codes[0]


@pytest.mark.parametrize("make", [
    lambda: cuda.compile_ptx(_add, (int32, int32), abi="c"),
    lambda: cuda.compile(_add, (int32, int32), device=False),         # abi="c" by default
    lambda: cuda.compile_all(_add, (int32, int32), abi="c", device=False, output="ptx"),
])
def test_the_c_abi_for_a_kernel_is_not_implemented(make):
    with pytest.raises(NotImplementedError, match="^The C ABI is not supported for kernels$"):
        make()


@pytest.mark.parametrize("fn", [cuda.compile_ptx, cuda.compile, cuda.compile_all])
def test_an_unknown_abi_is_not_implemented(fn):
    kw = {"output": "ptx"} if fn is cuda.compile_all else {}
    with pytest.raises(NotImplementedError, match="^Unsupported ABI: fastcall$"):
        fn(_add, (int32, int32), abi="fastcall", **kw)


@pytest.mark.parametrize("fn", [cuda.compile, cuda.compile_all, cuda.compile_for_current_device])
def test_an_unknown_output_is_not_implemented_before_anything_else(fn):
    # checked first: with a bad ABI too, the output is what is reported
    with pytest.raises(NotImplementedError, match="^Unsupported output type: illegal$"):
        fn(_add, int32(int32, int32), device=True, output="illegal")
    with pytest.raises(NotImplementedError, match="^Unsupported output type: illegal$"):
        fn(_add, int32(int32, int32), output="illegal", abi="fastcall")


def test_forced_inlining_is_for_lto_ir_only_and_never_for_kernels():
    def set_zero(a):
        a[0] = 0

    with pytest.raises(ValueError, match="^Can only designate forced inlining in LTO-IR$"):
        cuda.compile(set_zero, (float32[::1],), device=True, forceinline=True)
    with pytest.raises(ValueError, match="^Can only designate forced inlining in LTO-IR$"):
        cuda.compile_ptx(set_zero, (float32[::1],), forceinline=True)
    # LTO-IR passes numba.cuda's checks of forceinline, then is one numba_gpux cannot make
    with pytest.raises(ValueError, match="^Cannot force-inline kernels$"):
        cuda.compile(set_zero, (float32[::1],), device=False, abi="numba", output="ltoir",
                     forceinline=True)
    with pytest.raises(UnsupportedError, match="LTO-IR"):
        cuda.compile(set_zero, (float32[::1],), device=True, output="ltoir", forceinline=True)


def _directives(ptx):
    return dict(re.findall(r"^\.(maxntid|minnctapersm|maxclusterrank)\s+([\d, ]+?)\s*$",
                           ptx, re.M))


@pytest.mark.parametrize("bounds, want", [
    (None, {}),
    (128, {"maxntid": "128"}),
    ((128,), {"maxntid": "128"}),
    ([128, 2], {"maxntid": "128", "minnctapersm": "2"}),
    ((128, 2, 4), {"maxntid": "128", "minnctapersm": "2", "maxclusterrank": "4"}),
    (np.int64(128), {"maxntid": "128"}),
    ((np.int32(128), np.uint8(2)), {"maxntid": "128", "minnctapersm": "2"}),
])
def test_launch_bounds_reach_compile_ptx(bounds, want):
    ptx, resty = cuda.compile_ptx(_nothing, "void()", launch_bounds=bounds, cc=(9, 0))
    assert resty == types.void
    assert _directives(ptx) == want


def test_launch_bounds_of_a_device_function_are_ignored_as_numba_cuda_does():
    ptx, _ = cuda.compile(_add, int32(int32, int32), launch_bounds=(128, 2, 4, 8))
    assert _directives(ptx) == {}


@pytest.mark.parametrize("bad, message", [
    ((128, 2, 4, 8), r"^Got 4 launch bounds: \(128, 2, 4, 8\)"),
    (0, "positive int"), ((128, -1), "positive int"), ("128", "positive int"),
    ((128.0,), "positive int"), (True, "positive int"), ((np.int64(-1),), "positive int"),
])
def test_bad_launch_bounds_are_value_errors_in_compile_ptx(bad, message):
    with pytest.raises(ValueError, match=message):
        cuda.compile_ptx(_nothing, "void()", launch_bounds=bad)


def test_compile_warns_of_debug_with_opt_as_numba_cuda_does():
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        cuda.compile_ptx(_nothing, "void()", debug=True)                 # opt defaults on
        cuda.compile_ptx(_nothing, "void()", debug=True, opt=False)
        cuda.compile_ptx(_nothing, "void()", debug=True, opt=False, lineinfo=True)
    ours = [w for w in got if issubclass(w.category, NumbaInvalidConfigWarning)]
    assert len(ours) == 1 and "debug=True with opt=True" in str(ours[0].message)



def test_cuda_jit_takes_numpy_integers_as_launch_bounds():
    k = cuda.jit("void()", launch_bounds=(np.int32(64), np.int64(2)))(_nothing)
    assert k.options.max_threads == 64 and k.options.min_blocks == 2


@pytest.mark.parametrize("keyword", ["argtypes", "restype", "bind"])
def test_old_signature_keywords_are_numba_cudas_deprecation_error(keyword):
    """``cuda.jit(argtypes=...)`` (and ``restype``, ``bind``) is numba.cuda's
    DeprecationError, as current numba.cuda raises it; None is accepted."""
    from numba.core import types
    from numba.core.errors import DeprecationError

    value = {"argtypes": (types.float32[::1],), "restype": types.void, "bind": True}[keyword]
    with pytest.raises(DeprecationError, match=f"Deprecated keyword argument `{keyword}`. "
                                               "Signatures should be passed as the first"):
        cuda.jit(**{keyword: value})
    assert callable(cuda.jit(**{keyword: None}))


def test_boundscheck_is_refused_as_numba_cuda_refuses_it():
    # an unchecked out-of-bounds access can crash a CPU device's process, so asking for
    # checks that are not made is an error in both APIs; debug=True checks bounds
    import numba_gpux as gpux
    from numba_gpux.errors import UnsupportedError

    with pytest.raises(NotImplementedError, match="bounds checking is not supported for CUDA"):
        cuda.jit(boundscheck=True)
    assert callable(cuda.jit(boundscheck=False)) and callable(cuda.jit(boundscheck=None))
    with pytest.raises(UnsupportedError, match=r"jit\(debug=True\) checks every index"):
        gpux.jit(boundscheck=True)
    assert callable(gpux.jit(boundscheck=False))
