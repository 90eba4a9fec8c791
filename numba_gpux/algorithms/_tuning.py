"""The tuning hooks of ``numba_gpux.algorithms`` and their per-target implementations.

Every value here is looked up on the host for each call and reaches kernels
only as a launch configuration or an ordinary kernel argument, so changing
one never recompiles anything.  The values below are the package's defaults
(``default=True``); each hook declares a search space, and :func:`tuned` runs
an algorithm's call with its hooks autotuned for the device, dtype and size
(docs/autotuning.md), so a tuned result beats these defaults and anything a
library or user registers beats both.
"""

from __future__ import annotations

import contextlib

from .. import autotuning, hooks
from ..devices import default_device, use_device
from .._version import __version__

__all__ = ["install_defaults", "BLOCK_SIZE", "ITEMS_PER_THREAD", "SORT_ITEMS_PER_THREAD", "RADIX_BITS",
           "SORT_BLOCK_SIZE", "sort_block_size",
           "MAP_ITEMS_PER_THREAD", "MAP_BLOCK_SIZE", "map_items_per_thread", "map_block_size",
           "REDUCE_GROUPS", "block_size", "items_per_thread", "sort_items_per_thread", "radix_bits",
           "reduce_groups", "tuned", "TUNE_MIN_SIZE", "SCAN_VARIANT", "SCAN_CHUNKS", "scan_variant",
           "scan_chunks", "REDUCE_VARIANT", "reduce_variant", "AXIS_LANES", "AXIS_LINES",
           "AXIS_WORK_ITEMS", "axis_lanes", "axis_lines", "axis_work_items", "AXIS_SLOTS",
           "axis_slots", "AXIS_FLAT_WIDTH", "axis_flat_width"]

def _groups(q) -> tuple:
    """Work-items per work-group to try: powers of two up to the device's limit."""
    top = int(q.limit("max_threads_per_block", 1024) or 1024)
    return tuple(b for b in (16, 32, 64, 128, 256, 512, 1024) if b <= top)


def _group_caps(q) -> tuple:
    cu = int(q.limit("compute_units", 16) or 16)
    return (0, cu, 4 * cu, 8 * cu, 16 * cu)


BLOCK_SIZE = hooks.declare(
    "algorithms.block_size", int,
    "Work-items per work-group for reduce and scan (a power of two; clamped to the "
    "device's limit).", space=_groups)
ITEMS_PER_THREAD = hooks.declare(
    "algorithms.items_per_thread", int,
    "Elements each work-item handles in reduce and scan.", space=(1, 4, 16, 64, 256))
SORT_ITEMS_PER_THREAD = hooks.declare(
    "algorithms.sort_items_per_thread", int,
    "Consecutive keys each work-item counts and scatters in one radix-sort pass.",
    space=(256, 1024, 4096, 16384, 131072))
REDUCE_GROUPS = hooks.declare(
    "algorithms.reduce_groups", int,
    "The most work-groups a whole-array reduce's first pass launches; each work-item "
    "then folds every (groups x block size)-th element, so one more pass finishes. "
    "0: a group per block size x items per thread elements (more passes).  The 'chunks' "
    "variant cuts the array into this many chunks (0: 4 per compute unit).",
    space=_group_caps)
MAP_ITEMS_PER_THREAD = hooks.declare(
    "algorithms.map_items_per_thread", int,
    "Elements each work-item handles in map and foreach; 1: one element per work-item, "
    "with a kernel that has no loop (the shape CPU drivers vectorize across work-items).",
    space=(1, 2, 4, 8))
MAP_BLOCK_SIZE = hooks.declare(
    "algorithms.map_block_size", int,
    "Work-items per work-group for map and foreach (clamped to the device's limit).",
    space=_groups)
RADIX_BITS = hooks.declare(
    "algorithms.radix_bits", int,
    "The most bits of the key sorted per radix-sort pass (1 to 12; a sort makes as few "
    "passes as this allows over the bits in which its keys differ).", space=(4, 6, 8, 11))
SORT_BLOCK_SIZE = hooks.declare(
    "algorithms.sort_block_size", int,
    "Work-items per work-group in the radix sort's passes (each counts, then scatters, "
    "its own keys: CPU devices run few, long work-items best).", space=(1, 4, 64, 256))

AXIS_LANES = hooks.declare(
    "algorithms.axis_lanes", int,
    "Work-items that fold one line of a reduce along the last (contiguous) axis, each every "
    "lanes-th element (then the lanes' values are folded in order).", space=(8, 16, 32, 64))
AXIS_LINES = hooks.declare(
    "algorithms.axis_lines", int,
    "Lines per work-group of a reduce along the last axis (the work-group is lanes x "
    "lines).", space=(1, 4, 16))
AXIS_WORK_ITEMS = hooks.declare(
    "algorithms.axis_work_items", int,
    "Work-items a reduce along a strided axis aims for: the axis is cut into chunks, "
    "enough that chunks x the result's size reaches this, each folded by one work-item "
    "per column, then the chunks' values in order.",
    space=lambda q: tuple(k * int(q.limit("compute_units", 16) or 16) for k in (256, 2048, 8192)))
AXIS_SLOTS = hooks.declare(
    "algorithms.axis_slots", int,
    "Columns each work-item of a reduce along a strided axis folds (a work-group covers "
    "block-size contiguous columns of each row it reads, each of its work-items this many, "
    "block-size / slots apart, in registers): 1 keeps one column per work-item (coalesced "
    "on GPUs); on CPU drivers a work-group of one vector of lanes reads a row segment long "
    "enough for the processor's prefetcher (1 to 64).", space=(1, 4, 16))
AXIS_FLAT_WIDTH = hooks.declare(
    "algorithms.axis_flat_width", int,
    "The widest rows (columns) a reduce along a strided axis walks as flat memory: each "
    "work-group, one vector of 16 lanes, folds a contiguous chunk of rows, each lane "
    "keeping the columns it meets apart (up to 8 of them: widths whose columns need "
    "more take the chunks of columns); 0: never.", space=(0, 16, 64))
REDUCE_VARIANT = hooks.declare(
    "algorithms.reduce_variant", str,
    "How a whole-array reduce runs: 'tree' (work-groups fold their work-items' values "
    "in a tree with barriers, one launch per pass), 'subgroup' (sub-groups combine "
    "their lanes, one work-item folds the partials: no barrier; for add, multiply, min "
    "and max on devices with sub-groups, else the tree) or 'chunks' (each work-group "
    "folds one contiguous chunk, its work-items every block-size-th element of it in "
    "four accumulators, one work-item folds their values: no barrier, any operator; "
    "algorithms.reduce_groups chunks, 4 per compute unit where that is 0).",
    space=("tree", "subgroup", "chunks"))
SCAN_VARIANT = hooks.declare(
    "algorithms.scan_variant", str,
    "How scan runs: 'lookback' (one pass: each work-group scans a tile and takes its "
    "prefix from the tiles before it by decoupled look-back: GPUs), 'blocked' "
    "(work-groups scan tiles with barriers, the tiles' totals are scanned, a third "
    "launch adds them) or 'chunked' (a few work-items each fold, then scan, a "
    "contiguous chunk: CPU devices).", space=lambda q: _scan_variants(q))


def _scan_variants(q) -> tuple:
    """The scan variants autotuning tries on a device: 'lookback' only where a work-group
    that started is known to run to its end (CPU devices, and devices whose package
    default is 'lookback'): elsewhere a trial of it could wait forever."""
    fn, _ = hooks.get_hook("algorithms.scan_variant").lookup(q.target, q.kind)
    default = fn(q) if callable(fn) else fn
    if q.kind == "cpu" or default == "lookback":
        return ("chunked", "blocked", "lookback")
    return ("chunked", "blocked")


SCAN_CHUNKS = hooks.declare(
    "algorithms.scan_chunks", int,
    "Work-items (chunks) of the chunked scan.", space=lambda q: tuple(
        k * int(q.limit("compute_units", 16) or 16) for k in (8, 32, 128)))

#: the fewest elements for which a call tunes its hooks (smaller calls cost about
#: their launches whatever the hooks say): those run with the hooks' present values
TUNE_MIN_SIZE = 1 << 18


def tuned(subject: str, names: tuple, device, dtype, n: int, run, writes=(), extra=()):
    """``run()`` with the hooks *names* autotuned for *device*, *dtype* and the problem key
    ``(subject, *extra, bucket(n))`` (``autotuning.tuned_hooks``); calls on fewer than
    :data:`TUNE_MIN_SIZE` elements just run.  *run* takes the problem key, which it
    passes to every hook lookup."""
    key = (subject, *extra, autotuning.bucket(n))
    # the kernels launch on *device* (the arrays' device, or the one asked for), also
    # where another one is current
    with contextlib.nullcontext() if device is default_device() else use_device(device):
        if n < TUNE_MIN_SIZE:
            return run(key)
        return autotuning.tuned_hooks(subject, names, device, dtype, key, lambda: run(key),
                                      writes=writes, fingerprint=__version__)


def install_defaults() -> None:
    """(Re-)register this package's implementations of its hooks for every target."""
    # -- defaults: a reasonable GPU --------------------------------------------------
    hooks.implement("algorithms.block_size", fn=lambda q: 256, default=True)
    hooks.implement("algorithms.items_per_thread", fn=lambda q: 4, default=True)
    hooks.implement("algorithms.sort_items_per_thread", fn=lambda q: 16, default=True)
    hooks.implement("algorithms.radix_bits", fn=lambda q: 4, default=True)
    hooks.implement("algorithms.sort_block_size", fn=lambda q: 256, default=True)
    hooks.implement("algorithms.reduce_groups", fn=lambda q: 0, default=True)
    hooks.implement("algorithms.map_items_per_thread", fn=lambda q: 4, default=True)
    hooks.implement("algorithms.map_block_size", fn=lambda q: 256, default=True)

    # reduce along an axis (4,000 x 1,000 and 1,000 x 4,000 float64 on Intel's OpenCL CPU
    # driver, 2 cores, ms, NumPy 0.9 to 2.0): along the last axis 16 lanes x 16 lines
    # 1.2 to 1.4, 32 lanes 1.5 to 2.5, 64 lanes 3 to 8 (one work-item per line: 4 to 24);
    # along the first axis 4 to 16 chunks of 4,000 / 1,000 columns 2.4 to 2.6 (one
    # chunk: 3 to 13)
    hooks.implement("algorithms.axis_lanes", default=True, fn=lambda q: 32)
    hooks.implement("algorithms.axis_lines", default=True, fn=lambda q: 4)
    hooks.implement("algorithms.axis_work_items", default=True,
                    fn=lambda q: 2048 * int(q.limit("compute_units", 16) or 16))
    hooks.implement("algorithms.axis_lanes", device_kind="cpu", default=True, fn=lambda q: 16)
    hooks.implement("algorithms.axis_lines", device_kind="cpu", default=True, fn=lambda q: 16)
    hooks.implement("algorithms.axis_work_items", device_kind="cpu", default=True,
                    fn=lambda q: 8192 * int(q.limit("compute_units", 16) or 16))
    # rows of a few columns summed along the rows (100,000 x 40 float64 on Intel's CPU
    # driver, ms, NumPy 2.1): chunks of columns 3.1 to 3.9 (a work-group's vectors each
    # stride through the chunk); flat chunks of rows 1.2 with 256 chunks, 2.6 with 64;
    # 50,000 x 64: 0.6 to 0.8 against NumPy's 1.6. GPUs keep the coalesced columns
    # along the first axis (Intel's CPU driver, ms, one process, 1 / 4 / 16 columns per
    # work-item alternating, NumPy in brackets): 4,000 x 1,000 float64 1.9-2.3 / 1.4-1.8 /
    # 1.2-1.8 (1.5-2.1), 1,000 x 4,000 1.7-2.3 / 1.2-1.7 / 1.0-1.5 (1.9), 2,000 x 2,000
    # int64 2.1-3.0 / 1.4-2.2 / 1.1-1.9 (1.9-2.8), 4,000 x 1,000 int32 0.6-0.9 / 0.5-0.6 /
    # 0.4-0.5 (1.5-2.4); float32 a tie. With one column each, a vector of the work-group
    # walks 128 bytes of every row, a new page at each step; with 16, 16 vectors a row
    hooks.implement("algorithms.axis_slots", default=True, fn=lambda q: 1)
    hooks.implement("algorithms.axis_slots", device_kind="cpu", default=True, fn=lambda q: 16)
    hooks.implement("algorithms.axis_flat_width", default=True, fn=lambda q: 0)
    hooks.implement("algorithms.axis_flat_width", device_kind="cpu", default=True,
                    fn=lambda q: 64)

    # -- GPUs: enough groups to fill every compute unit several times over, no more:
    # a strided fold in registers reads memory at full speed, where a group per few
    # thousand elements writes a partial per work-item and folds those in more passes
    # (an H200, 2**28 float32: 0.64 ms with 4 groups of 512 per multiprocessor, 0.75 ms
    # with 16 of 256, 1.3 ms uncapped; 8 of 256 keeps the best one's work-items)
    @hooks.implement("algorithms.reduce_groups", device_kind="gpu", default=True)
    def _gpu_reduce_groups(q):
        return 8 * int(q.limit("compute_units", 16) or 16)

    # -- CUDA: 256 threads, a few items each (memory-bound kernels) --------------------
    @hooks.implement("algorithms.block_size", target="cuda", default=True)
    def _cuda_block(q):
        return 256

    # measured on an H200 (benchmarks/cuda_algorithms.py --sweep, 2**28 float32): scan
    # 5.1 ms with 4 items per thread, 7.2 ms with 8; sort (2**26 keys, 4-bit digits)
    # 48 ms with 1024 keys per thread, 76 ms with 16
    hooks.implement("algorithms.items_per_thread", target="cuda", fn=lambda q: 4, default=True)
    hooks.implement("algorithms.sort_items_per_thread", target="cuda", fn=lambda q: 1024,
                    default=True)

    # -- OpenCL: GPUs like CUDA; CPU drivers want few, long-running work-items -----------
    hooks.implement("algorithms.block_size", target="opencl", fn=lambda q: 256, default=True)
    hooks.implement("algorithms.items_per_thread", target="opencl", fn=lambda q: 4, default=True)

    # a whole-array reduce on Intel's OpenCL CPU driver (2 cores, AVX-512), 2**22 elements
    # of four dtypes, sum, max, min and a device-function max(|a|, |b|), ours/NumPy: the
    # "subgroup" variant, 1024 work-items of 8 items each, 0.5 to 5.4 (its strided
    # folds touch a new cache line at every step); "chunks" with work-groups of 16
    # (one sub-group: each step is one contiguous vector load) and 8 chunks per
    # compute unit 0.2 to 2.5, groups of 8 (half a sub-group) 0.6 to 14, of 32 0.3 to 5.
    # Along a strided axis a work-group reads block-size contiguous elements of each row
    # it folds: 256 of them (2 KiB of float64) beat 64 in each of six runs over 4,000 x
    # 1,000, 1,000 x 4,000 and 50 x 100,000 float64 (by 5 to 25%); 1,024 and 4,096 no more
    @hooks.implement("algorithms.block_size", target="opencl", device_kind="cpu", default=True)
    def _ocl_cpu_block(q):
        what = q.key[0] if q.key else None
        return 16 if what == "algorithms.reduce" else 256 if what == "algorithms.reduce_axis" else 64

    @hooks.implement("algorithms.reduce_groups", device_kind="cpu", default=True)
    def _cpu_reduce_groups(q):
        return 8 * int(q.limit("compute_units", 16) or 16)

    @hooks.implement("algorithms.items_per_thread", target="opencl", device_kind="cpu", default=True)
    def _ocl_cpu_items(q):
        return 8

    # map on Intel's OpenCL CPU driver, 2**22 float32 (block, items per work-item -> ms,
    # NumPy 1.4 to 2.2 in the same runs): (64, 64) 13.7, (128, 4) 3.8, (256, 1) with the
    # grid-stride loop 4.9, without it 1.3 to 2.1
    hooks.implement("algorithms.map_items_per_thread", target="opencl", device_kind="cpu",
                    fn=lambda q: 1, default=True)

    # scan on CPU devices: chunks of contiguous elements, no barriers (2**22 int32 on
    # Intel's OpenCL CPU driver, 2 cores: 6.7 ms chunked, 22 ms blocked)
    # reduce on CPU devices: contiguous chunks, no barriers (above)
    hooks.implement("algorithms.reduce_variant", fn="tree", default=True)
    hooks.implement("algorithms.reduce_variant", device_kind="cpu", fn="chunks",
                    default=True)
    hooks.implement("algorithms.scan_variant", fn="blocked", default=True)
    # CUDA GPUs: the single-pass look-back scan (one read and one write of each element,
    # where "blocked" makes about four passes); it relies on a started work-group
    # running to its end and on device-scope fences ordering plain stores before
    # atomics, which CUDA promises (PTX memory model) and other GPU APIs do not all
    # promise, so other GPUs keep "blocked" unless a library or the autotuner says so
    hooks.implement("algorithms.scan_variant", target="cuda", device_kind="gpu", fn="lookback",
                    default=True)
    hooks.implement("algorithms.scan_variant", device_kind="cpu", fn="chunked", default=True)
    hooks.implement("algorithms.scan_chunks", default=True,
                    fn=lambda q: 8 * int(q.limit("compute_units", 16) or 16))
    # CPU devices: more chunks, so that a core slowed by other work takes fewer of them
    # (Intel's OpenCL CPU driver, 2 cores shared with other processes, 2**22 int64
    # inclusive scan, median ms: 16 chunks 7.6 to 8.1, 64 chunks 4.0 to 4.3, 256 3.5 to
    # 4.0; a later run, less loaded, with the scan's four-element steps: int64 16, 64,
    # 256 chunks 4.3, 4.2, 4.8, int32 2.1, 2.1, 2.6)
    hooks.implement("algorithms.scan_chunks", device_kind="cpu", default=True,
                    fn=lambda q: 32 * int(q.limit("compute_units", 16) or 16))

    # radix sort on CPU devices: few work-items (one per 128K keys), each alone in its
    # work-group, up to 11-bit digits (fewer passes; a work-item's counters still fit
    # in L2).  Intel's OpenCL CPU driver, 2 cores, 2**22 keys, sort/argsort in ms
    # (block, keys per work-item, bits): float32 (64, 2048, 4) 254/164, (1, 65536, 8)
    # 39/67, (4, 65536, 11) 33/65; float64 (64, 2048, 4) 277/398, (1, 65536, 11) 108/151;
    # in one later run on a loaded machine, float64 (1, K, 11) for K = 32K, 64K, 128K,
    # 256K: 484/628, 452/549, 379/536, 388/520 (NumPy 573/1360)
    hooks.implement("algorithms.sort_items_per_thread", device_kind="cpu",
                    fn=lambda q: 131072, default=True)
    hooks.implement("algorithms.radix_bits", device_kind="cpu", fn=lambda q: 11, default=True)
    hooks.implement("algorithms.sort_block_size", device_kind="cpu", fn=lambda q: 1,
                    default=True)

install_defaults()


def _pow2_floor(v: int) -> int:
    """The largest power of two at most *v* (1 for v <= 1)."""
    return 1 << (v.bit_length() - 1) if v > 1 else 1


def _group_size(hook: str, device, dtype, key) -> int:
    """Hook *hook*'s work-group size: its value, a power of two no larger than the
    device allows (a HookError if not positive)."""
    bs = hooks.tuning(hook, device, dtype, key)
    if bs < 1:
        raise hooks.HookError(f"{hook} must be positive, got {bs}")
    return _pow2_floor(min(bs, device.max_threads_per_block))


def _count(hook: str, device, dtype, key, least: int = 1) -> int:
    """Hook *hook*'s value, at least *least*."""
    return max(least, hooks.tuning(hook, device, dtype, key))


def block_size(device, dtype, key=None) -> int:
    """The block size for *device* and *dtype*: the hook's value, a power of two
    no larger than the device allows."""
    return _group_size("algorithms.block_size", device, dtype, key)


def map_block_size(device, dtype, key=None) -> int:
    return _group_size("algorithms.map_block_size", device, dtype, key)


def sort_block_size(device, dtype, key=None) -> int:
    return _group_size("algorithms.sort_block_size", device, dtype, key)


def map_items_per_thread(device, dtype, key=None) -> int:
    return _count("algorithms.map_items_per_thread", device, dtype, key)


def items_per_thread(device, dtype, key=None) -> int:
    return _count("algorithms.items_per_thread", device, dtype, key)


def sort_items_per_thread(device, dtype, key=None) -> int:
    return _count("algorithms.sort_items_per_thread", device, dtype, key)


def reduce_groups(device, dtype, key=None) -> int:
    """The cap on a whole-array reduce's first-pass groups (0: none)."""
    return _count("algorithms.reduce_groups", device, dtype, key, least=0)


def radix_bits(device, dtype, key=None) -> int:
    b = hooks.tuning("algorithms.radix_bits", device, dtype, key)
    if not 1 <= b <= 12:
        raise hooks.HookError(f"algorithms.radix_bits must be between 1 and 12, got {b}")
    return b


def _variant(hook: str, allowed: tuple, device, dtype, key) -> str:
    v = hooks.tuning(hook, device, dtype, key)
    if v not in allowed:
        raise hooks.HookError(f"{hook} must be {' or '.join(map(repr, allowed))}, got {v!r}")
    return v


#: the values of ``algorithms.scan_variant``
SCAN_VARIANTS = ("blocked", "chunked", "lookback")


def scan_variant(device, dtype, key=None) -> str:
    return _variant("algorithms.scan_variant", SCAN_VARIANTS, device, dtype, key)


def scan_chunks(device, dtype, key=None) -> int:
    return _count("algorithms.scan_chunks", device, dtype, key)


def reduce_variant(device, dtype, key=None) -> str:
    return _variant("algorithms.reduce_variant", ("tree", "subgroup", "chunks"), device, dtype,
                    key)


def axis_lanes(device, dtype, key=None) -> int:
    return _count("algorithms.axis_lanes", device, dtype, key)


def axis_lines(device, dtype, key=None) -> int:
    return _count("algorithms.axis_lines", device, dtype, key)


def axis_work_items(device, dtype, key=None) -> int:
    return _count("algorithms.axis_work_items", device, dtype, key)


def axis_slots(device, dtype, key=None) -> int:
    s = _count("algorithms.axis_slots", device, dtype, key)
    if s > 64:
        raise hooks.HookError(f"algorithms.axis_slots must be between 1 and 64, got {s}")
    return s


def axis_flat_width(device, dtype, key=None) -> int:
    return _count("algorithms.axis_flat_width", device, dtype, key, least=0)
