"""Bad input: each case gets a clear error (the kernel, the value, the limit, or the
user's source line), never a crash, a hang or silently lost work.

Cases where a crash or a hang is possible (a huge grid, oversize memory, a
construct that reaches LLVM) run in child processes with a timeout, grouped so
that a whole group costs one interpreter start: the child runs every case of
its group in turn and prints one JSON line per case.  Ctrl-C has a child of its
own, which is sent SIGINT while it waits for a long kernel.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import numba_gpux as gpux
from gpux_testing import testable_here as _testable_here

ROOT = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve()


def _opencl_here():
    devs = [d for d in gpux.devices() if d.target_name == "opencl" and _testable_here(d)]
    if not devs:
        pytest.skip("no SPIR-V capable OpenCL device (pip install 'numba-gpux[cpu]')")
    return devs[0]


_PRELUDE = '''
import json, sys, traceback
import numpy as np
import numba_gpux as gpux
from numba_gpux.memory import Out
gpux.select_device(sys.argv[1])
CASES = {}
def case(fn):
    CASES[fn.__name__] = fn
    return fn
'''

_RUNNER = '''
for name, fn in CASES.items():
    try:
        fn()
        out = {"case": name, "error": None}
    except BaseException as e:
        out = {"case": name, "error": type(e).__name__, "message": str(e),
               "mro": [c.__name__ for c in type(e).__mro__]}
    print("CASE " + json.dumps(out), flush=True)
'''

# ---------------------------------------------------------------- case groups
# Each group is the source of one child process; each case is a function in it.
# The line that an error must point at carries a "# <- here" comment.

LIMITS = '''
@gpux.jit
def k(a):
    a[0] = 1

a = gpux.device_array(4, np.float32)

@case
def grid_2_40():
    k[2**40, 1](a)

@case
def grid_2_31_cubed():
    k[(2**31, 2**31, 2**31), (1, 1, 1)](a)

@case
def block_too_big():
    k[1, 10**6](a)

@case
def dynamic_shared_too_big():
    k[1, 1, 0, 10**9](a)

@gpux.jit
def big_shared(a):
    s = gpux.shared.array(20_000_000, np.float32)   # <- here (80 MB)
    s[0] = a[0]
    a[0] = s[0]

@case
def static_shared_too_big():
    big_shared[1, 1](a)

@gpux.jit
def big_local(a):
    t = gpux.local.array(100_000_000, np.float32)   # <- here
    t[0] = a[0]
    a[0] = t[0]

@case
def local_too_big():
    big_local[1, 1](a)

@case
def alloc_too_big():
    gpux.device_array(2**50, np.uint8)

@case
def still_works():
    k[1, 1](a)
    assert a.copy_to_host()[0] == 1
'''

USER_ERRORS = '''
a = gpux.device_array(4, np.float32)

@gpux.jit
def uses_list(a):
    x = [1, 2, 3]   # <- here
    a[0] = x[0]

@case
def list_literal():
    uses_list[1, 1](a)


@gpux.jit
def generator(a):
    yield 1   # <- here

@case
def generator_function():
    generator[1, 1](a)

@gpux.jit
def returns(a):
    a[0] = 1
    return 5   # <- here

@case
def returned_value():
    returns[1, 1](a)

@gpux.jit
def undefined(a):
    a[0] = no_such_name_anywhere   # <- here

@case
def undefined_name():
    undefined[1, 1](a)

@gpux.jit
def uses_try(a):
    try:   # <- here
        a[0] = 1
    except Exception:
        a[0] = 2

@case
def try_block():
    uses_try[1, 1](a)

@gpux.jit("void(float32[::1])")
def eager(a):
    a[0] = 1

@case
def eager_signature_mismatch():
    eager[1, 1](gpux.device_array(4, np.float64))

@case
def eager_signature_match():
    eager[1, 1](a)
    assert a.copy_to_host()[0] == 1

@gpux.jit
def writes(a):
    a[0] = 7   # <- here

@case
def read_only_output():
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    writes[1, 1](ro)

@case
def read_only_out_wrapper():
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    writes[1, 1](Out(ro))

@gpux.jit
def reads(a, b):
    b[0] = a[0] + 1

@case
def read_only_input_is_fine():
    ro = np.ones(4, np.float32)
    ro.flags.writeable = False
    res = np.zeros(4, np.float32)
    reads[1, 1](ro, res)
    assert res[0] == 2

@gpux.jit
def scaled(a, factors):
    a[0] = a[0] * factors[0]

@case
def dict_argument():
    scaled[1, 1](a, {0: 2.0})   # <- here

@case
def tuple_holding_a_dict_argument():
    scaled[1, 1](a, (2.0, {"x": 1}))   # <- here

@gpux.jit
def builds_dict(a):
    d = {"x": 1.0, "y": 2.0}   # <- here
    a[0] = d["x"]

@case
def dict_in_kernel():
    builds_dict[1, 1](a)

@gpux.jit
def builds_dict_by_call(a):
    d = dict(x=1.0)   # <- here
    a[0] = d["x"]

@case
def dict_call_in_kernel():
    builds_dict_by_call[1, 1](a)

SETTINGS = {"gain": 2.0}

@gpux.jit
def reads_global_dict(a):
    a[0] = SETTINGS["gain"]   # <- here

@case
def global_dict_in_kernel():
    reads_global_dict[1, 1](a)
'''

GROUPS = {"limits": LIMITS, "user_errors": USER_ERRORS}


def _here_line(group: str, marker_in: str) -> str:
    """The source line (stripped) of the case's marked line, as errors quote it."""
    for ln in GROUPS[group].splitlines():
        if "# <- here" in ln and marker_in in ln:
            return ln.strip()
    raise AssertionError(marker_in)


_results: dict = {}


def _group(name: str, device, tmp_path_factory) -> dict:
    if name not in _results:
        d = tmp_path_factory.mktemp(name)
        script = d / f"bad_{name}.py"
        script.write_text(_PRELUDE + textwrap.dedent(GROUPS[name]) + _RUNNER)
        env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(d / "cache"))
        res = subprocess.run([sys.executable, str(script), device.spec], capture_output=True,
                             text=True, env=env, cwd=str(ROOT), timeout=600)
        got = {}
        for line in res.stdout.splitlines():
            if line.startswith("CASE "):
                c = json.loads(line[5:])
                got[c["case"]] = c
        assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
        _results[name] = (got, str(script))
    return _results[name]


def _err(name, case, device, tmp_path_factory) -> tuple[dict, str]:
    got, script = _group(name, device, tmp_path_factory)
    assert case in got, f"case {case} did not report (the child stopped before it)"
    return got[case], script


@pytest.fixture(scope="module")
def ocl():
    return _opencl_here()


LIMIT_CASES = {
    # case: (error class, words the message must contain)
    "grid_2_40": ("LaunchError", ["kernel k", "1099511627776", "2147483647"]),
    "grid_2_31_cubed": ("LaunchError", ["kernel k", "2147483648", "2147483647"]),
    "block_too_big": ("LaunchError", ["kernel k", "1000000", "threads per block"]),
    "dynamic_shared_too_big": ("LaunchError", ["kernel k", "1000000000", "shared memory"]),
    "static_shared_too_big": ("LaunchError", ["kernel big_shared", "80000000",
                                              "shared memory"]),
    "alloc_too_big": ("AllocationTooLargeError", [str(2**50), "largest single allocation"]),
}


@pytest.mark.parametrize("case", sorted(LIMIT_CASES))
def test_limits_are_checked_before_anything_runs(case, ocl, tmp_path_factory):
    err, _ = _err("limits", case, ocl, tmp_path_factory)
    cls, words = LIMIT_CASES[case]
    assert err["error"] == cls, err
    for w in words:
        assert w in err["message"], (w, err["message"])
    if cls == "LaunchError":
        limit = {"block_too_big": ocl.limits["max_threads_per_block"],
                 "dynamic_shared_too_big": ocl.limits["max_shared_bytes"],
                 "static_shared_too_big": ocl.limits["max_shared_bytes"]}.get(case)
        if limit is not None:
            assert str(limit) in err["message"]
    else:
        assert str(ocl.limits["max_alloc_bytes"]) in err["message"]
        assert "MemoryError" in err["mro"]


def test_shared_arrays_too_large_name_their_declaration(ocl, tmp_path_factory):
    err, script = _err("limits", "static_shared_too_big", ocl, tmp_path_factory)
    msg = err["message"]
    assert "its shared array is declared at:" in msg
    assert f'File "{script}", line' in msg
    assert _here_line("limits", "shared.array(20_000_000") in msg
    assert "(80000000 bytes)" in msg


def test_a_huge_local_array_is_a_typing_error_with_the_line(ocl, tmp_path_factory):
    err, script = _err("limits", "local_too_big", ocl, tmp_path_factory)
    assert err["error"] == "TypingError", err
    assert "400000000 bytes" in err["message"] and "524288" in err["message"]
    assert _here_line("limits", "local.array(100_000_000") in err["message"]


def test_the_process_still_works_after_the_bad_launches(ocl, tmp_path_factory):
    err, _ = _err("limits", "still_works", ocl, tmp_path_factory)
    assert err["error"] is None, err


USER_CASES = {
    # case: (error class, words, marked line or None)
    "list_literal": ("UnsupportedError", ["uses_list", "lists are not supported"],
                     "x = [1, 2, 3]"),
    "generator_function": ("UnsupportedError", ["generator", "cannot be a kernel"],
                           "yield 1"),
    "returned_value": ("UnsupportedError", ["returns", "must not return a value"],
                       "return 5"),
    "undefined_name": ("UndefinedNameError", ["NameError: name 'no_such_name_anywhere' is "
                                              "not defined"],
                       "no_such_name_anywhere"),
    "try_block": ("UnsupportedError", ["try/except"], "try:"),
    "eager_signature_mismatch": ("TypeError", ["No matching definition",
                                               "array(float64, 1d, C)",
                                               "array(float32, 1d, C)"], None),
    "read_only_output": ("LaunchError", ["kernel writes", "read-only", "argument 0 (a)"],
                         "a[0] = 7"),
    "read_only_out_wrapper": ("LaunchError", ["kernel writes", "read-only", "as an output"],
                              None),
    "dict_argument": ("LaunchTypeError", ["kernel scaled: argument 1 (factors) is a dict",
                                          "separate arguments"],
                      "scaled[1, 1](a, {0: 2.0})"),
    "tuple_holding_a_dict_argument": ("LaunchTypeError", [
        "kernel scaled: argument 1 (factors) is a tuple (its item 1 is a dict)"],
        'scaled[1, 1](a, (2.0, {"x": 1}))'),
    "dict_in_kernel": ("UnsupportedError", ["builds_dict: a dict {...} is made here",
                                            "no dicts or sets"], 'd = {"x": 1.0'),
    "dict_call_in_kernel": ("UnsupportedError", ["builds_dict_by_call: dict() is made here"],
                            "d = dict(x=1.0)"),
    "global_dict_in_kernel": ("UnsupportedError", [
        "reads_global_dict: the dict SETTINGS (a global variable) is read here"],
        'a[0] = SETTINGS["gain"]'),
}


@pytest.mark.parametrize("case", sorted(USER_CASES))
def test_user_mistakes_get_clear_errors(case, ocl, tmp_path_factory):
    err, script = _err("user_errors", case, ocl, tmp_path_factory)
    cls, words, line = USER_CASES[case]
    assert err["error"] == cls, err
    assert "InternalCompilerError" not in err["mro"]
    for w in words:
        assert w in err["message"], (w, err["message"])
    if line is not None:
        assert _here_line("user_errors", line) in err["message"], err["message"]
        assert os.path.basename(script) in err["message"]


@pytest.mark.parametrize("case", ["eager_signature_match", "read_only_input_is_fine"])
def test_good_inputs_next_to_the_bad_ones_still_work(case, ocl, tmp_path_factory):
    err, _ = _err("user_errors", case, ocl, tmp_path_factory)
    assert err["error"] is None, err


CTRL_C = '''
import sys, time
import numpy as np
import numba_gpux as gpux
gpux.select_device(sys.argv[1])

@gpux.jit
def spin(a, n):
    i = gpux.grid(1)
    acc = 0.0
    for k in range(n):
        acc = acc * 0.999999 + k
    a[i] = acc

a = gpux.device_array(64, np.float64)
spin[1, 64](a, 10)
a.copy_to_host()
rt = gpux.default_device().runtime
print("READY", flush=True)
spin[1, 64](a, int(sys.argv[2]))    # some seconds of work
after = rt.record_event()     # completes when the kernel has
try:
    gpux.synchronize()
    print("RETURNED", flush=True)
except KeyboardInterrupt:
    # whether the kernel had finished when Python got the interrupt
    print("INTERRUPTED", "kernel-done" if rt.event_query(after) else "kernel-running",
          flush=True)
'''


#: loop trips of the Ctrl-C kernel that take some seconds on each kind of device
SPIN_TRIPS = {"opencl": 400_000_000, "cuda": 3_000_000_000}


@pytest.fixture(params=sorted(SPIN_TRIPS))
def spin_device(request):
    if request.param == "opencl":
        return _opencl_here()
    devs = [d for d in gpux.devices() if d.target_name == request.param]
    if not devs:
        pytest.skip(f"no {request.param} device here")
    return devs[0]


def test_ctrl_c_during_a_wait_raises_at_once(spin_device, tmp_path):
    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C)
    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.Popen([sys.executable, str(script), spin_device.spec,
                          str(SPIN_TRIPS[spin_device.target_name])], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env, cwd=str(ROOT))
    try:
        assert p.stdout.readline().strip() == "READY"
        time.sleep(1.0)
        p.send_signal(signal.SIGINT)
        line = p.stdout.readline().split()
    finally:
        try:
            out, err = p.communicate(timeout=300)  # exit waits for the abandoned kernel
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
    assert line and line[0] == "INTERRUPTED", (line, err[-3000:])
    assert line[1] == "kernel-running", line  # raised during the wait, not after it
    # exit waited for the abandoned command (and, on OpenCL, for the completion
    # callback of the event the script recorded) instead of aborting the process
    assert p.returncode == 0, err[-3000:]
    assert "interrupted wait left running" in err


def test_exit_soon_after_an_event_with_a_completion_callback_is_clean(ocl, tmp_path):
    # the event the script records on the default queue has a completion callback
    # (pyopencl runs it on a thread of its own); exiting while that thread waits for
    # the GIL used to abort the process in about half of the runs
    script = tmp_path / "exit_after_event.py"
    script.write_text(CTRL_C)
    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(tmp_path / "cache"))
    res = subprocess.run([sys.executable, str(script), ocl.spec, "20000000"],
                         capture_output=True, text=True, env=env, cwd=str(ROOT), timeout=300)
    assert res.stdout.split() == ["READY", "RETURNED"], (res.stdout, res.stderr[-3000:])
    assert res.returncode == 0, res.stderr[-3000:]
