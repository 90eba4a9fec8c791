"""``numba_gpux.cuda.vector_types``: numba.cuda's CUDA vector types (``float32x4``, ``int2``...).

numba_gpux's kernel language has no vector types yet: every name exists (so
code that imports them loads), and using one in a kernel is a TypingError
that says so.
"""

from __future__ import annotations

from .intrinsics import _unavailable

__all__ = ["vector_types"]

_WHY = "CUDA vector types are not part of the portable kernel language"
_BASES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float32", "float64")
_ALIASES = {"char": "int8", "short": "int16", "int": "int32", "long": "int64",
            "longlong": "int64", "uchar": "uint8", "ushort": "uint16", "uint": "uint32",
            "ulong": "uint64", "ulonglong": "uint64", "float": "float32", "double": "float64"}

#: every vector type name -> its placeholder (aliases share their type's)
vector_types: dict = {}
for _base in _BASES:
    for _n in (1, 2, 3, 4):
        vector_types[f"{_base}x{_n}"] = _unavailable(f"{_base}x{_n}", _WHY)
for _alias, _base in _ALIASES.items():
    for _n in (1, 2, 3, 4):
        vector_types[f"{_alias}{_n}"] = vector_types[f"{_base}x{_n}"]
globals().update(vector_types)
__all__ += sorted(vector_types)
del _base, _n, _alias
