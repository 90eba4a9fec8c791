"""C-family dialects as data, and source definitions of the portable intrinsics.

A :class:`Dialect` says how a C-family language spells what the emitter needs
(address-space qualifiers, scalar types, bit casts, library functions, the
kernel's signature).  OpenCL C and the Metal Shading Language are two
instances, defined by their targets.

A source target's overlay registry maps each ``__gpux_*`` name to a
:class:`SourceDef` (a source snippet) instead of LLVM IR; such registries
live in their own namespace, ``registry("<target>.src")`` and
``registry("<family>.src")``, so the IR linker never sees them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from numba_gpux.overlays import OverlayStack, registry

__all__ = ["SourceDef", "Dialect", "source_stack", "register_dialect", "get_dialect",
           "ATOMIC_LOOP_RULES"]

#: The atomic read-modify-writes a C-family target writes as a compare-and-swap
#: loop: (store?, new value) as C expressions of the old value ``o`` and the
#: operand ``v`` (language/atomics.py has each operation's contract).
ATOMIC_LOOP_RULES = {
    "add": ("true", "o + v"), "sub": ("true", "o - v"),
    "max": ("o < v", "v"), "min": ("o > v", "v"),          # a NaN on either side: unchanged
    "nanmax": ("v == v && !(o >= v)", "v"),                  # NaN operand: unchanged;
    "nanmin": ("v == v && !(o <= v)", "v"),                  # NaN in memory: replaced
    "inc": ("true", "(o >= v) ? 0 : o + 1"),                 # CUDA's wrapping inc/dec
    "dec": ("true", "(o == 0 || o > v) ? v : o - 1"),
}


@dataclass(frozen=True)
class SourceDef:
    """The source spelling of one intrinsic.

    ``expr`` is a template: ``{0}``, ``{1}``... are the operands' expressions
    (already in the dialect's storage types: unsigned integers, ``bool``,
    floating point).  For an intrinsic with a result it is an expression of
    the result's storage type; for a void one it is a statement (no ``;``).
    ``helper`` is source placed once before the kernels.  ``pure`` lets the
    emitter fold a single use into its user.  ``implicit`` names implicit
    kernel inputs (``Dialect.implicit_params``) the snippet reads.
    ``llvm_attrs`` are function attributes given to the intrinsic's
    declaration before optimization (``convergent`` for barriers).

    Pointer operands: ``{q0}`` (``{q1}``...) in ``expr`` and ``helper`` is the
    dialect's qualifier of the address space inferred for operand 0 (1...),
    ``{s0}`` a short tag of that space (``g`` global, ``l`` shared, ``c``
    constant, ``p`` private) for naming one helper per space; ``helper`` is
    placed once per distinct text after that substitution (its other braces
    are C's).  ``ptr_spaces`` lists the neutral address spaces a pointer
    operand may be in (empty: any); another is a clear error naming the
    intrinsic.  ``result_space`` is the neutral address space of a pointer
    result.  ``locals`` are declarations placed once at the top of the kernel
    (work-group variables, which OpenCL C and MSL allow only at kernel scope);
    ``cstring_args`` are operands that point to constant C strings and are
    written as string literals.
    """

    expr: str
    helper: str = ""
    pure: bool = True
    implicit: tuple = ()
    llvm_attrs: tuple = ()
    #: a device capability (``Target.features``) the snippet needs, e.g. "subgroups"
    feature: str = ""
    ptr_spaces: tuple = ()
    result_space: int | None = None
    locals: tuple = ()
    cstring_args: tuple = ()


@dataclass(frozen=True)
class Dialect:
    """How one C-family language spells things.  Subclasses add hooks where data is not enough."""

    name: str
    #: neutral address space -> qualifier ("" allowed); a missing entry is unsupported
    qualifiers: Mapping[int, str]
    kernel_qualifier: str
    preamble: str = ""
    #: template of a bit-preserving cast: {t} = target type, {x} = expression
    bitcast: str = "as_{t}({x})"
    #: generic library names (fabs, fma, fmin, fmax, sqrt, floor, ceil, trunc, rint, round,
    #: copysign, fmod, popcount, clz, ctz, min, max, abs) -> spelling; clz/ctz may be a
    #: template of an expression ({0} the operand, {t} its type)
    builtins: Mapping[str, str] = field(default_factory=dict)
    #: implicit kernel input name -> parameter declaration
    implicit_params: Mapping[str, str] = field(default_factory=dict)
    #: program-scope constant data: {q} qualifier, {name}, {n} words, {init}
    constant_array: str = "{q} ulong {name}[{n}] = {{{init}}};"
    #: function-scope work-group (shared) array
    shared_array: str = "{q} ulong {name}[{n}];"
    #: function-scope private array (an ``alloca``): {name}, {bytes} its size rounded up to
    #: whole 8-byte words, {words} that many words, {align} its alignment (8 or more)
    private_array: str = "ulong {name}[{words}];"
    helper_prefix: str = "static inline"
    #: pragmas / extensions needed when a feature is used: "fp64", "fp16"
    feature_preambles: Mapping[str, str] = field(default_factory=dict)
    #: source registry families searched after the target's own
    source_families: tuple = ()
    #: "hex" (C99 hexadecimal floating literals) or "decimal" (shortest round-trip)
    float_style: str = "hex"
    #: template of a select of 8..64-bit values: {c} condition (bool), {a} if true, {b} if
    #: false, {t} the unsigned type of the values' width; "" writes C's ?:
    select: str = ""
    #: statements opening a function body whose floating-point operations must not be
    #: contracted (no ``contract``/``fast`` flag in the IR: ``a * b + c`` stays two
    #: roundings), and one whose operations may be; "" leaves the compiler's default
    contract_off: str = ""
    contract_on: str = ""

    def builtin(self, name: str) -> str:
        return self.builtins.get(name, name)

    def qualifier(self, asp: int) -> str | None:
        return self.qualifiers.get(asp)

    def kernel_params(self, kernel: str, params: list, implicit: list) -> tuple[list, list, str]:
        """The kernel's parameter declarations, statements that start its body, and source
        placed before it.

        *params*: [(c_name, c_type, qualifier)], c_type None for a buffer (a byte pointer
        with that qualifier).  Default: plain C parameters.
        """
        decls = []
        for name, ctype, q in params:
            decls.append(f"{q} uchar* {name}" if ctype is None else f"{ctype} {name}")
        decls += [self.implicit_params[i] for i in implicit]
        return decls, [], ""


_dialects: dict[str, Dialect] = {}


def register_dialect(d: Dialect) -> Dialect:
    _dialects[d.name] = d
    return d


def get_dialect(name: str) -> Dialect:
    try:
        return _dialects[name]
    except KeyError:
        from numba_gpux.errors import InternalCompilerError

        raise InternalCompilerError("emit-source", f"no source dialect {name!r} is registered "
                                    f"(known: {', '.join(sorted(_dialects)) or 'none'})") from None


def source_stack(target_name: str, families: tuple = ()) -> OverlayStack:
    """The source-snippet registries of a target: ``<target>.src``, then ``<family>.src``."""
    return OverlayStack([registry(f"{target_name}.src"),
                         *(registry(f"{f}.src") for f in families if f != target_name)])
