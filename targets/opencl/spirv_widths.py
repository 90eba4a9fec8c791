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
i64 %x to i1) to i3``).  The OpenCL target emits with loop strength
reduction off (``targets/opencl/target.py``, also for the driver's vectorizer) and
checks every binary with :func:`mismatched_integer_widths`; a target made with LSR
emits a module with a hit again without it.  Can go when LLVM's SPIR-V back end types the truncations its legalizer
makes (LLVM 22 does not).

The same back end widens an odd-width truncation to the next legal width without
masking: for ``(np.int64(a + a) & 1048575)`` in a loop, loop strength reduction
expands SCEV's ``zext (trunc i64 %x to i19) to i64`` and the SPIR-V masks with
``4294967295`` (the 32-bit width it legalized ``i19`` to) where the IR masks with
``1048574`` (LLVM 22; a wrong result, which ``spirv-val`` cannot see).
:func:`widened_masks` finds an ``OpBitwiseAnd`` with a mask of a legal width (8, 16
or 32 bits) narrower than the operation that the module's IR never wrote; the target
emits such a module again without loop strength reduction too (a target made with
LSR: without it the check is not needed).  A mask the IR does
hold is taken as the user's (no false alarm on ``x & 0xFFFFFFFF``); a false alarm
costs only LSR's code for that module.

Result ids and their types are read with the opcode table of :mod:`.spirv_ids`.
"""

from __future__ import annotations

from numba_gpux import irlex

from .spirv_ids import _AT_2, instructions, module_words

__all__ = ["mismatched_integer_widths", "widened_masks"]

_OP_TYPE_INT, _OP_TYPE_VECTOR, _OP_CONSTANT, _OP_BITWISE_AND = 21, 23, 43, 199
#: the masks of the widths the back end legalizes odd widths to
_LEGAL_MASKS = {(1 << k) - 1: k for k in (8, 16, 32)}
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
    insts, whole = instructions(words)
    for i, op, count in insts:
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
    return bad if whole else bad + [-1]


def widened_masks(binary: bytes, ir_text: str) -> list[int]:
    """The result ids of the scalar ``OpBitwiseAnd`` operations of *binary* that mask
    with all ones of 8, 16 or 32 bits, narrower than the operation, where *ir_text* (the
    module the SPIR-V was emitted from) holds no such integer constant; ``[-1]`` for a
    module whose words cannot be walked."""
    words = module_words(binary)
    if words is None:
        return [-1]
    widths: dict[int, int] = {}     # integer type id -> width
    constants: dict[int, int] = {}  # constant id -> value, for integer constants
    found: list[tuple[int, int]] = []  # (result id, mask value)
    insts, whole = instructions(words)
    if not whole:
        return [-1]
    for i, op, count in insts:
        if op == _OP_TYPE_INT and count >= 3:
            widths[words[i + 1]] = words[i + 2]
        elif op == _OP_CONSTANT and count >= 4 and words[i + 1] in widths:
            value = words[i + 3] | ((words[i + 4] << 32) if count >= 5 else 0)
            constants[words[i + 2]] = value
        elif op == _OP_BITWISE_AND and count == 5:
            width = widths.get(words[i + 1])
            if width is not None:
                for x in words[i + 3:i + 5]:
                    k = _LEGAL_MASKS.get(constants.get(x, -1))
                    if k is not None and k < width:
                        found.append((words[i + 2], constants[x]))
    if not found:
        return []
    written = {t for t in irlex.tokens(ir_text) if irlex.kind(t) is irlex.NUMBER}
    return [rid for rid, mask in found if str(mask) not in written and hex(mask) not in written]
