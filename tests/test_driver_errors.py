"""A program the OpenCL driver will not build is an error that carries the driver's
build log, and SPIR-V cut short never reaches the driver (Intel's CPU driver ends the
process on it).  Real SPIR-V from LLVM's back end on the real OpenCL CPU device."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import numba_gpux as gpux
from numba_gpux.interface import Artifact

ROOT = Path(__file__).resolve().parent.parent

# a kernel that calls a function defined nowhere: LLVM emits it (an import), and the
# driver's build fails at link time, naming the symbol in its log
UNRESOLVED = """
target triple = "spirv64-unknown-unknown"
declare spir_func void @no_such_function(ptr addrspace(1))
define spir_kernel void @calls_nothing(ptr addrspace(1) %p) {
  call spir_func void @no_such_function(ptr addrspace(1) %p)
  ret void
}
"""

FINE = UNRESOLVED.replace("  call spir_func void @no_such_function(ptr addrspace(1) %p)\n",
                          "  store i32 7, ptr addrspace(1) %p\n")


def _spirv(text: str) -> bytes:
    # a fresh process's back end: this one's, after the modules a test session emits,
    # can define a result id twice (targets/opencl/spirv_ids.py), which a driver may
    # crash on
    from numba_gpux.devices import resolve_target
    from numba_gpux.machines import emit_in_fresh_process

    return emit_in_fresh_process(resolve_target("opencl"), text, 2)


def test_a_failed_build_raises_with_the_drivers_log(opencl_device):
    art = Artifact("spirv", _spirv(UNRESOLVED), "(disassembly)", ("calls_nothing",))
    with pytest.raises(gpux.InternalCompilerError) as ei:
        opencl_device.runtime.load(art)
    msg = str(ei.value)
    assert "could not build the program of kernel calls_nothing" in msg
    assert opencl_device.runtime.cl_device.name in msg
    log = msg.split("--- driver build log ---\n", 1)[1].split("\n--- end of log ---", 1)[0]
    assert "no_such_function" in log  # the driver's own words, not ours
    assert "(disassembly)" in msg


def test_the_same_module_without_the_call_builds(opencl_device):
    # the failure above is the unresolved call, not the way the module is made
    prg = opencl_device.runtime.load(Artifact("spirv", _spirv(FINE), None, ("calls_nothing",)))
    assert opencl_device.runtime.kernel(prg, "calls_nothing") is not None


def test_spirv_word_structure_checks():
    from numba_gpux.targets.opencl.runtime import spirv_structure_problem

    good = _spirv(FINE)
    assert spirv_structure_problem(good) is None
    assert "whole number of 32-bit words" in spirv_structure_problem(good[:-2])
    assert "past the end of the module" in spirv_structure_problem(good[:len(good) // 2 & ~3])
    assert "magic" in spirv_structure_problem(b"\0" * 40)
    zero = good[:20] + b"\0\0\0\0" + good[24:]
    assert "word count of 0" in spirv_structure_problem(zero)


_TRUNCATED_CHILD = """
import sys
import numba_gpux as gpux
from numba_gpux.interface import Artifact
dev = gpux.select_device(sys.argv[1])
data = sys.stdin.buffer.read()
try:
    gpux.default_device().runtime.load(Artifact("spirv", data, None, ("calls_nothing",)))
    print("LOADED")
except gpux.InternalCompilerError as e:
    print("ERROR", str(e).splitlines()[0])
"""


def test_truncated_spirv_is_refused_before_the_driver(opencl_device):
    # in a child: handed to Intel's driver, this module ends the process (status 15)
    data = _spirv(FINE)
    cut = data[:len(data) // 2 & ~3]
    res = subprocess.run([sys.executable, "-c", _TRUNCATED_CHILD, opencl_device.spec],
                         input=cut, capture_output=True, timeout=300, cwd=str(ROOT))
    out = res.stdout.decode()
    assert res.returncode == 0, (out + res.stderr.decode())[-2000:]
    assert "ERROR" in out and "SPIR-V of kernel calls_nothing is malformed" in out
    assert "not handed to the OpenCL driver" in out


BAD_PTX = """
.version 7.0
.target sm_50
.address_size 64

.visible .entry broken_ptx(.param .u64 p)
{
    no_such_instruction.u32 %r1;
    ret;
}
"""


def test_ptx_the_cuda_driver_rejects_raises_with_its_jit_log(cuda_device):
    with pytest.raises(gpux.InternalCompilerError) as ei:
        cuda_device.runtime.load(Artifact("ptx", None, BAD_PTX, ("broken_ptx",)))
    msg = str(ei.value)
    assert "the CUDA driver rejected the module of broken_ptx" in msg
    log = msg.split("--- driver JIT log ---\n", 1)[1].split("\n--- end of log ---", 1)[0]
    assert "no_such_instruction" in log or "error" in log.lower()
