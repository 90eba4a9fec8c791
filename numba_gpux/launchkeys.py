"""The launch key: the dictionary that takes a launch from its arguments' Python types
straight to the shim that flattens them, without computing Numba types.

(device, the arguments' Python types) selects an entry that knows where the device
arrays are; their ``_launch_key_`` (fixed by their Numba type) selects the shim.  Both
are hashed in C.  A key is entered only where it fixes the arguments' Numba types:
device arrays, numbers of the types below and Python ints in the int64 range (checked on
each launch).  Anything else, and every first launch of a signature, takes the generic
path in :mod:`numba_gpux.launch`.
"""

from __future__ import annotations

import numpy as np

from .memory import DeviceArray

__all__ = ["key_function", "enter_launch_key"]

_SCALAR_KEYS = frozenset((float, bool, complex, np.bool_, np.int8, np.int16, np.int32, np.int64,
                          np.uint8, np.uint16, np.uint32, np.uint64, np.float16, np.float32,
                          np.float64, np.complex64, np.complex128))
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


class _KeyEntry:
    """Launch-key entry for one (device, argument Python types)."""

    __slots__ = ("pick", "one", "ints", "shims", "only")

    def __init__(self, arrays, ints):
        #: the shims' key from the arguments: ``()`` without arrays, the one
        #: array's ``_launch_key_`` (``one`` is its position, no call), else ``pick(args)``
        self.one = arrays[0] if len(arrays) == 1 else -1
        if len(arrays) > 1:
            self.pick = eval(  # noqa: S307 - generated from argument positions only
                f"lambda a: ({''.join(f'a[{i}]._launch_key_, ' for i in arrays)})")
        else:
            self.pick = None
        self.ints = ints
        self.shims: dict = {}  # the arrays' launch keys -> Shim
        #: without arrays, the one shim (its Python types fix the signature)
        self.only = None

    def key(self, args):
        if self.pick is not None:
            return self.pick(args)
        return () if self.one < 0 else args[self.one]._launch_key_


_key_fns: dict = {}


def key_function(nparams: int):
    """``keyfn(device, args)``: the launch key ``(device, *map(type, args))`` for
    exactly *nparams* arguments (one generated expression, no iterator), else None;
    always None for *nparams* None (a kernel with ``*args``: every launch binds its
    arguments first)."""
    if nparams is None:
        return _no_key
    fn = _key_fns.get(nparams)
    if fn is None:
        fn = _key_fns[nparams] = eval(  # noqa: S307 - generated from a count only
            f"lambda d, a: (d, {''.join(f'type(a[{i}]), ' for i in range(nparams))}) "
            f"if len(a) == {nparams} else None")
    return fn


def _no_key(device, args):
    return None


def enter_launch_key(dispatcher, device, args, argtypes, shim) -> None:
    """Make the next launch with arguments like *args* find *shim* by key."""
    if shim.checked:  # debug / print kernels: every launch goes through generic_launch
        return
    arrays, ints = [], []
    for i, a in enumerate(args):
        t = type(a)
        if isinstance(a, DeviceArray):
            arrays.append(i)
        elif t is int:
            if not I64_MIN <= a <= I64_MAX:
                return
            ints.append(i)
        elif t not in _SCALAR_KEYS:
            return
    if not set(shim.int_positions) <= set(ints):  # a sign the fast path would not read
        return
    key = (device, *map(type, args))
    entry = dispatcher._launch_keys.get(key)
    if entry is None:
        entry = dispatcher._launch_keys[key] = _KeyEntry(arrays, tuple(ints))
    shim.keepalive = argtypes  # the Numba types whose ids are the arrays' launch keys
    entry.shims[entry.key(args)] = shim
    if not arrays:
        entry.only = shim
