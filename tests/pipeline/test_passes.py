"""LLVM pass managers are freed after their run (numba_gpux/passes.py): llvmlite's own
classes never free them, which cost every compile tens of KiB for good."""

from __future__ import annotations

import llvmlite.binding as ll
import numpy as np
import pytest
from llvmlite.binding import newpassmanagers

import numba_gpux as gpux
from numba_gpux.passes import free_pass_manager, run_passes

IR = """
define internal i32 @unused(i32 %x) {
  ret i32 %x
}
define i32 @kept(i32 %x) {
  %y = add i32 %x, 0
  ret i32 %y
}
"""


def _pass_builder():
    return ll.create_pass_builder(None, ll.create_pipeline_tuning_options(speed_level=0))


def test_run_passes_runs_the_pipeline_then_frees_it():
    mod = ll.parse_assembly(IR)
    mpm = ll.create_new_module_pass_manager()
    mpm.add_global_dead_code_eliminate_pass()
    run_passes(mpm, mod, _pass_builder())
    assert [f.name for f in mod.functions] == ["kept"]  # the pipeline ran
    assert mpm.closed
    free_pass_manager(mpm)  # a second free is harmless
    assert mpm.closed


@pytest.fixture
def made_pass_managers(monkeypatch):
    """Every module pass manager llvmlite makes while the test runs (held, so that the
    test can look at each one afterwards)."""
    made = []
    init = newpassmanagers.ModulePassManager.__init__

    def record(self, *a, **k):
        init(self, *a, **k)
        made.append(self)

    monkeypatch.setattr(newpassmanagers.ModulePassManager, "__init__", record)
    return made


def test_compiling_a_kernel_frees_every_pass_manager(made_pass_managers, opencl_device):
    c = 7301.625  # a constant no other test compiles: new code, so a real compile

    @gpux.jit
    def k(a):
        a[0] = c

    out = gpux.device_array(1, np.float64)
    k[1, 1](out)
    assert out.copy_to_host()[0] == c
    # the neutral clean-up and the target's O3 pipeline at least
    assert len(made_pass_managers) >= 2
    assert all(pm.closed for pm in made_pass_managers), \
        [pm for pm in made_pass_managers if not pm.closed]
