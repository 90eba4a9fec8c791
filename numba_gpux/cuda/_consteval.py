"""Compile-time evaluation for ``cuda.experimental.consteval``: a rewrite of the Python
source of a kernel or device function before Numba reads it.

Why the source and not Numba's literal typing: ``for i in consteval(range(n)):`` must
become one copy of the loop body per value, each with ``i`` a constant, so that
``t[i]`` of a heterogeneous tuple (``t = x + y`` of two tuple arguments) types as the
element it names.  Numba's ``literal_unroll`` unrolls only over a tuple value and gives
the body no constant index; its IR has no statement-level unrolling to reuse.  And
``with consteval():`` blocks run arbitrary Python, which only the interpreter can.  The
rewrite is what numba-cuda-mlir does (its AST passes), so programs behave alike.

What is rewritten, in a function that refers to ``consteval`` (by any name bound to it,
or as an attribute of ``numba_gpux.cuda.experimental``):

- ``consteval(expr)`` anywhere: ``expr`` evaluated with the function's globals, closure
  variables, the values of earlier ``name = consteval(...)`` assignments and unrolled
  loop variables, and its parameters standing for their Numba types; the call becomes
  the value (a constant; another object becomes a hidden closure variable);
- ``for target in consteval(iterable):``: unrolled, the target bound to each value in
  turn (``break``/``continue`` in the body are an error: there is no loop left);
- ``with consteval(): block``: the block runs when the function compiles; the names it
  assigns are constants for the rest of the function;
- ``current_target_options()`` inside a ``consteval``: the compile's options as a dict.

The rewritten function keeps the original's file, line numbers, globals (the module's
own dict, read live) and closure cells, so errors name the user's lines.
"""

from __future__ import annotations

import ast
import copy
import inspect
import textwrap
import types as pytypes

from ..errors import UnsupportedError

__all__ = ["ConstevalError", "consteval", "current_target_options", "transform",
           "uses_consteval"]


class ConstevalError(UnsupportedError):
    """A ``consteval`` that cannot be evaluated (or unrolled) when the function compiles;
    the message ends with the file and line."""


class _Loc:
    def __init__(self, filename: str, line: int):
        self.filename, self.line = filename, line


#: what an ``ast.Constant`` may hold (tuples of these too)
_CONSTANT_TYPES = (int, float, complex, str, bytes, bool, type(None))


def _is_constant(value) -> bool:
    if isinstance(value, tuple):
        return all(_is_constant(v) for v in value)
    return isinstance(value, _CONSTANT_TYPES) and not isinstance(value, type)


class _HostBlock:
    """``with consteval():`` run as plain Python: the block simply runs."""

    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def consteval(value=_HostBlock):
    """The value of an expression computed when the kernel compiles (numba_gpux.cuda.experimental).
    On the host: *value* itself, or with no argument a context manager whose block
    runs."""
    return _HostBlock() if value is _HostBlock else value


def current_target_options() -> dict:
    """Inside ``consteval(...)`` in a kernel: the compile's options as a dict.  On the
    host: an empty dict (nothing is being compiled)."""
    return {}


def _markers():
    """(consteval, current_target_options, the module cuda.experimental or None)."""
    import sys

    return consteval, current_target_options, sys.modules.get(f"{__package__}.experimental")


def _cell_values(fn) -> dict:
    out = {}
    for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        try:
            out[name] = cell.cell_contents
        except ValueError:  # an empty cell (a name bound later in the enclosing scope)
            pass
    return out


def uses_consteval(fn) -> bool:
    """Whether *fn*'s code names ``consteval`` (directly, under another name, or as an
    attribute of the experimental module): the cheap test before any rewrite."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return False
    consteval, _, module = _markers()
    by_attribute = "consteval" in code.co_names
    g = getattr(fn, "__globals__", {})
    cells = _cell_values(fn) if code.co_freevars else {}
    for name in code.co_names + code.co_freevars:
        value = cells.get(name) if name in cells else g.get(name)
        if value is consteval or (module is not None and value is module):
            return True
        if by_attribute and isinstance(value, pytypes.ModuleType) and \
                value.__name__.split(".")[0] in ("numba_gpux", "numba_cuda_mlir"):
            return True  # numba_gpux.cuda.experimental.consteval(...), spelled out
    return False


class _Rewriter:
    def __init__(self, fn, argtypes, options: dict):
        self.fn = fn
        self.filename = fn.__code__.co_filename
        self.scope = dict(fn.__globals__)
        self.scope.update(_cell_values(fn))
        self.consts: dict = {}       # name -> value (consteval assignments, loop variables)
        self.loop_vars: set = set()  # the names in consts that are unrolled loop variables
        self.stored: dict = {}       # hidden closure variable -> value
        self.options = dict(options)
        params = list(inspect.signature(fn).parameters)
        self.param_types = dict(zip(params, argtypes))
        self.consteval, self.target_options, self.module = _markers()

    # -------------------------------------------------------------- evaluation
    def context(self) -> dict:
        ctx = dict(self.scope)
        ctx.update(self.stored)
        ctx.update(self.param_types)
        ctx.update(self.consts)
        return ctx

    def error(self, node, text):
        return ConstevalError(text, _Loc(self.filename, getattr(node, "lineno", 0)))

    def _resolves_to(self, node, target) -> bool:
        """Whether the name or attribute chain *node* is the object *target*."""
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return False
        if isinstance(node, ast.Name) and (node.id in self.consts
                                           or node.id in self.param_types):
            return False
        try:
            return eval(compile(ast.Expression(body=node), self.filename, "eval"),  # noqa: S307
                        self.context()) is target
        except Exception:
            return False

    def is_consteval(self, node) -> bool:
        return isinstance(node, ast.Call) and self._resolves_to(node.func, self.consteval)

    def evaluate(self, node):
        """The value of the expression *node* now."""
        node = _TargetOptions(self).visit(copy.deepcopy(node))
        expr = ast.Expression(body=node)
        ast.fix_missing_locations(expr)
        ctx = self.context()
        ctx["__gpux_target_options__"] = self.options
        try:
            return eval(compile(expr, self.filename, "eval"), ctx)  # noqa: S307
        except Exception as e:
            raise self.error(node, f"consteval({ast.unparse(node)}) cannot be evaluated when "
                                   f"the function compiles: {type(e).__name__}: {e}") from None

    def value_node(self, value, where):
        """An expression for *value*: a constant, or a hidden closure variable."""
        if _is_constant(value):
            node = ast.Constant(value=value)
        else:
            name = f"__gpux_consteval_{len(self.stored)}"
            self.stored[name] = value
            node = ast.Name(id=name, ctx=ast.Load())
        return ast.copy_location(node, where)

    def consteval_value(self, call):
        if len(call.args) != 1 or call.keywords:
            raise self.error(call, "consteval() takes one expression (or none, as `with "
                                   "consteval():`)")
        return self.evaluate(call.args[0])

    # -------------------------------------------------------------- statements
    def statements(self, stmts: list) -> list:
        out = []
        for stmt in stmts:
            got = self.statement(stmt)
            out.extend(got if isinstance(got, list) else [got])
        return out

    def statement(self, stmt):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and self.is_consteval(stmt.value):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            value = self.consteval_value(stmt.value)
            for t in targets:
                if isinstance(t, ast.Name):
                    self.consts[t.id] = value
            stmt.value = self.value_node(value, stmt.value)
            for t in targets:
                _Expressions(self).visit(t)
            return stmt
        if isinstance(stmt, ast.For) and self.is_consteval(stmt.iter):
            return self.unroll(stmt)
        if isinstance(stmt, ast.With) and len(stmt.items) == 1 and \
                self.is_consteval(stmt.items[0].context_expr):
            return self.run_block(stmt)
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return stmt  # nested definitions are compiled on their own, if at all
        # compound statements: their expressions, then their bodies in order
        for field, value in ast.iter_fields(stmt):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                setattr(stmt, field, self.statements(value) or [ast.Pass()])
            elif isinstance(value, list):
                setattr(stmt, field, [_Expressions(self).visit(v) if isinstance(v, ast.AST)
                                      else v for v in value])
            elif isinstance(value, ast.AST):
                setattr(stmt, field, _Expressions(self).visit(value))
        return stmt

    def unroll(self, loop: ast.For) -> list:
        _check_no_jumps(self, loop)
        if loop.orelse:
            raise self.error(loop, "a consteval loop cannot have an else: block")
        try:
            values = list(self.consteval_value(loop.iter))
        except TypeError as e:
            raise self.error(loop, f"consteval loop over a value that is not iterable: {e}") \
                from None
        names = _stored_names(loop.body)
        out = []
        saved, saved_vars = dict(self.consts), set(self.loop_vars)
        bound: dict = {}
        for value in values:
            bound = self.bind(loop.target, value)
            reassigned = names & set(bound)
            if reassigned:
                raise self.error(loop, f"the body of a consteval loop assigns to its loop "
                                       f"variable {sorted(reassigned)[0]!r}, which is a "
                                       f"constant in each unrolled copy")
            self.consts.update(bound)
            self.loop_vars.update(bound)
            out.extend(self.statements(copy.deepcopy(loop.body)))
            self.consts, self.loop_vars = dict(saved), set(saved_vars)
        # after the loop its variables hold the last values, as after a Python loop
        for name, value in bound.items():
            out.append(ast.copy_location(ast.Assign(
                targets=[ast.Name(id=name, ctx=ast.Store())],
                value=self.value_node(value, loop)), loop))
        return out or [ast.copy_location(ast.Pass(), loop)]

    def bind(self, target, value) -> dict:
        if isinstance(target, ast.Name):
            return {target.id: value}
        if isinstance(target, (ast.Tuple, ast.List)):
            if any(isinstance(e, ast.Starred) for e in target.elts):
                raise self.error(target, "a consteval loop cannot unpack with *")
            try:
                items = list(value)
            except TypeError:
                raise self.error(target, f"cannot unpack {value!r} into "
                                         f"{ast.unparse(target)}") from None
            if len(items) != len(target.elts):
                raise self.error(target, f"cannot unpack {value!r} into "
                                         f"{ast.unparse(target)}: {len(items)} values")
            out = {}
            for t, v in zip(target.elts, items):
                out.update(self.bind(t, v))
            return out
        raise self.error(target, f"a consteval loop variable must be a name or a tuple of "
                                 f"names, not {ast.unparse(target)}")

    def run_block(self, stmt: ast.With) -> list:
        item = stmt.items[0]
        if item.context_expr.args or item.context_expr.keywords or item.optional_vars:
            raise self.error(stmt, "a consteval block is `with consteval():` (no arguments, "
                                   "no `as`)")
        module = ast.Module(body=copy.deepcopy(stmt.body), type_ignores=[])
        ast.fix_missing_locations(module)
        ctx = self.context()
        ctx["__gpux_target_options__"] = self.options
        before = dict(ctx)
        try:
            exec(compile(module, self.filename, "exec"), ctx)  # noqa: S102
        except Exception as e:
            raise self.error(stmt, f"the consteval block failed when the function compiled: "
                                   f"{type(e).__name__}: {e}") from None
        assigns = []
        for name, value in ctx.items():
            if name == "__builtins__" or (name in before and before[name] is value):
                continue
            self.consts[name] = value
            self.loop_vars.discard(name)
            # the names it assigned are also ordinary variables from here on
            assigns.append(ast.copy_location(ast.Assign(
                targets=[ast.Name(id=name, ctx=ast.Store())],
                value=self.value_node(value, stmt)), stmt))
        return assigns or [ast.copy_location(ast.Pass(), stmt)]


class _Expressions(ast.NodeTransformer):
    """consteval() calls in an expression become their values; unrolled loop variables
    and consteval-assigned names read as their values."""

    def __init__(self, rw: _Rewriter):
        self.rw = rw

    def visit_Call(self, node):
        if self.rw.is_consteval(node):
            return self.rw.value_node(self.rw.consteval_value(node), node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.rw.loop_vars:
            return self.rw.value_node(self.rw.consts[node.id], node)
        return node

    def visit_Lambda(self, node):
        return node


class _TargetOptions(ast.NodeTransformer):
    def __init__(self, rw: _Rewriter):
        self.rw = rw

    def visit_Call(self, node):
        node = self.generic_visit(node)
        if not node.args and not node.keywords and \
                self.rw._resolves_to(node.func, self.rw.target_options):
            return ast.copy_location(ast.Name(id="__gpux_target_options__", ctx=ast.Load()),
                                     node)
        return node


def _stored_names(stmts) -> set:
    """The names the statements *stmts* assign to (outside nested definitions)."""
    out = set()
    for s in stmts:
        for node in ast.walk(s):
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                out.add(node.id)
    return out


def _check_no_jumps(rw: _Rewriter, loop: ast.For) -> None:
    def walk(stmts):
        for s in stmts:
            if isinstance(s, (ast.Break, ast.Continue)):
                raise rw.error(s, f"`{type(s).__name__.lower()}` in a consteval loop: the "
                                  f"loop is unrolled when the function compiles, so there "
                                  f"is no loop to leave")
            if isinstance(s, (ast.For, ast.While, ast.AsyncFor, ast.FunctionDef,
                              ast.AsyncFunctionDef, ast.ClassDef)):
                if isinstance(s, (ast.For, ast.While, ast.AsyncFor)):
                    walk(s.orelse)
                continue
            for field in ("body", "orelse", "finalbody", "handlers"):
                walk(getattr(s, field, []) or [])
            if isinstance(s, ast.Match):
                for case in s.cases:
                    walk(case.body)

    walk(loop.body)


def _source_tree(fn) -> ast.FunctionDef:
    code = fn.__code__
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as e:
        raise ConstevalError(f"{fn.__qualname__} uses consteval, which rewrites the "
                             f"function's source, but its source cannot be read ({e}); "
                             f"define it in a file", _Loc(code.co_filename,
                                                         code.co_firstlineno)) from None
    tree = ast.parse(source)
    ast.increment_lineno(tree, code.co_firstlineno - 1)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef) or fdef.name != fn.__name__:
        raise ConstevalError(f"{fn.__qualname__} uses consteval, which needs its source as "
                             f"a def statement (not a lambda)",
                             _Loc(code.co_filename, code.co_firstlineno))
    fdef.decorator_list = []
    return fdef


def transform(fn, argtypes: tuple = (), options: dict | None = None):
    """The function *fn* with its ``consteval`` evaluated for argument types *argtypes*
    (the module docstring), or *fn* itself where it uses none."""
    if not uses_consteval(fn):
        return fn
    rw = _Rewriter(fn, tuple(argtypes), options or {})
    fdef = _source_tree(fn)
    fdef.body = rw.statements(fdef.body) or [ast.Pass()]
    code = fn.__code__
    outer_params = list(dict.fromkeys(code.co_freevars + tuple(rw.stored)))
    outer = ast.FunctionDef(
        name="__gpux_consteval_scope",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=n) for n in outer_params],
                           vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                           defaults=[]),
        body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[], returns=None, type_comment=None)
    if hasattr(ast, "TypeVar"):  # Python 3.12+: generic functions' type parameters
        outer.type_params = []
    module = ast.Module(body=[outer], type_ignores=[])
    ast.copy_location(outer, fdef)
    ast.fix_missing_locations(module)
    scope_code = compile(module, code.co_filename, "exec", dont_inherit=True).co_consts
    inner = next(c for c in _codes(scope_code) if c.co_name == fdef.name)
    cells = dict(zip(code.co_freevars, fn.__closure__ or ()))
    closure = tuple(cells[n] if n in cells else pytypes.CellType(rw.stored[n])
                    for n in inner.co_freevars)
    new = pytypes.FunctionType(inner, fn.__globals__, fn.__name__, fn.__defaults__,
                               closure or None)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__ = fn.__qualname__
    new.__module__ = fn.__module__
    new.__doc__ = fn.__doc__
    new.__gpux_consteval_source__ = ast.unparse(fdef)
    return new


def _codes(consts):
    for c in consts:
        if isinstance(c, pytypes.CodeType):
            yield c
            yield from _codes(c.co_consts)
