"""NVPTX definitions: dynamic shared memory, barriers with a predicate, fences.

Dynamic shared memory is CUDA's ``extern __shared__`` array: one external
addrspace(3) variable (ptxas gives it the launch's dynamic shared size) and the
``%dynamic_smem_size`` special register for its size.  ``barrier_count/and/or``
are ``bar.red.popc/and/or`` (``__syncthreads_count/and/or``); fences are
``membar.cta/gl/sys`` (``__threadfence_block``, ``__threadfence``,
``__threadfence_system``).
"""

from __future__ import annotations

from numba_gpux.overlays import registry

NVPTX = registry("nvptx")

_ATTR = "alwaysinline nounwind"

NVPTX.define("__gpux_dynamic_shared", (
    "@__gpux_dynamic_shared_mem = external addrspace(3) global [0 x i8], align 16\n"
    f"define ptr @__gpux_dynamic_shared() {_ATTR} {{\n"
    "  %p = addrspacecast ptr addrspace(3) @__gpux_dynamic_shared_mem to ptr\n"
    "  ret ptr %p\n}"))
NVPTX.define("__gpux_dynamic_shared_bytes", (
    f"define i64 @__gpux_dynamic_shared_bytes() {_ATTR} {{\n"
    '  %n = call i32 asm "mov.u32 $0, %dynamic_smem_size;", "=r"()\n'
    "  %r = zext i32 %n to i64\n  ret i64 %r\n}"))

for _op in ("popc", "and", "or"):
    _name = "count" if _op == "popc" else _op
    NVPTX.define(f"__gpux_barrier_{_name}", (
        f"declare i32 @llvm.nvvm.barrier0.{_op}(i32) convergent nounwind\n"
        f"define i32 @__gpux_barrier_{_name}(i32 %p) {_ATTR} convergent {{\n"
        f"  %r = call i32 @llvm.nvvm.barrier0.{_op}(i32 %p)\n  ret i32 %r\n}}"))

for _scope, _membar in (("block", "cta"), ("device", "gl"), ("system", "sys")):
    NVPTX.define(f"__gpux_fence_{_scope}", (
        f"declare void @llvm.nvvm.membar.{_membar}() nounwind\n"
        f"define void @__gpux_fence_{_scope}() {_ATTR} {{\n"
        f"  call void @llvm.nvvm.membar.{_membar}()\n  ret void\n}}"))

# Arrays that kernels make (numba_gpux/language/heap.py): CUDA's device malloc/free,
# whose heap the driver sizes (Runtime.set_heap_size); a request malloc cannot meet
# sets the exhaustion flag of the heap buffer's header, which the launch reports.
NVPTX.define("__gpux_malloc", (
    "declare ptr @malloc(i64) nounwind\n"
    "declare ptr addrspace(1) @__gpux_heap() nounwind\n"
    f"define ptr @__gpux_malloc(i64 %size) {_ATTR} {{\n"
    "entry:\n"
    "  %p = call ptr @malloc(i64 %size) nobuiltin\n"
    "  %none = icmp eq ptr %p, null\n"
    "  br i1 %none, label %fail, label %done\n"
    "fail:\n"
    "  %heap = call ptr addrspace(1) @__gpux_heap()\n"
    "  %f0 = atomicrmw or ptr addrspace(1) %heap, i64 1 monotonic, align 8\n"
    "  %fp = getelementptr inbounds i64, ptr addrspace(1) %heap, i64 1\n"
    "  %f1 = atomicrmw umax ptr addrspace(1) %fp, i64 %size monotonic, align 8\n"
    "  br label %done\n"
    "done:\n"
    "  ret ptr %p\n}"))
NVPTX.define("__gpux_free", (
    "declare void @free(ptr) nounwind\n"
    f"define void @__gpux_free(ptr %p) {_ATTR} {{\n"
    "  call void @free(ptr %p)\n  ret void\n}"))
