"""The CUDA target without a GPU: compile, PTX shape, compute capabilities, libdevice."""

from __future__ import annotations

import importlib.util
import math
import os
import re

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import cuda
from numba_gpux.errors import GpuxUserError, ToolchainError

_spec = importlib.util.spec_from_file_location(
    "gpux_cuda_test_kernels", os.path.join(os.path.dirname(__file__), "kernels.py"))
K = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(K)

SAXPY32 = "void(float32, float32[::1], float32[::1], float32[::1])"
ENTRY = re.compile(r"^\.(?:visible|weak)? ?\.entry (\w+)", re.M)
FUNC = re.compile(r"^\s*\.(?:visible |extern |weak )?\.func\b", re.M)


def _ptx(kernel, sig, **kw):
    return gpux.compile(kernel, sig, target="cuda", **kw)


def test_compile_without_gpu_uses_default_cc():
    from numba_gpux.targets.cuda.target import DEFAULT_CC

    art = _ptx(K.saxpy, SAXPY32)
    assert art.kind == "ptx"
    assert f".target sm_{DEFAULT_CC[0]}{DEFAULT_CC[1]}" in art.text
    assert ".address_size 64" in art.text
    assert art.info["cc"] == DEFAULT_CC
    assert len(art.kernels) == 1 and ENTRY.findall(art.text) == list(art.kernels)


@pytest.mark.parametrize("cc, sm, isa", [((8, 0), "sm_80", "7.0"), ((9, 0), "sm_90", "8.0"),
                                         ("sm_86", "sm_86", "7.1"), ("8.9", "sm_89", "7.8"),
                                         ((7, 0), "sm_70", "6.3"), ("sm_90a", "sm_90a", "8.0"),
                                         ("sm_100a", "sm_100a", "8.6"),
                                         ("10.0f", "sm_100f", "8.8"),
                                         ((10, 3, "a"), "sm_103a", "8.8")])
def test_compute_capability_sets_sm_and_ptx_isa(cc, sm, isa):
    art = _ptx(K.saxpy, SAXPY32, cc=cc)
    assert f".target {sm}" in art.text
    assert f".version {isa}" in art.text


def test_ptx_version_override():
    art = _ptx(K.saxpy, SAXPY32, cc=(8, 0), ptx_version=(8, 5))
    assert ".version 8.5" in art.text and ".target sm_80" in art.text


@pytest.mark.parametrize("cc", [(3, 5), "abc", (9,), (9, 0, 1), "sm_", "sm_80a", "sm_a", "sm_90f"])
def test_bad_compute_capability_is_a_user_error(cc):
    with pytest.raises(GpuxUserError, match="cc|compute capability"):
        _ptx(K.saxpy, SAXPY32, cc=cc)


def test_targets_for_different_cc_do_not_share_code():
    from numba_gpux.targets.cuda.target import make_target

    a, b = make_target(cc=(8, 0)), make_target(cc=(9, 0))
    assert a.fingerprint != b.fingerprint
    assert make_target(cc=(8, 0)).fingerprint == a.fingerprint
    assert a.map_ir("define void @f(ptr %p) {\n ret void\n}") == \
        "define void @f(ptr %p) {\n ret void\n}"


@pytest.mark.parametrize("case", K.KERNELS, ids=[f"{k.__name__}-{s}" for k, s in K.KERNELS])
def test_one_entry_no_func_no_unresolved_symbols(case):
    kernel, sig = case
    art = _ptx(kernel, sig, cc=(8, 0))
    text = art.text
    assert ENTRY.findall(text) == list(art.kernels)
    assert not FUNC.search(text), "a device function or library helper was left as a .func"
    assert "call." not in text and "\tcall" not in text
    for sym in ("__nv_", "__gpux_", "__nvvm_reflect", ".extern"):
        assert sym not in text, f"{sym} left in the PTX"


def test_libdevice_math_is_inlined():
    art = _ptx(K.math_unary, "void(float64[::1], float64[:, ::1])", cc=(9, 0))
    # libdevice's Payne-Hanek reduction table for double trigonometry
    assert "__cudart_i2opi_d" in art.text
    assert not FUNC.search(art.text)
    # single-instruction math uses the PTX instruction, not libdevice
    assert "sqrt.rn.f64" in art.text and "cvt.rmi.f64.f64" in art.text


def test_float32_math_stays_single_precision():
    art = _ptx(K.math_unary, "void(float32[::1], float32[:, ::1])", cc=(8, 0))
    assert "sqrt.rn.f32" in art.text
    assert "__cudart_i2opi_f" in art.text


def test_optimized_ir_has_no_libdevice_left_over():
    art = _ptx(K.math_special, "void(float64[::1], float64[:, ::1])", cc=(8, 0))
    defined = re.findall(r"^define .*?@([\w.$]+)\(", art.llvm_ir, re.M)
    assert defined == list(art.kernels)


def test_cubin_from_ptxas_when_installed():
    from numba_gpux.targets.cuda import toolkit

    art = _ptx(K.saxpy, SAXPY32, cc=(9, 0))
    if toolkit.find_ptxas() is None:
        assert art.binary is None
    else:
        assert art.binary is not None and art.binary[:4] == b"\x7fELF"
    no = _ptx(K.saxpy, SAXPY32, cc=(9, 0), cubin=False)
    assert no.binary is None and no.text == art.text


def test_device_function_compiles_for_cuda():
    art = gpux.compile(K._poly.py_func, "float64(float64)", target="cuda", device=True)
    # compile(..., device=True) keeps the function visible (nothing else is emitted)
    assert len(re.findall(r"^\.visible \.func", art.text, re.M)) == 1
    assert not ENTRY.findall(art.text)


def test_libdevice_links_only_what_is_used():
    from numba_gpux.targets.cuda import libdevice

    lib = libdevice.get()
    text = lib.module_text({"__nv_sin"})
    defined = set(re.findall(r"^define [^@]*@([\w.$]+)\(", text, re.M))
    assert "__nv_sin" in defined
    assert "__internal_trig_reduction_slowpathd" in defined
    assert "__nv_cos" not in defined and "__nv_expf" not in defined
    assert len(defined) < 10
    assert "noinline" not in text
    assert '!"nvvm-reflect-ftz", i32 0' in text


def test_missing_libdevice_names_what_to_install(monkeypatch, tmp_path):
    from numba_gpux.targets.cuda import libdevice

    monkeypatch.setattr(libdevice, "_cached", None)
    monkeypatch.setattr(libdevice, "_candidate_dirs", lambda: [str(tmp_path)])
    assert libdevice.find_libdevice() is None

    @gpux.jit
    def uses_exp(x):
        x[0] = math.exp(x[0])

    with pytest.raises(ToolchainError, match="pip install nvidia-cuda-nvcc"):
        gpux.compile(uses_exp, "void(float64[::1])", target="cuda", cc=(8, 1))


def test_libdevice_found_under_cuda_home(monkeypatch, tmp_path):
    from numba_gpux.targets.cuda import libdevice

    found = libdevice.find_libdevice()
    if found is None:
        pytest.skip("libdevice is not installed here")
    d = tmp_path / "nvvm" / "libdevice"
    d.mkdir(parents=True)
    (d / "libdevice.10.bc").write_bytes(open(found, "rb").read())
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    assert libdevice.find_libdevice() == str(d / "libdevice.10.bc")


def test_discover_without_gpu_returns_a_list():
    from numba_gpux.targets.cuda.launch import discover

    devs = discover()
    assert isinstance(devs, list)
    assert all(d.target_name == "cuda" and d.kind == "gpu" for d in devs)
    cuda_devs = [d for d in gpux.devices() if d.target_name == "cuda"]
    assert len(cuda_devs) == len(devs)


def test_discover_without_the_driver_library_does_not_load_cuda_python(monkeypatch):
    # no library the loader can find: no CUDA device, and the binding's import (some
    # 25 ms of a first device look-up) is not paid
    from numba_gpux.targets.cuda import launch

    loaded, real = [], launch._driver
    monkeypatch.setattr(launch, "_driver", lambda: loaded.append(1) or real())
    monkeypatch.setattr(launch, "_DRIVER_LIBRARY", "libnumba-gpux-no-such-driver.so.1")
    assert launch.discover() == [] and not loaded
    monkeypatch.undo()
    monkeypatch.setattr(launch, "_driver", lambda: loaded.append(1) or real())
    if launch._driver_library_loads():  # a machine with the driver: it is asked
        launch.discover()
        assert loaded


def test_default_target_for_a_device_uses_its_cc():
    from numba_gpux.devices import Device
    from numba_gpux.targets.cuda.target import make_target

    dev = Device(target_name="cuda", index=0, name="fake", kind="gpu", vendor="NVIDIA",
                 runtime=None, limits={"compute_capability": (9, 0)})
    t = make_target(dev)
    assert t.cpu == "sm_90" and t.cc == (9, 0)
    assert make_target(dev, cc=(8, 0)).cpu == "sm_80"


# ------------------------------------------------------- array offsets in the pointer

def _offset_kernel(x, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = x[i] * 2.0


def test_array_offsets_are_not_read_by_the_kernel():
    """The CUDA launcher passes address + byte offset as each array's pointer, and the
    target defines __gpux_array_offset as 0: the offset parameters are never loaded."""
    ptx = _ptx(_offset_kernel, "void(float32[::1], float32[::1])", cubin=False).text
    entry = ENTRY.search(ptx).group(1)
    loaded = set(re.findall(rf"ld\.param\.\w+\s+%\w+, \[{entry}_param_(\d+)\]", ptx))
    # x: buffer 0, offset 1, shape 2, stride 3; out: buffer 4, offset 5, shape 6, stride 7
    assert {"0", "4"} <= loaded
    assert not loaded & {"1", "5"}, ptx


def test_cuda_parameters_fold_offsets_into_pointers():
    """The launch path gives the CUDA runtime an array's pointer with its byte offset
    added (the offset stays in its own slot, which the kernel does not read), and the
    runtime packs the flat parameters into one 8-byte slot each."""
    import ctypes
    import struct

    from numba.core import types

    from numba_gpux.flatten import _build_flatten, buffer_leaves
    from numba_gpux.targets.cuda.launch import CUDARuntime, parameter_format

    assert CUDARuntime.buffers_are_addresses and CUDARuntime.pointer_includes_offset
    a2 = types.Array(types.float64, 2, "A")
    argtypes = (types.float32[::1], types.int32, a2)
    _, params = _build_flatten(argtypes)
    params = params + [("buffer", None)]  # a debug kernel's error buffer: no offset
    flat = [*buffer_leaves(CUDARuntime, 0x7F0000001000, 64, (10, 4)),  # float32[::1]
            7,                                                           # int32
            *buffer_leaves(CUDARuntime, 0x7F0000200000, 24, (3, 5, 80, 8)),  # 2-D view
            0x7F0000900000]                                              # error buffer
    fmt = struct.Struct(parameter_format(params))
    assert fmt.size == 8 * len(params)
    buf = ctypes.create_string_buffer(fmt.size)
    fmt.pack_into(buf, 0, *flat)
    got = struct.unpack("<QqqqiiQqqqqqQ", buf.raw)
    assert got[0] == 0x7F0000001000 + 64 and got[1] == 64
    assert got[4] == 7
    assert got[6] == 0x7F0000200000 + 24 and got[7] == 24
    assert got[-1] == 0x7F0000900000
    assert list(got[2:4]) == [10, 4] and list(got[8:12]) == [3, 5, 80, 8]


def _subgroup_kernel(v, out):
    i = gpux.grid(1)
    x = v[i]
    out[i] = gpux.subgroup.shuffle_xor(x, 1) + gpux.subgroup.reduce(x, "add")


@pytest.mark.parametrize("cc", [(5, 0), (6, 0), (7, 0), (7, 5)])
def test_old_capabilities_get_a_ptx_isa_with_warp_instructions(cc):
    """sm_50..sm_70's own oldest PTX ISAs lack shfl.sync/activemask, on which LLVM's
    NVPTX back end aborts the process; the ISA is raised to 6.3."""
    from numba_gpux.targets.cuda import toolkit

    art = _ptx(_subgroup_kernel, "void(float32[::1], float32[::1])", cc=cc, cubin=False)
    assert ".version 6.3" in art.text or ".version 6.4" in art.text
    if toolkit.ptxas_supports(cc):
        ok, messages = toolkit.ptxas_check(art.text, cc)
        assert ok, messages


def test_too_old_ptx_isa_is_a_user_error():
    with pytest.raises(GpuxUserError, match="too old"):
        _ptx(K.saxpy, SAXPY32, cc=(7, 0), ptx_version=(6, 0))


def test_llvm_ir_is_the_module_as_emitted():
    """The NVPTX back end rewrites the module while it emits; the artifact keeps the
    text from before, which gives the same PTX again."""
    from numba_gpux.machines import emit_in_fresh_process
    from numba_gpux.devices import resolve_target

    from numba.core import sigutils

    from numba_gpux.stages import Job, run_target_stages

    art = _ptx(K.saxpy, SAXPY32, cc=(8, 0), cubin=False)
    target = resolve_target("cuda", cc=(8, 0), cubin=False)
    args = tuple(sigutils.normalize_signature(SAXPY32)[0])
    sym, text = K.saxpy.kernel_ir(args)
    before_emit = run_target_stages(Job(target, K.saxpy.options, (sym,), text=text),
                                    stop="validate")
    assert art.llvm_ir == str(before_emit.module)
    assert emit_in_fresh_process(target, art.llvm_ir, 3).decode() == art.text


def _warp_masks(v, out, m):
    i = cuda.grid(1)
    cuda.syncwarp(m)
    out[i, 0] = cuda.shfl_xor_sync(0xFFFFFFFF, v[i], 1)
    out[i, 1] = cuda.shfl_down_sync(m, v[i], 2)
    out[i, 2] = cuda.ballot_sync(m, v[i] > 0)
    out[i, 3] = gpux.subgroup.shuffle_up(v[i], 1)


def test_warp_member_masks_reach_the_instructions():
    """numba.cuda's *_sync masks go to shfl.sync / vote.sync / bar.warp.sync as given (a
    constant stays an immediate); the unmasked portable form uses the active lanes."""
    ptx = _ptx(gpux.jit(_warp_masks), "void(int32[::1], int32[:, ::1], uint32)",
               cubin=False).text
    body = ptx[ptx.index("{"):]
    m = re.search(r"ld\.param\.b32\s+(%r\d+), ", body).group(1)  # the scalar m
    assert re.search(rf"bar\.warp\.sync\s+{m};", body), body
    assert re.search(r"shfl\.sync\.bfly\.b32\s+%r\d+, %r\d+, 1, 31, -1;", body), body
    assert re.search(rf"shfl\.sync\.down\.b32\s+%r\d+, %r\d+, 2, 31, {m};", body), body
    assert re.search(rf"vote\.sync\.ballot\.b32\s+%r\d+, %p\d+, {m};", body), body
    active = re.search(r"activemask\.b32\s+(%r\d+);", body).group(1)
    assert re.search(rf"shfl\.sync\.up\.b32\s+%r\d+, %r\d+, 1, 0, {active};", body), body
    assert body.count("activemask") == 1


def _shared_hist(idx, out):
    t = gpux.thread_idx.x
    sm = gpux.shared.array(64, np.int32)
    sm[t] = 0
    gpux.barrier()
    gpux.atomic.add(sm, idx[t], 1)
    gpux.barrier()
    out[t] = sm[t]


def test_shared_memory_addresses_are_32_bit():
    """Shared (and local, constant) pointers are 32 bits wide (-nvptx-short-ptr, and the
    target's data layout says so): one register per shared address, not two."""
    import llvmlite.binding as ll

    from numba_gpux.targets.cuda.target import DATA_LAYOUT

    ptx = _ptx(gpux.jit(_shared_hist), "void(int64[::1], int32[::1])", cubin=False).text
    body = ptx[ptx.index("{"):]
    assert re.search(r"st\.shared\.b32\s+\[%r\d+\]", body), body
    assert re.search(r"atom\.shared\.add\.u32\s+%r\d+, \[%r\d+\]", body), body
    assert not re.search(r"\.shared\.\S+\s+(?:%\w+, )?\[%rd", body), body
    assert "p3:32:32" in DATA_LAYOUT
    # the flag holds while our target machines are made, and is reset after
    tm = ll.Target.from_triple("nvptx64-nvidia-cuda").create_target_machine(cpu="sm_90")
    assert "p3:32" not in str(tm.target_data)


def _match_kernel(v, out):
    i = cuda.grid(1)
    out[i, 0] = cuda.match_any_sync(0xFFFFFFFF, v[i])
    out[i, 1] = cuda.match_all_sync(0xFFFFFFFF, v[i])[0]


@pytest.mark.parametrize("cc,native", [((7, 0), True), ((9, 0), True), ((6, 1), False)])
def test_match_uses_the_instruction_from_sm_70(cc, native):
    """sm_70 and newer search the overlay family nvptx.sm70 first (match.any/all.sync);
    older capabilities get the shared definitions from shuffles and votes."""
    ptx = _ptx(gpux.jit(_match_kernel), "void(int64[::1], uint32[:, ::1])", cc=cc,
               cubin=False).text
    assert ("match.any.sync.b64" in ptx and "match.all.sync.b64" in ptx) == native, ptx
    if not native:
        assert "match." not in ptx and "shfl.sync.idx" in ptx and "vote.sync.ballot" in ptx


def _across_barriers(ary, idx):
    t = gpux.thread_idx.x
    sm = gpux.shared.array(64, np.float64)
    if t < ary.size:
        sm[t] = ary[t]
    gpux.barrier()
    if t < idx.size:
        gpux.atomic.add(sm, idx[t], 1.0)
    gpux.barrier()
    if t < ary.size:
        ary[t] = sm[t]


def test_addresses_are_not_hoisted_across_barriers():
    """A conditional block's address arithmetic stays in the block that uses it
    (-spec-exec-max-not-hoisted=1): the address of ary[t] in the last block is
    computed after the last barrier, not kept live from the first block."""
    ptx = _ptx(gpux.jit(_across_barriers), "void(float64[::1], int64[::1])", cubin=False).text
    lines = [ln.strip() for ln in ptx[ptx.index("{"):].splitlines()]
    last_bar = max(i for i, ln in enumerate(lines) if ln.startswith("bar.sync"))
    store = next(ln for ln in lines[last_bar:] if ln.startswith("st.global"))
    addr = re.search(r"\[(%rd\d+)\]", store).group(1)
    defined = [i for i, ln in enumerate(lines) if re.match(rf"\S+\s+{addr},", ln)]
    assert defined and min(defined) > last_bar, "\n".join(lines)


def _sleeper(a, ns):
    gpux.nanosleep(ns)
    a[gpux.grid(1)] = 1


@pytest.mark.parametrize("cc,native", [((7, 0), True), ((8, 0), True), ((6, 1), False)])
def test_nanosleep_from_sm_70(cc, native):
    """nanosleep.u32 where the architecture has it (nvptx.sm70); elsewhere the shared
    definition returns at once, which CUDA's 0-to-2x promise allows."""
    ptx = _ptx(gpux.jit(_sleeper), "void(int32[::1], int64)", cc=cc, cubin=False).text
    assert ("nanosleep.u32" in ptx) == native, ptx


def test_fresh_process_emission_uses_the_targets_llvm_flags():
    """emit_in_fresh_process sets the target's tm_flags and codegen_flags in the child
    too: a loop kernel (where -disable-lsr changes the code) and a shared-memory one
    (32-bit pointers) come out as the in-process emission."""
    from numba_gpux.machines import emit_in_fresh_process
    from numba_gpux.devices import resolve_target

    target = resolve_target("cuda", cc=(8, 0), cubin=False)
    for fn, sig in ((K.grid_stride_copy, "void(float64[::1], float64[::1])"),
                    (_across_barriers, "void(float64[::1], int64[::1])")):
        kern = fn if hasattr(fn, "py_func") else gpux.jit(fn)
        art = _ptx(kern, sig, cc=(8, 0), cubin=False)
        assert emit_in_fresh_process(target, art.llvm_ir, 3).decode() == art.text


def test_numba_c_helpers_are_defined_in_the_kernel():
    # array.reshape calls Numba's C helper numba_attempt_nocopy_reshape; the shared
    # context defines it, so the PTX has no extern function left to resolve
    def reshape3(a, out):
        y = a.reshape((2, 3, 4))
        out[0] = y[1, 2, 3]

    art = _ptx(reshape3, "void(int64[::1], int64[::1])", cc=(9, 0))
    assert ".extern .func" not in art.text
