"""``cuda.vectorize`` and ``cuda.guvectorize``: NumPy-style (generalized) ufuncs whose
loop runs as a kernel, on every target.

The scalar (or core) function becomes an inlined device function; each call
builds, once per number of loop dimensions and argument kinds, a kernel that
gives every element (or core sub-array) of the broadcast loop space to one
thread.  Broadcasting is done without copies: inputs are device arrays viewed
with stride 0 along the broadcast axes.  Signature strings and the gufunc
layout are parsed by Numba's own parsers (``numba.core.sigutils``,
``numba.np.ufunc.sigparse``).

Host (NumPy) inputs are copied to the device and the result is copied back;
when any argument is a device array (or ``out=`` is one) the result stays on
the device.  ``stream=`` queues the copies and the kernel on that stream.
"""

from __future__ import annotations

import numbers
import operator
import warnings

import numpy as np
from numba.core import sigutils, types
from numba.np import numpy_support
from numba.np.ufunc.sigparse import parse_signature

from .. import memory as _mem
from .. import serialize as _serialize
from ..dispatcher import jit as _gpux_jit
from ..errors import GpuxUserError
from ..language.stubs import grid as _grid
from ..language.stubs import gridsize as _gridsize
from .decorators import NUMBA_CUDA_SEMANTICS
from .dispatcher import warn_if_low_occupancy

__all__ = ["vectorize", "guvectorize", "CUDAUFunc", "CUDAGUFunc", "CUDAVectorize",
           "CUDAGUFuncVectorize"]

_TPB = 128


def _signatures(sigs) -> list:
    if sigs is None:
        return []
    if isinstance(sigs, (str, types.Type)) or not isinstance(sigs, (list, tuple)):
        sigs = [sigs]
    return [sigutils.normalize_signature(s) for s in sigs]


def _stream_args(stream):
    return () if not stream else (stream,)


def _foreign_viewed(value):
    """*value*, or a device array viewing it where it is another library's GPU array
    (an object with ``__cuda_array_interface__``), as numba.cuda takes such operands
    and outputs."""
    if not isinstance(value, _mem.DeviceArray) and \
            getattr(value, "__cuda_array_interface__", None) is not None:
        from ._memory_api import as_cuda_array

        return as_cuda_array(value)
    return value


class _Arg:
    """One argument prepared for the kernel: a scalar, or a device array (viewed)."""

    def __init__(self, value, stream):
        self.host = None
        value = _foreign_viewed(value)
        if isinstance(value, _mem.DeviceArray):
            self.array = value
        elif isinstance(value, (numbers.Number, np.generic)) or np.ndim(value) == 0:
            self.array = None
            numpy_scalar = isinstance(value, (np.generic, np.ndarray))
            self.dtype = np.asarray(value).dtype
            # (a datetime64/timedelta64 stays a NumPy value: .item() gives a datetime)
            self.scalar = value.item() if numpy_scalar and self.dtype.kind not in "mM" \
                else value
            # a NumPy scalar keeps its dtype; a Python one is typed as NumPy would
            if not numpy_scalar and isinstance(value, (bool, int, float, complex)):
                self.dtype = np.dtype({bool: np.bool_, int: np.int64, float: np.float64,
                                       complex: np.complex128}[type(value)])
            return
        else:
            self.host = np.asarray(value)
            self.array = None
        self.dtype = self.array.dtype if self.array is not None else self.host.dtype
        self.shape = self.array.shape if self.array is not None else self.host.shape
        self._stream = stream

    @property
    def is_scalar(self) -> bool:
        return self.array is None and self.host is None

    def device(self, dtype=None):
        """The argument on the device, converted to *dtype* where that differs."""
        if self.array is not None:
            if dtype is not None and self.array.dtype != dtype:
                return _mem.to_device(self.array.copy_to_host().astype(dtype),
                                      device=self.array.device)
            return self.array
        host = self.host if dtype is None else self.host.astype(dtype, copy=False)
        from ._memory_api import to_device

        return to_device(np.ascontiguousarray(host), stream=self._stream)


def _broadcast_view(dev: _mem.DeviceArray, shape: tuple, core: int = 0) -> _mem.DeviceArray:
    """*dev* seen with loop shape *shape* (+ its last *core* axes unchanged), stride 0
    along broadcast axes."""
    loop_ndim = dev.ndim - core
    lead = len(shape) - loop_ndim
    if lead < 0 and all(n == 1 for n in dev.shape[:-lead]):
        # leading loop axes of size 1 beyond the loop's: dropped
        dev = dev.view_as(dev.shape[-lead:], dev.strides[-lead:], dev.offset)
        loop_ndim, lead = loop_ndim + lead, 0
    if lead < 0:
        raise GpuxUserError(f"cannot broadcast shape {dev.shape} to {shape}")
    strides = [0] * lead
    for n, m, s in zip(dev.shape[:loop_ndim], shape[lead:], dev.strides[:loop_ndim]):
        if n == m:
            strides.append(s)
        elif n == 1:
            strides.append(0)
        else:
            raise GpuxUserError(f"operands could not be broadcast together: {dev.shape} "
                                f"against loop shape {shape}")
    return dev.view_as(tuple(shape) + dev.shape[loop_ndim:],
                       tuple(strides) + dev.strides[loop_ndim:], dev.offset)


def _kernel_source(nin: int, plain: tuple, nloop: int, nout: int, gufunc: bool,
                   cast: tuple = (), rows: bool = False) -> str:
    """Source of a kernel over *nloop* loop dimensions, one thread per loop element (the
    thread index is unravelled, last axis fastest).  ``plain[k]``: input k is passed as
    it is (a scalar), not indexed by the loop indices; ``cast[k]``: input k is converted
    to the signature's type ``t<k>`` (a number type: datetimes arrive as they are).
    *rows*: a two-dimensional launch instead, x along the last axis and y over the rest
    (a grid-stride loop), so that neighbouring work-items take neighbouring elements of
    every operand: a CPU driver's vectorizer then loads vectors where unravelled indices
    made it gather."""
    ins = [f"a{k}" for k in range(nin)]
    outs = [f"o{k}" for k in range(nout)]
    lines = [f"def _vectorized(loop_size, {', '.join(ins + outs)}):"]
    if rows:
        last = nloop - 1
        lines += [f"    j{last}, y = grid(2)",
                  f"    if j{last} < o0.shape[{last}]:",
                  f"        rows = loop_size // o0.shape[{last}]",
                  "        ystep = gridsize(2)[1]",
                  "        while y < rows:",
                  "            r = y"]
        pad, unravelled = " " * 12, last  # (the last axis's index is x's)
    else:
        lines += ["    i = grid(1)",
                  "    if i < loop_size:",
                  "        r = i"]
        pad, unravelled = " " * 8, nloop
    for d in reversed(range(unravelled)):
        if d == 0:  # what is left of the index (a division and a remainder fewer)
            lines.append(f"{pad}j0 = r")
            break
        lines.append(f"{pad}j{d} = r % o0.shape[{d}]")
        lines.append(f"{pad}r = r // o0.shape[{d}]")
    sub = ", ".join(f"j{d}" for d in range(nloop))

    def at(name, as_is=False):
        return name if as_is or not nloop else f"{name}[{sub}]"

    if gufunc:
        call = [at(n, p) for n, p in zip(ins, plain)] + [at(o) for o in outs]
        lines.append(f"{pad}fn({', '.join(call)})")
    else:
        call = [f"t{k}({at(n, p)})" if k < len(cast) and cast[k] else at(n, p)
                for k, (n, p) in enumerate(zip(ins, plain))]
        lines.append(f"{pad}{at(outs[0])} = fn({', '.join(call)})")
    if rows:
        lines.append(f"{pad}y += ystep")
    return "\n".join(lines) + "\n"


class _KernelCache:
    """The generated kernels of one (g)ufunc, by loop rank, argument kinds and types."""

    def __init__(self, fn):
        self.fn = fn
        self.kernels = {}

    def get(self, key, nin, plain, nloop, nout, gufunc, casts=(), rows=False):
        k = self.kernels.get(key)
        if k is None:
            src = _kernel_source(nin, plain, nloop, nout, gufunc,
                                 tuple(isinstance(t, types.Number) for t in casts), rows)
            ns = {"grid": _grid, "gridsize": _gridsize, "fn": self.fn}
            ns.update({f"t{j}": t for j, t in enumerate(casts)})
            exec(compile(src, f"<numba_gpux.cuda vectorize kernel of {self.fn.__name__}>",
                         "exec"), ns)
            k = self.kernels[key] = _gpux_jit(ns["_vectorized"], semantics=NUMBA_CUDA_SEMANTICS)
        return k


def _launch(kernel, n, args, stream, last=0):
    """Launch *kernel* over *n* loop elements: one work-item each along x, or with *last*
    (the loop's last extent, for a kernel made with ``rows``) x along that axis and y over
    the rows (at most 65,535 of them at once, CUDA's limit; the kernel loops over more)."""
    if n == 0:
        return
    if last:
        grid = ((last + _TPB - 1) // _TPB, min(n // last, 65535))
        warn_if_low_occupancy(grid + (1,), stacklevel=4)
        kernel[(grid, (_TPB, 1)) + _stream_args(stream)](np.int64(n), *args)
        return
    blocks = (n + _TPB - 1) // _TPB
    warn_if_low_occupancy((blocks, 1, 1), stacklevel=4)
    kernel[(blocks, _TPB) + _stream_args(stream)](np.int64(n), *args)


def _finish(out_dev, host_out, want_device, stream):
    if host_out is not None:
        out_dev.copy_to_host(host_out, stream=stream or None)
        return host_out
    if want_device:
        return out_dev
    res = out_dev.copy_to_host(stream=stream or None)
    return res[()] if res.ndim == 0 else res


class CUDAUFunc:
    """A ufunc whose element loop runs as a kernel (``cuda.vectorize``)."""

    def __init__(self, pyfunc, signatures):
        self.py_func = pyfunc
        self.__name__ = getattr(pyfunc, "__name__", "ufunc")
        self.__doc__ = pyfunc.__doc__
        self._dev = _gpux_jit(device=True, inline=True, semantics=NUMBA_CUDA_SEMANTICS)(pyfunc)
        self._sigs = _signatures(signatures)
        self._kernels = _KernelCache(self._dev)
        self.nin = self._nin()
        self.nout = 1

    def _nin(self) -> int:
        if self._sigs:
            return len(self._sigs[0][0])
        import inspect

        return len(inspect.signature(self.py_func).parameters)

    @property
    def types(self) -> list:
        def char(t):
            return numpy_support.as_dtype(t).char

        return [f"{''.join(char(a) for a in args)}->{char(self._result_type(args, r))}"
                for args, r in self._sigs]

    def _result_type(self, args, ret):
        """*ret*, or for a signature of argument types only the one typing finds."""
        return ret if ret is not None else self._dev.neutral(tuple(args)).return_type

    def _select(self, dtypes, scalars=()):
        """(input numba types, return numba type) for inputs of *dtypes*; *scalars* says
        which inputs are scalars (converted to the signature's types)."""
        args, ret = self._select_signature(dtypes, scalars)
        return args, self._result_type(args, ret)

    def _select_signature(self, dtypes, scalars=()):
        if not self._sigs:
            return tuple(numpy_support.from_dtype(d) for d in dtypes), None

        def fitting(cast, operands):
            """The signatures each of whose *operands* (a flag per input) *cast* to."""
            return [(tuple(args), ret) for args, ret in self._sigs
                    if all(cast(d, np.dtype(str(a)))
                           for a, d, use in zip(args, dtypes, operands) if use)]

        def first(cast, operands):
            got = fitting(cast, operands)
            return got[0] if got else None

        every = [True] * len(dtypes)
        arrays = [not s for s in scalars] if any(scalars) else None
        # numba.cuda's rule: the signature all inputs match exactly; else, with scalar
        # inputs, the only one the arrays match exactly (scalars are converted to it)
        got = first(operator.eq, every)
        if got is None and arrays is not None:
            exact = fitting(operator.eq, arrays)
            if len(exact) > 1:
                raise TypeError("Failed to resolve ufunc due to ambiguous signature. Too "
                                "many untyped scalars. Use numpy dtype object to type tag.")
            got = exact[0] if exact else None
        # where numba.cuda finds none: the first signature the inputs cast to safely (then
        # within their kind), as NumPy picks a loop; then the arrays alone
        for operands in (every, arrays):
            for rule in ("safe", "same_kind"):
                if got is None and operands is not None:
                    got = first(lambda d, t, r=rule: np.can_cast(d, t, r), operands)
        if got is None:
            raise TypeError(f"{self.__name__}: no matching signature for input types "
                            f"{[str(d) for d in dtypes]} (have {[str(s) for s in self._sigs]})")
        return got

    def __call__(self, *args, out=None, stream=0, **kws):
        if kws:  # (NumPy's casting=, where=, ...: numba.cuda warns and ignores them)
            warnings.warn(f"unrecognized keywords: {', '.join(kws)}", stacklevel=2)
        if len(args) == self.nin + 1 and out is None:
            *args, out = args
        if len(args) != self.nin:
            raise TypeError(f"{self.__name__} takes {self.nin} argument(s), got {len(args)}")
        prepared = [_Arg(a, stream) for a in args]
        out = _foreign_viewed(out)
        dtypes = [p.dtype for p in prepared]
        argtys, ret = self._select(dtypes, [p.is_scalar for p in prepared])
        shape = np.broadcast_shapes(*[p.shape for p in prepared if not p.is_scalar])
        if not shape and all(isinstance(a, (numbers.Number, np.generic)) for a in args):
            # only Python and NumPy scalars: numba.cuda makes each a one-element array,
            # so the result is one too
            shape = (1,)
        want_device = any(p.array is not None for p in prepared) or \
            isinstance(out, _mem.DeviceArray)
        ret_dtype = numpy_support.as_dtype(ret)
        host_out = None
        if out is None:
            from ._memory_api import device_array

            out_dev = device_array(shape, ret_dtype, stream=stream)
        elif isinstance(out, _mem.DeviceArray):
            out_dev = out
        else:
            host_out = out
            from ._memory_api import device_array

            out_dev = device_array(out.shape, out.dtype, stream=stream)
        if out_dev.shape != tuple(shape):
            try:
                shape = np.broadcast_shapes(shape, out_dev.shape)
            except ValueError:
                shape = None
            if shape != out_dev.shape:
                raise ValueError(f"{self.__name__}: out has shape {out_dev.shape}, which the "
                                 f"inputs do not broadcast to")
        zero_d = out_dev.shape == ()
        if zero_d:  # all scalars: computed as one element
            shape = (1,)
            out_dev = out_dev.view_as((1,), (out_dev.itemsize,), out_dev.offset)
        kargs, plain = [], []
        for p, ty in zip(prepared, argtys):
            if p.is_scalar:
                kargs.append(np.asarray(p.scalar).astype(numpy_support.as_dtype(ty))[()])
                plain.append(True)
            else:
                dev = p.device(numpy_support.as_dtype(ty))
                kargs.append(_broadcast_view(dev, shape))
                plain.append(False)
        if len(shape) > 1 and all(a.layout == "C" for a, p in zip(kargs, plain) if not p) \
                and out_dev.layout == "C":
            # every array in C order, none broadcast: one loop axis (no index arithmetic)
            size = int(np.prod(shape))
            shape = (size,)
            kargs = [a if p else a.view_as(shape, (a.itemsize,), a.offset)
                     for a, p in zip(kargs, plain)]
            flat_out = out_dev.view_as(shape, (out_dev.itemsize,), out_dev.offset)
        else:
            flat_out = out_dev
        # a loop of several axes whose last one fills a work-group or more: x along it
        rows = len(shape) > 1 and shape[-1] >= _TPB // 2
        key = (len(shape), tuple(plain), argtys, rows)
        kernel = self._kernels.get(key, self.nin, tuple(plain), len(shape), 1, False,
                                   casts=argtys, rows=rows)
        _launch(kernel, int(np.prod(shape)), kargs + [flat_out], stream,
                shape[-1] if rows else 0)
        if zero_d:
            out_dev = out_dev.view_as((), (), out_dev.offset)
        return _finish(out_dev, host_out, want_device, stream)

    def reduce(self, arg, stream=0):
        """The binary ufunc folded over the 1-d array *arg* (host or device), pairwise as
        numba.cuda folds it: element i with element i + n/2, then the halves again, an odd
        last element last; a NumPy scalar of the ufunc's result type.  *arg* is not
        changed (numba.cuda folds a device array in place)."""
        if self.nin != 2:
            raise TypeError(f"{self.__name__}: reduce needs a ufunc of two arguments, this one "
                            f"takes {self.nin}")
        if np.ndim(arg) != 1:
            raise ValueError(f"{self.__name__}.reduce: the array must be 1-d, not "
                             f"{np.ndim(arg)}-d")
        n = arg.shape[0]
        if n == 0:
            raise TypeError("Reduction on an empty array.")
        if n == 1:
            return arg[0]
        if isinstance(arg, _mem.DeviceArray):
            src = arg
        else:
            from ._memory_api import to_device

            src = to_device(np.ascontiguousarray(arg), stream=stream)
        res = self._fold(src, stream)
        return res.copy_to_host(stream=stream or None)[0]

    def _fold(self, src, stream):
        """A 1-element device array: *src* (n >= 2 elements) folded pairwise, into new
        arrays (never into *src*)."""
        from ._memory_api import device_array

        n = src.shape[0]
        half = n // 2
        _, ret = self._select([src.dtype, src.dtype])
        out = device_array(half, numpy_support.as_dtype(ret), stream=stream)
        self(src[:half], src[half:2 * half], out=out, stream=stream)
        res = out if half == 1 else self._fold(out, stream)
        if n % 2:
            self(res, src[n - 1:], out=res, stream=stream)
        return res

    def __repr__(self):
        return f"<numba_gpux.cuda ufunc {self.__name__}>"

    # pickling (numba_gpux/serialize.py): the Python function and the signatures travel
    def __reduce__(self):
        return _serialize.reduce_function(self, {"signatures": _sig_objects(self._sigs)})

    @classmethod
    def _from_pickle(cls, py_func, state):
        return cls(py_func, state["signatures"] or None)


class CUDAGUFunc:
    """A generalized ufunc whose loop runs as a kernel (``cuda.guvectorize``)."""

    def __init__(self, pyfunc, signatures, layout: str):
        self.py_func = pyfunc
        self.__name__ = getattr(pyfunc, "__name__", "gufunc")
        self.__doc__ = pyfunc.__doc__
        self.layout = layout
        self._in_dims, self._out_dims = parse_signature(layout)
        self.nin, self.nout = len(self._in_dims), len(self._out_dims)
        self._sigs = _signatures(signatures)
        for args, ret in self._sigs:
            if ret not in (None, types.none, types.void):
                raise TypeError(f"{self.__name__}: guvectorized functions cannot return values "
                                f"(they write their outputs): signature {args} specifies "
                                f"{ret} return type")
            if len(args) != self.nin + self.nout:
                raise TypeError(f"{self.__name__}: signature {args} does not have the "
                                f"{self.nin + self.nout} arguments of layout {layout!r}")
        self._dev = _gpux_jit(device=True, inline=True, semantics=NUMBA_CUDA_SEMANTICS)(pyfunc)
        self._kernels = _KernelCache(self._dev)

    def _select(self, dtypes):
        if not self._sigs:
            return None
        for strict in ("equiv", "safe", "same_kind"):
            for args, _ in self._sigs:
                got = [np.dtype(str(getattr(a, "dtype", a))) for a in args[:self.nin]]
                if all(np.can_cast(d, g, strict) for d, g in zip(dtypes, got)):
                    return args
        raise TypeError(f"{self.__name__}: no matching signature for input types "
                        f"{[str(d) for d in dtypes]}")

    def __call__(self, *args, out=None, stream=0, **kws):
        # (other keywords, NumPy's axis= and the like, are ignored, as numba.cuda's
        # gufuncs ignore them)
        if out is not None:
            if len(args) > self.nin:
                raise ValueError("cannot specify argument 'out' as both positional and keyword")
            args = tuple(args) + (tuple(out) if isinstance(out, (tuple, list)) else (out,))
        if len(args) not in (self.nin, self.nin + self.nout):
            n = len(args)
            # (numba.cuda's words, which code may match; then the gufunc's name)
            raise TypeError(f"gufunc accepts {self.nin} positional arguments "
                            f"(the inputs) or {self.nin + self.nout} positional arguments "
                            f"(inputs and outputs). Got {n} positional argument"
                            f"{'' if n == 1 else 's'}. (gufunc {self.__name__})")
        prepared = [_Arg(a, stream) for a in args[:self.nin]]
        given_out = [_foreign_viewed(o) for o in args[self.nin:]]
        dtypes = [p.dtype for p in prepared]
        sig = self._select(dtypes)
        if sig is None and not given_out:
            raise TypeError(f"{self.__name__} was built without signatures: pass the output "
                            f"array(s) too (their types pick the compiled version)")
        # core dimension sizes from the inputs' trailing axes
        sizes: dict = {}
        loops = []
        for p, dims in zip(prepared, self._in_dims):
            shp = () if p.is_scalar else p.shape
            if len(shp) < len(dims):
                raise ValueError(f"{self.__name__}: an input of shape {shp} has fewer than "
                                 f"the {len(dims)} core dimensions of {dims}")
            core = shp[len(shp) - len(dims):]
            for name, n in zip(dims, core):
                if sizes.setdefault(name, n) != n:
                    raise ValueError(f"{self.__name__}: core dimension {name!r} is {n} in one "
                                     f"input and {sizes[name]} in another")
            loops.append(shp[:len(shp) - len(dims)])
        for o, dims in zip(given_out, self._out_dims):
            core = np.shape(o)[len(np.shape(o)) - len(dims):]
            for name, n in zip(dims, core):
                sizes.setdefault(name, n)
        loop = np.broadcast_shapes(*loops) if loops else ()
        if given_out and loop and all(n == 1 for n in loop) and all(
                np.ndim(o) == len(d) for o, d in zip(given_out, self._out_dims)):
            # as numba.cuda: outputs given without the loop's axes of size 1 (a "()"
            # input passed old style, as a 1-element array) are filled as they are
            loop = ()
        want_device = any(p.array is not None for p in prepared) or \
            any(isinstance(o, _mem.DeviceArray) for o in given_out)
        from ._memory_api import device_array, to_device

        kargs, plain = [], []
        for k, (p, dims) in enumerate(zip(prepared, self._in_dims)):
            ty = sig[k] if sig is not None else None
            is_array = isinstance(ty, types.Array)
            if p.is_scalar and not is_array:
                kargs.append(p.scalar if ty is None else numpy_support.as_dtype(ty).type(p.scalar))
                plain.append(True)
                continue
            dt = None if ty is None else numpy_support.as_dtype(ty.dtype if is_array else ty)
            if p.is_scalar:
                dev = to_device(np.full(1, p.scalar, dt), stream=stream)
                dev = dev.view_as((), (), dev.offset)
            else:
                if p.array is not None and dt is not None and p.array.dtype != dt:
                    # numba.cuda casts host inputs to the signature's types, and device
                    # arrays never (its device arrays have no astype)
                    raise TypeError(f"{self.__name__}: compatible signature is possible by "
                                    f"casting but {type(p.array)} does not support "
                                    f".astype() (a device array of {p.array.dtype} where "
                                    f"the signature takes {dt})")
                dev = p.device(dt)
            view = _broadcast_view(dev, loop, core=len(dims))
            if not dims and is_array:  # a "()" operand the function takes as a 1-element array
                view = view.view_as(view.shape + (1,), view.strides + (view.itemsize,),
                                    view.offset)
            kargs.append(view)
            plain.append(False)
        outs_dev, host_outs = [], []
        for j, dims in enumerate(self._out_dims):
            try:
                core = tuple(sizes[d] for d in dims)
            except KeyError as e:
                raise ValueError(f"{self.__name__}: output core dimension {e.args[0]!r} is "
                                 f"not set by any input") from None
            if j < len(given_out):
                o = given_out[j]
                if isinstance(o, _mem.DeviceArray):
                    dev, host = o, None
                else:
                    host = o
                    dev = to_device(np.ascontiguousarray(o), stream=stream)
            else:
                dt = numpy_support.as_dtype(sig[self.nin + j].dtype)
                dev, host = device_array(loop + core, dt, stream=stream), None
            if dev.shape != tuple(loop) + core:
                raise ValueError(f"{self.__name__}: output {j} has shape {dev.shape}, "
                                 f"expected {tuple(loop) + core}")
            outs_dev.append(dev)
            host_outs.append(host)
            kview = dev
            if not dims:
                kview = dev.view_as(dev.shape + (1,), dev.strides + (dev.itemsize,), dev.offset)
            kargs.append(kview)
        key = (len(loop), tuple(plain))
        kernel = self._kernels.get(key, self.nin, tuple(plain), len(loop), self.nout, True)
        n = int(np.prod(loop)) if loop else 1
        _launch(kernel, n, kargs, stream)
        results = []
        for dev, host in zip(outs_dev, host_outs):
            if host is not None:
                dev.copy_to_host(host, stream=stream or None)
                results.append(host)
            elif want_device:
                results.append(dev)
            else:
                results.append(dev.copy_to_host(stream=stream or None))
        return results[0] if self.nout == 1 else tuple(results)

    def __repr__(self):
        return f"<numba_gpux.cuda gufunc {self.__name__} {self.layout!r}>"

    def __reduce__(self):
        return _serialize.reduce_function(self, {"signatures": _sig_objects(self._sigs),
                                                 "layout": self.layout})

    @classmethod
    def _from_pickle(cls, py_func, state):
        return cls(py_func, state["signatures"] or None, state["layout"])


def _sig_objects(sigs) -> list:
    """Normalized ``(args, return type)`` pairs as signatures ``_signatures`` takes again."""
    from numba.core import typing

    return [typing.signature(ret, *args) for args, ret in sigs]


def _vectorize_options(options: dict, cache=False) -> None:
    """numba.cuda's checks of ``vectorize`` options: ``nopython`` is redundant (a
    warning); anything else is an error."""
    if cache:
        raise TypeError("caching is not supported")
    for opt in options:
        if opt == "nopython":
            import warnings

            warnings.warn("nopython kwarg for cuda target is redundant", RuntimeWarning,
                          stacklevel=3)
        else:
            raise KeyError(f"Unrecognized options. cuda vectorize target does not support "
                           f"option: {opt!r}")


def _guvectorize_options(options: dict, cache=False, writable_args=()) -> None:
    """numba.cuda's checks of ``guvectorize`` options: ``nopython`` must be True."""
    options = dict(options)
    if cache:
        raise TypeError("caching is not supported")
    if writable_args:
        raise TypeError("writable_args are not supported")
    if not options.pop("nopython", True):
        raise TypeError("nopython flag must be True")
    if options:
        raise TypeError(f"The following target options are not supported: "
                        f"{', '.join(repr(k) for k in options)}")


class _UFuncBuilder:
    """Numba's ufunc-builder protocol (what ``numba.vectorize(..., target=...)`` calls):
    ``add(sig)`` per signature, ``disable_compile()``, ``build_ufunc()``."""

    def __init__(self, func, identity):
        self.py_func = func
        self.identity = identity
        self._sigs: list = []

    @property
    def pyfunc(self):
        return self.py_func

    def add(self, sig=None):
        if sig is not None:
            self._sigs.append(sig)

    def disable_compile(self):
        pass  # a ufunc given signatures compiles only those


class CUDAVectorize(_UFuncBuilder):
    """What ``numba.vectorize(..., target="cuda")`` builds with: a :class:`CUDAUFunc`."""

    def __init__(self, func, identity=None, cache=False, targetoptions=None):
        _vectorize_options(targetoptions or {}, cache)
        super().__init__(func, identity)

    def build_ufunc(self) -> CUDAUFunc:
        return CUDAUFunc(self.py_func, self._sigs or None)


class CUDAGUFuncVectorize(_UFuncBuilder):
    """What ``numba.guvectorize(..., target="cuda")`` builds with: a
    :class:`CUDAGUFunc`."""

    def __init__(self, func, sig, identity=None, cache=False, targetoptions=None,
                 writable_args=()):
        _guvectorize_options(targetoptions or {}, cache, writable_args)
        super().__init__(func, identity)
        self.signature = sig

    def build_ufunc(self) -> CUDAGUFunc:
        return CUDAGUFunc(self.py_func, self._sigs or None, self.signature)


def vectorize(ftylist_or_function=(), **kws):
    """``@cuda.vectorize(['float32(float32, float32)'])`` or ``@cuda.vectorize`` (types
    taken from each call): a ufunc whose elements are computed by a kernel."""
    kws.pop("target", None)
    kws.pop("identity", None)
    _vectorize_options(kws, kws.pop("cache", False))
    if callable(ftylist_or_function) and not isinstance(ftylist_or_function, (str, list,
                                                                              tuple)):
        return CUDAUFunc(ftylist_or_function, None)
    sigs = ftylist_or_function or None

    def wrap(fn):
        return CUDAUFunc(fn, sigs)

    return wrap


def guvectorize(ftylist, signature=None, **kws):
    """``@cuda.guvectorize(['void(float32[:], float32[:])'], '(n)->(n)')``: a generalized
    ufunc whose loop is a kernel; without signatures (``guvectorize('(n)->(n)')``) pass
    the outputs too, and their types choose the compiled version."""
    kws.pop("target", None)
    kws.pop("identity", None)
    _guvectorize_options(kws, kws.pop("cache", False), kws.pop("writable_args", ()))
    if signature is None and isinstance(ftylist, str) and "->" in ftylist:
        ftylist, signature = None, ftylist
    if signature is None:
        raise TypeError("guvectorize needs a layout such as '(n),()->(n)'")

    def wrap(fn):
        return CUDAGUFunc(fn, ftylist, signature)

    return wrap
