"""Programs written the way numba.cuda users write them, through ``numba_gpux.cuda``,
on every available device, checked against NumPy."""

import numpy as np
import pytest

from numba_gpux import cuda
from numba_gpux.cuda.intrinsics import Unavailable
from numba_gpux.errors import LaunchError

#: the quick subset that .ci/run also runs on the other CPythons
pytestmark = pytest.mark.quick


def needs(*objs):
    """Skip while one of the facade names is still a placeholder."""
    for obj in objs:
        if isinstance(obj, Unavailable):
            pytest.skip(f"{obj._name} is not supported by numba_gpux yet")


def test_signature_string_and_device_function(device):
    @cuda.jit("float32(float32, float32)", device=True)
    def mul_add(a, b):
        return a * b + 1

    @cuda.jit("void(float32[::1], float32[::1], float32[::1])")
    def kernel(x, y, out):
        i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
        if i < out.shape[0]:
            out[i] = mul_add(x[i], y[i])

    x = np.arange(100, dtype=np.float32)
    y = np.full(100, 2, np.float32)
    out = cuda.device_array(100, np.float32)
    kernel[4, 32](cuda.to_device(x), cuda.to_device(y), out)
    np.testing.assert_allclose(out.copy_to_host(), x * y + 1)
    assert len(kernel.signatures) == 1


def test_host_arrays_copied_back_and_in_out(device):
    @cuda.jit
    def scale(src, dst):
        i = cuda.grid(1)
        if i < dst.size:
            dst[i] = 3 * src[i]
            src[i] = -1

    src = np.arange(50.0)
    dst = np.zeros(50)
    scale[2, 32](src, dst)                      # implicit copy both ways
    np.testing.assert_equal(dst, 3 * np.arange(50.0))
    np.testing.assert_equal(src, -1)
    src = np.arange(50.0)
    dst = np.zeros(50)
    scale[2, 32](cuda.In(src), cuda.Out(dst))   # src not copied back
    np.testing.assert_equal(dst, 3 * np.arange(50.0))
    np.testing.assert_equal(src, np.arange(50.0))
    scale[2, 32](cuda.InOut(src), dst)
    np.testing.assert_equal(src, -1)


def test_2d_grid_strided_loop(device):
    @cuda.jit
    def add_2d(a, out):
        x, y = cuda.grid(2)
        sx, sy = cuda.gridsize(2)
        for i in range(x, a.shape[0], sx):
            for j in range(y, a.shape[1], sy):
                out[i, j] = a[i, j] + i * 1000 + j

    a = np.random.default_rng(0).random((37, 53))
    out = cuda.device_array_like(a)
    add_2d[(2, 3), (8, 4)](cuda.to_device(a), out)
    i, j = np.indices(a.shape)
    np.testing.assert_allclose(out.copy_to_host(), a + i * 1000 + j)


def test_device_array_api(device):
    h = np.arange(24, dtype=np.int64).reshape(4, 6)
    d = cuda.to_device(h)
    assert (d.shape, d.strides, d.dtype, d.size, d.ndim, d.nbytes) == \
        (h.shape, h.strides, h.dtype, h.size, h.ndim, h.nbytes)
    assert d.is_c_contiguous() and not d.is_f_contiguous()
    assert d.flags["C_CONTIGUOUS"] and d.flags.c_contiguous
    np.testing.assert_equal(d[1:3, ::2].copy_to_host(), h[1:3, ::2])
    assert d[2, 3] == h[2, 3]
    np.testing.assert_equal(d.reshape(6, 4).copy_to_host(), h.reshape(6, 4))
    np.testing.assert_equal(d.ravel().copy_to_host(), h.ravel())
    parts = d.ravel().split(10)
    np.testing.assert_equal(np.concatenate([p.copy_to_host() for p in parts]), h.ravel())
    d[0] = 99
    d[3, 5] = -7
    h[0] = 99
    h[3, 5] = -7
    np.testing.assert_equal(d.copy_to_host(), h)
    out = np.empty_like(h)
    assert d.copy_to_host(out, stream=0) is out
    np.testing.assert_equal(out, h)
    d.copy_to_device(np.ones_like(h))
    np.testing.assert_equal(d.copy_to_host(), 1)
    e = cuda.to_device(np.zeros(5), copy=False)
    assert e.shape == (5,)
    f = cuda.device_array((3, 4), dtype=np.float32, order="F")
    assert f.is_f_contiguous()


def test_pinned_and_mapped_stand_ins(device):
    @cuda.jit
    def inc(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1

    p = cuda.pinned_array(10, dtype=np.float32)
    p[:] = 1
    d = cuda.to_device(p)
    inc[1, 16](d)
    d.copy_to_host(p)
    np.testing.assert_equal(p, 2)
    m = cuda.mapped_array(10, dtype=np.int32)
    m[:] = 5
    inc[1, 16](m)
    cuda.synchronize()
    np.testing.assert_equal(m, 6)
    ml = cuda.mapped_array_like(m)
    assert ml.shape == m.shape and ml.dtype == m.dtype
    with cuda.pinned(p):
        pass
    with cuda.mapped(m) as dm:
        inc[1, 16](dm)
    np.testing.assert_equal(m, 7)


def test_streams_and_events(device):
    @cuda.jit
    def axpy(a, x, y):
        i = cuda.grid(1)
        if i < x.size:
            y[i] = a * x[i] + y[i]

    n = 1 << 16
    streams = [cuda.stream() for _ in range(3)]
    hosts = [np.full(n, k, np.float32) for k in range(3)]
    results = []
    start, end = cuda.event(), cuda.event()
    start.record()
    for s, h in zip(streams, hosts):
        with s.auto_synchronize():
            dx = cuda.to_device(h, stream=s)
            dy = cuda.device_array_like(h, stream=s)
            dy.copy_to_device(np.ones(n, np.float32), stream=s)
            axpy[n // 256, 256, s](np.float32(2), dx, dy)
            results.append(dy.copy_to_host(stream=s))
    end.record()
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0
    assert cuda.event_elapsed_time(start, end) >= 0
    for k, r in enumerate(results):
        np.testing.assert_equal(r, 2 * k + 1)
    # an event recorded on one stream, waited on by another
    s1, s2 = cuda.stream(), cuda.stream()
    d = cuda.to_device(np.zeros(n, np.float32), stream=s1)
    x = cuda.to_device(np.ones(n, np.float32), stream=s1)
    axpy[n // 256, 256, s1](np.float32(5), x, d)
    ev = cuda.event()
    ev.record(s1)
    ev.wait(s2)
    axpy[n // 256, 256, s2, 0](np.float32(1), x, d)
    s2.synchronize()
    np.testing.assert_equal(d.copy_to_host(), 6)
    assert cuda.default_stream() == 0


def test_stream_callback(device):
    s = cuda.stream()
    got = []
    import threading

    done = threading.Event()

    def cb(stream, status, arg):
        got.append((stream, status, arg))
        done.set()

    cuda.to_device(np.zeros(100), stream=s)
    s.add_callback(cb, "x")
    assert done.wait(30)
    assert got == [(s, 0, "x")]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int64])
def test_reduce(device, dtype):
    sum_reduce = cuda.reduce(lambda a, b: a + b)
    for n in (1, 7, 256, 257, 100_003):
        a = (np.arange(n) % 13).astype(dtype)
        assert sum_reduce(a) == a.sum()
        assert sum_reduce(cuda.to_device(a), init=5) == a.sum() + 5
        assert sum_reduce(a, size=n // 2 + 1) == a[: n // 2 + 1].sum()
    assert sum_reduce(np.zeros(0, dtype), init=3) == 3

    @cuda.reduce
    def max_reduce(a, b):
        return max(a, b)

    a = np.random.default_rng(1).permutation(5000).astype(dtype)
    res = cuda.device_array(1, dtype)
    assert max_reduce(a, res=res) is None
    assert res.copy_to_host()[0] == 4999


def test_reduce_takes_the_portable_reduce_for_numbers_and_keeps_its_kernel_for_the_rest(
        device):
    """Integers and floats are folded by ``numba_gpux.algorithms.reduce`` with the
    function as its operator (no kernel of the facade's own is built for them); bool and
    complex arrays by the facade's passes.  Both fold ``init`` in once, take ``size``,
    ``res`` and a stream, and give NumPy's results."""
    from numba_gpux.cuda.reduction import Reduce

    def add(a, b):
        return a + b

    r = cuda.reduce(add)
    rng = np.random.default_rng(7)
    s = cuda.stream()
    dtypes = [np.int8, np.uint8, np.int16, np.uint32, np.int64, np.float32, np.float64]
    if device.target.has("fp16"):  # (PoCL's CPU device has no half precision)
        dtypes.append(np.float16)
    for dtype in dtypes:
        # (float16 sums exact below 2048; integers wrap alike in any order)
        a = rng.integers(0, 2 if dtype == np.float16 else 5, 3001).astype(dtype)
        d = cuda.to_device(a, stream=s)  # queued on the stream, then reduced
        assert r(d, stream=s) == a.sum(dtype=dtype), dtype
        assert r(a, size=1000, init=3) == a[:1000].sum(dtype=dtype) + 3, dtype
        res = cuda.device_array(2, dtype)
        assert r(d, res=res, init=1, stream=s) is None
        assert res.copy_to_host()[0] == a.sum(dtype=dtype) + 1, dtype
    assert add not in Reduce._cache

    b = rng.integers(0, 2, 777).astype(np.bool_)
    orr = cuda.reduce(lambda x, y: x or y)
    assert orr(b, init=False) == b.any() and orr(np.zeros(9, np.bool_), init=False) == 0
    c = (rng.standard_normal(500) + 1j * rng.standard_normal(500)).astype(np.complex128)
    assert np.isclose(r(c), c.sum())


@pytest.mark.needs("subgroups")
def test_warp_functions(device):
    @cuda.jit
    def warp(lane, width, up, xor, allv, anyv, ballot):
        i = cuda.grid(1)
        lane[i] = cuda.laneid
        width[i] = cuda.warpsize
        up[i] = cuda.shfl_up_sync(0xFFFFFFFF, i, 1)
        xor[i] = cuda.shfl_xor_sync(0xFFFFFFFF, i, 1)
        allv[i] = cuda.all_sync(0xFFFFFFFF, i >= 0)
        anyv[i] = cuda.any_sync(0xFFFFFFFF, cuda.laneid == 1)
        ballot[i] = cuda.ballot_sync(0xFFFFFFFF, cuda.laneid % 2 == 0)

    n = 64
    outs = [np.zeros(n, t) for t in (np.int32, np.int32, np.int64, np.int64,
                                     np.bool_, np.bool_, np.uint32)]
    warp[1, n](*outs)
    lane, width, up, xor, allv, anyv, ballot = outs
    w = int(width[0])
    assert w >= 1 and np.all(width == w)
    i = np.arange(n)
    np.testing.assert_equal(lane, i % w)
    np.testing.assert_equal(up, np.where(i % w >= 1, i - 1, i))
    if w > 1:
        np.testing.assert_equal(xor, i ^ 1)
    assert allv.all() and (anyv == (w > 1)).all()
    expect = sum(1 << k for k in range(0, min(w, 32), 2))
    np.testing.assert_equal(ballot, expect)


@pytest.mark.needs("subgroups")
def test_eq_sync_compares_predicates_not_values(device):
    # numba.cuda's eq_sync is vote.sync.uni: the same truth value on every lane
    @cuda.jit
    def k(v, eq, width):
        i = cuda.grid(1)
        eq[i] = cuda.eq_sync(0xFFFFFFFF, v[i])
        width[i] = cuda.warpsize

    n = 64
    v = (np.arange(n) % 2 + 1).astype(np.int32)  # 1, 2, 1, 2, ...: all truthy
    v[32:] = np.arange(32) % 2  # 0, 1, ...: mixed where a sub-group has 2 lanes or more
    eq, width = np.zeros(n, np.bool_), np.zeros(n, np.int32)
    k[1, n](v, eq, width)
    w = int(width[0])
    assert eq[:32].all()
    np.testing.assert_equal(eq[32:], w == 1)


@pytest.mark.needs("subgroups")
def test_match_any_and_all_sync(device):
    @cuda.jit
    def k(v, anym, allm, allp, width):
        i = cuda.grid(1)
        anym[i] = cuda.match_any_sync(0xFFFFFFFF, v[i])
        m, p = cuda.match_all_sync(0xFFFFFFFF, v[i])
        allm[i] = m
        allp[i] = p
        width[i] = cuda.warpsize

    n = 64
    v = (np.arange(n) % 3).astype(np.float64)
    v[32:] = 5.0  # the second half: one value (in every sub-group of up to 32 lanes)
    anym, allm = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
    allp, width = np.zeros(n, np.bool_), np.zeros(n, np.int32)
    k[1, n](v, anym, allm, allp, width)
    w = int(width[0])
    for i in range(n):
        base = i - i % w
        lanes = [j - base for j in range(base, min(base + w, n)) if v[j] == v[i]]
        assert anym[i] == sum(1 << lane for lane in lanes if lane < 32), i
        same = all(v[j] == v[i] for j in range(base, min(base + w, n)))
        present = (1 << min(min(base + w, n) - base, 32)) - 1  # the lanes the group has
        assert allp[i] == same and allm[i] == (present if same else 0), i
    # a partial warp (fewer threads than lanes): a full mask answers the lanes there are
    m = 10
    k[1, m](np.zeros(m), anym[:m], allm[:m], allp[:m], width[:m])
    assert allp[:m].all() and (allm[:m] == (1 << m) - 1).all()


def test_nanosleep_backs_off_a_spin_loop(device):
    # a lock-free counter with a back-off: every thread ends, every increment counts
    @cuda.jit
    def k(counter, out, ns):
        i = cuda.grid(1)
        while True:
            old = counter[0]
            if cuda.atomic.cas(counter, 0, old, old + 1) == old:
                break
            cuda.nanosleep(ns)
        out[i] = 1

    counter, out = cuda.to_device(np.zeros(1, np.int32)), cuda.device_array(64, np.int32)
    k[2, 32](counter, out, 200)
    assert counter.copy_to_host()[0] == 64 and out.copy_to_host().sum() == 64


@pytest.mark.feature("popc", "clz", "brev")
def test_bits_and_math(device):
    needs(cuda.popc, cuda.clz, cuda.ffs, cuda.brev, cuda.fma)

    @cuda.jit
    def bits(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i, 0] = cuda.popc(x[i])
            out[i, 1] = cuda.clz(x[i])
            out[i, 2] = cuda.brev(x[i])
            out[i, 3] = cuda.selp(x[i] > 5, 1, 2)

    x = np.array([0, 1, 6, 255, 1 << 20, 0x7FFFFFFF], np.uint32)
    out = np.zeros((x.size, 4), np.int64)
    bits[1, 8](x, out)
    np.testing.assert_equal(out[:, 0], [bin(v).count("1") for v in x])
    np.testing.assert_equal(out[:, 1], [32 - int(v).bit_length() for v in x])
    np.testing.assert_equal(out[:, 2], [int(f"{v:032b}"[::-1], 2) for v in x])
    np.testing.assert_equal(out[:, 3], np.where(x > 5, 1, 2))


def test_cbrt_selp_fma(device):
    @cuda.jit
    def k(x, out):
        i = cuda.grid(1)
        if i < x.size:
            out[i] = cuda.selp(x[i] > 0, cuda.cbrt(x[i]), cuda.fma(x[i], 2.0, 1.0))

    x = np.array([-2.0, 8.0, 27.0, -0.5, 1e-3])
    out = np.zeros_like(x)
    k[1, 8](x, out)
    np.testing.assert_allclose(out, np.where(x > 0, np.cbrt(x), x * 2 + 1))


@pytest.mark.feature("atomics_int32")
def test_histogram_atomics(device):
    needs(cuda.atomic)

    @cuda.jit
    def histogram(x, xmin, xmax, histogram_out):
        nbins = histogram_out.shape[0]
        bin_width = (xmax - xmin) / nbins
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, x.shape[0], stride):
            bin_number = np.int32((x[i] - xmin) / bin_width)
            if bin_number >= 0 and bin_number < histogram_out.shape[0]:
                cuda.atomic.add(histogram_out, bin_number, 1)

    x = np.random.default_rng(3).normal(size=100_000).astype(np.float32)
    xmin, xmax = np.float32(-4.0), np.float32(4.0)
    hist = np.zeros(20, np.int32)
    histogram[64, 128](x, xmin, xmax, hist)
    bins = ((x - xmin) / ((xmax - xmin) / 20)).astype(np.int32)
    expect = np.bincount(bins[(bins >= 0) & (bins < 20)], minlength=20)
    np.testing.assert_equal(hist, expect)


@pytest.mark.feature("atomics_int32")
def test_histogram_with_an_optional_bin_from_a_cpu_jit_helper(device):
    """A ``numba.jit`` helper that returns the bin or None (for a value out of range;
    none is here: a None would end the work-item, as the failed cast of an optional
    ends a CUDA thread): the kernel compares the optional bin and passes it to
    ``atomic.add``, which numba.cuda casts to an index as any other.  The launch is
    configured with ``configure``, numba.cuda's older spelling of
    ``kernel[grid, block]``."""
    import numba

    @numba.jit(nopython=True)
    def bin_of(x, n, lo, hi):
        if x == hi:
            return n - 1
        b = np.int32(n * (x - lo) / (hi - lo))
        if b < 0 or b >= n:
            return None
        return b

    @cuda.jit
    def histogram(x, lo, hi, out):
        for i in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
            b = bin_of(x[i], out.shape[0], lo, hi)
            if b >= 0 and b < out.shape[0]:
                cuda.atomic.add(out, b, 1)

    x = np.random.default_rng(7).normal(size=5001)
    out = cuda.to_device(np.zeros(16, np.int32))
    histogram.configure(8, 64)(cuda.to_device(x), x.min(), x.max(), out)
    np.testing.assert_array_equal(out.copy_to_host(), np.histogram(x, 16)[0])


@pytest.mark.feature("shared_static", "barrier_pred")
def test_block_reduction_shared_syncthreads_count(device):
    needs(cuda.shared, cuda.syncthreads_count)

    @cuda.jit
    def count_positive(x, out):
        tid = cuda.threadIdx.x
        i = cuda.grid(1)
        n = cuda.syncthreads_count(i < x.size and x[i] > 0)
        if tid == 0:
            out[cuda.blockIdx.x] = n

    x = np.random.default_rng(4).normal(size=1000)
    out = np.zeros(8, np.int32)
    count_positive[8, 128](x, out)
    xp = np.concatenate([x, np.zeros(24)]).reshape(8, 128)
    np.testing.assert_equal(out, (xp > 0).sum(axis=1))


def test_typing_error_is_numbas():
    from numba.core.errors import TypingError

    @cuda.jit
    def bad(a):
        a[0] = "text" + 1

    with pytest.raises(TypingError):
        bad[1, 1](cuda.to_device(np.zeros(1)))
    assert cuda.TypingError is TypingError


def test_unsupported_name_fails_clearly(device):
    # how a numba.cuda name the facade cannot give fails: at typing, naming it and why
    from numba.core.errors import TypingError

    from numba_gpux.cuda.intrinsics import _unavailable

    absent = _unavailable("absent_for_the_test", "a reason given here")

    @cuda.jit
    def k(a):
        absent()

    with pytest.raises(TypingError, match="cuda.absent_for_the_test is not supported by "
                                          "numba_gpux: a reason given here"):
        k[1, 1](cuda.to_device(np.zeros(1)))


def test_launch_forms(device):
    @cuda.jit
    def fill(a, v):
        i = cuda.grid(1)
        if i < a.size:
            a[i] = v

    a = cuda.device_array(100, np.int64)
    fill[4, 32](a, 1)
    fill[4, 32, 0](a, 2)
    s = cuda.stream()
    fill[4, 32, s, 0](a, 3)
    s.synchronize()
    np.testing.assert_equal(a.copy_to_host(), 3)
    fill.forall(100)(a, 4)
    np.testing.assert_equal(a.copy_to_host(), 4)
    # one list, as numba.cuda takes it (its __getitem__ calls configure(*args))
    fill[[4, 32]](a, 6)
    np.testing.assert_equal(a.copy_to_host(), 6)
    fill[[(2, 1, 1), [64], s, 0]](a, 7)
    s.synchronize()
    np.testing.assert_equal(a.copy_to_host(), 7)
    with pytest.raises(LaunchError, match="launch configuration must be"):
        fill[[4]](a, 8)
    spec = fill.specialize(a, 5)
    spec[4, 32](a, 5)
    np.testing.assert_equal(a.copy_to_host(), 5)
    assert fill.overloads and fill.signatures
    with pytest.raises(Exception):
        fill(a, 1)  # no launch configuration


@pytest.mark.needs("subgroups")
def test_syncwarp_with_and_without_mask(device):
    @cuda.jit
    def k(a):
        i = cuda.grid(1)
        cuda.syncwarp()
        cuda.syncwarp(0xFFFFFFFF)
        if i < a.size:
            a[i] = i

    a = cuda.device_array(16, np.int64)
    k[1, 16](a)
    np.testing.assert_equal(a.copy_to_host(), np.arange(16))
