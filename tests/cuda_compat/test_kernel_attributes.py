"""numba.cuda's kernel attribute queries (get_shared_mem_per_block & co.), read from
the device's driver for the compiled kernel."""

import numpy as np
import pytest
from numba import float32, float64, int64, void

from numba_gpux import UnsupportedError, cuda

TABLE = np.arange(10, dtype=np.float32)


def test_shared_and_constant_memory_of_one_signature(device):
    @cuda.jit(void(float32[::1], int64))
    def k(a, j):
        sm = cuda.shared.array(100, dtype=float32)
        i = cuda.grid(1)
        if i == 0:
            for t in range(100):
                sm[t] = t
        cuda.syncthreads()
        a[i] = sm[i] + TABLE[j]        # a runtime index: the table stays in memory

    assert k.get_shared_mem_per_block() == 400
    assert k.get_const_mem_size() >= TABLE.nbytes
    assert 0 < k.get_max_threads_per_block() <= device.max_threads_per_block
    attrs = k.kernel_attributes()
    assert attrs["shared_mem_per_block"] == 400
    if "regs_per_thread" in attrs:
        assert k.get_regs_per_thread() == attrs["regs_per_thread"] > 0
    else:
        with pytest.raises(UnsupportedError, match="register counts") as got:
            k.get_regs_per_thread()
        assert isinstance(got.value, NotImplementedError)  # as the facade promises
        assert device.spec in str(got.value)


def test_shared_arrays_the_optimizer_folds_away_still_count(device):
    """numba.cuda counts a kernel's declared static shared arrays, also one whose every
    use the optimizer folded into constants (a driver may then report 0 bytes)."""
    n = 10

    @cuda.jit
    def k(ary):
        sm = cuda.shared.array(n, dtype=ary.dtype)
        for j in range(n):
            sm[j] = j
        for j in range(n):
            ary[j] = sm[j]

    k[1, 1](cuda.to_device(np.zeros(n, np.float32)))
    k[1, 1](cuda.to_device(np.zeros(n, np.float64)))
    s32, s64 = void(float32[::1]), void(float64[::1])
    assert k.get_shared_mem_per_block(s32) == 4 * n
    assert k.get_shared_mem_per_block(s64) == 8 * n
    assert k.get_shared_mem_per_block() == {s32.args: 4 * n, s64.args: 8 * n}


def test_print_format_strings_are_constant_memory(device):
    @cuda.jit
    def k(val, to_print):
        if to_print:
            print(val)

    k[1, 1](1, False)
    k[1, 1](1.5, False)
    from numba import boolean

    # b"%ld\n\0" (5 bytes) for the integer; a float's format is at least b"%g\n\0"
    assert k.get_const_mem_size(void(int64, boolean)) >= 5
    assert k.get_const_mem_size(void(float64, boolean)) >= 4


def test_several_signatures_give_a_dict_or_one_value(device):
    @cuda.jit
    def k(x, n):
        i = cuda.grid(1)
        if i < n:
            x[i] = 3.0 * x[i]

    k[1, 4](cuda.to_device(np.zeros(4, np.float32)), 4)
    k[1, 4](cuda.to_device(np.zeros(4, np.float64)), 4)
    every = k.get_max_threads_per_block()
    s32, s64 = void(float32[::1], int64), void(float64[::1], int64)
    assert set(every) == {s32.args, s64.args}
    assert every[s32.args] == k.get_max_threads_per_block(s32) > 0
    with pytest.raises(TypeError, match="2 signatures"):
        k.kernel_attributes()


def test_local_memory_grows_with_a_local_array(device):
    n = 1000

    @cuda.jit(void(float32[::1]))
    def big(a):
        lm = cuda.local.array(n, dtype=float32)
        for j in range(n):
            lm[j] = a[(j * 7) % a.size]
        for j in range(n):
            a[j % a.size] += lm[n - 1 - j]

    @cuda.jit(void(float32[::1]))
    def small(a):
        a[0] = 1.0

    got, none = big.get_local_mem_per_thread(), small.get_local_mem_per_thread()
    if got == none:  # PoCL reports 1024 bytes for every kernel
        pytest.skip(f"{device.spec}'s driver reports the same private memory ({got} bytes) "
                    f"for a kernel with a {n * 4}-byte local array as for one without")
    assert got >= n * 4 > none
