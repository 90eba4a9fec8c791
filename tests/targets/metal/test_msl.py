"""MSL for every conformance kernel and our own: generated here, golden checks of key
constructs, and a C++17 syntax check against metal_stub.h (the Metal framework itself
runs only on macOS; test_metal_device skips elsewhere)."""

from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

import numba_gpux as gpux
from numba_gpux.targets.cfamily import SourceEmitError

HERE = os.path.dirname(__file__)
_spec = importlib.util.spec_from_file_location("gpux_metal_kernels", os.path.join(HERE, "kernels.py"))
kernels = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernels)


def _conformance_kernels():
    out = []
    for path in sorted(glob.glob(os.path.join(HERE, "..", "..", "conformance", "*.py"))):
        name = os.path.splitext(os.path.basename(path))[0]
        if name in ("conftest", "skiplist", "__init__"):
            continue
        src = open(path).read()
        if "CONFORMANCE_KERNELS" not in src:
            continue
        spec = importlib.util.spec_from_file_location(f"gpux_conf_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except Exception:  # a module that does not import is its own suite's failure
            continue
        for k, sig in getattr(mod, "CONFORMANCE_KERNELS", ()):
            out.append(pytest.param(k, sig, id=f"{name}.{getattr(k, '__name__', k)}"))
    return out


ALL = [pytest.param(k, s, id=k.__name__) for k, s in kernels.KERNELS] + _conformance_kernels()


def _msl(kernel, sig):
    try:
        return gpux.compile(kernel, sig, target="metal").text
    except (gpux.errors.ValidationError, SourceEmitError) as e:
        pytest.skip(f"not expressible on Metal: {e}")


@pytest.fixture(scope="module")
def gxx(tmp_path_factory):
    path = shutil.which("g++")
    if path is None:
        pytest.skip("g++ is not installed (the MSL syntax check needs a C++17 compiler)")
    inc = tmp_path_factory.mktemp("metal_inc")
    (inc / "metal_stdlib").write_text(f'#include "{os.path.join(os.path.abspath(HERE), "metal_stub.h")}"\n')
    return path, str(inc)


@pytest.mark.parametrize("kernel, sig", ALL)
def test_msl_syntax(kernel, sig, gxx, tmp_path):
    text = _msl(kernel, sig)
    assert "goto" not in text
    assert text.startswith("#include <metal_stdlib>")
    assert "kernel void " in text
    assert "double" not in text
    _syntax_check(text, gxx, tmp_path)


def _syntax_check(text, gxx, tmp_path):
    src = tmp_path / "k.metal.cpp"
    # g++ ignores Metal's attributes, but would expand the qualifier macros inside
    # them ([[threadgroup(0)]]); they are checked by the golden tests instead
    src.write_text(re.sub(r"\s*\[\[[^\]]*\]\]", "", text))
    r = subprocess.run([gxx[0], "-fsyntax-only", "-std=c++17", "-Wno-attributes", "-I", gxx[1],
                        "-x", "c++", str(src)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + "\n" + text


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_msl_vector_values_are_lanes(dtype, gxx, tmp_path):
    """LLVM vector values (an extension type modelled as ``<4 x float>``, through phis,
    shuffles and run-time lane indices) as one variable per lane, in Metal's spelling."""
    spec = importlib.util.spec_from_file_location(
        "gpux_opencl_c_vectors", os.path.join(HERE, "..", "opencl_c", "test_vectors.py"))
    vectors = sys.modules.get(spec.name)
    if vectors is None:  # (kept, so that the cache key finds the file of its types)
        vectors = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(vectors)
    for k in vectors.vector_kernels(dtype, 4):
        text = gpux.compile(k, f"void({dtype}[::1], {dtype}[::1], int64)", target="metal").text
        assert f"{dtype[:-2]}4" not in text and "[[thread_position_in_threadgroup]]" in text
        _syntax_check(text, gxx, tmp_path)


def test_msl_golden_saxpy():
    text = _msl(*kernels.KERNELS[0])
    # scalars travel in one argument block at buffer 0; arrays bind from 1
    assert "constant _gpux_args_saxpy" in text and "[[buffer(0)]]" in text
    assert "device uchar* v_2 [[buffer(1)]]" in text
    assert "[[thread_position_in_threadgroup]]" in text
    assert "[[threadgroup_position_in_grid]]" in text
    assert "metal::sin(" in text
    assert "*((device float*)" in text


def test_msl_golden_loops_and_shared():
    text = _msl(*kernels.KERNELS[2])
    assert "while (1) {" in text and "goto" not in text
    if hasattr(gpux, "shared"):
        text = _msl(*kernels.KERNELS[3])
        assert "threadgroup ulong g_" in text
        assert "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup)" in text


def test_msl_helpers_for_missing_library_functions():
    text = _msl(*kernels.KERNELS[4])
    for h in ("_gpux_expm1", "_gpux_log1p", "_gpux_cbrt", "_gpux_hypot"):
        assert f"static inline float {h}(" in text
    assert "metal::atan2(" in text and "metal::pow(" in text


def test_msl_golden_atomics():
    text = _msl(*kernels.KERNELS[5])
    assert "atomic_fetch_add_explicit((device atomic_int*)" in text
    assert "memory_order_relaxed" in text
    # float max (NaN rules), float add in threadgroup memory and CUDA's wrapping inc are
    # compare-and-swap loops on the bits, one helper per address space
    assert "_gpux_atomic_max_f32_g(device uchar* p_, float v)" in text
    assert "_gpux_atomic_add_f32_l(threadgroup uchar* p_, float v)" in text
    assert "_gpux_atomic_inc_u32_g(" in text
    assert "atomic_compare_exchange_weak_explicit(p, &" in text


def test_msl_golden_predicates_dynamic_shared_brev():
    text = _msl(*kernels.KERNELS[6])
    assert "threadgroup uchar* _gpux_dsmem [[threadgroup(0)]]" in text
    assert "constant ulong& _gpux_dsmem_bytes [[buffer(30)]]" in text
    assert "threadgroup atomic_uint _gpux_bpred;" in text
    assert "_gpux_barrier_count(" in text and "metal::reverse_bits(" in text


def test_msl_golden_debug_error_record():
    """The debug wrapper's compare-and-swap on the error buffer (a raw cmpxchg) is written
    with atomic_compare_exchange_weak_explicit; the buffer is the last device buffer."""
    text = _msl(*kernels.KERNELS[7])
    assert "_gpux_atomic_cas_g(" in text
    assert text.count(" [[buffer(") == 4  # arguments block, x, out, the error buffer


@pytest.mark.parametrize("index", [8, 9])
def test_msl_golden_device_heap(index):
    """Arrays of a run-time size come from the device heap on Metal, through the
    allocator on 32-bit atomics (Metal has none on 64-bit types): the heap is the last
    device buffer, its pointer is held in a threadgroup variable, MemInfos hold device
    pointers, and every atomic is on a 32-bit word.  (Checked as text and by the syntax
    check against metal_stub.h; not run on a Mac here.)"""
    from numba_gpux.devices import resolve_target
    from numba_gpux.language.heap import HEAP32_FAMILY

    assert HEAP32_FAMILY in resolve_target("metal").families
    text = _msl(*kernels.KERNELS[index])
    head = next(line for line in text.splitlines() if line.startswith("kernel void "))
    buffers = re.findall(r"device uchar\* (\w+) \[\[buffer\((\d+)\)\]\]", head)
    assert buffers[-1] == ("gpux_heap", str(len(buffers)))   # after the array, last
    assert "threadgroup ulong g___gpux_heap_base[1];" in text
    assert "*((device uchar* threadgroup*)((threadgroup uchar*)g___gpux_heap_base)) = gpux_heap;" in text
    assert "= *((device uchar* threadgroup*)((threadgroup uchar*)g___gpux_heap_base));" in text
    assert "*((device uchar* device*)" in text            # a MemInfo's data pointer
    atomics = re.findall(r"\(device (atomic_\w+)\*\)", text)
    assert atomics and set(atomics) <= {"atomic_int", "atomic_uint"}
    assert "atomic_fetch_sub_explicit((device atomic_int*)" in text   # a free
    assert "_gpux_atomic_cas_g(" in text                               # an allocation
    assert "atomic_long" not in text and "atomic_ulong" not in text
    if index == 9:  # the product of a 2-D shape, checked for overflow with mulhi
        assert "metal::mulhi((long)" in text


def test_msl_rejects_64bit_atomics():
    with pytest.raises(gpux.errors.ValidationError, match="__gpux_atomic_add_i64"):
        gpux.compile(kernels.atomics_f32, "void(int64[::1], float32[::1], uint32[::1])",
                     target="metal")


def test_msl_rejects_double():
    with pytest.raises(gpux.errors.ValidationError, match="double"):
        gpux.compile(kernels.saxpy, "void(float64, float64[::1], float64[::1], float64[::1])",
                     target="metal")


def test_msl_rejects_undefined_math():
    import math

    @gpux.jit
    def k(x):
        x[0] = math.erf(x[0])

    with pytest.raises(gpux.errors.ValidationError, match="__gpux_erf_f32"):
        gpux.compile(k, "void(float32[::1])", target="metal")


def test_metal_discovery_off_macos():
    from numba_gpux.targets.metal.launch import discover

    import sys

    if sys.platform == "darwin":
        pytest.skip("on macOS discovery finds real devices")
    assert discover() == []


@pytest.mark.metal
def test_metal_device(rng):
    devs = [d for d in gpux.devices() if d.target_name == "metal"]
    if not devs:
        pytest.skip("no Metal device (needs macOS and pyobjc-framework-Metal)")
    import numpy as np

    gpux.select_device(devs[0])
    x = rng.random(100).astype(np.float32)
    y = rng.random(100).astype(np.float32)
    out = gpux.to_device(np.zeros(100, np.float32))
    kernels.saxpy[4, 32](np.float32(2), gpux.to_device(x), gpux.to_device(y), out)
    np.testing.assert_allclose(out.copy_to_host(), 2 * x + np.sin(y), rtol=1e-5)
