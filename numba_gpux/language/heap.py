"""The device runtime: arrays that kernels create (``np.zeros(n)``, ``a + b``,
``a.copy()``), as Numba's runtime (NRT) makes them on the CPU.

What is shared, and what a target changes:

* Numba lowers array creation and reference counting to calls of its runtime's C
  functions (``NRT_MemInfo_alloc_aligned``, ``NRT_incref``, ``NRT_decref``,
  ``NRT_MemInfo_data_fast`` ...).  Their definitions here are shared overlay
  defaults in neutral IR, written over two allocator intrinsics,
  ``__gpux_malloc(i64) -> ptr`` and ``__gpux_free(ptr)``.  An array is owned by
  the work-item that made it (GPU code cannot store an array where another
  work-item could read it), so reference counts are plain loads and stores.
* The allocator is the only part that differs per target, in each target's overlay
  registry.  The shared default is a heap of our own, for devices without a device
  allocator (OpenCL, Metal): a device buffer handed to every kernel that allocates,
  as a hidden last argument (:data:`HEAP_ARG`).  A target with its own device
  ``malloc`` (CUDA) overlays the two intrinsics and still gets the buffer, for the
  exhaustion flag.
* The kernel entry hands the hidden argument to ``__gpux_heap_enter``, which stores it
  into a work-group variable that the accessor ``__gpux_heap()`` reads: the allocator needs
  no parameter threaded through the user's device functions, and recursion works.
  Every work-item of a group stores the same value before it reads it.

The heap (:func:`header`): a 64-byte header (an exhaustion flag, the size of the
largest request that failed, the shard count and size, where the data starts), one
64-bit word per shard, then the shards.  Each shard is a bump arena whose word holds
its next free offset (low 32 bits) and its count of live blocks (high 32 bits),
changed by one compare-and-swap per allocation and per free; when the count returns
to zero the offset returns to zero: the shard's memory is free again.  A work-group
allocates from the shard of its group number (modulo the count), and from the next
ones when that is full.  Why bump arenas and not size classes: a kernel's arrays
typically die with the work-item that made them, so a shard drains soon; one CAS on
a word that only the few groups sharing a shard touch is the cheapest lock-free
allocation there is (no free lists, so no ABA problem, and no per-block header
beyond Numba's own MemInfo); and nothing ever waits on another work-item, which
GPUs (and CPU drivers that run a group's work-items one after another) do not
allow.  The cost: a shard whose blocks never all die at once is not reused until
the launch ends (the host resets the heap before every launch).

Devices without 64-bit atomics (Metal; an OpenCL device without ``int64_atomics`` on
the OpenCL C route) get the same allocator on 32-bit atomics: a target whose features lack
``int64_atomics`` lists :data:`HEAP32_FAMILY` among its overlay families
(:func:`heap_families`), whose registry defines ``__gpux_malloc``/``__gpux_free`` over
it; nothing here asks which target it is.  The shard word is then the low 32 bits of
its 64-bit slot (the header is the same for both), packed as the next free offset in
64-byte units in the low 16 bits and the live count in the high 16.  Offset and count
must share one word, because the free that drops the count to zero resets the offset
with one compare-and-swap that an allocation in between makes fail.  Counting 64-byte
units, not bytes, lets 16 bits cover a shard of :data:`SHARD_BYTES_32` (4 MiB less 64
bytes), and every block holds at least one unit, so the live count (16 bits too) can
never overflow; arrays carry Numba's 48-byte MemInfo and their alignment anyway, so
whole units waste little.  The costs: one array may have at most a shard's bytes (a
larger one is a MemoryError saying so), and the host makes at least enough shards of
at most that size for the whole heap (:func:`shard_count`).  The exhaustion flag and
the largest failed size are set with 32-bit atomics on the low halves of their words.

An allocation that does not fit sets the flag and returns null; Numba's lowering
then raises ``MemoryError`` in the kernel (which returns), nothing is written out of
bounds, and the launch raises :class:`MemoryError` on the host naming the kernel and
the heap size (:meth:`HeapBuffer.check`).
"""

from __future__ import annotations

import numpy as np

from .. import irlex
from .heap_allocator import (HEADER_BYTES, HEAP32_FAMILY, HEAP_ACCESSOR, HEAP_BASE, HEAP_ENTER,
                             OFFSET_BITS, SHARD_BYTES_32, UNIT_32, enter_default, free_32,
                             free_default, heap_families, malloc_32, malloc_default)
from .heap_allocator import _DATA, _FAILED, _FLAG, _SHARD_BYTES, _SHARDS

__all__ = ["HEAP_ARG", "HEAP_ACCESSOR", "HEAP_ENTER", "HEAP_BASE", "ALLOCATORS", "uses_heap",
           "entry_accessor", "register", "shard_count", "header", "HeapBuffer", "HEADER_BYTES", "allocates",
           "needs_runtime", "EnableRuntime", "ARRAYS_NEED_RUNTIME", "NO_CONTAINERS",
           "device_runtime_class", "HEAP32_FAMILY", "OFFSET_BITS", "UNIT_32", "SHARD_BYTES_32",
           "heap_families"]

#: the name of the hidden heap parameter of a kernel entry that allocates
HEAP_ARG = "gpux.heap"
#: Numba's runtime functions that allocate: a module that declares one takes the heap
ALLOCATORS = ("NRT_MemInfo_alloc_aligned", "NRT_MemInfo_alloc_safe_aligned",
              "NRT_MemInfo_alloc", "NRT_MemInfo_alloc_safe", "NRT_Allocate",
              "NRT_Allocate_External")

#: bytes of Numba's MemInfo: refct, dtor, dtor_info, data, size, external_allocator
_MEMINFO_BYTES = 48

def uses_heap(code) -> bool:
    """Whether a kernel allocates: *code* is its neutral library (the lowered code and
    what it links), or the neutral module text of its entry wrapper, whose hidden heap
    parameter is then named :data:`HEAP_ARG`."""
    if isinstance(code, str):
        want = irlex.spell_local(HEAP_ARG)
        return any(want in irlex.local_names(line) for line in irlex.lines(code)
                   if line.startswith("define") and HEAP_ARG in line)
    return any(code.mentions(n) for n in ALLOCATORS)


def entry_accessor(module, fn, builder) -> None:
    """In the kernel entry *fn* (an llvmlite function whose last parameter is the heap,
    being built by *builder* at its start): hand the heap to ``__gpux_heap_enter``."""
    from llvmlite import ir

    heap_ty = ir.PointerType(addrspace=1)
    enter = ir.Function(module, ir.FunctionType(ir.VoidType(), [heap_ty]), HEAP_ENTER)
    builder.call(enter, [fn.args[-1]])


# --------------------------------------------------------------- typing: Array._allocate
_registered: set = set()


def register(target: str) -> None:
    """Numba's array constructors allocate through the classmethod ``Array._allocate``,
    which Numba implements for its CPU target only: the same for *target* (once).  The
    method's template goes to the kernel language's typing registry, which only the
    shared GPU context installs: in Numba's global registry it would be found by CPU
    code too (``@njit`` of ``np.empty`` then fails to lower, in the same process)."""
    if target in _registered:
        return
    _registered.add(target)
    from numba.core import types
    from numba.core.extending import overload
    from numba.core.typing.templates import make_overload_method_template
    from numba.np.arrayobj import intrin_alloc

    from .lowering import superseding_registry
    from .typing import registry

    def _allocate(cls, allocsize, align):
        def impl(cls, allocsize, align):
            return intrin_alloc(allocsize, align)
        return impl

    template = make_overload_method_template(
        types.TypeRef(types.Array), "_allocate", _allocate, inline="never",
        prefer_literal=False, target=target)

    class AllocateMethod(template):
        # Numba puts a method's lowering in the registry of the target's it finds first,
        # Numba's builtin one here (the shared context installs it), which every CPU
        # context installs too, under the key of Numba's own Array._allocate: a CPU
        # function compiled later could take this one and fail to lower.  It goes to
        # the kernel language's registry installed after Numba's builtins instead.
        def _init_once(self):
            typ, attr = self.key, self._attr

            @superseding_registry.lower((typ, attr), typ, types.VarArg(types.Any))
            def method_impl(context, builder, sig, args):
                fnty = self._get_function_type(context.typing_context, sig.args[0])
                call = context.get_function(fnty, self._get_signature(
                    context.typing_context, fnty, sig.args, {}))
                context.add_linking_libs(getattr(call, "libs", ()))
                return call(builder, args)

    registry.register_attr(AllocateMethod)
    overload(_allocate, target=target)(_allocate)


# --------------------------------------------------------------- the shared definitions
def _alloc_aligned(name: str) -> str:
    """Numba's ``NRT_MemInfo_alloc_aligned(size, align)``: a MemInfo and, after it, *size*
    bytes aligned to *align*, in one block; null when the heap has no room."""
    return (
        "declare ptr @__gpux_malloc(i64) nounwind\n"
        f"define ptr @{name}(i64 %size, i32 %align) alwaysinline nounwind {{\n"
        "entry:\n"
        "  %a = zext i32 %align to i64\n"
        f"  %s1 = add i64 %size, {_MEMINFO_BYTES}\n"
        "  %total = add i64 %s1, %a\n"
        "  %blk = call ptr @__gpux_malloc(i64 %total)\n"
        "  %none = icmp eq ptr %blk, null\n"
        "  br i1 %none, label %fail, label %init\n"
        "init:\n"
        "  %bi = ptrtoint ptr %blk to i64\n"
        f"  %past = add i64 %bi, {_MEMINFO_BYTES}\n"
        "  %am1 = sub i64 %a, 1\n"
        "  %up = add i64 %past, %am1\n"
        "  %mask = xor i64 %am1, -1\n"
        "  %aligned = and i64 %up, %mask\n"
        "  %pad = sub i64 %aligned, %bi\n"
        "  %data = getelementptr inbounds i8, ptr %blk, i64 %pad\n"
        + _meminfo_fields() +
        "  ret ptr %blk\n"
        "fail:\n"
        "  ret ptr null\n"
        "}")


def _meminfo_fields() -> str:
    """The MemInfo's fields that are read: the count, the data pointer and the size (the
    destructor and allocator fields are never read on a device: no stores for them,
    which LLVM would otherwise merge into a memset call)."""
    return (
        "  store i64 1, ptr %blk, align 8\n"
        "  %f3 = getelementptr inbounds i8, ptr %blk, i64 24\n"
        "  store ptr %data, ptr %f3, align 8\n"
        "  %f4 = getelementptr inbounds i8, ptr %blk, i64 32\n"
        "  store i64 %size, ptr %f4, align 8\n")


def _alloc_unaligned(name: str) -> str:
    """``NRT_MemInfo_alloc(size)``: as the aligned one, at 16 bytes."""
    return (
        "declare ptr @NRT_MemInfo_alloc_aligned(i64, i32) nounwind\n"
        f"define ptr @{name}(i64 %size) alwaysinline nounwind {{\n"
        "  %m = call ptr @NRT_MemInfo_alloc_aligned(i64 %size, i32 16)\n"
        "  ret ptr %m\n"
        "}")


_DEFINITIONS = {
    "NRT_MemInfo_data_fast": (
        "define ptr @NRT_MemInfo_data_fast(ptr %mi) alwaysinline nounwind {\n"
        "  %f = getelementptr inbounds i8, ptr %mi, i64 24\n"
        "  %d = load ptr, ptr %f, align 8\n"
        "  ret ptr %d\n"
        "}"),
    "NRT_incref": (
        "define void @NRT_incref(ptr %mi) alwaysinline nounwind {\n"
        "entry:\n"
        "  %none = icmp eq ptr %mi, null\n"
        "  br i1 %none, label %done, label %add\n"
        "add:\n"
        "  %c = load i64, ptr %mi, align 8\n"
        "  %c1 = add i64 %c, 1\n"
        "  store i64 %c1, ptr %mi, align 8\n"
        "  br label %done\n"
        "done:\n"
        "  ret void\n"
        "}"),
    "NRT_decref": (
        "declare void @NRT_MemInfo_call_dtor(ptr) nounwind\n"
        "define void @NRT_decref(ptr %mi) alwaysinline nounwind {\n"
        "entry:\n"
        "  %none = icmp eq ptr %mi, null\n"
        "  br i1 %none, label %done, label %sub\n"
        "sub:\n"
        "  %c = load i64, ptr %mi, align 8\n"
        "  %c1 = sub i64 %c, 1\n"
        "  store i64 %c1, ptr %mi, align 8\n"
        "  %dead = icmp eq i64 %c1, 0\n"
        "  br i1 %dead, label %free, label %done\n"
        "free:\n"
        "  call void @NRT_MemInfo_call_dtor(ptr %mi)\n"
        "  br label %done\n"
        "done:\n"
        "  ret void\n"
        "}"),
    # the MemInfo and its data are one block (no destructor function: GPU code has no
    # function pointers; the meminfos that would need one, of lists and strings, are not
    # made in kernels)
    "NRT_MemInfo_call_dtor": (
        "declare void @__gpux_free(ptr) nounwind\n"
        "define void @NRT_MemInfo_call_dtor(ptr %mi) alwaysinline nounwind {\n"
        "  call void @__gpux_free(ptr %mi)\n"
        "  ret void\n"
        "}"),
    "NRT_Allocate": (
        "declare ptr @__gpux_malloc(i64) nounwind\n"
        "define ptr @NRT_Allocate(i64 %size) alwaysinline nounwind {\n"
        "  %p = call ptr @__gpux_malloc(i64 %size)\n"
        "  ret ptr %p\n"
        "}"),
    "NRT_Free": (
        "declare void @__gpux_free(ptr) nounwind\n"
        "define void @NRT_Free(ptr %p) alwaysinline nounwind {\n"
        "  call void @__gpux_free(ptr %p)\n"
        "  ret void\n"
        "}"),
}


def _shared_defaults() -> None:
    from ..overlays import SHARED, Deferred, registry

    shared = registry(SHARED)
    # (the accessor is asked for alone where a kernel frees but makes no array, e.g. a
    # reference count dropped to zero on code that opt=0 leaves unfolded: then the
    # variable is never set, and no block of the heap is ever freed)
    shared.define(HEAP_ENTER, Deferred(enter_default))
    shared.define(HEAP_ACCESSOR, Deferred(enter_default))
    shared.define("__gpux_malloc", Deferred(malloc_default))
    shared.define("__gpux_free", Deferred(free_default))
    for name in ("NRT_MemInfo_alloc_aligned", "NRT_MemInfo_alloc_safe_aligned"):
        shared.define(name, Deferred(_alloc_aligned, name))
    for name in ("NRT_MemInfo_alloc", "NRT_MemInfo_alloc_safe"):
        shared.define(name, Deferred(_alloc_unaligned, name))
    for name, text in _DEFINITIONS.items():
        shared.define(name, text)
    # the allocator of devices without 64-bit atomics, for the targets that list the family
    heap32 = registry(HEAP32_FAMILY)
    heap32.define("__gpux_malloc", Deferred(malloc_32))
    heap32.define("__gpux_free", Deferred(free_32))


_shared_defaults()


# --------------------------------------------------------------- the host's side
def shard_count(heap_bytes: int, groups: int, parallel_groups: int,
                shard_limit: int = 1 << 31) -> int:
    """The shards of a heap of *heap_bytes* (0: the target's own allocator serves the
    blocks, none) for a launch of *groups* work-groups on a device that runs about
    *parallel_groups* of them at once: one per group that runs at once (with room to
    spare), each of at least 4 KiB; and enough that none is larger than *shard_limit*
    (the 32-bit allocator's :data:`SHARD_BYTES_32`), so the whole heap is used."""
    if heap_bytes <= 0:
        return 0
    few = max(1, min(int(groups), 4 * int(parallel_groups), heap_bytes // 4096))
    return max(few, -(-heap_bytes // shard_limit))


def header(heap_bytes: int, shards: int, shard_limit: int = 1 << 31) -> tuple[np.ndarray, int]:
    """The heap's header and *shards* shard words (:func:`shard_count`; 0: the buffer is
    only the header): the int64 words to write before a launch, and the buffer's size
    in bytes."""
    words = HEADER_BYTES // 8
    if shards == 0:
        return np.zeros(words, np.int64), HEADER_BYTES
    shard_bytes = min((heap_bytes // shards) // 64 * 64, shard_limit // 64 * 64)
    data = HEADER_BYTES + 8 * shards
    data = (data + 63) // 64 * 64
    head = np.zeros(words + shards, np.int64)
    head[_SHARDS], head[_SHARD_BYTES], head[_DATA] = shards, shard_bytes, data
    return head, data + shards * shard_bytes


class HeapBuffer:
    """The hidden heap argument of a kernel that allocates, on one device: armed before
    each launch (the header and the shards reset), checked after it.

    *make(nbytes)* gives a device array of that many bytes on the device (the launch
    layer above owns device memory); *heap_bytes* is the heap size option
    (``config.heap_size``), *own_allocator* whether the target's device allocator
    serves the blocks (then only the header is on this buffer); *families* the target's
    overlay families (with :data:`HEAP32_FAMILY`: the 32-bit allocator, whose shards are
    at most :data:`SHARD_BYTES_32` bytes)."""

    __slots__ = ("make", "array", "kernel", "heap_bytes", "own_allocator", "parallel",
                 "shard_limit", "_shards", "_head")

    def __init__(self, make, kernel_name: str, heap_bytes: int, own_allocator: bool,
                 parallel_groups: int, families: tuple = ()):
        self.make = make
        self.array = None
        self.kernel = kernel_name
        self.heap_bytes = int(heap_bytes)
        self.own_allocator = own_allocator
        self.parallel = max(1, int(parallel_groups))
        self.shard_limit = SHARD_BYTES_32 if HEAP32_FAMILY in families else 1 << 31
        self._shards = None
        self._head = None

    def arm(self, griddim, queue=None):
        """Reset the heap for a launch of *griddim* groups; the handle to pass."""
        groups = int(griddim[0]) * int(griddim[1]) * int(griddim[2])
        shards = shard_count(0 if self.own_allocator else self.heap_bytes, groups,
                             self.parallel, self.shard_limit)
        if shards != self._shards:
            self._head, nbytes = header(self.heap_bytes, shards, self.shard_limit)
            if self.array is None or self.array.nbytes < nbytes:
                self.array = self.make(nbytes)
            self._shards = shards
        self.array[:self._head.nbytes].copy_to_device(self._head.view(np.uint8), stream=queue)
        return self.array._alloc.handle

    def _why_shard_limit(self) -> str:
        if self.shard_limit == SHARD_BYTES_32:
            return "its allocator uses 32-bit atomics"
        return "a shard holds at most 2 GiB: its next free offset is a 32-bit word"

    def check(self) -> None:
        """After the launch has finished: raise MemoryError if an allocation failed."""
        got = np.empty(2, np.int64)
        self.array[:16].copy_to_host(got.view(np.uint8))
        if got[_FLAG]:
            from ..config import HEAP_SIZE_ENV

            if int(got[_FAILED]) > self.shard_limit:
                raise MemoryError(
                    f"kernel {self.kernel}: an allocation of {int(got[_FAILED])} bytes (an "
                    f"array and its header) is larger than the {self.shard_limit} bytes of "
                    f"one shard of the device heap, the most one array may have on this "
                    f"device ({self._why_shard_limit()}); make smaller arrays in the "
                    f"kernel, or pass large ones in")
            raise MemoryError(
                f"kernel {self.kernel}: an allocation of {int(got[_FAILED])} bytes (an array "
                f"and its header) did not fit in the device heap of {self.heap_bytes} bytes "
                f"(arrays the kernel makes, np.zeros and the like, come from it); the "
                f"work-items that got none stopped.  Raise it with the environment "
                f"variable {HEAP_SIZE_ENV} (bytes) or numba_gpux.config.set_heap_size()")


# --------------------------------------------------------------- when a compile needs NRT
def _makes_arrays(ty) -> bool:
    from numba.core import types

    if isinstance(ty, types.Array):
        return True
    if isinstance(ty, types.BaseTuple):
        return any(_makes_arrays(t) for t in ty.types)
    return False


def _allocates_nothing(fnty) -> bool:
    """A callee whose array result is no allocation: the kernel language's own arrays
    (local, shared and constant arrays, views of pointers) and private arrays."""
    from .private_arrays import is_private_constructor
    from .stubs import Stub

    return isinstance(getattr(fnty, "typing_key", None), Stub) or is_private_constructor(fnty)


def allocates(func_ir, typemap) -> bool:
    """Whether typed code may make an array (so it is lowered with Numba's runtime): an
    operation or call whose result holds an array, except the views that indexing and
    attributes give.  Code that only reads its arguments' arrays does not.  (A call whose
    result is a number may still allocate inside, e.g. ``np.median``: the lowering then
    asks for the runtime, and :func:`needs_runtime` tells the compile to start again.)"""
    from numba.core import ir

    for block in func_ir.blocks.values():
        for inst in block.body:
            if not isinstance(inst, ir.Assign) or not isinstance(inst.value, ir.Expr):
                continue
            expr = inst.value
            if expr.op in ("call", "binop", "inplace_binop", "unary"):
                if _makes_arrays(typemap.get(inst.target.name)) and not (
                        expr.op == "call" and _allocates_nothing(typemap.get(
                            expr.func.name))):
                    return True
            elif expr.op in ("getitem", "static_getitem"):  # fancy indexing copies
                var = expr.index if expr.op == "getitem" else expr.index_var
                index = typemap.get(var.name) if isinstance(var, ir.Var) else None
                if _makes_arrays(typemap.get(inst.target.name)) and _makes_arrays(index):
                    return True
    return False


#: what the lowering of an array allocation says when the compile has no runtime: a
#: compile whose failure mentions it starts again with the runtime
ARRAYS_NEED_RUNTIME = "arrays made here need the device runtime"
#: why an implementation that makes a string or a container does not compile
NO_CONTAINERS = ("strings, lists, dicts and sets are not made in GPU code (only arrays "
                 "come from the device runtime)")


def device_runtime_class():
    """Numba's NRTContext whose array allocations, in a compile without the runtime, fail
    with :data:`ARRAYS_NEED_RUNTIME` (other uses of the runtime, by strings and lists,
    fail as in Numba, and start nothing again)."""
    global _DeviceRuntime
    if _DeviceRuntime is None:
        from numba.core.errors import NumbaRuntimeError
        from numba.core.runtime.context import NRTContext

        class DeviceRuntime(NRTContext):
            def _arrays(self):
                if not self._enabled:
                    raise NumbaRuntimeError(ARRAYS_NEED_RUNTIME)

            def meminfo_alloc_aligned_unchecked(self, builder, size, align):
                self._arrays()
                return super().meminfo_alloc_aligned_unchecked(builder, size, align)

            def allocate_unchecked(self, builder, size):
                self._arrays()
                return super().allocate_unchecked(builder, size)

            # strings, lists, dicts, sets: not made in GPU code (their memory has a
            # destructor called through a function pointer, or Python's string layout),
            # so an implementation that makes one does not compile for a device
            def meminfo_alloc_unchecked(self, builder, size):
                raise NumbaRuntimeError(NO_CONTAINERS)

            def meminfo_alloc_dtor_unchecked(self, builder, size, dtor):
                raise NumbaRuntimeError(NO_CONTAINERS)

            def meminfo_new_varsize_unchecked(self, builder, size):
                raise NumbaRuntimeError(NO_CONTAINERS)

            def meminfo_new_varsize_dtor_unchecked(self, builder, size, dtor):
                raise NumbaRuntimeError(NO_CONTAINERS)

        _DeviceRuntime = DeviceRuntime
    return _DeviceRuntime


_DeviceRuntime = None


def needs_runtime(exc) -> bool:
    """Whether *exc* (from a compile, or what it wraps or says) is an array allocation
    that the compile lowered without the runtime (its code made an array that
    :func:`allocates` did not see): the compile then starts again with the runtime.
    (Typing always has the runtime, so nothing else asks for it.)"""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if ARRAYS_NEED_RUNTIME in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def _runtime_pass():
    from numba.core.compiler_machinery import AnalysisPass, register_pass

    @register_pass(mutates_CFG=False, analysis_only=True)
    class EnableRuntime(AnalysisPass):
        """After typing: code that makes or returns arrays is lowered with Numba's
        runtime (its reference counting and allocation); code that does not, without (and
        so as it would be without a device runtime).  Everything typing compiled on the
        way (Numba's implementations of what the code calls) has the runtime: one that
        returns an array it was given takes a reference for its caller, as the runtime's
        calling convention says, whichever way the caller is lowered."""

        _name = "gpux_enable_runtime"

        def __init__(self):
            AnalysisPass.__init__(self)

        def run_pass(self, state):
            ctx = state.targetctx
            need = (getattr(state.flags, "gpux_runtime", False)
                    or _makes_arrays(state.return_type)
                    or allocates(state.func_ir, state.typemap))
            if ctx.enable_nrt != need:
                state.targetctx = ctx.subtarget(enable_nrt=need)
            return False

    return EnableRuntime


EnableRuntime = _runtime_pass()
