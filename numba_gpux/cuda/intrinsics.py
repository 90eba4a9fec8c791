"""Kernel-side names of the numba.cuda facade.

Most are the very objects of ``numba_gpux``'s kernel language (so their typing
and lowering are the shared ones).  Where numba.cuda's name has a different
shape (``shfl_sync(mask, value, lane)`` takes a mask, ``cuda.laneid`` is read
like a variable), a small device function written in the portable kernel
language, or a few lines of typing and lowering to the same portable
``__gpux_*`` intrinsics, adapts it.  Nothing here knows which target runs.

A numba.cuda name whose underlying feature numba_gpux does not have resolves
to a placeholder: using it in a kernel is a TypingError that says so.
"""

from __future__ import annotations

import math
import sys

from numba.core import types
from numba.core.errors import TypingError
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.typing.templates import AbstractTemplate, AttributeTemplate, Registry, signature

import numba_gpux as _gpux

from ..context import add_registries
from ..dispatcher import jit as _gpux_jit
from ..language import stubs as _stubs
from ..language.intrinsics import call as _call

__all__ = [
    "grid", "gridsize", "threadIdx", "blockIdx", "blockDim", "gridDim", "laneid", "warpsize",
    "shared", "local", "const", "syncthreads", "syncthreads_count", "syncthreads_and",
    "syncthreads_or", "threadfence", "threadfence_block", "threadfence_system", "syncwarp",
    "atomic", "shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "all_sync",
    "any_sync", "eq_sync", "ballot_sync", "activemask", "lanemask_lt", "match_any_sync",
    "match_all_sync", "popc", "clz", "ffs", "brev", "fma", "cbrt", "selp", "nanosleep",
    "ldca", "ldcg", "ldcs", "ldlu", "ldcv", "stcg", "stcs", "stwb", "stwt", "cg",
]

typing_registry = Registry()
lowering_registry = LoweringRegistry("numba_gpux.cuda")


def _pick(*names):
    """The first of *names* that ``numba_gpux`` exports (dotted: attribute of one)."""
    for name in names:
        obj = _gpux
        for part in name.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                break
        if obj is not None:
            return obj
    return None


# ------------------------------------------------------------------ placeholders
class Unavailable(_stubs.Stub):
    """A numba.cuda name numba_gpux does not implement (yet); typing it fails clearly."""

    def __init__(self, name: str, why: str):
        super().__init__(f"cuda.{name}", f"Not supported by numba_gpux: {why}")
        self._why = why



def _unavailable_namespace(name: str, why: str) -> Unavailable:
    """A placeholder for a namespace such as ``cuda.shared``: ``cuda.shared.array(...)``
    fails to type with the reason."""
    stub = Unavailable(name, why)
    members: dict = {}

    class MissingAttrs(AttributeTemplate):
        key = types.Module(stub)

        def generic_resolve(self, mod, attr):
            if attr not in members:
                members[attr] = _unavailable(f"{name}.{attr}", why)
            return typing_registry_global_type(members[attr])

    typing_registry.register_attr(MissingAttrs)
    typing_registry.register_global(stub, types.Module(stub))
    return stub


_missing_types: dict = {}


def typing_registry_global_type(stub):
    return _missing_types[stub]


def _unavailable(name: str, why: str) -> Unavailable:
    stub = Unavailable(name, why)

    class Missing(AbstractTemplate):
        key = stub

        def generic(self, args, kws):
            raise TypingError(f"cuda.{name} is not supported by numba_gpux: {why} "
                              f"(see docs/migration.md)")

    typing_registry.register(Missing)
    _missing_types[stub] = types.Function(Missing)
    typing_registry.register_global(stub, _missing_types[stub])
    return stub


_NOT_YET = "the portable kernel language does not provide it yet"


def _alias(name: str, *gpux_names, why: str = _NOT_YET, namespace: bool = False):
    obj = _pick(*gpux_names)
    if obj is not None:
        return obj
    return (_unavailable_namespace if namespace else _unavailable)(name, why)


def _device(fn):
    """A facade helper compiled as an inlined device function of the kernel language."""
    return _gpux_jit(device=True, inline=True)(fn)


# ------------------------------------------------------------------ indexing
grid = _stubs.grid
gridsize = _stubs.gridsize
threadIdx = _stubs.thread_idx
blockIdx = _stubs.block_idx
blockDim = _stubs.block_dim
gridDim = _stubs.grid_dim

laneid = _stubs.Stub("laneid", "cuda.laneid: this thread's lane in its warp (sub-group), int32.")
warpsize = _stubs.Stub("warpsize", "cuda.warpsize: the width of this thread's warp (sub-group); "
                                   "32 on NVIDIA, device- and kernel-dependent elsewhere.")

# ------------------------------------------------------------------ memory spaces
shared = _alias("shared", "shared", namespace=True)
local = _alias("local", "local", namespace=True)
const = _alias("const", "const", namespace=True)

# ------------------------------------------------------------------ synchronization
syncthreads = _stubs.barrier
syncthreads_count = _alias("syncthreads_count", "barrier_count", "syncthreads_count")
syncthreads_and = _alias("syncthreads_and", "barrier_and", "syncthreads_and")
syncthreads_or = _alias("syncthreads_or", "barrier_or", "syncthreads_or")
threadfence_block = _alias("threadfence_block", "fence_block", "fence.block", "threadfence_block")
threadfence = _alias("threadfence", "fence_device", "fence.device", "threadfence")
threadfence_system = _alias("threadfence_system", "fence_system", "fence.system",
                            "threadfence_system")
syncwarp = _alias("syncwarp", "subgroup.barrier", "subgroup.sync", "syncwarp")  # replaced below
nanosleep = _alias("nanosleep", "nanosleep")


class _CooperativeGroups(_stubs.Stub):
    """numba.cuda's ``cuda.cg``: ``this_grid()`` (its ``sync()`` synchronizes the whole
    grid; a kernel that calls it is launched cooperatively) and ``this_thread_block()``
    (its ``sync()`` is ``syncthreads()``): the kernel language's ``this_grid`` and
    ``this_block``."""

    def __init__(self):
        super().__init__("cg", "Cooperative groups: this_grid(), this_thread_block().")

    # looked up when used: the grid group's module brings the kernel language's
    # lowering, which importing numba_gpux.cuda does not (numba.cuda's rule too)
    @property
    def this_grid(self):
        return _gpux.this_grid

    @property
    def this_thread_block(self):
        return _gpux.this_block

    def __call__(self, *a, **k):
        raise TypeError("cuda.cg is a namespace; call cuda.cg.this_grid()")


cg = _CooperativeGroups()
typing_registry.register_global(cg, types.Module(cg))

# ------------------------------------------------------------------ atomics
# the kernel language's atomic namespace (the same stubs: ``cuda.atomic.add`` is
# ``gpux.atomic.add``), plus numba.cuda's compare-and-swap spellings
_atomic = _pick("atomic")


@_device
def _compare_and_swap(ary, old, val):
    """numba.cuda's ``atomic.compare_and_swap(ary, old, val)``: on ``ary[0]``; returns the
    old value."""
    return _atomic.cas(ary, 0, old, val)


@_device
def _compare_and_swap_element(ary, idx, old, val):
    """numba.cuda's ``atomic.compare_and_swap_element(ary, idx, old, val)``."""
    return _atomic.cas(ary, idx, old, val)


def _facade_atomic():
    from ..language.stubs import Namespace

    members = {k: v for k, v in vars(_atomic).items() if not k.startswith("_")}
    members["compare_and_swap"] = _compare_and_swap
    members["compare_and_swap_element"] = _compare_and_swap_element
    ns = Namespace("atomic", "numba.cuda's atomic operations on global and shared arrays.",
                    members)
    typing_registry.register_global(ns, types.Module(ns))
    return ns


atomic = _facade_atomic()

# ------------------------------------------------------------------ warp (sub-group) functions
_vote_check = _stubs.Stub("cuda._vote_check", "numba.cuda's type checks of a vote's arguments")


class _VoteCheck(AbstractTemplate):
    """A vote's (``all_sync`` & co.) mask must be an integer and its predicate an
    integer or a boolean: numba.cuda's TypingErrors, before the sub-group operation
    would convert a float."""

    key = _vote_check

    def generic(self, args, kws):
        mask, predicate = args
        if not isinstance(mask, types.Integer):
            raise TypingError(f"Mask type must be an integer, not {mask}")
        if not isinstance(predicate, (types.Integer, types.Boolean)):
            raise TypingError(f"Predicate must be an integer or boolean, not {predicate}")
        return signature(types.none, *args)


typing_registry.register_global(_vote_check, types.Function(_VoteCheck))


@lowering_registry.lower(_vote_check, types.Any, types.Any)
def _lower_vote_check(context, builder, sig, args):
    return context.get_dummy_value()


_sg = _pick("subgroup")
if _sg is not None:
    # the member mask goes to the masked sub-group forms: a target whose warp
    # instructions take one (CUDA) uses it, the others run on the whole sub-group
    @_device
    def shfl_sync(mask, value, src_lane):
        """numba.cuda's ``shfl_sync``: *src_lane* is taken modulo the warp width, as in
        CUDA."""
        return _sg.shuffle(value, src_lane % _sg.size(), mask)

    @_device
    def shfl_up_sync(mask, value, delta):
        return _sg.shuffle_up(value, delta, mask)

    @_device
    def shfl_down_sync(mask, value, delta):
        return _sg.shuffle_down(value, delta, mask)

    @_device
    def shfl_xor_sync(mask, value, lane_mask):
        return _sg.shuffle_xor(value, lane_mask, mask)

    # Votes and matches answer for the lanes of *mask* only, as CUDA's do: where a
    # target's sub-group operations take every lane (OpenCL), a partial mask is applied
    # to a ballot of the predicate (a full mask, the common constant, folds to the plain
    # sub-group operation).  The mask's lanes that do not run (a partial warp's) count
    # as CUDA's hardware counts them, as absent.
    @_device
    def _mask_lanes(mask):
        """The lanes of *mask* that execute this call (bits 0-31)."""
        return _sg.ballot(True) & mask & 0xFFFFFFFF

    @_device
    def all_sync(mask, predicate):
        _vote_check(mask, predicate)
        if mask & 0xFFFFFFFF == 0xFFFFFFFF:
            return _sg.all(predicate, mask)
        lanes = _mask_lanes(mask)
        return (_sg.ballot(predicate, mask) & lanes) == lanes

    @_device
    def any_sync(mask, predicate):
        _vote_check(mask, predicate)
        if mask & 0xFFFFFFFF == 0xFFFFFFFF:
            return _sg.any(predicate, mask)
        return (_sg.ballot(predicate, mask) & _mask_lanes(mask)) != 0

    @_device
    def eq_sync(mask, predicate):
        """True when *predicate* (as a bool) is the same on every lane of *mask*."""
        _vote_check(mask, predicate)
        if mask & 0xFFFFFFFF == 0xFFFFFFFF:
            return _sg.all(predicate, mask) or not _sg.any(predicate, mask)
        lanes = _mask_lanes(mask)
        votes = _sg.ballot(predicate, mask) & lanes
        return votes == 0 or votes == lanes

    @_device
    def ballot_sync(mask, predicate):
        """uint32 of the lanes of *mask* where *predicate* holds (lanes 0-31, as
        numba.cuda)."""
        _vote_check(mask, predicate)
        return types_uint32(_sg.ballot(predicate, mask) & mask & 0xFFFFFFFF)

    @_device
    def syncwarp(mask=0xFFFFFFFF):
        """numba.cuda's ``syncwarp``: a barrier among the lanes of *mask*."""
        _sg.barrier(mask)

    @_device
    def match_any_sync(mask, value):
        """uint32 of the lanes of *mask* whose *value* equals the caller's (bitwise)."""
        return types_uint32(_sg.match_any(value, mask) & mask & 0xFFFFFFFF)

    @_device
    def match_all_sync(mask, value):
        """(the lanes of *mask* that exist and run, True) when every such lane holds the
        caller's *value*, else (0, False), as numba.cuda's: in a partial warp a full
        mask answers the lanes there are, as the hardware's match.all does."""
        lanes = types_uint32(_mask_lanes(mask))
        if mask & 0xFFFFFFFF == 0xFFFFFFFF:
            same = _sg.match_all(value, mask)
        else:
            same = (_sg.match_any(value, mask) & lanes) == lanes
        return (lanes if same else types_uint32(0)), same

    @_device
    def activemask():
        """The lanes that execute this call (lanes 0-31)."""
        return types_uint32(_sg.ballot(True) & 0xFFFFFFFF)

    @_device
    def lanemask_lt():
        return types_uint32(((1 << _sg.lane_id()) - 1) & 0xFFFFFFFF)
else:  # pragma: no cover - the sub-group feature is part of the core language
    shfl_sync = _unavailable("shfl_sync", _NOT_YET)
    shfl_up_sync = _unavailable("shfl_up_sync", _NOT_YET)
    shfl_down_sync = _unavailable("shfl_down_sync", _NOT_YET)
    shfl_xor_sync = _unavailable("shfl_xor_sync", _NOT_YET)
    all_sync = _unavailable("all_sync", _NOT_YET)
    any_sync = _unavailable("any_sync", _NOT_YET)
    eq_sync = _unavailable("eq_sync", _NOT_YET)
    ballot_sync = _unavailable("ballot_sync", _NOT_YET)
    activemask = _unavailable("activemask", _NOT_YET)
    lanemask_lt = _unavailable("lanemask_lt", _NOT_YET)
    match_any_sync = _unavailable("match_any_sync", _NOT_YET)
    match_all_sync = _unavailable("match_all_sync", _NOT_YET)


# ------------------------------------------------------------------ bits and math
popc = _alias("popc", "popc")
clz = _alias("clz", "clz")
ffs = _alias("ffs", "ffs")
brev = _alias("brev", "brev")
fma = _pick("fma")
if fma is None:
    @_device
    def fma(a, b, c):
        """a * b + c (rounded twice until the kernel language has a fused fma)."""
        return a * b + c

selp = _pick("select", "selp")
if selp is None:
    @_device
    def selp(cond, a, b):
        return a if cond else b
cbrt = _pick("cbrt")
if cbrt is None:
    @_device
    def cbrt(x):
        return math.cbrt(x)

# ------------------------------------------------------------------ cache-hinted loads/stores
# numba.cuda's ld*/st*: the kernel language's own (language/cachehints.py)
from ..language.cachehints import (  # noqa: E402
    ldca, ldcg, ldcs, ldlu, ldcv, stcg, stcs, stwb, stwt,
)


# ------------------------------------------------------------------ laneid / warpsize
def _install():
    pkg = sys.modules[__package__]
    mod_ty = types.Module(pkg)

    class CudaModuleAttrs(AttributeTemplate):
        key = mod_ty

        def resolve_laneid(self, mod):
            return types.int32

        def resolve_warpsize(self, mod):
            return types.int32

    typing_registry.register_attr(CudaModuleAttrs)

    @lowering_registry.lower_getattr(mod_ty, "laneid")
    def laneid_impl(context, builder, typ, value):
        return _call(builder, "__gpux_sg_lane_id")

    @lowering_registry.lower_getattr(mod_ty, "warpsize")
    def warpsize_impl(context, builder, typ, value):
        return _call(builder, "__gpux_sg_width")  # the width, also in a partial warp

    add_registries(typing_registry, lowering_registry,
                   nonconst_attrs=((mod_ty, "laneid"), (mod_ty, "warpsize")))


types_uint32 = types.uint32
