"""A check that every integer operation of a SPIR-V module reads operands of its own width.

LLVM 22's SPIR-V back end loses a truncation: GlobalISel's legalizer turns
``zext (trunc iM %x to i1) to iN`` (N < M) into ``and (trunc %x to iN), 1``, and
the SPIR-V post-legalizer gives the new ``G_TRUNC`` the type of its source, so
instruction selection drops it and writes ``OpBitwiseAnd %intN %x %intN_1`` with
``%x`` still M bits wide (``spirv-val``: "Expected operands to have the same bit
width as Result Type"; the Intel OpenCL CPU driver fails to link the module:
"Invalid binary operator record").  The optimizer's InstCombine never leaves that
pattern in the IR we hand over, but code generation's loop strength reduction
writes it when it expands a trip count such as ``6 - (x & 1)`` (as ``zext (trunc
i64 %x to i1) to i3``).  The OpenCL target checks every binary with
:func:`mismatched_integer_widths` and, on a hit, emits the module again with loop
strength reduction off (``targets/opencl/target.py``); the rest keep the code LSR
gives.  Can go when LLVM's SPIR-V back end types the truncations its legalizer
makes (LLVM 22 does not).

Result ids and their types are read with the opcode table of :mod:`.spirv_ids`.
"""

from __future__ import annotations

from .spirv_ids import _AT_2, module_words

__all__ = ["mismatched_integer_widths"]

_OP_TYPE_INT, _OP_TYPE_VECTOR = 21, 23
#: integer arithmetic and bitwise operations: each operand has the result's width
#: (OpSNegate, OpIAdd, OpISub, OpIMul, OpUDiv, OpSDiv, OpUMod, OpSRem, OpSMod,
#: OpBitwiseOr, OpBitwiseXor, OpBitwiseAnd, OpNot; shifts may differ by the spec)
_SAME_AS_RESULT = frozenset((126, 128, 130, 132, 134, 135, 137, 138, 139, 197, 198, 199, 200))
#: integer comparisons: both operands have one width (OpIEqual ... OpSLessThanEqual)
_SAME_AS_EACH_OTHER = frozenset(range(170, 180))


def mismatched_integer_widths(binary: bytes) -> list[int]:
    """The result ids of the integer operations of *binary* (a SPIR-V module) whose
    integer operands differ in width from their result (arithmetic, bitwise) or from
    each other (comparisons), in order; ``[-1]`` for a module whose words cannot be
    walked.  An operand whose type is not known where it is used (a phi's forward
    reference) is not checked."""
    words = module_words(binary)
    if words is None:
        return [-1]
    shapes: dict[int, tuple] = {}   # integer (vector) type id -> (width, components)
    type_of: dict[int, int] = {}    # result id -> its type id
    bad: list[int] = []
    i, n = 5, len(words)
    while i < n:
        w = words[i]
        count, op = w >> 16, w & 0xFFFF
        if count == 0 or i + count > n:
            return bad + [-1]
        if op == _OP_TYPE_INT and count >= 3:
            shapes[words[i + 1]] = (words[i + 2], 1)
        elif op == _OP_TYPE_VECTOR and count >= 4:
            comp = shapes.get(words[i + 2])
            if comp is not None:
                shapes[words[i + 1]] = (comp[0], words[i + 3])
        elif op in _AT_2 and count >= 3:
            rtype, rid = words[i + 1], words[i + 2]
            type_of[rid] = rtype
            if op in _SAME_AS_RESULT or op in _SAME_AS_EACH_OTHER:
                known = [shapes.get(type_of.get(x)) for x in words[i + 3:i + count]]
                known = [s for s in known if s is not None]
                want = shapes.get(rtype) if op in _SAME_AS_RESULT else (known[0] if known else None)
                if want is not None and any(s != want for s in known):
                    bad.append(rid)
        i += count
    return bad
