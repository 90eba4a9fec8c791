"""The Target contract.

A target is *data* (a frozen, hashable :class:`Target`) plus a handful of hooks
with one-line defaults, listed here in pipeline order.  Shared code never asks
which target it is working for; it reads fields and calls hooks.

Pipeline (see ``compiler.py``)::

    translate -> type -> lower            (target-neutral, once per signature)
    -> map_ir      (runs on the neutral IR *text*, before parsing)
    -> link        (overlay definitions linked into the parsed module)
    -> wrap        (kernel entry points marked with the target's ABI)
    -> internalize (only kernels stay visible)
    -> finish      (runs after internalize, before optimize)
    -> optimize -> validate -> emit
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import sys
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Mapping

from .runtime import PARAM_KINDS, Runtime

__all__ = ["AddressSpaces", "IndexLimits", "Target", "TargetEntry", "NEUTRAL_ADDRSPACES",
           "Artifact", "provide_defaults", "Runtime", "PARAM_KINDS"]


@dataclass(frozen=True)
class AddressSpaces:
    """Address-space numbers as one target spells them."""

    generic: int
    global_: int
    shared: int
    constant: int
    private: int

    def as_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class IndexLimits:
    """The largest block (work-group) and grid a target launches, per dimension (x, y, z).

    The compiler states them as facts about the index intrinsics (``range`` on
    their calls): ``thread_idx`` in [0, block), ``block_dim`` in [1, block],
    ``block_idx`` in [0, grid), ``grid_dim`` in [1, grid].  That is what lets
    LLVM drop Numba's negative-index wraparound and fold bounds checks on
    ``grid()`` indices.  A launch beyond them would break those facts, so the
    target's devices must report limits no larger (``max_block_dims``,
    ``max_grid_dims``), which every launch is checked against.  Keep every
    bound below 2**31: products such as ``block_idx * block_dim + thread_idx``
    then never overflow a signed 64-bit integer."""

    block: tuple[int, int, int]
    grid: tuple[int, int, int]

    def __post_init__(self):
        for v in (*self.block, *self.grid):
            if not 1 <= v < 2 ** 31:
                raise ValueError(f"index limits must lie in [1, 2**31): {self}")


#: The neutral IR's fixed convention (it happens to be NVPTX's numbering):
#: Numba lowers every pointer in address space 0, which the neutral IR reads
#: as *generic*.
NEUTRAL_ADDRSPACES = AddressSpaces(generic=0, global_=1, shared=3, constant=4, private=5)
#: The neutral IR's data layout: 64-bit pointers in every address space, scalar sizes
#: and alignments every GPU target agrees with.
NEUTRAL_DATA_LAYOUT = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"


class Artifact:
    """What a target emits for one module: binary and/or text, and its kernels.

    ``text`` may be produced lazily (a SPIR-V disassembly costs a second code
    generation, so it is made only when someone reads it).
    """

    __slots__ = ("kind", "binary", "_text", "_make_text", "kernels", "llvm_ir", "info")

    def __init__(self, kind: str, binary: bytes | None, text, kernels, llvm_ir: str | None = None,
                 info: dict | None = None):
        self.kind = kind  # "spirv", "ptx", "cubin", "msl", "opencl-c", ...
        self.binary = binary
        if callable(text):
            self._text, self._make_text = None, text
        else:
            self._text, self._make_text = text, None
        self.kernels = tuple(kernels)
        self.llvm_ir = llvm_ir
        self.info = dict(info or {})

    @property
    def text(self) -> str | None:
        """The human-readable form (disassembly, PTX or source)."""
        if self._text is None and self._make_text is not None:
            self._text = self._make_text()
            self._make_text = None
        return self._text

    asm = text

    def __getstate__(self):
        return {"kind": self.kind, "binary": self.binary, "text": self.text,
                "kernels": self.kernels, "llvm_ir": self.llvm_ir, "info": self.info}

    def __setstate__(self, st):
        self.__init__(st["kind"], st["binary"], st["text"], st["kernels"], st["llvm_ir"], st["info"])

    def with_ir(self, llvm_ir: str) -> "Artifact":
        a = Artifact(self.kind, self.binary, None, self.kernels, llvm_ir, self.info)
        a._text, a._make_text = self._text, self._make_text
        return a

    def __repr__(self):
        size = len(self.binary) if self.binary else len(self._text or "")
        return f"<Artifact {self.kind} kernels={list(self.kernels)} {size} bytes>"


#: What the stages above provide to the contract, filled by ``compiler`` when it is
#: imported (:func:`provide_defaults`): this module is the bottom layer and imports
#: nothing above it.  ``"emit"``: the default of :meth:`Target.emit`.
_provided: dict = {}


def provide_defaults(*, emit=None) -> None:
    """Registration point for the compiler: what the hooks' defaults run.

    ``emit(target, module, kernels, opt)`` returns the :class:`Artifact` of the
    default :meth:`Target.emit`.
    """
    if emit is not None:
        _provided["emit"] = emit


# ---------------------------------------------------------------------------
# Typed, validated fields

_hints: dict = {}  # class -> {field name: (resolved type, its check or None)}
_own_hints: dict = {}  # class -> {name: resolved type} of the annotations it declares


def _field_types(cls) -> dict:
    """Each dataclass field of *cls*: its resolved type and the check of a value
    against it (:func:`_check_of`), made once per class (each class's own annotations
    are read once: a target's subclass reads only the fields it adds)."""
    got = _hints.get(cls)
    if got is None:
        hints: dict = {}
        for klass in reversed(cls.__mro__):
            hints.update(_declared_types(klass))
        got = {}
        for f in dataclasses.fields(cls):
            tp = hints.get(f.name, Any)
            got[f.name] = (tp, _check_of(tp))
        _hints[cls] = got
    return got


def _declared_types(klass) -> dict:
    """The annotations *klass* itself declares, evaluated in its module (a name the
    module does not hold, such as a class made in a function, reads as Any: that
    field is not checked)."""
    got = _own_hints.get(klass)
    if got is None:
        mod = sys.modules.get(klass.__module__)
        space = vars(mod) if mod is not None else {}
        got = {}
        for name, ann in vars(klass).get("__annotations__", {}).items():
            try:
                got[name] = eval(ann, space) if isinstance(ann, str) else ann
            except NameError:
                got[name] = Any
        _own_hints[klass] = got
    return got


def _check_of(tp):
    """A function telling whether a value is a *tp*, for the forms the targets' fields
    are written in: classes, ``X | None``, ``Literal``, ``tuple[X, ...]``,
    ``tuple[X, Y]`` and ``frozenset[X]``; None for anything else (not checked)."""
    if tp is Any:
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        parts = [_check_of(a) for a in args]
        if None in parts:
            return None
        return lambda v: any(p(v) for p in parts)
    if origin is typing.Literal:
        return lambda v: any(type(v) is type(a) and v == a for a in args)
    if origin is tuple or origin is frozenset:
        if origin is frozenset or (len(args) == 2 and args[1] is Ellipsis):
            item = _check_of(args[0]) or _anything
            return lambda v: isinstance(v, origin) and all(map(item, v))
        items = [_check_of(a) or _anything for a in args]
        return lambda v: (isinstance(v, tuple) and len(v) == len(items)
                          and all(ok(x) for ok, x in zip(items, v)))
    if tp is bool:
        return lambda v: v is True or v is False
    if tp is int:
        return lambda v: isinstance(v, int) and not isinstance(v, bool)
    if tp is type(None):
        return lambda v: v is None
    return (lambda v: isinstance(v, tp)) if isinstance(tp, type) else None


def _anything(v) -> bool:
    return True


def _type_name(tp) -> str:
    return tp.__name__ if isinstance(tp, type) and not typing.get_args(tp) else str(tp)


_inits: dict = {}  # class -> ((field name, default, default factory), ...)


class _Checked:
    """Construction checks shared by :class:`Target` and :class:`TargetOptions`: keyword
    arguments only, an unknown keyword is a TypeError naming it and the known ones, and
    every field's value must be of the field's type (which keeps the value hashable).

    It also holds the ``__init__``, ``==``, hash and repr of every such dataclass, read
    from the class's fields (:data:`target_dataclass`): a dataclass's generated methods
    cost milliseconds to make for a class of thirty fields, which a target's subclass
    would pay at its first use."""

    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        if args:
            raise TypeError(f"{cls.__name__} takes keyword arguments only")
        known = _field_types(cls)
        unknown = [k for k in kwargs if k not in known]
        if unknown:
            bad = unknown[0]
            close = difflib.get_close_matches(bad, list(known), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            if bad == "options" and issubclass(cls, Target):
                hint = (" (what was a key of Target.options is a field of its own, e.g. "
                        "extern_prefixes=(...), or a field of the target's options class)")
            raise TypeError(f"{cls.__name__} has no option {bad!r}{hint}; its options are: "
                            f"{', '.join(known)}")
        return super().__new__(cls)

    def __init__(self, **kwargs):
        cls = type(self)
        plan = _inits.get(cls)
        if plan is None:
            plan = _inits[cls] = tuple((f.name, f.default, f.default_factory)
                                       for f in dataclasses.fields(cls))
        for name, default, factory in plan:
            if name in kwargs:
                value = kwargs[name]
            elif default is not dataclasses.MISSING:
                value = default
            elif factory is not dataclasses.MISSING:
                value = factory()
            else:
                raise TypeError(f"{cls.__name__} needs the option {name!r}")
            object.__setattr__(self, name, value)
        self.__post_init__()

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in _field_types(type(self)))

    def __eq__(self, other):
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self is other or self._values() == other._values()

    def __hash__(self):
        return hash(self._values())

    def __repr__(self):
        return (f"{type(self).__qualname__}("
                + ", ".join(f"{n}={getattr(self, n)!r}" for n in _field_types(type(self))) + ")")

    def __post_init__(self):
        cls = type(self)
        unchecked = False
        for name, (tp, ok) in _field_types(cls).items():
            if ok is None:
                unchecked = True
            elif not ok(getattr(self, name)):
                raise TypeError(f"{cls.__name__}.{name} must be {_type_name(tp)}, "
                                f"not {getattr(self, name)!r}")
        if unchecked:  # a value of a type the checks do not read may be unhashable
            try:
                hash(self)
            except TypeError as e:
                raise TypeError(f"{cls.__name__} must be hashable: {e}") from None


#: The decorator of a :class:`Target` subclass that adds fields, and of a
#: :class:`TargetOptions` subclass: a frozen dataclass whose ``__init__``, ``==``, hash
#: and repr are the shared ones (a plain ``@dataclass(frozen=True)`` works too; it
#: makes those methods for the class, which takes a few milliseconds)
target_dataclass = dataclass(frozen=True, kw_only=True, init=False, eq=False, repr=False)


@target_dataclass
class TargetOptions(_Checked):
    """Base of the options only one target reads (``CUDAOptions``: compute capability,
    PTX version, ...): subclass it as a frozen dataclass and hold it in a typed field of
    that target's :class:`Target` subclass (both decorated with
    :data:`target_dataclass`).  It is built with keywords only; an unknown
    keyword is a TypeError naming the known ones, and each value is checked against its
    field's type (a subclass that defines ``__post_init__`` calls this one's).  Being a
    field, it enters the target's fingerprint."""


__all__ += ["TargetOptions", "target_dataclass"]


def _canonical_value(v) -> str:
    """A value as text that is the same in every process: sets sorted (``repr`` of a
    frozenset of strings changes from one process to the next, with hash randomization),
    dataclasses field by field."""
    if isinstance(v, (set, frozenset)):
        return repr(sorted(map(_canonical_value, v)))
    if isinstance(v, (tuple, list)):
        return "(" + ",".join(_canonical_value(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ",".join(f"{_canonical_value(k)}:{_canonical_value(x)}"
                              for k, x in sorted(v.items())) + "}"
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        cls = type(v)
        return (f"{cls.__module__}.{cls.__qualname__}(" + ",".join(
            f"{f.name}={_canonical_value(getattr(v, f.name))}" for f in dataclasses.fields(v)) + ")")
    return repr(v)


#: an LLVM command-line option as (flag, reset): the flag set for the work it is for,
#: the reset value after it (``machines.llvm_options``)
LLVMFlag = tuple[str, str]


@target_dataclass
class Target(_Checked):
    """An immutable description of a compilation target.

    Fields are data, grouped by the stage that reads them, in pipeline order; the
    methods below are the hooks, in the same order.  A subclass overrides only the
    hooks it needs; what only one target reads is that target's own
    :class:`TargetOptions`, held in a field its subclass adds.  Built with keywords
    only: an unknown keyword is a TypeError naming the known ones, and every value is
    checked against its field's type.  ``fingerprint`` hashes the class and every
    field, so two descriptions that could produce different code never share a
    cache entry.
    """

    # -- what the target is ----------------------------------------------------
    #: the name devices, ``gpux.compile(target=)`` and the target's overlay registry use
    name: str
    #: overlay families searched after the target's own registry, e.g. ("spirv",) (link)
    families: tuple[str, ...]
    #: capabilities (``has``): "fp64", "fp16", "int64_atomics", "float_atomics", ...
    features: frozenset[str] = frozenset()
    #: the LLVM target machine (machines.py): triple, data layout, CPU and its features
    triple: str
    data_layout: str
    cpu: str = ""
    llvm_features: str = ""

    # -- map_ir: on the neutral IR text -----------------------------------------
    #: address spaces as the target numbers them (the default ``map_ir`` maps to these)
    addrspaces: AddressSpaces
    #: the neutral ``addrspace(N)`` that module-level variables default to (``map_ir``)
    globals_addrspace: int = 1
    #: the largest block and grid, stated as ranges of the index intrinsics (None: no facts)
    index_limits: IndexLimits | None = None
    #: True: a launch whose Python ``int`` arguments (int64 parameters) are all >= 0 runs
    #: code compiled with that fact (``range`` on those parameters), so that LLVM drops
    #: Numba's negative-index wraparound on indices built from them; a launch with a
    #: negative one runs code without it (compiled when first needed)
    int_argument_facts: bool = False
    #: innermost strides, in elements, that a launch passing a layout-"A" array (a view
    #: Numba knows no strides of) compiles code for: an array whose last dimension
    #: steps by one of these runs code where that stride is a constant (``range`` of one
    #: value on its parameter), so a vectorizing driver loads vectors, not gathers; any
    #: other stride runs the general code.  () compiles no such variants
    array_stride_facts: tuple[int, ...] = ()

    # -- mark kernels ----------------------------------------------------------
    #: text inserted after ``define`` on kernel entry points ("spir_kernel"; "": none)
    kernel_cc: str = ""
    #: (name, operands) of named metadata every module carries, e.g. the source language
    #: a back end writes into its binary for the driver to read; () adds none
    module_metadata: tuple[tuple[str, str], ...] = ()
    #: (``compiler.Options`` field, function attribute) pairs: launch bounds as attributes
    #: of the kernel, e.g. ("max_threads", "nvvm.maxntid"); () writes none
    kernel_bound_attributes: tuple[tuple[str, str], ...] = ()
    #: (attribute, value) pairs a ``fastmath`` compile puts on every function, overlay
    #: definitions included (CUDA's float32 denormal mode); () adds none
    fastmath_function_attributes: tuple[tuple[str, str], ...] = ()

    # -- converge: barriers and work-items that have returned (converge.py) -------
    #: True: a work-item that has returned no longer counts at its group's barriers (as
    #: CUDA's threads); False: each barrier waits for every work-item, so kernels whose
    #: work-items may return while others meet one are rewritten to meet them all
    barriers_skip_exited: bool = False

    # -- finish: after link and internalize (the ``finish_module`` hook) ----------
    #: the width sub-groups always have (warps: 32), which ``Options.subgroup_size``
    #: may ask for as it is; 0: none fixed
    subgroup_width: int = 0
    #: kernel metadata that requires a sub-group width, on devices with the feature
    #: "required_subgroup_size" ("": the target cannot require one)
    subgroup_size_metadata: str = ""
    #: the prefix of overlay definitions that replace the sub-group shuffles
    #: (``__gpux_sg_shuffle*``, named with the prefix instead of ``__gpux_sg_``) in
    #: kernels that require a sub-group width, on devices with the feature
    #: "split_subgroups" (a required width wider than the device's vectors runs as
    #: several, where lanes exchange values faster through work-group memory than
    #: through the device's shuffles); "": none
    split_subgroup_prefix: str = ""
    #: (kind, operands) of kernel metadata under which the driver runs a kernel's
    #: work-items one at a time rather than as the lanes of vectors, given to kernels
    #: that use no sub-group operation and take a lock in a loop
    #: (``lockstep.waits_for_other_work_items``: a lane that holds a lock cannot
    #: release it while the vector's other lanes spin) or whose accesses step by a
    #: row's stride from one work-item to the next with little arithmetic between
    #: (``lanes.lanes_prefer_serial``: a vector gathers them lane by lane); (): none
    serial_lanes_metadata: tuple[str, str] | tuple[()] = ()

    # -- optimize --------------------------------------------------------------
    #: LLVM options set while a target machine is made (also in a fresh-process emission)
    tm_flags: tuple[LLVMFlag, ...] = ()
    #: False: the optimizer's loop vectorizer is off (targets that write scalar source)
    loop_vectorization: bool = True
    #: True: with ``opt=0`` too, loops are rotated (LLVM's LoopRotate: the exit test at
    #: the bottom), for a driver that vectorizes work-items only over rotated loops
    rotate_unoptimized_loops: bool = False
    #: the integer widths the back end represents (the optimizer then leaves exit values
    #: alone, and validation reports others); (): any width
    legal_int_widths: tuple[int, ...] = ()
    #: prefixes of LLVM intrinsics the back end cannot lower, replaced after the
    #: optimizer by overlay definitions (``__gpux_llvm_*``)
    replace_intrinsics: tuple[str, ...] = ()
    #: True: the back end runs LLVM's InferAddressSpaces itself, so the compiler's own
    #: inference after the optimizer is skipped
    backend_infers_address_spaces: bool = False
    #: the back end's syncscope name for a work-group: atomics on shared memory get it
    #: after address-space inference ("": left as they are)
    workgroup_syncscope: str = ""
    #: names of ``legalize.py`` rewrites applied after the optimizer, in order
    ir_rewrites: tuple[str, ...] = ()

    # -- validate --------------------------------------------------------------
    #: True: the device's code may call functions recursively (a call stack, as PTX
    #: has); False: a cycle in a module's call graph is a validation error naming the
    #: target
    recursion: bool = False
    #: True: the target's overlays serve ``__gpux_malloc``/``__gpux_free`` from the
    #: device's own allocator (CUDA's device ``malloc``), so a kernel that makes arrays
    #: gets a heap buffer of only the header, and the heap size goes to
    #: ``Runtime.set_heap_size``; False: the shared heap of our own (language/heap.py)
    device_malloc: bool = False
    #: False: the target cannot give kernels the device heap (a source emitter that
    #: writes no pointer held in memory), so a kernel that makes arrays of a size known
    #: only at run time is a validation error
    device_heap: bool = True
    #: prefixes of the symbols a finished module may still declare (besides ``llvm.*``)
    extern_prefixes: tuple[str, ...] = ()
    #: True: ``__gpux_*`` calls stay and are written by name (the target's ``validate``
    #: hook checks them), so the shared validation does not report them
    intrinsics_by_name: bool = False
    #: (IR type word, feature, what it is) triples: a module using the type needs the
    #: device feature, e.g. ("half", "fp16", "float16 (half precision)")
    type_features: tuple[tuple[str, str, str], ...] = ()

    # -- emit ------------------------------------------------------------------
    #: what the default ``emit`` produces: an object from the target machine, its
    #: assembly, or (a target that overrides ``emit``) source text
    emit_kind: typing.Literal["object", "assembly", "source"] = "object"
    #: ``Artifact.kind`` of what is emitted: "spirv", "ptx", "msl", ...
    artifact_kind: str = "object"
    #: LLVM options set while code is emitted (also in a fresh-process emission)
    codegen_flags: tuple[LLVMFlag, ...] = ()
    #: the kinds of foreign code (``linking.KINDS``: "cu", "ptx", "cubin", ...) that
    #: ``emit`` links with a module, whose calls of the functions they define may stay;
    #: empty: a module with any (``jit(link=...)``, ``declare_device``) is an error
    link_kinds: frozenset[str] = frozenset()
    #: True: the back end emits module after module through one target machine, so
    #: emission uses the kept one (machines.emit_machine); False: a machine per emission
    reusable_emit_machine: bool = False

    # -- derived ---------------------------------------------------------------
    @functools.cached_property
    def fingerprint(self) -> str:
        """A digest of the class and every field: a pure function of the description,
        the same in every process.  (What else a compile depends on, the content of
        the overlay registries, enters the cache keys beside it: ``cachekey.target_key``.)"""
        cls = type(self)
        return hashlib.sha256(f"{cls.__module__}.{cls.__qualname__}|{self._canonical()}"
                              .encode()).hexdigest()[:20]

    def _canonical(self) -> str:
        """Every field, with sets sorted, as text that is the same in every process."""
        return ";".join(f"{name}={_canonical_value(getattr(self, name))}"
                        for name in _field_types(type(self)))

    def has(self, feature: str) -> bool:
        return feature in self.features

    # -- hooks, in pipeline order -------------------------------------------
    def overlays(self):
        """Runs when: before linking.  The overlay registry stack for this target."""
        from .overlays import registry_stack

        return registry_stack(self.name, self.families)

    def map_ir(self, text: str) -> str:
        """Runs when: on the neutral IR text, before parsing.  Default: remap address spaces."""
        from .irtext import remap_address_spaces

        return remap_address_spaces(text, NEUTRAL_ADDRSPACES, self.addrspaces, self.globals_addrspace)

    def finish_module(self, module, kernels: tuple[str, ...]) -> None:
        """Runs when: after link, wrap and internalize, before optimize (libraries, annotations).

        Changes *module* in place, or returns a replacement module (for changes that
        need an IR text round trip, see ``irtext.py``)."""

    def validate(self, module, kernels: tuple[str, ...]) -> list[str]:
        """Runs when: after optimize.  Extra problems this target finds (the shared checks run too)."""
        return []

    def emit(self, module, kernels: tuple[str, ...], opt: int) -> Artifact:
        """Runs when: last.  Turn the optimized module into the artifact the driver loads."""
        emit = _provided.get("emit")
        if emit is None:
            raise RuntimeError("no default emission is registered: numba_gpux.compiler "
                               "registers it when imported")
        return emit(self, module, kernels, opt)


@dataclass(frozen=True)
class TargetEntry:
    """What a target package registers under the ``numba_gpux.targets`` entry point."""

    name: str
    #: returns the Target description; ``device`` may refine it (capabilities)
    make_target: Any
    #: returns a list of :class:`numba_gpux.devices.Device`; must not raise
    discover: Any
    #: kernels' preferred order among devices of equal kind (higher first)
    priority: int = 0
    doc: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
