"""Foreign device code: ``cuda.jit(link=...)`` and ``cuda.declare_device``.

On the CUDA target the kernel's PTX and the code given to link become one cubin
(NVRTC for CUDA C, nvJitLink for the link): checked here without a GPU, by the
cubin and nvJitLink's log naming the foreign function, and by the same kernel
failing to link without that code.  Every other target rejects such a kernel with
an UnsupportedError (OpenCL runs here for real).  A GPU launch runs only where a
CUDA device is present.
"""

from __future__ import annotations

import hashlib
import pickle

import numpy as np
import pytest
from numba import float32, int32

import numba_gpux as gpux
from numba_gpux import cuda, linking
from numba_gpux.cachekey import kernel_key
from numba_gpux.devices import resolve_target
from numba_gpux.errors import GpuxUserError, UnsupportedError

try:
    from numba_gpux.targets.cuda import linker as _linker

    _HAVE = _linker.have_nvrtc() and _linker.have_nvjitlink()
except ImportError:  # pragma: no cover - the CUDA target is part of the package
    _HAVE = False

needs_linker = pytest.mark.skipif(
    not _HAVE, reason="NVRTC and nvJitLink (cuda-python's cuda.bindings.nvrtc and "
                      "nvjitlink, with the nvidia-cuda-nvrtc and nvidia-nvjitlink libraries) "
                      "are not installed")

MUL_CU = """
extern "C" __device__ int mul_scaled(float *ret, float x, float y) {
    *ret = x * y * 3.0f;
    return 0;
}
"""

#: ``add_seven(int32) -> int32`` in numba.cuda's foreign ABI, as PTX
ADD_PTX = """
.version 7.0
.target sm_75
.address_size 64

.visible .func  (.param .b32 func_retval0) add_seven(
	.param .b64 add_seven_param_0,
	.param .b32 add_seven_param_1
)
{
	.reg .b32 	%r<4>;
	.reg .b64 	%rd<2>;

	ld.param.u64 	%rd1, [add_seven_param_0];
	ld.param.u32 	%r1, [add_seven_param_1];
	add.s32 	%r2, %r1, 7;
	st.u32 	[%rd1], %r2;
	mov.u32 	%r3, 0;
	st.param.b32 	[func_retval0+0], %r3;
	ret;
}
"""

F32 = (float32[::1], float32[::1])
I32 = (int32[::1], int32[::1])


@pytest.fixture
def cu_file(tmp_path):
    path = tmp_path / "mul.cu"
    path.write_text(MUL_CU)
    return path


@pytest.fixture
def ptx_file(tmp_path):
    path = tmp_path / "add.ptx"
    path.write_text(ADD_PTX)
    return path


def _mul_kernel(mul):
    def kernel(out, x):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = mul(x[i], x[i])
    return kernel


def _add_kernel(add):
    def kernel(out, x):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = add(x[i])
    return kernel


def _entry(art) -> str:
    return art.kernels[0]


# ------------------------------------------------------------------ CUDA: linked cubins

@needs_linker
def test_a_declared_function_from_a_cu_file_is_linked_into_the_cubin(cu_file):
    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)", link=str(cu_file))
    kernel = cuda.jit(_mul_kernel(mul))
    art = gpux.compile(kernel, F32, target="cuda")
    assert art.binary[:4] == b"\x7fELF"
    # the cubin holds the kernel and the foreign function, which nvJitLink compiled
    assert _entry(art).encode() in art.binary and b"mul_scaled" in art.binary
    log = art.info["link_log"]
    assert f"Compiling entry function '{_entry(art)}'" in log
    assert "Function properties for mul_scaled" in log
    assert art.info["linker"] == "nvjitlink"
    digest = hashlib.sha256(MUL_CU.encode()).hexdigest()
    assert art.info["link"] == (("cu", str(cu_file.resolve()), digest),)
    assert art.info["link_symbols"] == ("mul_scaled",)
    # the PTX calls it and does not define it
    assert ".extern .func" in art.text and "mul_scaled" in art.text
    # compile_cubin gives the same linked cubin's kernel
    cubin = cuda.compile_cubin(kernel, F32)
    assert cubin[:4] == b"\x7fELF" and b"mul_scaled" in cubin


@needs_linker
def test_without_the_code_the_link_fails_naming_the_symbol():
    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)")
    with pytest.raises(_linker.LinkError) as info:
        cuda.compile_cubin(cuda.jit(_mul_kernel(mul)), F32)
    assert "mul_scaled" in str(info.value)


@needs_linker
def test_jit_link_of_a_ptx_file(ptx_file):
    add = cuda.declare_device("add_seven", "int32(int32)")
    kernel = cuda.jit(link=[str(ptx_file)])(_add_kernel(add))
    res = cuda.compile_for(kernel, np.zeros(4, np.int32), np.zeros(4, np.int32))
    assert res.cubin[:4] == b"\x7fELF" and b"add_seven" in res.cubin
    art = gpux.compile(kernel, I32, target="cuda")
    assert "Function properties for add_seven" in art.info["link_log"]
    assert [k for k, _n, _d in art.info["link"]] == ["ptx"]
    # compile_cubin of the cuda.jit kernel links what its jit was given
    assert b"add_seven" in cuda.compile_cubin(kernel, I32)


@needs_linker
def test_in_memory_code_objects_link(tmp_path):
    add = cuda.declare_device("add_seven", "int32(int32)",
                              link=cuda.PTXSource(ADD_PTX.encode(), name="add.ptx"))
    art = gpux.compile(cuda.jit(_add_kernel(add)), I32, target="cuda")
    assert "Function properties for add_seven" in art.info["link_log"]
    assert art.info["link"][0][:2] == ("ptx", "add.ptx")
    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)",
                              link=cuda.CUSource(MUL_CU, name="mul.cu"))
    art = gpux.compile(cuda.jit(_mul_kernel(mul)), F32, target="cuda")
    assert "Function properties for mul_scaled" in art.info["link_log"]


@needs_linker
def test_lto_ir_links(tmp_path):
    from cuda.bindings import nvrtc

    err, prog = nvrtc.nvrtcCreateProgram(MUL_CU.encode(), b"mul.cu", 0, [], [])
    opts = [b"--gpu-architecture=compute_75", b"--relocatable-device-code=true", b"-dlto"]
    assert nvrtc.nvrtcCompileProgram(prog, len(opts), opts)[0] == nvrtc.nvrtcResult.NVRTC_SUCCESS
    _err, size = nvrtc.nvrtcGetLTOIRSize(prog)
    ltoir = b" " * size
    nvrtc.nvrtcGetLTOIR(prog, ltoir)
    nvrtc.nvrtcDestroyProgram(prog)
    path = tmp_path / "mul.ltoir"
    path.write_bytes(ltoir)
    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)", link=str(path))
    art = gpux.compile(cuda.jit(_mul_kernel(mul)), F32, target="cuda")
    assert "Function properties for mul_scaled" in art.info["link_log"]
    assert art.info["link"][0][0] == "ltoir"


@needs_linker
def test_a_device_function_links_its_code_into_the_kernels_calling_it(ptx_file):
    add = cuda.declare_device("add_seven", "int32(int32)")

    @cuda.jit(device=True, link=[str(ptx_file)])
    def twice(v):
        return add(add(v))

    kernel = cuda.jit(_add_kernel(twice))
    art = gpux.compile(kernel, I32, target="cuda")
    assert "Function properties for add_seven" in art.info["link_log"]
    assert [n for _k, n, _d in art.info["link"]] == [str(ptx_file.resolve())]


@needs_linker
def test_a_cu_file_that_does_not_compile_names_it(tmp_path):
    bad = tmp_path / "bad.cu"
    bad.write_text('extern "C" __device__ int broken(float *r) { return undefined_name; }\n')
    f = cuda.declare_device("broken", "float32()", link=str(bad))

    def kernel(out):
        out[0] = f()

    with pytest.raises(_linker.LinkError) as info:
        cuda.compile_cubin(cuda.jit(kernel), (float32[::1],))
    assert "bad.cu" in str(info.value) and "undefined_name" in str(info.value)


def test_without_nvjitlink_the_code_to_link_travels_for_the_driver(cu_file, monkeypatch):
    if not _linker.have_nvrtc():
        pytest.skip("NVRTC is not installed")
    monkeypatch.setattr(_linker, "have_nvjitlink", lambda: False)
    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)", link=str(cu_file))
    kernel = cuda.jit(_mul_kernel(mul))
    art = gpux.compile(kernel, F32, target="cuda")
    assert art.binary is None and art.info["linker"] == "driver"
    (kind, name, ptx), = art.info["link_images"]  # the CUDA C, compiled by NVRTC
    assert kind == "ptx" and name == str(cu_file.resolve())
    assert b".visible .func" in ptx and b"mul_scaled" in ptx
    with pytest.raises(gpux.ToolchainError, match="nvJitLink"):
        cuda.compile_cubin(kernel, F32)


def test_without_nvrtc_linking_cuda_c_is_a_toolchain_error(cu_file):
    """Where NVRTC cannot run (no cuda-python, or its binding without the library), a
    kernel that links a CUDA C file fails to compile with an error that says so, not an
    internal compiler error."""
    if _linker.have_nvrtc():
        pytest.skip("NVRTC is installed")
    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)", link=str(cu_file))
    with pytest.raises(gpux.ToolchainError, match="needs NVRTC"):
        gpux.compile(cuda.jit(_mul_kernel(mul)), F32, target="cuda")


def test_compile_ptx_declares_the_function_and_records_the_code(cu_file):
    # PTX needs neither NVRTC nor a linker: the call stays external
    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)", link=str(cu_file))
    ptx, _ = cuda.compile_ptx(_mul_kernel(mul), F32)
    decl = [ln for ln in ptx.splitlines() if ln.startswith(".extern .func")]
    assert decl and "mul_scaled" in decl[0]
    assert "call.uni" in ptx
    art = gpux.compile(cuda.jit(_mul_kernel(mul)), F32, target=resolve_target("cuda", cubin=False))
    assert art.binary is None and art.info["link_symbols"] == ("mul_scaled",)


@needs_linker
def test_compile_all_gives_the_ptx_and_the_code_linked(cu_file, ptx_file):
    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)", link=str(cu_file))
    add = cuda.declare_device("add_seven", "int32(int32)", link=str(ptx_file))

    def f(x, n):
        return mul(x, x) + add(n)

    codes, ret = cuda.compile_all(f, "float32(float32, int32)", output="ptx")
    assert ret == float32 and len(codes) == 3
    assert ".func" in codes[0] and "mul_scaled" in codes[0]
    # the CUDA C compiled by NVRTC defines the function; the PTX file comes as it is
    assert ".visible .func" in codes[1] and "mul_scaled" in codes[1]
    assert isinstance(codes[2], cuda.PTXSource) and codes[2].data == ADD_PTX.encode()
    with pytest.raises(UnsupportedError, match="ltoir"):
        cuda.compile_all(f, "float32(float32, int32)")


def test_the_c_abi_calls_the_symbol_with_the_values():
    f = cuda.declare_device("plain_c", "float32(float32, int32)", abi="c")

    def kernel(out, x):
        out[0] = f(x[0], 3)

    ptx, _ = cuda.compile_ptx(kernel, F32)
    decl = next(ln for ln in ptx.splitlines() if "plain_c" in ln and ".extern" in ln)
    # returns the float itself: no status, no pointer to a return slot
    assert ".param .b32 func_retval0" in decl
    params = [ln for ln in ptx.splitlines() if "plain_c_param" in ln]
    assert len(params) == 2 and all(".b64" not in p for p in params)


# ------------------------------------------------------------------ other targets

def test_opencl_rejects_a_declared_function_naming_file_symbol_and_target(cu_file,
                                                                         opencl_device):
    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)", link=str(cu_file))
    kernel = cuda.jit(_mul_kernel(mul))
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(UnsupportedError) as info:
        kernel[1, 4](np.zeros(4, np.float32), x)
    msg = str(info.value)
    assert "mul_scaled" in msg and str(cu_file.resolve()) in msg
    assert "test_link.py:" in msg  # the line of the call
    assert "'opencl'" in msg and "CUDA C/PTX can be linked only on CUDA devices" in msg


def test_opencl_rejects_a_kernel_with_link_files(ptx_file, opencl_device):
    @cuda.jit(link=[str(ptx_file)])
    def kernel(out):
        out[0] = 1

    with pytest.raises(UnsupportedError) as info:
        kernel[1, 1](np.zeros(1, np.float32))
    assert str(ptx_file.resolve()) in str(info.value)
    assert "'opencl'" in str(info.value)


def test_the_portable_jit_links_too(ptx_file, opencl_device):
    add = cuda.declare_device("add_seven", "int32(int32)")
    kernel = gpux.jit(link=[str(ptx_file)])(_add_kernel(add))
    art = gpux.compile(kernel, I32, target=resolve_target("cuda", cubin=False))
    assert art.info["link"][0][:2] == ("ptx", str(ptx_file.resolve()))
    with pytest.raises(UnsupportedError, match="add.ptx"):
        kernel[1, 4](np.zeros(4, np.int32), np.arange(4, dtype=np.int32))
    with pytest.raises(FileNotFoundError, match="nothere.ptx"):
        gpux.jit(link=str(ptx_file.parent / "nothere.ptx"))


@pytest.mark.parametrize("target", ["opencl", "opencl-c", "metal"])
def test_every_target_without_a_linker_rejects_it(target):
    f = cuda.declare_device("some_foreign", "int32(int32)")
    with pytest.raises(UnsupportedError) as info:
        gpux.compile(_add_kernel(f), I32, target=target)
    assert "some_foreign" in str(info.value) and repr(target) in str(info.value)


# ------------------------------------------------------------------ files and keys

def test_a_missing_file_is_an_error_naming_it(tmp_path):
    gone = tmp_path / "gone.cu"
    with pytest.raises(linking.MissingLinkFile) as info:
        cuda.jit(link=[str(gone)])
    assert str(gone) in str(info.value)
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, GpuxUserError)
    with pytest.raises(FileNotFoundError, match="gone.ptx"):
        cuda.declare_device("f", "int32(int32)", link=str(tmp_path / "gone.ptx"))


def test_an_unknown_extension_is_an_error(tmp_path):
    odd = tmp_path / "code.txt"
    odd.write_text("")
    with pytest.raises(UnsupportedError, match="code.txt"):
        cuda.jit(link=[str(odd)])


def test_the_cache_key_follows_the_content_of_linked_files(cu_file, ptx_file):
    target = resolve_target("cuda", cubin=False)
    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)", link=str(cu_file))
    by_call = cuda.jit(_mul_kernel(mul))
    by_jit = cuda.jit(link=[str(ptx_file)])(_add_kernel(
        cuda.declare_device("add_seven", "int32(int32)")))
    before = kernel_key(by_call, F32, target), kernel_key(by_jit, I32, target)
    assert None not in before
    assert before == (kernel_key(by_call, F32, target), kernel_key(by_jit, I32, target))
    cu_file.write_text(MUL_CU.replace("3.0f", "4.0f"))
    ptx_file.write_text(ADD_PTX.replace(", 7;", ", 8;"))
    after = kernel_key(by_call, F32, target), kernel_key(by_jit, I32, target)
    assert after[0] != before[0] and after[1] != before[1]
    # a file gone since: no key (the compile then names the missing file)
    cu_file.unlink()
    assert kernel_key(by_call, F32, target) is None


def test_the_neutral_code_records_the_content():
    recs_a = linking.records([linking.from_code("ptx", "a", "x.ptx")], ["sym"])
    recs_b = linking.records([linking.from_code("ptx", "b", "x.ptx")], ["sym"])
    assert recs_a != recs_b  # the digests differ
    text = linking.add_to_text("define void @k() {\n  ret void\n}\n", recs_a)
    assert linking.read(text) == tuple(recs_a)
    # records merge, each once, and odd names survive the IR's quoting
    odd = linking.records([linking.from_code("cu", "c", 'dir "x"\\y.cu')])
    merged = linking.add_to_text(linking.add_to_text(text, recs_a), odd)
    assert linking.read(merged) == tuple(recs_a + odd)
    import llvmlite.binding as ll

    ll.parse_assembly(merged)  # LLVM reads what is written


def test_declared_functions_and_linked_kernels_pickle(ptx_file):
    add = cuda.declare_device("add_seven", "int32(int32)", link=str(ptx_file))
    again = pickle.loads(pickle.dumps(add))
    assert again.symbol == "add_seven" and again.link == add.link
    kernel = cuda.jit(link=[str(ptx_file)])(_add_kernel(add))
    assert pickle.loads(pickle.dumps(kernel)).extra["link"] == kernel.extra["link"]


def test_arguments_convert_to_the_declared_types_or_fail_typing():
    from numba.core.errors import TypingError

    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)")

    def ints(out, x):
        out[0] = mul(x[0], 2)  # an int converts to float32

    ptx, _ = cuda.compile_ptx(ints, F32)
    assert "mul_scaled" in ptx

    def array(out, x):
        out[0] = mul(x, 2)

    with pytest.raises(TypingError, match="mul_scaled"):
        cuda.compile_ptx(array, F32)


def test_use_cooperative_is_unsupported():
    with pytest.raises(UnsupportedError, match="use_cooperative"):
        cuda.declare_device("f", "int32(int32)", use_cooperative=True)


def test_a_return_type_is_required():
    with pytest.raises(TypeError, match="Return type"):
        cuda.declare_device("f", "(int32,)")


# ------------------------------------------------------------------ on a GPU

@needs_linker
def test_the_linked_kernel_runs(cu_file, ptx_file, cuda_device):
    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)", link=str(cu_file))
    kernel = cuda.jit(_mul_kernel(mul))
    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[1, 8](out, x)
    np.testing.assert_array_equal(out, x * x * 3.0)
    add = cuda.declare_device("add_seven", "int32(int32)")
    k2 = cuda.jit(link=[str(ptx_file)])(_add_kernel(add))
    xi = np.arange(8, dtype=np.int32)
    oi = np.zeros_like(xi)
    k2[1, 8](oi, xi)
    np.testing.assert_array_equal(oi, xi + 7)


def test_the_driver_links_where_nvjitlink_is_missing(cu_file, cuda_device, monkeypatch):
    if not _linker.have_nvrtc():
        pytest.skip("NVRTC is not installed")
    monkeypatch.setattr(_linker, "have_nvjitlink", lambda: False)
    mul = cuda.declare_device("mul_scaled", "float32(float32, float32)", link=str(cu_file))

    def kernel(out, x, k):  # another signature than the test above: compiled here
        i = cuda.grid(1)
        if i < out.size:
            out[i] = mul(x[i], k)

    kernel = cuda.jit(kernel)
    x = np.arange(8, dtype=np.float32)
    out = np.zeros_like(x)
    kernel[1, 8](out, x, np.float32(2))
    np.testing.assert_array_equal(out, x * 2 * 3.0)
    assert kernel.code_for(kernel.typeof_args((out, x, np.float32(2))),
                           cuda_device.target).info["linker"] == "driver"


# ------------------------------------------------------------------ the disk cache

LINKED_MODULE = """
import json, sys
from numba import float32
from numba_gpux import cache, cuda
from numba_gpux.devices import resolve_target

mul = cuda.declare_device("mul_scaled", "float32(float32, float32)", link=sys.argv[1])

@cuda.jit(cache=True)
def k(out, x):
    out[0] = mul(x[0], x[0])

art = k.code_for((float32[::1], float32[::1]), resolve_target("cuda"))
print(json.dumps({"hits": cache.stats["index_hits"], "misses": cache.stats["index_misses"],
                  "digest": art.info["link"][0][2], "cubin": art.binary.hex()}))
"""


@needs_linker
def test_a_changed_cu_file_compiles_again_in_a_new_process(tmp_path, cu_file):
    import json
    import os
    import subprocess
    import sys

    src = tmp_path / "src"
    src.mkdir()
    (src / "linked_mod.py").write_text(LINKED_MODULE)
    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(tmp_path / "cache"),
               NUMBA_GPUX_CACHE_KEY_FILE=str(tmp_path / "keys" / "cache.key"),
               PYTHONDONTWRITEBYTECODE="1")

    def run():
        p = subprocess.run([sys.executable, str(src / "linked_mod.py"), str(cu_file)],
                           capture_output=True, text=True, env=env, timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    first, second = run(), run()
    assert (first["hits"], first["misses"]) == (0, 1)
    assert (second["hits"], second["misses"]) == (1, 0)  # found on disk, nothing compiled
    assert second["cubin"] == first["cubin"]
    cu_file.write_text(MUL_CU.replace("3.0f", "5.0f"))
    third = run()
    assert (third["hits"], third["misses"]) == (0, 1)
    assert third["digest"] == hashlib.sha256(MUL_CU.replace("3.0f", "5.0f").encode()).hexdigest()
    assert third["cubin"] != first["cubin"]
