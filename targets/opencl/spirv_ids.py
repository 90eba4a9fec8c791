"""Which SPIR-V instructions define a result id, and a check that none is defined twice.

LLVM 22's SPIR-V back end keeps its module analysis (``SPIRVModuleAnalysis::MAI``)
in a static shared by every module a process emits, and its basic-block label
table is keyed by ``(MachineFunction*, block number)`` and never cleared: when a
new function's MachineFunction lands at the address of an earlier one, its labels
get that earlier module's ids, which collide with this module's types and
constants ("Id N is defined more than once"; llvm-project issue 160613, fixed
upstream by making the analysis a member).  About one module in a hundred is hit
once a process has emitted many; drivers reject such a module or crash on it.
The OpenCL target checks every binary with :func:`duplicate_result_ids` and, on
a hit, emits again in this process (up to three times, each after an allocation
that moves the heap on: a few milliseconds, and it escapes nearly every hit), then,
if still hit, in a fresh process (``targets/opencl/target.py``; 4 of 80 modules
compiled in a row needed the retry, none the fresh process).

The opcode tables are generated from the SPIR-V grammar
(``spirv.core.grammar.json`` of SPIR-V headers 1.4.335, grammar 1.6 revision 4):
instructions whose first operand is ``IdResult`` (the id is word 1) and those
whose first two operands are ``IdResultType, IdResult`` (word 2).
"""

from __future__ import annotations

from array import array

__all__ = ["duplicate_result_ids", "module_words"]

_MAGIC = 0x07230203


def module_words(binary) -> array | None:
    """The 32-bit words of the SPIR-V module *binary* in the host's byte order (a
    trailing part of a word dropped), or None when it does not start with SPIR-V's
    magic number in either byte order."""
    words = array("I")
    words.frombytes(bytes(binary[: len(binary) // 4 * 4]))
    if not words:
        return None
    if words[0] != _MAGIC:
        words.byteswap()
        if words[0] != _MAGIC:
            return None
    return words

#: opcodes whose result id is the instruction's word 1 (inclusive ranges)
_RESULT_AT_1 = (
    (7, 7), (11, 11), (19, 38), (73, 73), (248, 248), (322, 322), (327, 327), (4163, 4163),
    (4190, 4190), (4417, 4417), (4456, 4456), (4472, 4472), (5076, 5076), (5103, 5104),
    (5281, 5281), (5288, 5288), (5313, 5313), (5341, 5341), (5358, 5358), (5370, 5371),
    (5609, 5609), (5700, 5712), (5911, 5913), (6086, 6086), (6199, 6199),
)
#: opcodes whose result id is word 2, after the result type (inclusive ranges)
_RESULT_AT_2 = (
    (1, 1), (12, 12), (41, 46), (48, 52), (54, 55), (57, 57), (59, 61), (65, 70), (77, 84),
    (86, 98), (100, 107), (109, 124), (126, 152), (154, 191), (194, 205), (207, 215),
    (227, 227), (229, 242), (245, 245), (259, 259), (261, 271), (274, 279), (282, 286),
    (291, 296), (299, 300), (303, 316), (318, 318), (320, 321), (323, 326), (328, 328),
    (333, 366), (400, 403), (4160, 4162), (4164, 4164), (4166, 4166), (4181, 4181),
    (4183, 4184), (4418, 4425), (4427, 4434), (4447, 4447), (4450, 4455), (4457, 4457),
    (4459, 4463), (4477, 4477), (4479, 4483), (4497, 4497), (4500, 4503), (4540, 4542),
    (5000, 5007), (5011, 5012), (5056, 5056), (5074, 5074), (5078, 5078), (5090, 5090),
    (5101, 5101), (5110, 5111), (5252, 5255), (5257, 5258), (5265, 5265), (5267, 5278),
    (5283, 5283), (5289, 5289), (5292, 5293), (5296, 5296), (5300, 5302), (5307, 5308),
    (5320, 5320), (5322, 5334), (5340, 5340), (5345, 5352), (5359, 5359), (5361, 5362),
    (5366, 5367), (5369, 5369), (5372, 5379), (5381, 5382), (5384, 5384), (5390, 5396),
    (5398, 5398), (5427, 5439), (5571, 5575), (5577, 5577), (5580, 5580), (5585, 5598),
    (5600, 5601), (5610, 5611), (5614, 5615), (5631, 5631), (5699, 5699), (5713, 5816),
    (5818, 5819), (5840, 5843), (5846, 5882), (5923, 5934), (5938, 5938), (5946, 5947),
    (5949, 5949), (6016, 6032), (6035, 6035), (6096, 6096), (6116, 6117), (6145, 6145),
    (6163, 6163), (6165, 6165), (6237, 6237), (6242, 6242), (6244, 6244), (6251, 6254),
    (6401, 6408), (6426, 6426), (6428, 6428), (6529, 6531),
)


def _expand(ranges) -> frozenset:
    return frozenset(op for lo, hi in ranges for op in range(lo, hi + 1))


_AT_1 = _expand(_RESULT_AT_1)
_AT_2 = _expand(_RESULT_AT_2)


def instructions(words) -> tuple[list[tuple[int, int, int]], bool]:
    """``(position, opcode, word count)`` of each instruction of a module's *words*
    after the header, and whether the words end where the last instruction does (False:
    an instruction of no words or one running past the end, where the walk stops)."""
    found: list[tuple[int, int, int]] = []
    i, n = 5, len(words)
    while i < n:
        w = words[i]
        count, op = w >> 16, w & 0xFFFF
        if count == 0 or i + count > n:
            return found, False
        found.append((i, op, count))
        i += count
    return found, True


def duplicate_result_ids(binary: bytes) -> list[int]:
    """The result ids that *binary* (a SPIR-V module) defines more than once, in
    order; ``[-1]`` for a module whose words cannot be walked."""
    words = module_words(binary)
    if words is None:
        return [-1]
    seen: set[int] = set()
    dups: list[int] = []
    insts, whole = instructions(words)
    for i, op, count in insts:
        if op in _AT_2:
            rid = words[i + 2] if count > 2 else None
        elif op in _AT_1:
            rid = words[i + 1] if count > 1 else None
        else:
            rid = None
        if rid is not None:
            if rid in seen:
                dups.append(rid)
            else:
                seen.add(rid)
    return dups if whole else dups + [-1]
