"""The checks the differential fuzzer (gpux_fuzz.py) adds to every compile: LLVM's
verifier after each of the compiler's own IR rewrites, and ``spirv-val`` on the SPIR-V.
Also used by tests/pipeline/test_rewrites_verified.py for the conformance kernels."""

from __future__ import annotations

import contextlib

__all__ = ["VerifyError", "IRTEXT_REWRITES", "verifying_rewrites", "spirv_val_path",
           "spirv_val_check"]


class VerifyError(RuntimeError):
    """LLVM's verifier or spirv-val rejected what a step of the compiler made."""


#: irtext's functions that rewrite IR text (stages.py calls them through the module)
IRTEXT_REWRITES = ("index_ranges", "mark_kernels", "add_function_attributes",
                   "add_function_metadata", "infer_address_spaces", "narrow_shared_atomics",
                   "drop_unused_values")
_verified: dict = {}  # text hash -> None (valid) or the verifier's message


def _verify_text(text: str):
    """None if *text* parses and LLVM's verifier accepts it, else the message."""
    import llvmlite.binding as ll

    key = hash(text)
    if key not in _verified:
        try:
            ll.parse_assembly(text).verify()
            _verified[key] = None
        except RuntimeError as e:
            _verified[key] = str(e)
        if len(_verified) > 256:
            _verified.pop(next(iter(_verified)))
    return _verified[key]


def _verifying(fn, what: str):
    """*fn* (a text-to-text rewrite), checking that its result is valid IR whenever its
    input was."""
    import functools

    @functools.wraps(fn)
    def wrapper(text, *a, **k):
        out = fn(text, *a, **k)
        if isinstance(out, str) and out is not text and out != text:
            bad = _verify_text(out)
            if bad is not None and _verify_text(text) is None:
                raise VerifyError(f"LLVM's verifier rejects the IR after the rewrite {what}: "
                                  f"{bad.strip()[:1500]}")
        return out

    wrapper.__gpux_verifying__ = True
    return wrapper


def _target_classes():
    from numba_gpux.devices import resolve_target

    out = []
    for name in ("opencl", "opencl-c", "cuda", "metal"):
        try:
            out.append(type(resolve_target(name)))
        except Exception:  # a target this installation lacks
            continue
    return list(dict.fromkeys(out))


@contextlib.contextmanager
def verifying_rewrites():
    """Within the block, every IR rewrite of the compiler's own (the target's
    ``map_ir``, irtext's rewrites in IRTEXT_REWRITES, each rewrite of
    ``legalize.REWRITES``) is followed by LLVM's verifier on its result: a rewrite that
    makes invalid IR of valid IR raises VerifyError naming it, which the compile
    reports as an InternalCompilerError.  The compiler's own switch for the same
    (``NUMBA_GPUX_VERIFY_REWRITES``) is set too, for compilers that have it."""
    import os

    from numba_gpux import irtext, legalize

    undo = []

    def patch(owner, name, what, item=False):
        old = owner[name] if item else getattr(owner, name)
        if getattr(old, "__gpux_verifying__", False):
            return
        new = _verifying(old, what)
        if item:
            owner[name] = new
            undo.append(lambda: owner.__setitem__(name, old))
        else:
            setattr(owner, name, new)
            undo.append(lambda: setattr(owner, name, old))

    for name in IRTEXT_REWRITES:
        if hasattr(irtext, name):
            patch(irtext, name, f"irtext.{name}")
    for name in list(legalize.REWRITES):
        patch(legalize.REWRITES, name, f"legalize.{name}", item=True)
    for cls in _target_classes():
        if "map_ir" in vars(cls):
            patch(cls, "map_ir", f"{cls.__name__}.map_ir")
    env = os.environ.get("NUMBA_GPUX_VERIFY_REWRITES")
    os.environ["NUMBA_GPUX_VERIFY_REWRITES"] = "1"
    try:
        yield
    finally:
        for u in reversed(undo):
            u()
        if env is None:
            os.environ.pop("NUMBA_GPUX_VERIFY_REWRITES", None)
        else:
            os.environ["NUMBA_GPUX_VERIFY_REWRITES"] = env


def spirv_val_path():
    """spirv-val (Debian's spirv-tools), or None with a note printed once."""
    import shutil
    import sys

    global _SPIRV_VAL
    if _SPIRV_VAL is False:
        _SPIRV_VAL = shutil.which("spirv-val")
        if _SPIRV_VAL is None:
            print("note: spirv-val is not installed (apt-get install spirv-tools): the SPIR-V "
                  "is not validated", file=sys.stderr)
    return _SPIRV_VAL


_SPIRV_VAL = False


def spirv_val_check(binary: bytes) -> None:
    """VerifyError unless ``spirv-val --target-env spv1.4`` accepts *binary* (nothing
    where spirv-val is not installed)."""
    import os
    import subprocess
    import tempfile

    tool = spirv_val_path()
    if tool is None:
        return
    fd, path = tempfile.mkstemp(suffix=".spv")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(binary)
        p = subprocess.run([tool, "--target-env", "spv1.4", path], capture_output=True,
                           text=True)
    finally:
        os.unlink(path)
    if p.returncode != 0:
        raise VerifyError(f"spirv-val rejects the SPIR-V: {(p.stdout + p.stderr).strip()[:1500]}")
