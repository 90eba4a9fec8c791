"""The device heap's allocator, in neutral IR: the heap's layout on the device, the
pointer to it in a work-group variable, and ``__gpux_malloc``/``__gpux_free`` -- the
shared default on 64-bit shard words, and the variant on 32-bit words for devices
without 64-bit atomics (overlay family :data:`HEAP32_FAMILY`).  heap.py's docstring
says how the heap works and why; it registers these definitions."""

from __future__ import annotations

__all__ = ["HEAP_ACCESSOR", "HEAP_ENTER", "HEAP_BASE", "HEADER_BYTES", "HEAP32_FAMILY",
           "OFFSET_BITS", "UNIT_32", "SHARD_BYTES_32", "heap_families", "enter_default",
           "malloc_default", "free_default", "malloc_32", "free_32"]

#: the accessor of the heap pointer (defined with :data:`HEAP_ENTER`)
HEAP_ACCESSOR = "__gpux_heap"
#: what a kernel entry that allocates calls first, with its heap
HEAP_ENTER = "__gpux_heap_enter"
#: the work-group variable that holds the heap pointer
HEAP_BASE = "__gpux_heap_base"
#: bytes of the header before the shard words; its 64-bit words:
#: 0: exhaustion flag (1: an allocation failed); 1: the largest failed request in bytes;
#: 2: shard count; 3: bytes per shard; 4: byte offset of the first shard
HEADER_BYTES = 64
_FLAG, _FAILED, _SHARDS, _SHARD_BYTES, _DATA = range(5)
#: shards probed after the group's own before an allocation fails
_PROBES = 16
#: the overlay family of targets whose devices lack 64-bit atomics (a target lists it in
#: its ``families`` where its features have no ``int64_atomics``): the allocator on one
#: 32-bit word per shard (:func:`malloc_32`)
HEAP32_FAMILY = "heap32"
#: the 32-bit shard word: the next free offset in units of :data:`UNIT_32` bytes in its
#: low :data:`OFFSET_BITS` bits, the count of live blocks in the high ones
OFFSET_BITS = 16
UNIT_32 = 64
#: the most bytes of a shard the 32-bit allocator uses: as many units as the offset counts
#: (every live block holds a unit at least, so the count of live blocks never overflows)
SHARD_BYTES_32 = UNIT_32 * ((1 << OFFSET_BITS) - 1)


def enter_default() -> str:
    """``__gpux_heap_enter(heap)``, which the entry calls first, stores the heap pointer
    in a work-group variable; ``__gpux_heap()``, defined with it, reads it."""
    return (
        f"@{HEAP_BASE} = internal addrspace(3) global {_P1} undef, align 8\n"
        f"define void @{HEAP_ENTER}({_P1} %heap) alwaysinline nounwind {{\n"
        f"  store {_P1} %heap, ptr addrspace(3) @{HEAP_BASE}, align 8\n"
        "  ret void\n"
        "}\n"
        f"define {_P1} @{HEAP_ACCESSOR}() alwaysinline nounwind {{\n"
        f"  %h = load {_P1}, ptr addrspace(3) @{HEAP_BASE}, align 8\n"
        f"  ret {_P1} %h\n"
        "}")


_P1 = "ptr addrspace(1)"


def _word(name: str, k: int) -> str:
    return f"  %{name} = getelementptr inbounds i64, {_P1} %heap, i64 {k}\n"


#: the allocators' first blocks after the size checks: the work-group's shard (its group
#: numbers hashed, modulo the shard count %ns), and the loop over the shards probed from
#: it (%s: the shard of probe %k; at most _PROBES of them, %tries)
_PICK_SHARD = (
    "pick:\n"
    "  %bx = call i64 @__gpux_block_idx(i32 0)\n"
    "  %by = call i64 @__gpux_block_idx(i32 1)\n"
    "  %bz = call i64 @__gpux_block_idx(i32 2)\n"
    "  %hy = mul i64 %by, 40503\n"
    "  %hz = mul i64 %bz, 2654435761\n"
    "  %h1 = add i64 %bx, %hy\n"
    "  %h = add i64 %h1, %hz\n"
    "  %s0 = urem i64 %h, %ns\n"
    f"  %few = icmp ult i64 %ns, {_PROBES}\n"
    f"  %tries = select i1 %few, i64 %ns, i64 {_PROBES}\n"
    "  br label %probe\n"
    "probe:\n"
    "  %k = phi i64 [ 0, %pick ], [ %k1, %next ]\n"
    "  %sk = add i64 %s0, %k\n"
    "  %s = urem i64 %sk, %ns\n"
)


def malloc_default() -> str:
    """``__gpux_malloc(i64 size) -> ptr``: a block of *size* bytes (16-byte aligned) from
    the group's shard of the heap, or null (flag set) when it does not fit."""
    return (
        f"declare {_P1} @{HEAP_ACCESSOR}() nounwind\n"
        "declare i64 @__gpux_block_idx(i32) nounwind\n"
        "define ptr @__gpux_malloc(i64 %size) alwaysinline nounwind {\n"
        "entry:\n"
        f"  %heap = call {_P1} @{HEAP_ACCESSOR}()\n"
        + _word("nsp", _SHARDS) + _word("sbp", _SHARD_BYTES) + _word("dop", _DATA) +
        f"  %ns = load i64, {_P1} %nsp, align 8\n"
        f"  %sb = load i64, {_P1} %sbp, align 8\n"
        f"  %do = load i64, {_P1} %dop, align 8\n"
        "  %s15 = add i64 %size, 15\n"
        "  %need = and i64 %s15, -16\n"
        "  %small = icmp ule i64 %need, %sb\n"
        "  %some = icmp ne i64 %ns, 0\n"
        "  %can = and i1 %small, %some\n"
        "  br i1 %can, label %pick, label %fail\n"
        + _PICK_SHARD +
        f"  %wi = add i64 %s, {HEADER_BYTES // 8}\n"
        f"  %wp = getelementptr inbounds i64, {_P1} %heap, i64 %wi\n"
        "  br label %cas\n"
        "cas:\n"
        # the first guess: a drained shard (one CAS when it is right, the common case)
        "  %old = phi i64 [ 0, %probe ], [ %seen, %retry ]\n"
        "  %off = and i64 %old, 4294967295\n"
        "  %live = lshr i64 %old, 32\n"
        "  %end = add i64 %off, %need\n"
        "  %fits = icmp ule i64 %end, %sb\n"
        "  br i1 %fits, label %try, label %next\n"
        "try:\n"
        "  %live1 = add i64 %live, 1\n"
        "  %hi = shl i64 %live1, 32\n"
        "  %new = or i64 %hi, %end\n"
        f"  %pair = cmpxchg {_P1} %wp, i64 %old, i64 %new monotonic monotonic, align 8\n"
        "  %seen = extractvalue { i64, i1 } %pair, 0\n"
        "  %won = extractvalue { i64, i1 } %pair, 1\n"
        "  br i1 %won, label %got, label %retry\n"
        "retry:\n"
        "  br label %cas\n"
        "got:\n"
        "  %base = mul i64 %s, %sb\n"
        "  %b1 = add i64 %base, %do\n"
        "  %at = add i64 %b1, %off\n"
        f"  %blk = getelementptr inbounds i8, {_P1} %heap, i64 %at\n"
        f"  %gen = addrspacecast {_P1} %blk to ptr\n"
        "  ret ptr %gen\n"
        "next:\n"
        "  %k1 = add i64 %k, 1\n"
        "  %more = icmp ult i64 %k1, %tries\n"
        "  br i1 %more, label %probe, label %fail\n"
        "fail:\n"
        + _word("flag", _FLAG) + _word("failed", _FAILED) +
        f"  %f0 = atomicrmw or {_P1} %flag, i64 1 monotonic, align 8\n"
        f"  %f1 = atomicrmw umax {_P1} %failed, i64 %size monotonic, align 8\n"
        "  ret ptr null\n"
        "}")


def _find_shard() -> str:
    """The frees' first blocks: nothing for a null pointer, else the shard %s the block
    at %p lies in (the heap %heap, its data offset %do and shard size %sb read)."""
    return (
        "define void @__gpux_free(ptr %p) alwaysinline nounwind {\n"
        "entry:\n"
        "  %none = icmp eq ptr %p, null\n"
        "  br i1 %none, label %done, label %find\n"
        "find:\n"
        f"  %heap = call {_P1} @{HEAP_ACCESSOR}()\n"
        + _word("sbp", _SHARD_BYTES) + _word("dop", _DATA) +
        f"  %sb = load i64, {_P1} %sbp, align 8\n"
        f"  %do = load i64, {_P1} %dop, align 8\n"
        f"  %p1 = addrspacecast ptr %p to {_P1}\n"
        f"  %pi = ptrtoint {_P1} %p1 to i64\n"
        f"  %hi0 = ptrtoint {_P1} %heap to i64\n"
        "  %rel = sub i64 %pi, %hi0\n"
        "  %inside = sub i64 %rel, %do\n"
        "  %s = udiv i64 %inside, %sb\n"
    )


def free_default() -> str:
    """``__gpux_free(ptr)``: one block fewer live in its shard; the last one frees the shard
    (its offset back to 0)."""
    return (
        f"declare {_P1} @{HEAP_ACCESSOR}() nounwind\n"
        + _find_shard() +
        f"  %wi = add i64 %s, {HEADER_BYTES // 8}\n"
        f"  %wp = getelementptr inbounds i64, {_P1} %heap, i64 %wi\n"
        # one block fewer live; the last one out resets the offset, unless an allocation
        # came in between (then its free, later, does)
        f"  %old = atomicrmw sub {_P1} %wp, i64 4294967296 monotonic, align 8\n"
        "  %live = lshr i64 %old, 32\n"
        "  %last = icmp eq i64 %live, 1\n"
        "  br i1 %last, label %reset, label %done\n"
        "reset:\n"
        "  %off = and i64 %old, 4294967295\n"
        f"  %pair = cmpxchg {_P1} %wp, i64 %off, i64 0 monotonic monotonic, align 8\n"
        "  br label %done\n"
        "done:\n"
        "  ret void\n"
        "}")


def heap_families(features) -> tuple:
    """The overlay families a target whose devices have *features* lists for its heap:
    the 32-bit allocator's where the devices lack ``int64_atomics``."""
    return () if "int64_atomics" in features else (HEAP32_FAMILY,)


def malloc_32() -> str:
    """``__gpux_malloc`` with 32-bit atomics only: as :func:`malloc_default`, with the
    shard word in the low 32 bits of its 64-bit slot (the offset in :data:`UNIT_32`-byte
    units, the live count above it), blocks of whole units, and a shard of at most
    :data:`SHARD_BYTES_32` bytes."""
    mask = (1 << OFFSET_BITS) - 1
    return (
        f"declare {_P1} @{HEAP_ACCESSOR}() nounwind\n"
        "declare i64 @__gpux_block_idx(i32) nounwind\n"
        "define ptr @__gpux_malloc(i64 %size) alwaysinline nounwind {\n"
        "entry:\n"
        f"  %heap = call {_P1} @{HEAP_ACCESSOR}()\n"
        + _word("nsp", _SHARDS) + _word("sbp", _SHARD_BYTES) + _word("dop", _DATA) +
        f"  %ns = load i64, {_P1} %nsp, align 8\n"
        f"  %sb = load i64, {_P1} %sbp, align 8\n"
        f"  %do = load i64, {_P1} %dop, align 8\n"
        f"  %big = icmp ugt i64 %sb, {SHARD_BYTES_32}\n"
        f"  %cap = select i1 %big, i64 {SHARD_BYTES_32}, i64 %sb\n"
        f"  %capu = udiv i64 %cap, {UNIT_32}\n"
        f"  %su = add i64 %size, {UNIT_32 - 1}\n"
        f"  %need = and i64 %su, {-UNIT_32}\n"
        f"  %units = udiv i64 %need, {UNIT_32}\n"
        "  %small = icmp ule i64 %need, %cap\n"
        "  %some = icmp ne i64 %ns, 0\n"
        "  %can = and i1 %small, %some\n"
        "  br i1 %can, label %pick, label %fail\n"
        + _PICK_SHARD +
        # the low half of the shard's 64-bit slot (the host resets the whole slot)
        "  %s2 = shl i64 %s, 1\n"
        f"  %wi = add i64 %s2, {HEADER_BYTES // 4}\n"
        f"  %wp = getelementptr inbounds i32, {_P1} %heap, i64 %wi\n"
        "  br label %cas\n"
        "cas:\n"
        "  %old = phi i32 [ 0, %probe ], [ %seen, %retry ]\n"
        f"  %off32 = and i32 %old, {mask}\n"
        f"  %live = lshr i32 %old, {OFFSET_BITS}\n"
        "  %off = zext i32 %off32 to i64\n"
        "  %end = add i64 %off, %units\n"
        "  %fits = icmp ule i64 %end, %capu\n"
        "  br i1 %fits, label %try, label %next\n"
        "try:\n"
        "  %live1 = add i32 %live, 1\n"
        f"  %hi = shl i32 %live1, {OFFSET_BITS}\n"
        "  %end32 = trunc i64 %end to i32\n"
        "  %new = or i32 %hi, %end32\n"
        f"  %pair = cmpxchg {_P1} %wp, i32 %old, i32 %new monotonic monotonic, align 4\n"
        "  %seen = extractvalue { i32, i1 } %pair, 0\n"
        "  %won = extractvalue { i32, i1 } %pair, 1\n"
        "  br i1 %won, label %got, label %retry\n"
        "retry:\n"
        "  br label %cas\n"
        "got:\n"
        "  %base = mul i64 %s, %sb\n"
        "  %b1 = add i64 %base, %do\n"
        f"  %offb = mul i64 %off, {UNIT_32}\n"
        "  %at = add i64 %b1, %offb\n"
        f"  %blk = getelementptr inbounds i8, {_P1} %heap, i64 %at\n"
        f"  %gen = addrspacecast {_P1} %blk to ptr\n"
        "  ret ptr %gen\n"
        "next:\n"
        "  %k1 = add i64 %k, 1\n"
        "  %more = icmp ult i64 %k1, %tries\n"
        "  br i1 %more, label %probe, label %fail\n"
        "fail:\n"
        # the low halves of the flag and of the failed size (little-endian devices; a
        # request of 4 GiB or more is told as 4 GiB - 1)
        + _word("flag", _FLAG) + _word("failed", _FAILED) +
        "  %huge = icmp ugt i64 %size, 4294967295\n"
        "  %sz = select i1 %huge, i64 4294967295, i64 %size\n"
        "  %sz32 = trunc i64 %sz to i32\n"
        f"  %f0 = atomicrmw or {_P1} %flag, i32 1 monotonic, align 8\n"
        f"  %f1 = atomicrmw umax {_P1} %failed, i32 %sz32 monotonic, align 8\n"
        "  ret ptr null\n"
        "}")


def free_32() -> str:
    """``__gpux_free`` on the 32-bit shard words of :func:`malloc_32`."""
    return (
        f"declare {_P1} @{HEAP_ACCESSOR}() nounwind\n"
        + _find_shard() +
        "  %s2 = shl i64 %s, 1\n"
        f"  %wi = add i64 %s2, {HEADER_BYTES // 4}\n"
        f"  %wp = getelementptr inbounds i32, {_P1} %heap, i64 %wi\n"
        f"  %old = atomicrmw sub {_P1} %wp, i32 {1 << OFFSET_BITS} monotonic, align 4\n"
        f"  %live = lshr i32 %old, {OFFSET_BITS}\n"
        "  %last = icmp eq i32 %live, 1\n"
        "  br i1 %last, label %reset, label %done\n"
        "reset:\n"
        f"  %off = and i32 %old, {(1 << OFFSET_BITS) - 1}\n"
        f"  %pair = cmpxchg {_P1} %wp, i32 %off, i32 0 monotonic monotonic, align 4\n"
        "  br label %done\n"
        "done:\n"
        "  ret void\n"
        "}")
