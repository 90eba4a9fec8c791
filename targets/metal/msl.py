"""The Metal Shading Language dialect of the C-family source emitter.

Buffers are ``device uchar*`` parameters bound at ``[[buffer(1)]]``...; every
scalar argument travels in one argument block at ``[[buffer(0)]]`` (a struct
with C layout, filled by the launcher with ``setBytes``), which keeps kernels
with many array arguments under Metal's 31 buffer bindings.  Thread and group
indices are kernel parameters with attributes, added only when a kernel reads
them.
"""

from __future__ import annotations

from dataclasses import dataclass

from numba_gpux.targets.cfamily import Dialect, register_dialect

__all__ = ["MSL", "MSLDialect", "ARGS_BUFFER_INDEX", "DSMEM_BYTES_INDEX", "args_struct_name"]

ARGS_BUFFER_INDEX = 0
#: the buffer index of the dynamic shared memory's size (Metal has 31 buffer bindings)
DSMEM_BYTES_INDEX = 30

_BUILTINS = {n: f"metal::{n}" for n in (
    "fabs", "fma", "fmin", "fmax", "sqrt", "floor", "ceil", "trunc", "rint", "round", "copysign",
    "fmod", "popcount", "clz", "ctz", "min", "max", "abs", "sin", "cos", "exp", "exp2", "log",
    "log2", "log10", "pow")}
_BUILTINS["mul_hi"] = "metal::mulhi"


def args_struct_name(kernel: str) -> str:
    return f"_gpux_args_{kernel}"


@dataclass(frozen=True)
class MSLDialect(Dialect):
    def kernel_params(self, kernel, params, implicit):
        decls, prologue, fields = [], [], []
        slot = ARGS_BUFFER_INDEX + 1
        for name, ctype, q in params:
            if ctype is None:
                decls.append(f"{q} uchar* {name} [[buffer({slot})]]")
                slot += 1
            else:
                # bool is not a portable argument type; the ABI passes booleans as uchar
                fields.append(f"  {ctype} {name};")
                prologue.append(f"{ctype} {name} = _gpux_args.{name};")
        preface = ""
        if fields:
            sname = args_struct_name(kernel)
            preface = f"struct {sname} {{\n" + "\n".join(fields) + "\n};"
            decls.insert(0, f"constant {sname}& _gpux_args [[buffer({ARGS_BUFFER_INDEX})]]")
        decls += [self.implicit_params[i] for i in implicit]
        return decls, prologue, preface


MSL = register_dialect(MSLDialect(
    name="msl",
    # neutral address spaces -> MSL; MSL has no generic address space
    qualifiers={1: "device", 3: "threadgroup", 4: "constant", 5: "thread"},
    kernel_qualifier="kernel",
    preamble="#include <metal_stdlib>\nusing namespace metal;",
    bitcast="as_type<{t}>({x})",
    builtins=_BUILTINS,
    implicit_params={
        "_gpux_tid": "uint3 _gpux_tid [[thread_position_in_threadgroup]]",
        "_gpux_bid": "uint3 _gpux_bid [[threadgroup_position_in_grid]]",
        "_gpux_bdim": "uint3 _gpux_bdim [[threads_per_threadgroup]]",
        "_gpux_gdim": "uint3 _gpux_gdim [[threadgroups_per_grid]]",
        "_gpux_lane": "uint _gpux_lane [[thread_index_in_simdgroup]]",
        "_gpux_sgsize": "uint _gpux_sgsize [[threads_per_simdgroup]]",
        "_gpux_sgid": "uint _gpux_sgid [[simdgroup_index_in_threadgroup]]",
        "_gpux_sgcount": "uint _gpux_sgcount [[simdgroups_per_threadgroup]]",
        # dynamic shared memory (launch.py sets its length and writes the size at buffer 30)
        "_gpux_dsmem": "threadgroup uchar* _gpux_dsmem [[threadgroup(0)]]",
        "_gpux_dsmem_bytes": "constant ulong& _gpux_dsmem_bytes [[buffer(30)]]",
    },
    constant_array="{q} ulong {name}[{n}] = {{{init}}};",
    shared_array="{q} ulong {name}[{n}];",
    helper_prefix="static inline",
    source_families=("metal",),
    float_style="decimal",
))
