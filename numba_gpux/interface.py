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
import hashlib
from dataclasses import dataclass, field
from typing import Any, Mapping

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


_fingerprints: dict = {}  # (Target, overlays.epoch) -> Target.fingerprint

#: What the stages above provide to the contract, filled by ``compiler`` when it is
#: imported (:func:`provide_defaults`): this module is the bottom layer and imports
#: nothing above it.  ``"before_fingerprint"``: called before a fingerprint is
#: computed (builds the shared context, which fills the "shared" overlay registry);
#: ``"emit"``: the default of :meth:`Target.emit`.
_provided: dict = {}


def provide_defaults(*, before_fingerprint=None, emit=None) -> None:
    """Registration point for the compiler: what the hooks' defaults run.

    ``before_fingerprint()`` runs before every :attr:`Target.fingerprint` (it must
    be cheap once done); ``emit(target, module, kernels, opt)`` returns the
    :class:`Artifact` of the default :meth:`Target.emit`.
    """
    if before_fingerprint is not None:
        _provided["before_fingerprint"] = before_fingerprint
    if emit is not None:
        _provided["emit"] = emit


@dataclass(frozen=True)
class Target:
    """An immutable description of a compilation target.

    Fields are data; the methods below are the hooks, in pipeline order.  A
    subclass overrides only the hooks it needs.  ``fingerprint`` hashes the
    class and every field, so two descriptions that could produce different
    code never share a cache entry.  It also hashes the content of the
    target's overlay registry stack, so adding or replacing an overlay
    (``numba_gpux.extending.overlay``) changes the fingerprint.
    """

    name: str
    #: overlay families searched after the target's own registry, e.g. ("spirv",)
    families: tuple[str, ...]
    triple: str
    data_layout: str
    addrspaces: AddressSpaces
    #: text inserted after ``define`` on kernel entry points ("spir_kernel")
    kernel_cc: str = ""
    #: what ``emit`` produces: "object" (binary from the LLVM target machine) or "assembly"
    emit_kind: str = "object"
    artifact_kind: str = "object"
    cpu: str = ""
    llvm_features: str = ""
    #: capabilities: "fp64", "fp16", "int64_atomics", "float_atomics", ...
    features: frozenset = frozenset()
    #: extra knobs, as one mapping (key -> hashable value); downstream code adds keys freely.
    #: The compiler reads ``tm_flags`` (LLVM options set while a target machine is made)
    #: and ``codegen_flags`` (set while code is emitted), each a tuple of (flag, reset)
    #: pairs, both also in a fresh-process emission; ``legal_int_widths``; and others
    #: named where they are used (``extern_prefixes``, ``replace_intrinsics``,
    #: ``ir_rewrites``, ``workgroup_syncscope`` (the back end's syncscope name for a
    #: work-group: atomics on shared memory get it), ``backend_infers_address_spaces``
    #: (its code generation runs LLVM's InferAddressSpaces: the compiler's own
    #: inference after the optimizer is skipped), ``loop_vectorization`` (False: the
    #: optimizer's loop vectorizer is off, for targets that write scalar source), ...).
    #: Sub-group width (``Options.subgroup_size``): ``subgroup_width`` (sub-groups
    #: always have this width) or ``subgroup_size_metadata`` (the kernel metadata
    #: that requires one, on devices with the feature ``required_subgroup_size``)
    options: tuple = ()
    #: the neutral ``addrspace(N)`` that module-level variables default to
    globals_addrspace: int = 1
    #: the largest block and grid, stated as ranges of the index intrinsics (None: no facts)
    index_limits: IndexLimits | None = None

    # -- derived ---------------------------------------------------------
    @property
    def fingerprint(self) -> str:
        from . import overlays as _overlays

        # the shared context fills the "shared" overlay registry as it loads: build it
        # first, or code compiled by the first kernel would be keyed on a stale digest
        prepare = _provided.get("before_fingerprint")
        if prepare is not None:
            prepare()
        # read on every launch with a new signature: computed once per (equal
        # description, overlay registries' change count)
        key = (self, _overlays.epoch)
        try:
            fp = _fingerprints.get(key)
        except TypeError:  # an unhashable option value
            key, fp = None, None
        if fp is None:
            cls = type(self)
            h = hashlib.sha256(f"{cls.__module__}.{cls.__qualname__}|{self._canonical()}|"
                               f"{self.overlays().digest}".encode())
            fp = h.hexdigest()[:20]
            if key is not None:
                if len(_fingerprints) > 256:
                    _fingerprints.clear()
                _fingerprints[key] = fp
        return fp

    def _canonical(self) -> str:
        """Every field, with sets sorted: ``repr`` of a frozenset of strings changes from
        one process to the next (hash randomization), and on-disk keys must not."""
        def canon(v):
            if isinstance(v, (set, frozenset)):
                return repr(sorted(map(canon, v)))
            if isinstance(v, (tuple, list)):
                return "(" + ",".join(canon(x) for x in v) + ")"
            if isinstance(v, dict):
                return "{" + ",".join(f"{canon(k)}:{canon(x)}" for k, x in sorted(v.items())) + "}"
            return repr(v)

        return ";".join(f"{f.name}={canon(getattr(self, f.name))}" for f in dataclasses.fields(self))

    def option(self, key: str, default: Any = None) -> Any:
        return dict(self.options).get(key, default)

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


# ---------------------------------------------------------------------------
# The Runtime contract
#
# A target's runtime is one device's driver binding (``Device.runtime``).  The core
# (launch, memory, cache, attributes) and the facades call only what is declared
# here.  Required operations raise NotImplementedError; optional ones have a
# default, and a runtime overrides those it can do better.  Every ``queue`` argument
# is None or 0 (the device's default queue), a queue from ``new_queue()``, or an
# object carrying one as ``.gpux_queue``.

#: the kinds of the kernel's parameters (the ABI's leaves, ``abi.py``) that ``prepare``
#: is given, each as ``(kind, type)``: ``"buffer"`` (a device buffer: an array's,
#: pointer's or record's, with its type, or a debug kernel's error buffer, with None),
#: ``"i64"`` (an offset, extent or stride), ``"i8"`` (a bool), ``"scalar"`` (a number;
#: its type is the NumPy scalar type)
PARAM_KINDS = ("buffer", "i64", "i8", "scalar")


class Runtime:
    """One device's driver binding: memory, programs, kernels, launches.

    The launch path flattens a kernel's arguments into its parameters (the ABI's
    leaves) in the form the class attributes below ask for, and hands the runtime
    only that list: buffers as the handles ``alloc`` returned, ``i64``/``i8``/
    ``scalar`` leaves as numbers (or their bytes, ``packed_scalars``).
    """

    #: allocation handles are device addresses (ints): an integer device pointer is a
    #: real one, and one that points into no allocation of ours passes as it is
    buffers_are_addresses: bool = False
    #: the buffer leaf of an array, pointer or record is its handle plus its byte offset
    #: (the address of its first element; needs ``buffers_are_addresses``, and a target
    #: that defines ``__gpux_array_offset`` as 0); the offset leaf follows unchanged
    pointer_includes_offset: bool = False
    #: ``i64``, ``i8`` and ``scalar`` leaves reach ``launch`` as their little-endian
    #: bytes at the leaf's width (what clSetKernelArg takes), not as numbers
    packed_scalars: bool = False

    # -- required ---------------------------------------------------------------
    def alloc(self, nbytes: int) -> Any:
        """A new device buffer of *nbytes* bytes (its handle)."""
        raise NotImplementedError

    def free(self, handle: Any) -> None:
        """Release a buffer from ``alloc`` (never called twice for one handle)."""
        raise NotImplementedError

    def write(self, handle: Any, offset: int, host: Any, queue: Any = None) -> None:
        """Copy the contiguous NumPy array *host* to the buffer at byte *offset*; returns
        once *host* may be reused."""
        raise NotImplementedError

    def read(self, host: Any, handle: Any, offset: int, queue: Any = None) -> None:
        """Fill the contiguous NumPy array *host* from the buffer at byte *offset*, after
        the work queued before it; returns once *host* holds the data."""
        raise NotImplementedError

    def load(self, artifact: Artifact) -> Any:
        """The driver's program built from *artifact*; raises InternalCompilerError with the
        driver's log when the driver refuses it."""
        raise NotImplementedError

    def kernel(self, program: Any, name: str) -> Any:
        """The kernel *name* of a program from ``load``."""
        raise NotImplementedError

    def launch(self, kernel: Any, griddim: tuple, blockdim: tuple, args: list,
               shared_bytes: int, queue: Any) -> None:
        """Queue *kernel* on *griddim* blocks of *blockdim* threads (3-tuples) with the
        flat parameter values *args* and *shared_bytes* of dynamic shared memory."""
        raise NotImplementedError

    def synchronize(self, queue: Any = None) -> None:
        """Wait for the work queued so far on *queue* (the default queue: all work)."""
        raise NotImplementedError

    # -- optional: launches -----------------------------------------------------
    def prepare(self, kernel: Any, params: list) -> Any:
        """Once per kernel and parameter list (``PARAM_KINDS``), before its first launch:
        a launcher ``launcher(griddim, blockdim, args, shared_bytes, queue)`` doing what
        ``launch(kernel, ...)`` does, or None (launches call ``launch``)."""
        return None

    def set_shared_memory_carveout(self, kernel: Any, percent: int) -> None:
        """A hint: the share of on-chip memory *kernel* prefers as shared memory."""

    def kernel_attributes(self, kernel: Any) -> dict:
        """What the driver reports of *kernel* (``max_threads_per_block``,
        ``shared_mem_per_block``, ``local_mem_per_thread``, ``regs_per_thread``...)."""
        return {}

    # -- optional: memory -------------------------------------------------------
    def copy(self, dst: Any, dst_offset: int, src: Any, src_offset: int, nbytes: int,
             queue: Any = None) -> None:
        """Copy *nbytes* between two buffers of this device (default: through the host)."""
        import numpy as np

        staging = np.empty(int(nbytes), np.uint8)
        self.read(staging, src, src_offset, queue)
        self.write(dst, dst_offset, staging, queue)

    def memory_info(self) -> tuple[int, int] | None:
        """(free, total) bytes of device memory as the driver reports them, or None."""
        return None

    def array_attribute(self, array: Any, name: str) -> Any:
        """A dunder attribute of a device array of this device (a driver's array
        interface, ``__cuda_array_interface__``...); AttributeError if none."""
        raise AttributeError(f"'{type(array).__name__}' object has no attribute {name!r}")

    def foreign_array(self, obj: Any) -> tuple | None:
        """(handle, byte offset, shape, strides in bytes, dtype, owner) of another
        library's device array whose memory this device's kernels can use, else None."""
        return None

    # -- optional: the device ---------------------------------------------------
    def device_attribute(self, name: str) -> int | None:
        """The driver's device attribute *name* (CUDA's ``CU_DEVICE_ATTRIBUTE_<name>``), or None."""
        return None

    def can_access_peer(self, other: "Runtime") -> bool:
        """Whether this device's kernels can read and write *other*'s buffers directly."""
        return False

    # -- optional: programs on disk (``cache=True``) ----------------------------
    def binary_identity(self) -> str | None:
        """What a built program's binary depends on (device, driver, versions), or None:
        built programs are not kept on disk."""
        return None

    def program_binary(self, program: Any) -> bytes | None:
        """The driver's binary of a program from ``load``, or None."""
        return None

    def load_binary(self, data: bytes) -> Any:
        """A program from a binary of ``program_binary`` (same ``binary_identity``)."""
        raise NotImplementedError(f"{type(self).__name__} loads no program binaries")

    # -- optional: queues and events (numba_gpux.cuda's streams) -----------------
    def _no_queues(self, what: str):
        from .errors import UnsupportedError

        return UnsupportedError(f"the runtime {type(self).__name__} has no queues/events "
                                f"({what}); streams need them")

    def new_queue(self) -> Any:
        """Another in-order queue on this device."""
        raise self._no_queues("new_queue")

    def record_event(self, queue: Any = None) -> Any:
        """A marker after the work queued so far on *queue*."""
        raise self._no_queues("record_event")

    def event_query(self, event: Any) -> bool:
        """Whether the work before *event* has completed."""
        raise self._no_queues("event_query")

    def event_synchronize(self, event: Any) -> None:
        """Wait for the work before *event*."""
        raise self._no_queues("event_synchronize")

    def event_wait(self, event: Any, queue: Any = None) -> None:
        """Work queued on *queue* after this call waits for *event*."""
        raise self._no_queues("event_wait")

    def event_elapsed_ms(self, start: Any, end: Any) -> float:
        """Milliseconds between two recorded events."""
        raise self._no_queues("event_elapsed_ms")
