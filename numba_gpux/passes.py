"""Running LLVM pass pipelines without keeping them.

llvmlite's new-pass-manager classes (0.50) never free a pass manager: they derive
from ``ObjectRef`` before the mixin that frees the C++ object, so the no-op
``ObjectRef._dispose`` wins and every pass manager made stays allocated for the
life of the process (measured: about 55 KiB per kernel compiled at ``opt=3``,
most of the memory each new kernel used to cost).  Every pipeline the compiler
runs goes through :func:`run_passes`, which frees the pass manager when it has run.

A pass builder is used for one run only: llvmlite registers that run's
instrumentation callbacks in the builder, and they point at objects freed when
the run ends.
"""

from __future__ import annotations

from llvmlite.binding import ffi

__all__ = ["run_passes", "free_pass_manager", "internalize"]


def free_pass_manager(pm) -> None:
    """Free the C++ pass manager behind *pm* (llvmlite's own dispose, which its class
    hierarchy hides); *pm* is closed afterwards.  Idempotent."""
    if pm.closed:
        return
    dispose = type(pm)._dispose
    if dispose is ffi.ObjectRef._dispose:  # the shadowed case: call the real one
        from llvmlite.binding.newpassmanagers import NewPassManager

        NewPassManager._dispose(pm)
        pm.detach()
    else:  # a llvmlite whose class frees it itself
        pm.close()


def run_passes(pm, module, pass_builder) -> None:
    """Run the pass manager *pm* on *module* with *pass_builder*, then free *pm*
    (also when the run raises)."""
    try:
        pm.run(module, pass_builder)
    finally:
        free_pass_manager(pm)


def internalize(module, keep, defined=None) -> None:
    """Give every definition of *module* internal linkage except the functions named
    in *keep* (what LLVM's Internalize pass does, which llvmlite does not offer):
    the optimizer may then inline, specialize or remove them.  *defined*, the names
    of the functions the module defines where the caller knows them (read from the
    texts it was made of), spares walking every function through the binding."""
    keep = set(keep)
    if defined is not None:
        try:
            for name in set(defined) - keep:
                module.get_function(name).linkage = "internal"
        except NameError:  # not a name the module defines: walk them all
            defined = None
    if defined is None:
        for f in module.functions:
            if not f.is_declaration and f.name not in keep:
                f.linkage = "internal"
    for g in module.global_variables:
        if not g.is_declaration:
            g.linkage = "internal"
