"""The C-family source emitter, shared by the Metal and OpenCL C targets: source from optimized
LLVM IR (OpenCL C, Metal Shading Language).  A family package, not a target of its own.

``emit_source`` reads a finished, fully inlined module through llvmlite's
binding and writes structured source (no ``goto``) in a :class:`Dialect`;
``SourceTarget`` is the Target base class of the source-emitting targets.
"""

from .dialect import (ATOMIC_LOOP_RULES, Dialect, SourceDef, get_dialect, register_dialect,
                      source_stack)
from .emitter import SourceEmitError, emit_source
from .target import SourceTarget, make_source_target

__all__ = ["ATOMIC_LOOP_RULES", "Dialect", "SourceDef", "SourceTarget", "SourceEmitError", "emit_source",
           "get_dialect", "make_source_target", "register_dialect", "source_stack"]
