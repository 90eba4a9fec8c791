"""Overlay registries: definitions one by one and families made on demand."""

import numba_gpux.overlays as overlays
from numba_gpux.language.intrinsics import (
    INTRINSICS, PRINTF_MAX_ARGS, PRINTF_PREFIX, printf_codes, printf_name,
)
from numba_gpux.overlays import OverlayRegistry, OverlayStack


def _factory(name):
    suffix = name[len("__t_fam_"):]
    return f"define i32 @{name}() {{ ret i32 {len(suffix)} }}" if suffix.isalpha() else None


def test_family_defines_members_on_demand():
    reg = OverlayRegistry("t-family")
    before = overlays.epoch
    reg.define_family("__t_fam_", _factory)
    assert overlays.epoch > before
    assert "__t_fam_abc" in reg
    assert "ret i32 3" in reg.get("__t_fam_abc")
    # a name the factory refuses, and a name outside the prefix, are not defined
    assert "__t_fam_12" not in reg and reg.get("__t_fam_12") is None
    assert "__t_other" not in reg
    assert reg.names() == set()


def test_exact_definition_wins_over_family_and_digest_follows():
    reg = OverlayRegistry("t-family2")
    d0 = reg.digest
    reg.define_family("__t_fam_", _factory)
    d1 = reg.digest
    assert d1 != d0
    reg.define("__t_fam_x", "define i32 @__t_fam_x() { ret i32 42 }")
    assert "ret i32 42" in reg.get("__t_fam_x")
    assert reg.digest not in (d0, d1)
    # the stack looks through registries in order, families included
    stack = OverlayStack([OverlayRegistry("empty"), reg])
    assert stack.provides("__t_fam_yz")
    text, missing = stack.module_text({"__t_fam_yz", "__t_nothing"})
    assert "@__t_fam_yz()" in text and missing == {"__t_nothing"}


def test_helpers_declared_apart_with_different_attributes_link_as_one():
    """Two definitions that declare the same helper, one ``nounwind`` and one with
    ``convergent`` and ``memory(none)``: the linked text declares it once, with every
    attribute, and LLVM reads it."""
    import llvmlite.binding as ll

    reg = OverlayRegistry("t-declares")
    reg.define("__t_one", "declare i64 @__t_helper(i32) nounwind\n"
                          "define i64 @__t_one() {\n  %r = call i64 @__t_helper(i32 0)\n"
                          "  ret i64 %r\n}")
    reg.define("__t_two", "declare i64 @__t_helper(i32)\n"
                          "declare i64 @__t_helper(i32) convergent memory(none)\n"
                          "define i64 @__t_two() {\n  %r = call i64 @__t_helper(i32 1)\n"
                          "  ret i64 %r\n}")
    text, missing = OverlayStack([reg]).module_text({"__t_one", "__t_two"})
    assert not missing
    decls = [ln for ln in text.split("\n") if ln.startswith("declare")]
    assert decls == ["declare i64 @__t_helper(i32) nounwind convergent memory(none)"], text
    ll.parse_assembly(text).verify()


def test_printf_intrinsics_are_entered_when_used():
    assert printf_codes(PRINTF_PREFIX + "ldl") == "ldl"
    assert printf_codes(PRINTF_PREFIX + "lx") is None
    assert printf_codes(PRINTF_PREFIX + "l" * PRINTF_MAX_ARGS) == "l" * PRINTF_MAX_ARGS
    assert printf_codes(PRINTF_PREFIX + "l" * (PRINTF_MAX_ARGS + 1)) is None
    name = printf_name("dddl")
    spec = INTRINSICS[name]
    assert [str(a) for a in spec.args] == ["ptr addrspace(4)", "double", "double", "double", "i64"]
    try:
        printf_name("q")
    except ValueError as e:
        assert "'l' and 'd'" in str(e)
    else:
        raise AssertionError("printf_name accepted a bad code")


# ------------------------------------------------------------ modules loaded on demand

def _lazy_registry(tmp_path, monkeypatch, name, prefixes, *lines):
    """Registry *name*, whose names of *prefixes* come from a module *name* (written
    with *lines*, each a definition), not imported yet."""
    (tmp_path / f"{name}.py").write_text(
        "from numba_gpux.overlays import registry\n"
        f"REG = registry({name!r})\n" + "".join(ln + "\n" for ln in lines))
    monkeypatch.syspath_prepend(str(tmp_path))
    reg = overlays.registry(name)
    reg.define_module(name, prefixes)
    return reg


def test_module_is_imported_when_a_name_it_defines_is_first_needed(tmp_path, monkeypatch):
    import sys

    name = "t_lazy_mod_a"
    reg = _lazy_registry(tmp_path, monkeypatch, name, ("__t_lz_one", "__t_lz_f_"),
                         'REG.define("__t_lz_one", "define i32 @__t_lz_one() { ret i32 1 }")',
                         'REG.define_family("__t_lz_f_",'
                         ' lambda n: "define i32 @" + n + "() { ret i32 2 }")')
    digest = reg.digest
    # names outside its prefixes do not import it
    assert "__t_other" not in reg and name not in sys.modules
    assert "ret i32 1" in reg.get("__t_lz_one")
    assert name in sys.modules
    assert "ret i32 2" in reg.get("__t_lz_f_x")
    # the module's name stands for what it defines: loading it changed no digest
    assert reg.digest == digest
    assert reg.names() == {"__t_lz_one"}


def test_override_before_the_module_loads_is_kept_and_removal_is_seen(tmp_path, monkeypatch):
    name = "t_lazy_mod_b"
    reg = _lazy_registry(tmp_path, monkeypatch, name, ("__t_lzb_",),
                         'REG.define("__t_lzb_a", "define i32 @__t_lzb_a() { ret i32 1 }")',
                         'REG.define("__t_lzb_b", "define i32 @__t_lzb_b() { ret i32 1 }")')
    d0 = reg.digest
    reg.define("__t_lzb_a", "define i32 @__t_lzb_a() { ret i32 7 }")  # before the load
    d1 = reg.digest
    assert d1 != d0
    assert "ret i32 7" in reg.get("__t_lzb_a")
    assert "ret i32 1" in reg.get("__t_lzb_b")  # loaded now; the override stayed
    assert "ret i32 7" in reg.get("__t_lzb_a") and reg.digest == d1
    reg.remove(["__t_lzb_b"])
    assert reg.get("__t_lzb_b") is None and reg.digest not in (d0, d1)


def test_removal_before_the_load_is_not_undone_by_it(tmp_path, monkeypatch):
    name = "t_lazy_mod_c"
    reg = _lazy_registry(tmp_path, monkeypatch, name, ("__t_lzc_",),
                         'REG.define("__t_lzc_a", "define i32 @__t_lzc_a() { ret i32 1 }")')
    d0 = reg.digest
    reg.remove(["__t_lzc_a"])
    assert "__t_lzc_a" not in reg and reg.digest != d0


def test_module_defining_outside_its_prefixes_is_refused(tmp_path, monkeypatch):
    import pytest

    name = "t_lazy_mod_d"
    reg = _lazy_registry(tmp_path, monkeypatch, name, ("__t_lzd_",),
                         'REG.define("__t_elsewhere", "define i32 @__t_elsewhere() { ret i32 1 }")')
    with pytest.raises(ValueError, match="outside the prefixes"):
        reg.get("__t_lzd_x")


def test_built_in_feature_modules_load_within_their_prefixes():
    # every registry's modules load (names() loads them all) without a name outside
    # the prefixes it was named for, and loading them changes no digest
    from numba_gpux.devices import resolve_target

    for name in ("cuda", "opencl"):
        target = resolve_target(name)
        stack = target.overlays()
        fingerprint = target.fingerprint  # (builds the shared context, which fills "shared")
        digest = stack.digest
        for reg in stack.registries:
            reg.names()
        assert stack.digest == digest and resolve_target(name).fingerprint == fingerprint
        assert stack.provides("__gpux_atomic_add_f32") and stack.provides("__gpux_sg_lane_id")


def test_a_kernel_without_atomics_or_sub_groups_imports_neither():
    import subprocess
    import sys

    code = """
import sys
import numba_gpux as gpux
def saxpy(a, x, y, out):
    i = gpux.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]
sig = "void(float32, float32[::1], float32[::1], float32[::1])"
gpux.compile(gpux.jit(saxpy), sig, target="cuda", cubin=False)
gpux.compile(gpux.jit(saxpy), sig, target="opencl")
loaded = sorted(m for m in sys.modules if m.startswith("numba_gpux.targets.") and ".overlays." in m)
print(" ".join(loaded))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    loaded = out.stdout.split()
    assert "numba_gpux.targets.cuda.overlays.core" in loaded
    assert "numba_gpux.targets.opencl.overlays.core" in loaded
    for feature in ("atomics", "subgroups", "printing", "bits", "memory"):
        assert not [m for m in loaded if m.endswith("." + feature)], loaded
