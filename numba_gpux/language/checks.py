"""User-facing checks of typed kernel code, between Numba's typing and lowering.

Some Python values type fine on the CPU but have no GPU representation: a
Python string held in a variable, a list.  Left to lowering they fail deep
inside (an LLVM IR parse error, a missing ``build_list``); this pass rejects
them first, as an :class:`~numba_gpux.errors.UnsupportedError` naming the
construct and the user's source line.  It runs in the pipeline of every
neutral compile (:class:`GpuxCompiler`).  A lowering function that fails anyway
is reported the same way, with the line and the operation it was lowering
(:func:`lowering_failure`, in ``sourcechecks.py`` with the checks made before typing).
"""

from __future__ import annotations

import contextlib
import operator
import time

import numpy as np
from numba.core import ir, types
from numba.core.compiler import Compiler, DefaultPassBuilder
from numba.core.compiler_lock import global_compiler_lock
from numba.core.compiler_machinery import (AnalysisPass, FunctionPass, PassManager, pass_timings,
                                           register_pass)
from numba.core.errors import new_error_context
from numba.core.event import _registered as _event_listeners
from numba.core.ir_utils import enforce_no_dels, resolve_func_from_module
from numba.core.typed_passes import (DumpParforDiagnostics, InlineOverloads, NopythonRewrites,
                                    NopythonTypeInference)
from numba.core.untyped_passes import (InlineClosureLikes, InlineInlinables, MakeFunctionToJitFunction,
                                      WithLifting)

from ..errors import GpuxUserError, UnsupportedError, format_loc
from .functions import GpuxFunctionType, is_device_function
from .heap import EnableRuntime
from .private_arrays import PrivateArrays

__all__ = ["GpuxCompiler", "RejectHostOnlyValues", "RejectHostContainers", "CaptureDeviceArrays",
           "return_value_loc", "lowering_failure", "shared_array_sites",
           "reject_unsupported_constructs", "SourceLoc", "host_library_failure",
           "attribute_failure"]


def _what(ty) -> str | None:
    """What is wrong with a variable of type *ty* in GPU code, or None."""
    # (fixed-width character values, the elements of NumPy's "S" and "U" arrays, are
    # plain values, as records are: reading and storing them allocates nothing)
    if isinstance(ty, (types.UnicodeType, types.Bytes)):
        return ("strings are not supported in GPU code beyond constants (compared, measured "
                "with len(), passed to device functions, printed): making a new string "
                "allocates")
    if isinstance(ty, (types.List, types.ListType, types.LiteralList)):
        return ("lists are not supported in GPU code; use a tuple, or a local.array / "
                "shared.array of a fixed size")
    if isinstance(ty, (types.Set, types.DictType, types.LiteralStrKeyDict)):
        return "sets and dicts are not supported in GPU code"
    return None


@register_pass(mutates_CFG=False, analysis_only=True)
class RejectHostOnlyValues(AnalysisPass):
    """Raise for the first assignment in the function of a value GPU code cannot hold."""

    _name = "gpux_reject_host_only_values"

    def __init__(self):
        AnalysisPass.__init__(self)

    def run_pass(self, state):
        typemap, calltypes = state.typemap, state.calltypes
        func_id = state.func_ir.func_id
        if _numbas_own(func_id):
            return False
        name = func_id.func_qualname
        for block in state.func_ir.blocks.values():
            for inst in block.body:
                if not isinstance(inst, ir.Assign) or isinstance(inst.value, ir.Arg):
                    continue  # (argument types are checked at launch, with their position)
                what = _what(typemap.get(inst.target.name))
                if what is not None and _reads_a_string(inst.value, typemap):
                    # a string constant (or a copy of one) is static data: comparing it,
                    # taking its length or passing it to a device function (as numba.cuda
                    # code passes mode strings) allocates nothing; what makes a new string
                    # (s + t, s[1:], str(x), s.upper()) is still rejected, here
                    what = None
                if what is None and isinstance(inst.value, ir.Expr):
                    sig = calltypes.get(inst.value)
                    if sig is not None:
                        what = _what(sig.return_type)
                if what is not None:
                    raise UnsupportedError(f"{name}: {what}", inst.loc)
                product = _matrix_product(inst.value, typemap)
                if product is not None:
                    raise UnsupportedError(
                        f"{name}: {product} is computed here: Numba computes it with BLAS, a "
                        f"host library GPU code cannot call; write it as loops over the "
                        f"arrays (or use a library's device routine)", inst.loc)
        return False


def _reads_a_string(value, typemap) -> bool:
    """*value* is a unicode string that already exists: a constant, a global or a copy of
    another variable (not the result of an operation)."""
    if isinstance(value, (ir.Const, ir.Global, ir.FreeVar)):
        return isinstance(value.value, (str, bytes))
    return isinstance(value, ir.Var) and isinstance(
        typemap.get(value.name), (types.UnicodeType, types.StringLiteral))


def _numbas_own(func_id) -> bool:
    """Numba's own implementations (an @overload tried while typing a call) are not the
    user's code: a failure there is the candidate's, and typing goes on."""
    return func_id.modname.partition(".")[0] == "numba"


#: what the message for a dict or set suggests instead
_NO_DICTS = ("GPU code has no dicts or sets (they live in host memory and grow by "
             "allocating); use a tuple, a local.array indexed by a small integer key, or "
             "pass the values as separate kernel arguments")


def _host_container(value, func_ir) -> str | None:
    """What the expression *value* does with a dict or set (as the message says it), or
    None: makes one (a display ``{}``, ``{k: v}``, ``{a, b}``, or a call of ``dict()`` /
    ``set()``), or reads one from a global or closure variable."""
    from numba.core.ir_utils import find_callname, guard

    if isinstance(value, (ir.Global, ir.FreeVar)) and isinstance(value.value, (dict, set)):
        kind = "dict" if isinstance(value.value, dict) else "set"
        where = "global" if isinstance(value, ir.Global) else "closure"
        return f"the {kind} {value.name} (a {where} variable) is read here"
    if not isinstance(value, ir.Expr):
        return None
    made = None
    if value.op in ("build_map", "build_set"):
        made = "a dict {...}" if value.op == "build_map" else "a set {...}"
    elif value.op == "call":
        found = guard(find_callname, func_ir, value)
        if found and found[1] == "builtins" and found[0] in ("dict", "set", "frozenset"):
            made = f"{found[0]}()"
    return None if made is None else f"{made} is made here"


#: builtins that make a new string
_STRING_MAKERS = frozenset(("str", "repr", "format", "hex", "oct", "bin", "chr", "ascii"))
#: NumPy functions whose Numba implementations make Python lists (or strings), which GPU
#: code cannot: what they do, and what to write instead
_LIST_MAKERS = {
    "split": ("returns a list of arrays", "slice the array (x[a:b] is a view)"),
    "array_split": ("returns a list of arrays", "slice the array (x[a:b] is a view)"),
    "hsplit": ("returns a list of arrays", "slice the array (x[:, a:b] is a view)"),
    "vsplit": ("returns a list of arrays", "slice the array (x[a:b] is a view)"),
    "dsplit": ("returns a list of arrays", "slice the array (x[:, :, a:b] is a view)"),
    "broadcast_arrays": ("returns a list of arrays",
                         "index each array as broadcasting would, or np.broadcast_to one"),
    "extract": ("gathers its result in a Python list",
                "use boolean indexing (a[cond]), which makes the array"),
    "moveaxis": ("builds the new order of the axes in a Python list",
                 "call np.transpose(a, axes) with the axes written out"),
    "trim_zeros": ("reads its trim argument as a string",
                   "find the first and last nonzero elements and slice between them"),
}
#: NumPy functions whose Numba implementations call BLAS or LAPACK (host libraries)
_HOST_LINALG = frozenset(("dot", "vdot", "cov", "corrcoef", "matmul"))


def _host_only_call(value, func_ir) -> str | None:
    """What a call in *value* does that GPU code cannot (as the message says it), or
    None: a builtin that makes a new string (``str(x)``), or a NumPy function that
    Numba computes with BLAS or LAPACK on the host (``np.dot``, ``np.linalg.*``)."""
    from numba.core.ir_utils import find_callname, guard

    if not (isinstance(value, ir.Expr) and value.op == "call"):
        return None
    found = guard(find_callname, func_ir, value)
    if not found:
        return None
    fn, mod = found[0], found[1]
    if mod == "builtins" and fn in _STRING_MAKERS:
        return (f"{fn}() makes a new string here: strings are not supported in GPU code "
                f"beyond constants (compared, measured with len(), passed to device "
                f"functions, printed; print(x) prints a value)")
    if mod == "numpy" and fn in _LIST_MAKERS:
        what, instead = _LIST_MAKERS[fn]
        return (f"np.{fn}() is called here: Numba's implementation {what}, and GPU code "
                f"cannot make lists or strings; {instead}")
    if (mod == "numpy" and fn in _HOST_LINALG) or mod == "numpy.linalg":
        name = f"np.{fn}" if mod == "numpy" else f"np.linalg.{fn}"
        return (f"{name}() is called here: Numba computes it with BLAS/LAPACK, host "
                f"libraries GPU code cannot call; write it as loops over the arrays (or use a "
                f"library's device routine)")
    if isinstance(mod, str) and mod.startswith("numpy.random"):
        return (f"np.random.{fn}() is called here: Numba's NumPy random numbers keep their "
                f"state in the host process; in GPU code use a device generator "
                f"(numba_gpux.random, or numba.cuda.random's xoroshiro128p through the "
                f"facade), one state per thread")
    return None


#: the typing key of Numba's ``ndarray.dot`` method (an overload_method's)
_ARRAY_DOT = (types.Array, "dot")


def _matrix_product(value, typemap) -> str | None:
    """What *value* (typed) does that Numba computes with BLAS: ``a @ b`` or
    ``a.dot(b)`` on arrays (as the message says it), or None."""
    if not isinstance(value, ir.Expr):
        return None
    if value.op in ("binop", "inplace_binop") and value.fn is operator.matmul:
        if any(isinstance(typemap.get(v.name), types.Array) for v in (value.lhs, value.rhs)):
            return "a @ b on arrays (a matrix product)"
    if value.op == "call":
        fnty = typemap.get(value.func.name)
        if isinstance(fnty, types.BoundFunction) and isinstance(fnty.this, types.Array) \
                and fnty.typing_key in (_ARRAY_DOT, "array.dot"):
            return "a.dot(b) (a matrix product)"
    return None


@register_pass(mutates_CFG=False, analysis_only=True)
class RejectHostContainers(AnalysisPass):
    """Before typing: a dict or set made in GPU code, a new string (``str(x)``) or a call
    that Numba computes with a host library (``np.dot``) is an error naming the line and
    the construct, not Numba's list of the overloads that failed to type deep inside it
    (or a symbol missing at link time)."""

    _name = "gpux_reject_host_containers"

    def __init__(self):
        AnalysisPass.__init__(self)

    def run_pass(self, state):
        func_ir = state.func_ir
        if _numbas_own(func_ir.func_id):
            return False
        code = getattr(func_ir.func_id, "code", None)
        for c in getattr(code, "co_consts", ()):
            # a comprehension's own code (Python < 3.12; Numba inlines it, and loses the
            # set of a set comprehension, typing set.add on the iterator instead)
            kind = {"<dictcomp>": "dict", "<setcomp>": "set"}.get(getattr(c, "co_name", None))
            if kind is not None:
                raise UnsupportedError(
                    f"{func_ir.func_id.func_qualname}: a {kind} comprehension is made here: "
                    f"{_NO_DICTS}", ir.Loc(code.co_filename, c.co_firstlineno))
        for block in func_ir.blocks.values():
            for inst in block.body:
                if not isinstance(inst, ir.Assign):
                    continue
                made = _host_container(inst.value, func_ir)
                if made is not None:
                    raise UnsupportedError(f"{func_ir.func_id.func_qualname}: {made}: "
                                           f"{_NO_DICTS}", inst.loc)
                host = _host_only_call(inst.value, func_ir)
                if host is not None:
                    raise UnsupportedError(f"{func_ir.func_id.func_qualname}: {host}",
                                           inst.loc)
        return False


class GpuxCompiler(Compiler):
    """Numba's nopython pipeline with :class:`CaptureDeviceArrays` and
    :class:`RejectHostContainers` before typing, :class:`RejectHostOnlyValues` after it,
    and before the rewrites ``half_ufuncs.SeparateHalfLoops`` (float16 loops unfused).

    The pipeline is made once per shape of Numba's builder (what it reads of a compile's
    state), not once per function (its definition and dependency analysis are a part of
    each device function's compile: benchmarks/results/costs.md), and leaves out the
    passes that have nothing to do for the function: :data:`_NEEDS_OPERATIONS`, and the
    parfor diagnostics."""

    def define_pipelines(self):
        state = self.state
        flags = state.flags
        shape = (state.func_ir is None, flags.no_rewrites, flags.auto_parallel.enabled,
                 flags.enable_ssa)
        made = _pipelines.get(shape)
        if made is None:
            made = _pipelines[shape] = _define_pipeline(state)
        passes, analysis = made
        if state.func_ir is None:  # from bytecode: what it does is known
            ops = {ins.opname for ins in state.bc.table.values()}
            passes = [(p, d) for p, d in passes
                      if _NEEDS_OPERATIONS.get(p, ops) & ops]
        if not flags.auto_parallel.enabled:
            passes = [(p, d) for p, d in passes if p is not DumpParforDiagnostics]
        pm = _PassManager("nopython")
        # (a function given as IR, not bytecode -- a lifted loop -- has what it has)
        pm.idle = _IDLE if state.func_ir is None else {
            k: v for k, v in _IDLE.items() if k is not InlineClosureLikes}
        pm.passes = list(passes)
        pm._analysis = analysis
        pm._print_after, pm._print_before, pm._print_wrap = pm._debug_init()
        pm._finalized = True
        return [pm]


class _PassManager(PassManager):
    """Numba's pass manager, each pass run with the same checks, error context and
    timings, without building the details of the ``numba:run_pass`` event for no
    listener (the compile's flags and types formatted for every pass:
    benchmarks/results/costs.md).  With a listener installed, or Numba's IR dumps
    asked for, it is Numba's own."""

    #: pass class -> predicate of the compile's state: True when the pass has nothing
    #: to do (``_IDLE``)
    idle: dict = {}

    def _runPass(self, index, pss, internal_state):
        if _event_listeners.get("numba:run_pass") or self._print_after \
                or self._print_before or self._print_wrap:
            return super()._runPass(index, pss, internal_state)
        idle = self.idle.get(type(pss))
        if idle is not None and idle(internal_state):
            return
        with global_compiler_lock, new_error_context("Pass {name}", name=pss.name()):
            pss.analysis = self._analysis
            times = []
            for step in (pss.run_initialization, pss.run_pass, pss.run_finalizer):
                t = time.perf_counter()
                if step(internal_state) not in (True, False):
                    raise ValueError(f"CompilerPass implementations should return "
                                     f"True/False. CompilerPass with name "
                                     f"'{pss.name()}' did not.")
                times.append(time.perf_counter() - t)
        if isinstance(pss, FunctionPass):
            enforce_no_dels(internal_state.func_ir)
        self.exec_times[f"{index}_{pss.name()}"] = pass_timings(*times)


#: Numba's own rewrites after typing, by module and name: importing the modules that
#: define them would register them, and Numba's closure inliner (``inline_closurecall``)
#: brings its list implementation and overloads along, which the next lowering look-up
#: then installs
_KNOWN_TYPED_REWRITES = frozenset({
    ("numba.core.rewrites.static_getitem", "RewriteStringLiteralGetitems"),
    ("numba.core.rewrites.static_getitem", "RewriteStringLiteralSetitems"),
    ("numba.np.ufunc.array_exprs", "RewriteArrayExprs"),
    ("numba.core.inline_closurecall", "RewriteArrayOfConsts")})


def _no_typed_rewrite_applies(state) -> bool:
    """Whether none of the rewrites Numba runs after typing (``NopythonRewrites``) can
    match the function: its own (string-literal item access, array expressions, arrays
    of constants) all need a variable typed as an array or a string literal, and
    nothing else is registered.  The pass then changes nothing: the IR it would
    post-process again is as the passes before it left it."""
    from numba.core.rewrites import rewrite_registry

    registered = {(r.__module__, r.__qualname__)
                  for r in rewrite_registry.rewrites["after-inference"]}
    if not registered <= _KNOWN_TYPED_REWRITES:
        return False
    return not any(isinstance(t, (types.Array, types.StringLiteral))
                   for t in state.typemap.values())


def _nothing_closure_like(state) -> bool:
    """Whether Numba's ``InlineClosureLikes`` has nothing to do: it inlines closures made
    in the function, ``functools.reduce`` and stencil calls, and (in loops) list
    comprehensions made into arrays.  A function from bytecode with no loop (no
    backward jump), no closure made, and no global, closure variable or attribute
    named or being one of those, leaves it nothing; its clean-up then redoes what
    the IR's processing did."""
    bc = getattr(state, "bc", None)
    if bc is None:
        return False
    for ins in bc.table.values():
        op = ins.opname
        if op in _LOOP_OR_CLOSURE_OPS or "BACKWARD" in op or (
                ins.is_jump and ins.get_jump_target() <= ins.offset):  # (3.10's loops)
            return False
    for block in state.func_ir.blocks.values():
        for inst in block.body:
            if not isinstance(inst, ir.Assign):
                continue
            v = inst.value
            if isinstance(v, (ir.Global, ir.FreeVar)):
                if getattr(v.value, "__name__", None) in _CLOSURE_LIKE_NAMES \
                        or type(v.value).__name__ == "StencilFunc":
                    return False
            elif isinstance(v, ir.Expr) and (v.op == "make_function" or (
                    v.op == "getattr" and v.attr in _CLOSURE_LIKE_NAMES)):
                return False
    return True


def _nothing_inlinable(state) -> bool:
    """Whether Numba's ``InlineInlinables`` has nothing to do: it inlines the calls of
    functions jitted with an ``inline`` option other than ``"never"`` (a global, a
    closure variable or a module's attribute with ``targetoptions``).  A function none
    of whose calls resolves to one leaves it nothing; running it anyway imports
    Numba's closure inliner, with its list implementation, whose registrations the
    first lowering look-up then installs (benchmarks/results/costs.md).  A call whose
    callee cannot be resolved here is left to the pass."""
    func_ir = state.func_ir
    for block in func_ir.blocks.values():
        for inst in block.body:
            if not (isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr)
                    and inst.value.op == "call"):
                continue
            try:
                d = func_ir.get_definition(inst.value.func)
            except Exception:
                continue  # (the pass skips a call whose callee it cannot find)
            op = getattr(d, "op", None)
            if op == "make_function":
                continue  # (closures: another pass's)
            if op == "getattr":
                try:
                    val = resolve_func_from_module(func_ir, d)
                except Exception:
                    return False
            elif isinstance(d, (ir.Global, ir.FreeVar, ir.Const)):
                val = d.value
            elif isinstance(d, (ir.Arg, ir.Expr)):
                continue  # a value made at run time: no targetoptions to read
            else:
                return False
            topt = getattr(val, "targetoptions", None)
            if topt and topt.get("inline") not in (None, "never"):
                return False
    return True


def _no_inline_overload(state) -> bool:
    """Whether Numba's ``InlineOverloads`` has nothing to do: it inlines the
    ``@overload`` (and ``@overload_attribute``/``_method``) implementations declared
    ``inline`` other than ``"never"`` that typing chose for the function's calls,
    operators and attributes (their templates' ``_inline_overloads``).  Asked as the
    pass asks it, expression by expression, without its inliner: running the pass
    imports Numba's closure inliner and its list implementation, whose registrations
    the first lowering look-up then installs (benchmarks/results/costs.md).  Anything
    unexpected leaves it to the pass."""
    find = InlineOverloads
    try:
        for block in state.func_ir.blocks.values():
            for inst in block.body:
                if not (isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr)):
                    continue
                expr = inst.value
                info = (find._get_attr_info(None, state, expr) if expr.op == "getattr"
                        else find._get_callable_info(None, state, expr))
                if not info:
                    continue
                templates, _sig, arg_typs, _method = info
                for t in templates or ():
                    inline = getattr(t, "_inline", None)
                    if inline is not None and not inline.is_never_inline \
                            and arg_typs in t._inline_overloads:
                        return False
    except Exception:
        return False
    return True


_LOOP_OR_CLOSURE_OPS = frozenset({"FOR_ITER", "JUMP_ABSOLUTE", "MAKE_FUNCTION"})
_CLOSURE_LIKE_NAMES = frozenset({"reduce", "stencil"})

#: passes that do nothing for a compile's state where the predicate says so, skipped
_IDLE = {NopythonRewrites: _no_typed_rewrite_applies, InlineClosureLikes: _nothing_closure_like,
         InlineInlinables: _nothing_inlinable, InlineOverloads: _no_inline_overload}

#: Numba's passes that do nothing for a function whose bytecode has none of these
#: operations: lifting ``with`` blocks, and closures made into functions
_NEEDS_OPERATIONS = {
    WithLifting: frozenset({"BEFORE_WITH", "SETUP_WITH", "BEFORE_ASYNC_WITH",
                            "SETUP_ASYNC_WITH", "LOAD_SPECIAL"}),  # (3.10; 3.11-3.13; 3.14)
    MakeFunctionToJitFunction: frozenset({"MAKE_FUNCTION"}),
}

#: pipeline shape -> (passes, dependency analysis), see GpuxCompiler
_pipelines: dict = {}


def _define_pipeline(state) -> tuple:
    pm = DefaultPassBuilder.define_nopython_pipeline(state)
    before = pm.passes[[p for p, _ in pm.passes].index(NopythonTypeInference) - 1][0]
    pm.add_pass_after(CaptureDeviceArrays, before)
    pm.add_pass_after(RejectHostContainers, CaptureDeviceArrays)
    pm.add_pass_after(PrivateArrays, RejectHostContainers)
    pm.add_pass_after(RejectHostOnlyValues, NopythonTypeInference)
    pm.add_pass_after(EnableRuntime, RejectHostOnlyValues)
    # (imported here: it loads Numba's ufunc machinery, which the context has by now)
    from .half_ufuncs import SeparateHalfLoops

    pm.add_pass_after(SeparateHalfLoops, EnableRuntime)
    pm.finalize()
    return tuple(pm.passes), pm._analysis


def return_value_loc(cres):
    """The location of the first ``return`` of a value (not None) in a compiled function."""
    ann = getattr(cres, "type_annotation", None)
    blocks = getattr(ann, "blocks", None)
    typemap = getattr(ann, "typemap", None) or {}
    if not blocks:
        return None
    for block in blocks.values():
        for inst in block.body:
            if isinstance(inst, ir.Return):
                t = typemap.get(inst.value.name)
                if t is not None and t not in (types.none, types.void) \
                        and not isinstance(t, types.Omitted):
                    return inst.loc
    return None


def shared_array_sites(cres, _seen=None) -> list:
    """``(bytes, loc)`` of each static ``shared.array(...)`` the typed code of *cres*
    declares, and the device functions it calls (dynamic ones, ``shape=0``, take no
    static memory): for errors that name the declaration, e.g. shared arrays larger
    than a device allows."""
    from numba.np.numpy_support import as_dtype

    from .memory import _shape_from_sig, shared

    seen = set() if _seen is None else _seen
    if id(cres) in seen:
        return []
    seen.add(id(cres))
    ann = getattr(cres, "type_annotation", None)
    blocks = getattr(ann, "blocks", None) or {}
    typemap = getattr(ann, "typemap", None) or {}
    calltypes = getattr(ann, "calltypes", None) or {}
    sites = []
    for block in blocks.values():
        for inst in block.body:
            if not (isinstance(inst, ir.Assign) and isinstance(inst.value, ir.Expr)
                    and inst.value.op == "call"):
                continue
            fnty = typemap.get(inst.value.func.name)
            sig = calltypes.get(inst.value)
            if sig is None:
                continue
            if isinstance(fnty, GpuxFunctionType):  # a device function: its own code
                try:
                    callee = fnty.dispatcher.get_overload(tuple(sig.args)).cres
                except Exception:  # noqa: BLE001 - not compiled for these types
                    continue
                sites.extend(shared_array_sites(callee, seen))
                continue
            if getattr(fnty, "typing_key", None) is not shared.array:
                continue
            try:
                shape = _shape_from_sig(sig)
                itemsize = as_dtype(sig.return_type.dtype).itemsize
            except Exception:  # noqa: BLE001 - a shape or dtype not known here: not counted
                continue
            if shape != (0,):
                sites.append((int(np.prod(shape)) * itemsize, inst.loc))
    return sites


#: reads_device_arrays' complete answers during one compile (``compile_searches``):
#: function id -> (function, answer); None outside a compile
_answers: dict | None = None


@contextlib.contextmanager
def compile_searches():
    """Within it (a compile, under the compiler lock), :func:`reads_device_arrays`
    answers each function once: a chain of N device functions was searched to its end
    for each one's caller, N * N / 2 functions (globals do not change while Numba
    types)."""
    global _answers
    if _answers is not None:  # a nested compile: the outermost keeps them
        yield
        return
    _answers = {}
    try:
        yield
    finally:
        _answers = None


def reads_device_arrays(py_func) -> bool:
    """Whether *py_func* (or a device function it names, transitively) may read a device
    array from a global or closure variable: its code's global names and its closure
    cells, searched without compiling.  Such a device function is inlined into the
    IR of the kernel that calls it (the dispatcher's ``targetoptions``), where the
    kernel captures the arrays as its own."""
    return _reads_device_arrays(py_func, set())[0]


def _reads_device_arrays(py_func, seen: set) -> tuple[bool, bool]:
    """(the answer for *py_func*, whether it is complete): a function already being
    searched (a recursion) counts as reading none, and an answer that relied on that
    is not kept in ``_answers``."""
    answers = _answers
    if answers is not None:
        got = answers.get(id(py_func))
        if got is not None and got[0] is py_func:
            return got[1], True
    if id(py_func) in seen:
        return False, False
    seen.add(id(py_func))
    code = getattr(py_func, "__code__", None)
    if code is None:
        return False, True
    values = [c.cell_contents for c in (py_func.__closure__ or ()) if _filled(c)]
    names, todo = set(), [code]
    while todo:  # nested code objects (comprehensions, inner functions)
        c = todo.pop()
        names.update(c.co_names)
        todo.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    g = getattr(py_func, "__globals__", {})
    values.extend(g[n] for n in names if n in g)
    found, complete = False, True
    for v in values:
        if is_device_memory(v) or is_foreign_device_memory(v):
            found = True
            break
        if is_device_function(v):
            found, done = _reads_device_arrays(v.py_func, seen)
            if found:
                break
            complete = complete and done
    if answers is not None and (found or complete):
        answers[id(py_func)] = (py_func, found)
    return found, found or complete


def is_device_memory(value) -> bool:
    """Whether *value* is a device array (its class says so by the attribute
    ``_gpux_device_memory_``: the kernel language sits below the runtime's modules)."""
    return getattr(type(value), "_gpux_device_memory_", False)


def is_foreign_device_memory(value) -> bool:
    """Whether *value* is another library's device array: an object that exposes
    ``__cuda_array_interface__`` (CuPy, PyTorch, numba.cuda's, a wrapper of ours)."""
    if is_device_memory(value) or isinstance(value, (type, int, float, complex, str, tuple)):
        return False
    try:
        return hasattr(value, "__cuda_array_interface__")
    except Exception:  # a property that fails: not an array a kernel can read
        return False


#: set by the runtime layer (numba_gpux.memory): ``adopt(obj)``, a device array of ours
#: viewing the memory of another library's array *obj* on the current device, or None
#: where the device cannot use that memory
_adopt_foreign = None


def set_foreign_adopter(adopt) -> None:
    """Install the function that views another library's device array as ours."""
    global _adopt_foreign
    _adopt_foreign = adopt


def _captured_array(value):
    """The device array of ours a kernel captures for the global *value*, or None."""
    if is_device_memory(value):
        return value
    if _adopt_foreign is not None and is_foreign_device_memory(value):
        return _adopt_foreign(value)
    return None


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - raises ValueError on an empty cell
    except ValueError:  # an empty cell
        return False
    return True


@register_pass(mutates_CFG=False, analysis_only=False)
class CaptureDeviceArrays(FunctionPass):
    """Device arrays a kernel reads from globals or closure variables become hidden
    arguments after the kernel's own: the kernel gets each array's memory at every
    launch (a device array has no address a program could hold as a constant), so
    writes to the array between launches are seen, as numba.cuda captures the
    array's pointer.  The arrays are kept in ``state.metadata["gpux_captured"]``.
    (Device arrays are recognized by :func:`is_device_memory`; another library's, by
    :func:`is_foreign_device_memory`, are captured as a view of ours on their memory.)"""

    _name = "gpux_capture_device_arrays"

    def __init__(self):
        FunctionPass.__init__(self)

    def run_pass(self, state):
        func_ir = state.func_ir
        found: dict[int, tuple] = {}  # id(array) -> (array, arg name, arg index)
        for block in func_ir.blocks.values():
            for inst in block.body:
                if isinstance(inst, ir.Assign) and isinstance(inst.value, (ir.Global, ir.FreeVar)):
                    value = inst.value.value
                    got = found.get(id(value))
                    if got is None:
                        arr = _captured_array(value)
                        if arr is None:
                            if is_foreign_device_memory(value):
                                raise GpuxUserError(
                                    f"the global '{inst.value.name}' is another library's "
                                    f"device array (__cuda_array_interface__), which the "
                                    f"default device cannot read; pass the kernel an array of "
                                    f"that device instead\n{format_loc(inst.value.loc)}")
                            continue
                        got = found[id(value)] = (arr, f"captured.{inst.value.name}.{len(found)}",
                                                  func_ir.arg_count + len(found))
                    inst.value = ir.Arg(name=got[1], index=got[2], loc=inst.value.loc)
        if not found:
            return False
        arrays = [a for a, _, _ in found.values()]
        func_ir.arg_names = tuple(func_ir.arg_names) + tuple(n for _, n, _ in found.values())
        func_ir.arg_count += len(arrays)
        state.args = tuple(state.args) + tuple(a._numba_type_ for a in arrays)
        state.metadata["gpux_captured"] = tuple(arrays)
        return True


# errors at the user's line, outside the pipeline (re-exported: compiler.py imports them here)
from .sourcechecks import (SourceLoc, attribute_failure, host_library_failure,  # noqa: E402
                           lowering_failure, reject_unsupported_constructs)
