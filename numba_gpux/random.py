"""Random numbers in kernels: xoroshiro128+ (the generator of ``numba.cuda.random``).

Create one generator state per work-item on the host, then draw from it in a
kernel::

    from numba_gpux.random import (create_xoroshiro128p_states,
                                   xoroshiro128p_uniform_float32)

    @gpux.jit
    def fill(states, out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = xoroshiro128p_uniform_float32(states, i)

    states = create_xoroshiro128p_states(n, seed=42)
    fill[blocks, threads](states, out)

State ``i`` starts ``2**64 * (subsequence_start + i)`` steps into the
sequence of ``seed`` (SplitMix64-expanded), so streams never overlap while a
work-item draws fewer than 2**64 numbers.  A state array is either the record
dtype :data:`xoroshiro128p_dtype` (``s0``, ``s1``; what
:func:`create_xoroshiro128p_states` returns) or an ``(n, 2)`` uint64 array.
The device functions are ordinary ``@jit(device=True)`` functions and run on
every target; the sequences equal ``numba.cuda.random``'s bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
from numba import types
from numba.core.extending import overload
from numba.core.types import float32, float64, int64, uint32, uint64
from numba.np import numpy_support

from .context import TARGET_NAME
from .dispatcher import jit

__all__ = [
    "xoroshiro128p_dtype", "xoroshiro128p_type", "create_xoroshiro128p_states", "init_xoroshiro128p_states",
    "xoroshiro128p_next", "xoroshiro128p_jump", "xoroshiro128p_uniform_float32",
    "xoroshiro128p_uniform_float64", "xoroshiro128p_normal_float32",
    "xoroshiro128p_normal_float64",
]

xoroshiro128p_dtype = np.dtype([("s0", np.uint64), ("s1", np.uint64)], align=True)
#: the Numba type of one generator's state, for explicit signatures
#: (``xoroshiro128p_type[:]``, as numba.cuda spells it)
xoroshiro128p_type = numpy_support.from_dtype(xoroshiro128p_dtype)

TWO_PI_FLOAT32 = np.float32(2 * math.pi)
TWO_PI_FLOAT64 = np.float64(2 * math.pi)


# ---------------------------------------------------------------- state access
def _load(states, index):
    """(s0, s1) of generator *index*; record arrays and (n, 2) uint64 arrays."""


def _store(states, index, s0, s1):
    """Write generator *index*'s state."""


def _is_pair_array(ty):
    return isinstance(ty, types.Array) and ty.ndim == 2 and ty.dtype == uint64


@overload(_load, target=TARGET_NAME)
def _load_ovl(states, index):
    if _is_pair_array(states):
        return lambda states, index: (states[index, 0], states[index, 1])
    if isinstance(states, types.Array) and isinstance(states.dtype, types.Record):
        return lambda states, index: (states[index]["s0"], states[index]["s1"])
    raise types.errors.TypingError(
        f"xoroshiro128p states must be an array of xoroshiro128p_dtype records or an "
        f"(n, 2) uint64 array, not {states}")


@overload(_store, target=TARGET_NAME)
def _store_ovl(states, index, s0, s1):
    if _is_pair_array(states):
        def impl(states, index, s0, s1):
            states[index, 0] = s0
            states[index, 1] = s1
        return impl

    def impl_rec(states, index, s0, s1):
        states[index]["s0"] = s0
        states[index]["s1"] = s1
    return impl_rec


# ---------------------------------------------------------------- device functions
@jit(device=True)
def _rotl(x, k):
    x = uint64(x)
    k = uint32(k)
    return (x << k) | (x >> uint32(64 - k))


@jit(device=True)
def xoroshiro128p_next(states, index):
    """Return the next random uint64 of generator *index* and advance it."""
    index = int64(index)
    s0, s1 = _load(states, index)
    result = s0 + s1
    s1 ^= s0
    _store(states, index, uint64(_rotl(s0, uint32(55))) ^ s1 ^ (s1 << uint32(14)),
           uint64(_rotl(s1, uint32(36))))
    return result


@jit(device=True)
def _unit_float64(x):
    return (uint64(x) >> uint32(11)) * (float64(1) / (uint64(1) << uint32(53)))


@jit(device=True)
def xoroshiro128p_uniform_float32(states, index):
    """A float32 in [0.0, 1.0) from generator *index* (advances it one step)."""
    return float32(_unit_float64(xoroshiro128p_next(states, int64(index))))


@jit(device=True)
def xoroshiro128p_uniform_float64(states, index):
    """A float64 in [0.0, 1.0) from generator *index* (advances it one step)."""
    return _unit_float64(xoroshiro128p_next(states, int64(index)))


@jit(device=True)
def xoroshiro128p_normal_float32(states, index):
    """A standard normal float32 (Box-Muller; advances generator *index* two steps).

    ``u1`` is the uniform draw itself, as numba.cuda takes it: ``1 - u`` would round
    to 0.0 in float32 whenever the float64 draw is at least ``1 - 2**-25`` (about once
    in 2**25 draws) and return ``-inf``; ``u`` itself is 0.0 only for a zero draw (one
    in 2**53), where numba.cuda's generator gives the same infinity."""
    index = int64(index)
    u1 = xoroshiro128p_uniform_float32(states, index)
    u2 = xoroshiro128p_uniform_float32(states, index)
    return math.sqrt(float32(-2.0) * math.log(u1)) * math.cos(TWO_PI_FLOAT32 * u2)


@jit(device=True)
def xoroshiro128p_normal_float64(states, index):
    """A standard normal float64 (Box-Muller; advances generator *index* two steps).

    As numba.cuda's compiled code computes it, so that the values are numba.cuda's: its
    two uniform draws are float32 ones (24-bit significands), the logarithm is a float32
    (``math.log`` of a float32 is a float32 in Numba's typing), the rest float64.  (numba.cuda's simulator takes the logarithm in float64: about 2e-8 apart.)
    Finer draws: Box-Muller over two ``xoroshiro128p_uniform_float64`` draws."""
    index = int64(index)
    u1 = xoroshiro128p_uniform_float32(states, index)  # (u1 itself: see the float32 one)
    u2 = xoroshiro128p_uniform_float32(states, index)
    # the float32 logarithm, correctly rounded (through float64: a device's float32 log
    # may be 3 ulp off, where CUDA's is within 1)
    log_u1 = float64(float32(math.log(float64(u1))))
    return math.sqrt(-2.0 * log_u1) * math.cos(TWO_PI_FLOAT64 * float64(u2))


@jit(device=True)
def xoroshiro128p_jump(states, index):
    """Advance generator *index* by 2**64 steps."""
    index = int64(index)
    s0 = uint64(0)
    s1 = uint64(0)
    for i in range(2):
        jump = uint64(0xBEAC0467EBA5FACB) if i == 0 else uint64(0xD86B048B86AA9922)
        for b in range(64):
            if jump & (uint64(1) << uint32(b)):
                t0, t1 = _load(states, index)
                s0 ^= t0
                s1 ^= t1
            xoroshiro128p_next(states, index)
    _store(states, index, s0, s1)


# ---------------------------------------------------------------- host side
_MASK = (1 << 64) - 1
_JUMP = (0xBEAC0467EBA5FACB, 0xD86B048B86AA9922)


def _splitmix64(seed: int) -> int:
    z = (seed + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def _jump_matrix() -> np.ndarray:
    """The jump as a 128x128 matrix over GF(2), packed: column j = jump(e_j)."""
    def next_state(s0, s1):
        s1 ^= s0
        s0 = (((s0 << 55) | (s0 >> 9)) & _MASK) ^ s1 ^ ((s1 << 14) & _MASK)
        s1 = ((s1 << 36) | (s1 >> 28)) & _MASK
        return s0, s1

    def jump(s0, s1):
        a0 = a1 = 0
        for word in _JUMP:
            for b in range(64):
                if word >> b & 1:
                    a0 ^= s0
                    a1 ^= s1
                s0, s1 = next_state(s0, s1)
        return a0, a1

    cols = [jump(1 << j, 0) if j < 64 else jump(0, 1 << (j - 64)) for j in range(128)]
    return np.array(cols, dtype=np.uint64)  # (128, 2)


def _apply(cols: np.ndarray, states: np.ndarray) -> np.ndarray:
    """The GF(2)-linear map with columns *cols* (128, 2) applied to *states* (k, 2):
    one 256-entry table per state byte, so 16 look-ups per state."""
    out = np.zeros_like(states)
    as_bytes = states.astype("<u8").view(np.uint8).reshape(len(states), 16)
    for pos in range(16):
        table = np.zeros((256, 2), dtype=np.uint64)
        for b in range(8):
            table[1 << b:2 << b] = table[:1 << b] ^ cols[pos * 8 + b]
        out ^= table[as_bytes[:, pos]]
    return out


_jump_cols = None


def _host_states(n: int, seed: int, subsequence_start: int) -> np.ndarray:
    """State i = jump**(subsequence_start + i)(splitmix64(seed)), vectorized by doubling."""
    global _jump_cols
    if _jump_cols is None:
        _jump_cols = _jump_matrix()
    s = _splitmix64(int(seed) & _MASK)
    first = np.array([[s, s]], dtype=np.uint64)
    power = _jump_cols  # the matrix of jump**(2**k)
    k = int(subsequence_start)
    while k:  # jump**subsequence_start
        if k & 1:
            first = _apply(power, first)
        power = _apply(power, power)
        k >>= 1
    pairs = first
    step = _jump_cols  # jump**len(pairs)
    while len(pairs) < n:
        pairs = np.concatenate([pairs, _apply(step, pairs)])
        step = _apply(step, step)
    out = np.empty(n, dtype=xoroshiro128p_dtype)
    out["s0"] = pairs[:n, 0]
    out["s1"] = pairs[:n, 1]
    return out


def init_xoroshiro128p_states(states, seed: int, subsequence_start: int = 0, stream=None) -> None:
    """Fill the device array *states* (of :data:`xoroshiro128p_dtype`) with independent
    generators: state ``i`` is ``2**64 * (subsequence_start + i)`` steps into *seed*'s
    sequence."""
    host = _host_states(states.shape[0], seed, subsequence_start)
    states.copy_to_device(host, stream=stream)


def create_xoroshiro128p_states(n: int, seed: int, subsequence_start: int = 0, device=None,
                                stream=None):
    """A new device array of *n* independent xoroshiro128+ generator states."""
    from .memory import to_device

    if n < 0:
        raise ValueError(f"the number of states must be non-negative, not {n}")
    return to_device(_host_states(int(n), seed, subsequence_start), device=device)
