"""NumPy's ``axis=`` forms, ``a.transpose(axes)`` and broadcasting in kernels, where
Numba's own implementations are written with what GPU code cannot have.

- ``a.sum(axis=k)``, ``np.sum(a, axis=k)``, ``np.cumsum(a, axis=k)``: Numba's check the axis and word
  the error with an f-string (``f"axis {axis} is out of bounds ..."``), which builds
  a Python string at run time; kernels have no strings.  Here the same check raises
  the same exception class with a message that names no number.  The reductions
  themselves are Numba's (``_numpy_sum_axis``, ``_numpy_cumsum_axis``).
- ``a.transpose(axes)`` (and so ``np.argmin``/``np.argmax`` with ``axis=``, which
  Numba writes with it): Numba checks the axes for repeats with a Python ``set``;
  here the permuted shape and strides are read from the axes directly, each axis
  checked against the dimensions and against the ones before it.
- ``np.broadcast_shapes`` (and so ``np.where(cond, x, y)``): Numba's merges the
  shapes in a Python list; here in a tuple.
- ``np.cross``: Numba's words an error with an f-string, a string built at run time;
  here the same checks and exception classes, the message without the sizes.
- ``np.correlate`` and ``np.convolve``: Numba's sum the products with BLAS's ``dot``
  where SciPy is installed; here with a loop, as Numba's own without SciPy.
- ``np.allclose`` of two arrays: broadcast as views, each pair compared by Numba's own
  test, instead of through ``np.broadcast_arrays`` (a Python list).
- ``np.clip`` with an array bound: Numba's broadcasts through ``np.broadcast_arrays``,
  which returns a Python list; here through views.
- ``np.unique`` (and so ``np.partition``, ``np.argpartition`` and Numba's set
  functions, which call it): Numba's collects the values in Python lists; here the
  sorted copy is compacted in place, NaNs kept once, as NumPy and Numba do.

Target-neutral: typing overloads for the shared target (:func:`register`) and one
lowering in :data:`superseding_registry`, installed after Numba's builtins.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba.core import cgutils, types
from numba.core.extending import overload, register_jitable
from numba.core.imputils import Registry as LoweringRegistry, impl_ret_borrowed
from numba.cpython.unsafe.tuple import tuple_setitem
from numba.misc.literal import literal_unroll
from numba.np.numpy_support import is_nonelike

__all__ = ["register", "superseding_registry"]

#: installed after Numba's builtins (context.py): chosen for the same keys
superseding_registry = LoweringRegistry("numba_gpux.arrayaxis")

_registered: set = set()

_AXIS_MESSAGE = "axis is out of bounds for the array's number of dimensions"


def register(target: str) -> None:
    """Install the typing overloads for the Numba target named *target* that need none
    of ``numba.np.arraymath`` (once): ``np.broadcast_shapes``, whose Numba template is
    in ``numba.np.arrayobj``, always loaded."""
    if target in _registered:
        return
    _registered.add(target)
    overload(np.broadcast_shapes, target=target)(_broadcast_shapes)
    overload(np.unique, target=target)(_unique)
    from numba.np import arrayobj

    overload(arrayobj._np_clip_impl, target=target)(_clip_arrays)


def register_array_math(target: str) -> None:
    """Install the typing overloads for *target* of functions Numba implements in
    ``numba.np.arraymath`` (once), when that loads (``context.load_array_math``): it is
    a large share of a first compile, and kernels that call none of them never load it."""
    if ("array math", target) in _registered:
        return
    _registered.add(("array math", target))
    from numba.np import arraymath

    axis_error = arraymath.axis_bound_err  # NumPy's AxisError (ValueError before 1.25)

    @overload(arraymath.check_axis_bounds, target=target)
    def _check_axis_bounds(a, axis):
        if is_nonelike(axis):
            return lambda a, axis: None
        if isinstance(axis, types.Integer):
            def impl(a, axis):
                if axis < -a.ndim or axis >= a.ndim:
                    raise axis_error(_AXIS_MESSAGE)
            return impl
        if isinstance(axis, types.BaseTuple):
            def impl(a, axis):
                for ax in literal_unroll(axis):
                    if ax < -a.ndim or ax >= a.ndim:
                        raise axis_error(_AXIS_MESSAGE)
            return impl
        return None

    def _cumsum(a, axis=None, dtype=None):
        # only the axis form: without one Numba's compiles for devices as it is
        if not isinstance(a, types.Array) or not isinstance(axis, types.Integer):
            return None
        if a.ndim == 1:
            def impl(a, axis=None, dtype=None):
                if axis < -a.ndim or axis >= a.ndim:
                    raise axis_error(_AXIS_MESSAGE)
                return arraymath._numpy_cumsum(a, axis, dtype).reshape(a.size)
        else:
            def impl(a, axis=None, dtype=None):
                if axis < -a.ndim or axis >= a.ndim:
                    raise axis_error(_AXIS_MESSAGE)
                return arraymath._numpy_cumsum_axis(a, axis, dtype)
        return impl

    # the function only: Numba types a method overloaded for one target on every target
    # (the CPU's too), so the method a.cumsum(axis=k) stays Numba's
    overload(np.cumsum, target=target)(_cumsum)
    # the sums of products of np.correlate and np.convolve: Numba's call BLAS's dot
    # where SciPy is installed (float and complex arrays), which GPU code cannot
    overload(arraymath._np_correlate_core, target=target)(_correlate_core)
    # np.allclose of two arrays: Numba's broadcasts them through np.broadcast_arrays (a
    # Python list); here through views, each pair compared by Numba's own test
    close = arraymath._allclose_scalars

    def _allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
        if not (isinstance(a, types.Array) and isinstance(b, types.Array)):
            return None

        def impl(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
            shape = np.broadcast_shapes(a.shape, b.shape)
            av = np.broadcast_to(a, shape)
            bv = np.broadcast_to(b, shape)
            for index in np.ndindex(shape):
                if not close(av[index], bv[index], rtol=rtol, atol=atol,
                             equal_nan=equal_nan):
                    return False
            return True
        return impl

    overload(np.allclose, target=target)(_allclose)
    # np.cross: Numba's words one error with an f-string (typed even where NumPy's
    # version leaves it out), which GPU code cannot build
    three_only = arraymath.numpy_version >= (2, 5)

    def _np_cross(a, b):
        if not (isinstance(a, types.Array) and isinstance(b, types.Array)):
            return None

        def impl(a, b):
            na = a.shape[-1]
            nb = b.shape[-1]
            if na not in (2, 3) or nb not in (2, 3):
                raise ValueError("Incompatible dimensions for cross product\n"
                                 "(dimension must be 2 or 3)")
            if three_only and (na == 2 or nb == 2):
                raise ValueError("Both input arrays must be (arrays of) 3-dimensional "
                                 "vectors")
            if na == 3 or nb == 3:
                return arraymath._cross(a, b)
            raise ValueError("Dimensions for both inputs is 2.\nPlease replace your "
                             "numpy.cross(a, b) call with a call to `cross2d(a, b)` from "
                             "`numba.np.extensions`.")
        return impl

    overload(np.cross, target=target)(_np_cross)


def _correlate_core(ap1, ap2, mode, direction):
    """Numba's ``_np_correlate_core``: the correlation of *ap1* with the shorter *ap2*
    at each shift *mode* asks for ('valid', 'same', 'full'), written first to last
    (*direction* 1) or last to first (-1); each sum taken in index order from an
    integer 0, as Numba's loop without BLAS does."""
    from numba.np.numpy_support import as_dtype

    dt = np.promote_types(as_dtype(ap1.dtype), as_dtype(ap2.dtype))

    def impl(ap1, ap2, mode, direction):
        n1 = len(ap1)
        n2 = len(ap2)
        if n1 < n2:
            raise ValueError("'len(ap1)' must greater than 'len(ap2)'")
        if mode == "valid":
            left = 0
            right = 0
        elif mode == "full":
            left = n2 - 1
            right = n2 - 1
        elif mode == "same":
            left = n2 // 2
            right = n2 - 1 - left
        else:
            raise ValueError("Invalid 'mode', valid are 'full', 'same', 'valid'")
        if direction != 1 and direction != -1:
            raise ValueError("Invalid direction")
        length = n1 - n2 + 1 + left + right
        out = np.zeros(length, dt)
        for j in range(length):
            shift = j - left   # ap2[t] meets ap1[shift + t]
            acc = 0
            for t in range(max(0, -shift), min(n2, n1 - shift)):
                acc = acc + ap1[shift + t] * ap2[t]
            out[j if direction == 1 else length - 1 - j] = acc
        return out
    return impl


def _clip_arrays(a, a_min, a_max, out):
    """Numba's ``_np_clip_impl`` (np.clip with an array bound, after a scalar bound is
    made an array): the three broadcast as views (np.broadcast_to) instead of through
    np.broadcast_arrays, which returns a Python list; a result made here has the
    broadcast shape, as NumPy's (Numba's has a's)."""
    from numba.np.arrayobj import _np_clip_prepare_out as prepare_out

    def impl(a, a_min, a_max, out):
        shape = np.broadcast_shapes(a.shape, a_min.shape, a_max.shape)
        vals = np.broadcast_to(a, shape)
        lo = np.broadcast_to(a_min, shape)
        hi = np.broadcast_to(a_max, shape)
        if out is None:
            ret = np.empty(shape, a.dtype)
        else:
            ret = prepare_out(a, shape, out)  # (Numba's check of out's shape)
        for index in np.ndindex(shape):
            ret[index] = min(max(vals[index], lo[index]), hi[index])
        return ret
    return impl


def _unique(ar):
    if not isinstance(ar, types.Array):
        return None

    def impl(ar):
        b = np.sort(ar.ravel())
        k = 0
        for i in range(b.size):
            x = b[i]
            # sorted: a new value differs from the last one kept; NaNs (last) once
            if k == 0 or (b[k - 1] != x and not (b[k - 1] != b[k - 1] and x != x)):
                b[k] = x
                k += 1
        return b[:k]
    return impl


def _broadcast_shapes(*args):
    m = 0
    for arg in args:
        if isinstance(arg, types.Integer):
            m = max(m, 1)
        elif isinstance(arg, types.UniTuple) and isinstance(arg.dtype, types.Integer):
            m = max(m, len(arg))
        elif not (isinstance(arg, types.Tuple) and len(arg.types) == 0):
            return None  # Numba's template words the error
    if m == 0:
        return lambda *args: ()
    start = (1,) * m

    def impl(*args):
        r = start
        for arg in literal_unroll(args):
            if isinstance(arg, tuple) and len(arg) > 0:
                r = _merge_shape(r, m, arg)
            elif isinstance(arg, int):
                r = _merge_shape(r, m, (arg,))
        return r
    return impl


@register_jitable
def _merge_shape(r, m, shape):
    """The broadcast of shape *r* (length *m*) with *shape*, as NumPy's rules give it."""
    for i in range(len(shape)):
        k = m - len(shape) + i
        d = shape[i]
        if d < 0:
            raise ValueError("negative dimensions are not allowed")
        if d == 1:
            continue
        if r[k] == 1:
            r = tuple_setitem(r, k, d)
        elif r[k] != d:
            raise ValueError("shape mismatch: objects cannot be broadcast to a single shape")
    return r


@superseding_registry.lower("array.transpose", types.Array, types.BaseTuple)
def _transpose_axes(context, builder, sig, args):
    """``a.transpose(axes)``: a view whose dimension i is the array's dimension
    ``axes[i]`` (negative axes count from the end); a repeated axis or one out of
    range is NumPy's ValueError."""
    aryty, axisty = sig.args
    ary = context.make_array(aryty)(context, builder, args[0])
    intp = context.get_value_type(types.intp)
    n = aryty.ndim
    if axisty.count != n:
        from ..errors import GpuxUserError

        raise GpuxUserError(f"transpose() of a {n}-dimensional array takes {n} axes, "
                            f"not {axisty.count}")
    dims = ir.Constant(intp, n)
    zero = ir.Constant(intp, 0)
    axes = []
    for i in range(n):
        ax = context.cast(builder, builder.extract_value(args[1], i), axisty[i], types.intp)
        ax = builder.select(builder.icmp_signed("<", ax, zero), builder.add(ax, dims), ax)
        bad = builder.or_(builder.icmp_signed("<", ax, zero), builder.icmp_signed(">=", ax, dims))
        with cgutils.if_unlikely(builder, bad):
            context.call_conv.return_user_exc(
                builder, ValueError, ("axis is out of bounds for array of given dimension",))
        for prev in axes:
            with cgutils.if_unlikely(builder, builder.icmp_signed("==", ax, prev)):
                context.call_conv.return_user_exc(builder, ValueError,
                                                  ("repeated axis in transpose",))
        axes.append(ax)
    shape = cgutils.alloca_once_value(builder, ary.shape)
    strides = cgutils.alloca_once_value(builder, ary.strides)

    def pick(slot, ax):
        return builder.load(builder.gep(slot, [zero, ax], inbounds=True))

    ret = context.make_array(sig.return_type)(context, builder)
    context.populate_array(
        ret, data=ary.data,
        shape=cgutils.pack_array(builder, [pick(shape, ax) for ax in axes], ty=intp),
        strides=cgutils.pack_array(builder, [pick(strides, ax) for ax in axes], ty=intp),
        itemsize=ary.itemsize, meminfo=ary.meminfo, parent=ary.parent)
    return impl_ret_borrowed(context, builder, sig.return_type, ret._getvalue())


@superseding_registry.lower("array.transpose", types.Array, types.VarArg(types.Any))
def _transpose_axes_given_apart(context, builder, sig, args):
    """``a.transpose(1, 0)``: the axes as a tuple."""
    from numba.np.arrayobj import vararg_to_tuple

    new_sig, new_args = vararg_to_tuple(context, builder, sig, args)
    return _transpose_axes(context, builder, new_sig, new_args)
