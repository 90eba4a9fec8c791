"""Grid-wide synchronization: ``gpux.this_grid().sync()`` (CUDA's cooperative groups).

``this_grid()`` is the group of every work-item of the launch; its ``sync()`` is a
barrier over all of them: no work-item passes it before every work-item of every
block has reached it, and what each wrote before it is visible to all after it.
``this_block()`` is the work-item's block; its ``sync()`` is ``gpux.barrier()``.

How it is built, the same on every target (no device runtime library):

* ``this_grid()`` lowers to a call of ``__gpux_grid_group()`` (a mark) and
  ``sync()`` to a call of ``__gpux_grid_sync()``; a kernel whose code (its device
  functions' included) takes the grid group is *cooperative*
  (:func:`uses_grid_sync`; numba.cuda's ``overload.cooperative``), a property of
  the compiled kernel that the launch path reads;
* such a kernel takes one hidden global buffer, the debug error buffer's
  (language/debug.py, :func:`debug.buffer_slots`), as the parameter
  ``%gpux.grid``.  Every function that makes those calls is ``alwaysinline``
  (:func:`mark_inlined`), so the neutral clean-up inlines them all into the
  kernel's entry point, where the sync calls become calls of
  ``__gpux_grid_barrier`` on the buffer parameter and the marks are dropped
  (:func:`pass_buffer`): no pointer is kept in memory or made from an integer,
  which C-family targets could not express;
* ``__gpux_grid_barrier(buffer)``, a portable intrinsic with a shared default that
  a target may override, is a generation-counting barrier: a work-group barrier;
  the block's first work-item fences, reads the generation, counts itself in; the
  last block to arrive resets the count and advances the generation, the others
  poll the generation, at most as many times as the launch wrote into the buffer,
  and give up early when another block has recorded a failure; a block that gives
  up records :data:`debug.GRID_SYNC_FAILED` in the error slots (the launch raises
  :class:`debug.GridSyncError`), never waits forever; then a fence and a
  work-group barrier.

Blocks only wait for each other, so all blocks of the grid must run at once: the
launch of such a kernel is a cooperative one, limited to the blocks the device runs
at once (``Runtime.cooperative_groups``; ``kernel.max_cooperative_grid_blocks``), a
larger grid being a LaunchError before anything runs.  Kernels that do not take
the grid group have no hidden argument and no cost.
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import types
from numba.core.datamodel.models import OpaqueModel
from numba.core.errors import TypingError
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import (
    AbstractTemplate, AttributeTemplate, Registry, bound_function, signature,
)

from .. import irlex
from .debug import ERROR_SLOTS, GRID_COUNT, GRID_GENERATION, GRID_SPINS, GRID_SYNC_FAILED
from .intrinsics import INTRINSICS, Intrinsic, call
from .stubs import Stub
from .types import register_data_model

__all__ = ["this_grid", "this_block", "GridGroup", "BlockGroup", "typing_registry",
           "lowering_registry", "uses_grid_sync", "mark_inlined", "pass_buffer", "GRID_SYNC",
           "GRID_GROUP", "GRID_BARRIER", "GRID_ARG", "BUFFER_ARG"]

I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID = ir.VoidType()
GLOBAL_PTR = ir.PointerType(addrspace=1)
#: the function ``sync()`` calls, made a call of GRID_BARRIER by :func:`pass_buffer`
GRID_SYNC = "__gpux_grid_sync"
#: the function ``this_grid()`` calls: the mark of a cooperative kernel, dropped by
#: :func:`pass_buffer`
GRID_GROUP = "__gpux_grid_group"
#: the portable barrier over the hidden buffer (the intrinsic targets may override)
GRID_BARRIER = "__gpux_grid_barrier"

INTRINSICS[GRID_BARRIER] = Intrinsic(
    GRID_BARRIER, VOID, (GLOBAL_PTR,),
    "Barrier over every work-item of the grid, ordering global and shared memory, on the "
    "kernel's hidden buffer (int32 slots: language/debug.py's error slots, then arrival "
    "count, generation and spin bound); every work-item of every block must reach it, and "
    "all blocks run at once (a cooperative launch).  A block that has polled the "
    "generation as often as the spin bound says records GRID_SYNC_FAILED in the error "
    "slots and goes on.  Shared default: a generation-counting barrier of work-group "
    "barriers, device fences and global atomics.")


# ---------------------------------------------------------------- types and stubs
class GridGroup(types.Type):
    """The Numba type of ``this_grid()``: the group of every work-item of the launch."""

    def __init__(self):
        super().__init__(name="GridGroup")


class BlockGroup(types.Type):
    """The Numba type of ``this_block()``: the work-items of one block."""

    def __init__(self):
        super().__init__(name="BlockGroup")


grid_group = GridGroup()
block_group = BlockGroup()
register_data_model(GridGroup, OpaqueModel)
register_data_model(BlockGroup, OpaqueModel)

this_grid = Stub("this_grid", "this_grid(): the group of every work-item of the launch; its "
                              "sync() waits for all of them (a cooperative launch: at most "
                              "kernel.max_cooperative_grid_blocks(blockdim) blocks).")
this_block = Stub("this_block", "this_block(): the work-items of this block; its sync() is "
                                "barrier().")

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.cooperative")


def _group_template(stub, ty):
    class Template(AbstractTemplate):
        key = stub

        def generic(self, args, kws):
            if args or kws:
                raise TypingError(f"{stub._name}() takes no arguments")
            return signature(ty)

    Template.__name__ = f"Gpux_{stub._name}"
    typing_registry.register(Template)
    typing_registry.register_global(stub, types.Function(Template))


_group_template(this_grid, grid_group)
_group_template(this_block, block_group)


def _sync_attribute(group_type):
    """Typing of ``group.sync()`` (no arguments, no result) on *group_type*."""

    class Attrs(AttributeTemplate):
        key = group_type

        @bound_function(f"{group_type.__name__}.sync")
        def resolve_sync(self, ty, args, kws):
            if not args and not kws:
                return signature(types.none)
            return None

    Attrs.__name__ = f"_{group_type.__name__}Attrs"
    typing_registry.register_attr(Attrs)


_sync_attribute(GridGroup)
_sync_attribute(BlockGroup)


_lower = lowering_registry.lower


def _marker(builder, name: str, convergent: bool) -> None:
    """A call of the declared function *name* (no arguments, no result) in the function
    being lowered, which is marked to be inlined (:func:`mark_inlined`)."""
    module = builder.module
    fn = module.globals.get(name)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(VOID, []), name)
        fn.attributes.add("nounwind")
        if convergent:
            fn.attributes.add("convergent")
    builder.call(fn, [])
    mark_inlined(builder.function)


@_lower(this_grid)
def _grid_impl(context, builder, sig, args):
    # a kernel that takes the grid group is cooperative, as in numba.cuda (where the
    # group's handle needs the cooperative launch), also if it never synchronizes
    _marker(builder, GRID_GROUP, convergent=False)
    return context.get_dummy_value()


@_lower(this_block)
def _block_impl(context, builder, sig, args):
    return context.get_dummy_value()


@_lower("GridGroup.sync", GridGroup)
def _grid_sync_impl(context, builder, sig, args):
    _marker(builder, GRID_SYNC, convergent=True)
    return context.get_dummy_value()


@_lower("BlockGroup.sync", BlockGroup)
def _block_sync_impl(context, builder, sig, args):
    call(builder, "__gpux_barrier")
    return context.get_dummy_value()


# ---------------------------------------------------------------- the kernel's side
#: the name of the entry wrapper's hidden buffer parameter in the neutral IR: of a
#: cooperative kernel (the mark :func:`uses_grid_sync` reads in its text), and of a
#: debug kernel that is not cooperative
GRID_ARG = "gpux.grid"
BUFFER_ARG = "gpux.buffer"


def uses_grid_sync(code) -> bool:
    """Whether a kernel is cooperative (takes the grid group: ``this_grid()``, and so
    may synchronize its grid): *code* is its neutral library (the lowered code and
    what it links) or the neutral module text of its entry wrapper, whose hidden
    buffer parameter is then named :data:`GRID_ARG`."""
    if isinstance(code, str):
        want = irlex.spell_local(GRID_ARG)
        return any(want in irlex.local_names(line) for line in irlex.lines(code)
                   if line.startswith("define") and GRID_ARG in line)
    return code.mentions(GRID_GROUP) or code.mentions(GRID_SYNC)


def mark_inlined(function) -> None:
    """Mark *function* (an ``ir.Function`` that takes the grid group or synchronizes
    the grid) ``alwaysinline``: the neutral clean-up then inlines it, and what it
    calls that does, into the kernel's entry point, where the hidden buffer is
    (:func:`pass_buffer`).  (Recursion is rejected, so inlining always ends.)"""
    attrs = function.attributes
    if "noinline" in attrs:
        attrs.remove("noinline")
    attrs.add("alwaysinline")


def pass_buffer(text: str, entry: str) -> str:
    """The neutral module *text* of the kernel *entry* with every call of
    ``__gpux_grid_sync()`` made a call of ``__gpux_grid_barrier`` on the entry's
    hidden buffer parameter (``%gpux.grid``), and the calls of ``__gpux_grid_group()``
    (marks of ``this_grid()``) dropped: a token rewrite of those calls and their
    declarations.  Every function that makes them is inlined into the entry point
    before (:func:`mark_inlined`); a call left in another function is an internal
    error."""
    from ..errors import InternalCompilerError

    sync, group = irlex.spell_global(GRID_SYNC), irlex.spell_global(GRID_GROUP)
    barrier = irlex.spell_global(GRID_BARRIER)
    arg = irlex.spell_local(GRID_ARG)
    lines = irlex.lines(text)
    owner = {}
    for f in irlex.functions(lines):
        for k in range(f.header, f.stop + 1):
            owner[k] = f.name
    out = []
    for k, line in enumerate(lines):
        names = irlex.global_names(line) if "__gpux_grid_" in line else ()
        callee = sync if sync in names else group if group in names else None
        if callee is None:
            out.append(line)
            continue
        toks = irlex.tokens(line)
        code = irlex.code(toks)
        declaration = bool(code) and code[0] == "declare"
        if not declaration and (irlex.instruction(toks)[0] != "call" or owner.get(k) != entry):
            raise InternalCompilerError(
                "grid sync", f"a use of {irlex.name(callee)} outside the kernel entry point "
                             f"{entry!r} (in {owner.get(k)!r}): {line.strip()}")
        if callee == group:
            continue  # the mark has done its work
        at = toks.index(sync)
        close = irlex.match_paren(toks, at + 1)
        params = ["ptr", " ", "addrspace", "(", "1", ")"] + ([] if declaration else [" ", arg])
        out.append(irlex.join(irlex.replace(toks, at, close + 1, [barrier, "(", *params, ")"])))
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


#: the error slots a failed barrier fills (language/debug.py's layout: flag, status,
#: thread x y z, block x y z)
_STATUS_SLOT, _THREAD_SLOT, _BLOCK_SLOT = 1, 2, 5
assert _BLOCK_SLOT + 3 == ERROR_SLOTS


def _barrier_default() -> str:
    """The shared definition of ``__gpux_grid_barrier`` (neutral IR text)."""
    p = "ptr addrspace(1)"

    def slot(name, k):
        return f"  %{name} = getelementptr inbounds i32, {p} %s, i64 {k}\n"

    def read(name, ptr):  # an atomic read that every back end has
        return f"  %{name} = atomicrmw add {p} %{ptr}, i32 0 seq_cst\n"

    record = "".join(
        f"  %tid{d} = call i64 @__gpux_thread_idx(i32 {d})\n"
        f"  %tid{d}t = trunc i64 %tid{d} to i32\n"
        f"  %tidp{d} = getelementptr inbounds i32, {p} %s, i64 {_THREAD_SLOT + d}\n"
        f"  store i32 %tid{d}t, {p} %tidp{d}, align 4\n"
        f"  %bid{d} = call i64 @__gpux_block_idx(i32 {d})\n"
        f"  %bid{d}t = trunc i64 %bid{d} to i32\n"
        f"  %bidp{d} = getelementptr inbounds i32, {p} %s, i64 {_BLOCK_SLOT + d}\n"
        f"  store i32 %bid{d}t, {p} %bidp{d}, align 4\n" for d in range(3))
    return (
        "declare void @__gpux_barrier() convergent nounwind\n"
        "declare void @__gpux_fence_device() nounwind\n"
        "declare i64 @__gpux_thread_idx(i32) nounwind\n"
        "declare i64 @__gpux_block_idx(i32) nounwind\n"
        "declare i64 @__gpux_grid_dim(i32) nounwind\n"
        f"define void @{GRID_BARRIER}({p} %s) alwaysinline convergent nounwind {{\n"
        "entry:\n"
        "  call void @__gpux_barrier()\n"
        "  %t0 = call i64 @__gpux_thread_idx(i32 0)\n"
        "  %t1 = call i64 @__gpux_thread_idx(i32 1)\n"
        "  %t2 = call i64 @__gpux_thread_idx(i32 2)\n"
        "  %t01 = or i64 %t0, %t1\n  %t012 = or i64 %t01, %t2\n"
        "  %leader = icmp eq i64 %t012, 0\n"
        "  br i1 %leader, label %arrive, label %done\n"
        "arrive:\n"
        + slot("countp", GRID_COUNT) + slot("genp", GRID_GENERATION)
        + slot("spinsp", GRID_SPINS) +
        "  call void @__gpux_fence_device()\n"
        + read("gen", "genp") +
        "  %g0 = call i64 @__gpux_grid_dim(i32 0)\n"
        "  %g1 = call i64 @__gpux_grid_dim(i32 1)\n"
        "  %g2 = call i64 @__gpux_grid_dim(i32 2)\n"
        "  %g01 = mul i64 %g0, %g1\n  %g012 = mul i64 %g01, %g2\n"
        "  %blocks = trunc i64 %g012 to i32\n"
        # (back ends may lower the atomics as relaxed ones, NVPTX does: the fences
        # order the generation read before the arrival, the reset before the release)
        "  call void @__gpux_fence_device()\n"
        f"  %before = atomicrmw add {p} %countp, i32 1 seq_cst\n"
        "  %arrived = add i32 %before, 1\n"
        "  %last = icmp eq i32 %arrived, %blocks\n"
        "  br i1 %last, label %release, label %wait\n"
        "release:\n"
        f"  %reset = atomicrmw xchg {p} %countp, i32 0 seq_cst\n"
        "  call void @__gpux_fence_device()\n"
        f"  %advanced = atomicrmw add {p} %genp, i32 1 seq_cst\n"
        "  br label %passed\n"
        "wait:\n"
        + read("spins", "spinsp") +
        "  br label %poll\n"
        "poll:\n"
        "  %i = phi i32 [ 0, %wait ], [ %next, %again ]\n"
        + read("now", "genp") +
        "  %moved = icmp ne i32 %now, %gen\n"
        "  br i1 %moved, label %passed, label %failed_q\n"
        "failed_q:\n"
        + read("flag", "s") +
        "  %failed = icmp ne i32 %flag, 0\n"
        "  br i1 %failed, label %passed, label %count\n"
        "count:\n"
        "  %next = add i32 %i, 1\n"
        "  %over = icmp uge i32 %next, %spins\n"
        "  br i1 %over, label %give_up, label %again\n"
        "again:\n"
        "  br label %poll\n"
        "give_up:\n"
        f"  %claim = cmpxchg {p} %s, i32 0, i32 1 seq_cst seq_cst\n"
        "  %was = extractvalue { i32, i1 } %claim, 0\n"
        "  %won = icmp eq i32 %was, 0\n"
        "  br i1 %won, label %report, label %passed\n"
        "report:\n"
        + slot("codep", _STATUS_SLOT) +
        f"  store i32 {GRID_SYNC_FAILED}, {p} %codep, align 4\n"
        + record +
        "  br label %passed\n"
        "passed:\n"
        "  call void @__gpux_fence_device()\n"
        "  br label %done\n"
        "done:\n"
        "  call void @__gpux_barrier()\n"
        "  ret void\n"
        "}")


def _shared_default() -> None:
    from ..overlays import SHARED, Deferred, registry

    registry(SHARED).define(GRID_BARRIER, Deferred(_barrier_default))


_shared_default()
