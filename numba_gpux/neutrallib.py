"""The neutral library and code generator behind the shared target context: the
LLVM modules Numba lowers for a function, linked with what it calls into one
target-neutral module (and cleaned up once, before any target's pipeline).
"""

from __future__ import annotations

from llvmlite import binding as ll
from llvmlite import ir

from . import irlex, irtext
from .interface import NEUTRAL_DATA_LAYOUT
from .language.helpers import portable_math
from .passes import internalize, run_passes

__all__ = ["NeutralLibrary", "NeutralCodegen", "simplify_neutral"]


class NeutralLibrary:
    """Collects the LLVM modules Numba lowers for one function (plus the
    libraries it links against).  It never generates machine code: the per
    target tail does that from :meth:`neutral_ir`."""

    def __init__(self, codegen: "NeutralCodegen", name: str):
        self.codegen = codegen
        self.name = name
        self._modules: list[ir.Module] = []
        self._linking: list[NeutralLibrary] = []
        self._reload_init: set = set()
        self.recorded_timings = None
        self._neutral: str | None = None

    # -- the surface Numba's lowering uses ----------------------------------
    def create_ir_module(self, name: str) -> ir.Module:
        return self.codegen.create_ir_module(name)

    def add_ir_module(self, module: ir.Module) -> None:
        self._modules.append(module)
        self._neutral = None

    def add_linking_library(self, library: "NeutralLibrary") -> None:
        if library is not self and library not in self._linking:
            self._linking.append(library)
            self._neutral = None

    def enable_object_caching(self) -> None:
        pass

    def finalize(self) -> None:
        pass

    # -- ours -----------------------------------------------------------------
    def mentions(self, symbol: str, seen: set | None = None) -> bool:
        """Whether a module of this library, or of one it links, declares or defines
        the global *symbol*."""
        seen = set() if seen is None else seen
        if id(self) in seen:
            return False
        seen.add(id(self))
        return any(symbol in m.globals for m in self._modules) or \
            any(lib.mentions(symbol, seen) for lib in self._linking)

    def functions_named(self, symbol: str) -> list:
        """The ``ir.Function`` definitions named *symbol* in this library's own modules."""
        return [f for m in self._modules for f in [m.globals.get(symbol)]
                if isinstance(f, ir.Function) and not f.is_declaration]

    def _all_texts(self, seen: set) -> list[str]:
        if id(self) in seen:
            return []
        seen.add(id(self))
        out = [str(m) for m in self._modules]
        for lib in self._linking:
            out.extend(lib._all_texts(seen))
        return out

    def neutral_ir(self, simplify: bool = False, entry_points=None) -> str:
        """This function and everything it calls, linked into one neutral module.

        With *simplify*, the module is first cleaned up by target-independent
        passes (see :func:`simplify_neutral`); the text is kept for one setting.
        *entry_points*, if given, are the only symbols anything outside the module
        refers to: the clean-up then drops whatever is left unused once they are
        simplified (a kernel's lowered body, inlined into its entry point).
        """
        setting = (simplify, tuple(entry_points) if entry_points is not None else None)
        if self._neutral is None or self._neutral_simplified != setting:
            texts = self._all_texts(set())
            main = ll.parse_assembly(texts[0])
            for t in texts[1:]:
                main.link_in(ll.parse_assembly(t))
            _link_helpers(main, texts, self.codegen.context)
            if simplify:
                simplify_neutral(main, entry_points)
            text = str(main)
            if entry_points is not None:
                text = _drop_lifetime_markers(text)
            self._neutral = portable_math(text)
            self._neutral_simplified = setting
        return self._neutral

    _neutral_simplified = False


def _link_helpers(module, texts: list, context) -> None:
    """Define the C helpers of Numba's that *module*, linked from *texts*, calls
    (language/helpers.py).  Found in the texts: walking the module's functions costs
    foreign calls per function on every compile."""
    from .language.helpers import HELPER_NAMES, helper_text

    wanted = [n for n in HELPER_NAMES if any(n in t for t in texts)]  # (a quick no)
    if not wanted:
        return
    declared = set().union(*(irtext.declared_functions(t) for t in texts))
    for name in wanted:
        if name in declared:
            module.link_in(ll.parse_assembly(helper_text(name, context)))


def _drop_lifetime_markers(text: str) -> str:
    """The neutral module without the lifetime markers its inlining added.

    Inlining the lowered body into the entry point marks the body's allocas'
    lifetimes, which span the whole kernel (no information), and in the neutral
    address spaces: after a target's mapping the marker would point at a cast
    of the alloca, which LLVM rejects.  Each target's optimizer marks what it
    inlines itself, in its own address spaces.

    Read through the IR lexer (a call's callee, a declaration's name).  On the text
    because llvmlite 0.50 cannot erase an instruction; it can go with the address-space
    mapping it serves (``irtext.remap_address_spaces``), or with an inliner option
    that leaves lifetimes unmarked."""
    if "@llvm.lifetime." not in text:  # (a quick no)
        return text
    out: list[str] = []
    for ln in text.split("\n"):
        if "@llvm.lifetime." in ln:
            toks = irlex.line_tokens(ln)
            if toks[0] == "declare":
                at = irlex.define_name(toks)
            else:
                at = irlex.callee(toks) if irlex.instruction(toks)[0] == "call" else None
            if at is not None and irlex.name(toks[at]).startswith(("llvm.lifetime.start.",
                                                                   "llvm.lifetime.end.")):
                if toks[0] == "declare" and out and out[-1].startswith("; Function Attrs:"):
                    out.pop()
                continue
        out.append(ln)
    return "\n".join(out)


def simplify_neutral(module, entry_points=None) -> None:
    """Inlining of ``alwaysinline`` calls, SROA, instruction combining and CFG
    simplification, once, on the neutral module.

    Numba's lowering is verbose (every value through an alloca, every array
    built in memory); cleaning it up once here, with no target's cost model
    (a pass builder without a target machine), makes the module every target
    parses, rewrites and optimizes about six times smaller: each target's own
    pipeline (O3 with its cost model) then runs on the small module.  Measured
    on saxpy: it saves more per target than it costs (benchmarks/results/costs.md).  It also runs for
    ``opt=0``: LLVM's SPIR-V back end turns unoptimized aggregate code into SPIR-V
    that drivers reject (struct indices as OpConstantNull).

    With *entry_points*, every other definition becomes internal and what is
    then unused is removed.
    """
    if entry_points is not None:
        internalize(module, entry_points)
    pb = ll.create_pass_builder(None, ll.create_pipeline_tuning_options(speed_level=0))
    mpm = ll.create_new_module_pass_manager()
    mpm.add_always_inliner_pass()
    mpm.add_sroa_pass()
    mpm.add_instruction_combine_pass()
    mpm.add_simplify_cfg_pass()
    if entry_points is not None:
        mpm.add_global_dead_code_eliminate_pass()
    run_passes(mpm, module, pb)


class NeutralCodegen:
    """The code generator Numba's lowering asks for libraries and modules: neutral ones,
    never machine code.  *context* is the target context that made it (its helpers'
    definitions are lowered through it: ``_link_helpers``)."""

    def __init__(self, context):
        self.context = context
        self._data_layout = NEUTRAL_DATA_LAYOUT
        self._target_data = ll.create_target_data(NEUTRAL_DATA_LAYOUT)

    def create_library(self, name: str, **kwargs) -> NeutralLibrary:
        return NeutralLibrary(self, name)

    def create_ir_module(self, name: str) -> ir.Module:
        mod = ir.Module(name)
        mod.data_layout = NEUTRAL_DATA_LAYOUT
        return mod

    @property
    def target_data(self):
        return self._target_data

    def insert_unresolved_ref(self, builder, fnty, name):
        # Numba's call of a function whose code is not made yet: a recursive call
        # with argument types other than those being compiled, or recursion through
        # other functions.  Only a function calling itself for the same argument
        # types compiles (a direct call), as in numba.cuda.
        from numba.core.errors import UnsupportedError

        raise UnsupportedError(
            "recursion through other device functions, or a recursive call with other "
            "argument types than the caller's, is not supported in GPU code: only a "
            "function calling itself with the same argument types")
