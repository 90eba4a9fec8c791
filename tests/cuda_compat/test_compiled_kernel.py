"""numba.cuda's compiled kernel (``kernel.overloads[sig]``, ``kernel.compile(sig)``),
its code library and loaded function (``library.get_cufunc()``), and the context's
occupancy queries, as libraries use them to size their launches."""

import io

import numba
import numpy as np
import pytest
from numba import float32, int32, void

from numba_gpux import UnsupportedError, cuda
from numba_gpux.cuda.cudadrv.driver import FuncAttr, Function

SIG = (float32[::1], float32[::1])


def _add_one():
    @cuda.jit(void(*SIG))
    def add_one(r, x):
        i = cuda.grid(1)
        if i < len(r):
            r[i] = x[i] + 1

    return add_one


def test_compiled_kernel_reports_what_the_dispatcher_reports(device):
    k = _add_one()
    compiled = k.overloads[SIG]
    assert compiled.argument_types == SIG
    attrs = k.kernel_attributes(SIG)
    assert compiled.max_threads_per_block == attrs["max_threads_per_block"] > 0
    assert compiled.shared_mem_per_block == attrs["shared_mem_per_block"]
    assert compiled.local_mem_per_thread == attrs["local_mem_per_thread"]
    assert compiled.const_mem_size == attrs["const_mem_size"]
    if "regs_per_thread" in attrs:
        assert compiled.regs_per_thread == attrs["regs_per_thread"] > 0
    else:
        with pytest.raises(UnsupportedError, match="register counts"):
            compiled.regs_per_thread
    out = io.StringIO()
    compiled.inspect_types(file=out)
    assert "add_one" in out.getvalue() and "array(float32, 1d, C)" in out.getvalue()
    # the typing of each variable, under both names (numba.cuda's users read the private
    # one), a local array's element type included
    assert compiled._type_annotation is compiled.type_annotation
    assert compiled.type_annotation.typemap["i"] in (int32, numba.int64)

    @cuda.jit("void(int32[::1])")
    def scratch(x):
        tmp = cuda.local.array(4, dtype="int32")
        tmp[0] = x[0]
        x[0] = tmp[0] + 1

    typemap = next(iter(scratch.overloads.values()))._type_annotation.typemap
    assert typemap["tmp"].dtype == int32
    # kernel.compile gives the same kind of object
    assert k.compile(SIG).argument_types == SIG


def test_library_gives_ir_ptx_and_the_loaded_function(device):
    k = _add_one()
    compiled = k.overloads[SIG]
    lib = compiled._codelibrary  # the name libraries reach it by
    assert "define" in lib.get_llvm_str()
    ptx = compiled.inspect_asm((7, 5))
    assert ".target sm_75" in ptx and ".entry" in ptx
    assert lib.get_asm_str(cc=(8, 0)).count(".target sm_80") == 1
    fn = lib.get_cufunc()
    assert isinstance(fn, Function) and fn.name == "add_one"
    attrs = k.kernel_attributes(SIG)
    assert isinstance(fn.attrs, FuncAttr)
    assert fn.attrs.maxthreads == attrs["max_threads_per_block"]
    assert fn.attrs.shared == attrs["shared_mem_per_block"]
    assert fn.attrs.regs == attrs.get("regs_per_thread")  # None where not reported
    assert fn.device.id == cuda.get_current_device().id
    handle = fn.handle  # the driver's own kernel object
    if device.target.name == "opencl":
        assert handle.function_name == compiled.entry_name


def test_hints_are_checked_and_the_kernel_still_runs(device):
    k = _add_one()
    fn = k.overloads[SIG].library.get_cufunc()
    for kwargs in ({}, {"prefer_shared": True}, {"prefer_cache": True},
                   {"prefer_equal": True}, {"prefer_cache": True, "prefer_shared": True}):
        fn.cache_config(**kwargs)
    for ok in (-1, 0, 50, 100):
        fn.set_shared_memory_carveout(ok)
    for bad in (-2, 101, 150):
        with pytest.raises(ValueError, match="between -1 and 100"):
            fn.set_shared_memory_carveout(bad)
    x = np.arange(5, dtype=np.float32)
    r = cuda.to_device(np.zeros_like(x))
    k.overloads[SIG].launch((r, cuda.to_device(x)), (1, 1, 1), (5, 1, 1))
    np.testing.assert_array_equal(r.copy_to_host(), x + 1)


def test_occupancy_queries_agree_with_cooperative_grids(device):
    k = _add_one()
    fn = k.overloads[SIG].library.get_cufunc()
    ctx = cuda.current_context()
    units = cuda.get_current_device().MULTIPROCESSOR_COUNT
    per_unit = ctx.get_active_blocks_per_multiprocessor(fn, 64, 0)
    whole = k.max_cooperative_grid_blocks(64)
    assert per_unit >= 1
    assert per_unit == -(-whole // units)  # what runs at once, over the units
    too_big = fn.attrs.maxthreads + 1
    assert ctx.get_active_blocks_per_multiprocessor(fn, too_big, 0) == 0
    with pytest.raises(TypeError, match="get_cufunc"):
        ctx.get_active_blocks_per_multiprocessor(k, 64, 0)
    with pytest.raises(ValueError, match="blocksize must be positive"):
        ctx.get_active_blocks_per_multiprocessor(fn, 0, 0)


def test_potential_block_size_fits_the_shared_memory_asked_for(device):
    @cuda.jit(void(int32[::1]))
    def fill(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = i

    sig = (int32[::1],)
    fill.compile(sig)
    fn = fill.overloads[sig].library.get_cufunc()
    ctx = cuda.current_context()
    dev = cuda.get_current_device()
    warp = dev.WARP_SIZE
    grid, block = ctx.get_max_potential_block_size(fn, 0, 0, 0)
    assert 0 < block <= min(fn.attrs.maxthreads, dev.MAX_THREADS_PER_BLOCK)
    assert block % warp == 0 and grid >= 1
    _, limited = ctx.get_max_potential_block_size(fn, 0, 0, 2 * warp)
    assert limited == 2 * warp
    # dynamic shared memory growing with the block: only small blocks fit
    room = dev.MAX_SHARED_MEMORY_PER_BLOCK
    per_thread = room // (2 * warp)
    grid, small = ctx.get_max_potential_block_size(fn, lambda b: b * per_thread, 0, 0)
    assert warp <= small <= 2 * warp and grid >= 1
    a = np.zeros(1000, np.int32)
    fill[(a.size + small - 1) // small, small, 0, small * per_thread](a)
    np.testing.assert_array_equal(a, np.arange(1000))
    with pytest.raises(TypeError, match="b2d_func"):
        ctx.get_max_potential_block_size(fn, 12345, 0, 0)


def test_device_function_compile_results(device):
    @cuda.jit(device=True)
    def twice(v):
        return v * 2

    res = twice.compile((float32,))
    assert "twice" in res.library.get_llvm_str()
    with pytest.raises(RuntimeError, match="device function"):
        res.library.get_cufunc()
    with pytest.raises(AttributeError, match="regs_per_thread"):
        res.regs_per_thread
