"""numba.cuda kernels that share memory, run with warps in lockstep, next to the same
code at the device's own sub-group width.

A facade kernel that shares work-group memory runs with 32-wide sub-groups where the
device can require that width and its launch's blocks are rows of whole warps
(``blockDim.x`` a multiple of 32, or blocks one row high), and every store to
work-group memory is followed by a fence, so that warp-synchronous numba.cuda code
(values passed through shared memory without a barrier) gives CUDA's answers
(docs/migration.md, "Warps in lockstep").  This measures what that costs, or gains,
against the same Python through ``numba_gpux.jit``, which keeps the device's natural
width and adds no fence, on the same device, buffers and grid, alternating launch by
launch:

* ``matmul``: numba's documented tiled matrix product with 32 x 32 tiles (blocks of
  32 x 32), n = 256, 512 and 1000 (not a multiple of the tile);
* ``transpose``: a 32 x 32 shared tile (padded to 33 columns) with blocks of 32 x 8,
  2048 x 2048 and 1500 x 3001;
* ``block_sum``: a 1-D block's sum in shared memory with a barrier at every step (code
  right at any width), blocks of 256 and 1024, 2**22 and 3,000,017 elements;
* ``block_min``: a 2-D block's minimum, the last 32 steps without a barrier as older
  numba.cuda code writes them, blocks of 32 x 8, 32 x 32, 16 x 16 and 8 x 32 (the last
  two run as one row each, their warps in lockstep there): its answers are checked
  for ours; at the natural width they are wrong (counted, not timed against).

For float32 and float64.  Results are checked against NumPy.  Ratios are our time /
the natural width's (medians).

Usage: python benchmarks/warp_rows.py [--reps 9] [--quick] [--out FILE]
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench_import import geomean_and_worst, ratio_main  # noqa: E402

__all__ = ["main", "measure"]

TILE = 32
TILE1 = 33
ROWS = 8


def _kernels(dt):
    from numba import float32, float64

    from numba_gpux import cuda

    T = float32 if dt == np.float32 else float64

    def matmul(A, B, C):
        sA = cuda.shared.array(shape=(TILE, TILE), dtype=T)
        sB = cuda.shared.array(shape=(TILE, TILE), dtype=T)
        x, y = cuda.grid(2)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tmp = T(0.)
        for i in range(cuda.gridDim.x):
            sA[ty, tx] = 0
            sB[ty, tx] = 0
            if y < A.shape[0] and (tx + i * TILE) < A.shape[1]:
                sA[ty, tx] = A[y, tx + i * TILE]
            if x < B.shape[1] and (ty + i * TILE) < B.shape[0]:
                sB[ty, tx] = B[ty + i * TILE, x]
            cuda.syncthreads()
            for j in range(TILE):
                tmp += sA[ty, j] * sB[j, tx]
            cuda.syncthreads()
        if y < C.shape[0] and x < C.shape[1]:
            C[y, x] = tmp

    def transpose(a, b):
        tile = cuda.shared.array((TILE, TILE1), T)
        x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
        y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
        for j in range(0, TILE, ROWS):
            if x < a.shape[1] and y + j < a.shape[0]:
                tile[cuda.threadIdx.y + j, cuda.threadIdx.x] = a[y + j, x]
        cuda.syncthreads()
        x = cuda.blockIdx.y * TILE + cuda.threadIdx.x
        y = cuda.blockIdx.x * TILE + cuda.threadIdx.y
        for j in range(0, TILE, ROWS):
            if x < b.shape[1] and y + j < b.shape[0]:
                b[y + j, x] = tile[cuda.threadIdx.x, cuda.threadIdx.y + j]

    def block_sum(x, out):
        sm = cuda.shared.array(1024, T)
        t = cuda.threadIdx.x
        i = cuda.grid(1)
        sm[t] = x[i] if i < x.size else 0
        cuda.syncthreads()
        s = cuda.blockDim.x // 2
        while s > 0:
            if t < s:
                sm[t] += sm[t + s]
            cuda.syncthreads()
            s //= 2
        if t == 0:
            out[cuda.blockIdx.x] = sm[0]

    def block_min(m, out):
        row, col = cuda.grid(2)
        best = m[row % m.shape[0], col % m.shape[1]]
        sm = cuda.shared.array(1024, T)
        t = cuda.threadIdx.x + cuda.blockDim.x * cuda.threadIdx.y
        sm[t] = best
        cuda.syncthreads()
        s = (cuda.blockDim.x * cuda.blockDim.y) // 2
        while s > 32:
            if t < s:
                sm[t] = min(sm[t], sm[t + s])
            cuda.syncthreads()
            s //= 2
        if t < 32:
            sm[t] = min(sm[t], sm[t + 32])
            sm[t] = min(sm[t], sm[t + 16])
            sm[t] = min(sm[t], sm[t + 8])
            sm[t] = min(sm[t], sm[t + 4])
            sm[t] = min(sm[t], sm[t + 2])
            sm[t] = min(sm[t], sm[t + 1])
        if t == 0:
            out[cuda.blockIdx.x, cuda.blockIdx.y] = sm[0]

    return {f.__name__: f for f in (matmul, transpose, block_sum, block_min)}


def _block_min_expected(m, grid, block):
    """Each block's minimum of the elements its threads read (row and column modulo
    the matrix's)."""
    rows = (np.arange(grid[0] * block[0]) % m.shape[0]).reshape(grid[0], block[0])
    cols = (np.arange(grid[1] * block[1]) % m.shape[1]).reshape(grid[1], block[1])
    return np.array([[m[np.ix_(rows[a], cols[b])].min() for b in range(grid[1])]
                     for a in range(grid[0])], m.dtype)


def _cases(kernels, dt, rng, quick):
    """(name, launch args for both, grid, block, check(result arrays) -> bool)."""
    from numba_gpux import cuda

    cases = []
    for n in ((256,) if quick else (256, 512, 1000)):
        a, b = rng.random((n, n)).astype(dt), rng.random((n, n)).astype(dt)
        g = -(-n // TILE)
        want = a @ b
        cases.append((f"matmul n={n}", "matmul", (cuda.to_device(a), cuda.to_device(b)),
                      (n, n), (g, g), (TILE, TILE),
                      lambda c, want=want: np.allclose(c, want, rtol=1e-4 if dt == np.float32
                                                       else 1e-10)))
    for shape in (((256, 320),) if quick else ((2048, 2048), (1500, 3001))):
        a = rng.random(shape).astype(dt)
        grid = (-(-shape[1] // TILE), -(-shape[0] // TILE))
        cases.append((f"transpose {shape[0]}x{shape[1]}", "transpose", (cuda.to_device(a),),
                      shape[::-1], grid, (TILE, ROWS),
                      lambda c, a=a: np.array_equal(c, a.T)))
    for n in ((10_007,) if quick else (1 << 22, 3_000_017)):
        x = rng.random(n).astype(dt)
        for block in ((256,) if quick else (256, 1024)):
            grid = -(-n // block)
            pad = np.concatenate([x, np.zeros(grid * block - n, dt)]).reshape(grid, block)
            want = pad.sum(axis=1)
            cases.append((f"block_sum n={n} block={block}", "block_sum", (cuda.to_device(x),),
                          (grid,), (grid,), (block,),
                          lambda c, want=want: np.allclose(c, want, rtol=1e-4)))
    m = rng.random((1000, 1500)).astype(dt)
    for block in (((32, 8), (16, 16)) if quick else ((32, 8), (32, 32), (16, 16), (8, 32))):
        grid = (-(-m.shape[0] // block[0]), -(-m.shape[1] // block[1]))
        want = _block_min_expected(m, grid, block)
        cases.append((f"block_min block={block[0]}x{block[1]}", "block_min",
                      (cuda.to_device(m),), grid, grid, block,
                      lambda c, want=want: np.array_equal(c, want)))
    return cases


def measure(reps: int = 9, seed: int = 0, quick: bool = False) -> dict:
    import warnings

    import numba_gpux as gpux
    from numba_gpux import cuda

    warnings.filterwarnings("ignore", message="Grid size")
    rng = np.random.default_rng(seed)
    device = gpux.default_device()
    T = time.perf_counter
    res = {"reps": reps, "seed": seed, "device": str(device), "cases": {}}
    for dt in (np.float32, np.float64):
        fns = _kernels(dt)
        ours = {k: cuda.jit(f) for k, f in fns.items()}
        natural = {k: gpux.jit(f) for k, f in fns.items()}
        for name, kind, args, out_shape, grid, block, check in _cases(fns, dt, rng, quick):
            outs = {w: cuda.device_array(out_shape, dt) for w in ("ours", "natural")}
            launches = {"ours": ours[kind][grid, block], "natural": natural[kind][grid, block]}
            times = {w: [] for w in launches}
            for r in range(reps + 1):  # the first of each is a warm-up (and the compile)
                for w, launch in launches.items():
                    cuda.synchronize()
                    t0 = T()
                    launch(*args, outs[w])
                    cuda.synchronize()
                    if r:
                        times[w].append(T() - t0)
            got = {w: check(outs[w].copy_to_host()) for w in outs}
            med = {w: statistics.median(v) * 1e3 for w, v in times.items()}
            res["cases"][f"{np.dtype(dt).name} {name}"] = {
                "ours_ms": med["ours"], "natural_ms": med["natural"],
                "ratio": med["ours"] / med["natural"], "ours_ok": got["ours"],
                "natural_ok": got["natural"], "racy": kind == "block_min"}
    ratios = [c["ratio"] for c in res["cases"].values() if not c["racy"]]
    res["geomean"], res["worst"] = geomean_and_worst(ratios)
    return res


def summary(res: dict) -> str:
    lines = [f"device: {res['device']}, medians of {res['reps']} launches",
             f"{'case':44} {'ours ms':>9} {'natural ms':>11} {'ratio':>6}  answers"]
    for name, c in res["cases"].items():
        ans = "ours right" if c["ours_ok"] else "OURS WRONG"
        ans += ", natural " + ("right" if c["natural_ok"] else "wrong")
        lines.append(f"{name:44} {c['ours_ms']:9.2f} {c['natural_ms']:11.2f} "
                     f"{c['ratio']:6.2f}  {ans}")
    lines.append(f"ours / natural width (race-free kernels): geomean {res['geomean']:.2f}, "
                 f"worst {res['worst']:.2f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    return ratio_main(__doc__, measure, summary, 9, "warp_rows.json",
                      lambda r: all(c["ours_ok"] for c in r["cases"].values()), argv)


if __name__ == "__main__":
    sys.exit(main())
