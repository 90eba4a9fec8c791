"""Overlay registries: definitions one by one and families made on demand."""

import numba_gpux.overlays as overlays
from numba_gpux.language.intrinsics import INTRINSICS, PRINTF_MAX_ARGS, PRINTF_PREFIX, printf_codes, printf_name
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
