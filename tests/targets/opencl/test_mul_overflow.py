"""The OpenCL target's definitions of ``llvm.smul/umul.with.overflow`` (written out as
plain integer operations: the Intel CPU driver fails to link the OpSMulExtended that
LLVM's SPIR-V back end writes for the intrinsics), run on the host by LLVM's JIT and
compared with exact products."""

from __future__ import annotations

import ctypes

import llvmlite.binding as ll
import pytest

import numba_gpux.targets.opencl.overlays  # noqa: F401  (defines the SPIR-V registry)
from numba_gpux.overlays import registry

#: (a, b) pairs around the edges: zero, one, minus one, the extremes, products just
#: inside and just outside the range
_EDGE = (0, 1, -1, 2, -2, 3, 7, -128, 127, 255, 1 << 15, (1 << 31) - 1, -(1 << 31), 1 << 32,
         (1 << 62), -(1 << 62), (1 << 63) - 1, -(1 << 63), 3037000499, 3037000500,
         -3037000500, 6074001000, (1 << 63) // 3)


def _jit(bits: int, op: str):
    """A host function (a, b, out) calling the overlay's definition: out[0] the wrapped
    product, out[1] the overflow flag."""
    t = f"i{bits}"
    name = f"__gpux_llvm_{op}_with_overflow_{t}"
    text = registry("spirv").get(name)
    assert text is not None, f"{name} is not defined in the SPIR-V overlay registry"
    widen = "" if bits == 64 else \
        f"  %pw = {'sext' if op == 'smul' else 'zext'} {t} %p to i64\n"
    wrapper = (f"define void @w({t} %a, {t} %b, ptr %out) {{\n"
               f"  %r = call {{ {t}, i1 }} @{name}({t} %a, {t} %b)\n"
               f"  %p = extractvalue {{ {t}, i1 }} %r, 0\n"
               f"  %o = extractvalue {{ {t}, i1 }} %r, 1\n" + widen +
               f"  %ow = zext i1 %o to i64\n"
               f"  store i64 {'%p' if bits == 64 else '%pw'}, ptr %out\n"
               f"  %o1 = getelementptr i64, ptr %out, i64 1\n"
               f"  store i64 %ow, ptr %o1\n  ret void\n}}\n")
    ll.initialize_native_target()
    ll.initialize_native_asmprinter()
    mod = ll.parse_assembly(text + "\n" + wrapper)
    mod.verify()
    tm = ll.Target.from_default_triple().create_target_machine()
    engine = ll.create_mcjit_compiler(mod, tm)
    engine.finalize_object()
    narrow = {8: ctypes.c_int8, 16: ctypes.c_int16, 32: ctypes.c_int32, 64: ctypes.c_int64}
    if op == "umul":
        narrow = {8: ctypes.c_uint8, 16: ctypes.c_uint16, 32: ctypes.c_uint32, 64: ctypes.c_uint64}
    fn = ctypes.CFUNCTYPE(None, narrow[bits], narrow[bits], ctypes.POINTER(ctypes.c_int64))(
        engine.get_function_address("w"))
    return engine, fn


@pytest.mark.parametrize("op", ["smul", "umul"])
@pytest.mark.parametrize("bits", [8, 16, 32, 64])
def test_product_and_overflow_flag_match_exact_arithmetic(op, bits):
    engine, fn = _jit(bits, op)
    signed = op == "smul"
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    values = sorted({v for v in _EDGE if lo <= v <= hi} | {lo, hi, lo + 1, hi - 1})
    out = (ctypes.c_int64 * 2)()
    for a in values:
        for b in values:
            fn(a, b, out)
            exact = a * b
            wrapped = exact & ((1 << bits) - 1)
            if signed and wrapped >> (bits - 1):
                wrapped -= 1 << bits
            got = out[0] if signed else out[0] & ((1 << 64) - 1)
            assert got == wrapped, (a, b)
            assert out[1] == (not lo <= exact <= hi), (a, b, exact)
    del engine
