"""Per-signature launch shims over one generic launch path.

A launch computes the argument types (cheap for device arrays, which carry
their Numba type), does one dictionary lookup to find the shim for
(types, device), and calls it.  The shim is a small generated function that
flattens the arguments into the kernel ABI in the form the device's runtime
declares (``flatten.py``, the one place launch code is generated).  Everything
else (limits, the driver call) is :func:`generic_launch`, shared by all
kernels, and the runtime's ``launch`` (or the launcher its ``prepare``
returned), which only calls the driver.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import warnings
from collections import OrderedDict

import numpy as np
from numba.core import types
from numba.core.errors import NumbaPerformanceWarning

from . import abi
from .abi import NO_FACTS, LaunchFacts
from . import cache as _cache
from . import devices as _devices
from . import lanelaunch as _lanes
from . import overlays as _overlays
# (_typeof is imported from here by the benchmarks)
from .argtypes import (_FAST_TYPES, _PLAIN_ARGS, _typeof, argument_types, caller_location,
                       check_conversions, int_positions, int_wrapper, layout_stride_facts,
                       stride_facts)
from .errors import GpuxUserError, LaunchError, LaunchTypeError, format_loc
from .flatten import _array_flat, _build_flatten
from .language.memory import static_shared_bytes
from .launchkeys import I64_MAX as _I64_MAX, I64_MIN as _I64_MIN, enter_launch_key
from .limits import check_config, check_static_shared
from .memory import (DeviceArray, HostArg, device_array, device_array_like, from_foreign,
                     to_device)

__all__ = ["bind_arguments", "launch", "generic_launch", "Shim", "NumpyArgumentWarning",
           "cooperative_blocks", "shim_of"]


class NumpyArgumentWarning(NumbaPerformanceWarning, UserWarning):
    """A host array was passed to a kernel and copied both ways (a performance warning
    in Numba's sense: filters for ``NumbaPerformanceWarning`` apply to it)."""


_warned_numpy = False

class Shim:
    """Flattens one argument signature into the kernel ABI and remembers the driver kernel."""

    __slots__ = ("kernel", "flatten", "host_arrays", "device", "argtypes", "nflat", "errors",
                 "prints", "epoch", "checked", "keepalive", "launch", "static_shared", "name",
                 "program", "grid_sync", "cooperative", "narrow_ids", "heap", "int_positions",
                 "negative", "nonnegative", "facts", "widen", "wide")

    def __init__(self, kernel, flatten, host_arrays, device, argtypes, nflat, errors=None,
                 prints=False, launch=None, static_shared=0, name="kernel", grid_sync=False,
                 narrow_ids=False, heap=None):
        #: the target computes the kernel's global indices in 32 bits (the artifact's
        #: info ``global_ids_32bit``): a launch of 2**32 work-items or more along a
        #: dimension is refused before anything runs
        self.narrow_ids = narrow_ids
        #: debug kernels and kernels that synchronize their grid: the hidden buffer
        #: (language/debug.py); else None
        self.errors = errors
        #: the kernel synchronizes its grid (language/cooperative.py): a cooperative launch,
        #: of at most the blocks the device runs at once
        self.grid_sync = grid_sync
        #: (block threads, dynamic shared bytes) -> the most blocks of a cooperative
        #: launch (``Runtime.cooperative_groups``)
        self.cooperative: dict = {}
        #: the kernel calls print(): flush the device's output after each launch
        self.prints = prints
        self.kernel = kernel
        self.flatten = flatten
        self.host_arrays = host_arrays
        self.device = device
        self.argtypes = argtypes
        self.nflat = nflat
        #: overlay registries' change count when built: an overlay added later
        #: may change the kernel's code, so the shim is rebuilt (overlays.py)
        self.epoch = _overlays.epoch
        #: a kernel that makes arrays: its heap (language/heap.py's HeapBuffer), else None
        self.heap = heap
        #: launched through language/debug.py's checked_launch
        self.checked = errors is not None or bool(prints) or heap is not None
        self.keepalive = None
        #: bytes of the kernel's static shared arrays (checked with the dynamic ones)
        self.static_shared = static_shared
        #: the kernel's name, for errors
        self.name = name
        #: the built program the kernel comes from, kept alive with the shim (launch._load)
        self.program = None
        #: ``launch(griddim, blockdim, flat_args, shared_bytes, queue)``: the runtime's
        #: launcher from ``prepare``, else its ``launch`` bound to this kernel
        self.launch = launch if launch is not None else functools.partial(
            device.runtime.launch, kernel)
        #: ``Target.int_argument_facts``: the int64 parameters given Python ints, whose
        #: signs pick the shim (``negative``: any < 0, ``nonnegative``: all >= 0, whose
        #: code has the fact; None until a launch needs it); () and self: no choice
        self.int_positions: tuple = ()
        self.negative = self.nonnegative = self
        #: what the launch told the code (abi.LaunchFacts)
        self.facts = NO_FACTS
        #: code with 32-bit global indices (``narrow_ids``): ``widen()`` builds the shim of
        #: the code for launches of 2**32 work-items or more along a dimension, kept in
        #: ``wide`` once built
        self.widen = None
        self.wide = None


_shim_lock = threading.Lock()


class LaunchUnderWay:
    """The launch that is compiling its kernel for new argument types, as the compile
    sees it (:func:`current_launch`): the kernel object, its configuration (griddim
    and blockdim as 3-tuples, the queue, the dynamic shared bytes) and the arguments
    as the launch was given them."""

    __slots__ = ("dispatcher", "griddim", "blockdim", "queue", "shared_bytes", "args",
                 "argtypes")

    def __init__(self, dispatcher, cfg, args, argtypes=None):
        self.dispatcher = dispatcher
        self.griddim, self.blockdim = cfg.griddim, cfg.blockdim
        self.queue, self.shared_bytes = cfg.queue, cfg.shared_bytes
        self.args = tuple(args)
        #: the signature the compile is for
        self.argtypes = argtypes

    def __repr__(self):
        return (f"<launch of {self.dispatcher.__name__}[{self.griddim}, {self.blockdim}, "
                f"shared {self.shared_bytes}] compiling>")


_under_way = threading.local()


def current_launch() -> LaunchUnderWay | None:
    """The launch whose compile runs on this thread (typing, rewrites, lowering and
    code generation for argument types the kernel had not seen), else None.  Code
    whose result depends on the configuration marks the kernel through the kernel
    class's extension point for it (the facade's ``mark_launch_config_sensitive()``)."""
    return getattr(_under_way, "launch", None)


def _shim_for(dispatcher, argtypes, device, cfg=None, args=(), strides=()) -> Shim:
    """The shim for a launch whose arguments have *argtypes*, compiled for the
    signature they match (``match_signature``).  Integers that convert to a
    narrower or differently signed type wrap around, as a C cast (and numba.cuda).
    With the launch's *cfg* and *args*: a compile runs through the kernel's
    ``_compile_for_args`` with the launch visible to it (:func:`current_launch`).
    *strides*: the arrays' stride facts (argtypes.stride_facts) the code may use."""
    compiled = dispatcher.match_signature(argtypes)
    ints = int_positions(args, argtypes, compiled) if device.target.int_argument_facts else ()
    nonneg = () if any(args[i] < 0 for i in ints) else ints
    if compiled != argtypes:  # contiguous arrays a layout-"A" signature takes
        check_conversions(dispatcher, argtypes, compiled)
        strides = tuple(sorted(set(strides) | set(layout_stride_facts(argtypes, compiled,
                                                                      device.target))))
    shim = _build_shim(dispatcher, compiled, device, cfg, args, LaunchFacts(nonneg, strides))
    if ints:  # the sibling for the other signs: built when a launch needs it
        shim.int_positions = ints
        shim.negative, shim.nonnegative = (None, shim) if nonneg else (shim, None)
    if compiled == argtypes:
        return shim
    wraps = {i: int_wrapper(t) for i, (a, t) in enumerate(zip(argtypes, compiled))
             if a != t and isinstance(a, types.Integer) and isinstance(t, types.Integer)}
    if not wraps:
        return shim
    import copy

    inner = shim.flatten

    def flatten(args):
        return inner([wraps[i](a) if i in wraps else a for i, a in enumerate(args)])

    shim = copy.copy(shim)
    shim.flatten = flatten
    shim.negative = shim if shim.negative is not None else None
    shim.nonnegative = shim if shim.nonnegative is not None else None
    return shim


def shim_of(dispatcher, argtypes, device, cfg=None, args=(), strides=()) -> Shim:
    """The kernel's shim for *argtypes* (and the arrays' stride facts *strides*) on
    *device*: the one kept, or a new one (kept) where there is none or the overlays
    changed since it was made."""
    key = (argtypes, device, strides)
    shim = dispatcher._shims.get(key)
    if shim is None or shim.epoch != _overlays.epoch:
        shim = dispatcher._shims[key] = _shim_for(dispatcher, argtypes, device, cfg, args,
                                                  strides)
    return shim


def _int_variant(dispatcher, shim, args, argtypes, device, cfg) -> Shim:
    """*shim* or its sibling for the signs of *args* (``Shim.int_positions``), the
    sibling built on the first launch that needs it."""
    if not shim.int_positions:
        return shim
    neg = any(args[i] < 0 for i in shim.int_positions)
    got = shim.negative if neg else shim.nonnegative
    if got is None:
        got = _shim_for(dispatcher, argtypes, device, cfg, args, shim.facts.strides)
        if neg:
            shim.negative, got.nonnegative = got, shim
        else:
            shim.nonnegative, got.negative = got, shim
    return got


def _compile_for_launch(dispatcher, argtypes, cfg, args) -> None:
    """Type and lower *dispatcher* for *argtypes* through its ``_compile_for_args``,
    with the launch visible to the compile (:func:`current_launch`)."""
    prev = getattr(_under_way, "launch", None)
    _under_way.launch = LaunchUnderWay(dispatcher, cfg, args, argtypes)
    try:
        dispatcher._compile_for_args(*args)
    finally:
        _under_way.launch = prev


def _shared_declarations(dispatcher, argtypes, total: int) -> str:
    """Where the kernel declares its static shared arrays, for an error about their
    size: each ``shared.array`` line with its bytes ('' if none is found)."""
    # (imported on this error path: importing the package leaves language.checks unloaded)
    from .language.checks import shared_array_sites

    try:
        sites = shared_array_sites(dispatcher.neutral(tuple(argtypes)).cres)
    except Exception:  # noqa: BLE001 - the error is raised with or without the lines
        return ""
    if not sites:
        return ""
    lines = [f"\n\n{'its shared array is' if len(sites) == 1 else 'its shared arrays are'} "
             f"declared at:"]
    for nbytes, loc in sites:
        lines.append(f"{format_loc(loc)}\n    ({nbytes} bytes)")
    rest = total - sum(n for n, _ in sites)
    if rest > 0:
        lines.append(f"and {rest} bytes in the device functions it calls")
    return "\n".join(lines)


def _build_shim(dispatcher, argtypes, device, cfg=None, args=(),
                facts: LaunchFacts = NO_FACTS, exchange: bool = True,
                rows: bool = True) -> Shim:
    spec = getattr(dispatcher, "_specialized", None)
    if spec is not None and tuple(spec) != tuple(argtypes):
        raise GpuxUserError(f"{dispatcher.__name__} was specialized for {spec}; got {argtypes}")
    names = list(dispatcher._pysig.parameters)
    for i, t in enumerate(argtypes):  # types no kernel takes: an error naming the argument
        try:
            abi.flatten_type(t, f"kernel {dispatcher.__name__}: argument {i} "
                                f"({names[i] if i < len(names) else '*args'})")
        except GpuxUserError as e:  # a launch's argument: a LaunchTypeError, before it runs
            where = caller_location()
            raise LaunchTypeError(f"{e}\n\n{where}" if where else str(e)) from None
    # read-only host arrays stay read-only: a kernel writing one fails typing, naming the line
    dev_types = tuple(argtypes)
    host_arrays = []
    # the disk cache's index (cache=True) knows what launching needs without typing
    art, facts = _lanes.indexed_code(dispatcher, dev_types, device, cfg, facts, exchange,
                                     rows) if dispatcher.cache else (None, facts)
    # (a kernel that captures device arrays is never in the index: the key cannot see
    # into them, see cachekey.py, so a hit needs no typing to know there are none)
    from_index = art is not None
    if not from_index and cfg is not None and tuple(argtypes) not in dispatcher._neutral:
        _compile_for_launch(dispatcher, tuple(argtypes), cfg, args)
    # limits the device cannot meet are errors before anything is built
    static_shared = art.info.get("static_shared_bytes") if art is not None else None
    if static_shared is None:
        static_shared = static_shared_bytes(dispatcher.kernel_ir(dev_types)[1])
    try:
        check_static_shared(device, dispatcher.__name__, static_shared)
    except LaunchError as e:
        raise LaunchError(f"{e}{_shared_declarations(dispatcher, dev_types, static_shared)}") \
            from None
    # what launching needs to know of the kernel (recorded by the disk cache: no typing on
    # a hit): a grid barrier, print(), arrays it makes
    known = art.info if art is not None else {}
    grid_sync = known.get("grid_sync")
    if grid_sync is None:
        from .language.cooperative import uses_grid_sync

        grid_sync = uses_grid_sync(dispatcher.kernel_ir(dev_types)[1])
    prints = known.get("uses_print")
    if prints is None:
        from .language.printing import uses_print

        prints = uses_print(dispatcher.kernel_ir(dev_types)[1])
    heap = known.get("heap")
    if heap is None:
        from .language.heap import uses_heap

        heap = uses_heap(dispatcher.kernel_ir(dev_types)[1])
    # a kernel whose accesses run along dimension 1 (lanelaunch.py): its shim launches
    # the exchanged code or this one, whichever a launch needs, the other built when
    # first needed; the code this launch needs is built first.  Kernels launched through
    # the checked path (debug, a grid barrier, print, arrays made) keep their dimensions
    checked = dispatcher.options.debug or grid_sync or prints or heap
    # warps in lockstep (stages._warp_lockstep): in every launch (never exchanged), or
    # only in blocks of whole rows of warps (the code for those blocks, chosen as the
    # exchanged code is)
    step = _lanes.lockstep(dispatcher, dev_types, device, art) if exchange or rows else None
    lanes = exchange and step not in ("always", "blocks") and (facts.lanes or (
        not checked and _lanes.wants_exchange(dispatcher, dev_types, device, art, facts)))
    width = dispatcher.options.subgroup_size if rows and step in ("rows", "blocks") else None
    # warp operations, or lanes that pass values in step: blocks that are not rows of
    # whole warps run as one row (with the warps in lockstep for the second)
    ops = (width if step == "blocks" else _lanes.warp_ops(dispatcher, dev_types, device, art)) \
        if rows else None
    if art is None and cfg is not None:
        block = _lanes.flat_block(device, cfg.blockdim, ops)
        if block:
            facts = facts._replace(block=block, warp_rows=bool(width), lanes=False)
        elif width and _lanes.whole_warp_rows(cfg.blockdim, width):
            facts = facts._replace(warp_rows=True, lanes=False)
        elif lanes and _lanes.exchangeable(device, cfg.griddim, cfg.blockdim):
            facts = facts._replace(lanes=True)
    if art is None:
        art = dispatcher.code_for(dev_types, device.target, facts)
    program = _load(device, art)
    kernel = device.runtime.kernel(program, art.kernels[0])
    carveout = dispatcher.options.shared_memory_carveout
    if carveout != -1:
        device.runtime.set_shared_memory_carveout(kernel, carveout)  # a hint: where taken
    captured = () if from_index else dispatcher.neutral(dev_types).captured
    if captured:  # device arrays the kernel reads from globals: hidden arguments
        for a in captured:
            if a._alloc.device is not device:
                _wrong_device(dispatcher, "a device array it reads from a global variable",
                              a, device)
        inner, params = _build_flatten(dev_types + tuple(a._numba_type_ for a in captured),
                                       device)

        def flatten(args, inner=inner, captured=captured):
            return inner(tuple(args) + captured)
    else:
        flatten, params = _build_flatten(dev_types, device)
    errors = None
    if dispatcher.options.debug or grid_sync:
        from .language.debug import ErrorBuffer, buffer_slots

        errors = ErrorBuffer(device_array(buffer_slots(grid_sync), np.int32, device=device),
                             dispatcher.__name__, grid_sync, dispatcher.device_exception)
        params.append(("buffer", None))
    if heap:
        params.append(("buffer", None))
    launcher = device.runtime.prepare(kernel, params)
    shim = Shim(kernel, flatten, host_arrays, device, dev_types, len(params), errors,
                prints, launcher, static_shared, dispatcher.__name__, grid_sync,
                bool(art.info.get("global_ids_32bit")),
                _heap_buffer(device, dispatcher.__name__) if heap else None)
    shim.program = program
    shim.facts = facts
    if shim.narrow_ids and not facts.wide:
        shim.widen = functools.partial(_build_shim, dispatcher, argtypes, device,
                                       facts=facts._replace(wide=True, lanes=False,
                                                            warp_rows=False),
                                       exchange=False)
    if lanes or width or ops:
        def build(ex, warp_rows, block):
            return _build_shim(dispatcher, argtypes, device,
                               facts=facts._replace(lanes=ex, warp_rows=warp_rows, block=block),
                               exchange=False, rows=False)

        _lanes.launch_variants(shim, lanes, width, build, ops)
    return shim


def _heap_buffer(device, name: str):
    """The heap of a kernel that makes arrays, on *device* (language/heap.py)."""
    from .config import heap_size
    from .language.heap import HeapBuffer

    size = heap_size()
    own = device.target.device_malloc
    if own:
        device.runtime.set_heap_size(size)
    parallel = int(device.limits.get("compute_units", 1) or 1)
    return HeapBuffer(lambda n: device_array(n, np.uint8, device=device), name, size, own,
                      parallel, device.target.families)


#: built programs shared by the kernels whose finished code is one artifact (a cache
#: hit gives another kernel object the same artifact): a bounded LRU.  A program
#: lives as long as a shim holds it (``Shim.program``) or while it is among the
#: last :data:`PROGRAM_LRU` built, so dropped kernels give their programs back.
_programs: OrderedDict = OrderedDict()
PROGRAM_LRU = 32
_programs_lock = threading.Lock()


def _load(device, art):
    key = (id(device), id(art))  # the entry holds art (and device), so the ids stay unique
    with _programs_lock:
        got = _programs.get(key)
        if got is not None:
            _programs.move_to_end(key)
            return got[0]
    prog = _cache.load_program(device, art)  # the driver's program, from disk if kept
    with _programs_lock:
        _programs[key] = (prog, art, device)
        while len(_programs) > PROGRAM_LRU:
            _programs.popitem(last=False)
    return prog


def launch(dispatcher, cfg, args):
    """Launch *dispatcher* with the configuration *cfg* on *args*."""
    return launch_call(cfg, *args)


def bind_arguments(dispatcher, args: tuple, kwargs: dict) -> tuple:
    """The positional arguments of a launch given *args* and keywords *kwargs*, with
    the kernel's Python defaults filled in and the values of a ``*args`` parameter
    packed into one tuple (one argument per parameter); a LaunchError (before
    anything runs) for missing, unknown or repeated arguments."""
    pysig = dispatcher._pysig
    try:
        bound = pysig.bind(*args, **kwargs)
    except TypeError as e:
        # (a TypeError, as Python's for a call with the wrong arguments, and numba.cuda's)
        raise LaunchTypeError(f"kernel {dispatcher.__name__}{pysig} takes "
                              f"{dispatcher._nparams} argument(s): {e}") from None
    bound.apply_defaults()
    if bound.kwargs:
        raise LaunchError(f"kernel {dispatcher.__name__}{pysig}: keyword-only parameters "
                          f"({', '.join(bound.kwargs)}) are not supported in kernels")
    if getattr(dispatcher, "_star_index", None) is None:
        return bound.args
    return tuple(bound.arguments[name] for name, p in pysig.parameters.items()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL))


def launch_call(cfg, *args, **kwargs) -> None:
    """``LaunchConfig.__call__``: launch ``cfg.dispatcher`` on *args* (and keyword
    arguments; the kernel's Python defaults fill in what is not given).

    The steady state is two dictionary hits from the arguments' launch key to
    the shim, its flatten function and the driver call; a new signature, host
    or foreign arrays and tuples take :func:`_launch_generic`.
    """
    if kwargs:
        args = bind_arguments(cfg.dispatcher, args, kwargs)
    device = cfg.device or (None if _devices._scoped else _devices._selected) \
        or _devices.default_device()
    key = cfg.keyfn(device, args)  # None for another argument count (defaults, *args)
    if key is None:
        args = bind_arguments(cfg.dispatcher, args, {})
        key = cfg.keyfn(device, args)
    entry = cfg.launch_keys.get(key if key is not None else (device, *map(type, args)))
    if entry is None:
        return _launch_generic(cfg.dispatcher, cfg, args, device)
    shim = entry.only  # no arrays: the Python types fixed the signature
    if shim is None:
        if entry.pick is None:
            shim = entry.shims.get(args[entry.one]._launch_key_ if entry.one >= 0 else ())
        else:
            shim = entry.shims.get(entry.pick(args))
    if shim is None or shim.epoch != _overlays.epoch:
        return _launch_generic(cfg.dispatcher, cfg, args, device)
    if entry.ints:
        neg = False
        for i in entry.ints:
            v = args[i]
            if not _I64_MIN <= v <= _I64_MAX:
                return _launch_generic(cfg.dispatcher, cfg, args, device)
            if v < 0:
                neg = True
        shim = shim.negative if neg else shim.nonnegative  # Shim.int_positions
        if shim is None:
            return _launch_generic(cfg.dispatcher, cfg, args, device)
    if cfg.checked is not device:
        shim = _check_launch(cfg, shim, device)
    # (shims launched through language/debug.py's checked_launch have no launch key)
    shim.launch(cfg.griddim, cfg.blockdim, shim.flatten(args) if args else [],
                cfg.shared_bytes, cfg.queue)
    return None


def _check_devices(dispatcher, args, device, where: str = "argument") -> None:
    """A device array of another device than the launch's is a LaunchError, before
    anything runs (its memory is not this device's)."""
    for i, a in enumerate(args):
        if isinstance(a, DeviceArray):
            if a._alloc.device is not device:
                _wrong_device(dispatcher, f"{where} {i}", a, device)
        elif type(a) is tuple:
            _check_devices(dispatcher, a, device, f"{where} {i}, item")


def _wrong_device(dispatcher, what: str, a, device):
    raise LaunchError(
        f"kernel {dispatcher.__name__}: {what} is a device array on {a._alloc.device.spec}, "
        f"but the kernel launches on {device.spec}; copy it with "
        f"numba_gpux.to_device(array, device={device.spec!r}) or launch on its device "
        f"(kernel[griddim, blockdim, array.device])")


def _launch_generic(dispatcher, cfg, args, device):
    dispatcher = dispatcher.launch_variant(cfg)  # the kernel object whose code is for cfg
    if len(args) != dispatcher._nparams:
        raise LaunchTypeError(f"kernel {dispatcher.__name__} takes {dispatcher._nparams} "
                              f"argument(s) but {len(args)} were given")
    callbacks = getattr(cfg, "_callbacks", None)
    if callbacks:  # LaunchConfig.pre_launch_callbacks
        for callback in tuple(callbacks):
            callback(dispatcher, cfg)
    prepared = dispatcher.prepare_launch(cfg, args)
    if prepared is not None:
        return _launch_prepared(dispatcher, cfg, device, *prepared)
    return _launch_arguments(dispatcher, cfg, args, device)


def _launch_prepared(dispatcher, cfg, device, args, after):
    """A launch of the arguments the kernel's ``prepare_launch`` gave; the callables
    in *after* run after it."""
    _launch_arguments(dispatcher, cfg, tuple(args), device, enter_key=False)
    for callback in after:
        callback()
    return None


def _launch_arguments(dispatcher, cfg, args, device, enter_key: bool = True):
    _check_devices(dispatcher, args, device)
    host = None
    for i, a in enumerate(args):
        if type(a) is not np.ndarray and hasattr(type(a), "_gpux_device_view_"):
            # a host array in memory the device addresses (numba_gpux.cuda's mapped and
            # managed arrays): the kernel gets a device array of that memory, no copy
            view = a._gpux_device_view_(device)
            if view is not None:
                args = list(args)
                args[i] = view
                continue
        if isinstance(a, (np.ndarray, HostArg, np.void)) or (
                isinstance(a, tuple) and _holds_host(a)):
            host = host or []
            host.append(i)
        elif type(a) not in _FAST_TYPES and not isinstance(a, _PLAIN_ARGS):
            # another library's device array, if the runtime can share its memory
            wrapped = from_foreign(a, device)
            if wrapped is not None:
                args = list(args)
                args[i] = wrapped
    if host is not None:
        return _launch_with_host_arrays(dispatcher, cfg, args, host, device)
    argtypes = argument_types(dispatcher, args)
    shim = _int_variant(dispatcher, shim_of(dispatcher, argtypes, device, cfg, args,
                                            stride_facts(args)), args, argtypes, device, cfg)
    if enter_key and dispatcher.keyed_launches:
        enter_launch_key(dispatcher, device, args, argtypes, shim)
    generic_launch(shim, cfg, shim.flatten(args))
    return None


def _holds_host(t: tuple) -> bool:
    """Whether the tuple *t* holds (also in nested tuples) a host array or record to copy."""
    return any(isinstance(x, (np.ndarray, HostArg, np.void))
               or (isinstance(x, tuple) and _holds_host(x)) for x in t)


class _DeviceRecord:
    """A NumPy structured scalar's copy on the device for one launch: the kernel gets
    a pointer to it (abi.py); ``array`` is the one-element device array holding it."""

    __slots__ = ("array", "_numba_type_", "_gpux_flat_")

    def __init__(self, array, ty):
        self.array = array
        self._numba_type_ = ty
        self._gpux_flat_ = _array_flat(array)[:2]


def _record_to_device(rec: np.void, device, queue):
    """(the record's device copy, a callable writing the device copy back into it)."""
    host = np.zeros(1, dtype=rec.dtype)
    host[0] = rec
    d = to_device(host, device=device, stream=queue)

    def copy_back():
        got = d.copy_to_host(stream=queue)[0]
        for name in rec.dtype.names:  # a record from an array is a view: its array changes
            rec[name] = got[name]

    return _DeviceRecord(d, _typeof(rec)), copy_back


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside numba_gpux, so that a warning
    names the line of the user's launch."""
    f, level = sys._getframe(1), 1
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f, level = f.f_back, level + 1
    return level


def _warn_host_arrays(dispatcher) -> None:
    """The warning that a launch copies host arrays: once per process, or as the
    kernel's ``host_copy_warning()`` says (its message for this launch, or None)."""
    global _warned_numpy
    custom = getattr(dispatcher, "host_copy_warning", None)
    if custom is not None:
        message = custom()
    elif _warned_numpy:
        return
    else:
        _warned_numpy = True
        message = (f"kernel {dispatcher.__name__}: NumPy arrays passed to a kernel are copied "
                   f"to the device and back after every launch; use numba_gpux.to_device() to "
                   f"keep data on the device")
    if message:
        warnings.warn(message, NumpyArgumentWarning, stacklevel=_user_stacklevel())


def _launch_with_host_arrays(dispatcher, cfg, args, host, device):
    if any(isinstance(args[i], np.ndarray) for i in host):
        _warn_host_arrays(dispatcher)
    given = args
    args = list(args)
    pairs = []
    backs = []  # records: their copy-backs
    readonly = []

    def on_device(h, i):
        # i: the argument's position, or None inside a tuple argument
        if isinstance(h, tuple):  # tuples (also nested) of arrays and scalars
            items = [on_device(x, None) for x in h]
            return type(h)(*items) if hasattr(h, "_fields") else tuple(items)
        if isinstance(h, np.void) and h.dtype.names:  # a record: copied in and back
            d, copy_back = _record_to_device(h, device, cfg.queue)
            backs.append(copy_back)
            return d
        if not isinstance(h, (np.ndarray, HostArg)):
            return h
        where = f"argument {i}" if i is not None else "an array in a tuple argument"
        wrapper = type(h).__name__
        copy_in = copy_out = True
        if isinstance(h, HostArg):  # In / Out / InOut say which way to copy
            h, copy_in, copy_out = h.ary, h.copy_in, h.copy_out
            if isinstance(h, tuple):
                return on_device(h, i)
            if not hasattr(h, "__array__"):  # (NumPy and device arrays have it)
                return h  # a number with a hint: passed by value, as without one
            if isinstance(h, DeviceArray):
                if h._alloc.device is not device:
                    _wrong_device(dispatcher, where, h, device)
                return h
            h = np.asarray(h)
            if copy_out and not h.flags.writeable:
                raise LaunchError(f"kernel {dispatcher.__name__}: {where} is a read-only "
                                  f"NumPy array passed as an output ({wrapper}); "
                                  f"results could not be written back to it")
        elif not h.flags.writeable:
            if i is None:  # only a top-level argument's type can say read-only
                raise LaunchError(
                    f"kernel {dispatcher.__name__}: {where} is a read-only NumPy array, "
                    f"which could not be written back; copy it with numba_gpux.to_device() "
                    f"or pass a writable array")
            # typed read-only: a kernel that writes it fails to compile, naming the line
            readonly.append(i)
            copy_out = False
        if h.dtype == object:  # (a launch's argument: a LaunchTypeError before it runs)
            raise LaunchTypeError(f"kernel {dispatcher.__name__}: {where} is a NumPy array "
                                  f"of Python objects, which cannot be passed to a kernel")
        d = (to_device(h, device=device, stream=cfg.queue) if copy_in
             else device_array_like(h, device=device))
        if copy_out:
            pairs.append((h, d))
        return d

    for i in host:
        args[i] = on_device(args[i], i)
    argtypes = argument_types(dispatcher, args)
    if readonly:
        argtypes = tuple(t.copy(readonly=True) if i in readonly else t
                         for i, t in enumerate(argtypes))
    try:
        shim = shim_of(dispatcher, argtypes, device, cfg, given, stride_facts(args))
    except Exception as e:
        if readonly and "readonly array" in str(e):
            names = list(dispatcher._pysig.parameters)
            which = ", ".join(f"{i} ({names[i]})" if i < len(names) else str(i)
                              for i in readonly)
            raise LaunchError(
                f"kernel {dispatcher.__name__} writes to a read-only NumPy array "
                f"(argument {which}); its results would be lost. Pass a writeable array "
                f"(np.array(x) copies one).\n\n{e}") from None
        raise
    shim = _int_variant(dispatcher, shim, args, argtypes, device, cfg)
    generic_launch(shim, cfg, shim.flatten(args))
    for h, d in pairs:
        if h.flags.c_contiguous or h.flags.f_contiguous:
            d.copy_to_host(h, stream=cfg.queue)
        else:
            h[...] = d.copy_to_host(stream=cfg.queue)
    for copy_back in backs:
        copy_back()
    return None


def _check_launch(cfg, shim: Shim, device) -> Shim:
    """What the device and the kernel's launch bounds allow of *cfg* (once per device),
    and the shim to launch: *shim*, or the one whose code indexes a launch of 2**32
    work-items or more along a dimension where *shim*'s computes indices in 32 bits
    (``Shim.widen``; such a configuration is checked at each launch)."""
    check_config(device, shim.name, cfg.griddim, cfg.blockdim, cfg.shared_bytes,
                 shim.static_shared)
    bound = cfg.dispatcher.options.max_threads
    bx, by, bz = cfg.blockdim
    if bound and bx * by * bz > bound:
        raise LaunchError(f"kernel {shim.name}: a block of {bx * by * bz} threads "
                          f"({bx}, {by}, {bz}) is more than its launch bound of {bound} "
                          f"threads per block (launch_bounds)")
    if any(g * b >= 1 << 32 for g, b in zip(cfg.griddim, cfg.blockdim)):
        if shim.narrow_ids:
            wide = shim.wide
            if wide is None:
                wide = shim.widen()
                wide.flatten = shim.flatten  # (the same arguments, int wraps included)
                shim.wide = wide
            shim = wide
        return shim
    cfg.checked = device
    return shim


def generic_launch(shim: Shim, cfg, flat_args) -> None:
    """The one launch path every kernel shares."""
    device = shim.device
    if cfg.checked is not device:  # each configuration is checked once per device
        shim = _check_launch(cfg, shim, device)
    if shim.checked:
        from .language.debug import checked_launch

        if shim.grid_sync:
            _check_cooperative(shim, cfg)
        return checked_launch(shim, cfg, flat_args)
    shim.launch(cfg.griddim, cfg.blockdim, flat_args, cfg.shared_bytes, cfg.queue)


# ------------------------------------------------------------------ cooperative launches
def cooperative_blocks(shim: Shim, blockdim: tuple, shared_bytes: int) -> int:
    """The most blocks of *blockdim* threads the device runs at once for *shim*'s kernel."""
    threads = 1
    for b in blockdim:
        threads *= int(b)
    key = (threads, int(shared_bytes))
    got = shim.cooperative.get(key)
    if got is None:
        got = shim.cooperative[key] = int(shim.device.runtime.cooperative_groups(
            shim.kernel, threads, int(shared_bytes)))
    return got


def _check_cooperative(shim: Shim, cfg) -> None:
    """A kernel that synchronizes its grid runs only if all its blocks run at once:
    a larger grid than the device runs at once is a LaunchError before anything runs
    (its blocks would wait forever for blocks that cannot start)."""
    gx, gy, gz = cfg.griddim
    blocks = gx * gy * gz
    limit = cooperative_blocks(shim, cfg.blockdim, cfg.shared_bytes)
    if blocks > limit:
        bx, by, bz = cfg.blockdim
        raise LaunchError(
            f"kernel {shim.name} synchronizes its grid (this_grid().sync()), so all its "
            f"blocks must run at once, and {shim.device.spec} runs at most {limit} "
            f"block(s) of {bx * by * bz} threads ({bx}, {by}, {bz}) of it at once; the grid "
            f"({gx}, {gy}, {gz}) has {blocks}.  Launch at most "
            f"kernel.max_cooperative_grid_blocks(blockdim) blocks (each may loop over "
            f"more work)")
