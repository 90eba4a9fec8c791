"""Facts about integer kernel arguments (``Target.int_argument_facts``): a launch whose
Python ``int`` arguments are all non-negative runs code whose entry point says so
(``range(i64 0, 2**63)`` on those parameters), so that LLVM drops Numba's
negative-index wraparound on indices built from them; a launch with a negative one
runs code without the fact."""

import warnings

import llvmlite.binding as ll
import numpy as np
import pytest
from numba.core import types

import numba_gpux as gpux
from numba_gpux import irlex, irtext
from numba_gpux.abi import LaunchFacts
from numba_gpux.devices import resolve_target


@gpux.jit
def shifted(x, out, m):
    j = gpux.grid(1)
    if j < out.size:
        out[j] = x[j + m - 1]  # m == 0 reads x[-1] at j == 0: the last element


SHIFTED = "void(float64[::1], float64[::1], int64)"


def _opcodes(ir_text: str, fname: str) -> list[str]:
    fn = ll.parse_assembly(ir_text).get_function(fname)
    return [ins.opcode for b in fn.blocks for ins in b.instructions]


def test_param_ranges_names_parameters_by_position():
    text = ('define void @"k"(ptr addrspace(1) %.1, { i64, i64 } %.2, i64 %.3, '
            'i64 %".4") {\nentry:\n  ret void\n}\n')
    out = irtext.param_ranges(text, "k", {2: (0, 2 ** 63), 3: (1, 10)})
    mod = ll.parse_assembly(out)
    mod.verify()
    header = irlex.code(irlex.line_tokens(out.split("\n")[0]))
    at = header.index("%.3")
    assert header[at - 8:at] == ["i64", "range", "(", "i64", "0", ",",
                                 "-9223372036854775808", ")"], header
    at = header.index('%".4"')
    assert header[at - 8:at] == ["i64", "range", "(", "i64", "1", ",", "10", ")"], header
    with pytest.raises(ValueError, match="not an i64"):
        irtext.param_ranges(text, "k", {1: (0, 1)})


def test_the_fact_drops_the_wraparound_select():
    """``x[j + m]`` with m >= 0 known (and j >= 0 from the index ranges) is never
    negative: the compiled code has no ``select`` of the wraparound; without the fact
    it has."""
    tgt = resolve_target("opencl")

    @gpux.jit
    def plain(x, out, m):
        j = gpux.grid(1)
        if j < out.size:
            out[j] = x[j + m]

    sig = (types.float64[::1], types.float64[::1], types.int64)
    general = plain.code_for(sig, tgt)
    known = plain.code_for(sig, tgt, LaunchFacts(nonneg=(2,)))
    name = general.kernels[0]
    assert "select" in _opcodes(general.llvm_ir, name)
    assert "select" not in _opcodes(known.llvm_ir, name), known.llvm_ir
    assert plain.code_for(sig, tgt, LaunchFacts(nonneg=(2,))) is known  # kept, not compiled again


def test_resolve_target_states_the_switch():
    assert resolve_target("opencl").int_argument_facts is True
    assert resolve_target("cuda").int_argument_facts is False


def test_launches_pick_code_by_the_signs_of_int_arguments(opencl_device):
    x = np.arange(16.0)
    dx, out = gpux.to_device(x), gpux.to_device(np.zeros(8))
    k = gpux.jit(shifted.py_func)
    launch = k[1, 8]
    for m in (1, 0, 3, -2, 2, -1, np.int64(-4), 5, np.int64(2), -8, 0):
        launch(dx, out, m)
        want = x[np.arange(8) + int(m) - 1]  # NumPy wraps negative indices the same way
        np.testing.assert_array_equal(out.copy_to_host(), want, err_msg=f"m={m}")
    # one compile for the launches with m >= 0, one for those with m < 0
    assert k.stats["target_compiles"] == 2
    k2 = gpux.jit(shifted.py_func)
    for m in (1, 0, 7):
        k2[1, 8](dx, out, m)
        np.testing.assert_array_equal(out.copy_to_host(), x[np.arange(8) + m - 1])
    assert k2.stats["target_compiles"] == 1


def test_a_first_negative_launch_then_non_negative_ones(opencl_device):
    x = np.arange(16.0)
    dx, out = gpux.to_device(x), gpux.to_device(np.zeros(8))
    k = gpux.jit(shifted.py_func)
    launch = k[1, 8]
    for m in (-3, 4, 0, -3, 9):
        launch(dx, out, m)
        np.testing.assert_array_equal(out.copy_to_host(), x[np.arange(8) + m - 1],
                                      err_msg=f"m={m}")
    assert k.stats["target_compiles"] == 2


def test_host_array_launches_pick_by_sign_too(opencl_device):
    """A launch with NumPy arrays (copied to the device and back) after the code that
    knows m >= 0 exists: m < 0 runs the other code."""
    x = np.arange(16.0)
    k = gpux.jit(shifted.py_func)
    dx, dout = gpux.to_device(x), gpux.to_device(np.zeros(8))
    k[1, 8](dx, dout, 3)
    for m in (-5, 2, -1):
        out = np.zeros(8)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gpux.NumpyArgumentWarning)
            k[1, 8](x, out, m)
        np.testing.assert_array_equal(out, x[np.arange(8) + m - 1], err_msg=f"m={m}")


CACHED = """
import json, sys
import numpy as np
import numba_gpux as gpux
from numba_gpux import cache, context

@gpux.jit(cache=True)
def k(x, out, m):
    j = gpux.grid(1)
    if j < out.size:
        out[j] = x[j + m - 1]

x = gpux.to_device(np.arange(16.0))
out = gpux.device_array(8)
k[1, 8](x, out, int(sys.argv[1]))
print(json.dumps({"out": out.copy_to_host().tolist(), "stats": cache.stats,
                  "typed": k.stats["neutral_compiles"], "context_built": context._ready}))
"""


def test_the_disk_cache_keeps_each_sign_apart(tmp_path, opencl_device):
    """``cache=True``: the code for m >= 0 and the code for m < 0 are found on disk by
    keys of their own, without typing, and each gives its own launches' results."""
    import json
    import os
    import subprocess
    import sys

    (tmp_path / "prog.py").write_text(CACHED)
    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(tmp_path / "cache"),
               NUMBA_GPUX_CACHE_KEY_FILE=str(tmp_path / "keys" / "cache.key"),
               PYTHONDONTWRITEBYTECODE="1")

    def run(m):
        p = subprocess.run([sys.executable, str(tmp_path / "prog.py"), str(m)], env=env,
                           capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
        assert p.returncode == 0, p.stderr[-3000:]
        r = json.loads(p.stdout.strip().splitlines()[-1])
        assert r["out"] == np.arange(16.0)[np.arange(8) + m - 1].tolist(), (m, r)
        return r

    def hit(r):
        return r["stats"]["index_hits"] == 1 and r["typed"] == 0 and not r["context_built"]

    assert not hit(run(2))
    assert hit(run(3))
    assert not hit(run(-2))  # the code without the fact: a key of its own
    assert hit(run(-1))
    assert hit(run(0))
