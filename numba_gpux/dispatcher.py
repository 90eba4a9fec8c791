"""The kernel object: specializations per signature, launch configuration.

A :class:`GpuxFunction` is both what ``@jit`` returns for kernels and for
device functions.  It keeps, per argument signature, the target-neutral
result (computed once) and, per (signature, target), the finished code.
"""

from __future__ import annotations

import operator
import threading
from typing import TYPE_CHECKING, Any, NoReturn

from numba.core import sigutils, types, typing, utils
from numba.core.typeinfer import register_dispatcher
from numba.core.typing.typeof import Purpose, typeof

from . import abi
from .abi import NO_FACTS, LaunchFacts
from . import irtext
from .lanes import exchange_first_dims, flatten_block
from .stages import WARP_ROWS
from . import hooks as _hooks
from . import linking
from .limits import launch_bounds_tuple
from . import serialize as _serialize
from .attributes import KernelAttributes
from .inspection import KernelInspection, Overload
from .compiler import NeutralResult, Options, compile_neutral, kernel_symbol, wrap_kernel
from .devices import Device as _Device, default_device
from .errors import GpuxUserError, LaunchError, LaunchTypeError, UnsupportedError
from .language.checks import set_foreign_adopter
from .language.functions import GpuxFunctionType, register_device_functions
from .argtypes import argument_types
from .launch import launch_call as _launch_call
from .launchkeys import key_function as _key_function
from .memory import from_foreign

# kernels capture another library's device arrays (globals exposing
# __cuda_array_interface__) as views of ours on the current device
set_foreign_adopter(from_foreign)

if TYPE_CHECKING:
    from .interface import Artifact

__all__ = ["GpuxFunction", "LaunchConfig", "jit", "normalize_dims"]


class DeviceFunctionLaunchError(GpuxUserError, RuntimeError):
    """A device function was given a launch configuration (a RuntimeError, as numba.cuda's)."""


def normalize_dims(value, what: str) -> tuple[int, int, int]:
    """An int or a 1-3 tuple of positive ints -> a 3-tuple."""
    if isinstance(value, (list, tuple)):
        dims = tuple(value)
    else:
        dims = (value,)
    if not 1 <= len(dims) <= 3:
        raise LaunchError(f"{what} must be a sequence of 1, 2 or 3 integers, got {list(dims)!r}")
    out = []
    for d in dims:
        try:
            import operator

            d = operator.index(d)
        except TypeError:
            raise LaunchTypeError(f"{what} must be a sequence of integers, got {list(dims)!r}") from None
        if d < 1:
            raise LaunchError(f"{what} must be positive, not {value!r}")
        out.append(d)
    while len(out) < 3:
        out.append(1)
    return tuple(out)


def _int_dims(config) -> bool:
    """Whether griddim and blockdim are ints or tuples of ints (exactly, not floats)."""
    for x in config[:2]:
        t = type(x)
        if t is int:
            continue
        if t is tuple and all(type(y) is int for y in x):
            continue
        return False
    return True


class LaunchConfig:
    """``kernel[griddim, blockdim, queue, dynamic_shared_bytes]``; call it to launch."""

    __slots__ = ("dispatcher", "griddim", "blockdim", "queue", "shared_bytes", "ndim",
                 "device", "checked", "launch_keys", "keyfn", "_callbacks")

    def __init__(self, dispatcher, griddim, blockdim, queue=None, shared_bytes=0) -> None:
        self.dispatcher = dispatcher
        self.griddim = normalize_dims(griddim, "griddim")
        self.blockdim = normalize_dims(blockdim, "blockdim")
        nd = max(len(griddim) if isinstance(griddim, (tuple, list)) else 1,
                 len(blockdim) if isinstance(blockdim, (tuple, list)) else 1)
        self.ndim = nd
        device = None
        if isinstance(queue, (str, _Device)):  # k[griddim, blockdim, device]
            device, queue = _resolve_device(queue), None
        self.queue = queue
        if not isinstance(shared_bytes, int):
            raise LaunchTypeError(f"dynamic shared memory must be an int of bytes, "
                                  f"not {shared_bytes!r}")
        if shared_bytes < 0:
            raise LaunchError(f"dynamic shared memory must be a non-negative int of bytes, "
                              f"not {shared_bytes!r}")
        self.shared_bytes = shared_bytes
        #: the device named in the configuration, or that a queue carrying
        #: ``.gpux_device`` pins launches to, else None (the current device)
        if device is None and queue is not None:
            device = getattr(queue, "gpux_device", None)
        self.device = device
        #: the device this configuration was last checked against (launch.py)
        self.checked = None
        #: the kernel's launch keys (launch.py), read on every launch
        self.launch_keys = dispatcher._launch_keys
        #: ``keyfn(device, args)``: the launch key for the kernel's parameter count
        self.keyfn = dispatcher._launch_keyfn
        self._callbacks = None

    @property
    def pre_launch_callbacks(self) -> list:
        """Callables ``callback(kernel, config)`` run on the host just before each launch
        of this configuration, as numba.cuda's are (*kernel* is the kernel object; they
        run before its code for the arguments is looked up or compiled).

        A configuration with callbacks is this object's alone: ``kernel[griddim,
        blockdim]`` makes a new one from then on, and its launches take the generic
        path, which runs them (the shim's fast path has no callback to check)."""
        if self._callbacks is None:
            self._callbacks = []
            self.launch_keys = {}  # never filled: every launch is a generic one
            cache = self.dispatcher._configs
            for key, cfg in list(cache.items()):
                if cfg is self:
                    cache.pop(key, None)
        return self._callbacks

    #: launch on the arguments: ``launch.launch_call(cfg, *args)``
    __call__ = _launch_call

    def __repr__(self):
        return f"<launch {self.dispatcher.__name__}[{self.griddim}, {self.blockdim}]>"

    def __reduce__(self):
        if self._callbacks:
            import pickle

            raise pickle.PicklingError(
                f"Cannot pickle configured launches with pre-launch callbacks ({self!r}): "
                f"they are host code of this process; add them again after unpickling")
        # a queue belongs to one process; a device travels as its spec (serialize.py)
        if self.queue is not None:
            raise GpuxUserError(
                f"{self!r} cannot be pickled: it names a queue (stream), which belongs to this "
                f"process; pickle {self.dispatcher.__name__}[griddim, blockdim] (or with a "
                f"device) and give the queue in the process that launches")
        nd = self.ndim
        return _rebuild_config, (self.dispatcher, self.griddim[:nd], self.blockdim[:nd],
                                 self.device, self.shared_bytes)


def _rebuild_config(dispatcher, griddim, blockdim, device, shared_bytes):
    return LaunchConfig(dispatcher, griddim, blockdim, device, shared_bytes)


def _resolve_device(spec):
    from .devices import lookup_device

    return lookup_device(spec)


FORALL_BLOCK_SIZE = _hooks.declare(
    "launch.forall_block_size", int,
    "Threads per block of kernel.forall(n) when no tpb is given (clamped to the "
    "device's limit).")
# GPUs: 256.  CPU devices run each work-group as one task on one core, and their
# per-work-group cost dominates small groups: Intel's OpenCL CPU driver ran a 4M-element
# saxpy fastest with its maximum group size, and faster than numba's parallel=True
# (benchmarks/results/costs.md)
_hooks.implement("launch.forall_block_size", fn=lambda q: 256, default=True)
_hooks.implement("launch.forall_block_size", device_kind="cpu",
                 fn=lambda q: q.limit("max_threads_per_block", 256), default=True)


class GpuxFunction(KernelAttributes, KernelInspection):
    """A jitted kernel or device function."""

    #: Numba's bytecode reader compiles this attribute's function in place of the object
    #: (``numba.core.bytecode.get_function_object``), as for numba.cuda's dispatchers
    __numba__ = "py_func"

    def __init__(self, py_func, *, device: bool = False, options: Options | None = None,
                 cache: bool = False, signatures=None, extra: dict | None = None) -> None:
        while isinstance(py_func, GpuxFunction):  # jit(jit(f)): f, with the outer options
            py_func = py_func.py_func
        self.py_func = py_func
        self.__name__ = getattr(py_func, "__name__", "kernel")
        self.__qualname__ = getattr(py_func, "__qualname__", self.__name__)
        self.__doc__ = getattr(py_func, "__doc__", None)
        self.__wrapped__ = py_func
        self.is_device = device
        self.options = options or Options()
        self.cache = cache
        self.extra = dict(extra or {})
        #: the eager signatures given to @jit, carried when the function pickles
        self._eager_sigs = list(signatures or ())
        self._lock = threading.RLock()
        self._neutral: dict[tuple, object] = {}     # argtypes -> NeutralResult
        self._kernel_ir: dict[tuple, tuple] = {}    # argtypes -> (symbol, neutral text)
        self._code: dict[tuple, object] = {}        # (argtypes, overlaid fingerprint) -> Artifact
        self._loaded: dict[tuple, object] = {}      # (argtypes, device) -> driver kernel
        self._shims: dict = {}                      # (argtypes, device) -> Shim
        self._launch_keys: dict = {}                # launch.py's launch keys
        self._configs: dict = {}                    # k[...] key -> LaunchConfig
        self._numba_type_ = GpuxFunctionType(self)
        self._in_progress: set = set()
        self._nonliteral_failed: set = set()        # non-literal argtypes that did not type
        self._device_twin: GpuxFunction | None = None  # see device_function
        #: the kernels specialize() made, by argument types
        self.specializations: dict = {}
        self.stats = {"neutral_compiles": 0, "target_compiles": 0}
        self._pysig = utils.pysignature(py_func)
        self._nparams = len(self._pysig.parameters)
        #: the position of a ``*args`` parameter (its values are one tuple), or None
        self._star_index = next((i for i, p in enumerate(self._pysig.parameters.values())
                                 if p.kind == p.VAR_POSITIONAL), None)
        self._launch_keyfn = _key_function(self._nparams if self._star_index is None else None)
        #: a kernel given signatures at ``@jit`` launches only with those (numba.cuda's
        #: rule): argument types are matched to one of them, else TypeError
        self._eager: tuple = ()
        if signatures:
            eager = [self.compile_neutral_sig(sig).argtypes for sig in signatures]
            if not device:
                self._eager = tuple(dict.fromkeys(eager))

    # ------------------------------------------------------------ extension points
    # What a facade or library kernel class (a subclass, e.g. numba_gpux.cuda's
    # CUDADispatcher) overrides; the defaults are the portable kernel's behaviour.

    #: a call from device code compiles for its literal types as they are (an @overload
    #: implementation's, as Numba's jit), not the non-literal ones first (_specialize_call)
    keeps_literals: bool = False
    #: whether launches may be found again by their arguments' launch key (launch.py's
    #: fast path, which skips launch_variant and prepare_launch); a subclass whose
    #: launches each need the generic path says False (and clears ``_launch_keys``)
    keyed_launches: bool = True
    #: a launch that copies NumPy arrays to the device and back warns (launch.py): None,
    #: the default warning once per process; or a callable, called at each such launch,
    #: returning the message (None: no warning)
    host_copy_warning = None
    #: None, or ``device_exception(exc)`` -> the exception a launch raises for the error
    #: a debug kernel reported, *exc* as language/debug.py forms it: a dialect's own
    #: classes and messages (numba_gpux.cuda.mlir_dialect's); kept by derived kernels
    device_exception = None
    #: what ``overloads`` and ``compile`` give for one signature: inspection.Overload, or
    #: a facade's subclass with its dialect's API on compiled code
    overload_class = Overload

    def launch_variant(self, cfg) -> "GpuxFunction":
        """The kernel object whose code a launch with the configuration *cfg* runs
        (called on every launch that takes the generic path): this one."""
        return self

    def prepare_launch(self, cfg, args: tuple) -> tuple | None:
        """Called on every launch that takes the generic path, before its arguments are
        typed: None to launch *args* as they are (the default), or ``(arguments,
        after)``: launch those instead, then call each of the callables in *after*."""
        return None

    def _views_as(self, actual, formal) -> bool:
        """Whether a launch argument of Numba type *actual* is passed to a parameter of
        the eager signature type *formal* that Numba does not convert it to: an
        integer as a pointer."""
        return isinstance(actual, types.Integer) and abi.is_pointer(formal)

    def _compile_neutral(self, argtypes: tuple, return_type):
        """Type and lower the Python function for *argtypes* (``neutral`` caches it)."""
        res = compile_neutral(self.py_func, argtypes, self.options, return_type)
        if self.extra.get("link"):
            # jit(link=...): the code to link, recorded in the lowered code (read now),
            # where it reaches the kernel and every kernel calling this function; targets
            # that link none reject it (linking.check)
            mod = res.library.create_ir_module(f"{self.__name__}.link")
            linking.add_to_module(mod, linking.records(self.extra["link"]))
            res.library.add_ir_module(mod)
        return res

    def _disk_indexed(self) -> bool:
        """Whether finished code is kept in, and found through, the disk cache's index
        (by the argument types alone, before typing)."""
        return self.cache and not self.is_device

    def _derive(self, **kwargs) -> "GpuxFunction":
        """A new kernel object of this class for the same Python function (a
        specialization): *kwargs* as ``__init__`` takes them, the rest as this one's."""
        kw = dict(device=self.is_device, options=self.options, extra=self.extra)
        kw.update(kwargs)
        made = type(self)(self.py_func, **kw)
        if "device_exception" in vars(self):
            made.device_exception = self.device_exception
        return made

    def _pickle_state(self) -> dict:
        """What ``_from_pickle`` needs, besides the Python function, to build this again."""
        return {"device": self.is_device, "options": self.options, "cache": self.cache,
                "extra": self.extra, "signatures": self._eager_sigs,
                "specialized": getattr(self, "_specialized", None),
                "device_exception": vars(self).get("device_exception")}

    def _compile_for_args(self, *args, **kws):
        """Compile for a launch's arguments (Numba's dispatcher hook): a launch with
        argument types this kernel has not seen calls it, with the launch visible to
        the compile (``launch.current_launch()``).  The result for the signature the
        arguments match."""
        from .launch import current_launch

        cur = current_launch()
        if cur is not None and cur.dispatcher is self and cur.argtypes is not None:
            argtypes = cur.argtypes
        else:
            argtypes = self.match_signature(argument_types(self, args))
        return self.neutral(argtypes)

    def match_signature(self, argtypes: tuple) -> tuple:
        """The argument types a launch with *argtypes* compiles for: *argtypes* itself,
        or for a kernel with eager signatures the one the arguments convert to best (as
        Numba's dispatcher chooses: scalars may narrow, arrays only change layout), else
        the first one they view as (integer arrays of the same width, integers as
        pointers).  Raises TypeError naming the signatures when none fits, or the two
        best when they tie."""
        if not self._eager or argtypes in self._eager:
            return argtypes
        from .context import typing_context

        tctx = typing_context()
        # Numba's dispatcher's choice: the signature the arguments convert to best
        # (exact, then promotion, then safe, then unsafe conversions); a tie between
        # the best two is a TypeError naming both
        cases = [typing.signature(types.none, *sig) for sig in self._eager
                 if len(sig) == len(argtypes)]
        best = tctx.resolve_overload(self.py_func, cases, argtypes, {}, allow_ambiguous=False)
        if best is not None:
            return tuple(best.args)
        for sig in self._eager:  # what Numba does not convert: array views, pointers
            if len(sig) == len(argtypes) and all(
                    a == s or tctx.can_convert(a, s) is not None or self._views_as(a, s)
                    for a, s in zip(argtypes, sig)):
                return sig
        sigs = "; ".join(f"({', '.join(map(str, s))})" for s in self._eager)
        raise TypeError(f"No matching definition for argument type(s) "
                        f"{', '.join(map(str, argtypes))}: kernel {self.__name__} was compiled "
                        f"for the signature(s) {sigs} only")

    # ------------------------------------------------------------------ typing
    def compile_neutral_sig(self, sig) -> NeutralResult:
        args, ret = sigutils.normalize_signature(sig)
        if not self.is_device and ret not in (None, types.none, types.void):
            raise GpuxUserError(f"kernel signatures must return void, not {ret}")
        res = self.neutral(tuple(args), None if self.is_device is False else ret)
        if not self.is_device:
            self.kernel_ir(res.argtypes)
        return res

    def neutral(self, argtypes: tuple, return_type=None) -> NeutralResult:
        """The target-neutral typed and lowered result for *argtypes* (cached)."""
        argtypes = tuple(argtypes)
        res = self._neutral.get(argtypes)
        if res is None:
            self._check_arity(argtypes)
            with self._lock:
                res = self._neutral.get(argtypes)
                if res is None:
                    if argtypes in self._in_progress:
                        from numba.core.errors import TypingError

                        raise TypingError(
                            f"{self.__name__}{tuple(map(str, argtypes))} calls itself through "
                            f"other device functions while it is typed: only a function "
                            f"calling itself directly can be typed")
                    self._in_progress.add(argtypes)
                    try:
                        # a call of itself types as Numba's RecursiveCall (is_compiling),
                        # also before the function's name is bound (an eager signature
                        # compiled in the decorator)
                        with register_dispatcher(self):
                            res = self._compile_neutral(argtypes, return_type)
                    finally:
                        self._in_progress.discard(argtypes)
                    if res.captured and self.is_device:
                        raise GpuxUserError(
                            f"device function {self.__name__} reads a device array from a "
                            f"global or closure variable; kernels capture device arrays, and "
                            f"device functions called by name from a kernel, but not one "
                            f"compiled on its own (pass it to {self.__name__} as an argument)")
                    self.stats["neutral_compiles"] += 1
                    self._neutral[argtypes] = res
                    self._neutral[res.argtypes] = res
                    if self.is_device:
                        from .context import target_context

                        target_context().insert_user_function(res, res.fndesc, [res.library])
        return res

    def _check_arity(self, argtypes) -> None:
        params = self._pysig.parameters.values()
        if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in params):
            return
        required = sum(1 for p in params if p.default is p.empty)
        if not required <= len(argtypes) <= self._nparams:
            raise GpuxUserError(
                f"{self.__name__} takes {self._nparams} argument(s) but the signature gives "
                f"{len(argtypes)}: ({', '.join(map(str, argtypes))})")

    def kernel_ir(self, argtypes: tuple) -> tuple[str, str]:
        """(entry point symbol, neutral module text with the entry wrapper)."""
        got = self._kernel_ir.get(argtypes)
        if got is None:
            res = self.neutral(argtypes)
            sym = kernel_symbol(self.py_func, res.argtypes)
            got = (sym, wrap_kernel(res, sym))
            self._kernel_ir[argtypes] = got
            self._kernel_ir[res.argtypes] = got
        return got

    # numba's Dispatcher-type protocol: how kernels call device functions
    @property
    def is_compiling(self) -> bool:
        # while this function is typed, Numba types a call of itself as a
        # RecursiveCall: the return type from what typing found so far, and a direct
        # call of the function being lowered
        return bool(self._in_progress)

    def fold_argument_types(self, args, kws) -> tuple:
        """Bind keywords, defaults (as ``Omitted``) and ``*args`` (as a tuple), like Numba."""
        def normal(index, param, value):
            return value

        def default(index, param, value):
            return types.Omitted(value)

        def stararg(index, param, values):
            return types.StarArgTuple(values)

        from numba.core.typing.templates import fold_arguments

        args = fold_arguments(self._pysig, args, kws, normal, default, stararg)
        return self._pysig, args

    @property
    def device_function(self) -> GpuxFunction:
        """What a call from device code compiles: a device function is itself; a
        kernel (called from another kernel, as numba.cuda allows) is a device function
        made from its Python source, with its options and eager signatures, compiled
        for the call's argument types and returning what the source returns."""
        if self.is_device:
            return self
        with self._lock:
            if self._device_twin is None:
                self._device_twin = GpuxFunction(
                    self.py_func, device=True, options=self.options,
                    signatures=self._eager_sigs or None, extra=self.extra)
            return self._device_twin

    @property
    def targetoptions(self) -> dict:
        """Numba's dispatcher attribute that its IR inliner reads: a function that reads
        device arrays from globals or closure variables (language/checks.py's
        reads_device_arrays) is inlined into its caller's IR, so that the kernel
        captures the arrays, as hidden arguments, like its own."""
        from .language.checks import reads_device_arrays

        return {"inline": "always"} if reads_device_arrays(self.py_func) else {}

    @property
    def _compiler(self):
        """Numba's dispatcher attribute that ``@overload(inline=...)`` reads."""
        from .context import OVERLOAD_FRONT_END

        return OVERLOAD_FRONT_END

    def get_call_template(self, args, kws) -> tuple:
        if not self.is_device:
            # the typing context types a kernel named in device code as its
            # device_function; only that object's template is ever asked for
            raise GpuxUserError(
                f"{self.__name__} is a kernel: device code calls its device_function")
        pysig, args = self.fold_argument_types(args, kws)
        # with eager signatures a call converts its arguments to one of them, as in
        # numba.cuda (no new specialization); otherwise it is compiled for its types
        if not self._eager_sigs:
            args = self._specialize_call(tuple(args))
        name = f"CallTemplate({self.__name__})"
        template = typing.make_concrete_template(name, key=self.__name__,
                                                 signatures=self.nopython_signatures)
        return template, pysig, args, {}

    def _specialize_call(self, args: tuple) -> tuple:
        """The argument types a call from device code is compiled for, as Numba
        does it: the non-literal types first (one specialization serves every
        value); only when those do not type (``shared.array(n, ...)`` needs ``n``
        as a constant), the literal types the caller has."""
        from numba.core.errors import TypingError

        plain = args if self.keeps_literals else tuple(types.unliteral(a) for a in args)
        if plain == args:
            self.neutral(args)
            return args
        if plain not in self._nonliteral_failed:
            try:
                self.neutral(plain)
                return plain
            except TypingError:
                self._nonliteral_failed.add(plain)
        self.neutral(args)
        return args

    def get_function_type(self) -> NoReturn:
        # Numba asks for this to unify two different functions into one
        # first-class function (a pointer): GPU code has no function pointers.
        from numba.core.errors import TypingError

        raise TypingError(
            f"{self.__name__}: a variable that holds one of several device functions "
            f"(chosen at run time) is not supported in GPU code; call each function in "
            f"its own branch")

    @property
    def nopython_signatures(self) -> list:
        return [typing.signature(r.return_type, *r.argtypes)
                for k, r in self._neutral.items() if k == r.argtypes]

    def get_overload(self, argtypes) -> NeutralResult:
        return self._neutral[tuple(argtypes)]

    @property
    def signatures(self) -> list[tuple]:
        return [r.argtypes for k, r in self._neutral.items() if k == r.argtypes]

    @property
    def overloads(self) -> dict[tuple, Overload]:
        """``{argtypes: Overload}`` of every signature compiled (inspection.Overload)."""
        return {r.argtypes: self.overload_class(self, r) for k, r in self._neutral.items()
                if k == r.argtypes}

    def compile(self, sig) -> Overload:
        """Compile for *sig* now, as numba.cuda's (and Numba's) ``compile``: typing and
        lowering, and a kernel's code for the current device's target, so that errors
        are raised here rather than at the first launch.  Returns the Overload."""
        res = self.compile_neutral_sig(sig)
        if not self.is_device:
            self.code_for(res.argtypes, default_device().target)
        return self.overload_class(self, res)

    # ------------------------------------------------------------------ code
    def code_for(self, argtypes: tuple, target, facts: LaunchFacts = NO_FACTS) -> Artifact:
        """Finished code (an Artifact) of this kernel for *target*, knowing what the
        launch tells it (*facts*, ``abi.LaunchFacts``: the signs of int64 arguments,
        arrays' innermost strides, a launch too wide for 32-bit global indices)."""
        if self._disk_indexed():
            # the disk cache's index: finished code found before typing (cache.py)
            from .cache import index_lookup

            art = index_lookup(self, argtypes, target, facts)
            if art is not None:
                return art
        from .cachekey import overlaid_fingerprint

        key = (argtypes, overlaid_fingerprint(target), facts)  # overlays change the code too
        art = self._code.get(key)
        if art is None:
            from .cache import compile_target, index_store

            with self._lock:
                art = self._code.get(key)
                if art is None:
                    sym, text = self.kernel_ir(argtypes)
                    if facts != NO_FACTS:  # the facts are in the text, so in every cache key
                        text = self._with_facts(sym, text, argtypes, facts)
                    # cache=True keeps finished code on disk, keyed by the neutral IR
                    art = compile_target(text, (sym,), target, self.options, name=self.__name__,
                                         disk=self.cache)
                    self.stats["target_compiles"] += 1
                    self._code[key] = art
                    if self._disk_indexed():
                        index_store(self, argtypes, target, art, text, facts)
        return art

    def _with_facts(self, sym: str, text: str, argtypes: tuple, facts: LaunchFacts) -> str:
        """The kernel's neutral IR *text* stating *facts* (:meth:`code_for`)."""
        ranges = facts.param_ranges(self.neutral(argtypes).all_argtypes)
        if ranges:
            text = irtext.param_ranges(text, sym, ranges)
        if facts.wide:  # the global index as the portable sum (language/intrinsics.py)
            text = irtext.rename_globals(text, {"__gpux_global_idx": "__gpux_wide_global_idx"})
        if facts.lanes:  # dimensions 0 and 1 exchanged (lanes.py)
            text = exchange_first_dims(text)
        if facts.warp_rows:  # warps in lockstep (stages._warp_lockstep)
            text = irtext.add_named_metadata(text, WARP_ROWS, "")
        if facts.block:  # blocks run as one row (lanes.py)
            text = flatten_block(text, facts.block)
        return text

    def typeof_args(self, args) -> tuple:
        try:
            return tuple(typeof(a, Purpose.argument) for a in args)
        except ValueError:
            return argument_types(self, args)  # raises, naming the argument and the line

    # ------------------------------------------------------------------ launch
    def __getitem__(self, config) -> LaunchConfig:
        # k[g, b] is written in launch loops: one configuration per distinct
        # [griddim, blockdim, ...], built and checked once.  Those that
        # carry a queue are not kept, so that a dropped queue is not held alive.
        try:
            cfg = self._configs.get(config)
        except TypeError:  # unhashable parts (lists): not cached
            cfg = None
        # 1.0 == 1 as a key: only dimensions that are exactly ints use the cache,
        # so a float dimension still gets its LaunchError
        if cfg is not None:
            if type(config[0]) is int and type(config[1]) is int:  # k[blocks, threads]
                return cfg
            if _int_dims(config):
                return cfg
        if self.is_device:
            raise DeviceFunctionLaunchError(
                f"Cannot compile a device function as a kernel: {self.__name__} is a device "
                f"function (jit(device=True)); only kernels are launched")
        if isinstance(config, list):  # k[[grid, block, stream]], as numba.cuda takes it
            config = tuple(config)
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise LaunchError("launch configuration must be [griddim, blockdim] or "
                              "[griddim, blockdim, queue] or [griddim, blockdim, queue, shared_bytes]")
        cfg = LaunchConfig(self, *config)
        if cfg.queue is None and _int_dims(config):
            try:
                if len(self._configs) >= 64:
                    self._configs.clear()
                self._configs[config] = cfg
            except TypeError:
                pass
        return cfg

    def forall(self, ntasks: int, tpb: int = 0, queue=None, shared_bytes: int = 0) -> LaunchConfig | _NoWork:
        """A 1-D configuration covering *ntasks* threads (none: calling it does nothing)."""
        try:
            ntasks = operator.index(ntasks)
        except TypeError:
            raise TypeError(f"forall: the task count must be an integer, not "
                            f"{type(ntasks).__name__}") from None
        if ntasks < 0:
            raise ValueError(f"Can't create ForAll with negative task count: {ntasks}")
        if ntasks == 0:
            return _NoWork(self)
        if tpb <= 0:
            dev = default_device()
            tpb = max(1, min(_hooks.tuning(FORALL_BLOCK_SIZE.name, dev),
                             dev.max_threads_per_block))
        blocks = max(1, (int(ntasks) + tpb - 1) // tpb)
        return LaunchConfig(self, blocks, tpb, queue, shared_bytes)

    def __call__(self, *args, **kwargs) -> NoReturn:
        if self.is_device:  # (a LaunchError: a ValueError, as numba.cuda's)
            raise LaunchError(
                f"{self.__name__} is a device function: call it from a kernel, not from the host")
        raise LaunchError(
            f"kernel {self.__name__}: launch configuration was not specified; launch it as "
            f"{self.__name__}[griddim, blockdim](...)")

    def __repr__(self):
        kind = "device function" if self.is_device else "kernel"
        return f"<numba_gpux {kind} {self.__qualname__}>"

    # pickling (serialize.py): what to compile travels, never compiled code
    def __reduce__(self):
        return _serialize.reduce_function(self, self._pickle_state())

    @classmethod
    def _from_pickle(cls, py_func, state):
        fn = cls(py_func, device=state["device"], options=state["options"],
                 cache=state["cache"], signatures=state["signatures"], extra=state["extra"])
        if state.get("device_exception") is not None:
            fn.device_exception = state["device_exception"]
        if state.get("specialized") is not None:
            fn.compile_neutral_sig(typing.signature(types.void, *state["specialized"]))
            fn._specialized = state["specialized"]
        return fn

    def specialize(self, *args) -> GpuxFunction:
        """A kernel restricted to the types of *args* (compiled now): values, or Numba
        types (``float32[::1]``).  One kernel per argument types, kept in
        :attr:`specializations`; a kernel that is itself restricted (specialized, or
        given signatures at ``@jit``) cannot be specialized again."""
        if getattr(self, "_specialized", None) is not None or self._eager:
            raise RuntimeError(f"Dispatcher already specialized: kernel {self.__name__} "
                               f"only takes the argument types it was compiled for")
        argtypes = tuple(a if isinstance(a, types.Type) else self.typeof_args((a,))[0]
                         for a in args)
        k = self.specializations.get(argtypes)
        if k is None:
            k = self._derive(cache=self.cache)
            k.compile_neutral_sig(typing.signature(types.void, *argtypes))
            k._specialized = argtypes
            self.specializations[argtypes] = k
        return k


def _device_function(py_func, inline: bool) -> GpuxFunction:
    return GpuxFunction(py_func, device=True, options=Options(inline=True) if inline else None)


# the typing context (below) meets kernel objects and makes device functions through this
register_device_functions(GpuxFunction, _device_function)


def jit(func_or_sig=None, *, device: bool = False, fastmath: bool = False, opt: int | bool = 3,
        debug: bool = False, inline: bool | str = False, cache: bool = False,
        lineinfo: bool = False, subgroup_size: int = 0, launch_bounds=None,
        max_registers=None, shared_memory_carveout: int = -1, semantics=None,
        kernel_class: type[GpuxFunction] | None = None, **extra) -> Any:
    """Compile a Python function as a GPU kernel (or, with ``device=True``, a device function).

    Use bare (``@jit``), with options (``@jit(fastmath=True)``) or with an eager
    signature, numba style (``@jit("void(float32[::1], float32)")``).
    ``subgroup_size=n`` runs a kernel that uses sub-group operations with sub-groups
    of exactly *n* lanes (an error where the device cannot); 0, the default, keeps
    the device's natural width.  ``launch_bounds``: the most threads a block of the
    kernel has, or a tuple (max threads per block, min blocks per multiprocessor,
    max blocks per cluster) of one to three ints: a launch with a larger block is a
    LaunchError, and targets whose code generator takes the bounds (CUDA) get them;
    ``max_registers`` likewise caps registers per thread where the target can.
    ``shared_memory_carveout``: the share (0 to 100 percent, -1 the driver's choice)
    of on-chip memory the kernel prefers as shared memory, a hint the CUDA runtime
    passes on and OpenCL has no way to.  ``semantics``: a
    :class:`numba_gpux.compiler.Semantics`, the rules of built-in operations where
    Python's and another API's differ (default: Python's).  ``kernel_class``: the class of the object
    made, :class:`GpuxFunction` (the default) or a subclass of it, such as a
    facade's kernel class.  ``link``: files of foreign code (``.cu``, ``.ptx``,
    ``.cubin``, ...: ``linking.py``) linked with the kernel on targets that link such
    code (``Target.link_kinds``: CUDA); elsewhere compiling it is an UnsupportedError.
    """
    unknown = set(extra) - {"link", "boundscheck", "forceinline", "nopython"}
    if unknown:
        raise GpuxUserError(f"jit() got unexpected options: {', '.join(sorted(unknown))}")
    if extra.pop("boundscheck", None):  # (checks without debug's way to report them)
        raise UnsupportedError("jit(boundscheck=True) is not supported: jit(debug=True) "
                               "checks every index and raises IndexError naming the line")
    if opt is True:
        opt = 3
    elif opt is False:
        opt = 0
    inline_flag = inline not in (False, "never", None)
    bounds = launch_bounds_tuple(launch_bounds)
    options = Options(opt=int(opt), fastmath=bool(fastmath), debug=bool(debug),
                      inline=inline_flag, lineinfo=bool(lineinfo), subgroup_size=subgroup_size,
                      **dict(zip(("max_threads", "min_blocks", "max_cluster_blocks"), bounds)),
                      max_registers=0 if max_registers is None else max_registers,
                      shared_memory_carveout=shared_memory_carveout,
                      **({} if semantics is None else {"semantics": semantics}))
    if "link" in extra:  # code linked with the kernel where its target links (linking.py)
        extra["link"] = linking.inputs(extra["link"], "jit(link=...)")
        if not extra["link"]:
            del extra["link"]
    cls = GpuxFunction if kernel_class is None else kernel_class
    if not (isinstance(cls, type) and issubclass(cls, GpuxFunction)):
        raise GpuxUserError(f"jit(kernel_class=...) takes GpuxFunction or a subclass of it, "
                            f"not {kernel_class!r}")

    def decorate(fn, sigs=None):
        if not callable(fn):
            raise GpuxUserError(f"@jit decorates a Python function, not {fn!r}")
        return cls(fn, device=device, options=options, cache=cache, signatures=sigs,
                   extra=extra)

    if func_or_sig is None:
        return decorate
    if isinstance(func_or_sig, (str, list, tuple)) or sigutils.is_signature(func_or_sig):
        sigs = list(func_or_sig) if isinstance(func_or_sig, list) else [func_or_sig]
        return lambda fn: decorate(fn, sigs)
    return decorate(func_or_sig)


class _NoWork:
    """``kernel.forall(0)``: a launch of no threads, which runs nothing."""

    def __init__(self, dispatcher) -> None:
        self.dispatcher = dispatcher

    def __call__(self, *args, **kwargs) -> None:
        return None
