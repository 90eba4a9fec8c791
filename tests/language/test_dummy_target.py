"""The intrinsic contract, tested: a dummy target whose overlay registry defines
nothing shows which kernel-language features need a target definition and how
they fail without one (a ValidationError naming the missing ``__gpux_*``
intrinsic and the target), and which need none (plain LLVM IR every back end
lowers).  No device is needed: the pipeline stops before emission."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux.interface import Artifact, Target
from numba_gpux.language.intrinsics import INTRINSICS
from numba_gpux.targets.opencl.target import DATA_LAYOUT, SPIRV_ADDRSPACES, TRIPLE


@dataclass(frozen=True)
class DummyTarget(Target):
    """SPIR-V code generation data, but an overlay stack with no definitions."""

    def emit(self, module, kernels, opt):
        return Artifact("llvm", None, str(module), kernels)


DUMMY = DummyTarget(name="dummy-contract", families=(), triple=TRIPLE, data_layout=DATA_LAYOUT,
                    addrspaces=SPIRV_ADDRSPACES, kernel_cc="spir_kernel")


def k_shared_static(a):
    s = gpux.shared.array(4, np.float32)
    s[0] = a[0]
    a[1] = s[0]


def k_local(a):
    s = gpux.local.array(4, np.float32)
    s[0] = a[0]
    a[1] = s[0]


CONST = np.arange(3, dtype=np.float32)


def k_const(a):
    a[0] = gpux.const.array_like(CONST)[2]


def k_popc_clz_ffs_fma(a):
    a[0] = gpux.popc(np.int32(7)) + gpux.clz(np.int32(7)) + gpux.ffs(np.int32(8)) \
        + gpux.fma(a[1], a[2], a[3])


def k_select_round(a):
    a[0] = gpux.select(a[1] > 0, a[1], round(a[2]))


def k_shared_dynamic(a):
    s = gpux.shared.array(0, np.float32)
    a[0] = s.size


def k_barrier(a):
    gpux.barrier()


def k_barrier_count(a):
    a[0] = gpux.barrier_count(a[1] > 0)


def k_fence(a):
    gpux.fence("system")


def k_atomic_add(a):
    gpux.atomic.add(a, 0, 1.0)


def k_atomic_cas(a):
    gpux.atomic.cas(a, 0, 1.0, 2.0)


def k_brev(a):
    a[0] = gpux.brev(np.uint32(a[1]))


def k_cbrt(a):
    a[0] = gpux.cbrt(a[1])


def k_thread_idx(a):
    a[gpux.thread_idx.x] = 0


NEEDS_NOTHING = [k_shared_static, k_local, k_const, k_popc_clz_ffs_fma, k_select_round]
NEEDS = {
    k_shared_dynamic: {"__gpux_dynamic_shared", "__gpux_dynamic_shared_bytes"},
    k_barrier: {"__gpux_barrier"},
    k_barrier_count: {"__gpux_barrier_count"},
    k_fence: {"__gpux_fence_system"},
    k_atomic_add: {"__gpux_atomic_add_f32"},
    k_atomic_cas: {"__gpux_atomic_cas_f32"},
    k_brev: {"__gpux_brev_i32"},
    k_cbrt: {"__gpux_cbrt_f32"},
    k_thread_idx: {"__gpux_thread_idx"},
}
SIG = "void(float32[::1])"


@pytest.mark.parametrize("fn", NEEDS_NOTHING, ids=lambda f: f.__name__)
def test_features_that_need_no_definition(fn):
    art = gpux.compile(fn, SIG, target=DUMMY)
    assert "__gpux_" not in art.text.replace("__gpux_shared", "").replace("__gpux_const", "")


@pytest.mark.parametrize("fn", list(NEEDS), ids=lambda f: f.__name__)
def test_missing_definitions_are_named(fn):
    with pytest.raises(gpux.ValidationError) as info:
        gpux.compile(fn, SIG, target=DUMMY)
    msg = str(info.value)
    assert "dummy-contract" in msg
    for name in NEEDS[fn]:
        assert name in msg
        assert "does not define" in msg
        assert name in INTRINSICS, f"{name} is not in the intrinsic table"
    # every problem is reported together, one per missing intrinsic
    assert len([p for p in info.value.problems if "__gpux_" in p]) == len(NEEDS[fn])


def test_every_intrinsic_has_a_contract_doc():
    import numba_gpux.language.atomics  # noqa: F401  (register their tables)
    import numba_gpux.language.bits  # noqa: F401
    import numba_gpux.language.memory  # noqa: F401

    for name in ("__gpux_dynamic_shared", "__gpux_barrier_and", "__gpux_fence_block",
                 "__gpux_atomic_inc_u64", "__gpux_atomic_nanmax_f64", "__gpux_brev_i64"):
        assert len(INTRINSICS[name].doc) > 40, name


def test_opencl_and_cuda_define_every_memory_atomic_bit_intrinsic():
    """The two LLVM targets define every intrinsic of this part of the language
    (OpenCL provides dynamic shared memory by its finishing step instead)."""
    from numba_gpux.language.atomics import ATOMIC_INTRINSICS
    from numba_gpux.devices import resolve_target
    from numba_gpux.language.memory import DYNAMIC_SHARED_INTRINSICS

    names = set(ATOMIC_INTRINSICS) | {"__gpux_brev_i32", "__gpux_brev_i64",
                                      "__gpux_barrier_count", "__gpux_barrier_and",
                                      "__gpux_barrier_or", "__gpux_fence_block",
                                      "__gpux_fence_device", "__gpux_fence_system"}
    for tname, extra in (("opencl", set()), ("cuda", set(DYNAMIC_SHARED_INTRINSICS))):
        tgt = resolve_target(tname)
        stack = tgt.overlays()
        missing = sorted(n for n in names | extra if not stack.provides(n))
        assert not missing, f"{tname} lacks {missing}"
