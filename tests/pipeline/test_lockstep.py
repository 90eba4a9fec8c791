"""Warps in lockstep: a store to work-group memory that a load of it can follow with no
barrier between gets a sub-group barrier after it, one that can follow such a load gets
one before it (lockstep.order_shared_stores); one that barriers surround gets none.  Checked on IR text, each result parsed and
verified by LLVM."""

import llvmlite.binding as ll

from numba_gpux import lockstep

HEAD = """
@sm = internal addrspace(3) global [64 x float] zeroinitializer
@msg = private constant [20 x i8] c"store float %x, ptr\\00"
declare void @__gpux_barrier()
"""


def _module(body: str) -> str:
    return f"{HEAD}\ndefine void @k(i64 %t, i64 %n) {{\n{body}\n}}\n"


def _ordered(body: str) -> str:
    out = lockstep.order_shared_stores(_module(body), 3, 4)
    ll.parse_assembly(out).verify()
    return out


def _after_stores(text: str) -> list[bool]:
    """For each store to address space 3 in @k, whether a sub-group barrier follows it."""
    ls = text.split("\n")
    return [ls[k + 1].strip() == "call void @__gpux_sg_barrier()"
            for k, ln in enumerate(ls) if ln.strip().startswith("store")
            and "addrspace(3)" in ln]


def _before_stores(text: str) -> list[bool]:
    """For each store to address space 3 in @k, whether a sub-group barrier precedes it."""
    ls = text.split("\n")
    return [ls[k - 1].strip() == "call void @__gpux_sg_barrier()"
            for k, ln in enumerate(ls) if ln.strip().startswith("store")
            and "addrspace(3)" in ln]


SLOT = """  %p = getelementptr [64 x float], ptr addrspace(3) @sm, i64 0, i64 %t
  %t1 = add i64 %t, 1
  %q = getelementptr [64 x float], ptr addrspace(3) @sm, i64 0, i64 %t1"""


def test_a_store_that_a_load_follows_gets_a_sub_group_barrier():
    out = _ordered(f"""entry:
{SLOT}
  store float 1.0, ptr addrspace(3) %p
  %v = load float, ptr addrspace(3) %q
  store float %v, ptr addrspace(3) %p
  ret void""")
    assert _after_stores(out) == [True, False]
    assert "declare void @__gpux_sg_barrier()" in out


def test_a_store_that_a_load_reaches_gets_a_sub_group_barrier_before_it():
    """``if t > 0: s[t] = s[t - 1]``: lanes in step all read before any writes; a
    device that runs a partial sub-group's work-items one after another would let lane
    2 read what lane 1 wrote."""
    body = f"""entry:
{SLOT}
  %v = load float, ptr addrspace(3) %q
  store float %v, ptr addrspace(3) %p
  call void @__gpux_barrier()
  ret void"""
    out = _ordered(body)
    assert _before_stores(out) == [True]
    assert _after_stores(out) == [False]
    # (which alone does not make the kernel's lanes pass values in step: every step
    # of a tree reduction with a barrier at each reads, then writes)
    assert not lockstep.passes_values_in_step(_module(body), 3, 4)


def test_stores_in_a_row_get_one_barrier_each_side():
    out = _ordered(f"""entry:
{SLOT}
  %v = load float, ptr addrspace(3) %q
  store float %v, ptr addrspace(3) %p
  store float 2.0, ptr addrspace(3) %q
  store float 3.0, ptr addrspace(3) %p
  %w = load float, ptr addrspace(3) %q
  ret void""")
    assert _before_stores(out) == [True, False, False]
    assert _after_stores(out) == [False, False, True]


def test_loads_reach_stores_across_blocks_and_loop_back_edges():
    out = _ordered(f"""entry:
{SLOT}
  call void @__gpux_barrier()
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %body ]
  store float 1.0, ptr addrspace(3) %p
  call void @__gpux_barrier()
  %c = icmp slt i64 %i, %n
  br i1 %c, label %body, label %done
body:
  %v = load float, ptr addrspace(3) %q
  %i1 = add i64 %i, 1
  br label %loop
done:
  store float 0.0, ptr addrspace(3) %p
  ret void""")
    # the loop's store is reached from the load of the iteration before; the last
    # store only through the loop's barrier
    assert _before_stores(out) == [True, False]
    assert _after_stores(out) == [False, False]


def test_a_store_that_a_barrier_follows_first_gets_none():
    body = f"""entry:
{SLOT}
  store float 1.0, ptr addrspace(3) %p
  call void @__gpux_barrier()
  %v = load float, ptr addrspace(3) %q
  ret void"""
    assert lockstep.order_shared_stores(_module(body), 3, 4) == _module(body)
    assert not lockstep.passes_values_in_step(_module(body), 3, 4)


def test_loads_are_followed_across_blocks_and_loop_back_edges():
    out = _ordered(f"""entry:
{SLOT}
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %body ]
  %v = load float, ptr addrspace(3) %q
  %c = icmp slt i64 %i, %n
  br i1 %c, label %body, label %done
body:
  store float %v, ptr addrspace(3) %p
  %i1 = add i64 %i, 1
  br label %loop
done:
  store float 0.0, ptr addrspace(3) %p
  call void @__gpux_barrier()
  ret void""")
    assert _after_stores(out) == [True, False]


def test_a_path_through_a_barrier_ends_but_another_path_counts():
    out = _ordered(f"""entry:
{SLOT}
  store float 1.0, ptr addrspace(3) %p
  %c = icmp slt i64 %t, %n
  br i1 %c, label %sync, label %read
sync:
  call void @__gpux_barrier()
  br label %read2
read:
  %v = load float, ptr addrspace(3) %q
  br label %read2
read2:
  store float 2.0, ptr addrspace(3) %p
  br label %end
end:
  call void @__gpux_barrier()
  ret void""")
    assert _after_stores(out) == [True, False]


def test_stores_through_generic_casts_of_shared_memory_are_found():
    out = _ordered("""entry:
  %g = getelementptr float, ptr addrspace(4) addrspacecast (ptr addrspace(3) @sm to ptr addrspace(4)), i64 %t
  store float 1.0, ptr addrspace(4) %g
  %t1 = add i64 %t, 1
  %h = getelementptr float, ptr addrspace(4) addrspacecast (ptr addrspace(3) @sm to ptr addrspace(4)), i64 %t1
  %v = load float, ptr addrspace(4) %h
  ret void""")
    assert _after_stores(out) == [True]


def test_other_memory_and_text_that_looks_like_code_are_left_alone():
    body = """entry:
  %a = alloca float
  store float 1.0, ptr %a
  %v = load float, ptr %a
  %s = getelementptr [20 x i8], ptr @msg, i64 0, i64 0
  ret void"""
    assert lockstep.order_shared_stores(_module(body), 3, 4) == _module(body)



def test_address_spaces_inferred_again_after_it_make_no_name_twice():
    """The module goes through address-space inference again after the optimizer: the
    names that second run makes are not those of the first (a kernel of the numba.cuda
    facade with shared arrays failed to parse: two values named %gpux.as1)."""
    from numba_gpux.irinfer import infer_address_spaces

    first = _ordered(f"""entry:
{SLOT}
  %x = load float, ptr addrspace(3) %q
  store float %x, ptr addrspace(3) %p
  %c = addrspacecast ptr addrspace(3) @sm to ptr addrspace(4)
  ret void""")
    assert "%gpux.as" not in first  # (nothing generic to rewrite yet)
    # what the optimizer may leave: a value of the first run's name, and a new generic
    # access for the second run
    text = _module("""entry:
  %gpux.as1 = getelementptr float, ptr addrspace(3) @sm, i64 %t
  %c = addrspacecast ptr addrspace(3) %gpux.as1 to ptr addrspace(4)
  %g = getelementptr float, ptr addrspace(4) %c, i64 %n
  %v = load float, ptr addrspace(4) %g
  store float %v, ptr addrspace(3) %gpux.as1
  ret void""")
    again = infer_address_spaces(text, 4)
    assert "load float, ptr addrspace(3)" in again
    ll.parse_assembly(again).verify()
