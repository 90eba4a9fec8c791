"""Sub-group (warp) intrinsics for NVPTX: %laneid, shfl.sync, vote.sync.

Every shuffle and vote uses the mask of the currently active lanes
(``activemask``), so code in divergent branches keeps working; the masked
forms (``subgroup.shuffle(v, lane, members)``, numba.cuda's ``shfl_sync``)
pass the caller's member mask instead, as CUDA's ``*_sync`` functions do.  64-bit
values travel as two 32-bit shuffles.  Reductions are a five-step
``shfl.sync.bfly`` butterfly over the 32-lane warp; a partial last warp
(block size not a multiple of 32) reduces only its own lanes when it calls
``reduce`` from uniform code (lanes beyond it keep their own values).
"""

from __future__ import annotations

from numba_gpux.language.intrinsics import SG_REDUCE_OPS
from numba_gpux.overlays import Deferred, registry

NVPTX = registry("nvptx")
NVPTX_SM70 = registry("nvptx.sm70")

_ATTR = "alwaysinline nounwind convergent"
_MASK = "declare i32 @llvm.nvvm.activemask() convergent\n"
_SREG = "".join(f"declare i32 @llvm.nvvm.read.ptx.sreg.{r}.{a}()\n"
                for r in ("tid", "ntid") for a in "xyz")
# linear thread index %lt and block size %nt
_LINEAR = """  %tx = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ty = call i32 @llvm.nvvm.read.ptx.sreg.tid.y()
  %tz = call i32 @llvm.nvvm.read.ptx.sreg.tid.z()
  %nx = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %ny = call i32 @llvm.nvvm.read.ptx.sreg.ntid.y()
  %nz = call i32 @llvm.nvvm.read.ptx.sreg.ntid.z()
  %zy = mul i32 %tz, %ny
  %zyy = add i32 %zy, %ty
  %row = mul i32 %zyy, %nx
  %lt = add i32 %row, %tx
  %nxy = mul i32 %nx, %ny
  %nt = mul i32 %nxy, %nz
"""

NVPTX.define("__gpux_sg_barrier", (
    "declare void @llvm.nvvm.bar.warp.sync(i32) convergent\n"
    f"define void @__gpux_sg_barrier() {_ATTR} {{\n"
    "  call void @llvm.nvvm.bar.warp.sync(i32 -1)\n  ret void\n}"))
NVPTX.define("__gpux_sg_barrier_masked", (
    "declare void @llvm.nvvm.bar.warp.sync(i32) convergent\n"
    f"define void @__gpux_sg_barrier_masked(i32 %mask) {_ATTR} {{\n"
    "  call void @llvm.nvvm.bar.warp.sync(i32 %mask)\n  ret void\n}"))
NVPTX.define("__gpux_sg_lane_id", (
    "declare i32 @llvm.nvvm.read.ptx.sreg.laneid()\n"
    f"define i32 @__gpux_sg_lane_id() {_ATTR} {{\n"
    "  %r = call i32 @llvm.nvvm.read.ptx.sreg.laneid()\n  ret i32 %r\n}"))
NVPTX.define("__gpux_sg_size", (
    _SREG + f"define i32 @__gpux_sg_size() {_ATTR} {{\n" + _LINEAR +
    "  %base = and i32 %lt, -32\n  %left = sub i32 %nt, %base\n"
    "  %lt32 = icmp ult i32 %left, 32\n  %r = select i1 %lt32, i32 %left, i32 32\n"
    "  ret i32 %r\n}"))
NVPTX.define("__gpux_sg_width", (  # warpSize, also in a partial warp
    f"define i32 @__gpux_sg_width() {_ATTR} {{\n  ret i32 32\n}}"))
NVPTX.define("__gpux_sg_id", (
    _SREG + f"define i32 @__gpux_sg_id() {_ATTR} {{\n" + _LINEAR +
    "  %r = lshr i32 %lt, 5\n  ret i32 %r\n}"))
NVPTX.define("__gpux_sg_count", (
    _SREG + f"define i32 @__gpux_sg_count() {_ATTR} {{\n" + _LINEAR +
    "  %n31 = add i32 %nt, 31\n  %r = lshr i32 %n31, 5\n  ret i32 %r\n}"))

#: kind -> (shfl mode, clamp operand c)
_MODE = {"shuffle": ("idx", 31), "shuffle_up": ("up", 0), "shuffle_down": ("down", 31),
         "shuffle_xor": ("bfly", 31)}


def _shfl_body(mode: str, c: int, llty: str, val: str, arg: str, out: str) -> str:
    """IR lines shuffling %val (i32/float/i64/double) into %out (uses %mask)."""
    if llty in ("i32", "float"):
        sfx = "i32" if llty == "i32" else "f32"
        return (f"  {out} = call {llty} @llvm.nvvm.shfl.sync.{mode}.{sfx}(i32 %mask, "
                f"{llty} {val}, i32 {arg}, i32 {c})\n")
    b = out[1:]
    pre = "" if llty == "i64" else f"  %{b}.bits = bitcast double {val} to i64\n"
    src = val if llty == "i64" else f"%{b}.bits"
    post = (f"  {out} = or i64 %{b}.lo64, %{b}.hi64s\n" if llty == "i64" else
            f"  %{b}.r = or i64 %{b}.lo64, %{b}.hi64s\n  {out} = bitcast i64 %{b}.r to double\n")
    return (pre +
            f"  %{b}.lo = trunc i64 {src} to i32\n  %{b}.hs = lshr i64 {src}, 32\n"
            f"  %{b}.hi = trunc i64 %{b}.hs to i32\n"
            f"  %{b}.lo2 = call i32 @llvm.nvvm.shfl.sync.{mode}.i32(i32 %mask, i32 %{b}.lo, "
            f"i32 {arg}, i32 {c})\n"
            f"  %{b}.hi2 = call i32 @llvm.nvvm.shfl.sync.{mode}.i32(i32 %mask, i32 %{b}.hi, "
            f"i32 {arg}, i32 {c})\n"
            f"  %{b}.lo64 = zext i32 %{b}.lo2 to i64\n  %{b}.hi64 = zext i32 %{b}.hi2 to i64\n"
            f"  %{b}.hi64s = shl i64 %{b}.hi64, 32\n" + post)


def _shfl_decls(mode: str, llty: str) -> str:
    if llty == "float":
        return f"declare float @llvm.nvvm.shfl.sync.{mode}.f32(i32, float, i32, i32) convergent\n"
    return f"declare i32 @llvm.nvvm.shfl.sync.{mode}.i32(i32, i32, i32, i32) convergent\n"


_LLTY = {"i32": "i32", "i64": "i64", "f32": "float", "f64": "double",
         "u32": "i32", "u64": "i64"}


#: (name suffix, leading parameters, line that sets %mask): the unmasked form takes
#: the active lanes, the masked form its first argument
_FORMS = (("", "", "  %mask = call i32 @llvm.nvvm.activemask()\n"),
          ("_masked", "i32 %mask, ", ""))


def _shuffle(kind: str, sfx: str, masked: bool) -> str:
    mode, c = _MODE[kind]
    llty = _LLTY[sfx]
    name, params, set_mask = _FORMS[masked]
    name = f"__gpux_sg_{kind}{name}_{sfx}"
    return (_MASK + _shfl_decls(mode, llty) +
            f"define {llty} @{name}({params}{llty} %v, i32 %d) {_ATTR} {{\n" + set_mask +
            _shfl_body(mode, c, llty, "%v", "%d", "%r") + f"  ret {llty} %r\n}}")


for _kind in _MODE:
    for _sfx in ("i32", "i64", "f32", "f64"):
        for _masked in (False, True):
            NVPTX.define(f"__gpux_sg_{_kind}{_FORMS[_masked][0]}_{_sfx}",
                         Deferred(_shuffle, _kind, _sfx, _masked))


def _vote(vote: str, masked: bool) -> str:
    sfx, params, set_mask = _FORMS[masked]
    if vote == "ballot":
        decl = "declare i32 @llvm.nvvm.vote.ballot.sync(i32, i1) convergent\n"
        ret, op = "i64", "  %r = call i32 @llvm.nvvm.vote.ballot.sync(i32 %mask, i1 %b)\n"
    else:
        decl = f"declare i1 @llvm.nvvm.vote.{vote}.sync(i32, i1) convergent\n"
        ret, op = "i32", f"  %r = call i1 @llvm.nvvm.vote.{vote}.sync(i32 %mask, i1 %b)\n"
    return (_MASK + decl + f"define {ret} @__gpux_sg_{vote}{sfx}({params}i32 %p) {_ATTR} {{\n" +
            set_mask + "  %b = icmp ne i32 %p, 0\n" + op +
            f"  %z = zext {'i32' if vote == 'ballot' else 'i1'} %r to {ret}\n  ret {ret} %z\n}}")


for _vote_name in ("all", "any", "ballot"):
    for _masked in (False, True):
        NVPTX.define(f"__gpux_sg_{_vote_name}{_FORMS[_masked][0]}", _vote(_vote_name, _masked))


def _combine(op: str, sfx: str, a: str, b: str, out: str) -> tuple[str, str]:
    """(declaration, instruction) combining %a and %b into %out."""
    llty = _LLTY[sfx]
    fl = sfx[0] == "f"
    simple = {"add": "fadd" if fl else "add", "mul": "fmul" if fl else "mul",
              "and": "and", "or": "or", "xor": "xor"}
    if op in simple:
        return "", f"  {out} = {simple[op]} {llty} {a}, {b}\n"
    if fl:
        intr = f"llvm.{op}num.{'f32' if sfx == 'f32' else 'f64'}"
    else:
        intr = f"llvm.{'s' if sfx[0] == 'i' else 'u'}{op}.{llty}"
    return (f"declare {llty} @{intr}({llty}, {llty})\n",
            f"  {out} = call {llty} @{intr}({llty} {a}, {llty} {b})\n")


def _reduce(op: str, sfx: str) -> str:
    llty = _LLTY[sfx]
    decl, _ = _combine(op, sfx, "", "", "%x")
    body = "  %mask = call i32 @llvm.nvvm.activemask()\n"
    cur = "%v"
    for step, off in enumerate((16, 8, 4, 2, 1)):
        body += _shfl_body("bfly", 31, llty, cur, str(off), f"%o{step}")
        body += _combine(op, sfx, cur, f"%o{step}", f"%a{step}")[1]
        cur = f"%a{step}"
    return (_MASK + _shfl_decls("bfly", llty) + decl +
            f"define {llty} @__gpux_sg_reduce_{op}_{sfx}({llty} %v) {_ATTR} {{\n" + body +
            f"  ret {llty} {cur}\n}}")


for _op in SG_REDUCE_OPS:
    for _sfx in ("i32", "u32", "i64", "u64", "f32", "f64"):
        if _op in ("and", "or", "xor") and _sfx[0] == "f":
            continue
        NVPTX.define(f"__gpux_sg_reduce_{_op}_{_sfx}", Deferred(_reduce, _op, _sfx))


def _match(kind: str, sfx: str, masked: bool) -> str:
    """match.any.sync / match.all.sync (sm_70 and newer; older ones use the shared
    definitions from shuffles and ballots)."""
    name, params, set_mask = _FORMS[masked]
    fn = f"__gpux_sg_match_{kind}{name}_{sfx}"
    if kind == "any":
        return (_MASK + f"declare i32 @llvm.nvvm.match.any.sync.{sfx}(i32, {sfx}) convergent\n"
                f"define i64 @{fn}({params}{sfx} %v) {_ATTR} {{\n" + set_mask +
                f"  %r = call i32 @llvm.nvvm.match.any.sync.{sfx}(i32 %mask, {sfx} %v)\n"
                "  %z = zext i32 %r to i64\n  ret i64 %z\n}")
    return (_MASK + f"declare {{ i32, i1 }} @llvm.nvvm.match.all.sync.{sfx}p(i32, {sfx}) "
            "convergent\n"
            f"define i32 @{fn}({params}{sfx} %v) {_ATTR} {{\n" + set_mask +
            f"  %p = call {{ i32, i1 }} @llvm.nvvm.match.all.sync.{sfx}p(i32 %mask, {sfx} %v)\n"
            "  %b = extractvalue { i32, i1 } %p, 1\n  %z = zext i1 %b to i32\n  ret i32 %z\n}")


for _kind in ("any", "all"):
    for _sfx in ("i32", "i64"):
        for _masked in (False, True):
            NVPTX_SM70.define(f"__gpux_sg_match_{_kind}{_FORMS[_masked][0]}_{_sfx}",
                              Deferred(_match, _kind, _sfx, _masked))
