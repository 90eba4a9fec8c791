"""Facts the compiler gives LLVM about kernels: the ranges of the index intrinsics
(so that Numba's negative-index wraparound folds away on ``grid()`` indices, and
only there)."""

import dataclasses
import re

import llvmlite.binding as ll
import numpy as np
import pytest

from numba.core import types

import numba_gpux as gpux
from numba_gpux import irtext
from numba_gpux.abi import LaunchFacts
from numba_gpux.devices import resolve_target
from numba_gpux.interface import IndexLimits


@gpux.jit
def saxpy(a, x, y, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


SAXPY = "void(float32, float32[::1], float32[::1], float32[::1])"


@gpux.jit
def shift_left(out):
    i = gpux.grid(1)
    if i < out.size:
        out[i - 1] = i  # i == 0 writes out[-1], the last element


def test_index_ranges_annotate_each_intrinsic_with_its_bounds():
    lim = IndexLimits(block=(1024, 512, 64), grid=(1000, 2000, 3000))
    text = ("  %a = call i64 @__gpux_thread_idx(i32 1)\n"
            "  %b = call i64 @__gpux_block_dim(i32 2)\n"
            "  %c = tail call i64 @__gpux_block_idx(i32 0)\n"
            '  %d = call i64 @"__gpux_grid_dim"(i32 1)\n'
            "  %e = call i64 @__gpux_thread_idx(i32 %dyn)\n")
    out = irtext.index_ranges(text, lim)
    assert "%a = call noundef range(i64 0, 512) i64 @__gpux_thread_idx(i32 1)" in out
    assert "%b = call noundef range(i64 1, 65) i64 @__gpux_block_dim(i32 2)" in out
    assert "%c = tail call noundef range(i64 0, 1000) i64 @__gpux_block_idx(i32 0)" in out
    assert "%d = call noundef range(i64 1, 2001) i64 @__gpux_grid_dim(i32 1)" in out
    # a dimension not known at compile time gets no fact
    assert "%e = call i64 @__gpux_thread_idx(i32 %dyn)" in out


def test_index_limits_are_checked():
    with pytest.raises(ValueError):
        IndexLimits(block=(1024, 1024, 0), grid=(1, 1, 1))
    with pytest.raises(ValueError):
        IndexLimits(block=(1, 1, 1), grid=(2 ** 31, 1, 1))


@pytest.mark.parametrize("target", ["opencl", "cuda", "opencl-c", "metal"])
def test_every_target_states_index_limits(target):
    t = resolve_target(target)
    assert isinstance(t.index_limits, IndexLimits)


def _kernel_body(ir_text: str) -> str:
    return ir_text[ir_text.index("define "):]


@pytest.mark.parametrize("target", ["opencl", "cuda", "opencl-c"])
def test_grid_index_needs_no_wraparound(target):
    """saxpy's grid index is known non-negative: no ``select`` of the wraparound is
    left, and each array is read at ``base + i``."""
    art = gpux.compile(saxpy, SAXPY, target=target, cubin=False) if target == "cuda" else \
        gpux.compile(saxpy, SAXPY, target=target)
    body = _kernel_body(art.llvm_ir)
    assert " select " not in body, body
    # the bounds check i < out.size stays (unsigned where both are known non-negative)
    assert re.search(r"icmp (samesign )?[su]lt i64", body), body


def test_opencl_index_calls_carry_ranges():
    art = gpux.compile(saxpy, SAXPY, target="opencl")
    calls = re.findall(r"call (noundef range\(i64 \d+, \d+\) )?i64 @(_Z\d+get_\w+j)",
                       art.llvm_ir)
    # grid(1) is get_global_id (the Intel CPU driver vectorizes x[2 * i] only through it)
    assert {name for _, name in calls} == {"_Z13get_global_idj"}, art.llvm_ir
    assert all(rng for rng, _ in calls), art.llvm_ir


def _copy2d(a, out):
    i, j = gpux.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = a[i, j]


def test_opencl_grid2_is_the_global_id():
    """grid(2) is OpenCL's get_global_id alone (the Intel CPU driver vectorizes along the
    consecutive dimension only without group-id queries); the artifact says its global
    indices are 32-bit on that driver.  The code for a launch wider than that
    (``LaunchFacts.wide``) computes them as block_idx * block_dim + thread_idx."""
    art = gpux.compile(_copy2d, "void(float64[:, ::1], float64[:, ::1])", target="opencl")
    calls = re.findall(r"call (noundef range\(i64 \d+, \d+\) )?i64 @(_Z\d+get_\w+j)",
                       art.llvm_ir)
    assert {name for _, name in calls} == {"_Z13get_global_idj"}, art.llvm_ir
    assert all(rng for rng, _ in calls), art.llvm_ir
    assert art.info["global_ids_32bit"] is True
    k = gpux.jit(_copy2d)
    sig = (types.float64[:, ::1], types.float64[:, ::1])
    wide = k.code_for(sig, resolve_target("opencl"), LaunchFacts(wide=True))
    calls = re.findall(r"call (noundef range\(i64 \d+, \d+\) )?i64 @(_Z\d+get_\w+j)",
                       wide.llvm_ir)
    assert {name for _, name in calls} == {"_Z12get_local_idj", "_Z12get_group_idj",
                                           "_Z14get_local_sizej"}, wide.llvm_ir
    assert wide.info["global_ids_32bit"] is False
    assert k.code_for(sig, resolve_target("cuda")).info.get("global_ids_32bit") is not True


def test_a_launch_past_32_bit_indices_runs_the_wide_code(opencl_device):
    """The Intel CPU driver's get_global_id wraps at 2**32: a launch of that many
    work-items along a dimension runs the kernel's wide code (its shim is chosen at
    each such launch; running one takes a minute on a CPU, so this checks the choice,
    and that ordinary launches of the same configuration object keep the fast code)."""
    from numba_gpux import launch

    out = gpux.to_device(np.zeros((2, 2)))
    vec = gpux.to_device(np.zeros(4, np.float32))
    cases = ((gpux.jit(_copy2d), ((1, 1), (2, 2)), ((2 ** 32 // 256 + 1, 1), (256, 1)),
              (out, out)),
             (gpux.jit(saxpy.py_func), (1, 4), (2 ** 32 // 256 + 1, 256),
              (np.float32(2), vec, vec, vec)))
    for kernel, small, large, args in cases:
        narrow_cfg = kernel[small]
        narrow_cfg(*args)
        (shim,) = kernel._shims.values()
        assert shim.narrow_ids and shim.wide is None
        wide_cfg = kernel[large]
        device = shim.device
        got = launch._check_launch(wide_cfg, shim, device)
        assert got is shim.wide and not got.narrow_ids
        assert got.flatten is shim.flatten and got.facts.wide
        assert wide_cfg.checked is not device  # checked, and its shim picked, each launch
        assert launch._check_launch(wide_cfg, shim, device) is got  # built once
        assert launch._check_launch(narrow_cfg, shim, device) is shim
    k = gpux.jit(_copy2d)
    k[(1, 1), (2, 2)](gpux.to_device(np.ones((2, 2))), out)
    np.testing.assert_array_equal(out.copy_to_host(), np.ones((2, 2)))


def _spirv_source_language(binary: bytes) -> int:
    """The SourceLanguage operand of a SPIR-V module's OpSource (opcode 3)."""
    words = np.frombuffer(binary, dtype="<u4")
    k = 5  # after the header
    while k < len(words):
        count, opcode = int(words[k]) >> 16, int(words[k]) & 0xFFFF
        if opcode == 3:
            return int(words[k + 1])
        k += max(count, 1)
    raise AssertionError("no OpSource in the module")


def test_opencl_binary_says_opencl_c():
    """The SPIR-V names OpenCL C (3) as its source language, not OpenCL C++ (4): a CPU
    driver picks the dimension it vectorizes along only for OpenCL C."""
    art = gpux.compile(saxpy, SAXPY, target="opencl")
    assert _spirv_source_language(art.binary) == 3


def test_two_dimensional_early_exit_is_one_conjunction():
    """``if 0 < i < n - 1 and 0 < j < m - 1`` reaches the back end as ``and`` of the
    comparisons (legalize_logic.logical_selects), not as selects."""
    def interior(a, out):
        i, j = gpux.grid(2)
        n, m = a.shape
        if 0 < i < n - 1 and 0 < j < m - 1:
            out[i, j] = a[i - 1, j] + a[i, j + 1]

    body = _kernel_body(gpux.compile(interior, "void(float64[:, ::1], float64[:, ::1])",
                                     target="opencl").llvm_ir)
    assert "select i1" not in body, body
    assert body.count(" = and i1 ") >= 2, body


def test_negative_index_still_wraps(opencl_device):
    """Where an index can be negative, Numba's wraparound stays: i - 1 at i == 0 is -1."""
    out = np.full(8, -5, dtype=np.int64)
    d = gpux.to_device(out)
    shift_left[1, 8](d)
    np.testing.assert_array_equal(d.copy_to_host(), [1, 2, 3, 4, 5, 6, 7, 0])
    body = _kernel_body(gpux.compile(shift_left, "void(int64[::1])", target="opencl").llvm_ir)
    assert " select " in body or "icmp slt" in body  # the wraparound is in the code


def _grid_stride(x, out):
    for i in range(gpux.grid(1), out.size, gpux.gridsize(1)):
        out[i] = x[i] * 2.0


def _row_slots(x, part):  # part[r, s] = x[r, s] + x[r, s + W] + ... (W = part.shape[1])
    s, r = gpux.grid(2)
    w = part.shape[1]
    if s < w and r < x.shape[0]:
        acc = 0.0
        for t in range(s, x.shape[1], w):
            acc += x[r, t]
        part[r, s] = acc


@pytest.mark.parametrize("target", ["opencl", "cuda", "opencl-c"])
def test_range_loops_over_grid_indices_and_extents_need_no_wraparound(target):
    """A grid-stride loop, and a loop from a work-item's index to an array's extent in
    steps of another extent: the loop value is known non-negative (range() steps
    without wrapping, extents are not negative), so no ``select`` of the wraparound is
    left and consecutive work-items read consecutive elements."""
    kw = {"cubin": False} if target == "cuda" else {}
    for fn, sig in ((_grid_stride, "void(float64[::1], float64[::1])"),
                    (_row_slots, "void(float64[:, ::1], float64[:, ::1])")):
        body = _kernel_body(gpux.compile(fn, sig, target=target, **kw).llvm_ir)
        assert " select " not in body, (fn.__name__, body)


def test_strided_loop_spirv_steps_an_index_not_a_pointer():
    """The SPIR-V of a strided loop keeps its address as base + index (no phi of a
    pointer, which code generation's loop strength reduction would make and the Intel
    OpenCL CPU driver then loads through gathers)."""
    art = gpux.compile(_row_slots, "void(float64[:, ::1], float64[:, ::1])", target="opencl")
    lines = [ln.split() for ln in art.text.splitlines()]
    pointer_types = {w[0] for w in lines if len(w) > 2 and w[1] == "=" and w[2] == "OpTypePointer"}
    phis = [w for w in lines if len(w) > 3 and w[2] == "OpPhi"]
    assert phis, art.text  # the loop is there
    assert not [w for w in phis if w[3] in pointer_types], art.text


def test_strided_and_grid_stride_loops_compute_right(opencl_device):
    x = np.arange(7 * 45, dtype=np.float64).reshape(7, 45)
    for w in (1, 4, 16):
        part = gpux.to_device(np.full((7, w), -1.0))
        gpux.jit(_row_slots)[(1, 7), (w, 1)](gpux.to_device(x), part)
        want = np.array([[x[r, s::w].sum() for s in range(w)] for r in range(7)])
        np.testing.assert_array_equal(part.copy_to_host(), want)
    for n in (0, 1, 1000, 4099):
        out = gpux.to_device(np.zeros(n))
        gpux.jit(_grid_stride)[3, 64](gpux.to_device(np.arange(n, dtype=np.float64)), out)
        np.testing.assert_array_equal(out.copy_to_host(), np.arange(n) * 2.0)


@gpux.jit
def _range_sums(bounds, out):
    i = gpux.grid(1)
    if i < out.size:
        start, stop, step = bounds[i, 0], bounds[i, 1], bounds[i, 2]
        n = 0
        last = np.int64(0)
        for v in range(start, stop, step):
            n += 1
            last = v
        out[i, 0] = n
        out[i, 1] = last


@gpux.jit
def _range_sums32(bounds, out):
    i = gpux.grid(1)
    if i < out.shape[0]:
        n = 0
        last = np.int32(0)
        for v in range(bounds[i, 0], bounds[i, 1], bounds[i, 2]):
            n += 1
            last = v
        out[i, 0] = n
        out[i, 1] = last


def _range_cases(bits):
    top, bottom = 2 ** (bits - 1) - 1, -2 ** (bits - 1)
    return [(0, top, 2 ** (bits - 2)), (top - 3, top, 2), (bottom + 1, bottom + 6, 3),
            (5, -5, -3), (bottom + 3, bottom, -2 ** (bits - 2)), (0, 0, 1), (3, 1, 1),
            (0, 10, 1), (-4, 4, 3), (top - 1, top, 1), (bottom, bottom + 1, 1),
            (bottom, top, top), (top, bottom, bottom), (top, bottom, -top),
            (bottom, top, 2 ** (bits - 2) + 1), (bottom + 2, bottom, -1), (top, top - 3, -1),
            (bottom + 2, top, top - 1), (7, 7, -1), (1, 11, 5), (10, 0, -5)]


@pytest.mark.parametrize("kernel, dtype", [(_range_sums, np.int64), (_range_sums32, np.int32)],
                         ids=["int64", "int32"])
def test_range_values_where_the_step_past_the_last_would_overflow(opencl_device, kernel, dtype):
    """range() loops whose step past the last value overflows the integer (allowed: that
    value is never used), at the integer's extremes, with negative steps, and empty: the
    values Python gives, for ranges of int64 and of int32 (which Numba iterates in 32
    bits)."""
    cases = _range_cases(np.iinfo(dtype).bits)
    bounds = np.array(cases, dtype=dtype)
    out = gpux.to_device(np.zeros((len(cases), 2), dtype))
    kernel[1, len(cases)](gpux.to_device(bounds), out)
    want = [(len(range(*c)), range(*c)[-1] if len(range(*c)) else 0) for c in cases]
    assert [tuple(r) for r in out.copy_to_host().tolist()] == want


def test_range_with_a_zero_step_raises_pythons_error(opencl_device):
    bounds = gpux.to_device(np.array([[0, 5, 0]], np.int64))
    out = gpux.to_device(np.zeros((1, 2), np.int64))
    with pytest.raises(ValueError, match="range\\(\\) arg 3 must not be zero"):
        gpux.jit(_range_sums.py_func, debug=True)[1, 1](bounds, out)


def test_a_grid_stride_range_loop_ends_on_its_value_not_on_a_count():
    """``for i in range(start, n, stride)`` ends as ``while i < n`` does: no division for
    a count of values left, no second induction counting down (a CPU driver that
    vectorizes across work-items runs a loop with a branch in it several times slower
    when it ends on a count); constant ranges are still unrolled."""
    art = gpux.compile(_grid_stride, "void(float64[::1], float64[::1])", target="opencl")
    body = _kernel_body(art.llvm_ir)
    assert "div " not in body and " rem " not in body, body
    phis = [ln for ln in body.splitlines() if " phi " in ln]
    assert len(phis) == 1 and " i64 " in phis[0], body

    def sixteen(x, out):
        i = gpux.grid(1)
        acc = 0.0
        for k in range(16):
            acc += x[i * 16 + k]
        for k in range(15, -1, -1):
            acc += x[i * 16 + k] * k
        out[i] = acc

    for target in ("opencl", "cuda"):
        kw = {"cubin": False} if target == "cuda" else {}
        body = _kernel_body(gpux.compile(sixteen, "void(float64[::1], float64[::1])",
                                         target=target, **kw).llvm_ir)
        # (OpenCL loads a neighbouring pair as one <2 x double>: legalize_pairs)
        loads = body.count(" load ") + body.count(" load <2 x ")
        assert " phi " not in body and loads == 32, (target, body)


def test_launch_beyond_the_stated_grid_is_refused(opencl_device):
    """More work-groups than the target's index limits is a launch error, raised before
    anything runs (the compiled code assumes the limits)."""
    d = gpux.to_device(np.zeros(4, np.int64))
    with pytest.raises(gpux.LaunchError, match="grid dimension x"):
        shift_left[2 ** 31, 1](d)


# ------------------------------------------------------------------ address spaces
from numba import float32  # noqa: E402

CONST = np.arange(16, dtype=np.float32)


@gpux.jit
def block_sum(x, out):
    sh = gpux.shared.array(64, float32)
    t = gpux.thread_idx.x
    i = gpux.grid(1)
    sh[t] = x[i] if i < x.size else float32(0.0)
    gpux.barrier()
    s = 32
    while s > 0:
        if t < s:
            sh[t] += sh[t + s]
        gpux.barrier()
        s //= 2
    if t == 0:
        gpux.atomic.add(out, 0, sh[0])


@gpux.jit
def table_lookup(idx, out):
    c = gpux.const.array_like(CONST)
    tmp = gpux.local.array(16, float32)
    for k in range(16):
        tmp[k] = k * float32(2.0)
    i = gpux.grid(1)
    if i < out.size:
        out[i] = c[idx[i] % 16] + tmp[(idx[i] + 3) % 16]


KERNELS = [(saxpy, SAXPY), (block_sum, "void(float32[::1], float32[::1])"),
           (table_lookup, "void(int64[::1], float32[::1])")]


@pytest.mark.parametrize("kernel,sig", KERNELS, ids=lambda v: getattr(v, "__name__", ""))
def test_spirv_has_no_generic_memory_access(kernel, sig):
    ir_text = gpux.compile(kernel, sig, target="opencl").llvm_ir
    body = _kernel_body(ir_text)
    generic = [ln for ln in body.splitlines()
               if re.search(r"\b(load|store|atomicrmw|cmpxchg)\b.*ptr addrspace\(4\) %", ln)]
    assert not generic, "\n".join(generic)
    assert re.search(r"\b(load|store)\b[^\n]*ptr addrspace\(1\)", body)  # global accesses


def test_spirv_shared_accesses_are_workgroup():
    body = _kernel_body(gpux.compile(*KERNELS[1], target="opencl").llvm_ir)
    assert re.search(r"\bload float, ptr addrspace\(3\)", body)
    assert re.search(r"\bstore float [^\n]*, ptr addrspace\(3\)", body)
    # float atomic add: a native atomic or a compare-and-swap loop, on the global pointer
    assert re.search(r"\b(atomicrmw fadd|cmpxchg) ptr addrspace\(1\)", body)


@gpux.jit
def shared_histogram(x, bins):
    h = gpux.shared.array(16, np.int32)
    t = gpux.thread_idx.x
    if t < 16:
        h[t] = 0
    gpux.barrier()
    i = gpux.grid(1)
    if i < x.size:
        gpux.atomic.add(h, x[i] & 15, 1)
    gpux.barrier()
    if t < 16:
        gpux.atomic.add(bins, t, h[t])


HIST_SIG = "void(int32[::1], int32[::1])"


def test_shared_memory_atomics_have_workgroup_scope():
    ir_text = gpux.compile(shared_histogram, HIST_SIG, target="opencl").llvm_ir
    shared_as = resolve_target("opencl").addrspaces.shared
    atomics = [ln for ln in _kernel_body(ir_text).splitlines() if "atomicrmw" in ln]
    on_shared = [ln for ln in atomics if f"ptr addrspace({shared_as})" in ln]
    on_global = [ln for ln in atomics if ln not in on_shared]
    assert on_shared and on_global, atomics
    assert all('syncscope("workgroup")' in ln for ln in on_shared), on_shared
    assert all('syncscope("device")' in ln for ln in on_global), on_global


def test_targets_without_a_workgroup_scope_name_keep_device_scope():
    # NVPTX names the scope "block" and aborts the process on "workgroup" (float
    # atomics at sm_70); the CUDA target names none, and its PTX is the same either way
    ir_text = gpux.compile(shared_histogram, HIST_SIG, target="cuda", cc=(7, 0)).llvm_ir
    atomics = [ln for ln in _kernel_body(ir_text).splitlines() if "atomicrmw" in ln]
    assert atomics and all('syncscope("device")' in ln for ln in atomics), atomics


def test_shared_memory_atomics_count_right(opencl_device):
    x = (np.arange(1000, dtype=np.int32) * 7) % 23
    bins = gpux.to_device(np.zeros(16, np.int32))
    shared_histogram[(1000 + 127) // 128, 128](gpux.to_device(x), bins)
    np.testing.assert_array_equal(bins.copy_to_host(), np.bincount(x & 15, minlength=16))


def test_narrow_shared_atomics_text():
    text = ("  %a = atomicrmw add ptr addrspace(3) %p, i32 1 syncscope(\"device\") monotonic\n"
            "  %b = atomicrmw add ptr addrspace(1) %q, i32 1 syncscope(\"device\") monotonic\n"
            "  %c = cmpxchg ptr addrspace(3) %p, i32 0, i32 1 syncscope(\"device\") monotonic "
            "monotonic\n")
    out = irtext.narrow_shared_atomics(text, 3).splitlines()
    assert 'syncscope("workgroup")' in out[0] and 'syncscope("workgroup")' in out[2]
    assert 'syncscope("device")' in out[1]


@pytest.mark.parametrize("kernel,sig", KERNELS, ids=lambda v: getattr(v, "__name__", ""))
def test_ptx_has_no_generic_memory_access(kernel, sig):
    ptx = gpux.compile(kernel, sig, target="cuda", cubin=False).text
    generic = re.findall(r"^\s*(?:@%p\d+ )?((?:ld|st|atom|red)\.(?!global|shared|local|const|param)"
                         r"\S*)", ptx, re.M)
    assert not generic, generic
    assert re.search(r"\bld\.global", ptx)


def _without_backend_inference(target):
    return dataclasses.replace(target, backend_infers_address_spaces=False)


@pytest.mark.parametrize("kernel,sig", KERNELS, ids=lambda v: getattr(v, "__name__", ""))
def test_a_back_end_that_infers_address_spaces_gets_the_module_as_optimized(kernel, sig):
    """NVPTX's code generation runs LLVM's InferAddressSpaces: the compiler neither
    prints, rewrites nor parses the module again after the optimizer, and the PTX is
    the same as with the compiler's own inference."""
    from numba_gpux.compiler import Options
    from numba_gpux.stages import Job, run_target_stages
    from numba.core import sigutils

    cuda = resolve_target("cuda", cubin=False)
    assert cuda.backend_infers_address_spaces
    own = _without_backend_inference(cuda)
    assert not own.backend_infers_address_spaces
    sym, text = kernel.kernel_ir(tuple(sigutils.normalize_signature(sig)[0]))

    def optimized(target):
        return run_target_stages(Job(target=target, options=Options(), kernels=(sym,),
                                     text=text, name=kernel.__name__), stop="optimize")

    kept, rewritten = optimized(cuda), optimized(own)
    assert kept.printed is None and rewritten.printed is not None
    generic = re.compile(r"\b(?:load|store|atomicrmw|cmpxchg)\b[^\n]*ptr %")
    left = len(generic.findall(_kernel_body(str(kept.module))))  # for the back end
    assert left > len(generic.findall(_kernel_body(rewritten.printed)))
    assert gpux.compile(kernel, sig, target=cuda).text == \
        gpux.compile(kernel, sig, target=own).text


@pytest.mark.parametrize("target,generic_word", [("opencl-c", "__generic"), ("metal", "device")])
def test_source_routes_name_the_address_spaces(target, generic_word):
    src = gpux.compile(block_sum, "void(float32[::1], float32[::1])", target=target).text
    if target == "opencl-c":
        assert "__generic" not in src
        assert "__local" in src and "__global" in src
    else:
        assert "threadgroup" in src and "device" in src


def test_infer_address_spaces_text():
    text = "\n".join([
        "define void @k(ptr addrspace(1) %a, ptr addrspace(1) %slot, i1 %c) {",
        "entry:",
        "  %g = addrspacecast ptr addrspace(1) %a to ptr addrspace(4)",
        "  %p = getelementptr float, ptr addrspace(4) %g, i64 4",
        "  %v = load float, ptr addrspace(4) %p, align 4",
        "  store float %v, ptr addrspace(4) %g, align 4",
        "  %w = load float, ptr addrspace(4) getelementptr inbounds (i8, ptr addrspace(4) "
        "addrspacecast (ptr addrspace(3) @sh to ptr addrspace(4)), i64 8), align 4",
        "  %old = atomicrmw add ptr addrspace(4) %p, i32 1 monotonic, align 4",
        "  %s = addrspacecast ptr addrspace(1) %slot to ptr addrspace(4)",
        "  store ptr addrspace(4) %p, ptr addrspace(4) %s, align 8",
        "  %q = select i1 %c, ptr addrspace(4) %p, ptr addrspace(4) %g",
        "  %u = load float, ptr addrspace(4) %q, align 4",
        "  ret void",
        "}"])
    out = irtext.infer_address_spaces(text, 4)
    assert "%v = load float, ptr addrspace(1) %gpux.as1, align 4" in out
    assert "getelementptr float, ptr addrspace(1) %a, i64 4" in out
    assert "store float %v, ptr addrspace(1) %a, align 4" in out
    assert ("%w = load float, ptr addrspace(3) getelementptr inbounds (i8, ptr addrspace(3) "
            "@sh, i64 8), align 4") in out
    assert "atomicrmw add ptr addrspace(1) %gpux.as1, i32 1" in out
    # a pointer stored as a value stays generic; the place it is stored to does not
    assert "store ptr addrspace(4) %p, ptr addrspace(1) %slot, align 8" in out
    # a select of pointers is not followed: its load stays generic
    assert "%u = load float, ptr addrspace(4) %q, align 4" in out
    # the generic form of %p is kept for its other users
    assert "%p = addrspacecast ptr addrspace(1) %gpux.as1 to ptr addrspace(4)" in out


def test_unused_values_are_dropped_from_the_text_as_dead_code_elimination_would():
    text = "\n".join([
        "define void @k(ptr addrspace(1) %a, i64 %n, i1 %c) {",
        "entry:",
        "  %g = addrspacecast ptr addrspace(1) %a to ptr addrspace(4)",   # used by %p only
        "  %p = getelementptr float, ptr addrspace(4) %g, i64 4",         # used by nothing
        "  %q = getelementptr float, ptr addrspace(1) %a, i64 %n",        # used by the load
        "  %v = load float, ptr addrspace(1) %q, align 4",                # unused
        "  %w = load volatile float, ptr addrspace(1) %q, align 4",       # unused, volatile
        "  %d = srem i64 %n, 7",                                          # unused
        '  %"x y" = add i64 %n, 1',                                       # used by the phi only
        "  %0 = mul i64 %n, 3",                                           # unused
        "  %1 = shl i64 %n, 2",
        "  br label %next",
        "next:",
        '  %r = phi i64 [ %"x y", %entry ]',
        "  store i64 %1, ptr addrspace(1) %a, align 8",
        "  ret void",
        "}",
        "define void @other(i64 %n) {",
        "  %g = add i64 %n, 1",   # the same name in another function: its own
        "  ret void",
        "}"])
    out = irtext.drop_unused_values(text)
    for gone in ("%g = addrspacecast", "%p = getelementptr", "%0 = mul", "%g = add",
                 "%v = load", "%d = srem", "%r = phi"):
        assert gone not in out
    # the volatile load's address and the values the store reads are used
    for kept in ("%q = getelementptr", "%w = load volatile", "%1 = shl"):
        assert kept in out
    assert '%"x y"' not in out  # its one user, the phi, is gone
    module = ll.parse_assembly(out)  # numbered values with a gap parse
    module.verify()
    assert irtext.drop_unused_values(out) == out


def test_no_value_is_left_for_dead_code_elimination_after_the_optimizer():
    """The module after address-space inference and the target's IR rewrites, with the
    unused values removed on the text: LLVM's own dead-code elimination finds nothing
    more (a kernel with shared memory, generic pointers and index arithmetic)."""
    from numba_gpux.compiler import Options
    from numba_gpux.machines import target_machine
    from numba_gpux.stages import Job, run_target_stages
    from numba_gpux.passes import run_passes

    @gpux.jit
    def tiled(a, out):
        sh = gpux.shared.array(64, np.float32)
        t = gpux.thread_idx.x
        i = gpux.grid(1)
        sh[t] = a[i] * 2
        gpux.barrier()
        out[i] = sh[63 - t] + sh[t]

    from numba.core import types

    sig = (types.float32[::1], types.float32[::1])
    # CUDA with the compiler's own inference too (its back end infers address spaces
    # itself, and the compiler leaves the module as the optimizer made it)
    for target in (resolve_target("opencl"), _without_backend_inference(resolve_target("cuda"))):
        sym, text = tiled.kernel_ir(sig)
        job = run_target_stages(Job(target=target, options=Options(), kernels=(sym,),
                                    text=text, name="tiled"), stop="optimize")
        assert job.printed is not None
        module = ll.parse_assembly(job.printed)
        before = str(module)
        pb = ll.create_pass_builder(target_machine(target, 3),
                                    ll.create_pipeline_tuning_options(speed_level=0))
        mpm = ll.create_new_module_pass_manager()
        mpm.add_dead_code_elimination_pass()
        run_passes(mpm, module, pb)
        assert str(module) == before, target.name
        assert str(job.module) == before  # the text kept is the module's


def test_mask_shift_amounts_text():
    text = "  %s = shl nuw i64 %a, %b\n  %c = lshr i32 %x, 3\n  %d = ashr exact i16 7, %e\n"
    out = irtext.mask_shift_amounts(text)
    assert "%gpux.shamt1 = and i64 %b, 63\n  %s = shl nuw i64 %a, %gpux.shamt1" in out
    assert "%c = lshr i32 %x, 3" in out  # a constant amount is left alone
    assert "%gpux.shamt2 = and i16 %e, 15\n  %d = ashr exact i16 7, %gpux.shamt2" in out


@gpux.jit
def shifted_by_thread(out, c):
    t = gpux.thread_idx.x
    out[t] = c << np.uint64(t)


def test_shift_by_thread_index_on_opencl(opencl_device):
    """A contiguous store of 64-bit shifts by the thread index: the case the OpenCL CPU
    driver got wrong without the masked amount."""
    o = gpux.to_device(np.zeros(32, np.uint64))
    shifted_by_thread[1, 32](o, np.uint64(1 << 30))
    np.testing.assert_array_equal(o.copy_to_host(),
                                  np.uint64(1 << 30) << np.arange(32, dtype=np.uint64))


def test_atomics_on_generic_pointers_keep_the_default_source_language():
    """The Intel CPU driver's OpenCL C library has no legacy atomics on generic
    pointers: a module with such an atomic (left where address spaces could not be
    inferred) is not declared OpenCL C."""
    from numba_gpux.targets.opencl.target import _generic_atomics

    assert _generic_atomics("  %o = atomicrmw add ptr addrspace(4) %p, i32 1 seq_cst", 4)
    assert _generic_atomics(
        "  %q = cmpxchg weak volatile ptr addrspace(4) %p, i32 0, i32 1 monotonic monotonic", 4)
    assert not _generic_atomics("  %o = atomicrmw add ptr addrspace(1) %p, i32 1 seq_cst", 4)
    assert not _generic_atomics('  @s = constant [9 x i8] c"cmpxchg\\00\\00"', 4)

    def bump(out, n):
        i = gpux.grid(1)
        if i < n:
            gpux.atomic.add(out, i % 4, 1)

    sig = "void(int32[::1], int64)"
    assert _spirv_source_language(gpux.compile(bump, sig, target="opencl").binary) == 3
    art0 = gpux.compile(bump, sig, target="opencl", opt=0)
    if _generic_atomics(art0.llvm_ir, 4):
        assert _spirv_source_language(art0.binary) == 4


def test_opencl_min_and_max_of_integers_are_compares_and_selects(opencl_device):
    """Scalar llvm.smax/smin/umax/umin reach the SPIR-V as compares and selects: the Intel
    CPU driver reads its s_max built-in as varying, and a loop counted with it (the tiled
    matmul's ``range(n // 16)``) around barriers ran 2.5x slower."""
    def clamp(x, out, lo, hi):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = min(max(x[i], lo), hi) + max(np.uint32(x[i]), np.uint32(7))

    sig = "void(int64[::1], int64[::1], int64, int64)"
    body = _kernel_body(gpux.compile(clamp, sig, target="opencl").llvm_ir)
    for op in ("smax", "smin", "umax", "umin"):
        assert f"@llvm.{op}.i" not in body, body
    x = np.array([-5, 0, 3, 9, 12], np.int64)
    out = gpux.to_device(np.zeros(5, np.int64))
    gpux.jit(clamp)[1, 8](gpux.to_device(x), out, 0, 10)
    want = np.minimum(np.maximum(x, 0), 10) + np.maximum(x.astype(np.uint32), 7)
    np.testing.assert_array_equal(out.copy_to_host(), want)
