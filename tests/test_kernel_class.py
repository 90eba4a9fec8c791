"""The kernel object's extension points: a subclass of GpuxFunction (a facade's, a
library's) changes what a launch runs through named methods of the core kernel object,
and the portable kernel carries none of numba.cuda's own behaviour."""

import pickle

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import GpuxFunction
from numba_gpux.errors import GpuxUserError


class Doubling(GpuxFunction):
    """Launches every argument doubled (prepare_launch), and counts what runs after."""

    ran_after = 0

    def prepare_launch(self, cfg, args):
        def after():
            type(self).ran_after += 1

        return tuple(2 * a if isinstance(a, int) else a for a in args), [after]

    @property
    def keyed_launches(self):
        return False


class ByBlock(GpuxFunction):
    """A separate kernel object per block width (launch_variant), each compiled once."""

    keyed_launches = False  # every launch asks launch_variant

    def __init__(self, py_func, **kw):
        super().__init__(py_func, **kw)
        self.variants = {}

    def launch_variant(self, cfg):
        width = cfg.blockdim[0]
        if width == 1:
            return self
        if width not in self.variants:
            self.variants[width] = self._derive()
        return self.variants[width]


def put(a, v):
    i = gpux.grid(1)
    if i < a.size:
        a[i] = v + i


def test_prepare_launch_replaces_the_arguments_and_runs_what_follows(opencl_device):
    k = gpux.jit(kernel_class=Doubling)(put)
    assert type(k) is Doubling
    a = gpux.to_device(np.zeros(4, np.int64), device=opencl_device)
    before = Doubling.ran_after
    for _ in range(3):   # no launch key may skip prepare_launch
        k[1, 4, opencl_device](a, 5)
        assert a.copy_to_host().tolist() == [10, 11, 12, 13]
    assert Doubling.ran_after == before + 3
    assert k._launch_keys == {}


def test_launch_variant_picks_the_object_that_runs(opencl_device):
    k = gpux.jit(kernel_class=ByBlock)(put)
    a = gpux.to_device(np.zeros(4, np.int64), device=opencl_device)
    k[4, 1, opencl_device](a, 1)
    k[1, 4, opencl_device](a, 2)
    k[1, 4, opencl_device](a, 3)
    assert a.copy_to_host().tolist() == [3, 4, 5, 6]
    assert list(k.variants) == [4] and type(k.variants[4]) is ByBlock
    assert k.stats["neutral_compiles"] == 1
    assert k.variants[4].stats["neutral_compiles"] == 1


def test_a_subclass_kernel_pickles_as_its_class():
    k = gpux.jit(kernel_class=Doubling)(lambda a, v: None)
    assert pickle.loads(pickle.dumps(k)) is k  # this process has it: the same object
    rebuild, (cls, _, payload, state) = k.__reduce__()
    again = rebuild(cls, "an id this process has not seen", payload, state)
    assert type(again) is Doubling and again is not k


def test_portable_kernels_have_no_numba_cuda_behaviour():
    k = gpux.jit(put)
    for name in ("extensions", "bitcast_arrays", "mark_launch_config_sensitive",
                 "for_launch_config", "_config_variants"):
        assert not hasattr(k, name), name
    assert k.launch_variant(None) is k and k.prepare_launch(None, ()) is None
    assert callable(k.forall)  # the portable API documents forall (docs/performance.md)
    with pytest.raises(ValueError, match="between -1 and 100"):
        gpux.jit(shared_memory_carveout="MaxL1")(put)
    with pytest.raises(GpuxUserError, match="kernel_class"):
        gpux.jit(kernel_class=dict)(put)


def test_the_facade_kernel_is_a_subclass_with_numba_cuda_behaviour():
    from numba_gpux import cuda
    from numba_gpux.cuda.dispatcher import CUDADispatcher

    k = cuda.jit("void(int32[::1])")(lambda a: None)
    assert isinstance(k, CUDADispatcher) and isinstance(k, GpuxFunction)
    assert k.bitcast_arrays and k.extensions == []
    d = cuda.jit(device=True)(lambda x: x)
    assert type(d) is CUDADispatcher and not d.bitcast_arrays
    assert cuda.jit(shared_memory_carveout="MaxShared")(put).options.shared_memory_carveout == 100
