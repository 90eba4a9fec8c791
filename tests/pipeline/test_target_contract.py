"""The Target contract as typed data: every field the core reads is declared on
``Target`` with a type, what one target alone reads is that target's own frozen
options, an unknown or mistyped option is an error when the target is built, and
the fingerprint is a pure function of the description (the overlay registries
enter the code's key beside it, ``cachekey.overlaid_fingerprint``)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

import pytest

from numba_gpux import cache, cachekey, extending
from numba_gpux.devices import resolve_target
from numba_gpux.interface import (NEUTRAL_ADDRSPACES, AddressSpaces, IndexLimits, Target,
                                  TargetOptions)
from numba_gpux.targets.cfamily.target import SourceOptions
from numba_gpux.targets.cuda.target import CUDAOptions, CUDATarget
from numba_gpux.targets.opencl.target import OpenCLOptions

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NAMES = ("cuda", "opencl", "opencl-c", "metal")


def _plain(**kw) -> Target:
    return Target(name="plain", families=(), triple="spirv64-unknown-unknown",
                  data_layout="e", addrspaces=NEUTRAL_ADDRSPACES, **kw)


# -- an unknown or mistyped option is an error when the target is built ----------------

def test_a_misspelt_option_names_itself_and_the_known_ones():
    with pytest.raises(TypeError) as err:
        _plain(extern_prefix=("_Z",))
    msg = str(err.value)
    assert "no option 'extern_prefix'" in msg and "did you mean 'extern_prefixes'?" in msg
    assert "legal_int_widths" in msg and "reusable_emit_machine" in msg  # the known ones


def test_the_old_bag_of_options_is_refused_with_a_pointer_to_the_fields():
    with pytest.raises(TypeError, match=r"no option 'options'.*field of its own"):
        _plain(options=(("extern_prefixes", ("_Z",)),))


def test_replace_checks_the_key_too():
    t = resolve_target("opencl")
    with pytest.raises(TypeError, match="no option 'ir_rewrite'.*did you mean 'ir_rewrites'"):
        dataclasses.replace(t, ir_rewrite=())


@pytest.mark.parametrize("field,value,want", [
    ("ir_rewrites", ["split_aggregate_phis"], r"tuple\[str, \.\.\.\]"),
    ("legal_int_widths", (8, "16"), r"tuple\[int, \.\.\.\]"),
    ("subgroup_width", True, "int"),  # a bool is not a width
    ("backend_infers_address_spaces", 1, "bool"),
    ("emit_kind", "obj", "Literal"),
    ("tm_flags", (("-flag",),), "tuple"),
    ("features", {"fp64"}, "frozenset"),
    ("index_limits", ((1, 1, 1), (1, 1, 1)), "IndexLimits"),
])
def test_a_value_of_the_wrong_type_is_refused(field, value, want):
    with pytest.raises(TypeError, match=rf"Target\.{field} must be .*{want}"):
        _plain(**{field: value})


def test_positional_arguments_are_refused():
    with pytest.raises(TypeError, match="keyword arguments only"):
        Target("plain", (), "t", "e", NEUTRAL_ADDRSPACES)


def test_a_targets_own_options_are_checked_the_same_way():
    with pytest.raises(TypeError, match="CUDAOptions has no option 'ptx'.*ptx_version"):
        CUDAOptions(cc=(9, 0), ptx=(8, 0))
    with pytest.raises(TypeError, match=r"CUDAOptions\.cc must be tuple\[int, int\]"):
        CUDAOptions(cc="9.0")
    with pytest.raises(TypeError, match="OpenCLOptions has no option 'dynamic_shared'"):
        OpenCLOptions(dynamic_shared="kernel_param")
    with pytest.raises(TypeError, match=r"SourceOptions\.source_families must be"):
        SourceOptions(dialect="msl", source_families=["metal"])
    with pytest.raises(TypeError, match=r"CUDATarget\.cuda must be CUDAOptions"):
        dataclasses.replace(resolve_target("cuda"), cuda=OpenCLOptions())


# -- each target builds with its options ---------------------------------------------

def test_each_target_builds_with_its_own_options():
    cuda = resolve_target("cuda", cc="sm_86", ptx_version=(8, 0), cubin=False)
    assert cuda.cuda == CUDAOptions(cc=(8, 6), ptx_version=(8, 0), cubin=False)
    assert (cuda.cc, cuda.ptx_version, cuda.cpu, cuda.llvm_features) == \
        ((8, 6), (8, 0), "sm_86", "+ptx80")
    assert cuda.reusable_emit_machine and cuda.backend_infers_address_spaces
    assert cuda.subgroup_width == 32 and cuda.tm_flags and cuda.codegen_flags
    assert dict(cuda.kernel_bound_attributes)["max_threads"] == "nvvm.maxntid"
    assert CUDATarget.__dataclass_fields__["cuda"].default == CUDAOptions()

    ocl = resolve_target("opencl", features=frozenset({"fp64"}))
    assert ocl.opencl.dynamic_shared_params and ocl.features == frozenset({"fp64"})
    assert ocl.legal_int_widths == (8, 16, 32, 64) and ocl.workgroup_syncscope == "workgroup"
    assert ocl.subgroup_size_metadata and ocl.replace_intrinsics and ocl.ir_rewrites
    assert not ocl.reusable_emit_machine and not ocl.backend_infers_address_spaces

    for name, dialect in (("opencl-c", "opencl-c"), ("metal", "msl")):
        t = resolve_target(name)
        assert t.source == SourceOptions(dialect=dialect, source_families=(name,))
        assert t.intrinsics_by_name and not t.loop_vectorization and t.type_features
        assert t.emit_kind == "source"


def test_the_fields_are_typed_and_each_read_by_name():
    """Every field of the contract has a type that the construction check reads (no
    untyped or ``Any`` field), so no option can slip in unchecked."""
    from numba_gpux.interface import _field_types

    for cls in (Target, type(resolve_target("cuda")), type(resolve_target("metal")),
                CUDAOptions, OpenCLOptions, SourceOptions):
        fields = _field_types(cls)
        unchecked = [name for name, (_tp, ok) in fields.items() if ok is None]
        assert fields and not unchecked, (cls, unchecked)
        assert "options" not in fields
    assert not hasattr(Target, "option")


# -- the fingerprint is a pure function of the description --------------------------

_FINGERPRINTS = """
import json, sys
from numba_gpux.devices import resolve_target
from numba_gpux import overlays
targets = {n: resolve_target(n) for n in %r}
targets["cuda-80"] = resolve_target("cuda", cc=(8, 0))
targets["opencl-few"] = resolve_target("opencl", features=frozenset({"fp16", "subgroups", "fp64"}))
epoch = overlays.epoch  # (the targets' modules filled their registries as they loaded)
fps = {n: t.fingerprint for n, t in targets.items()}
# reading fingerprints imported no context and changed no overlay registry
assert "numba_gpux.context" not in sys.modules, "a fingerprint imported the context"
assert overlays.epoch == epoch, "a fingerprint changed an overlay registry"
print(json.dumps(fps))
"""


def _fingerprints_in_a_fresh_process(seed: str) -> dict:
    env = dict(os.environ, PYTHONHASHSEED=seed, PYTHONPATH=ROOT)
    res = subprocess.run([sys.executable, "-c", _FINGERPRINTS % (NAMES,)], capture_output=True,
                         text=True, timeout=300, cwd=ROOT, env=env)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_fingerprints_are_pure_and_the_same_in_every_process():
    one = _fingerprints_in_a_fresh_process("1")
    two = _fingerprints_in_a_fresh_process("2")  # sets of strings iterate differently
    assert one == two
    # and the same here, where the shared context is built and overlays are loaded
    import numba_gpux as gpux

    k = gpux.jit(lambda x: None)
    gpux.compile(k, "void(float32[::1])", target="opencl")
    here = {n: resolve_target(n).fingerprint for n in NAMES}
    here["cuda-80"] = resolve_target("cuda", cc=(8, 0)).fingerprint
    here["opencl-few"] = resolve_target(
        "opencl", features=frozenset({"fp64", "subgroups", "fp16"})).fingerprint
    assert here == one
    assert len(set(one.values())) == len(one)


#: a different value for each field of the contract (the test fails when a field is
#: added without one: every field must reach the fingerprint)
_OTHER = {
    "name": "other", "families": ("spirv",), "features": frozenset({"fp64"}),
    "triple": "nvptx64-nvidia-cuda", "data_layout": "e-other", "cpu": "sm_90",
    "llvm_features": "+ptx80",
    "addrspaces": AddressSpaces(generic=4, global_=1, shared=3, constant=2, private=0),
    "globals_addrspace": 4, "index_limits": IndexLimits(block=(1, 1, 1), grid=(1, 1, 1)),
    "int_argument_facts": True, "array_stride_facts": (2,),
    "kernel_cc": "spir_kernel", "module_metadata": (("a", "i32 1"),),
    "kernel_bound_attributes": (("max_threads", "x"),),
    "fastmath_function_attributes": (("a", "b"),), "subgroup_width": 16,
    "subgroup_size_metadata": "md", "split_subgroup_prefix": "__split_", "serial_lanes_metadata": ("hint", "i32 1"), "tm_flags": (("-a=1", "-a=0"),),
    "loop_vectorization": False, "rotate_unoptimized_loops": True, "legal_int_widths": (32,), "replace_intrinsics": ("llvm.x.",),
    "backend_infers_address_spaces": True, "workgroup_syncscope": "workgroup",
    "ir_rewrites": ("sitofp_i1",), "recursion": True, "barriers_skip_exited": True, "device_malloc": True, "device_heap": False, "extern_prefixes": ("_Z",),
    "intrinsics_by_name": True,
    "type_features": (("half", "fp16", "half"),), "emit_kind": "assembly",
    "artifact_kind": "ptx", "codegen_flags": (("-b=1", "-b=0"),),
    "reusable_emit_machine": True, "link_kinds": frozenset({"ptx"}),
}


def test_fingerprints_differ_when_any_field_differs():
    base = _plain()
    assert set(_OTHER) == {f.name for f in dataclasses.fields(Target)}
    seen = {base.fingerprint}
    for name, value in _OTHER.items():
        assert getattr(base, name) != value, name
        fp = dataclasses.replace(base, **{name: value}).fingerprint
        assert fp not in seen, name
        seen.add(fp)
    assert dataclasses.replace(base).fingerprint == base.fingerprint
    # a target's own options, field by field
    cuda = resolve_target("cuda", cc=(8, 0))
    fps = {cuda.fingerprint}
    for change in ({"cc": (8, 6)}, {"ptx_version": (8, 3)}, {"cubin": False}):
        fps.add(dataclasses.replace(cuda, cuda=dataclasses.replace(cuda.cuda, **change)).fingerprint)
    assert len(fps) == 4
    # the class is part of it: the same fields under another class are another target
    assert CUDATarget(**{f.name: getattr(base, f.name) for f in dataclasses.fields(Target)}
                      ).fingerprint != base.fingerprint


@dataclasses.dataclass(frozen=True)
class Knobs(TargetOptions):
    unroll: int = 4
    vendor_flags: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class KnobTarget(Target):
    knobs: Knobs = Knobs()


def test_another_package_carries_its_knobs_as_typed_fields():
    """A downstream target's extra knobs: its own TargetOptions in a field of its
    subclass, checked and fingerprinted like the built-in ones."""
    base = {f.name: getattr(_plain(), f.name) for f in dataclasses.fields(Target)}
    a, b = KnobTarget(**base), KnobTarget(**base, knobs=Knobs(unroll=8))
    assert a.knobs.unroll == 4 and b.knobs.unroll == 8 and a.fingerprint != b.fingerprint
    with pytest.raises(TypeError, match="Knobs has no option 'unrol'.*did you mean 'unroll'"):
        Knobs(unrol=8)
    with pytest.raises(TypeError, match=r"Knobs\.vendor_flags must be tuple\[str, \.\.\.\]"):
        Knobs(vendor_flags="-O3")


def test_options_made_in_a_function_are_still_checked_for_unknown_keys():
    """Annotations that name a class made in a function cannot be resolved from the
    module: the fields they can resolve are still type-checked, the rest are not, and
    an unknown keyword is an error either way."""
    @dataclasses.dataclass(frozen=True)
    class Local(TargetOptions):
        width: int = 1

    @dataclasses.dataclass(frozen=True)
    class LocalTarget(Target):
        local: Local = Local()

    base = {f.name: getattr(_plain(), f.name) for f in dataclasses.fields(Target)}
    t = LocalTarget(**base, local=Local(width=2))
    assert t.local.width == 2 and t.fingerprint != LocalTarget(**base).fingerprint
    with pytest.raises(TypeError, match="LocalTarget has no option 'locl'"):
        LocalTarget(**base, locl=Local())
    with pytest.raises(TypeError, match=r"LocalTarget\.ir_rewrites must be"):
        LocalTarget(**dict(base, ir_rewrites=["x"]))
    with pytest.raises(TypeError, match=r"Local\.width must be int"):
        Local(width="2")


# -- the overlay registries enter the code's key, beside the fingerprint -------------

def test_an_overlay_changes_the_code_key_of_its_target_only(opencl_device):
    import math

    import numba
    import numpy as np

    import numba_gpux as gpux

    @gpux.jit
    def k(x, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = math.exp(x[i])

    target = opencl_device.target
    argtypes = (numba.typeof(gpux.to_device(np.zeros(4, np.float32))),) * 2
    _sym, text = k.kernel_ir(argtypes)
    fp, key = target.fingerprint, cachekey.overlaid_fingerprint(target)
    code_key = cache.cache_key(text, target, k.options)
    other = resolve_target("cuda")
    other_key = cachekey.overlaid_fingerprint(other)

    @gpux.overlay(math.exp, target=target.name)
    def exp_by_two(x):
        return math.exp2(x)

    try:
        assert target.fingerprint == fp  # the description did not change
        assert cachekey.overlaid_fingerprint(target) != key
        assert cache.cache_key(text, target, k.options) != code_key
        assert cachekey.target_key(target) != key
        assert cachekey.overlaid_fingerprint(other) == other_key  # another target's
    finally:
        extending.remove_overlay(math.exp, target.name)
    assert cachekey.overlaid_fingerprint(target) == key
    assert cache.cache_key(text, target, k.options) == code_key


def test_equality_hash_and_repr_read_every_field_a_subclass_adds():
    import pickle

    a, b = resolve_target("cuda", cc=(8, 0)), resolve_target("cuda", cc=(8, 0), cubin=False)
    assert a != b and a.cuda != b.cuda  # they differ only in the options CUDATarget adds
    again = resolve_target("cuda", cc=(8, 0))
    assert a == again and hash(a) == hash(again) and len({a, again, b}) == 2
    assert "cuda=CUDAOptions(cc=(8, 0)" in repr(a) and "ir_rewrites=('static_stack',)" in repr(a)
    assert a != dataclasses.replace(a, name="other") and (a == 3) is False
    copy = pickle.loads(pickle.dumps(b))
    assert copy == b and copy.fingerprint == b.fingerprint and copy.cuda.cubin is False
    with pytest.raises(TypeError, match="OpenCLTarget needs the option 'name'"):
        type(resolve_target("opencl"))(families=())
