"""The one shared typing and lowering context for every GPU target.

Built lazily on the first compile.  Targets never subclass these classes: what
differs between targets happens after lowering, on the neutral module, driven
by the Target's data and overlay registry.
"""

from __future__ import annotations

import sys
import threading

from llvmlite import ir
from numba.core import types
from numba.core.base import BaseContext
from numba.core.target_extension import CUDA, dispatcher_registry, jit_registry, target_registry
from numba.core.typing import BaseContext as TypingBaseContext
from numba.core.typing.typeof import typeof_impl

from .interface import NEUTRAL_DATA_LAYOUT
from .neutrallib import NeutralCodegen
from .language.functions import is_device_function, make_device_function
from .language.reductions import METHODS as _ARRAY_METHODS, array_method
from .language.semantics import current_semantics

__all__ = ["typing_context", "target_context", "load_language_modules", "GpuxTypingContext",
           "GpuxTargetContext", "NEUTRAL_DATA_LAYOUT", "TARGET_NAME"]

TARGET_NAME = "gpux"


class Gpux(CUDA):
    """Numba target-extension marker: ``@overload(..., target="gpux")``.

    A kind of Numba's ``cuda`` target in its hierarchy: code written for numba.cuda
    registers its extensions with ``numba.extending.overload(..., target="cuda")``, and
    those apply to every kernel here too (one registered for "gpux" is more specific,
    so it wins over a "cuda" one for the same function)."""


target_registry[TARGET_NAME] = Gpux


class TargetDescriptor:
    """What Numba's extension machinery asks of a target: its two contexts (the shared
    ones, built on first use)."""

    @property
    def typing_context(self):
        return typing_context()

    @property
    def target_context(self):
        return target_context()


class _OverloadDispatcherMarker:
    """Numba looks up ``dispatcher_registry[target].targetdescr`` for @overload."""

    targetdescr = TargetDescriptor()


def _overload_jit(*args, **options):
    """The jit Numba uses to compile ``@overload`` implementations for this target."""
    def wrap(fn):
        impl = make_device_function(fn, inline=True)
        # compiled for the literal types a call has, as Numba's own jit compiles an
        # implementation: Numba keeps one per signature, and one chosen by a literal
        # (np.searchsorted's side=) must not be typed for its non-literal type
        impl.keeps_literals = True
        return impl

    if args and callable(args[0]):
        return wrap(args[0])
    return wrap


class OverloadFrontEnd:
    """What Numba's ``@overload(..., inline="always")`` (or a cost model) reads of the
    implementation's dispatcher, ``disp._compiler``, to run its front end on the
    implementation for inlining: the target descriptor, the pipeline and the locals."""

    targetdescr = TargetDescriptor()
    locals: dict = {}

    @property
    def pipeline_class(self):
        from .language.checks import GpuxCompiler

        return GpuxCompiler


OVERLOAD_FRONT_END = OverloadFrontEnd()

dispatcher_registry[Gpux] = _OverloadDispatcherMarker
jit_registry[Gpux] = _overload_jit


def _registrations(ctx) -> int:
    """How many registrations the registries installed in *ctx* hold (they only grow).

    The registries' lists are remembered on the context itself (with how many
    registries there were): Numba makes a shallow copy of the lowering context for
    every compile (``subtarget``), which shares the registries and so the memo, and
    the memo goes with the context (a table keyed by ``id(ctx)`` kept an entry per
    compile, and could hand a stale one to a new context at a reused id)."""
    n = len(ctx._registries)
    got = ctx.__dict__.get("_gpux_reg_lists")
    if got is None or got[0] != n:
        got = (n, [getattr(reg, name) for reg, loader in ctx._registries.items()
                   for name in loader.registry_items])
        ctx.__dict__["_gpux_reg_lists"] = got
    return n + sum(map(len, got[1]))


class GpuxTypingContext(TypingBaseContext):
    #: _registrations() when last refreshed: Numba refreshes before every compile
    _refreshed_at = -1
    #: the kernel language's typing context (``GpuxFunctionType`` calls type here only)
    types_device_code = True

    def __init__(self, *args, **kwargs):
        #: ``(function type, *argument types) -> signature`` of the calls typed since
        #: the last refresh that installed anything (:meth:`resolve_function_type`)
        self._typed_calls: dict = {}
        super().__init__(*args, **kwargs)

    def refresh(self):
        # A full refresh re-imports and re-installs every registry; with nothing
        # registered since the last one, it has nothing to do
        # Counted before refreshing: installing a registry can import modules that
        # register more (the builtin registry's templates refresh Numba's CPU
        # context, which imports numba.np.arraymath), and the installer may already
        # be past the lists those land in; the next refresh then installs them
        if "numba.np.arraymath" in sys.modules:  # loaded: by us, by Numba's CPU target...
            from .language import arrayaxis

            arrayaxis.register_array_math(TARGET_NAME)  # its axis= forms, before typing
        before = _registrations(self)
        if before == self._refreshed_at:
            return
        super().refresh()
        self._refreshed_at = before
        self._typed_calls = {}  # templates may have been added: type calls afresh

    def resolve_function_type(self, func, args, kws):
        # A call of a global function typed by one of Numba's own templates (an
        # operator, a math function) with the same argument types gets the same
        # signature until a registry changes, so it is looked up, not typed again: the
        # templates tried for ``x * 1.0001`` cost tens of microseconds, and each is
        # asked again by every function that has one and by the lowering of each binary
        # operator (Numba's lower_binop types it again).  Kept only where the
        # implementation's key is the function itself: an overload's or an intrinsic's
        # typing compiles and records per-signature state (its implementation, the IR it
        # inlines) on objects other contexts share, which typing must redo.  The
        # function type is shared too, so its implementation key is put back on a hit.
        if kws or type(func) is not types.Function:
            return super().resolve_function_type(func, args, kws)
        # the compile's semantics choose some signatures (math.floor's return type)
        key = (func, current_semantics(), *args)
        try:
            got = self._typed_calls.get(key)
        except TypeError:  # an unhashable argument type
            return super().resolve_function_type(func, args, kws)
        if got is not None:
            func._impl_keys[got.args] = func.typing_key
            return got
        got = super().resolve_function_type(func, args, kws)
        if got is not None and func._impl_keys.get(got.args) is func.typing_key:
            self._typed_calls[key] = got
        return got

    def load_additional_registries(self):
        from numba.core.typing import cmathdecl, enumdecl, mathdecl
        from numba.misc import literal  # noqa: F401  (literal_unroll, literally: overloads)

        from .language import typing as gpux_typing

        self.install_registry(gpux_typing.registry)
        from .language import semantics
        self.install_registry(semantics.typing_registry)
        from .language import subgroups, types as gpux_types, printing, debug
        self.install_registry(subgroups.typing_registry)
        self.install_registry(gpux_types.typing_registry)
        self.install_registry(printing.typing_registry)
        self.install_registry(debug.typing_registry)
        # memory spaces, sync, atomics, bits, cache-hinted loads and stores
        from .language import atomics, bits, cachehints, cooperative, memory, numpy_extras
        for _mod in (memory, atomics, bits, cachehints, cooperative, numpy_extras):
            self.install_registry(_mod.typing_registry)
        self.install_registry(mathdecl.registry)
        self.install_registry(cmathdecl.registry)
        # float16 operands of ufuncs and array operators, ahead of Numba's templates
        from .language import half_ufuncs
        self.install_registry(half_ufuncs.typing_registry)
        self.install_registry(_npydecl_registry())
        self.install_registry(enumdecl.registry)
        for reg in _extra_typing_registries:
            self.install_registry(reg)

    def resolve_value_type(self, val):
        if is_device_function(val):
            # a kernel called from device code compiles as a device function
            return val.device_function._numba_type_
        if isinstance(val, _CPUDispatcher):
            # a @numba.jit function called from a kernel (as numba.cuda allows):
            # its Python source is compiled as a device function -- unless it was
            # given signatures, which disable compiling it for other types (Numba's
            # and numba.cuda's rule; Numba words the error "Untyped global name ...")
            if not val._can_compile:
                raise ValueError(
                    f"using cpu function on device but its compilation is disabled: "
                    f"@numba.jit function {val.py_func.__name__!r} was given explicit "
                    f"signatures; use numba.jit without one, or numba_gpux.jit(device=True)")
            return _device_twin(val)._numba_type_
        # the registered global, which the base class returns after its typeof, without
        # what that typeof costs (benchmarks/results/costs.md), for
        # - bool(), int(), range() ...: Numba's typeof of a class gives None for these
        #   after importing numba.typed (Dict/List/Set subclass checks, a large share
        #   of a first compile: branches call bool());
        # - a module or function (``gpux``, ``gpux.grid``, ``math.sin``): Numba's
        #   typeof fails, and its cffi check on the way imports cffi and pycparser
        if (type(val) is type and val.__module__ == "builtins"
                and not issubclass(val, BaseException)) or _untypeable(val):
            ty = self._get_global_type(val)
            if ty is not None:
                return ty
        try:
            return super().resolve_value_type(val)
        except ValueError:
            if _from_numpy(val) and load_array_math():
                return super().resolve_value_type(val)
            # registered while this compile was typing: a module imported on first
            # use from kernel code (``cuda.libdevice.sincosf`` with libdevice not yet
            # imported) registers its functions after the compile's refresh
            if _registrations(self) != self._refreshed_at:
                self.refresh()
                return super().resolve_value_type(val)
            raise

    def resolve_getattr(self, typ, attr):
        # the kernel language's a.min()/a.max()/a.argmin()/a.argmax() (Numba's
        # allocate), ahead of Numba's templates for them
        got = array_method(self, typ, attr) if attr in _ARRAY_METHODS else None
        if got is None:
            got = super().resolve_getattr(typ, attr)
            if got is None and isinstance(typ, types.Array) and load_array_math():
                got = super().resolve_getattr(typ, attr)
        return got


#: Numba's typeof for values of a class that registers none
_GENERIC_TYPEOF = typeof_impl.dispatch(object)


def _untypeable(val) -> bool:
    """Whether Numba's ``typeof`` of *val* finds no type: its class registers no typeof,
    it has no ``_numba_type_``, no buffer, and it is no cffi object (none exists while
    cffi's backend is not loaded, and Numba's check of it would load cffi)."""
    if typeof_impl.dispatch(type(val)) is not _GENERIC_TYPEOF or "_cffi_backend" in sys.modules \
            or getattr(val, "_numba_type_", None) is not None \
            or isinstance(val, types.ExternalFunction):
        return False
    try:
        memoryview(val)
    except TypeError:
        return True
    return False


def _from_numpy(val) -> bool:
    return callable(val) and str(getattr(val, "__module__", None)).startswith("numpy")


#: how many times array math was loaded (0 or 1): a compile that saw it change restarts
array_math_loads = 0


def load_array_math() -> bool:
    """Numba's whole-array reductions and the like (``np.sum``, ``a.mean()``, ``np.all``
    ...; ``numba.np.arraymath``, a measurable share of a first compile:
    benchmarks/results/costs.md), loaded when typing first meets a NumPy function or an array attribute it does not know, so that
    kernels using none of them do not pay for them.  True if this call loaded them.

    Loading adds templates to globals that may already have been typed in the compile
    under way (``np.count_nonzero``: the kernel language's template, then Numba's
    too), and two Function types of one global do not unify: :func:`compile_neutral`
    therefore runs a compile again, from the start, when it saw a load."""
    global array_math_loads
    with _lock:
        if array_math_loads:
            return False
        from numba.core.target_extension import target_override
        from numba.np import arraymath  # noqa: F401  (registers as it loads)

        with target_override(TARGET_NAME):
            typing_context().refresh()
            target_context().refresh()
        array_math_loads += 1
        return True


class _ArraysOnly:
    """Mixed into NumPy's array-operator templates: scalar operands return None at
    once.  The template itself returns None for them too, but only after matching
    a ufunc loop (and, the first time, importing every ufunc implementation):
    per scalar ``+``/``*``/``<`` of a kernel."""

    def generic(self, args, kws):
        for a in args:
            if isinstance(a, types.Optional):
                a = a.type
            if isinstance(a, types.ArrayCompatible):
                return super().generic(args, kws)
        return None


_npydecl = None


def _npydecl_registry():
    """``numba.core.typing.npydecl.registry`` with the array operators' templates
    (``operator.add`` & co. on arrays) behind :class:`_ArraysOnly`."""
    global _npydecl
    if _npydecl is None:
        from numba.core.typing import npydecl
        from numba.core.typing.templates import Registry

        src = npydecl.registry
        op = npydecl.NumpyRulesArrayOperator  # (an ABC: issubclass would be slow)
        reg = Registry()
        reg.functions = src.functions  # shared: the registry is complete once imported
        reg.attributes = src.attributes
        for gv, gty in src.globals:
            if type(gty) is types.Function and any(op in t.__mro__ for t in gty.templates):
                gty = types.Function([
                    type(t.__name__, (_ArraysOnly, t), {}) if op in t.__mro__ else t
                    for t in gty.templates])
            reg.globals.append((gv, gty))
        _npydecl = reg
    return _npydecl


from numba.core.dispatcher import Dispatcher as _CPUDispatcher  # noqa: E402

_twins: dict = {}


def _device_twin(dispatcher):
    """The device function compiled from a ``@numba.jit`` function's Python source."""
    twin = _twins.get(dispatcher)
    if twin is None:
        twin = _twins[dispatcher] = make_device_function(dispatcher.py_func)
    return twin


class GpuxTargetContext(BaseContext):
    implement_powi_as_math_call = True
    strict_alignment = True
    allow_dynamic_globals = False

    def __init__(self, typingctx):
        super().__init__(typingctx, TARGET_NAME)

    def init(self):
        self._codegen = NeutralCodegen(self)
        from .language.types import data_model_manager  # float16 as LLVM half

        self.data_model_manager = data_model_manager()
        #: the helpers compile_subroutine keeps, per the flags they inherit (below)
        self._helpers_by_flags: dict = {}

    def _compile_subroutine_no_cache(self, builder, impl, sig, locals=None, flags=None):
        """Numba's, with a helper (an implementation Numba compiles on its own,
        ``compile_internal``: ``**`` on integers, complex division...) compiled under the
        flags of the compile under way (its error model, semantics, fast-math) instead of
        Numba's defaults, as numba.cuda does: the default "python" error model makes a
        division by zero in a helper an exception, i.e. a kernel that stops silently,
        where the same division in the kernel's own code gives inf."""
        if flags is None:
            from numba.core.targetconfig import ConfigStack

            top = ConfigStack.top_or_none()
            if top is not None:
                flags = top.copy()
        return super()._compile_subroutine_no_cache(builder, impl, sig, locals=locals,
                                                    flags=flags)

    def compile_subroutine(self, builder, impl, sig, locals=None, flags=None, caching=True):
        # Numba keeps a helper per (code, signature, error model): one kept per what it
        # inherits besides, so that kernels of different semantics never share one
        from numba.core.targetconfig import ConfigStack

        top = ConfigStack.top_or_none() if flags is None else flags
        fastmath = getattr(top, "fastmath", None)
        key = (getattr(top, "gpux_semantics", None),
               frozenset(getattr(fastmath, "flags", ()) or ()),
               bool(getattr(top, "boundscheck", False)),
               bool(getattr(top, "debuginfo", False)))
        kept = self.cached_internal_func
        self.cached_internal_func = self._helpers_by_flags.setdefault(key, {})
        try:
            return super().compile_subroutine(builder, impl, sig, locals=locals, flags=flags,
                                              caching=caching)
        finally:
            self.cached_internal_func = kept

    def post_lowering(self, mod, library):
        """``fastmath=True``: the fast-math flags on every floating-point instruction,
        as Numba's CPU target writes them (without them the optimizer may not
        reassociate, and source targets keep ``a * b + c`` unfused)."""
        if self.fastmath:
            from numba.core import fastmathpass

            fastmathpass.rewrite_module(mod, self.fastmath)

    #: Numba's runtime (reference counts, allocation) is off: a compile whose code makes
    #: arrays turns it on in its own copy of the context (language/heap.py)
    enable_nrt = False

    @property
    def nrt(self):
        from .language.heap import device_runtime_class

        return device_runtime_class()(self, self.enable_nrt)

    _refreshing = False
    #: _registrations() of both contexts when last refreshed
    _refreshed_at = None

    def refresh(self):
        # Numba's @overload templates call the current target's refresh() once
        # each while the typing registries install (templates._get_target_registry),
        # i.e. from inside this refresh: a full refresh per template, most of the
        # context's build time.  The nested calls only need the builtin
        # registry installed, which it already is; what the templates register
        # meanwhile is picked up by the install after the typing refresh.
        # Numba also refreshes on every lowering look-up that misses (get_function,
        # e.g. once per array struct made) and before every compile: with nothing
        # registered since the last refresh those are no-ops.
        if self._refreshing:
            return
        if self._refreshed_at is not None and self._refreshed_at == (
                _registrations(self), _registrations(self.typing_context)):
            return
        self._refreshing = True
        try:
            super().refresh()
            self.install_registry(_builtin_lowering_registry())
            # after Numba's builtins: for the same signature the later is chosen
            from .language import numpy_extras
            self.install_registry(numpy_extras.superseding_registry)
            from .language import arraysort  # sorts without Numba's list-based stack

            self.install_registry(arraysort.superseding_registry)
            from .language import arrayaxis  # axis= forms without Python strings or sets

            self.install_registry(arrayaxis.superseding_registry)
            from .language import lowering as gpux_lowering  # range() loops that do not wrap

            self.install_registry(gpux_lowering.superseding_registry)
            from .language import semantics  # shifts by the width or more: defined

            self.install_registry(semantics.superseding_registry)
            self._refreshed_at = (_registrations(self), _registrations(self.typing_context))
        finally:
            self._refreshing = False

    def load_additional_registries(self):
        # Implementations Numba registers by import into its builtin registry
        # (installed by BaseContext.refresh) -- only what kernels need.
        from numba.cpython import (  # noqa: F401
            builtins, charseq, enumimpl, iterators, listobj, numbers, rangeobj, slicing,
            tupleobj,
        )  # (listobj: `x in (2, 3)` and other sequence operations on tuples)
        from numba.np import arrayobj, npyimpl  # noqa: F401

        # NumPy ufuncs on arrays (np.sin(x, out)): elementwise loops over the
        # scalar kernels, which lower through the kernel language's math
        self.install_registry(npyimpl.registry)

        from .language import lowering as gpux_lowering, reductions

        self.install_registry(gpux_lowering.registry)
        self.install_registry(reductions.lowering_registry)
        from .language import semantics
        self.install_registry(semantics.lowering_registry)
        from .language import subgroups, types as gpux_types, printing, debug
        self.install_registry(subgroups.lowering_registry)
        self.install_registry(gpux_types.lowering_registry)
        self.install_registry(printing.lowering_registry)
        self.install_registry(debug.lowering_registry)
        from .language import atomics, bits, cachehints, cooperative, memory, numpy_extras
        for _mod in (memory, atomics, bits, cachehints, cooperative, numpy_extras):
            self.install_registry(_mod.lowering_registry)
        from .language import half_ufuncs
        self.install_registry(half_ufuncs.lowering_registry)
        for reg in _extra_lowering_registries:
            self.install_registry(reg)

    def get_getattr(self, typ, attr):
        impl = super().get_getattr(typ, attr)
        if impl is None and isinstance(typ, types.Module):
            # a module's function or submodule (a dummy value): Numba lowers it
            # nowhere, but the builtin getattr(module, "name") calls the result
            def impl(context, builder, typ, val, attr):
                return context.get_dummy_value()
        return impl

    def get_ufunc_info(self, ufunc_key):
        """The scalar loops of a NumPy ufunc, for ufuncs on arrays in kernels (and on
        scalars): Numba's, with the kernel language's where it has its own
        (``lowering.UFUNC_LOOPS``)."""
        from numba.np import ufunc_db

        from .language.lowering import UFUNC_LOOPS

        loops = ufunc_db.get_ufunc_info(ufunc_key)
        ours = UFUNC_LOOPS.get(ufunc_key)
        return {**loops, **ours} if ours else loops

    @property
    def nonconst_module_attrs(self):
        # thread_idx.x and friends are values read at run time, not module constants
        from .language import stubs

        dims = (stubs.thread_idx, stubs.block_idx, stubs.block_dim, stubs.grid_dim)
        return tuple((types.Module(s), a) for s in dims for a in "xyz") + _extra_nonconst

    def make_constant_array(self, builder, typ, ary):
        # global NumPy arrays go to constant memory (language/memory.py)
        from .language.memory import make_constant_array

        return make_constant_array(self, builder, typ, ary)

    # llvmlite answers each size/alignment question by printing and parsing a
    # module that holds one global of the type (benchmarks/results/costs.md); lowering an array
    # access asks several times per kernel.  The data layout is fixed (neutral),
    # so answers are kept per type text.  Named struct types are not
    # kept: their text does not say what their body is.
    _abi_sizes: dict = {}
    _abi_aligns: dict = {}

    @staticmethod
    def _abi_memo(memo: dict, ty, compute):
        if isinstance(ty, ir.IdentifiedStructType):
            return compute(ty)
        key = str(ty)
        n = memo.get(key)
        if n is None:
            n = memo[key] = compute(ty)
        return n

    def get_abi_sizeof(self, ty):
        return self._abi_memo(self._abi_sizes, ty, super().get_abi_sizeof)

    def get_abi_alignment(self, ty):
        return self._abi_memo(self._abi_aligns, ty, super().get_abi_alignment)

    def codegen(self):
        return self._codegen

    @property
    def target_data(self):
        return self._codegen.target_data

    @property
    def call_conv(self):
        from .language.debug import GpuxCallConv  # process-wide user exception ids

        return GpuxCallConv(self)

    def create_module(self, name):
        return self._codegen.create_ir_module(name)

    def mangler(self, name, argtypes, *, abi_tags=(), uid=None):
        from numba.core.itanium_mangler import mangle

        return mangle(name, argtypes, abi_tags=abi_tags, uid=uid)

    def get_executable(self, library, fndesc, env):
        raise NotImplementedError("GPU functions are never executed on the host")


def _builtin_lowering_registry():
    from numba.core.imputils import builtin_registry

    return builtin_registry


# Registries added by extensions (overlay typing etc.) before the context is built.
_extra_typing_registries: list = []
_extra_lowering_registries: list = []

_extra_nonconst: tuple = ()
_lock = threading.RLock()
_typing: GpuxTypingContext | None = None
_target: GpuxTargetContext | None = None


_ready = False


def _build():
    # Refresh under this target: Numba's @overload templates, instantiated while
    # registries install, look up "the current target's" lowering context
    # (templates._get_target_registry) and filter registrations by target.  Under
    # the default target that builds (and re-refreshes, once per template) the
    # whole CPU context: most of a first compile's time.  The contexts
    # are published before the refresh so those re-entrant look-ups find them.
    global _typing, _target, _ready
    with _lock:
        if _ready or _target is not None:  # built, or being built by this thread
            return
        from numba.core.target_extension import target_override

        from .language import arrayaxis, heap, reductions

        reductions.register(TARGET_NAME)  # np.min/max & co. (Numba's allocate)
        # broadcast_shapes; the axis= forms when array math loads (typing's refresh)
        arrayaxis.register(TARGET_NAME)
        heap.register(TARGET_NAME)  # Array._allocate: arrays that kernels make
        t = GpuxTypingContext()
        c = GpuxTargetContext(t)
        _typing, _target = t, c
        try:
            with target_override(TARGET_NAME):
                c.refresh()
        except BaseException:
            _typing = _target = None
            raise
        _ready = True


def load_language_modules() -> None:
    """Import the kernel-language modules the shared context installs, without building
    it: they fill the shared overlay registry as they load, so a target's overlay
    digest read after this is the one the built context gives (the disk cache's
    index keys code this way before anything is typed)."""
    from .language import (  # noqa: F401
        atomics, bits, cooperative, debug, heap, lowering, memory, printing, subgroups,
        types as gpux_types, typing as gpux_typing,
    )


def typing_context() -> GpuxTypingContext:
    if not _ready:
        _build()
    return _typing


def target_context() -> GpuxTargetContext:
    if not _ready:
        _build()
    return _target


def add_registries(typing_registry=None, lowering_registry=None, nonconst_attrs=()) -> None:
    """Install extension registries into the shared context (now, or when it is built).

    *nonconst_attrs*: ``(types.Module(obj), "attr")`` pairs read at run time in a
    kernel (lowered by a ``lower_getattr``), not folded as module constants.
    """
    global _extra_nonconst
    with _lock:
        _extra_nonconst = _extra_nonconst + tuple(nonconst_attrs)
        if typing_registry is not None:
            _extra_typing_registries.append(typing_registry)
            if _typing is not None:
                _typing.install_registry(typing_registry)
        if lowering_registry is not None:
            _extra_lowering_registries.append(lowering_registry)
            if _target is not None:
                _target.install_registry(lowering_registry)


_ = types  # re-exported for extensions that build types against this context
