"""numba.cuda's launchconfig: the configuration a launch's compile sees, and kernels
whose code depends on it (mark_launch_config_sensitive)."""

import threading

import numpy as np
import pytest
from numba.core import ir

from numba_gpux import cuda
from numba_gpux.cuda import launchconfig
from numba_gpux.cuda.core.rewrites import Rewrite, register_rewrite

#: read by kernels; the rewrite below puts the launch's block width in its place
COMPILED_BLOCK = -1


@register_rewrite("before-inference")
class _BlockWidthAtCompile(Rewrite):
    """Replaces loads of the global COMPILED_BLOCK with the x block width of the launch
    that compiles the kernel, and marks the kernel launch-config sensitive (as a
    library that specializes on the block size does)."""

    def match(self, func_ir, block, typemap, calltypes):
        self.block = block
        self.loads = [i for i in block.find_insts(ir.Assign)
                      if isinstance(i.value, ir.Global) and i.value.name == "COMPILED_BLOCK"]
        return bool(self.loads)

    def apply(self):
        cfg = launchconfig.ensure_current_launch_config()
        cfg.dispatcher.mark_launch_config_sensitive()
        new = self.block.copy()
        new.clear()
        for inst in self.block.body:
            if inst in self.loads:
                inst = ir.Assign(ir.Const(cfg.blockdim[0], inst.loc), inst.target, inst.loc)
            new.append(inst)
        return new


def test_the_configuration_is_visible_to_the_compile_a_launch_starts(device):
    @cuda.jit
    def f(x):
        x[0] = 1

    seen = {}
    compile_for_args = f._compile_for_args

    def watching(*args, **kws):
        seen["config"] = launchconfig.current_launch_config()
        return compile_for_args(*args, **kws)

    f._compile_for_args = watching
    arr = np.zeros(1, np.int32)
    assert launchconfig.current_launch_config() is None
    f[2, (3, 2), 0, 16](arr)
    cfg = seen["config"]
    assert cfg.dispatcher is f
    assert (cfg.griddim, cfg.blockdim, cfg.sharedmem) == ((2, 1, 1), (3, 2, 1), 16)
    assert cfg.args[0] is arr  # the arguments as given (a host array, before its copy)
    assert arr[0] == 1
    assert launchconfig.current_launch_config() is None
    with pytest.raises(RuntimeError, match="No launch config"):
        launchconfig.ensure_current_launch_config()
    seen.clear()
    f[2, (3, 2), 0, 16](arr)   # compiled: no compile, nothing seen
    assert seen == {}


def test_capture_compile_config_records_and_restores(device):
    @cuda.jit
    def f(x):
        x[0] = 2

    original = f._compile_for_args
    with launchconfig.capture_compile_config(f) as captured:
        f[1, 4](np.zeros(1, np.int32))
    assert captured["config"].blockdim == (4, 1, 1)
    assert "_compile_for_args" not in vars(f)
    assert f._compile_for_args.__func__ is original.__func__
    with pytest.raises(TypeError):
        with launchconfig.capture_compile_config(None):
            pass


def test_each_thread_sees_its_own_launch(device):
    @cuda.jit
    def f(x):
        x[0] = 3

    barrier = threading.Barrier(2)
    seen, errors = [], []
    compile_for_args = f._compile_for_args

    def waiting(*args, **kws):
        cfg = launchconfig.ensure_current_launch_config()
        barrier.wait(timeout=30)  # both threads compile at once
        seen.append(id(cfg.args[0]))
        return compile_for_args(*args, **kws)

    f._compile_for_args = waiting
    arrays = [np.zeros(1, np.int32), np.zeros(1, np.int32)]

    def launch(a):
        try:
            f[1, 1](a)
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=launch, args=(a,)) for a in arrays]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert sorted(seen) == sorted(map(id, arrays))
    assert [a[0] for a in arrays] == [3, 3]


def test_a_sensitive_kernel_compiles_again_for_another_configuration(device):
    @cuda.jit
    def k(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = COMPILED_BLOCK

    out = cuda.device_array(16, np.int32)
    k[1, 4](out)
    assert (out.copy_to_host()[:4] == 4).all()
    assert all(r.launch_config_sensitive for r in k.overloads.values())
    k[2, 8](out)
    assert (out.copy_to_host() == 8).all()
    k[4, 4](out)          # another grid: another compile, for block width 4 again
    assert (out.copy_to_host() == 4).all()
    k[2, 8](out)          # the 8-wide code, kept
    assert (out.copy_to_host() == 8).all()
    cfg = k[1, 4]
    cfg(out)
    cfg(out)
    assert (out.copy_to_host()[:4] == 4).all()


def test_kernels_that_do_not_mark_are_not_recompiled(device):
    @cuda.jit
    def k(out):
        if cuda.grid(1) == 0:
            out[0] += cuda.blockDim.x

    out = cuda.to_device(np.zeros(1, np.int32))
    for block in (1, 2, 4):
        k[1, block](out)
    assert out.copy_to_host()[0] == 1 + 2 + 4
    assert k.stats["neutral_compiles"] == 1
    assert not any(r.launch_config_sensitive for r in k.overloads.values())


def test_pre_launch_callbacks_run_before_each_launch_of_their_configuration(device):
    import pickle

    @cuda.jit
    def bump(a):
        i = cuda.grid(1)
        if i < a.size:
            a[i] += 1

    a = cuda.to_device(np.zeros(8, np.int64))
    seen = []

    def callback(kernel, config):
        # before the launch: the array still holds what the previous launch left
        seen.append((kernel, config.griddim, config.blockdim, int(a.copy_to_host()[0])))

    cfg = bump[1, 8]
    bump[1, 8](a)  # warm: the shim's fast path exists for these arguments
    cfg.pre_launch_callbacks.append(callback)
    cfg(a)
    cfg(a)
    assert [s[3] for s in seen] == [1, 2] and all(s[0] is bump for s in seen)
    assert seen[0][1] == (1, 1, 1) and seen[0][2] == (8, 1, 1)
    # the callbacks are this configuration's: bump[1, 8] is a new one without them
    other = bump[1, 8]
    assert other is not cfg and other.pre_launch_callbacks == []
    other(a)
    assert len(seen) == 2 and a.copy_to_host().tolist() == [4] * 8
    with pytest.raises(pickle.PicklingError, match="pre-launch callbacks"):
        pickle.dumps(cfg)
    pickle.loads(pickle.dumps(bump[1, 8]))  # one without callbacks still pickles
