"""The disk cache across processes: the pre-typing index (hits without typing, a miss
for every change the code depends on), bad files and folders, concurrent writers,
the size limit and the command line.

Each program runs in a fresh Python process with its own cache folder and prints
what it computed (so stale code would show as a wrong result) and the cache's
counters (so a hit is seen, not timed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.usefixtures("opencl_device")

HELPERS = """
import numba_gpux as gpux

@gpux.jit(device=True)
def helper(x):
    return x + 1
"""

LIBRARY = """
from numba.core.extending import overload

def twice(x):
    return 2 * x

@overload(twice, target="gpux")
def _twice(x):
    def impl(x):
        return x * 2
    return impl
"""

PROGRAM = """
import json, sys
import numpy as np
import numba_gpux as gpux
from numba_gpux import cache, context
import helpers
import lib_ov

OFFSET = 3

def make(scale):
    @gpux.jit(cache=True)
    def k(a):
        i = gpux.grid(1)
        if i < a.size:
            a[i] = helpers.helper(i) * scale + OFFSET + lib_ov.twice(i) * 100
    return k

k = make(int(sys.argv[1]) if len(sys.argv) > 1 else 10)
a = gpux.device_array(4, np.int64)
k[1, 4](a)
print(json.dumps({"out": a.copy_to_host().tolist(), "stats": cache.stats,
                  "typed": k.stats["neutral_compiles"], "context_built": context._ready}))
"""


def _expected(scale=10, step=1, offset=3, factor=2):
    return [(i + step) * scale + offset + i * factor * 100 for i in range(4)]


def _write(folder, name, text):
    (folder / name).write_text(textwrap.dedent(text))


def _env(folder, cache_dir) -> dict:
    """The environment of a test's processes: its cache folder, and a key file of its own
    (the entries are sealed with it; made by the first process)."""
    return dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(cache_dir), PYTHONDONTWRITEBYTECODE="1",
                NUMBA_GPUX_CACHE_KEY_FILE=str(folder.parent / "keys" / "cache.key"))


def _run(folder, cache_dir, *args, prelude="", env_extra=None, check=True):
    env = _env(folder, cache_dir)
    for k, v in (env_extra or {}).items():  # (None: the variable removed)
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    code = prelude + f"import runpy, sys; sys.path.insert(0, {str(folder)!r}); " \
                     f"sys.argv = ['prog.py', *{list(args)!r}]; " \
                     f"runpy.run_path({str(folder / 'prog.py')!r}, run_name='__main__')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=600, cwd=str(folder))
    if check:
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])
    return p


@pytest.fixture
def program(tmp_path):
    folder = tmp_path / "prog"
    folder.mkdir()
    _write(folder, "helpers.py", HELPERS)
    _write(folder, "lib_ov.py", LIBRARY)
    _write(folder, "prog.py", PROGRAM)
    return folder, tmp_path / "cache"


def _hit(r):
    """Found by the index: nothing typed, the shared context never built."""
    return r["stats"]["index_hits"] == 1 and r["typed"] == 0 and not r["context_built"]


def _miss(r):
    return r["stats"]["index_misses"] == 1 and r["typed"] == 1


def test_unchanged_program_hits_and_each_change_misses(program):
    folder, cache = program
    first = _run(folder, cache)
    assert _miss(first) and first["out"] == _expected()
    again = _run(folder, cache)
    assert _hit(again), again
    assert again["out"] == _expected()
    assert again["stats"]["program_hits"] == 1  # the driver's program came from disk too

    # a device function in another module
    (folder / "helpers.py").write_text(textwrap.dedent(HELPERS).replace("x + 1", "x + 5"))
    r = _run(folder, cache)
    assert _miss(r) and r["out"] == _expected(step=5)
    assert _hit(_run(folder, cache))

    # a global constant the kernel reads
    (folder / "prog.py").write_text(textwrap.dedent(PROGRAM).replace("OFFSET = 3", "OFFSET = 7"))
    r = _run(folder, cache)
    assert _miss(r) and r["out"] == _expected(step=5, offset=7)

    # a closure variable
    r = _run(folder, cache, "11")
    assert _miss(r) and r["out"] == _expected(scale=11, step=5, offset=7)
    assert _hit(_run(folder, cache, "11"))
    assert _hit(_run(folder, cache))  # the first closure value's entry is still there

    # an @overload registered by a library
    (folder / "lib_ov.py").write_text(textwrap.dedent(LIBRARY).replace("x * 2", "x * 3"))
    r = _run(folder, cache)
    assert _miss(r) and r["out"] == _expected(step=5, offset=7, factor=3)


@pytest.mark.parametrize("module", ["numba", "llvmlite", "numba_gpux._version"])
def test_another_version_misses(program, module):
    folder, cache = program
    assert _miss(_run(folder, cache))
    r = _run(folder, cache, prelude=f"import {module}; {module}.__version__ += '+other'; ")
    assert _miss(r) and r["out"] == _expected()


def test_cpu_driver_settings_keep_the_drivers_programs_apart(program):
    # a CPU driver's program is native code for the instruction set it targets, which
    # CL_CONFIG_CPU_TARGET_ARCH chooses (corei7: SSE4.2, what every CPU the driver runs
    # on has); the kernel's own entry stays valid (SPIR-V is the same)
    from numba_gpux.devices import default_device

    if default_device().kind != "cpu":
        pytest.skip("the default device is not a CPU device")
    folder, cache = program
    default = {"CL_CONFIG_CPU_TARGET_ARCH": None}  # (the driver's own choice for this CPU)
    assert _miss(_run(folder, cache, env_extra=default))
    sse = {"CL_CONFIG_CPU_TARGET_ARCH": "corei7"}
    other = _run(folder, cache, env_extra=sse)
    assert other["out"] == _expected() and _hit(other)
    assert other["stats"]["program_hits"] == 0, other  # built again for that setting
    again = _run(folder, cache, env_extra=sse)
    assert again["stats"]["program_hits"] == 1 and again["out"] == _expected()
    # the first setting's program is still there, beside the other's: each setting loads
    # its own (with one key for both, the SSE build would replace it and the default
    # setting would run SSE code for good)
    assert _run(folder, cache, env_extra=default)["stats"]["program_hits"] == 1
    programs = [p for p in cache.rglob("*") if p.is_file() and p.parent.parent.name == "programs"]
    assert len(programs) == 2, programs


def test_a_kernel_reading_an_unknown_object_is_not_indexed(tmp_path):
    """A global of a class the key cannot see into (a float subclass: Numba types it as
    a float, its value could come from anywhere) keeps the kernel off the index; the
    code keyed by the neutral IR, found after typing, is used instead."""
    folder = tmp_path / "prog"
    folder.mkdir()
    _write(folder, "prog.py", """
        import json
        import numpy as np
        import numba_gpux as gpux
        from numba_gpux import cache

        class Scale(float):
            pass

        SCALE = Scale(3.0)

        @gpux.jit(cache=True)
        def k(a):
            i = gpux.grid(1)
            if i < a.size:
                a[i] = i * SCALE

        a = gpux.device_array(4, np.float64)
        k[1, 4](a)
        print(json.dumps({"out": a.copy_to_host().tolist(), "stats": cache.stats,
                          "typed": k.stats["neutral_compiles"]}))
        """)
    first = _run(folder, tmp_path / "cache")
    second = _run(folder, tmp_path / "cache")
    for r in (first, second):
        assert r["out"] == [0.0, 3.0, 6.0, 9.0]
        assert r["stats"]["uncacheable"] == 1 and r["stats"]["index_hits"] == 0
        assert r["typed"] == 1
    assert second["stats"]["disk_hits"] == 1  # the neutral-IR-keyed entry


def test_a_datetime_kernel_hits_and_a_changed_date_constant_misses(tmp_path):
    """datetime64/timedelta64 arguments (arrays and a scalar) and a datetime64 global:
    the second process launches from the index, and a new date is a miss."""
    folder = tmp_path / "prog"
    folder.mkdir()
    source = """
        import json
        import numpy as np
        import numba_gpux as gpux
        from numba_gpux import cache, context

        EPOCH = np.datetime64("2000-01-01")

        @gpux.jit(cache=True)
        def since(d, step, out):
            i = gpux.grid(1)
            if i < d.size:
                out[i] = d[i] - EPOCH + step

        d = gpux.to_device(np.array(["2000-01-20", "2001-05-05"], "M8[D]"))
        out = gpux.device_array(2, "m8[D]")
        since[1, 4](d, np.timedelta64(2, "D"), out)
        print(json.dumps({"out": out.copy_to_host().astype(np.int64).tolist(),
                          "stats": cache.stats, "typed": since.stats["neutral_compiles"],
                          "context_built": context._ready}))
        """
    _write(folder, "prog.py", source)
    cache_dir = tmp_path / "cache"
    first = _run(folder, cache_dir)
    assert _miss(first) and first["out"] == [21, 492]
    again = _run(folder, cache_dir)
    assert _hit(again) and again["out"] == [21, 492]
    _write(folder, "prog.py", source.replace("2000-01-01", "2000-01-03"))
    moved = _run(folder, cache_dir)
    assert _miss(moved) and moved["out"] == [19, 490]


def test_a_record_kernel_hits_and_another_layout_misses(tmp_path):
    """Arrays of records and a record scalar as arguments: keyed by Numba's description of
    the record (field names, types, offsets, size), so the second process launches from
    the index and a record with other fields or offsets misses (and computes right)."""
    folder = tmp_path / "prog"
    folder.mkdir()
    _write(folder, "prog.py", """
        import json, sys
        import numpy as np
        import numba_gpux as gpux
        from numba_gpux import cache, context

        fields = {"aligned": [("x", np.float32), ("y", np.int32)],
                  "swapped": [("y", np.int32), ("x", np.float32)],
                  "wide": [("x", np.float64), ("y", np.int32)]}[sys.argv[1]]
        dt = np.dtype([("pad", np.int8)] + fields, align=True)

        @gpux.jit(cache=True)
        def k(r, s, out):
            i = gpux.grid(1)
            if i < out.size:
                out[i] = r[i].x * 2 + r[i].y + s.y

        r = np.zeros(4, dt)
        r["x"] = [1.5, 2, 3, 4]
        r["y"] = [10, 20, 30, 40]
        s = np.zeros(1, dt)
        s["y"] = 100
        out = gpux.device_array(4, np.float64)
        k[1, 4](gpux.to_device(r), s[0], out)
        print(json.dumps({"out": out.copy_to_host().tolist(), "stats": cache.stats,
                          "typed": k.stats["neutral_compiles"], "context_built": context._ready}))
        """)
    cache_dir = tmp_path / "cache"
    expected = [113.0, 124.0, 136.0, 148.0]
    first = _run(folder, cache_dir, "aligned")
    assert _miss(first) and first["out"] == expected
    again = _run(folder, cache_dir, "aligned")
    assert _hit(again) and again["out"] == expected
    for other in ("swapped", "wide"):
        r = _run(folder, cache_dir, other)
        assert _miss(r) and r["out"] == expected


def _entries(cache):
    """The disk cache's entries (other parts of numba-gpux keep files in the folder too)."""
    return [p for p in (cache / "code-v3").rglob("*") if p.is_file()]


@pytest.mark.parametrize("damage", ["truncated", "corrupted", "foreign", "empty"])
def test_bad_cache_files_are_dropped_and_rebuilt(program, damage):
    folder, cache = program
    assert _miss(_run(folder, cache))
    files = _entries(cache)
    assert len(files) == 3  # index, neutral-IR code, device program
    for f in files:
        data = f.read_bytes()
        if damage == "truncated":
            f.write_bytes(data[:len(data) // 2])
        elif damage == "corrupted":
            f.write_bytes(data[:-40] + bytes(b ^ 0x5A for b in data[-40:]))
        elif damage == "foreign":
            f.write_bytes(b"\x80\x04K\x01." + b"not ours" * 10)
        else:
            f.write_bytes(b"")
    p = _run(folder, cache, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    r = json.loads(p.stdout.strip().splitlines()[-1])
    assert r["out"] == _expected()
    # the index's and the neutral-IR entry's (the device program's too where the rebuilt
    # code is byte-identical: Numba's function numbering may differ from the first run),
    # each failing its authentication check, with one warning for all of them
    assert r["stats"]["bad_files"] >= 2 and r["stats"]["index_hits"] == 0
    assert r["stats"]["untrusted"] == r["stats"]["bad_files"]
    assert p.stderr.count("CacheTrustWarning") == 1, p.stderr
    again = _run(folder, cache)
    assert _hit(again) and again["out"] == _expected()  # replaced by good entries
    assert again["stats"]["bad_files"] == 0


def test_unusable_cache_folder_warns_once_and_compiles(tmp_path):
    folder = tmp_path / "prog"
    folder.mkdir()
    _write(folder, "prog.py", """
        import json, warnings
        import numpy as np
        import numba_gpux as gpux

        @gpux.jit(cache=True)
        def k1(a):
            a[gpux.grid(1)] = 1

        @gpux.jit(cache=True)
        def k2(a):
            a[gpux.grid(1)] = 2

        a = gpux.device_array(4, np.int64)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            k1[1, 4](a)
            k2[1, 2](a)
        print(json.dumps({"out": a.copy_to_host().tolist(),
                          "warnings": [str(x.message) for x in w
                                       if x.category.__name__ == "CacheWarning"]}))
        """)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    r = _run(folder, blocker / "cache")  # cannot be made: its parent is a file
    assert r["out"] == [2, 2, 1, 1]
    assert len(r["warnings"]) == 1 and str(blocker) in r["warnings"][0]
    missing = tmp_path / "not" / "yet" / "there"
    r = _run(folder, missing)  # a missing folder is made
    assert r["warnings"] == [] and _entries(missing)


def test_two_processes_writing_the_same_entries_both_succeed(program):
    folder, cache = program
    env = _env(folder, cache)  # a key not made yet: both processes make it at once
    cmd = [sys.executable, str(folder / "prog.py")]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env, cwd=str(folder)) for _ in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        assert json.loads(out.strip().splitlines()[-1])["out"] == _expected()
    assert not [p for p in cache.rglob("*.tmp")]
    assert not [p for p in (folder.parent / "keys").iterdir() if p.name != "cache.key"]
    assert _hit(_run(folder, cache))  # both wrote under the one key that was kept


def test_size_limit_evicts_least_recently_used(tmp_path, monkeypatch):
    from numba_gpux import cache as c

    dc = c.DiskCache(str(tmp_path))
    for i in range(10):
        assert dc.write("code", f"{i:02d}" + "0" * 62, b"x" * 1000)
        os.utime(dc.path("code", f"{i:02d}" + "0" * 62), (1000 + i, 1000 + i))
    assert dc.read("code", "03" + "0" * 62) == b"x" * 1000  # used now: the most recent
    size = sum(e[1] for e in dc.entries())
    removed = dc.evict(size // 2)
    assert removed >= 5
    left = {os.path.basename(e[3])[:2] for e in dc.entries()}
    assert "03" in left and "00" not in left and "01" not in left
    assert sum(e[1] for e in dc.entries()) <= size // 2

    monkeypatch.setenv("NUMBA_GPUX_CACHE_SIZE", "2K")
    from numba_gpux import config

    assert config.cache_max_bytes() == 2048
    monkeypatch.setenv("NUMBA_GPUX_CACHE_SIZE", "0")
    assert config.cache_max_bytes() == 0
    monkeypatch.delenv("NUMBA_GPUX_CACHE_SIZE")
    assert config.cache_max_bytes() == 1 << 30


def test_command_line_cache_info_and_clear(program):
    folder, cache = program
    _run(folder, cache)
    env = _env(folder, cache)
    info = subprocess.run([sys.executable, "-m", "numba_gpux", "cache", "info"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert info.returncode == 0, info.stderr
    assert str(cache) in info.stdout and "entries  3," in info.stdout
    assert f"key      {env['NUMBA_GPUX_CACHE_KEY_FILE']}: present" in info.stdout
    clear = subprocess.run([sys.executable, "-m", "numba_gpux", "cache", "clear"], env=env,
                           capture_output=True, text=True, timeout=120)
    assert clear.returncode == 0 and "removed 3 file(s)" in clear.stdout, clear.stdout
    assert _entries(cache) == []
    assert _miss(_run(folder, cache))


def test_warps_in_lockstep_launch_from_the_index(tmp_path):
    """A facade kernel whose warps run in lockstep only in blocks of whole rows of warps
    (stages._warp_lockstep): the code for such a launch is kept under its own key, and
    the next process launches it from the index, nothing typed, with CUDA's answer and
    one hit counted; a launch with 16 x 16 blocks builds the other code beside it."""
    import numba_gpux as gpux

    t = gpux.default_device().target
    if not (t.subgroup_size_metadata and t.has("required_subgroup_size")):
        pytest.skip("the default device cannot require a sub-group width")
    folder = tmp_path / "prog"
    folder.mkdir()
    _write(folder, "prog.py", """
        import json, sys
        import numpy as np
        from numba_gpux import cache, context, cuda

        @cuda.jit(cache=True)
        def k(m, out):
            row, col = cuda.grid(2)
            sm = cuda.shared.array(256, np.float32)
            t = cuda.threadIdx.x + cuda.blockDim.x * cuda.threadIdx.y
            sm[t] = m[row, col]
            cuda.syncthreads()
            if t < 128:
                sm[t] = min(sm[t], sm[t + 128])
            cuda.syncthreads()
            if t < 64:
                sm[t] = min(sm[t], sm[t + 64])
            cuda.syncthreads()
            if t < 32:
                sm[t] = min(sm[t], sm[t + 32])
                sm[t] = min(sm[t], sm[t + 16])
                sm[t] = min(sm[t], sm[t + 8])
                sm[t] = min(sm[t], sm[t + 4])
                sm[t] = min(sm[t], sm[t + 2])
                sm[t] = min(sm[t], sm[t + 1])
            if t == 0:
                out[cuda.blockIdx.x, cuda.blockIdx.y] = sm[0]

        bx, by = (int(v) for v in sys.argv[1:3])
        m = np.random.default_rng(1).random((64, 64)).astype(np.float32)
        out = cuda.device_array((64 // bx, 64 // by), np.float32)
        k[(64 // bx, 64 // by), (bx, by)](cuda.to_device(m), out)
        want = m.reshape(64 // bx, bx, 64 // by, by).min(axis=(1, 3))
        print(json.dumps({"ok": bool((out.copy_to_host() == want).all()),
                          "stats": cache.stats, "typed": k.stats["neutral_compiles"],
                          "context_built": context._ready}))
        """)
    cache_dir = tmp_path / "cache"
    first = _run(folder, cache_dir, "32", "8")
    assert _miss(first) and first["ok"]
    again = _run(folder, cache_dir, "32", "8")
    assert _hit(again) and again["ok"]
    other = _run(folder, cache_dir, "16", "16")  # 16 x 16: the other code, typed here
    assert other["typed"] == 1 and other["stats"]["index_misses"] == 1
    assert _hit(_run(folder, cache_dir, "32", "8"))
