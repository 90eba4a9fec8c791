"""Trust in the disk cache: entries are authenticated data, never pickles run on load.

Each program runs in a fresh Python process (the later process is the one a planted or
damaged entry would attack) with its own cache folder and key file, on the real OpenCL
device, and prints what it computed (a loaded foreign entry would show as a wrong result),
the cache's counters and the warnings it gave."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import pickle
import stat
import subprocess
import sys
import textwrap

import pytest

from numba_gpux import cachefile

pytestmark = pytest.mark.usefixtures("opencl_device")

PROGRAM = """
import json, sys, warnings
caught = []
warnings.simplefilter("always")
warnings.showwarning = lambda msg, cat, *a, **k: caught.append([cat.__name__, str(msg)])
import numpy as np
import numba_gpux as gpux
from numba_gpux import cache

SCALE = int(sys.argv[1]) if len(sys.argv) > 1 else 10

@gpux.jit(cache=True)
def k(a):
    i = gpux.grid(1)
    if i < a.size:
        a[i] = i * SCALE + 1

a = gpux.device_array(4, np.int64)
k[1, 4](a)
print(json.dumps({"out": a.copy_to_host().tolist(), "stats": cache.stats,
                  "typed": k.stats["neutral_compiles"], "warnings": caught}))
"""


def _expected(scale=10):
    return [i * scale + 1 for i in range(4)]


class Case:
    """A program, its cache folder and its key file, under one test's temporary folder."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.folder = tmp_path / "prog"
        self.folder.mkdir()
        (self.folder / "prog.py").write_text(textwrap.dedent(PROGRAM))
        self.cache = tmp_path / "cache"
        self.key_file = tmp_path / "keys" / "cache.key"

    def run(self, *args, env_extra=None, prelude=""):
        env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(self.cache),
                   NUMBA_GPUX_CACHE_KEY_FILE=str(self.key_file), PYTHONDONTWRITEBYTECODE="1")
        env.pop("NUMBA_GPUX_CACHE_SHARED", None)
        for name, value in (env_extra or {}).items():  # None: unset
            env.pop(name) if value is None else env.__setitem__(name, value)
        code = (prelude + f"import runpy, sys; sys.argv = ['prog.py', *{list(args)!r}]; "
                f"runpy.run_path({str(self.folder / 'prog.py')!r}, run_name='__main__')")
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env=env, timeout=600, cwd=str(self.folder))
        assert p.returncode == 0, p.stderr[-3000:]
        r = json.loads(p.stdout.strip().splitlines()[-1])
        r["stdout"] = p.stdout
        return r

    def entries(self):
        return sorted(p for p in (self.cache / "code-v3").rglob("*") if p.is_file())


@pytest.fixture
def case(tmp_path):
    return Case(tmp_path)


def _trust_warnings(r):
    return [m for c, m in r["warnings"] if c == "CacheTrustWarning"]


def _hit(r):
    return r["stats"]["index_hits"] == 1 and r["typed"] == 0 and r["warnings"] == []


def _recompiled_with_one_warning(r, scale=10):
    """Nothing loaded from the cache, the result right, one warning for every bad entry."""
    assert r["out"] == _expected(scale)
    assert r["stats"]["index_hits"] == 0 and r["stats"]["disk_hits"] == 0
    assert r["typed"] == 1 and r["stats"]["program_hits"] == 0  # no driver binary loaded
    assert r["stats"]["untrusted"] >= 2  # the index's and the neutral IR's entry at least
    warned = _trust_warnings(r)
    assert len(warned) == 1 and "failed its authentication check" in warned[0], r["warnings"]


class Payload:
    """Unpickling this writes a marker file and prints: what a planted entry would run."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('ran'); print('PAYLOAD RAN')",)


def _kind_and_key(path):
    return path.parent.parent.name, path.name


def test_a_planted_pickle_with_a_valid_checksum_never_runs(case):
    """Every entry replaced by a pickle that writes a marker when loaded, in the file format
    that only checksums (a SHA-256 of the body after the header: right, so a checksum
    would accept it), in this format's folder and in the previous format's."""
    first = case.run()
    assert first["out"] == _expected() and first["stats"]["index_misses"] == 1
    marker = case.tmp / "marker"
    files = case.entries()
    assert {_kind_and_key(f)[0] for f in files} == {"index", "code", "programs"}
    for f in files:
        kind, key = _kind_and_key(f)
        body = pickle.dumps((key, Payload(str(marker))))
        for version in (3, 2):
            magic = b"numba-gpux cache %d\n" % version
            target = case.cache / f"code-v{version}" / kind / key[:2] / key
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(magic + hashlib.sha256(body).digest() + body)
    r = case.run()
    assert not marker.exists() and "PAYLOAD RAN" not in r["stdout"]
    _recompiled_with_one_warning(r)
    again = case.run()  # the planted entries were replaced by good ones
    assert _hit(again) and again["out"] == _expected() and not marker.exists()


def test_an_authentic_entry_is_still_never_unpickled(case):
    """Defence in depth: a pickle sealed with the user's own key (as if the key leaked)
    is authentic but is not data; it is dropped unread, its payload never runs."""
    assert case.run()["out"] == _expected()
    secret = bytes.fromhex(case.key_file.read_text().strip())
    marker = case.tmp / "marker"
    for f in case.entries():
        kind, key = _kind_and_key(f)
        body = pickle.dumps((key, Payload(str(marker))))
        mac = hmac.new(secret, cachefile.MAGIC + kind.encode() + b"\0" + key.encode() + b"\0"
                       + body, "sha256").digest()
        f.write_bytes(cachefile.MAGIC + mac + body)
    r = case.run()
    assert not marker.exists() and "PAYLOAD RAN" not in r["stdout"]
    assert r["out"] == _expected() and r["stats"]["index_hits"] == 0
    assert r["stats"]["bad_files"] >= 2 and r["stats"]["untrusted"] == 0
    assert _hit(case.run())


@pytest.mark.parametrize("damage", ["flip-mac", "flip-body", "flip-last", "truncate-one",
                                    "truncate-half"])
def test_a_damaged_entry_costs_a_compile_and_one_warning(case, damage):
    assert case.run()["out"] == _expected()
    for f in case.entries():
        data = bytearray(f.read_bytes())
        where = {"flip-mac": len(cachefile.MAGIC) + 5, "flip-body": len(data) // 2,
                 "flip-last": len(data) - 1}.get(damage)
        if where is not None:
            data[where] ^= 0x01
        else:
            data = data[:-1] if damage == "truncate-one" else data[:len(data) // 2]
        f.write_bytes(bytes(data))
    _recompiled_with_one_warning(case.run())
    assert _hit(case.run())


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("what", ["fifo", "link-to-dev-zero", "folder", "sparse-too-large"])
def test_an_entry_that_is_no_regular_file_costs_a_compile(case, what, monkeypatch):
    # a FIFO in an entry's place blocked the reader for ever; a link to /dev/zero was read
    # until memory ran out; a huge file was read whole (MemoryError): now none is read
    assert case.run()["out"] == _expected()
    for f in case.entries():
        f.unlink()
        if what == "fifo":
            os.mkfifo(f)
        elif what == "link-to-dev-zero":
            f.symlink_to("/dev/zero")
        elif what == "folder":
            f.mkdir()
        else:
            with open(f, "wb") as out:  # (sparse: no disk used)
                out.truncate(cachefile.MAX_ENTRY_BYTES + 1)
    r = case.run()
    assert r["out"] == _expected() and r["stats"]["index_hits"] == 0 and r["typed"] == 1
    again = case.run()  # what stood in the entries' places was replaced by good entries
    assert again["out"] == _expected() and _hit(again), again


def test_entries_written_under_another_key_are_not_loaded(case):
    assert case.run()["out"] == _expected()
    first_key = case.key_file
    case.key_file = case.tmp / "other-keys" / "cache.key"  # another user's, or a new key
    _recompiled_with_one_warning(case.run())
    assert first_key.read_text() != case.key_file.read_text()
    assert _hit(case.run())
    case.key_file = first_key  # and back: the entries are now the other key's
    _recompiled_with_one_warning(case.run())


def test_an_entry_moved_to_another_keys_file_is_not_loaded(case):
    """The MAC covers the entry's key: the code of SCALE=10, put where SCALE=11's code
    lives, is refused (and SCALE=11's own result comes out)."""
    assert case.run("10")["out"] == _expected(10)
    ten = {f: f.read_bytes() for f in case.entries()}
    assert case.run("11")["out"] == _expected(11)
    eleven = [f for f in case.entries() if f not in ten]
    index_ten = [f for f in ten if _kind_and_key(f)[0] == "index"]
    index_eleven = [f for f in eleven if _kind_and_key(f)[0] == "index"]
    assert len(index_ten) == 1 and len(index_eleven) == 1
    index_eleven[0].write_bytes(ten[index_ten[0]])
    r = case.run("11")
    assert r["out"] == _expected(11) and r["stats"]["index_hits"] == 0
    assert r["stats"]["untrusted"] == 1 and len(_trust_warnings(r)) == 1
    assert _hit(case.run("11")) and _hit(case.run("10"))


def test_a_driver_binary_moved_to_another_kernels_file_is_not_loaded(case):
    """The driver program of SCALE=11, put where SCALE=10's program lives, never reaches
    the driver: the code comes from the index, the program is built from it again."""
    assert case.run("10")["out"] == _expected(10)
    ten = [f for f in case.entries() if _kind_and_key(f)[0] == "programs"]
    assert case.run("11")["out"] == _expected(11)
    eleven = [f for f in case.entries() if _kind_and_key(f)[0] == "programs" and f not in ten]
    assert len(ten) == 1 and len(eleven) == 1
    ten[0].write_bytes(eleven[0].read_bytes())
    r = case.run("10")
    assert r["out"] == _expected(10)
    assert r["stats"]["index_hits"] == 1 and r["stats"]["program_hits"] == 0
    assert r["stats"]["untrusted"] == 1 and len(_trust_warnings(r)) == 1
    assert _hit(case.run("10"))


def test_new_folders_entries_and_key_are_owner_only(case):
    """Made owner-only whatever the umask (0 here); the key in its default place, the
    user's configuration folder (outside the cache folder)."""
    case.key_file = case.tmp / "config" / "numba-gpux" / "cache.key"
    r = case.run(prelude="import os; os.umask(0); ",
                 env_extra={"NUMBA_GPUX_CACHE_KEY_FILE": None,
                            "XDG_CONFIG_HOME": str(case.tmp / "config")})
    assert r["out"] == _expected() and r["warnings"] == []
    folders = [case.cache, *[p for p in case.cache.rglob("*") if p.is_dir()],
               case.key_file.parent]
    for p in folders:
        assert stat.S_IMODE(p.stat().st_mode) == 0o700, p
    for p in [*case.entries(), case.key_file]:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    text = case.key_file.read_text()
    assert len(bytes.fromhex(text.strip())) == 32 and text.endswith("\n")
    assert _hit(case.run())


def _unsafe_key(case, how):
    case.key_file.parent.mkdir(mode=0o700)
    case.key_file.write_text(os.urandom(32).hex() + "\n")
    mode = {"others-write": 0o602, "group-write": 0o620, "everyone-reads": 0o604}.get(how, 0o600)
    os.chmod(case.key_file, mode)
    if how == "another-user":
        os.chown(case.key_file, 65534, 65534)
    if how == "open-folder":
        os.chmod(case.key_file.parent, 0o777)
    if how == "not-hex":
        case.key_file.write_text("not a key\n")


@pytest.mark.parametrize("how,reason", [
    ("others-write", "other users can write it"),
    ("group-write", "other users can write it"),
    ("everyone-reads", "every user can read it"),
    ("another-user", "belongs to another user"),
    ("open-folder", "its folder is not safe"),
    ("not-hex", "does not hold hexadecimal digits"),
])
def test_an_unsafe_key_file_is_refused(case, how, reason):
    """The key is refused: one warning naming the file and why, no disk cache in that
    process (nothing read, nothing written), the kernel compiled and right; a group
    that may read the key is sharing it on purpose, and is accepted."""
    if how == "another-user" and os.getuid() != 0:
        pytest.skip("giving a file to another user needs root")
    _unsafe_key(case, how)
    before = case.key_file.read_bytes()
    r = case.run()
    assert r["out"] == _expected() and r["typed"] == 1
    warned = _trust_warnings(r)
    assert len(warned) == 1 and str(case.key_file) in warned[0] and reason in warned[0], warned
    assert "NUMBA_GPUX_CACHE_KEY_FILE" in warned[0]
    assert case.entries() == [] and case.key_file.read_bytes() == before
    info = subprocess.run([sys.executable, "-m", "numba_gpux", "cache", "info"], text=True,
                          capture_output=True, timeout=120,
                          env=dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(case.cache),
                                   NUMBA_GPUX_CACHE_KEY_FILE=str(case.key_file)))
    assert info.returncode == 0 and f"key      {case.key_file}: refused" in info.stdout


def test_a_key_the_group_may_read_is_used(case):
    case.key_file.parent.mkdir(mode=0o700)
    case.key_file.write_text(os.urandom(32).hex() + "\n")
    os.chmod(case.key_file, 0o640)
    assert case.run()["warnings"] == []
    assert _hit(case.run())


@pytest.mark.parametrize("mode,shared,warns", [
    (0o777, False, True),   # anyone may write
    (0o770, False, True),   # the group may write
    (0o1777, False, False),  # sticky, as /tmp: others cannot remove or rename our files
    (0o777, True, False),   # shared on purpose (NUMBA_GPUX_CACHE_SHARED=1)
])
def test_a_cache_folder_others_can_write_warns_once(case, mode, shared, warns):
    assert case.run()["out"] == _expected()
    os.chmod(case.cache, mode)
    r = case.run(env_extra={"NUMBA_GPUX_CACHE_SHARED": "1"} if shared else None)
    assert r["out"] == _expected() and r["stats"]["index_hits"] == 1  # still used
    warned = _trust_warnings(r)
    if warns:
        assert len(warned) == 1, r["warnings"]
        assert str(case.cache) in warned[0] and "other users can write it" in warned[0]
        assert "NUMBA_GPUX_CACHE_SHARED=1" in warned[0] and "chmod 700" in warned[0]
    else:
        assert r["warnings"] == []


def test_entries_hold_data_only(tmp_path, monkeypatch):
    """What the cache writes round-trips as data; anything else is refused (not cached
    on disk) rather than pickled."""
    import numpy as np
    from numba.core import types

    from numba_gpux.cache import DiskCache

    value = {"kind": "spirv", "binary": b"\x00\x01\xff" * 5, "kernels": ("k", "j"),
             "info": {"cc": (8, 0), "flag": True, "none": None, "x": 1.5},
             "deps": {"f": frozenset({"g", "h"})}, "list": [1, "a", b"b"],
             "ir": "define void @f() {\n  ret void ; \"é\" \u2192\n}\n" * 10,
             "$odd": {1: "int key", ("t", 2): [b""]}}
    assert cachefile.decode(cachefile.encode(value)) == value
    for bad in (np.float64(1.0), types.float32, types.Array(types.int64, 1, "C"),
                Payload("x"), {1, 2}, [object()]):
        with pytest.raises(TypeError):
            cachefile.encode(bad)
    monkeypatch.setenv("NUMBA_GPUX_CACHE_KEY_FILE", str(tmp_path / "keys" / "cache.key"))
    dc = DiskCache(str(tmp_path / "cache"))
    assert dc.write("code", "ab" * 32, value) and dc.read("code", "ab" * 32) == value
    assert not dc.write("code", "cd" * 32, {"signature": types.float32})
    assert not os.path.exists(dc.path("code", "cd" * 32))
