"""The base of targets that emit C-family source (OpenCL C, Metal Shading Language).

Such a target keeps the neutral address-space numbering, links no IR for the
portable intrinsics (their calls stay visible and are written by name from
the source registries, ``registry("<name>.src")``), inlines every device
function, and emits source text instead of a binary.  What only these targets read
is :class:`SourceOptions` (the dialect and the source registries); the shared
validation leaves ``__gpux_*`` calls to them (``Target.intrinsics_by_name``).
"""

from __future__ import annotations

from numba_gpux.interface import (NEUTRAL_ADDRSPACES, NEUTRAL_DATA_LAYOUT, Artifact, Target,
                                  TargetOptions, target_dataclass)
from .dialect import SourceDef, get_dialect, source_stack

__all__ = ["SourceTarget", "SourceOptions", "make_source_target"]


@target_dataclass
class SourceOptions(TargetOptions):
    """What only the source-emitting targets read."""

    #: the registered :class:`~numba_gpux.targets.cfamily.dialect.Dialect` the source is in
    dialect: str
    #: source registries searched after the target's own (``registry("<name>.src")``)
    source_families: tuple[str, ...] = ()


@target_dataclass
class SourceTarget(Target):
    """A Target whose artifact is source text (``Artifact.text``; ``binary`` is None)."""

    source: SourceOptions

    def source_registries(self):
        return source_stack(self.name, self.source.source_families)

    def lookup_source(self, name: str):
        d = self.source_registries().lookup(name)
        return d if isinstance(d, SourceDef) else None

    def finish_module(self, module, kernels):
        """Every device function is inlined (source has no generic pointers to pass them);
        intrinsic declarations get the attributes their source definitions ask for."""
        for f in module.functions:
            if f.is_declaration:
                sd = self.lookup_source(f.name)
                for attr in sd.llvm_attrs if sd else ():
                    f.add_function_attribute(attr)
            elif f.name not in kernels:
                attrs = " ".join(str(a) for a in f.attributes)
                if "noinline" not in attrs and "alwaysinline" not in attrs:
                    f.add_function_attribute("alwaysinline")

    def validate(self, module, kernels):
        problems = []
        regs = ", ".join(r.name for r in self.source_registries().registries)
        for f in module.functions:
            if not (f.is_declaration and f.name.startswith("__gpux_")):
                continue
            sd = self.lookup_source(f.name)
            if sd is None:
                from numba_gpux.language.intrinsics import INTRINSICS

                spec = INTRINSICS.get(f.name)  # where its contract says it exists
                shown = f.name if len(f.name) <= 64 else f.name[:48] + "..."
                problems.append(f"uses the portable intrinsic {shown}, which target {self.name!r} "
                                f"does not define (its source registries: {regs})"
                                + (f": {spec.requires}" if spec is not None and spec.requires
                                   else ""))
            elif sd.feature and not self.has(sd.feature):
                problems.append(f"uses {f.name}, which needs the device capability "
                                f"{sd.feature!r}; this {self.name} device does not have it")
        return problems

    def emit(self, module, kernels, opt):
        """Source text of *module*.  At ``opt=0`` the module still holds what only
        the optimizer removes and source cannot say: private slots holding
        pointers (Numba's exception-info out-parameter of every inlined device
        function, ``store ptr null, ptr %excinfo``).  The target-independent
        clean-up (SROA, combining, CFG simplification) runs first there; it
        changes no value, so ``opt=0`` still means no optimization pipeline."""
        from .emitter import emit_source

        if opt == 0:
            from numba_gpux.neutrallib import simplify_neutral

            simplify_neutral(module)
        dialect = get_dialect(self.source.dialect)
        text = emit_source(module, kernels, dialect, self.lookup_source, self.features)
        return Artifact(self.artifact_kind, None, text, tuple(kernels))


def make_source_target(cls, device=None, features=None, *, name: str, dialect: str,
                       artifact_kind: str, default_features: frozenset, opt_triple: str,
                       index_limits=None, ir_rewrites=()):
    """The description of a source-emitting target *name*: the neutral address spaces
    and data layout (its source is written from the neutral IR), *opt_triple* for the
    optimizer's target machine only (no code is generated for it), the dialect and
    the source registry named after the target, and the capabilities of *device*
    (else *features*, else *default_features*); *index_limits* as on ``Target``;
    *ir_rewrites*: the target's own, after those every source target takes."""
    from numba_gpux.language.heap import heap_families

    if features is None:
        features = device.target_features if device is not None else default_features
    return cls(
        name=name,
        # the device heap's allocator on 32-bit atomics where the devices lack 64-bit ones
        families=heap_families(features),
        triple=opt_triple,
        data_layout=NEUTRAL_DATA_LAYOUT,
        addrspaces=NEUTRAL_ADDRSPACES,
        emit_kind="source",
        artifact_kind=artifact_kind,
        features=frozenset(features),
        index_limits=index_limits,
        # the emitter writes scalar code (the device's compiler vectorizes across
        # work-items itself): no vector IR from LLVM's loop vectorizer
        loop_vectorization=False,
        # constant aggregates have no spelling as an operand of a phi copy
        ir_rewrites=("split_aggregate_phis", *ir_rewrites),
        intrinsics_by_name=True,
        # arrays of a size known only at run time come from the heap of our own
        # (language/heap.py), whose neutral IR the emitter writes: pointers held in
        # memory (a MemInfo's data, the heap's in a work-group variable), compare-and-
        # swap (on 32-bit words where the devices lack 64-bit atomics: families above)
        device_heap=True,
        # C-family source spells float16 values `half`, which a compiler without half
        # support rejects (PoCL: "declaring function parameter of type '__private
        # half'"); the shared validation reads it among the types of the code (never
        # in a string) and names the user's line
        type_features=(("half", "fp16", "float16 (half precision)"),),
        source=SourceOptions(dialect=dialect, source_families=(name,)),
    )
