"""Which kernels the barrier rewrite (numba_gpux/converge.py) takes, and what it makes.

Kernels whose work-items may return, or meet different barriers, while others meet one
are rewritten on targets whose barriers wait for every work-item; kernels whose
barriers the whole group reaches are compiled as before, and CUDA, whose barriers skip
threads that have exited, never rewrites.  The results on a device are checked in
tests/conformance/test_barrier_exits.py."""

from __future__ import annotations

import numpy as np
import pytest

import numba_gpux as gpux
from numba_gpux import converge

SIG = "void(float32[::1], float32[::1])"


def early_return(x, out):
    # work-items past the data return before the barrier
    sm = gpux.shared.array(64, np.float32)
    i = gpux.grid(1)
    if i >= x.size:
        return
    sm[gpux.thread_idx.x] = x[i]
    gpux.barrier()
    out[i] = sm[(gpux.thread_idx.x + 1) % 64]


def tree_sum(x, out):
    # every work-item meets every barrier: `if t < s` joins again before it
    sm = gpux.shared.array(64, np.float32)
    t = gpux.thread_idx.x
    sm[t] = x[gpux.grid(1)]
    gpux.barrier()
    s = 32
    while s > 0:
        if t < s:
            sm[t] += sm[t + s]
        gpux.barrier()
        s //= 2
    if t == 0:
        out[gpux.block_idx.x] = sm[0]


def uniform_rounds(x, out):
    # a loop of barriers whose bound is the same for the group, then a guarded store
    sm = gpux.shared.array(64, np.float32)
    t = gpux.thread_idx.x
    i = gpux.grid(1)
    acc = np.float32(0)
    for r in range(x.size // 64):
        sm[t] = x[r * 64 + t]
        gpux.barrier()
        acc += sm[63 - t]
        gpux.barrier()
    if i < out.size:
        out[i] = acc


def per_item_rounds(x, out):
    # a loop of barriers whose bound differs between work-items
    sm = gpux.shared.array(64, np.float32)
    t = gpux.thread_idx.x
    for r in range(t % 3):
        sm[t] = x[r]
        gpux.barrier()
    out[t] = sm[t]


@gpux.jit(device=True)
def _halved(v):
    return v * np.float32(0.5)


def guarded_prologue(x, out):
    # one work-item writes before a loop of barriers the whole group meets: the sides
    # of `if t == 0` join before any barrier (or the return, where the loop is empty)
    sm = gpux.shared.array(64, np.float32)
    t = gpux.thread_idx.x
    if t == 0:
        out[gpux.block_idx.x * 64] = _halved(x[0])  # (a device call: its status check)
    acc = np.float32(0)
    for r in range(x.size // 64):
        sm[t] = x[r * 64 + t]
        gpux.barrier()
        acc += sm[63 - t]
        gpux.barrier()
    if t > 0:
        out[gpux.block_idx.x * 64 + t] = acc


def barrier_on_one_side(x, out):
    # one side of `if t == 0` meets a barrier before the sides join, the other does not
    sm = gpux.shared.array(64, np.float32)
    t = gpux.thread_idx.x
    if t == 0:
        sm[0] = x[0]
        gpux.barrier()
    sm[t] = x[t]
    gpux.barrier()
    out[t] = sm[63 - t]


def flag_around_barrier(x, out):
    # a flag tested before and after a barrier every work-item meets (CUDA's style of
    # holding "am I in range" in a bool): nothing returns early, and the barrier must
    # stay one, not be copied into both sides of the first test
    sm = gpux.shared.array(64, np.float32)
    t = gpux.thread_idx.x
    i = gpux.grid(1)
    inside = i < x.size - 4
    if inside:
        sm[t] = x[i]
    gpux.barrier()
    if inside:
        out[i] = sm[t ^ 1]


def _ir(fn, target="opencl"):
    return gpux.compile(fn, SIG, target=target).llvm_ir


@pytest.mark.parametrize("fn", [tree_sum, uniform_rounds, guarded_prologue,
                                flag_around_barrier], ids=lambda f: f.__name__)
def test_kernels_whose_group_meets_every_barrier_are_not_rewritten(fn):
    assert "gpux.conv" not in _ir(fn)


def test_collective_intrinsics_are_declared_convergent():
    """Barriers and sub-group collectives are declared ``convergent`` in the neutral
    module (no optimization may make a call of one depend on more conditions:
    SimplifyCFG copied the barrier of ``flag_around_barrier`` into both sides of the
    flag's first test, which then ran through the barrier rewrite, 4-6x slower on the
    Intel driver); a work-item's own sub-group queries are not."""
    from numba_gpux.language.intrinsics import INTRINSICS, convergent

    assert convergent("__gpux_barrier") and convergent("__gpux_sg_shuffle_down_f32")
    assert convergent("__gpux_sg_reduce_add_i32") and convergent("__gpux_barrier_count")
    assert not convergent("__gpux_sg_lane_id") and not convergent("__gpux_sg_size")
    assert not convergent("__gpux_thread_idx") and "__gpux_sg_barrier" in INTRINSICS
    from numba.core import sigutils

    _, text = gpux.jit(flag_around_barrier).kernel_ir(
        tuple(sigutils.normalize_signature(SIG)[0]))
    decl = [ln for ln in text.splitlines() if ln.startswith("declare") and "@__gpux_barrier(" in ln]
    group = decl[0].split()[-1]  # (its attributes, or the group that holds them)
    attrs = decl[0] if group == "convergent" else next(
        ln for ln in text.splitlines() if ln.startswith(f"attributes {group} "))
    assert "convergent" in attrs, (decl, attrs)
    assert sum(1 for ln in text.splitlines() if "call void @__gpux_barrier()" in ln) == 1


def test_a_flag_around_a_barrier_runs_as_written(opencl_device):
    x = np.arange(2 * 64, dtype=np.float32)
    out = np.full(2 * 64, -1.0, np.float32)
    gpux.jit(flag_around_barrier)[2, 64](x, out)
    i = np.arange(2 * 64)
    want = np.where(i < x.size - 4, x[i ^ 1], -1.0)
    np.testing.assert_array_equal(out, want)


def test_a_guarded_prologue_before_barriers_runs_as_written(opencl_device):
    x = np.arange(4 * 64, dtype=np.float32)
    out = np.zeros(2 * 64, np.float32)
    gpux.jit(guarded_prologue)[2, 64](x, out)
    acc = np.zeros(64, np.float32)
    for r in range(4):
        acc += x[r * 64 + 63 - np.arange(64)]
    want = np.concatenate([[x[0] / 2], acc[1:], [x[0] / 2], acc[1:]])
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("fn", [early_return, per_item_rounds, barrier_on_one_side],
                         ids=lambda f: f.__name__)
def test_kernels_whose_work_items_may_part_are_rewritten(fn):
    text = _ir(fn)
    assert "gpux.conv.dispatch" in text
    # one barrier in the optimized code: the dispatch's (the loop is not peeled or
    # unrolled into two places of it)
    assert sum(ln.count("@_Z7barrierj(") for ln in text.splitlines()
               if "call" in ln) == 1, text


def counted_after_return(x, out):
    # a barrier with a predicate after the early return
    i = gpux.grid(1)
    if i >= x.size:
        return
    out[i] = gpux.barrier_count(x[i] > 0)


def counted_by_all(x, out):
    # the same barrier, which the whole group meets
    i = gpux.grid(1)
    c = gpux.barrier_count(x[i] > 0)
    if i < out.size:
        out[i] = c


def test_predicate_barriers_count_in_the_dispatch_when_rewritten():
    """A rewritten kernel counts a barrier's predicate with atomics on work-group words
    (six more: true and false counts for three rounds), not with the target's
    reduction, which would wait for the work-items that have returned."""
    text = _ir(counted_after_return)
    assert "gpux.conv.dispatch" in text
    assert "[10 x i32]" in text
    assert "work_group_reduce_add" not in text
    assert sum(ln.count("@_Z7barrierj(") for ln in text.splitlines() if "call" in ln) == 1
    kept = _ir(counted_by_all)
    assert "gpux.conv" not in kept and "work_group_reduce_add" in kept


def two_barriers(x, out):
    # the work-items below 32 and the others meet different barriers
    sm = gpux.shared.array(64, np.float32)
    t = gpux.thread_idx.x
    if t < 32:
        sm[t] = x[t]
        gpux.barrier()
    else:
        sm[t] = -x[t]
        gpux.barrier()
    out[t] = sm[63 - t]


def test_work_items_that_may_meet_different_barriers_keep_their_own_place():
    """Where a branch that parts the group leads to two barriers, each work-item goes
    on at its own place after the dispatch (a private variable); where the group's
    running work-items always meet one barrier, the place is the group's word."""
    mixed = _ir(two_barriers)
    assert "gpux.conv.dispatch" in mixed and "gpux.conv.mine" in mixed
    one = _ir(early_return)
    assert "gpux.conv.dispatch" in one and "gpux.conv.mine" not in one


def test_cuda_never_rewrites():
    assert "gpux.conv" not in _ir(early_return, target="cuda")


def test_needs_rewrite_reads_the_branch_that_parts_the_group():
    """The analysis on hand-written IR: a branch on the work-item's index that returns
    on one side and meets the barrier on the other needs the rewrite; the same branch
    on a kernel argument does not."""
    body = """entry:
  %t = call i64 @__gpux_thread_idx(i32 0)
  %c = icmp slt i64 %t, %n
  br i1 %c, label %work, label %done
work:
  call void @__gpux_barrier()
  br label %done
done:
  ret void""".split("\n")
    assert converge.needs_rewrite(body)
    uniform = [ln.replace("icmp slt i64 %t, %n", "icmp slt i64 %n, 7") for ln in body]
    assert not converge.needs_rewrite(uniform)
    # a phi that joins the two sides of a branch on the index is itself divergent
    joined = """entry:
  %t = call i64 @__gpux_thread_idx(i32 0)
  %c = icmp slt i64 %t, 4
  br i1 %c, label %a, label %b
a:
  br label %j
b:
  br label %j
j:
  %k = phi i64 [ 1, %a ], [ 2, %b ]
  %more = icmp slt i64 %k, 2
  br i1 %more, label %sync, label %done
sync:
  call void @__gpux_barrier()
  br label %done
done:
  ret void""".split("\n")
    assert converge.needs_rewrite(joined)


def test_split_sites_renames_the_phis_of_the_blocks_after():
    body = """entry:
  br label %a
a:
  %v = add i64 1, 2
  call void @__gpux_barrier()
  br label %b
b:
  %p = phi i64 [ %v, %a ]
  ret void""".split("\n")
    out = converge.split_sites(body)
    assert "  br label %gpux.conv.resume.0" in out
    assert any("[ %v, %gpux.conv.resume.0 ]" in ln for ln in out), out


def test_a_failed_rewrite_compiles_the_kernel_as_it_is_and_warns(monkeypatch):
    def broken(*args):
        raise ValueError("a construct the rewrite does not know")

    monkeypatch.setattr(converge, "add_dispatch", broken)
    with pytest.warns(RuntimeWarning, match="without the barrier rewrite.*does not know"):
        # (fastmath: not the code the other tests compiled, which is kept)
        text = gpux.compile(early_return, SIG, target="opencl", fastmath=True).llvm_ir
    assert "gpux.conv" not in text


def test_a_barrier_in_a_function_the_kernel_calls_leaves_the_kernel_as_it_is():
    """The rewrite moves only the kernel's own barriers to its dispatch; a kernel that
    also calls a function (not inlined) that meets one is not rewritten, and the
    compiler says why (a RuntimeWarning, above), as a limit of the rewrite, not as an
    internal compiler error."""
    text = """declare i64 @__gpux_thread_idx(i32)
declare void @__gpux_barrier()

define internal void @helper() noinline {
entry:
  call void @__gpux_barrier()
  ret void
}

define void @k(i64 %n) {
entry:
  %t = call i64 @__gpux_thread_idx(i32 0)
  %c = icmp slt i64 %t, %n
  br i1 %c, label %work, label %done
work:
  call void @__gpux_barrier()
  call void @helper()
  br label %done
done:
  ret void
}"""
    with pytest.raises(converge.CalleeBarrier, match="k calls helper, which meet") as got:
        converge.rewrite(text, ("k",), "", 3, lambda: None)
    assert "internal compiler error" not in str(got.value)
    # without the call, the same kernel is rewritten
    plain = text.replace("  call void @helper()\n", "")
    assert converge.needs_rewrite(plain.split("define void @k(i64 %n) {\n")[1]
                                  .split("\n}")[0].split("\n"))


SWITCHED = """define i32 @k(i64 %n) {
entry:
  %t = call i64 @__gpux_thread_idx(i32 0)
  %c = icmp slt i64 %t, %n
  br i1 %c, label %work, label %done
work:
  %s = call i32 @helper(i64 %t)
  switch i32 %s, label %error [
    i32 -2, label %ok
    i32 0, label %ok
  ], !prof !0
ok:
  call void @__gpux_barrier()
  br label %done
error:
  ret i32 %s
done:
  ret i32 0
}"""


def test_a_switchs_cases_are_successors_of_its_block():
    """LLVM prints a switch's cases a line each; each case's label is a successor (the
    barrier behind a device function's status switch was out of the analysis' sight,
    so kernels whose other work-items finished were not rewritten)."""
    from numba_gpux import divergence

    body = SWITCHED.split("\n")[1:-1]
    blks = {b.label: b for b in divergence.blocks(body)}
    assert blks["%work"].succ == ["%error", "%ok"] and blks["%work"].term_op == "switch"
    assert blks["%ok"].succ == ["%done"]
    assert blks["%work"].error == "%error"  # Numba's status check: where a callee raised
    assert converge.needs_rewrite(body)
    # a kernel whose only branch apart is such a check is left as it is (a work-item
    # that raised has failed the launch; the group's barriers need not count it out)
    uniform = [ln for ln in body if "%c = " not in ln]
    uniform = [ln.replace("br i1 %c, label %work, label %done", "br label %work")
               for ln in uniform]
    assert not converge.needs_rewrite(uniform)


def test_barriers_behind_a_device_call_meet_the_finished_work_items(device):
    """Only the threads holding an element meet the barriers, behind calls that Numba
    checks with a status switch (``2 ** x``, a device function); the others finish:
    the rewrite counts them out, as CUDA does (the sums were 0.0)."""
    from numba_gpux import cuda

    @cuda.jit(device=True)
    def plus(x, y):
        return x + y

    @cuda.jit
    def partial_sums(a, out):
        sm = cuda.shared.array(64, np.float64)
        t = cuda.threadIdx.x
        sm[t] = 0.0
        if t < a.size:
            sm[t] = a[t]
            cuda.syncthreads()
            x = 0
            while 2 ** x < 64:
                j = 2 ** x
                if t % (j * 2) == 0:
                    sm[t] = plus(sm[t], sm[t + j])
                    cuda.syncthreads()
                x += 1
        if t == 0:
            out[0] = sm[0]

    for n in (1, 5, 37, 64):
        a = cuda.to_device(np.arange(1.0, n + 1))
        out = cuda.device_array(1)
        partial_sums[1, 64](a, out)
        assert out.copy_to_host()[0] == n * (n + 1) / 2, n
