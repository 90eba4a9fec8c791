"""numba.cuda's vector types (``cuda.float32x4``, ``cuda.int2``...) on every device:
construction from scalars and from smaller vectors, element attributes, aliases,
device functions taking and returning them, tuples of them, and the errors."""

import numpy as np
import pytest
from numba.core.errors import TypingError

import numba_gpux
from numba_gpux import cuda
from numba_gpux.cuda.vector_types import vector_types


def test_every_type_and_alias_is_one_constructor():
    assert len(vector_types) == 44  # numba.cuda's 40 and numba-cuda-mlir's 4 float16 ones
    for name, vty in vector_types.items():
        ctor = vty.user_facing_object
        assert getattr(cuda, name) is ctor and ctor.__name__ == name
        assert vty.num_elements == int(name[-1]) and vty.attr_names == ("x", "y", "z", "w")[
            :vty.num_elements]
        for alias in ctor.aliases:
            assert getattr(cuda, alias) is ctor
    assert cuda.float4 is cuda.float32x4 and cuda.double2 is cuda.float64x2
    assert set(cuda.int64x3.aliases) == {"long3", "longlong3"}
    with pytest.raises(AttributeError):
        cuda.float32x5  # noqa: B018


@pytest.mark.parametrize("name", ["int8x4", "uint16x3", "int32x2", "uint64x1", "float32x4",
                                  "float64x3"])
def test_construction_and_elements(device, name):
    vty = vector_types[name]
    ctor, base, n = vty.user_facing_object, vty.base_type, vty.num_elements

    def build(res):
        if n == 1:
            v = ctor(base(1))
            res[0] = v.x
        elif n == 2:
            v = ctor(base(1), 2)
            res[0], res[1] = v.x, v.y
        elif n == 3:
            v = ctor(base(1), 2, base(3))
            res[0], res[1], res[2] = v.x, v.y, v.z
        else:
            v = ctor(1, 2, 3, base(4))
            res[0], res[1], res[2], res[3] = v.x, v.y, v.z, v.w

    res = cuda.to_device(np.zeros(4))
    cuda.jit(build)[1, 1](res)
    np.testing.assert_array_equal(res.copy_to_host(), [1, 2, 3, 4][:n] + [0] * (4 - n))


@cuda.jit(device=True)
def _swap(v):
    return cuda.float2(v.y, v.x)


def test_vectors_from_vectors_device_functions_and_tuples(device):
    @cuda.jit
    def k(res, a):
        i = cuda.grid(1)
        if i < a.size:
            one = cuda.float1(a[i])
            two = cuda.float2(one, np.float32(2))
            three = cuda.float3(two, one)
            four = cuda.float4(_swap(two), cuda.float2(three.z, 7))
            j = i * 8
            for v in (cuda.float2(four.x, four.y), cuda.float2(four.z, four.w),
                      cuda.float2(three.x, three.y), _swap(two)):
                res[j] = v.x
                res[j + 1] = v.y
                j += 2

    a = np.arange(1, 5, dtype=np.float32)
    res = cuda.to_device(np.zeros(32, np.float32))
    k[1, 32](res, cuda.to_device(a))
    want = np.concatenate([[2, x, x, 7, x, 2, 2, x] for x in a]).astype(np.float32)
    np.testing.assert_array_equal(res.copy_to_host(), want)


@pytest.mark.parametrize("body, message", [
    ("cuda.float3(np.float32(1), np.float32(2))", "needs 3 elements in all .* got 2"),
    ("cuda.float2(cuda.int2(1, 2))", "must have float32 elements, not int32x2"),
    ("cuda.float2(1.0, (1.0, 2.0))", "arguments are scalars or vectors of float32"),
])
def test_bad_constructions_are_typing_errors(device, body, message):
    ns = {"cuda": cuda, "np": np}
    exec(f"def k(res):\n    v = {body}\n    res[0] = v.x\n", ns)
    with pytest.raises(TypingError, match=message):
        cuda.jit(ns["k"])[1, 1](cuda.device_array(1, np.float32))


def test_unknown_attribute_is_a_typing_error(device):
    @cuda.jit
    def k(res):
        res[0] = cuda.float2(1, 2).z

    with pytest.raises(TypingError, match="z"):
        k[1, 1](cuda.device_array(1, np.float32))


def test_host_construction_is_a_clear_error():
    with pytest.raises(numba_gpux.GpuxUserError, match="built in kernels and device functions"):
        cuda.float32x4(1, 2, 3, 4)


def test_constructor_pickles_as_itself():
    import pickle

    assert pickle.loads(pickle.dumps(cuda.float4)) is cuda.float32x4


def test_vector_kernels_use_the_disk_cache(device, tmp_path, monkeypatch):
    import numba.core.config

    # the facade's files go where numba.cuda's do (beside the source, or NUMBA_CACHE_DIR):
    # a fresh folder, so that an earlier run's files are not found
    monkeypatch.setattr(numba.core.config, "CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("NUMBA_GPUX_CACHE_DIR", str(tmp_path))

    def k(res):
        v = cuda.int3(1, 2, 3)
        res[0] = v.x + v.y * v.z

    from numba_gpux import cache

    hits = []
    for _ in range(2):  # the second kernel object finds the first one's entry
        before = cache.stats["index_hits"]
        res = cuda.to_device(np.zeros(1, np.int64))
        cuda.jit(cache=True)(k)[1, 1](res)
        assert res.copy_to_host()[0] == 7
        hits.append(cache.stats["index_hits"] - before)
    assert hits == [0, 1]  # the constructor is part of the pre-typing key
