"""What the OpenCL target's emission of a module that prints needs (target.py's
``_emit_printing``): whether a module calls a function, and the module's text
without the calls of one, read through the IR lexer."""

from __future__ import annotations

from numba_gpux import irlex

__all__ = ["PRINTF", "calls", "without_calls"]

#: OpenCL C's printf as LLVM's SPIR-V back end knows it: ``printf(constant char*, ...)``
#: (here, not in overlays/printing.py, whose import registers overlays: a compile
#: that imported it to read the name would change the keys it caches its code under)
PRINTF = "_Z6printfPU3AS2cz"


def calls(module, name: str) -> bool:
    """Whether the llvmlite *module* declares or defines the function *name*."""
    try:
        module.get_function(name)
    except NameError:
        return False
    return True


def without_calls(text: str, name: str) -> str:
    """The module *text* without its calls of the function *name*: a call whose result
    is used leaves that value as 0 (``add <ty> 0, 0``), one whose result is unused
    leaves nothing."""
    out = []
    for ln in text.split("\n"):
        if name in ln:
            toks = irlex.line_tokens(ln)
            op, at = irlex.instruction(toks)
            callee = irlex.callee(toks, at) if op == "call" else None
            if callee is not None and irlex.name(toks[callee]) == name:
                d = irlex.definition(toks)
                if d is None:
                    continue
                # (printf returns i32: the type written before the callee's (...) or name)
                ty = next((t for t in irlex.code(toks[at + 1:callee]) if t.startswith("i")), "i32")
                out.append(f"{irlex.join(toks[:d[0]])}{toks[d[0]]} = add {ty} 0, 0")
                continue
        out.append(ln)
    return "\n".join(out)
