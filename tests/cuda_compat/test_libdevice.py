"""``numba_gpux.cuda.libdevice``: every libdevice function types and compiles, the
portable ones run on every device and agree with Python's math, the rest fail clearly
off CUDA."""

import math
import struct

import numpy as np
import pytest

import numba_gpux
from numba_gpux import cuda
from numba_gpux.cuda import libdevice
from numba_gpux.errors import ValidationError

_ARG = {"f": "np.float32(0.75)", "d": "0.75", "i": "np.int32(3)", "q": "np.int64(5)",
        "h": "np.int16(15360)"}


def _all_calls_kernel(names):
    """A kernel calling each of *names* once, adding up every result into out[k]."""
    lines = ["def kernel(out):"]
    for k, name in enumerate(names):
        ret, codes = libdevice.TABLE[name]
        args = ", ".join(_ARG[c] for c, is_out in codes if not is_out)
        nres = (ret != "v") + sum(1 for _, is_out in codes if is_out)
        lines.append(f"    r = libdevice.{name}({args})")
        value = " + ".join(f"r[{j}]" for j in range(nres)) if nres > 1 else "r"
        lines.append(f"    out[{k}] = {value}")
    ns = {"libdevice": libdevice, "np": np}
    exec(compile("\n".join(lines), f"<libdevice calls {len(names)}>", "exec"), ns)
    return ns["kernel"]


def test_every_numba_cuda_name_is_there():
    assert len(libdevice.TABLE) == 317
    for name in ("sin", "sinf", "frexp", "sincos", "byte_perm", "j0", "fma_rd", "umul64hi",
                 "float2half_rn", "nextafterf", "normcdfinv"):
        assert callable(getattr(libdevice, name)), name
        assert name in libdevice.__all__
    assert set(libdevice.unportable()) < set(libdevice.TABLE)
    assert "j0" in libdevice.unportable() and "sin" not in libdevice.unportable()


def test_every_function_compiles_for_cuda(ptxas):
    kernel = _all_calls_kernel(sorted(libdevice.TABLE))
    res = numba_gpux.compile(kernel, "void(float64[::1])", target="cuda")
    assert ".entry" in res.text
    # the unportable ones were linked from libdevice, so no undefined __nv_ remains
    for line in res.text.splitlines():
        assert not (line.startswith(".extern") and "__nv_" in line), line


def test_portable_functions_compile_for_opencl(opencl_device):
    portable = sorted(set(libdevice.TABLE) - set(libdevice.unportable()))
    assert len(portable) > 220
    res = numba_gpux.compile(_all_calls_kernel(portable), "void(float64[::1])",
                             target="opencl")
    assert res.text


def test_unportable_function_fails_clearly_off_cuda(opencl_device):
    @cuda.jit
    def k(out):
        out[0] = libdevice.j0(out[0])

    with pytest.raises(ValidationError, match="__nv_j0"):
        k[1, 1](cuda.to_device(np.ones(1)))


def _f32_bits(x):
    return struct.unpack("<i", struct.pack("<f", x))[0]


def test_math_and_bits_agree_with_python(device, rng):
    @cuda.jit
    def k(x, i, out):
        out[0] = libdevice.sin(x[0])
        out[1] = libdevice.atan2f(x[0], x[1])
        m, e = libdevice.frexp(x[1])
        out[2] = m
        out[3] = e
        s, c = libdevice.sincosf(x[0])
        out[4] = s
        out[5] = c
        out[6] = libdevice.popcll(i[0])
        out[7] = libdevice.double2int_rd(-x[1])
        out[8] = libdevice.double2ll_ru(-x[1])
        out[9] = libdevice.float_as_int(libdevice.double2float_rn(x[0]))
        out[10] = libdevice.nextafter(x[0], 10.0) - x[0]
        out[11] = libdevice.byte_perm(i[1], i[2], 0x5140)
        out[12] = libdevice.umul64hi(i[3], i[4])
        out[13] = libdevice.mul64hi(i[3], -i[4])
        out[14] = libdevice.ldexp(x[0], 1000)
        out[15] = libdevice.round(-x[2])
        out[16] = libdevice.mulhi(i[1], -i[2])
        f, w = libdevice.modf(-x[1])
        out[17] = f
        out[18] = w
        out[19] = libdevice.ilogb(x[1])
        out[20] = libdevice.clz(i[2])
        out[21] = libdevice.ffsll(i[0])
        out[22] = libdevice.brev(i[1])
        out[23] = libdevice.sad(i[1], i[2], 7)
        out[24] = libdevice.rhadd(i[1], i[2])
        out[25] = libdevice.double2hiint(x[1])
        out[26] = libdevice.hiloint2double(libdevice.double2hiint(x[1]),
                                           libdevice.double2loint(x[1]))
        out[27] = libdevice.isnand(x[3]) != 0
        out[28] = libdevice.signbitd(-x[0]) != 0
        out[29] = libdevice.fdim(x[0], x[1])
        out[30] = libdevice.frexpf(x[4])[1]
        out[31] = libdevice.logbf(x[4])
        out[32] = libdevice.umax(i[5], i[1])
        out[33] = libdevice.saturatef(x[1])

    x = np.array([0.7, 12.75, 2.5, math.nan, 3e-39])
    big1, big2 = int(rng.integers(2**40, 2**62)), int(rng.integers(2**40, 2**62))
    i = np.array([0x1234_5678_0000, 0x9ABC_DEF0 - 2**32, 0x0012_3456, big1, big2, -1],
                 np.int64)
    out = np.zeros(34)
    dout = cuda.to_device(out)
    k[1, 1](cuda.to_device(x), cuda.to_device(i), dout)
    got = dout.copy_to_host()
    x1 = np.float32(0.7)
    u32 = lambda v: v & 0xFFFFFFFF  # noqa: E731
    s32 = lambda v: v - 2**32 if v & 0x80000000 else v  # noqa: E731
    bp_src = (u32(int(i[2])) << 32) | u32(int(i[1]))
    byte_perm = sum(((bp_src >> (8 * ((0x5140 >> (4 * n)) & 7))) & 0xFF) << (8 * n)
                    for n in range(4))
    expect = {
        0: math.sin(0.7), 1: math.atan2(x1, np.float32(12.75)), 2: 0.796875, 3: 4,
        4: math.sin(x1), 5: math.cos(x1), 6: bin(0x1234_5678_0000).count("1"), 7: -13,
        8: -12, 9: _f32_bits(x1), 10: math.ulp(0.7), 11: s32(byte_perm),
        12: (big1 * big2) >> 64, 13: (big1 * -big2) >> 64, 14: math.ldexp(0.7, 1000),
        15: -3.0, 16: (int(i[1]) * -int(i[2])) >> 32, 17: -0.75, 18: -12.0, 19: 3,
        20: 11, 21: 20, 22: s32(int(f"{u32(int(i[1])):032b}"[::-1], 2)),
        23: abs(int(i[1]) - int(i[2])) + 7, 24: (int(i[1]) + int(i[2]) + 1) >> 1,
        25: struct.unpack("<2i", struct.pack("<d", 12.75))[1], 26: 12.75, 27: 1, 28: 1,
        29: 0.0, 30: math.frexp(float(np.float32(3e-39)))[1],
        31: math.frexp(float(np.float32(3e-39)))[1] - 1, 32: -1, 33: 1.0,
    }
    for idx, want in expect.items():
        assert got[idx] == pytest.approx(want, rel=2e-6, abs=0), (idx, got[idx], want)


def test_libdevice_first_named_inside_a_kernel_compiles():
    """``cuda.libdevice`` is imported on first use; when that first use is a kernel being
    typed (a library that never touches it from Python), its functions are registered
    during the compile and must still type."""
    import subprocess
    import sys

    code = "\n".join([
        "import sys, numpy as np",
        "import numba_gpux.cuda as cuda",
        "assert 'numba_gpux.cuda.libdevice' not in sys.modules",
        "@cuda.jit",
        "def k(x, out):",
        "    i = cuda.grid(1)",
        "    if i < x.size:",
        "        s, c = cuda.libdevice.sincosf(x[i])",
        "        out[i] = s + 2 * c + cuda.libdevice.powf(x[i], np.float32(1.5))",
        "x = np.linspace(0.0, 3.0, 50).astype(np.float32)",
        "out = np.zeros(50)",
        "k[2, 32](x, out)",
        "want = np.sin(x) + 2 * np.cos(x).astype(np.float64) + x.astype(np.float64) ** 1.5",
        "assert np.allclose(out, want, rtol=1e-6), (out, want)",
        "print('ok')",
    ])
    run = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]
