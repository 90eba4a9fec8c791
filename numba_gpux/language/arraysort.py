"""``a.sort()``, ``np.sort(a)``, ``a.argsort()`` and ``np.argsort(a)`` in kernels.

Numba's implementations (``numba.misc.quicksort``, ``mergesort``) keep their
partition stack in a Python list, which GPU code cannot have (a list's memory has a
destructor called through a function pointer).  These replace them in the shared
context: a heapsort, in place, with no stack, no recursion and no allocation, O(n log n)
on every input.  Ordering is NumPy's: NaN after every number (Numba's
``lt_implementation``); ``argsort`` breaks ties by position, so every ``kind`` gives
the stable order that NumPy's ``kind='stable'`` gives.  Arrays of more than one
dimension are sorted along the last axis, as in NumPy; ``argsort`` takes 1-D arrays,
as Numba's does.
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.core.extending import register_jitable
from numba.core.imputils import Registry as LoweringRegistry

from ..errors import UnsupportedError

__all__ = ["superseding_registry"]

#: installed after Numba's builtins (context.py), so these are chosen for the same keys
superseding_registry = LoweringRegistry("numba_gpux.arraysort")

_sorts: dict = {}


def _sort_functions(dtype):
    """(sort a 1-D array in place, argsort of a 1-D array) for elements of *dtype*."""
    got = _sorts.get(dtype)
    if got is not None:
        return got
    from numba.np.arrayobj import lt_implementation

    lt = register_jitable(lt_implementation(dtype))

    @register_jitable
    def sift(A, start, end):
        root = start
        while True:
            child = 2 * root + 1
            if child > end:
                return
            if child + 1 <= end and lt(A[child], A[child + 1]):
                child += 1
            if lt(A[root], A[child]):
                A[root], A[child] = A[child], A[root]
                root = child
            else:
                return

    @register_jitable
    def heapsort(A):
        n = A.shape[0]
        for start in range(n // 2 - 1, -1, -1):
            sift(A, start, n - 1)
        for end in range(n - 1, 0, -1):
            A[0], A[end] = A[end], A[0]
            sift(A, 0, end - 1)

    @register_jitable
    def before(A, i, j):
        """Position i's element orders before position j's (ties: by position)."""
        if lt(A[i], A[j]):
            return True
        if lt(A[j], A[i]):
            return False
        return i < j

    @register_jitable
    def sift_index(A, idx, start, end):
        root = start
        while True:
            child = 2 * root + 1
            if child > end:
                return
            if child + 1 <= end and before(A, idx[child], idx[child + 1]):
                child += 1
            if before(A, idx[root], idx[child]):
                idx[root], idx[child] = idx[child], idx[root]
                root = child
            else:
                return

    @register_jitable
    def argsort(A):
        n = A.shape[0]
        idx = np.arange(n)
        for start in range(n // 2 - 1, -1, -1):
            sift_index(A, idx, start, n - 1)
        for end in range(n - 1, 0, -1):
            idx[0], idx[end] = idx[end], idx[0]
            sift_index(A, idx, 0, end - 1)
        return idx

    got = _sorts[dtype] = (heapsort, argsort)
    return got


@superseding_registry.lower("array.sort", types.Array, types.StringLiteral)
def _array_sort(context, builder, sig, args):
    aryty = sig.args[0]
    heapsort = _sort_functions(aryty.dtype)[0]
    if aryty.ndim == 1:
        def impl(arr):
            heapsort(arr)
    else:
        def impl(arr):
            for idx in np.ndindex(arr.shape[:-1]):
                heapsort(arr[idx])
    return context.compile_internal(builder, impl, sig.replace(args=sig.args[:1]), args[:1])


@superseding_registry.lower("array.argsort", types.Array, types.StringLiteral)
@superseding_registry.lower(np.argsort, types.Array, types.StringLiteral)
def _array_argsort(context, builder, sig, args):
    aryty = sig.args[0]
    if aryty.ndim != 1:
        raise UnsupportedError(f"argsort of a {aryty.ndim}-dimensional array: kernels "
                               f"argsort 1-D arrays (as Numba does)")
    argsort = _sort_functions(aryty.dtype)[1]

    def impl(arr):
        return argsort(arr)
    return context.compile_internal(builder, impl, sig.replace(args=sig.args[:1]), args[:1])
