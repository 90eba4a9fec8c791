"""IR text transformations, IR in and IR out (no device)."""

import llvmlite.binding as ll
import pytest

from numba_gpux.interface import NEUTRAL_ADDRSPACES, AddressSpaces
from numba_gpux.irtext import mark_kernels, remap_address_spaces, rename_globals

SPIRV = AddressSpaces(generic=4, global_=1, shared=3, constant=2, private=0)

NEUTRAL = r'''
@g = internal global [4 x i32] zeroinitializer
@sh = internal addrspace(3) global [8 x float] undef
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)
define void @"k"(ptr addrspace(1) %a, i64 %n) {
entry:
  %tmp = alloca i64, align 8
  %"named x" = alloca [2 x double], align 8
  store i64 %n, ptr %tmp
  %ga = addrspacecast ptr addrspace(1) %a to ptr
  %p = getelementptr i32, ptr @g, i64 1
  %v = load i32, ptr %p
  %s = addrspacecast ptr addrspace(3) @sh to ptr
  store float 1.0, ptr %s
  call void @llvm.memset.p0.i64(ptr %"named x", i8 0, i64 16, i1 false)
  store i32 %v, ptr %ga
  ret void
}
'''


def test_identity_mapping_leaves_text_alone():
    assert remap_address_spaces(NEUTRAL, NEUTRAL_ADDRSPACES, NEUTRAL_ADDRSPACES, 1) == NEUTRAL


def test_spirv_mapping_parses_and_verifies():
    out = remap_address_spaces(NEUTRAL, NEUTRAL_ADDRSPACES, SPIRV, 1)
    mod = ll.parse_assembly(out)
    mod.verify()
    text = str(mod)
    # generic pointers are addrspace(4), allocas stay private and are cast
    assert "alloca i64" in text and "addrspacecast ptr %tmp.gpux.priv to ptr addrspace(4)" in text
    assert '%"named x.gpux.priv" = alloca' in text
    # module variables move to the global address space, uses are cast
    assert "@g = internal addrspace(1) global" in text
    assert "@llvm.memset.p4.i64" in text
    # explicit address spaces are mapped number for number (shared stays 3)
    assert "@sh = internal addrspace(3) global" in text
    # the only pointers left in address space 0 (SPIR-V private) are the allocas' own
    import re

    bare = re.findall(r'\bptr (?!addrspace)(%"[^"]*"|\S+)', text)
    assert sorted(bare) == ['%"named x.gpux.priv"', "%tmp.gpux.priv"], bare


def test_module_variable_passed_with_argument_attributes_is_cast():
    # a string constant passed to a device function: `ptr nonnull @.bytes.1`
    text = """@.bytes.-1 = internal constant [2 x i8] c"1\\00"
declare i32 @f(ptr, ptr)
define i32 @k() {
  %r = call i32 @f(ptr nonnull @.bytes.-1, ptr noundef nonnull align 1 @.bytes.-1)
  ret i32 %r
}
"""
    out = remap_address_spaces(text, NEUTRAL_ADDRSPACES, SPIRV, 1)
    mod = ll.parse_assembly(out)
    mod.verify()
    assert str(mod).count("addrspacecast (ptr addrspace(1) @.bytes.-1 to ptr addrspace(4))") == 2


def test_mark_kernels_sets_calling_convention():
    out = mark_kernels(NEUTRAL, ["k"], "spir_kernel")
    assert 'define spir_kernel void @"k"(' in out
    with pytest.raises(ValueError):
        mark_kernels(NEUTRAL, ["missing"], "spir_kernel")


def test_rename_globals_renames_names_not_text():
    """Declarations, calls and quoted spellings of a name change; a string constant
    that spells the name, a longer name that starts with it and locals do not."""
    text = (
        '@msg = private constant [19 x i8] c"@__gpux_global_idx\\00"\n'
        'declare i64 @__gpux_global_idx(i32)\n'
        'declare i64 @__gpux_global_idx2(i32)\n'
        'define i64 @"k"(i64 %__gpux_global_idx) {\n'
        'entry:\n'
        '  %a = call i64 @__gpux_global_idx(i32 0)\n'
        '  %b = call i64 @"__gpux_global_idx"(i32 1)\n'
        '  %c = call i64 @__gpux_global_idx2(i32 0)\n'
        '  %s = add i64 %a, %b\n'
        '  %t = add i64 %s, %c\n'
        '  %u = add i64 %t, %__gpux_global_idx\n'
        '  ret i64 %u\n'
        '}\n')
    out = rename_globals(text, {"__gpux_global_idx": "__gpux_wide_global_idx"})
    ll.parse_assembly(out).verify()
    assert out.count("@__gpux_wide_global_idx(") == 3, out
    assert 'c"@__gpux_global_idx\\00"' in out and "@__gpux_global_idx2(" in out
    assert "%__gpux_global_idx)" in out and "%__gpux_global_idx\n" in out


def test_function_attributes_on_named_or_on_every_definition():
    from numba_gpux.irtext import add_function_attributes

    text = ('declare float @d(float)\n'
            'define internal fastcc float @"f.1"(float %x) unnamed_addr #0 {\n'
            '  %r = call float @d(float %x)\n  ret float %r\n}\n'
            'define void @k(ptr addrspace(1) %p, { i32, i64 } %s) !dbg !3 {\n'
            '  ret void\n}\n'
            'attributes #0 = { nounwind }\n')
    every = add_function_attributes(text, None, {"a": "1", "b": "x,y"})
    assert '@"f.1"(float %x) unnamed_addr "a"="1" "b"="x,y" #0 {' in every
    assert '@k(ptr addrspace(1) %p, { i32, i64 } %s) "a"="1" "b"="x,y" !dbg !3 {' in every
    assert "declare float @d(float)\n" in every  # declarations keep theirs
    one = add_function_attributes(text, ["k"], {"a": "1"})
    assert one.count('"a"="1"') == 1 and '%s) "a"="1" !dbg' in one
    m = ll.parse_assembly(every.replace(" !dbg !3", ""))
    assert 'define void @k(ptr addrspace(1) %p, { i32, i64 } %s) #1' in str(m)
    with pytest.raises(ValueError, match="not defined exactly once"):
        add_function_attributes(text, ["d"], {"a": "1"})


@pytest.mark.parametrize("operand,cast", [
    ("addrspacecast (ptr addrspace(1) @g to ptr addrspace(4))", (1, ["@g"])),
    ("addrspacecast (ptr addrspace(12) %x to ptr addrspace(4))", (12, ["%x"])),
    ("addrspacecast (ptr @g to ptr addrspace(4))", (0, ["@g"])),
    ('addrspacecast (ptr addrspace(3) @"to ptr addrspace(4))" to ptr addrspace(4))',
     (3, ['@"to ptr addrspace(4))"'])),
    ("addrspacecast (ptr addrspace(4) %x to ptr addrspace(4))", None),  # generic already
    ("addrspacecast (ptr addrspace(1) %x to ptr addrspace(3))", None),  # not to generic
    ("addrspacecast ptr %x", None), ("addrspacecast (i8 %x)", None), ("%x", None),
])
def test_constant_cast_operands(operand, cast):
    from numba_gpux import irlex
    from numba_gpux.irinfer import _cast_of

    toks = irlex.tokens(operand)
    assert _cast_of(toks, 0, len(toks), 4) == cast
