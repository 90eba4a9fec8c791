"""cache=True in the numba.cuda facade: files where numba.cuda keeps them, numba's stats.

Each program runs in a fresh Python process with its own key file, on the real OpenCL
device; a module written to a temporary folder holds the kernels, so that its
``__pycache__`` is the test's own."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("opencl_device")

MODULE = """
import numpy as np
from numba_gpux import cuda

Z = 1

@cuda.jit(cache=True)
def add(r, x, y):
    r[0] = x[0] + y[0] + Z

def shared(r, x):
    r[0] = x[0] * 2

shared_cuda = cuda.jit(cache=True)(shared)

def run_add(v):
    r = np.zeros(1, type(v))
    add[1, 1](r, np.array([v]), np.array([v]))
    return r[0].item()

def run_shared(v):
    r = np.zeros(1, type(v))
    shared_cuda[1, 1](r, np.array([v]))
    return r[0].item()
"""

REPORT = """
import json, sys, warnings
caught = []
warnings.simplefilter("always")
warnings.showwarning = lambda msg, cat, *a, **k: caught.append([cat.__name__, str(msg)])
sys.path.insert(0, sys.argv[1])
import camod
from numba_gpux import cache
out = [camod.run_add(2), camod.run_add(2.5)]
st = camod.add.stats
print(json.dumps({"out": out, "hits": sum(st.cache_hits.values()),
                  "misses": sum(st.cache_misses.values()), "path": st.cache_path,
                  "untrusted": cache.stats["untrusted"],
                  "warnings": [w for w in caught if "Cache" in w[0]]}))
"""


class Prog:
    def __init__(self, tmp_path):
        self.src = tmp_path / "src"
        self.src.mkdir()
        (self.src / "camod.py").write_text(textwrap.dedent(MODULE))
        self.pycache = self.src / "__pycache__"
        self.env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(tmp_path / "user-cache"),
                        NUMBA_GPUX_CACHE_KEY_FILE=str(tmp_path / "keys" / "cache.key"),
                        PYTHONDONTWRITEBYTECODE="1")
        self.env.pop("NUMBA_CACHE_DIR", None)

    def run(self, code=REPORT, **env):
        p = subprocess.run([sys.executable, "-c", code, str(self.src)], capture_output=True,
                           text=True, env=dict(self.env, **env), timeout=600)
        assert p.returncode == 0, p.stderr[-3000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    def files(self, folder=None):
        folder = folder or self.pycache
        try:
            return sorted(f for f in os.listdir(folder) if not f.endswith(".pyc"))
        except FileNotFoundError:
            return []

    def mtimes(self):
        return {f: os.path.getmtime(self.pycache / f) for f in self.files()}


def _base(func="add", line=7):
    return f"camod.{func}-{line}.py{sys.version_info[0]}{sys.version_info[1]}" \
           f"{getattr(sys, 'abiflags', '')}.gpux"


def test_files_next_to_source_and_a_second_process_hits(tmp_path):
    prog = Prog(tmp_path)
    first = prog.run()
    assert first["out"] == [5, 6.0]
    assert (first["hits"], first["misses"]) == (0, 2)
    assert first["path"] == str(prog.pycache)
    # one index and one data file per signature, named as numba names them
    assert prog.files() == [f"{_base()}.1.nbc", f"{_base()}.2.nbc", f"{_base()}.nbi"]
    for f in prog.files():
        assert os.stat(prog.pycache / f).st_mode & 0o077 == 0  # owner-only
    before = prog.mtimes()
    second = prog.run()
    assert second["out"] == [5, 6.0]
    assert (second["hits"], second["misses"]) == (2, 0)
    assert second["warnings"] == []
    assert prog.mtimes() == before  # read, not rewritten


@pytest.mark.parametrize("damaged", ["nbc", "nbi"])
def test_damaged_file_costs_a_recompile(tmp_path, damaged):
    prog = Prog(tmp_path)
    prog.run()
    path = prog.pycache / (f"{_base()}.1.nbc" if damaged == "nbc" else f"{_base()}.nbi")
    data = bytearray(path.read_bytes())
    data[-1] ^= 0x55  # one flipped byte in the body: the MAC no longer matches
    path.write_bytes(bytes(data))
    r = prog.run()
    assert r["out"] == [5, 6.0]  # recompiled: the right result, no crash
    assert r["untrusted"] == 1
    assert [w[0] for w in r["warnings"]] == ["CacheTrustWarning"]
    # a damaged data file loses its signature; a damaged index loses both
    assert (r["hits"], r["misses"]) == ((1, 1) if damaged == "nbc" else (0, 2))
    third = prog.run()  # the entries were written anew
    assert (third["hits"], third["misses"], third["untrusted"]) == (2, 0, 0)


def test_numba_cache_dir(tmp_path):
    prog = Prog(tmp_path)
    where = tmp_path / "numba-cache"
    r = prog.run(NUMBA_CACHE_DIR=str(where))
    assert r["out"] == [5, 6.0]
    assert prog.files() == []
    # numba's user-provided locator: a folder named after the source's folder (its name
    # and the SHA-1 of its path) under NUMBA_CACHE_DIR
    folder = r["path"]
    digest = hashlib.sha1(str(prog.src).encode()).hexdigest()
    assert folder == str(where / f"src_{digest}")
    assert sorted(os.listdir(folder)) == [f"{_base()}.1.nbc", f"{_base()}.2.nbc",
                                          f"{_base()}.nbi"]
    again = prog.run(NUMBA_CACHE_DIR=str(where))
    assert (again["hits"], again["misses"]) == (2, 0)


BOTH = """
import json, sys, warnings
caught = []
warnings.simplefilter("always")
warnings.showwarning = lambda msg, cat, *a, **k: caught.append([cat.__name__, str(msg)])
sys.path.insert(0, sys.argv[1])
import numpy as np
from numba import njit
import camod
cpu = njit(cache=True)(camod.shared)
r = np.zeros(1)
cpu(r, np.array([1.5]))
print(json.dumps({"cpu": r[0], "gpu": camod.run_shared(1.5),
                  "cpu_hits": sum(cpu.stats.cache_hits.values()),
                  "gpu_hits": sum(camod.shared_cuda.stats.cache_hits.values()),
                  "warnings": [w for w in caught if "Cache" in w[0] or "Numba" in w[0]]}))
"""


def test_cpu_and_facade_files_side_by_side(tmp_path):
    prog = Prog(tmp_path)
    first = prog.run(BOTH)
    assert (first["cpu"], first["gpu"]) == (3.0, 3.0)
    assert (first["cpu_hits"], first["gpu_hits"]) == (0, 0)
    names = prog.files()
    ours = [f for f in names if ".gpux." in f]
    numbas = [f for f in names if ".gpux." not in f]
    assert len(ours) == 2 and len(numbas) == 2, names  # an index and a data file each
    second = prog.run(BOTH)
    assert (second["cpu_hits"], second["gpu_hits"]) == (1, 1)
    assert second["warnings"] == []


LAUNCHES = """
import json, sys
sys.path.insert(0, sys.argv[1])
import numpy as np
import camod
r = np.zeros(1)
for grid, block in ((1, 1), (2, 4), (3, 32)):
    camod.add[grid, block](r, np.array([1.0]), np.array([2.0]))
st = camod.add.stats
print(json.dumps({"out": r[0], "hits": sum(st.cache_hits.values()),
                  "misses": sum(st.cache_misses.values())}))
"""


def test_launch_configuration_is_not_in_the_key(tmp_path):
    prog = Prog(tmp_path)
    r = prog.run(LAUNCHES)
    assert (r["out"], r["hits"], r["misses"]) == (4.0, 0, 1)
    assert len(prog.files()) == 2
    r = prog.run(LAUNCHES)
    assert (r["hits"], r["misses"]) == (1, 0)


GLOBAL_DEVICE_ARRAY = None


def test_captured_device_array_cannot_be_cached():
    from numba_gpux import cuda

    global GLOBAL_DEVICE_ARRAY
    GLOBAL_DEVICE_ARRAY = cuda.to_device(np.arange(3, dtype=np.float32))
    captured = cuda.to_device(np.arange(3, dtype=np.float32))

    @cuda.jit(cache=True)
    def from_global(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = GLOBAL_DEVICE_ARRAY[i]

    @cuda.jit(cache=True)
    def from_closure(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = captured[i]

    out = cuda.device_array(3, np.float32)
    for k in (from_global, from_closure):
        with pytest.raises(pickle.PicklingError, match="global device arrays"):
            k[1, 3](out)

    @cuda.jit  # without cache=True the same kernel runs
    def uncached(out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = captured[i] * 2

    uncached[1, 3](out)
    assert out.copy_to_host().tolist() == [0.0, 2.0, 4.0]


PER_CC = """
import json, sys
sys.path.insert(0, sys.argv[1])
from numba import types
from numba_gpux.devices import resolve_target
import camod
arr = types.int64[::1]
kinds = [camod.add.code_for((arr, arr, arr), resolve_target("cuda", cc=cc)).kind
         for cc in ((8, 0), (9, 0))]
st = camod.add.stats
print(json.dumps({"kinds": kinds, "hits": sum(st.cache_hits.values()),
                  "misses": sum(st.cache_misses.values())}))
"""


def test_separate_entries_per_compute_capability(tmp_path):
    # PTX for two capabilities (no GPU needed): one data file each, both found again
    prog = Prog(tmp_path)
    r = prog.run(PER_CC)
    assert (r["kinds"], r["hits"], r["misses"]) == (["ptx", "ptx"], 0, 2)
    assert prog.files() == [f"{_base()}.1.nbc", f"{_base()}.2.nbc", f"{_base()}.nbi"]
    r = prog.run(PER_CC)
    assert (r["hits"], r["misses"]) == (2, 0)
