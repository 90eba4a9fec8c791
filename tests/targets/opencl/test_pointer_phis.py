"""targets/opencl/pointer_phis.py reads phis through the IR lexer: what a user wrote
(a string, a quoted name) is never taken for a phi, and numbered values keep their
order.  (tests/test_backend_survival.py runs the rewrite's kernels on the device.)"""

from __future__ import annotations

from llvmlite import binding as ll

from numba_gpux.targets.opencl.pointer_phis import shared_pointer_phis_as_integers

CAST = "addrspacecast (ptr addrspace(3) @{} to ptr addrspace(4))"
PHI = f"phi ptr addrspace(4) [ {CAST.format('x')}, %one ], [ {CAST.format('y')}, %two ]"

MODULE = """
@x = internal addrspace(3) global [4 x double] undef
@y = internal addrspace(3) global [4 x double] undef
@s = internal constant [{n} x i8] c"{text}"

declare void @"{text}"(ptr)

define void @k(ptr addrspace(1) %out, i1 %c) {{
entry:
  br i1 %c, label %one, label %two
one:
  br label %end
two:
  br label %end
end:
{phis}
  call void @"{text}"(ptr @s)
  %v = load double, ptr addrspace(4) %{first}
  store double %v, ptr addrspace(1) %out
  ret void
}}
"""


def _module(phis, first):
    text = f"  %a = {PHI}"
    return MODULE.format(n=len(text), text=text, phis=phis, first=first)


def test_only_the_code_is_rewritten_never_a_string_or_a_name():
    src = _module(f"  %a = {PHI}", "a")
    ll.parse_assembly(src).verify()
    out = shared_pointer_phis_as_integers(src)
    ll.parse_assembly(out).verify()
    assert out.count(f"%a = {PHI}") == 3  # the string, the declaration and the call
    assert "  %a.gpux.int = phi i64 [ ptrtoint (ptr addrspace(4) " in out
    assert "  %a = inttoptr i64 %a.gpux.int to ptr addrspace(4)\n  call void" in out


def test_numbered_phis_keep_their_order():
    # the block's last phi: its inttoptr follows it at once, so the numbering holds
    src = _module(f"  %0 = {PHI}", "0")
    out = shared_pointer_phis_as_integers(src)
    ll.parse_assembly(out).verify()
    assert "%0 = inttoptr i64 %\"0.gpux.int\" to ptr addrspace(4)" in out
    # followed by another numbered phi: its inttoptr would come after %1, left as it is
    src = _module(f"  %0 = {PHI}\n  %1 = {PHI}", "0")
    ll.parse_assembly(src).verify()
    out = shared_pointer_phis_as_integers(src)
    ll.parse_assembly(out).verify()
    assert f"  %0 = {PHI}\n" in out and "%1 = inttoptr" in out
