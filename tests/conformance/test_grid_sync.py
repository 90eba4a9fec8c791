"""Grid-wide synchronization: ``this_grid().sync()`` on every device, the cooperative
launch limit (``max_cooperative_grid_blocks``), a grid barrier that cannot complete
reported as an error, and what kernels without it compile to."""

from __future__ import annotations

import numpy as np
import pytest
from llvmlite import binding as ll
from numba.core import types

import numba_gpux as gpux
from numba_gpux.errors import LaunchError

TPB = 32
ROUNDS = 6


@gpux.jit
def relay(data, rounds):
    # row r + 1 of each work-item is its partner's row r plus one; the partner is the
    # same thread of the next block, so every round reads what another block wrote
    # before the last grid sync
    i = gpux.grid(1)
    n = data.shape[1]
    partner = (i + gpux.block_dim.x) % n
    g = gpux.this_grid()
    for r in range(rounds):
        data[r + 1, i] = data[r, partner] + 1
        g.sync()


@gpux.jit(device=True)
def _sync_inner():
    gpux.this_grid().sync()


@gpux.jit(device=True)
def _sync_outer(out, i, v):
    out[i] = v
    _sync_inner()


@gpux.jit
def through_device_functions(out, seen):
    # the grid sync two device functions down; then each work-item reads another block's
    i = gpux.grid(1)
    n = out.size
    _sync_outer(out, i, i + 1)
    seen[i] = out[(i + gpux.block_dim.x) % n]
    gpux.this_block().sync()


@gpux.jit
def returns_early(out):
    if gpux.block_idx.x == gpux.grid_dim.x - 1:
        return  # the last block never reaches the grid sync
    gpux.this_grid().sync()
    out[gpux.grid(1)] = 1


@gpux.jit
def plain(out):
    out[gpux.grid(1)] = 1


@gpux.jit
def plain_synced(out):
    out[gpux.grid(1)] = 1
    gpux.this_grid().sync()


def _relay_expected(blocks: int) -> np.ndarray:
    n = blocks * TPB
    return np.repeat(np.arange(ROUNDS + 1, dtype=np.int32)[:, None], n, axis=1)


@pytest.mark.feature("grid_sync")
def test_the_largest_allowed_grid_synchronizes_every_round(device):
    sig = (types.int32[:, ::1], types.int64)
    blocks = relay.max_cooperative_grid_blocks(TPB, signature=sig)
    assert blocks >= 1
    # the number depends on the block's threads, not on their shape
    assert relay.max_cooperative_grid_blocks((TPB // 4, 2, 2), signature=sig) == blocks
    data = gpux.to_device(np.zeros((ROUNDS + 1, blocks * TPB), np.int32))
    relay[blocks, TPB](data, ROUNDS)
    np.testing.assert_array_equal(data.copy_to_host(), _relay_expected(blocks))
    relay[blocks, TPB](data, ROUNDS)  # again: the barrier's state starts over at each launch
    np.testing.assert_array_equal(data.copy_to_host(), _relay_expected(blocks))


@pytest.mark.feature("grid_sync")
def test_one_block_more_is_refused_before_anything_runs(device):
    sig = (types.int32[:, ::1], types.int64)
    blocks = relay.max_cooperative_grid_blocks(TPB, signature=sig)
    data = gpux.to_device(np.zeros((ROUNDS + 1, (blocks + 1) * TPB), np.int32))
    with pytest.raises(LaunchError, match=rf"runs at most {blocks} block\(s\).* has {blocks + 1}"):
        relay[blocks + 1, TPB](data, ROUNDS)
    assert not data.copy_to_host().any()  # nothing ran
    # a 2-D grid counts all its blocks
    with pytest.raises(LaunchError, match="max_cooperative_grid_blocks"):
        relay[(blocks + 1, 1), TPB](data, ROUNDS)


@pytest.mark.feature("grid_sync")
def test_grid_sync_in_device_functions_and_block_sync(device):
    sig = (types.int32[::1], types.int32[::1])
    blocks = min(4, through_device_functions.max_cooperative_grid_blocks(TPB, signature=sig))
    n = blocks * TPB
    out = gpux.to_device(np.zeros(n, np.int32))
    seen = gpux.to_device(np.zeros(n, np.int32))
    through_device_functions[blocks, TPB](out, seen)
    np.testing.assert_array_equal(seen.copy_to_host(), np.roll(np.arange(1, n + 1), -TPB))
    ov = through_device_functions.overloads[sig]
    assert ov.cooperative


@pytest.mark.feature("grid_sync")
def test_a_barrier_that_cannot_complete_is_an_error_not_a_hang(device, monkeypatch):
    monkeypatch.setenv("NUMBA_GPUX_GRID_SYNC_SPINS", "20000")
    sig = (types.int32[::1],)
    blocks = returns_early.max_cooperative_grid_blocks(TPB, signature=sig)
    if blocks < 2:
        pytest.skip(f"{device.spec} runs one block at a time: no block can wait for another")
    out = gpux.to_device(np.zeros(blocks * TPB, np.int32))
    with pytest.raises(gpux.GridSyncError, match=r"'returns_early'.*did not complete.*20000"):
        returns_early[blocks, TPB](out)
    # the device is still usable, and a kernel that completes reports nothing
    monkeypatch.delenv("NUMBA_GPUX_GRID_SYNC_SPINS")
    plain_synced[blocks, TPB](out)
    assert (out.copy_to_host() == 1).all()


@pytest.mark.feature("grid_sync", "debug_errors", "debug_errors_after_barrier")
def test_debug_kernels_report_errors_and_synchronize(device):
    @gpux.jit(debug=True)
    def checked(out):
        i = gpux.grid(1)
        out[i] = i
        gpux.this_grid().sync()
        out[(i + 1) % out.size] += 0
        if i == 3:
            out[out.size + i] = 0  # out of bounds: reported after the sync

    out = gpux.to_device(np.zeros(2 * 8, np.int32))
    blocks = min(2, checked.max_cooperative_grid_blocks(8, signature=(types.int32[::1],)))
    with pytest.raises(IndexError, match="tid=\\[3, 0, 0\\] ctaid=\\[0, 0, 0\\]"):
        checked[blocks, 8](out)


def _entry_params(kernel, argtypes) -> int:
    sym, text = kernel.kernel_ir(argtypes)
    mod = ll.parse_assembly(text)
    return len(list(mod.get_function(sym).arguments)), \
        any(f.name == "__gpux_grid_barrier" for f in mod.functions)


def test_kernels_without_grid_sync_take_no_hidden_argument():
    argtypes = (types.int32[::1],)
    plain.compile(argtypes)
    plain_synced.compile(argtypes)
    n_plain, barrier_plain = _entry_params(plain, argtypes)
    n_synced, barrier_synced = _entry_params(plain_synced, argtypes)
    assert not barrier_plain and barrier_synced
    assert n_synced == n_plain + 1  # the hidden buffer, nothing else
    assert not plain.overloads[argtypes].cooperative
    assert plain_synced.overloads[argtypes].cooperative


def test_ptx_of_a_grid_sync_kernel(ptxas):
    from numba_gpux.targets.cuda import toolkit

    plain_art = gpux.compile(plain, "void(int32[::1])", target="cuda")
    art = gpux.compile(relay, "void(int32[:, ::1], int64)", target="cuda")
    ok, messages = toolkit.ptxas_check(art.text, art.info["cc"])
    assert ok, messages
    # the barrier: device-scope atomics on the hidden buffer, fenced
    assert "atom.global.add.u32" in art.text and "membar.gl" in art.text
    assert "atom." not in plain_art.text and "membar" not in plain_art.text


def test_this_grid_takes_no_arguments():
    from numba.core.errors import TypingError

    def bad(out):
        gpux.this_grid(1).sync()

    with pytest.raises(TypingError, match="this_grid\\(\\) takes no arguments"):
        gpux.compile(bad, "void(int32[::1])", target="opencl")


_CACHED = """
import numpy as np
import numba_gpux as gpux

@gpux.jit(cache=True)
def cached_relay(data, rounds):
    i = gpux.grid(1)
    g = gpux.this_grid()
    for r in range(rounds):
        data[r + 1, i] = data[r, data.shape[1] - 1 - i] + 1
        g.sync()

with gpux.use_device("opencl"):
    blocks = 1  # (more blocks than one are the other tests' subject)
    d = gpux.to_device(np.zeros((4, blocks * 8), np.int32))
    cached_relay[blocks, 8](d, np.int64(3))
    ok = bool((d.copy_to_host() == np.arange(4)[:, None]).all())
    try:
        cached_relay[1000, 8](d, np.int64(3))
        refused = False
    except gpux.LaunchError:
        refused = True
from numba_gpux import cache
print(ok, refused, cache.stats["index_hits"], bool(cached_relay._neutral))
"""


def test_a_kernel_from_the_disk_cache_index_is_still_cooperative(opencl_device, tmp_path):
    # the index keeps whether the kernel synchronizes its grid: a hit, which types
    # nothing, still passes the hidden buffer and applies the limit
    import os
    import subprocess
    import sys

    script = tmp_path / "cached_relay.py"
    script.write_text(_CACHED)
    env = dict(os.environ, NUMBA_GPUX_CACHE_DIR=str(tmp_path / "cache"))
    runs = [subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=env, timeout=300) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    assert runs[0].stdout.split() == ["True", "True", "0", "True"]
    assert runs[1].stdout.split() == ["True", "True", "1", "False"]  # no typing at all


@pytest.mark.parametrize("raw, want", [("", None), ("abc", None), ("0", None), ("-3", None),
                                       ("5000", 5000), (str(2**40), 2**31 - 1)])
def test_the_spin_bound_setting(monkeypatch, raw, want):
    from numba_gpux import config

    monkeypatch.setenv("NUMBA_GPUX_GRID_SYNC_SPINS", raw)
    assert config.grid_sync_spins() == (config.GRID_SYNC_SPINS if want is None else want)
