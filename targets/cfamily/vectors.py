"""LLVM vector values (``<3 x i32>``, ``<4 x float>``...) as one scalar per lane.

A Numba extension type whose data model is an LLVM vector, or the optimizer's
rewrites of such code, put vector values in the IR: built with ``insertelement``
on ``undef``/``poison`` or from constant vectors, read with ``extractelement``,
carried through phis.  The emitter writes each vector value as one variable per
lane (``v_4_0``, ``v_4_1``...) in the element's storage type, and each vector
instruction lane by lane through the scalar spelling (so OpenCL C and MSL need
nothing of their own; their vector types differ in spelling and in lengths).
A lane of a pure single-use vector value is written where it is read, as a scalar
one is; a lane already written is an operand of kind ``code`` (its C expression).
An index known only at run time selects among the lanes.
"""

from __future__ import annotations

import dataclasses

from .irmodel import Inst, Ty, Val, type_size_align
from .values import SourceEmitError, ctype, masked

__all__ = ["VectorLanes", "VECTOR_PURE_OPS"]

VECTOR_PURE_OPS = {"insertelement", "extractelement", "shufflevector"}
#: vector instructions written lane by lane through their scalar form
_LANEWISE = {"add", "sub", "mul", "and", "or", "xor", "shl", "lshr", "ashr", "udiv", "sdiv",
             "urem", "srem", "fadd", "fsub", "fmul", "fdiv", "frem", "fneg", "icmp", "fcmp",
             "select", "trunc", "zext", "sext", "fptosi", "fptoui", "sitofp", "uitofp",
             "fpext", "fptrunc", "freeze", "call", "bitcast"}
#: llvm.vector.reduce.<op> -> (scalar instruction, or the llvm intrinsic of two operands)
_REDUCE = {"add": "add", "mul": "mul", "and": "and", "or": "or", "xor": "xor",
           "fadd": "fadd", "fmul": "fmul", "smax": "llvm.smax", "smin": "llvm.smin",
           "umax": "llvm.umax", "umin": "llvm.umin", "fmax": "llvm.maxnum",
           "fmin": "llvm.minnum", "fmaximum": "llvm.maximum", "fminimum": "llvm.minimum"}


def _zero_val(ty: Ty) -> Val:
    if ty.kind == "int":
        return Val("int", ty, value=0)
    if ty.kind == "float":
        return Val("float", ty, value=0.0)
    return Val("null", ty)


class VectorLanes:
    """The lanes of vector values (a part of :class:`~.instructions.FnExprs`)."""

    def lane_var(self, irname: str, k: int) -> str:
        """The C variable of lane *k* of the vector value *irname*."""
        n = self.lanes.get((irname, k))
        if n is None:
            base = n = f"{self.cname(irname)}_{k}"
            j = 1
            while n in self.used_c:
                n, j = f"{base}_{j}", j + 1
            self.used_c.add(n)
            self.lanes[(irname, k)] = n
        return n

    def vector_check(self, ty: Ty, what: str):
        """Refuse vectors whose lanes have no scalar spelling (pointers; lanes of other
        vector kinds are refused by ``ctype``)."""
        if ty.kind == "vector" and ty.elem.kind not in ("int", "float"):
            raise SourceEmitError(f"{what}: vectors of {ty.elem} cannot be written as "
                                  f"{self.d.name} source")

    def lane_val(self, v: Val, k: int) -> Val:
        """Lane *k* of the vector operand *v*, as a scalar operand."""
        el = v.ty.elem
        if v.kind == "agg":
            return v.value[k] if isinstance(v.value, list) else _zero_val(el)
        if v.kind == "undef":
            return Val("undef", el)
        if v.kind == "local":
            d = self.defs[v.name]
            text = self.lane_expr(d, k) if v.name in self.inline else self.lane_var(v.name, k)
            return Val("code", el, text=text)
        raise SourceEmitError(f"a vector operand ({v.kind} {v.ty}) cannot be written as "
                              f"{self.d.name} source")

    def lane(self, v: Val, k: int) -> str:
        return self.expr(self.lane_val(v, k))

    def lane_decls(self, i: Inst) -> list[str]:
        self.vector_check(i.ty, f"`{i.text}`")
        return [f"{ctype(i.ty.elem)} {self.lane_var(i.name, k)};" for k in range(i.ty.count)]

    def select_lane(self, idx: Val, v: Val, n: int) -> str:
        """Lane *idx* (known only at run time) of the first *n* lanes of *v*."""
        ix = self.expr(idx)
        e = self.lane(v, n - 1)
        for k in reversed(range(n - 1)):
            e = self.select(f"({ix} == {self.int_literal(k, idx.ty)})", self.lane(v, k), e,
                            v.ty.elem)
        return e

    def lane_expr(self, i: Inst, k: int) -> str:
        """The expression of lane *k* of the vector instruction *i*."""
        op, a, el = i.op, i.args, i.ty.elem
        self.vector_check(i.ty, f"`{i.text}`")
        for x in a:
            self.vector_check(x.ty, f"`{i.text}`")
        if op == "insertelement":
            vec, elt, idx = a
            if idx.kind == "int":
                return self.expr(elt) if idx.value == k else self.lane(vec, k)
            return self.select(f"({self.expr(idx)} == {self.int_literal(k, idx.ty)})",
                               self.expr(elt), self.lane(vec, k), el)
        if op == "shufflevector":
            m, n = i.indices[k], a[0].ty.count
            if m < 0:
                return self.zero(el)
            return self.lane(a[0], m) if m < n else self.lane(a[1], m - n)
        if op == "load":
            if "atomic" in i.flags or (el.kind == "int" and el.bits not in (8, 16, 32, 64)):
                raise SourceEmitError(f"`{i.text}` cannot be written as {self.d.name} source")
            q, size = self.ptr_qual(a[0]), type_size_align(el)[0]
            p = self.expr(a[0]) if k == 0 else f"({self.expr(a[0])} + {k * size})"
            return f"*(({q} {ctype(el)}*){p})"
        if op == "bitcast" and (a[0].ty.kind != "vector" or a[0].ty.count != i.ty.count):
            return self.unpack(self.packed(a[0], i), i, k)
        if op == "call" and not i.callee.startswith("llvm."):
            raise SourceEmitError(f"`{i.text}`: {i.callee} on vectors cannot be written as "
                                  f"{self.d.name} source")
        if op in _LANEWISE:
            args = [self.lane_val(x, k) if x.ty.kind == "vector" else x for x in a]
            return self.inst_expr(dataclasses.replace(i, ty=el, name="", args=args))
        raise SourceEmitError(f"the vector instruction `{i.text}` cannot be written as "
                              f"{self.d.name} source")

    def from_vector(self, i: Inst) -> str:
        """A scalar result of vector operands: ``extractelement``, a bit cast of a whole
        vector, a ``llvm.vector.reduce.*``."""
        a = i.args
        for x in a:
            self.vector_check(x.ty, f"`{i.text}`")
        if i.op == "extractelement":
            vec, idx = a
            if idx.kind == "int":
                return self.lane(vec, idx.value) if idx.value < vec.ty.count else self.zero(i.ty)
            return self.select_lane(idx, vec, vec.ty.count)
        if i.op == "bitcast":
            return self.unpack(self.packed(a[0], i), i, None)
        parts = i.callee.split(".") if i.op == "call" else []
        if parts[1:3] == ["vector", "reduce"] and parts[3] in _REDUCE:
            how = _REDUCE[parts[3]]
            vec = a[-1]
            acc = a[0] if len(a) == 2 else self.lane_val(vec, 0)   # fadd/fmul: a start value
            for k in range(0 if len(a) == 2 else 1, vec.ty.count):
                step = Inst(how, "", i.ty, [acc, self.lane_val(vec, k)], i.text, flags=i.flags)
                if how.startswith("llvm."):
                    step = dataclasses.replace(step, op="call", callee=f"{how}.lane")
                acc = Val("code", i.ty, text=self.inst_expr(step))
            return acc.text if acc.kind == "code" else self.expr(acc)
        raise SourceEmitError(f"the instruction `{i.text}` on vectors cannot be written as "
                              f"{self.d.name} source")

    def store_lanes(self, i: Inst, ind: str) -> list[str]:
        """``store <n x T> %v, ptr %p``: one store per lane."""
        val, ptr = i.args
        el = val.ty.elem
        self.vector_check(val.ty, f"`{i.text}`")
        if "atomic" in i.flags or (el.kind == "int" and el.bits not in (8, 16, 32, 64)):
            raise SourceEmitError(f"`{i.text}` cannot be written as {self.d.name} source")
        q, size = self.ptr_qual(ptr), type_size_align(el)[0]
        out = []
        for k in range(val.ty.count):
            p = self.expr(ptr) if k == 0 else f"({self.expr(ptr)} + {k * size})"
            out.append(f"{ind}*(({q} {ctype(el)}*){p}) = {self.lane(val, k)};")
        return out

    # -- bit casts between a vector and other types: through an unsigned word ----------
    def packed(self, v: Val, i: Inst) -> str:
        """The bits of *v* (a vector or a scalar) as an unsigned word of its width; lane 0
        is the low bits (LLVM's order on a little-endian target)."""
        w = _bits(v.ty)
        if w > 64:
            raise SourceEmitError(f"`{i.text}`: a bit cast of {w} bits between vectors and "
                                  f"other types cannot be written as {self.d.name} source")
        word = ctype(Ty("int", bits=w))
        if v.ty.kind != "vector":
            return self.scalar_bits(self.expr(v), v.ty)
        eb = _bits(v.ty.elem)
        terms = [f"(({word}){self.scalar_bits(self.lane(v, k), v.ty.elem)}"
                 + (f" << {k * eb}u)" if k else ")") for k in range(v.ty.count)]
        return f"(({word})({' | '.join(terms)}))"

    def scalar_bits(self, e: str, ty: Ty) -> str:
        if ty.kind == "float":
            return self.d.bitcast.format(t=ctype(Ty("int", bits=ty.bits)), x=e)
        return e

    def unpack(self, word: str, i: Inst, k: int | None) -> str:
        """The bit cast result *i* (lane *k* of it, or all of it for *k* None) from *word*."""
        ty = i.ty if k is None else i.ty.elem
        shifted = word if not k else f"({word} >> {k * _bits(ty)}u)"
        if ty.kind == "int" and ty.bits == 1:
            return f"(({shifted} & 1u) != 0)"
        ity = Ty("int", bits=ty.bits)
        e = masked(shifted, ity)
        return self.d.bitcast.format(t=ctype(ty), x=e) if ty.kind == "float" else e


def _bits(ty: Ty) -> int:
    return ty.count * ty.elem.bits if ty.kind == "vector" else ty.bits
