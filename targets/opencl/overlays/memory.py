"""SPIR-V definitions: barriers with a predicate, memory fences.

Dynamic shared memory (``__gpux_dynamic_shared``, ``__gpux_dynamic_shared_bytes``)
has no definition here on purpose: OpenCL passes work-group memory of a size
chosen at launch as a ``__local`` kernel argument, so the target's finishing
step (``OpenCLTarget.finish_module``, ``OpenCLOptions.dynamic_shared_params``)
turns the calls into two trailing kernel parameters.
"""

from __future__ import annotations

from numba_gpux.overlays import registry

SPIRV = registry("spirv")

_ATTR = "alwaysinline nounwind convergent"
#: CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE
_BARRIER = "declare void @_Z7barrierj(i32) convergent\n"
#: OpenCL 2.0 work-group collectives (OpGroupIAdd / OpGroupAll / OpGroupAny)
_COLLECTIVE = {"count": "_Z21work_group_reduce_addi", "and": "_Z14work_group_alli",
               "or": "_Z14work_group_anyi"}

for _op, _fn in _COLLECTIVE.items():
    SPIRV.define(f"__gpux_barrier_{_op}", (
        f"{_BARRIER}declare i32 @{_fn}(i32) convergent\n"
        f"define i32 @__gpux_barrier_{_op}(i32 %p) {_ATTR} {{\n"
        f"  call void @_Z7barrierj(i32 3)\n"
        f"  %r = call i32 @{_fn}(i32 %p)\n  ret i32 %r\n}}"))

#: SPIR-V Scope: CrossDevice 0, Device 1, Workgroup 2
_SCOPES = {"block": 2, "device": 1, "system": 0}
#: SequentiallyConsistent 0x10 | WorkgroupMemory 0x100 | CrossWorkgroupMemory 0x200
_SEMANTICS = 0x310

for _scope, _n in _SCOPES.items():
    SPIRV.define(f"__gpux_fence_{_scope}", (
        "declare void @_Z21__spirv_MemoryBarrierjj(i32, i32)\n"
        f"define void @__gpux_fence_{_scope}() alwaysinline nounwind {{\n"
        f"  call void @_Z21__spirv_MemoryBarrierjj(i32 {_n}, i32 {_SEMANTICS})\n"
        f"  ret void\n}}"))
