"""``sort`` and ``argsort``: stable LSD radix sort in global memory.

Keys are first mapped to unsigned integers whose order is the values' order
(signed integers: flip the sign bit; floats: flip all bits of negatives and
the sign bit of the rest, every NaN to the largest key so NaNs sort last,
``-0.0`` to the key of ``0.0`` so they tie as ``np.sort`` has them).  A reduce
finds the smallest and largest key; the passes sort by ``key - kmin``, and only
by its bits below the highest bit of ``kmax - kmin`` (integers of a small range
take one or two passes, however wide their type; equal keys none), in as few
passes of at most ``radix_bits`` bits as cover them, the digits as even as can
be.  Each pass runs three launches:

1. count: work-item ``t`` counts the digits of its ``ipt`` consecutive keys
   into ``counts[digit * T + t]``;
2. an exclusive scan of ``counts`` (digit-major, so equal digits keep their
   order): each (digit, work-item) gets its first output position;
3. scatter: each work-item walks its keys again in order and moves each
   (with its index, for ``argsort``) to its position.

Stable, so ``argsort`` matches ``np.argsort(kind="stable")``.  The hooks
``algorithms.radix_bits``, ``algorithms.sort_items_per_thread`` and
``algorithms.sort_block_size`` shape the passes: GPUs run many short
work-items, CPU devices a few long ones (128K keys each), each alone in its
work-group, with digits of up to 11 bits.
"""

from __future__ import annotations

import numpy as np

from .. import language as gl
from ..errors import GpuxUserError
from . import _tuning
from ._common import as_device, cdiv, device_of, empty, finish, jit, kernel_cache, reinterpret
from .elementwise import foreach
from .reduction import reduce
from .scanning import scan

__all__ = ["sort", "argsort"]

_SIGN32 = np.uint32(0x80000000)
_SIGN64 = np.uint64(0x8000000000000000)
_ALL32 = np.uint32(0xFFFFFFFF)
_ALL64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_OFF32 = np.int64(0x80000000)


def _key_dtype(dt: np.dtype) -> np.dtype:
    if dt.kind not in "iuf" or dt.itemsize > 8 or (dt.kind == "f" and dt.itemsize < 4):
        raise GpuxUserError(f"sort: unsupported dtype {dt}; integers, float32 and float64 sort")
    return np.dtype(np.uint64) if dt.itemsize == 8 else np.dtype(np.uint32)


# ------------------------------------------------------------------ key transforms

@jit(device=True)
def _fkey32(i, x, bits, keys):
    v = x[i]
    if v != v:
        keys[i] = _ALL32
    elif v == 0:
        keys[i] = _SIGN32
    else:
        u = bits[i]
        if u & _SIGN32:
            keys[i] = ~u
        else:
            keys[i] = u | _SIGN32


@jit(device=True)
def _fkey64(i, x, bits, keys):
    v = x[i]
    if v != v:
        keys[i] = _ALL64
    elif v == 0:
        keys[i] = _SIGN64
    else:
        u = bits[i]
        if u & _SIGN64:
            keys[i] = ~u
        else:
            keys[i] = u | _SIGN64


@jit(device=True)
def _fval32(i, keys, bits):
    k = keys[i]
    if k & _SIGN32:
        bits[i] = k ^ _SIGN32
    else:
        bits[i] = ~k


@jit(device=True)
def _fval64(i, keys, bits):
    k = keys[i]
    if k & _SIGN64:
        bits[i] = k ^ _SIGN64
    else:
        bits[i] = ~k


@jit(device=True)
def _ikey_small(i, x, keys):   # signed, 32 bits or fewer -> uint32
    keys[i] = np.int64(x[i]) + _OFF32


@jit(device=True)
def _ival_small(i, keys, out):
    out[i] = np.int64(keys[i]) - _OFF32


@jit(device=True)
def _ikey64(i, x, keys):       # int64 -> uint64 (sign bit flipped)
    keys[i] = np.uint64(x[i]) ^ _SIGN64


@jit(device=True)
def _ival64(i, keys, out):
    out[i] = np.int64(keys[i] ^ _SIGN64)


@jit(device=True)
def _ucopy(i, x, keys):        # unsigned -> wider or equal unsigned key
    keys[i] = x[i]


@jit(device=True)
def _iota(i, out):
    out[i] = i


def _to_keys(d, dev):
    dt = d.dtype
    kt = _key_dtype(dt)
    keys = empty(d.size, kt, dev)
    n = d.size
    if dt.kind == "f":
        fn = _fkey64 if dt.itemsize == 8 else _fkey32
        foreach(fn, n, d, reinterpret(d, kt), keys, device=dev)
    elif dt.kind == "i":
        foreach(_ikey64 if dt.itemsize == 8 else _ikey_small, n, d, keys, device=dev)
    else:
        foreach(_ucopy, n, d, keys, device=dev)
    return keys


def _from_keys(keys, dt, dev):
    n = keys.size
    out = empty(n, dt, dev)
    if dt.kind == "f":
        foreach(_fval64 if dt.itemsize == 8 else _fval32, n, keys, reinterpret(out, keys.dtype),
                device=dev)
    elif dt.kind == "i":
        foreach(_ival64 if dt.itemsize == 8 else _ival_small, n, keys, out, device=dev)
    else:
        foreach(_ucopy, n, keys, out, device=dev)
    return out


# ------------------------------------------------------------------ radix passes

@jit
def _count(keys, n, ipt, kmin, shift, mask, counts, nthreads):
    t = gl.grid(1)
    if t < nthreads:
        for d in range(np.int64(mask) + 1):
            counts[d * nthreads + t] = 0
        start = t * ipt
        end = start + ipt
        if end > n:
            end = n
        for j in range(np.uint64(start), np.uint64(end)):  # unsigned: no wraparound check
            d = np.int64(((keys[j] - kmin) >> shift) & mask)
            counts[d * nthreads + t] += 1


def _make_scatter(with_vals):
    grid = gl.grid

    if with_vals:
        @jit
        def scatter(keys, vals, n, ipt, kmin, shift, mask, offs, nthreads, keys_out, vals_out):
            t = grid(1)
            if t < nthreads:
                start = t * ipt
                end = start + ipt
                if end > n:
                    end = n
                for j in range(np.uint64(start), np.uint64(end)):
                    k = keys[j]
                    s = np.int64(((k - kmin) >> shift) & mask) * nthreads + t
                    pos = offs[s]
                    offs[s] = pos + 1
                    keys_out[pos] = k
                    vals_out[pos] = vals[j]
    else:
        @jit
        def scatter(keys, vals, n, ipt, kmin, shift, mask, offs, nthreads, keys_out, vals_out):
            t = grid(1)
            if t < nthreads:
                start = t * ipt
                end = start + ipt
                if end > n:
                    end = n
                for j in range(np.uint64(start), np.uint64(end)):
                    k = keys[j]
                    s = np.int64(((k - kmin) >> shift) & mask) * nthreads + t
                    pos = offs[s]
                    offs[s] = pos + 1
                    keys_out[pos] = k
    return scatter


_scatter = kernel_cache(_make_scatter)


_SORT_HOOKS = ("algorithms.radix_bits", "algorithms.sort_items_per_thread",
               "algorithms.sort_block_size")


def _radix_sort(keys, vals, dev, value_dtype):
    """Sort *keys* (uint32/uint64 device array), carrying *vals* if not None; the hooks
    autotuned per dtype and size (the passes sort *keys* and *vals* in place: they
    are put back before each candidate)."""
    n = keys.size
    # the passes sort by the bits in which keys differ from the smallest: key - kmin,
    # below the highest bit of kmax - kmin (integers of a small range, floats of one
    # sign and similar magnitudes need fewer passes; equal keys none)
    kmin = reduce(keys, "min")
    span = int(reduce(keys, "max")) - int(kmin)
    writes = (keys,) if vals is None else (keys, vals)
    subject = "algorithms.sort" if vals is None else "algorithms.argsort"
    return _tuning.tuned(subject, _SORT_HOOKS, dev, value_dtype, n,
                         lambda key: _radix_passes(keys, vals, kmin, span.bit_length(), dev,
                                                   value_dtype, key),
                         writes=writes)


def _pass_shifts(width: int, bits: int) -> tuple[int, list]:
    """(digit bits, the shift of each pass) to sort *width* key bits in passes of at most
    *bits* bits: as few passes as that allows, their digits as even as can be."""
    if width == 0:
        return 1, []
    passes = cdiv(width, bits)
    digit = cdiv(width, passes)
    return digit, list(range(0, width, digit))


def _radix_passes(keys, vals, kmin, width, dev, value_dtype, key):
    n = keys.size
    kt = keys.dtype
    bits, shifts = _pass_shifts(width, _tuning.radix_bits(dev, value_dtype, key))
    if not shifts:
        return keys, vals
    ipt = _tuning.sort_items_per_thread(dev, value_dtype, key)
    bs = _tuning.sort_block_size(dev, value_dtype, key)
    nthreads = cdiv(n, ipt)
    blocks = max(1, cdiv(nthreads, bs))
    radix = 1 << bits
    counts = empty(radix * nthreads, np.int64, dev)
    keys2 = empty(n, kt, dev)
    vals2 = empty(n, vals.dtype, dev) if vals is not None else keys2
    scatter = _scatter(vals is not None)
    mask = kt.type(radix - 1)
    kmin = kt.type(kmin)
    for shift in shifts:
        sh = kt.type(shift)
        _count[blocks, bs](keys, n, ipt, kmin, sh, mask, counts, nthreads)
        offs = scan(counts, "add", exclusive=True, device=dev)
        scatter[blocks, bs](keys, vals if vals is not None else keys, n, ipt, kmin, sh, mask,
                            offs, nthreads, keys2, vals2)
        keys, keys2 = keys2, keys
        if vals is not None:
            vals, vals2 = vals2, vals
    return keys, vals


def _prepare(x, device, what):
    dev = device_of(device, x)
    d, host = as_device(x, dev, f"{what}: x")
    if d.ndim != 1:
        raise GpuxUserError(f"{what}: x must be 1-D, not {d.ndim}-D")
    if not d.is_c_contiguous:
        d = d.copy()
    return dev, d, host


def sort(x, device=None):
    """A sorted copy of the 1-D array *x* (integers or floats; NaNs last).

    Like ``np.sort``; a ``-0.0`` comes back as ``0.0`` and every NaN as the
    same quiet NaN.  NumPy input gives a NumPy result, device input a device array.
    """
    dev, d, host = _prepare(x, device, "sort")
    dt = d.dtype
    _key_dtype(dt)
    if d.size <= 1:
        return finish(d.copy() if d.size else empty(0, dt, dev), host)
    keys, _ = _radix_sort(_to_keys(d, dev), None, dev, dt)
    return finish(_from_keys(keys, dt, dev), host)


def argsort(x, device=None):
    """Indices (int64) that sort the 1-D array *x* stably, NaNs last, like
    ``np.argsort(x, kind="stable")``."""
    dev, d, host = _prepare(x, device, "argsort")
    dt = d.dtype
    _key_dtype(dt)
    n = d.size
    idx = empty(n, np.int64, dev)
    if n == 0:
        return finish(idx, host)
    foreach(_iota, n, idx, device=dev)
    if n == 1:
        return finish(idx, host)
    _, vals = _radix_sort(_to_keys(d, dev), idx, dev, dt)
    return finish(vals, host)
