"""The public API of the foundation: jit forms, launch forms, compile, devices, CLI."""

import os
import subprocess
import sys

import numpy as np
import pytest

import numba_gpux as gpux

#: the quick subset that .ci/run also runs on the other CPythons
pytestmark = pytest.mark.quick


def test_public_namespace_is_explicit():
    for name in ["jit", "grid", "gridsize", "thread_idx", "block_idx", "block_dim", "grid_dim",
                 "barrier", "to_device", "device_array", "device_array_like", "compile",
                 "devices", "default_device", "select_device", "DeviceArray"]:
        assert name in gpux.__all__ and hasattr(gpux, name)
    assert all(hasattr(gpux, n) for n in gpux.__all__)


def _body(a, x):
    i = gpux.grid(1)
    if i < a.size:
        a[i] = a[i] * x


@pytest.mark.parametrize("form", ["bare", "options", "sig-string", "sig-list"])
def test_jit_forms(opencl_device, form):
    if form == "bare":
        k = gpux.jit(_body)
    elif form == "options":
        k = gpux.jit(fastmath=True, opt=2, debug=False, inline=False, cache=False)(_body)
    elif form == "sig-string":
        k = gpux.jit("void(float32[::1], float32)")(_body)
        assert k.signatures  # compiled eagerly
    else:
        k = gpux.jit(["void(float32[::1], float32)", "void(float64[::1], float64)"])(_body)
        assert len(k.signatures) == 2
    d = gpux.to_device(np.arange(8, dtype=np.float32))
    k[1, 8](d, np.float32(3))
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(8) * 3)


def test_eager_signature_type_errors_surface_at_decoration():
    from numba.core.errors import TypingError

    with pytest.raises(TypingError):
        gpux.jit("void(float32, float32)")(_body)  # a float cannot be indexed
    with pytest.raises(gpux.GpuxUserError, match="takes 2 argument"):
        gpux.jit("void(float32[::1])")(_body)


def test_launch_with_queue_and_dynamic_shared_bytes(opencl_device):
    k = gpux.jit(_body)
    d = gpux.to_device(np.ones(64, np.float64))
    k[4, 16, None, 0](d, 2.0)
    k[(2, 1), (32, 1, 1), None](d, 2.0)
    np.testing.assert_array_equal(d.copy_to_host(), 4.0)


@gpux.jit
def index_probe(out):
    i = gpux.grid(1)
    if i < out.shape[0]:
        out[i, 0] = gpux.thread_idx.x
        out[i, 1] = gpux.block_idx.x
        out[i, 2] = gpux.block_dim.x
        out[i, 3] = gpux.grid_dim.x
        out[i, 4] = gpux.gridsize(1)


@gpux.jit
def index_probe_3d(out):
    x, y, z = gpux.grid(3)
    sx, sy, sz = gpux.gridsize(3)
    if x < out.shape[0] and y < out.shape[1] and z < out.shape[2]:
        out[x, y, z] = (x + 10 * y + 100 * z + 1000 * gpux.thread_idx.y
                        + 10000 * gpux.block_idx.z + 100000 * (sx * sy * sz == 4 * 6 * 4))


def test_indices_and_sizes(device):
    out = gpux.device_array((96, 5), np.int64)
    index_probe[3, 32](out)
    h = out.copy_to_host()
    i = np.arange(96)
    np.testing.assert_array_equal(h, np.stack([i % 32, i // 32, np.full(96, 32),
                                               np.full(96, 3), np.full(96, 96)], axis=1))
    out3 = gpux.device_array((4, 6, 4), np.int64)
    index_probe_3d[(2, 3, 2), (2, 2, 2)](out3)
    x, y, z = np.indices((4, 6, 4))
    np.testing.assert_array_equal(out3.copy_to_host(),
                                  x + 10 * y + 100 * z + 1000 * (y % 2) + 10000 * (z // 2) + 100000)


@gpux.jit
def reverse_in_block(a):
    # barrier: every work-item reads before any writes
    i = gpux.grid(1)
    n = gpux.block_dim.x
    t = gpux.thread_idx.x
    base = gpux.block_idx.x * n
    v = a[base + n - 1 - t]
    gpux.barrier()
    a[i] = v


def test_barrier(device):
    a = np.arange(64, dtype=np.int32)
    d = gpux.to_device(a)
    reverse_in_block[4, 16](d)
    np.testing.assert_array_equal(d.copy_to_host(), a.reshape(4, 16)[:, ::-1].ravel())


def test_compile_returns_spirv_and_disassembly_without_running():
    art = gpux.compile(_body, "void(float32[::1], float32)", target="opencl")
    assert art.kind == "spirv" and art.binary[:4] == b"\x03\x02\x23\x07"
    assert "OpEntryPoint Kernel" in art.text and "OpCapability Kernel" in art.text
    assert "define spir_kernel" in art.llvm_ir
    assert len(art.kernels) == 1


def test_devices_and_selection(opencl_device):
    devs = gpux.devices()
    assert opencl_device in devs
    kinds = [d.kind for d in devs]
    assert kinds == sorted(kinds, key=lambda k: {"gpu": 0, "accelerator": 1, "cpu": 2}.get(k, 3))
    assert gpux.select_device(opencl_device.spec) is opencl_device
    assert gpux.default_device() is opencl_device
    assert gpux.select_device("opencl") .target_name == "opencl"
    assert opencl_device.limits["max_threads_per_block"] >= 1
    assert "SPIR-V" in opencl_device.limits["il_version"]


def _cli(*args, **env):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([sys.executable, "-m", "numba_gpux", *args], capture_output=True,
                          text=True, env=e, timeout=300)


def test_cli_info():
    res = _cli("info")
    assert res.returncode == 0, res.stderr
    for word in ("numba-gpux", "Targets:", "opencl", "Devices", "ptxas", "spirv-val"):
        assert word in res.stdout


def test_cli_compile(tmp_path):
    src = tmp_path / "kern.py"
    src.write_text("import numba_gpux as gpux\n\n@gpux.jit\ndef k(a):\n    i = gpux.grid(1)\n"
                   "    if i < a.size:\n        a[i] = i\n\ndef plain(a, b):\n    a[0] = b\n")
    res = _cli("compile", f"{src}:k", "--sig", "void(int32[::1])", "--target", "opencl")
    assert res.returncode == 0, res.stderr
    assert "OpEntryPoint Kernel" in res.stdout
    res = _cli("compile", f"{src}:plain", "--sig", "void(float64[::1], float64)", "--emit", "llvm")
    assert res.returncode == 0 and "define spir_kernel" in res.stdout
    res = _cli("compile", f"{src}:k", "--sig", "void(int32[::1])", "--emit", "binary",
               "-o", str(tmp_path / "k.spv"))
    assert res.returncode == 0 and (tmp_path / "k.spv").read_bytes()[:4] == b"\x03\x02\x23\x07"
    bad = _cli("compile", f"{src}:nothere", "--sig", "void(int32[::1])")
    assert bad.returncode != 0 and "nothere" in bad.stderr


@pytest.mark.opencl
def test_cli_demo_checks_against_numpy(opencl_device):
    res = _cli("demo", "--device", opencl_device.spec)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "all results match NumPy" in res.stdout and res.stdout.count(" ok ") >= 4


def test_import_loads_no_driver_and_no_llvm_target():
    code = ("import sys, numba_gpux\n"
            "bad = [m for m in ('pyopencl', 'cuda', 'cuda.bindings', 'Metal') if m in sys.modules]\n"
            "import numba_gpux.context as c\n"
            "print(bad, c._target is None)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.stdout.strip() == "[] True", res.stdout + res.stderr
    maps = subprocess.run([sys.executable, "-c", "import numba_gpux; print(open('/proc/self/maps').read())"],
                          capture_output=True, text=True, timeout=120).stdout
    assert "libOpenCL" not in maps and "libcuda" not in maps and "libintelocl" not in maps


def test_cache_true_keeps_finished_code_on_disk(tmp_path):
    src = tmp_path / "cached_kernel.py"
    src.write_text(
        "import numba_gpux as gpux\nfrom numba_gpux import cache\n"
        "@gpux.jit(cache=True)\ndef k(a):\n    i = gpux.grid(1)\n    if i < a.size:\n"
        "        a[i] = 2 * i\n"
        "art = gpux.compile(k, 'void(int32[::1])') if False else None\n"
        "from numba.core import sigutils\n"
        "args, _ = sigutils.normalize_signature('void(int32[::1])')\n"
        "from numba_gpux.devices import resolve_target\n"
        "k.code_for(tuple(args), resolve_target('opencl'))\n"
        "print(cache.stats['index_hits'], cache.stats['misses'])\n")
    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(tmp_path / "cache"))
    first = subprocess.run([sys.executable, str(src)], capture_output=True, text=True, env=env,
                           timeout=300)
    second = subprocess.run([sys.executable, str(src)], capture_output=True, text=True, env=env,
                            timeout=300)
    assert first.stdout.split() == ["0", "1"], first.stderr
    assert second.stdout.split() == ["1", "0"], second.stderr
    assert list((tmp_path / "cache" / "code-v3" / "index").rglob("*"))


def test_available_targets_survives_loading_the_targets_subpackage():
    import numba_gpux.targets.opencl  # noqa: F401

    names = gpux.available_targets()
    assert {"opencl", "cuda", "metal"} <= set(names)


@pytest.mark.parametrize("shape,order,view", [
    ((10, 12), "C", np.s_[::2, ::2]),
    ((10, 12), "F", np.s_[::2, ::2]),
    ((4, 6, 8), "C", np.s_[::2, :, ::2]),
    ((4, 6, 8), "F", np.s_[:, ::3]),
    ((10,), "C", np.s_[::2]),
    ((10, 12), "F", np.s_[:]),
])
def test_device_array_like_lays_out_axes_as_numpy(opencl_device, shape, order, view):
    # a contiguous array whose axes follow the strides of the original (NumPy's
    # zeros_like), for host arrays, device arrays and strided views of either
    host = np.zeros(shape, order=order)[view]
    dev = gpux.device_array(shape, order=order, device=opencl_device)[view]
    want = np.zeros_like(host)
    for like in (gpux.device_array_like(host, device=opencl_device),
                 gpux.device_array_like(dev, device=opencl_device)):
        assert like.shape == want.shape and like.strides == want.strides
        assert like.flags["C_CONTIGUOUS"] == want.flags["C_CONTIGUOUS"]
        assert like.flags["F_CONTIGUOUS"] == want.flags["F_CONTIGUOUS"]
    t = host.T  # a transposed strided view: axes in the view's own stride order
    assert gpux.device_array_like(t, device=opencl_device).strides == np.zeros_like(t).strides
