"""What a target's first use and every per-target tail no longer pay for: the
entry-point lookup once per process, target descriptions whose dataclasses make no
methods of their own, one kept target machine per target (emission too, where the back end
allows it), the kernel's body inlined once in the neutral module, and overlay
digests hashed when read.  Each test checks the behaviour that makes the cost go."""

from __future__ import annotations

import dataclasses
import importlib
import re

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import machines, overlays
from numba_gpux.devices import resolve_target
from numba_gpux.interface import Target, TargetOptions

devices = importlib.import_module("numba_gpux.devices")  # the module, not gpux.devices()
SAXPY = "void(float32, float32[::1], float32[::1], float32[::1])"


@gpux.jit
def saxpy(a, x, y, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


def test_own_entry_points_are_read_once_per_process(monkeypatch):
    calls = []
    real = devices._own_distribution

    def counting():
        calls.append(1)
        return real()

    monkeypatch.setattr(devices, "_own_distribution", counting)
    monkeypatch.setattr(devices, "_own_eps", None)
    monkeypatch.setattr(devices, "_builtin", {})
    monkeypatch.setattr(devices, "_entries", None)
    first = devices.get_target_entry("opencl")
    second = devices.get_target_entry("cuda")
    assert (first.name, second.name) == ("opencl", "cuda")
    assert calls == [1]  # not once per target


def _installed():
    try:
        return devices.metadata.distribution("numba-gpux")
    except devices.metadata.PackageNotFoundError:
        pytest.skip("numba-gpux is not installed (run from a source tree)")


def test_own_distribution_is_found_by_name_without_listing_sys_path(monkeypatch):
    # the distribution importlib.metadata finds, found with a file test per sys.path
    # entry instead of listing and parsing each directory (most of a small first compile)
    full = _installed()
    listed = []
    real_search = devices.metadata.Distribution.discover

    def discover(*a, **k):
        listed.append(1)
        return real_search(*a, **k)

    monkeypatch.setattr(devices.metadata.Distribution, "discover", discover)
    fast = devices._own_distribution()
    assert not listed
    assert fast.metadata["Name"] == full.metadata["Name"] == "numba-gpux"
    assert fast.version == full.version
    assert sorted((e.name, e.value) for e in fast.entry_points
                  if e.group == devices.ENTRY_POINT_GROUP) == \
        sorted((e.name, e.value) for e in full.entry_points
               if e.group == devices.ENTRY_POINT_GROUP)
    # another version's name is not found: importlib.metadata's full search answers
    monkeypatch.setattr(devices, "__version__", "0.0.0.not-this")
    again = devices._own_distribution()
    assert listed and again.metadata["Name"] == "numba-gpux"


@pytest.mark.parametrize("name,own", [("cuda", "cuda"), ("opencl", "opencl"),
                                      ("opencl-c", "source"), ("metal", "source")])
def test_targets_add_only_their_own_options(name, own):
    t = resolve_target(name)
    assert isinstance(t, Target)
    added = [f.name for f in dataclasses.fields(t)][len(dataclasses.fields(Target)):]
    assert added == [own]  # one field: the target's own frozen options
    assert isinstance(getattr(t, own), TargetOptions)
    # the shared __init__, == and repr (interface.target_dataclass): making a dataclass's
    # own for a class of thirty fields costs milliseconds of the target's first use
    for klass in type(t).__mro__:
        if issubclass(klass, Target):
            assert not {"__init__", "__eq__", "__repr__"} & set(vars(klass)), klass
    with pytest.raises(dataclasses.FrozenInstanceError):
        t.name = "other"  # still a frozen description


def test_cuda_compute_capability_is_data_in_the_fingerprint():
    a, b = resolve_target("cuda", cc=(8, 0)), resolve_target("cuda", cc=(9, 0))
    assert (a.cc, b.cc) == ((8, 0), (9, 0)) and a.ptx_version <= b.ptx_version
    assert a.cuda.cc == (8, 0) and a.cpu == "sm_80"
    assert a.fingerprint != b.fingerprint
    assert resolve_target("cuda", cc=(8, 0)) == a


def test_emission_reuses_the_kept_machine_only_where_the_target_says_so():
    cuda = resolve_target("cuda", cubin=False)
    assert cuda.reusable_emit_machine
    with machines.emit_machine(cuda, 3) as tm:
        assert tm is machines.target_machine(cuda, 3)
    spirv = resolve_target("opencl")  # LLVM's SPIR-V back end: each machine emits once
    assert not spirv.reusable_emit_machine
    kept = machines.target_machine(spirv, 3)  # has only optimized: emission may take it
    with machines.emit_machine(spirv, 3) as a, machines.emit_machine(spirv, 3) as b:
        assert a is kept and b is not a
        after = machines.target_machine(spirv, 3)
        assert after is not a and after is not b
    with machines.emit_machine(spirv, 3) as c:
        assert c is after  # taken out of the cache: the next optimizer makes another
    assert machines.target_machine(spirv, 3) not in (a, b, c)


def test_kept_machine_emits_one_kernel_after_another():
    @gpux.jit
    def scale(out, x):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = 3 * x[i]

    one = gpux.compile(saxpy, SAXPY, target="cuda", cubin=False).text
    two = gpux.compile(scale, "void(int64[::1], int64[::1])", target="cuda", cubin=False).text
    again = gpux.compile(saxpy, SAXPY, target="cuda", cc=(8, 6), cubin=False).text
    assert ".entry saxpy" in one and ".entry scale" in two and ".entry saxpy" in again
    assert "add.rn.f32" in one and "ld.global" in two and "st.global" in two
    assert ".target sm_86" in again and ".target sm_75" in one


def test_kernel_body_is_inlined_once_in_the_neutral_module():
    from numba.core import sigutils

    args = tuple(sigutils.normalize_signature(SAXPY)[0])
    sym, text = saxpy.kernel_ir(args)
    defines = re.findall(r"^define [^@\n]*@\"?([\w.$]+)", text, re.M)
    assert defines == [sym]  # the entry point alone: the body is inlined into it
    assert "@llvm.lifetime." not in text
    art = gpux.compile(saxpy, SAXPY, target="opencl")
    assert art.binary[:4] == b"\x03\x02\x23\x07"  # SPIR-V


def test_inlining_keeps_private_arrays_and_results_right(device):
    @gpux.jit
    def window(out, x):
        i = gpux.grid(1)
        if i < out.size:
            buf = gpux.local.array(4, np.float32)
            for k in range(4):
                buf[k] = x[(i + k) % x.size]
            s = np.float32(0)
            for k in range(4):
                s += buf[k] * (k + 1)
            out[i] = s

    x = np.arange(37, dtype=np.float32)
    out = gpux.to_device(np.zeros_like(x), device=device)
    window[2, 32](out, gpux.to_device(x, device=device))
    want = sum(np.roll(x, -k) * (k + 1) for k in range(4))
    np.testing.assert_allclose(out.copy_to_host(), want)


def test_overlay_digest_still_follows_the_text():
    reg = overlays.OverlayRegistry("t-first-use")
    reg.define("__t_f", "define i32 @__t_f() { ret i32 1 }")
    d1 = reg.digest
    reg.define("__t_f", "define i32 @__t_f() { ret i32 2 }")
    d2 = reg.digest
    reg.define("__t_f", "define i32 @__t_f() { ret i32 1 }")
    assert d1 != d2 and reg.digest == d1
    reg.define("__t_f", "define i32 @__t_f() { ret i32 1 }", token="explicit")
    assert reg.digest not in (d1, d2)


def test_internalize_by_known_names_matches_the_walk():
    from llvmlite import binding as ll

    from numba_gpux.passes import internalize

    text = ("define void @k() {\n  call void @a()\n  ret void\n}\n"
            "define void @a() {\n  ret void\n}\n"
            "define void @b() {\n  ret void\n}\n"
            "declare void @c()\n")

    def linkages(defined):
        m = ll.parse_assembly(text)
        internalize(m, ["k"], defined)
        return {f.name: f.linkage.name for f in m.functions}

    walked = linkages(None)
    assert walked["a"] == walked["b"] == "internal" and walked["k"] == "external"
    assert walked["c"] == "external"  # a declaration stays one
    assert linkages({"k", "a", "b"}) == walked
    # a name the module lacks (a caller's wrong list) falls back to the walk
    assert linkages({"k", "a", "nowhere"}) == walked
