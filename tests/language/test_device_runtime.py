"""The device runtime (numba_gpux/language/heap.py): arrays that kernels make, where
their memory comes from, what an exhausted heap does, and that kernels making no
arrays are compiled as without it."""

import re

import numba
import numpy as np
import pytest
from numba import njit

import numba_gpux as gpux
from numba_gpux import config


@pytest.fixture
def small_heap():
    """A heap of 64 KiB for the test, the default after it."""
    saved = config._heap_size
    config.set_heap_size(64 << 10)
    yield 64 << 10
    config._heap_size = saved


#: the routes to the OpenCL device that give kernels the heap of our own: SPIR-V,
#: OpenCL C source (targets/cfamily writes the allocator's neutral IR as C), and OpenCL C
#: on the device described without 64-bit atomics (the 32-bit allocator, as on Metal)
HEAP_ROUTES = ["spirv", "opencl-c", "opencl-c-32bit-atomics"]


def without_int64_atomics(dev):
    """*dev* described as a device without 64-bit atomics."""
    import dataclasses

    return dataclasses.replace(dev, target_features=dev.target_features - {"int64_atomics"},
                               _target=None)


@pytest.fixture(params=HEAP_ROUTES)
def heap_device(request, opencl_device):
    """The OpenCL device through each route of :data:`HEAP_ROUTES`, selected."""
    if request.param == "spirv":
        yield opencl_device
        return
    from gpux_testing import selected
    from numba_gpux.targets.opencl_c.target import source_device

    dev = source_device(opencl_device)
    if request.param == "opencl-c-32bit-atomics":
        dev = without_int64_atomics(dev)
        assert not dev.target.has("int64_atomics")
    with selected(dev) as dev:
        yield dev


def scratch(out, n):
    tmp = np.zeros(n, np.float32)  # a scratch array of each work-item, sized at run time
    for i in range(n):
        tmp[i] = (i + out.shape[0]) * 0.5
    out[gpux.grid(1)] = tmp.sum() + np.sqrt(tmp).max()


def scratch32(out, n):
    tmp = np.zeros(n, np.float32)  # as scratch, in float32 only (Metal has no float64)
    for i in range(n):
        tmp[i] = np.float32(i) * np.float32(0.5)
    out[gpux.grid(1)] = tmp.sum() + np.sqrt(tmp).max()


@pytest.mark.quick
def test_a_runtime_sized_scratch_array_per_work_item(device):
    k = gpux.jit(scratch)
    out = gpux.to_device(np.zeros(256, np.float32))
    k[4, 64](out, 48)
    want = np.zeros(256, np.float32)
    tmp = (np.arange(48, dtype=np.float32) + 256) * np.float32(0.5)
    want[:] = tmp.sum() + np.sqrt(tmp).max()
    np.testing.assert_allclose(out.copy_to_host(), want, rtol=1e-6)


def whole_array(a, b, c):
    x = b // c + b * 2 - c  # whole-array arithmetic, broadcasting, mixed dtypes
    for i in range(a.shape[0]):
        a[i] = x[i]


@pytest.mark.quick
def test_whole_array_arithmetic_matches_njit(device):
    b = np.arange(10, dtype=np.int64) * 7
    c = np.arange(1, 11, dtype=np.int32)
    a = gpux.to_device(np.zeros(10, np.int64))
    gpux.jit(whole_array)[1, 1](a, b, c)
    want = np.zeros(10, np.int64)
    njit(whole_array)(want, b, c)
    np.testing.assert_array_equal(a.copy_to_host(), want)


def _allocate_lowerings_outside_ours() -> list:
    """The lowerings of ``Array._allocate`` whose method is numba-gpux's (its template's
    function is from our heap module) in Numba's registries that the shared context
    installs, which Numba's CPU context installs too."""
    from numba_gpux.context import target_context

    found = []
    for reg in list(target_context()._registries):
        if reg.name.startswith("numba_gpux"):
            continue
        for fn, key, _ in reg.functions:
            if not (isinstance(key, tuple) and key[1:] == ("_allocate",)):
                continue
            for cell in fn.__closure__ or ():
                owner = getattr(type(cell.cell_contents), "_overload_func", None)
                if getattr(owner, "__module__", "").startswith("numba_gpux"):
                    found.append(reg.name)
    return found


def test_cpu_functions_making_arrays_after_kernels_that_do(device):
    """A kernel that makes arrays registers how it allocates them; that lowering stays
    in numba-gpux's own registry.  In the registry Numba picks first (its builtin one,
    which CPU contexts install too) it sat under the key of Numba's own
    ``Array._allocate``, and an @njit function typed after could take it and fail to
    lower (``np.empty(4, np.int32)`` after the fuzz tests' kernels)."""
    b = np.arange(10, dtype=np.int64)
    c = np.ones(10, np.int32)
    gpux.jit(whole_array)[1, 1](gpux.to_device(np.zeros(10, np.int64)), b, c)
    assert _allocate_lowerings_outside_ours() == []

    @njit
    def cpu_made(k):
        a = np.empty(4, np.int32)
        a[:] = k
        return a.sum() + np.zeros(k, np.float32).size

    assert cpu_made(3) == 15


def test_an_exhausted_heap_is_a_memory_error_and_the_next_launch_works(heap_device,
                                                                      small_heap):
    @gpux.jit
    def big(out, n):
        t = np.ones(n, np.float64)
        out[gpux.grid(1)] = t.sum()

    out = gpux.to_device(np.full(64, -1.0))
    with pytest.raises(MemoryError) as e:
        big[1, 64](out, 100_000)  # 800 KB a work-item, in 64 KiB
    msg = str(e.value)
    assert "kernel big" in msg and f"{small_heap} bytes" in msg
    assert config.HEAP_SIZE_ENV in msg and re.search(r"allocation of 8000\d\d bytes", msg)
    # nothing was written out of bounds: the work-items whose allocation failed returned
    assert set(out.copy_to_host()) <= {-1.0}
    big[1, 64](out, 100)
    np.testing.assert_array_equal(out.copy_to_host(), np.full(64, 100.0))


def test_frees_return_memory_to_the_heap(heap_device, small_heap):
    """Each work-item makes 200 arrays of 1 KiB one after another: 200 times the share
    of a 64 KiB heap that the 64 work-items have, so this runs only if the arrays that
    die give their memory back."""
    @gpux.jit
    def churn(out, rounds):
        acc = 0.0
        for r in range(rounds):
            t = np.full(128, r, np.float64)
            acc += t[r % 128]
        out[gpux.grid(1)] = acc

    out = gpux.to_device(np.zeros(64))
    churn[1, 64](out, 200)
    np.testing.assert_array_equal(out.copy_to_host(), np.full(64, sum(range(200))))


def views_only(a, b):
    row = a[1]            # views of arguments allocate nothing
    t = b.T
    for i in range(row.shape[0]):
        row[i] += t[i, 0]


def makes(a):
    t = np.zeros_like(a)
    a[0] = t[0]


def test_kernels_that_make_no_arrays_pay_nothing(opencl_device):
    """No hidden heap argument, no runtime call, the same parameters as before."""
    from numba_gpux.language.heap import HEAP_ARG, uses_heap

    views_only, makes = gpux.jit(globals()["views_only"]), gpux.jit(globals()["makes"])
    a2 = np.zeros((3, 4))
    sig = (numba.typeof(a2), numba.typeof(a2))
    sym, text = views_only.kernel_ir(sig)
    assert not uses_heap(text) and HEAP_ARG not in text and "NRT_" not in text
    art = gpux.compile(views_only, "void(float64[:, ::1], float64[:, ::1])")
    assert "NRT_" not in art.llvm_ir and "__gpux_heap" not in art.llvm_ir
    sym2, text2 = makes.kernel_ir((numba.typeof(a2),))
    assert uses_heap(text2)
    params = [line for line in text.splitlines() if line.startswith("define") and sym in line]
    params2 = [line for line in text2.splitlines() if line.startswith("define") and sym2 in line]
    assert params[0].count("ptr addrspace(1)") == 2  # one buffer per array argument
    assert params2[0].count("ptr addrspace(1)") == 2  # its array, and the heap


@pytest.mark.parametrize("target", ["opencl-c", "metal"])
def test_source_kernels_that_make_no_arrays_pay_nothing(target):
    """On the source-emitting targets too: a kernel that makes no arrays has no heap
    parameter, no work-group variable for it and no allocator in its source; one that
    makes arrays has one parameter more, the heap."""
    sig = "void(float32[:, ::1], float32[:, ::1])"
    plain = gpux.compile(views_only, sig, target=target).text
    heap = gpux.compile(makes, "void(float32[:, ::1])", target=target).text
    for word in ("heap", "cmpxchg", "compare_exchange", "atomic", "threadgroup ulong",
                 "__local ulong", "pragma OPENCL EXTENSION cl_khr_int64"):
        assert word not in plain, word
    assert "gpux_heap" in heap and ("cmpxchg" in heap or "compare_exchange" in heap)

    def params(text):
        head = next(line for line in text.splitlines() if line.startswith(("__kernel", "kernel")))
        return head[head.index("(") + 1:head.rindex(")")].split(", ")

    # views_only: two arrays of 2 dimensions; makes: one array and the heap
    assert [p for p in params(plain) if "uchar*" in p] == [p for p in params(plain)
                                                           if "uchar*" in p][:2]
    assert len([p for p in params(heap) if "uchar*" in p]) == 2
    assert "uchar* gpux_heap" in [p for p in params(heap) if "uchar*" in p][-1]


@pytest.mark.parametrize("int64_atomics", [True, False])
def test_the_allocator_follows_the_devices_atomics(int64_atomics):
    """A device without 64-bit atomics gets the allocator on 32-bit shard words (the
    target lists heap.HEAP32_FAMILY among its overlay families): its OpenCL C has only
    32-bit atomics and no 64-bit atomics extension."""
    from numba_gpux.language.heap import HEAP32_FAMILY
    from numba_gpux.targets.opencl_c.target import make_target

    tgt = make_target(features={"fp64", "int64_atomics"} if int64_atomics else {"fp64"})
    assert (HEAP32_FAMILY in tgt.families) is not int64_atomics
    text = gpux.compile(scratch, "void(float32[::1], int64)", target=tgt).text
    if int64_atomics:
        assert "atom_cmpxchg((volatile __global long*)" in text
    else:
        assert "atomic_cmpxchg((volatile __global int*)" in text
        assert "atom_" not in text and "cl_khr_int64" not in text


def test_a_heap_needing_64bit_atomics_where_there_are_none_says_so():
    """A target whose devices lack 64-bit atomics but that does not list the 32-bit
    allocator's family: the validation names the allocator's need."""
    import dataclasses

    from numba_gpux.targets.opencl_c.target import make_target

    tgt = dataclasses.replace(make_target(features={"fp64"}), families=())
    with pytest.raises(gpux.ValidationError, match="allocator needs 64-bit atomics"):
        gpux.compile(scratch, "void(float32[::1], int64)", target=tgt)


def test_shards_of_the_32bit_allocator():
    """The 32-bit shard word counts 64-byte units in 16 bits: a shard is at most
    SHARD_BYTES_32 bytes, and a heap gets as many shards as that needs, where the 64-bit
    allocator's launch of one group has one shard of the whole heap."""
    from numba_gpux.language.heap import SHARD_BYTES_32, header, shard_count

    heap = 64 << 20
    assert shard_count(heap, 1, 8) == 1
    n = shard_count(heap, 1, 8, SHARD_BYTES_32)
    assert n == -(-heap // SHARD_BYTES_32) == 17
    head, nbytes = header(heap, n, SHARD_BYTES_32)
    assert 0 < head[3] <= SHARD_BYTES_32 and head[3] % 64 == 0
    assert nbytes <= heap + 4096 and n * head[3] > heap - 64 * n
    assert shard_count(heap, 4096, 8, SHARD_BYTES_32) == 32   # 4 per compute unit


@pytest.fixture
def heap32_device(opencl_device):
    from gpux_testing import selected
    from numba_gpux.targets.opencl_c.target import source_device

    with selected(without_int64_atomics(source_device(opencl_device))) as dev:
        yield dev


@gpux.jit(device=True)
def _one_round(i):
    k = 1 + i % 3            # run-time shapes: arrays from the heap
    gpux.barrier()           # every work-item has freed the last round's arrays
    a, b, c, d = np.full(k, i), np.full(k + 1, i), np.full(k, i), np.full(k + 2, i)
    gpux.barrier()           # 4 arrays of each of 256 work-items: 1024 blocks live
    wrong = 0
    for j in range(4):       # allocations and frees while they are
        t = np.full(k + j, i)
        wrong += (t != i).sum()
    gpux.barrier()
    return wrong + (a != i).sum() + (b != i).sum() + (c != i).sum() + (d != i).sum()


def test_thousands_of_live_blocks_in_one_shard(heap32_device):
    """One work-group (so one shard) of 256 work-items holding 4 arrays each at once,
    and making and freeing more: over 1024 live blocks, more than a narrower live count
    in the 32-bit word could hold; the shard drains between rounds and is used again."""
    saved = config._heap_size
    config.set_heap_size(1 << 20)
    try:
        @gpux.jit
        def many(bad, rounds):
            i = gpux.grid(1)
            wrong = 0
            for r in range(rounds):
                wrong += _one_round(i)
            bad[i] = wrong

        bad = gpux.to_device(np.full(256, -1, np.int64))
        many[1, 256](bad, 12)   # 12 rounds of about 160 KiB: twice the heap
        np.testing.assert_array_equal(bad.copy_to_host(), np.zeros(256, np.int64))
    finally:
        config._heap_size = saved


def test_an_array_larger_than_a_32bit_shard_says_so(heap32_device):
    from numba_gpux.language.heap import SHARD_BYTES_32

    @gpux.jit
    def large(out, n):
        t = np.ones(n)
        out[0] = t.sum()

    out = gpux.to_device(np.zeros(1))
    n = SHARD_BYTES_32 // 8 + 1
    with pytest.raises(MemoryError, match=f"larger than the {SHARD_BYTES_32} bytes of one shard"):
        large[1, 1](out, n)
    large[1, 1](out, n // 2)
    assert out.copy_to_host()[0] == n // 2


def test_an_array_larger_than_a_shard_says_why_on_the_64bit_allocator(opencl_device):
    """On a device with 64-bit atomics a shard holds at most 2 GiB (its free offset is a
    32-bit word): a larger array says so, not that the allocator uses 32-bit atomics."""
    @gpux.jit
    def huge(out, n):
        t = np.zeros(n)
        out[0] = t[n - 1]

    out = gpux.to_device(np.zeros(1))
    with pytest.raises(MemoryError) as ei:
        huge[1, 1](out, (3 << 30) // 8)
    msg = str(ei.value)
    assert f"larger than the {1 << 31} bytes of one shard" in msg, msg
    assert "at most 2 GiB" in msg and "32-bit atomics" not in msg, msg


def test_cuda_uses_the_device_malloc_and_its_ptx_assembles(ptxas):
    from numba_gpux.cuda import compile_ptx
    from numba_gpux.targets.cuda import toolkit

    ptx, _ = compile_ptx(scratch, "void(float32[::1], int64)")
    externs = [line.split()[-1] for line in ptx.splitlines() if line.startswith(".extern")]
    assert "malloc" in externs and "free" in externs
    assert "cas" not in ptx  # not the shared heap's allocator
    ok, log = toolkit.ptxas_check(ptx, (8, 0))
    assert ok, log


def test_the_heap_size_option():
    saved = config._heap_size
    try:
        config._heap_size = None
        assert config.heap_size() == config.HEAP_SIZE
        config.set_heap_size(1 << 20)
        assert config.heap_size() == 1 << 20
        with pytest.raises(ValueError, match="at least 4096"):
            config.set_heap_size(100)
    finally:
        config._heap_size = saved


def constant_shapes(out, x):
    a = np.zeros(8)
    b = np.full((2, 4), x, np.float32)
    c = np.ones(3, dtype=np.int32)
    d = np.empty(4)
    d[:] = 2.0
    out[0] = a.sum() + b.sum() + c.sum() + d.sum()


def test_arrays_of_a_shape_known_when_compiling_use_private_memory(opencl_device):
    art = gpux.compile(constant_shapes, "void(float64[::1], float64)")
    assert "NRT_" not in art.llvm_ir and "__gpux_heap" not in art.llvm_ir
    assert "cmpxchg" not in art.llvm_ir
    out = gpux.to_device(np.zeros(1))
    gpux.jit(constant_shapes)[1, 1](out, 1.5)
    want = np.zeros(1)
    njit(constant_shapes)(want, 1.5)
    np.testing.assert_array_equal(out.copy_to_host(), want)


def rounds(out, n):
    prev = np.zeros(n)
    for i in range(3):
        cur = np.zeros(n)
        cur[:] = prev + i
        prev = cur
    out[:] = prev


def test_an_array_made_in_a_loop_is_a_new_array_each_time_round(heap_device):
    """The arrays of two rounds live at once: the array of the last round stays intact
    while the next is filled."""
    out = gpux.to_device(np.zeros(4))
    gpux.jit(rounds)[1, 1](out, 4)
    want = np.zeros(4)
    njit(rounds)(want, 4)
    np.testing.assert_array_equal(out.copy_to_host(), want)


def private_then_heap(out):
    prev = np.zeros(4)       # private memory: a constant shape outside loops
    for i in range(3):
        cur = np.zeros(4)    # the heap: one private alloca cannot hold two rounds
        cur[:] = prev + i
        prev = cur           # the variable now holds a heap array
    out[:] = prev


def test_a_variable_holding_a_private_array_then_a_heap_one(opencl_device):
    out = gpux.to_device(np.zeros(4))
    gpux.jit(private_then_heap)[1, 1](out)
    want = np.zeros(4)
    njit(private_then_heap)(want)
    np.testing.assert_array_equal(out.copy_to_host(), want)
    # OpenCL C 1.2 has no generic pointers: one pointer into private or global memory
    # is a clear error there, naming the pointer
    with pytest.raises(gpux.GpuxUserError, match="cannot tell which memory a pointer"):
        gpux.compile(private_then_heap, "void(float64[::1])", target="opencl-c")


def broadcast_where(a, out):
    w = np.where(a.reshape((2, 3)) > 2, a[:3], -1.0).ravel()  # broadcast, and a scalar
    for i in range(w.size):
        out[i] = w[i]


def test_np_where_broadcasting_a_scalar(heap_device):
    """Numba's broadcasting keeps shapes in stack arrays that LLVM brackets with
    llvm.stacksave/stackrestore in loops: the source route writes them as arrays of their
    own and drops the brackets."""
    a = np.arange(1, 7, dtype=np.float64)
    out = gpux.to_device(np.zeros(6))
    gpux.jit(broadcast_where)[1, 1](a, out)
    want = np.zeros(6)
    njit(broadcast_where)(a, want)
    np.testing.assert_array_equal(out.copy_to_host(), want)


def test_a_device_function_returns_an_array_it_made(heap_device):
    @gpux.jit(device=True)
    def make(x):
        a = np.zeros(4)  # constant shape, but it leaves the function: from the heap
        a[1] = x
        return a

    @gpux.jit
    def k(out, x):
        a = make(x)
        out[0] = a.sum() + a[1]

    out = gpux.to_device(np.zeros(1))
    k[1, 1](out, 1.5)
    assert out.copy_to_host()[0] == 3.0


def _no_heap_target(name):
    import dataclasses

    from numba_gpux.devices import resolve_target

    return dataclasses.replace(resolve_target(name), device_heap=False)


@pytest.mark.parametrize("target", ["opencl-c", "metal"])
def test_targets_without_the_heap_say_so(target):
    """A target without the device heap (``Target.device_heap``): a kernel that needs
    it is a clear error; private arrays still work there."""
    tgt = _no_heap_target(target)
    with pytest.raises(gpux.ValidationError) as e:
        gpux.compile(scratch32, "void(float32[::1], int64)", target=tgt)
    assert "device heap" in str(e.value) and f"target {tgt.name!r} does not have it" in str(e.value)

    def private_only(out):
        t = np.ones(4, np.float32)
        out[0] = t.sum()

    art = gpux.compile(private_only, "void(float32[::1])", target=tgt)
    assert art.text


def test_concurrent_work_items_never_share_a_block(heap_device, small_heap):
    """Thousands of work-items allocate arrays of different sizes at once, round after
    round, each filling its own with its id and checking it after the others ran."""
    @gpux.jit
    def disjoint(bad, rounds):
        i = gpux.grid(1)
        if i < bad.shape[0]:
            wrong = 0
            for r in range(rounds):
                t = np.full(1 + (i + r) % 7, i, np.int64)
                u = np.full(1 + (i * 3 + r) % 5, -i, np.int64)
                for k in range(t.shape[0]):
                    wrong += t[k] != i
                for k in range(u.shape[0]):
                    wrong += u[k] != -i
            bad[i] = wrong

    bad = gpux.to_device(np.full(4096, -1, np.int64))
    disjoint[16, 256](bad, 20)
    np.testing.assert_array_equal(bad.copy_to_host(), np.zeros(4096, np.int64))


def test_numba_cuda_kernels_make_arrays_too(opencl_device):
    import operator

    from numba_gpux import cuda

    @cuda.jit
    def k(a, b, c):
        x = operator.add(b, c)
        y = b.copy()
        for i in range(a.shape[0]):
            a[i] = x[i] + y[i]

    a, b, c = cuda.to_device(np.zeros(4)), np.arange(4.0), np.ones(4)
    k[1, 1](a, b, c)
    np.testing.assert_array_equal(a.copy_to_host(), b + c + b)


def two_d(out, a):
    t = a.copy()                               # Numba checks the product of the shape
    u = a.T.ravel()                            # not contiguous: a copy
    v = np.zeros((a.shape[0], a.shape[1]))
    v[1, 2] = 5.0
    out[0] = t[1, 1] + u[1] + v[1, 2] + t.sum() + u[-1]


def test_two_dimensional_arrays_made_in_a_kernel(device):
    a = np.arange(6.0).reshape(2, 3)
    out = gpux.to_device(np.zeros(1))
    gpux.jit(two_d)[1, 1](out, a)
    want = np.zeros(1)
    njit(two_d)(want, a)
    np.testing.assert_array_equal(out.copy_to_host(), want)


def test_a_shape_whose_product_overflows_is_numbas_error(heap_device):
    """Numba checks the product of a shape with llvm.smul.with.overflow, which the OpenCL
    target writes without the SPIR-V instruction the driver cannot link."""
    @gpux.jit(debug=True)
    def huge(out, n):
        t = np.empty((n, n, n))
        out[0] = t.shape[0]

    out = gpux.to_device(np.zeros(1))
    with pytest.raises(ValueError, match="array is too big"):
        huge[1, 1](out, 2**22)
    huge[1, 1](out, 3)
    assert out.copy_to_host()[0] == 3


def test_numbas_cpu_target_still_makes_arrays_in_the_same_process(heap_device):
    """The kernel language's Array._allocate is seen by the shared GPU context only:
    @njit code making arrays compiles after a kernel that made one."""
    @gpux.jit
    def k(out, n):
        t = np.zeros(n)
        out[0] = t.sum() + n

    out = gpux.to_device(np.zeros(1))
    k[1, 1](out, 4)
    assert out.copy_to_host()[0] == 4.0

    @njit
    def cpu(n):
        return np.empty(n).shape[0] + np.zeros((2, n)).size

    assert cpu(3) == 9


def test_returned_arrays_keep_their_reference(heap_device):
    """A function that returns an array it was given (np.asarray inside np.where and
    np.broadcast_to, a device function returning its argument) takes a reference for
    its caller: the caller's array is not freed under it."""
    @gpux.jit(device=True)
    def same(a):
        return a

    def f(out, n):
        t = np.full(n, 3.0)
        u = same(t)
        v = np.full(n, 4.0)  # would reuse t's block if t had been freed
        out[0] = u[0] + v[0] + t.sum()

    out = gpux.to_device(np.zeros(1))
    gpux.jit(f)[1, 1](out, 4)
    assert out.copy_to_host()[0] == 3.0 + 4.0 + 12.0
