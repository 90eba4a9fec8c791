"""numba-cuda-mlir's names in numba_gpux.cuda: local_array/shared_array, carray/farray,
compile_for/compile_cubin/compile_mlir, the libdevicefuncs/vector/tensor_map modules,
types.complex32, the float16 vector types, and the jit dump options; kernels run for
real on the OpenCL device, PTX is checked with ptxas."""

import ctypes

import numba
import numpy as np
import pytest
from numba.core import types

from numba_gpux import cuda
from numba_gpux.cuda import complex_half, mlir_dialect
from numba_gpux.errors import ToolchainError, UnsupportedError


def _pairs(x, out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * 2


# ------------------------------------------------------------------ plain names
def test_local_array_and_shared_array_are_the_namespace_functions(opencl_device):
    assert cuda.local_array is cuda.local.array
    assert cuda.shared_array is cuda.shared.array

    @cuda.jit
    def k(x, out):
        s = cuda.shared_array(32, np.float32)
        scratch = cuda.local_array(2, np.float32)
        t = cuda.threadIdx.x
        scratch[0] = x[t]
        scratch[1] = scratch[0] + 1
        s[31 - t] = scratch[1]
        cuda.syncthreads()
        out[t] = s[t]

    x = np.arange(32, dtype=np.float32)
    out = np.zeros_like(x)
    k[1, 32](x, out)
    np.testing.assert_array_equal(out, x[::-1] + 1)


def test_carray_and_farray_are_numbas_host_functions():
    assert cuda.carray is numba.carray and cuda.farray is numba.farray
    buf = np.arange(6, dtype=np.int32)
    ptr = buf.ctypes.data_as(ctypes.c_void_p)
    np.testing.assert_array_equal(cuda.carray(ptr, (2, 3), np.int32), buf.reshape(2, 3))
    np.testing.assert_array_equal(cuda.farray(ptr, (3, 2), np.int32), buf.reshape(3, 2, order="F"))


def test_consteval_comes_from_the_experimental_module_when_there_is_one():
    import importlib.util

    spec = importlib.util.find_spec("numba_gpux.cuda.experimental")
    if spec is None:
        with pytest.raises(AttributeError, match="consteval"):
            cuda.consteval  # noqa: B018
    else:
        from numba_gpux.cuda import experimental

        assert cuda.consteval is experimental.consteval


# ------------------------------------------------------------------ compiling
def test_compile_for_types_the_example_arguments_and_gives_ptx():
    x = np.zeros(4, np.float32)
    res = cuda.compile_for(_pairs, x, np.zeros(4, np.float64))
    assert res.signature.args == (types.float32[::1], types.float64[::1])
    assert res.signature.return_type == types.void
    assert ".entry" in res.ptx and res.inspect_asm() == res.ptx
    assert "define" in res.llvm_ir
    # a kernel object keeps its own options
    k = cuda.jit(fastmath=True)(_pairs)
    assert cuda.compile_for(k, x, x).kernel is k


def test_compile_for_raises_typing_errors_at_once():
    def bad(x):
        x[0] = "text"

    with pytest.raises(Exception, match="bad|text|unicode"):
        cuda.compile_for(bad, np.zeros(2))


def test_compile_for_refuses_a_device_function():
    dev = cuda.jit(device=True)(lambda a: a + 1)
    with pytest.raises(TypeError, match="device function"):
        cuda.compile_for(dev, 1.0)


def test_compile_cubin_is_ptxas_output_for_the_asked_sm(ptxas):
    cubin = cuda.compile_cubin(_pairs, "void(float32[::1], float32[::1])", cc=(9, 0))
    assert isinstance(cubin, bytes) and cubin[:4] == b"\x7fELF"
    res = cuda.compile_for(_pairs, np.zeros(2, np.float32), np.zeros(2, np.float32))
    assert res.cubin[:4] == b"\x7fELF"


def test_compile_cubin_takes_numba_cuda_mlirs_chip(ptxas):
    sig = "void(float32[::1], float32[::1])"
    assert cuda.compile_cubin(_pairs, sig, chip="sm_80")[:4] == b"\x7fELF"
    with pytest.raises(ValueError, match="chip must name"):
        cuda.compile_cubin(_pairs, sig, chip="ampere")
    with pytest.raises(TypeError, match="cc or chip"):
        cuda.compile_cubin(_pairs, sig, chip="sm_80", cc=(8, 0))


def test_compile_cubin_for_an_sm_no_ptxas_knows_is_a_toolchain_error(ptxas):
    with pytest.raises(ToolchainError, match="sm_999|ptxas"):
        cuda.compile_cubin(_pairs, "void(float32[::1], float32[::1])", cc=(99, 9))


def test_compile_mlir_says_there_is_no_mlir_stage():
    with pytest.raises(UnsupportedError, match="no MLIR stage"):
        cuda.compile_mlir(_pairs, "void(float32[::1], float32[::1])")


# ------------------------------------------------------------------ submodules
def test_libdevicefuncs_is_the_libdevice_table():
    lf = cuda.libdevicefuncs
    assert set(lf.functions) == {f"__nv_{n}" for n in cuda.libdevice.TABLE}
    ret, params = lf.functions["__nv_sincosf"]
    assert ret == types.void
    assert [(p.ty, p.is_ptr) for p in params] == [(types.float32, False), (types.float32, True),
                                                 (types.float32, True)]
    assert lf.create_signature(ret, params) == types.UniTuple(types.float32, 2)(types.float32)
    ret, params = lf.functions["__nv_frexp"]
    assert lf.create_signature(ret, params).return_type == types.Tuple(
        (types.float64, types.int32))
    assert lf.create_signature(*lf.functions["__nv_sin"]) == types.float64(types.float64)


def test_vector_load_names_why_it_is_not_supported(opencl_device):
    assert cuda.vector.load is not None and cuda.vector.store is not None

    @cuda.jit
    def k(x):
        v = cuda.vector.load(x, 0, 4)
        cuda.vector.store(x, 0, v)

    with pytest.raises(Exception, match="vector.load is not supported.*MLIR"):
        k[1, 1](np.zeros(4, np.float32))


def test_tensor_map_names_why_it_is_not_supported():
    tm = cuda.tensor_map
    for name in ("TensorMapSwizzle", "TensorMapL2Promotion", "TensorMapFloatOOBFill",
                 "TensorMapInterleave"):
        assert isinstance(getattr(tm, name), type)
    with pytest.raises(UnsupportedError, match="tensor maps"):
        tm.create_tensor_map_from_tensor(np.zeros((4, 4), np.float32), (2, 2))


# ------------------------------------------------------------------ complex32
def test_complex32_is_a_complex_of_two_halves():
    c32 = cuda.types.complex32
    assert cuda.complex32 is c32
    assert isinstance(c32, types.Complex) and c32.underlying_float == types.float16
    assert c32.bitwidth == 32


def test_complex32_builds_reads_and_promotes_in_kernels(opencl_device):
    c32 = cuda.complex32

    @cuda.jit
    def k(halves, re, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            z = c32(halves[i, 0], halves[i, 1])   # two parts
            w = c32(re[i])                        # a real: imaginary part 0
            p = z * z + w                         # complex64 arithmetic
            q = c32(p)                            # back to halves
            out[i, 0] = q.real
            out[i, 1] = q.imag

    vals = np.array([1 + 2j, -0.5 + 0.25j, 3 - 1j, 0j], np.complex64)
    re = np.array([1, 2, 3, 4], np.float32)
    halves = complex_half.to_halves(vals)
    d_out = cuda.device_array((4, 2), np.float16)
    k[1, 4](cuda.to_device(halves), re, d_out)
    got = complex_half.from_halves(d_out.copy_to_host())
    want = (vals * vals + re).astype(np.complex64)
    np.testing.assert_allclose(got, want, rtol=2e-3)


def test_complex32_in_local_and_shared_arrays(opencl_device):
    c32 = cuda.complex32

    @cuda.jit
    def k(h, out):
        i = cuda.grid(1)
        a = cuda.local.array(2, c32)
        s = cuda.shared.array(4, c32)
        a[0] = c32(h[i, 0], h[i, 1])
        a[1] = a[0] + 1            # stored back as halves
        s[i] = a[1] * 2
        cuda.syncthreads()
        z = s[i]
        out[i, 0] = z.real
        out[i, 1] = z.conjugate().imag
        out[i, 2] = 1.0 if a[0] == a[0] else 0.0
        out[i, 3] = abs(a[0])

    h = np.array([[1, 2], [3, -1], [0, 0], [0.5, 0.5]], np.float16)
    out = np.zeros((4, 4), np.float32)
    k[1, 4](h, out)
    z = h[:, 0].astype(np.complex64) + 1j * h[:, 1]
    np.testing.assert_allclose(out[:, 0], ((z + 1) * 2).real)
    np.testing.assert_allclose(out[:, 1], -((z + 1) * 2).imag)
    np.testing.assert_array_equal(out[:, 2], 1.0)
    np.testing.assert_allclose(out[:, 3], np.abs(z), rtol=1e-6)


def test_complex32_host_form_round_trips():
    from numba_gpux.cuda.complex_half import from_halves, to_halves

    vals = np.array([[1.5 - 2j, 0.125j]], np.complex128)
    h = to_halves(vals)
    assert h.dtype == np.float16 and h.shape == (1, 2, 2)
    np.testing.assert_array_equal(from_halves(h), vals.astype(np.complex64))
    np.testing.assert_array_equal(to_halves(np.array([2.0]))[0], [2.0, 0.0])
    with pytest.raises(ValueError, match="last axis has length 2"):
        from_halves(np.zeros(3, np.float16))


def test_complex32_wrong_construction_is_a_typing_error(opencl_device):
    @cuda.jit
    def k(out):
        z = cuda.complex32(1.0, 2.0, 3.0)
        out[0] = z.real

    with pytest.raises(Exception, match="complex32.*real and an imaginary part"):
        k[1, 1](np.zeros(1, np.float16))


def test_complex32_ptx_assembles(ptxas):
    from numba_gpux.targets.cuda import toolkit

    def k(h, out):
        z = cuda.complex32(h[0], h[1])
        out[0] = (z * z).imag

    ptx, _ = cuda.compile_ptx(k, "void(float16[::1], float32[::1])", cc=(7, 5))
    ok, log = toolkit.ptxas_check(ptx, (7, 5))
    assert ok, log


# ------------------------------------------------------------------ float16 vectors
def test_float16_vector_types_and_half_aliases():
    vt = cuda.vector_types.vector_types
    for n in (1, 2, 3, 4):
        assert vt[f"float16x{n}"].base_type == types.float16
        assert getattr(cuda, f"half{n}") is getattr(cuda, f"float16x{n}")
    assert "half2" in cuda.float16x2.aliases


def test_float16_vectors_in_a_kernel(opencl_device):
    @cuda.jit
    def k(x, out):
        i = cuda.grid(1)
        if i < out.shape[0]:
            v = cuda.half2(x[i], x[i] * 2)
            w = cuda.float16x4(v, cuda.float16x2(v.y, v.x))
            out[i] = w.x + w.y + w.z + w.w

    x = np.arange(8, dtype=np.float16)
    out = np.zeros_like(x)
    k[1, 8](x, out)
    np.testing.assert_array_equal(out, 6 * x)


def test_float16_vector_ptx_assembles(ptxas):
    from numba_gpux.targets.cuda import toolkit

    def k(x, out):
        v = cuda.half4(x[0], x[1], x[2], x[3])
        out[0] = v.w

    ptx, _ = cuda.compile_ptx(k, "void(float16[::1], float16[::1])", cc=(7, 5))
    ok, log = toolkit.ptxas_check(ptx, (7, 5))
    assert ok, log


# ------------------------------------------------------------------ jit options
def test_dump_options_print_each_stage_to_stderr_at_compile_time(opencl_device, capfd):
    k = cuda.jit(dump_numba_ir=True, dump_llvmir=True, dump_ptx=True, dump_cubin=True)(_pairs)
    assert capfd.readouterr().err == ""  # nothing before the compile
    x = np.arange(4, dtype=np.float32)
    out = np.zeros_like(x)
    k[1, 4](x, out)
    err = capfd.readouterr().err
    assert "Numba IR of _pairs(" in err and "getitem(value=x" in err
    assert "LLVM IR of _pairs(" in err and "spir_kernel" in err
    # off CUDA, the target's own code as text, said to be that
    assert "spirv of _pairs(" in err and "the target makes no PTX" in err and "OpEntryPoint" in err
    assert "binary of _pairs(" in err and "spirv:" in err and "bytes" in err
    k[1, 4](x, out)  # compiled already: nothing more
    assert capfd.readouterr().err == ""
    np.testing.assert_array_equal(out, 2 * x)


def test_dump_ptx_prints_ptx_where_the_code_is_ptx(capfd):
    k = cuda.jit(dump_ptx=True)(_pairs)
    k.inspect_asm("void(float32[::1], float32[::1])", target="cuda")
    err = capfd.readouterr().err
    assert "PTX of _pairs(" in err and ".entry" in err and ".version" in err


def test_dump_cubin_says_how_big_the_cubin_is(ptxas, capfd):
    k = cuda.jit(dump_cubin=True)(_pairs)
    k.inspect_asm("void(float32[::1], float32[::1])", target="cuda")
    err = capfd.readouterr().err
    assert "binary of _pairs(" in err and "cubin:" in err and "bytes" in err


def test_dump_is_numba_ir_and_llvm_ir(capfd):
    k = cuda.jit(dump=True)(_pairs)
    assert k.dumps == {"numba_ir", "llvmir"}
    k.inspect_asm("void(float32[::1], float32[::1])", target="cuda")
    err = capfd.readouterr().err
    assert "Numba IR of _pairs(" in err and "LLVM IR of _pairs(" in err
    assert "PTX of" not in err


def test_device_function_dumps_its_lowered_llvm_ir(capfd):
    dev = cuda.jit(device=True, dump_llvmir=True)(lambda a: a + 1)
    dev.compile("float64(float64)")
    assert "LLVM IR of <lambda>(float64)" in capfd.readouterr().err


@pytest.mark.parametrize("name", ["dump_mlir", "dump_ast", "dump_ast_after_all",
                                  "print_after_all", "print_before_all"])
def test_stages_numba_gpux_has_not_are_no_ops(name, capfd):
    k = cuda.jit(**{name: True})(_pairs)
    assert k.dumps == frozenset()
    assert k.options == cuda.jit(_pairs).options
    k.inspect_asm("void(float32[::1], float32[::1])", target="cuda")
    assert capfd.readouterr().err == ""


def test_an_unknown_option_lists_the_valid_ones():
    with pytest.raises(TypeError) as info:
        cuda.jit(dumpp=True)
    msg = str(info.value)
    assert "dumpp" in msg
    for valid in ("dump", "dump_ptx", "launch_bounds", "shared_memory_carveout", "lineinfo",
                  "debug", "inline", "link", "lto", "print_after_all"):
        assert valid in msg


def test_the_dialect_passes_dumps_on_and_drops_mlir_only_ones():
    rows = mlir_dialect.JIT_DIFFERENCES
    for name in ("dump", "dump_numba_ir", "dump_llvmir", "dump_ptx", "dump_cubin"):
        assert rows[name].kind == "default" and rows[name].value is False
    for name in ("dump_mlir", "print_after_all", "lto"):
        assert rows[name].kind == "no-op"
    assert mlir_dialect.jit(dump_ptx=True)(_pairs).dumps == {"asm"}
    assert mlir_dialect.jit(_pairs).dumps == frozenset()
    assert mlir_dialect.jit(lto=True)(_pairs).options == mlir_dialect.jit(_pairs).options


def test_dumps_survive_specialization_and_pickling():
    import pickle

    k = cuda.jit(dump_ptx=True)(_pairs)
    assert k.specialize(np.zeros(2, np.float32), np.zeros(2, np.float32)).dumps == {"asm"}
    assert pickle.loads(pickle.dumps(k)).dumps == {"asm"}
