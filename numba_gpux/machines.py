"""LLVM target machines and code generation for the per-target stages.

Each target gets one kept target machine per optimization level
(:func:`target_machine`), used for its optimization pipelines and, where the
target allows it, for emission (:func:`emit_machine`); LLVM command-line options
that a target needs hold only around the work they are for (:func:`llvm_options`).
A module whose back end is known to carry state from one emission into the next
can be emitted by a fresh process (:func:`emit_in_fresh_process`).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from llvmlite import binding as ll

from .errors import InternalCompilerError
from .interface import Artifact, Target

__all__ = ["llvm_options", "target_machine", "fresh_target_machine", "emit_machine",
           "default_emit", "emit_in_fresh_process"]


_tm_cache: dict = {}
_tm_lock = threading.Lock()
_llvm_targets_ready = False


def _init_llvm_targets():
    """LLVM's back ends are initialized on first use, never at import."""
    global _llvm_targets_ready
    if not _llvm_targets_ready:
        ll.initialize_all_targets()
        ll.initialize_all_asmprinters()
        _llvm_targets_ready = True


_llvm_opts_lock = threading.RLock()


@contextmanager
def llvm_options(flags):
    """LLVM's command-line options are process-wide: set each (flag, reset) pair's flag
    for the duration of the block, under one lock for every such use, and its reset
    value after.  (Another thread compiling at the same moment waits; the flags the
    targets use change code quality or pointer widths, never what a program means.)"""
    with _llvm_opts_lock:
        for on, _off in flags:
            ll.set_option("numba_gpux", on)
        try:
            yield
        finally:
            for _on, off in flags:
                ll.set_option("numba_gpux", off)


def _create_target_machine(target: Target, opt: int):
    """A new LLVM target machine for *target*.

    A target's ``tm_flags`` lists (flag, reset) pairs of LLVM command-line
    options that a target machine reads when it is created (NVPTX's
    ``-nvptx-short-ptr`` decides its pointer widths, hence its data layout); they
    hold for the creation only.  The machine's data layout must then be the target's."""
    _init_llvm_targets()
    flags = target.tm_flags
    with llvm_options(flags):
        tm = ll.Target.from_triple(target.triple).create_target_machine(
            cpu=target.cpu, features=target.llvm_features, opt=max(opt, 0),
            reloc="default", codemodel="default")
    if flags and str(tm.target_data) != target.data_layout:
        raise InternalCompilerError(
            "emit", f"the {target.triple} target machine made with {[f for f, _ in flags]} "
                    f"has the data layout {tm.target_data}, not the target's {target.data_layout}")
    return tm


def target_machine(target: Target, opt: int):
    """The target machine that optimizes *target*'s modules at level *opt* (kept).

    It is made outside ``_tm_lock``: making one takes the options lock
    (:func:`llvm_options`), which an emission holds while it takes ``_tm_lock``
    (:func:`emit_machine`), so holding both the other way round let two threads that
    compiled at once wait for each other forever.  Two threads that miss at once each
    make a machine; the first one kept serves both."""
    key = (target.fingerprint, opt)
    tm = _tm_cache.get(key)
    if tm is None:
        made = _create_target_machine(target, opt)
        with _tm_lock:
            tm = _tm_cache.setdefault(key, made)
    return tm


def fresh_target_machine(target: Target, opt: int):
    """A new target machine, used for exactly one emission (see :func:`emit_machine`)."""
    return _create_target_machine(target, opt)


_emit_lock = threading.Lock()


@contextmanager
def emit_machine(target: Target, opt: int):
    """The target machine that emits one module of *target*, for the emission.

    By default a new machine each time: LLVM 22's SPIR-V back end keeps a
    per-machine registry of emitted types that points into machine functions
    freed after emission, and a second emission through one machine read freed
    memory and aborted (seen as a SPIRVIRMapping::findMI assertion, and as
    crashes).  Such a target's emission takes its kept machine, which has only
    optimized so far, out of the cache (the next compile's optimizer makes a new
    one), so every machine emits once and a compile makes one machine, not two.
    A target whose back end emits module after module through one machine sets
    ``reusable_emit_machine`` and emits through its kept machine
    (:func:`target_machine`), one emission at a time: making an NVPTX machine
    is a measurable part of every compile (benchmarks/results/costs.md)."""
    if target.reusable_emit_machine:
        with _emit_lock:
            yield target_machine(target, opt)
        return
    with _tm_lock:
        tm = _tm_cache.pop((target.fingerprint, opt), None)
    yield tm if tm is not None else fresh_target_machine(target, opt)


class _AsmFromIR:
    """Produces the assembly text of a module later, from its IR (picklable)."""

    def __init__(self, target: Target, opt: int, ir_text: str):
        self.target, self.opt, self.ir_text = target, opt, ir_text

    def __call__(self) -> str | None:
        try:
            mod = ll.parse_assembly(self.ir_text)
            with llvm_options(self.target.codegen_flags), \
                    emit_machine(self.target, self.opt) as tm:
                return tm.emit_assembly(mod)
        except Exception:  # some back ends cannot print assembly
            return None


def default_emit(target: Target, module, kernels, opt: int, ir_text: str | None = None) -> Artifact:
    """The target machine's object code (or assembly) for *module*, with the module's
    text as emitted (the artifact's ``llvm_ir``; also what the disassembly is made
    from, on demand).  *ir_text* is that text if the caller already printed it.
    Code generation rewrites the module in place (LLVM's SPIR-V and NVPTX back ends
    both do), so the text is printed before it, never after."""
    if ir_text is None:
        ir_text = str(module)
    with llvm_options(target.codegen_flags), emit_machine(target, opt) as tm:
        if target.emit_kind == "assembly":
            return Artifact(target.artifact_kind, None, tm.emit_assembly(module),
                            tuple(kernels), llvm_ir=ir_text)
        binary = tm.emit_object(module)
    return Artifact(target.artifact_kind, binary, _AsmFromIR(target, opt, ir_text), tuple(kernels),
                    llvm_ir=ir_text)


def default_artifact(target: Target, binary: bytes, opt: int, kernels, ir_text: str) -> Artifact:
    """The artifact :func:`default_emit` makes, for object code emitted elsewhere (by
    :func:`emit_in_fresh_process`) from the module *ir_text*."""
    return Artifact(target.artifact_kind, binary, _AsmFromIR(target, opt, ir_text),
                    tuple(kernels), llvm_ir=ir_text)


_EMIT_CHILD = """
import sys
import llvmlite.binding as ll
triple, cpu, features, opt, kind = sys.argv[1:6]
ll.initialize_all_targets()
ll.initialize_all_asmprinters()
for flag in sys.argv[6:]:  # tm_flags and codegen_flags (a fresh process: no reset needed)
    ll.set_option("numba_gpux", flag)
module = ll.parse_assembly(sys.stdin.buffer.read().decode())
tm = ll.Target.from_triple(triple).create_target_machine(
    cpu=cpu, features=features, opt=int(opt), reloc="default", codemodel="default")
out = tm.emit_object(module) if kind == "object" else tm.emit_assembly(module).encode()
sys.stdout.buffer.write(out)
"""


def emit_in_fresh_process(target: Target, ir_text: str, opt: int) -> bytes:
    """The target's code for the module *ir_text* (object bytes, or assembly text as
    UTF-8) emitted by a new Python process, whose LLVM back ends hold no state from
    earlier emissions.  For a target whose back end is known to carry state from
    one module into the next (see ``targets/opencl/spirv_ids.py``): a new process
    costs far more than an emission (benchmarks/results/costs.md), so it is the fallback, never the
    common path."""
    import subprocess
    import sys

    try:
        proc = subprocess.run(
            [sys.executable, "-c", _EMIT_CHILD, target.triple, target.cpu, target.llvm_features,
             str(max(opt, 0)), target.emit_kind,
             *(on for on, _off in (*target.tm_flags, *target.codegen_flags))],
            input=ir_text.encode(), capture_output=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        raise InternalCompilerError("emit", f"emission in a fresh process failed: {e}") from None
    if proc.returncode != 0:
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        raise InternalCompilerError("emit", "emission in a fresh process failed: "
                                    + (err[-1] if err else f"exit status {proc.returncode}"))
    return proc.stdout
