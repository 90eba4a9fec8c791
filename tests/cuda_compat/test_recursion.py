"""Recursive device functions in the numba.cuda facade.

A function calling itself types as Numba's recursive call (its return type from what
typing found so far) and compiles to a call of itself: on CUDA, whose PTX calls on a
per-thread stack, it is checked with ptxas (and run on an NVIDIA GPU where there is
one); on OpenCL, whose Intel CPU driver refuses recursive SPIR-V ("Unsupported
recursive call"), the launch is a clear error naming the target and the function.
Recursion that typing cannot resolve is a TypingError, never a crash."""

from __future__ import annotations

import numpy as np
import pytest
from numba import types
from numba.core.errors import TypingError

from numba_gpux import ValidationError, cuda


# an eager signature: compiled in the decorator, before the name ``fib_eager`` is bound
@cuda.jit("int64(int64)", device=True)
def fib_eager(n):
    if n < 2:
        return n
    return fib_eager(n - 1) + fib_eager(n - 2)


def _make_inner():
    # a closure variable that is still empty while the decorator compiles
    @cuda.jit("int64(int64)", device=True)
    def fib_inner(n):
        if n < 2:
            return n
        return fib_inner(n - 1) + fib_inner(n - 2)

    return fib_inner


fib_inner = _make_inner()


# no signature: typing must find the return type through the recursive call
@cuda.jit(device=True)
def fib_lazy(n):
    if n < 2:
        return n
    return fib_lazy(n - 1) + fib_lazy(n - 2)


@cuda.jit(device=True)
def runaway(x):
    return runaway(x)


@cuda.jit(device=True)
def nest(n):
    if n <= 0:
        return None
    return (n, nest(n - 1))


@cuda.jit(device=True)
def changes_type(x, y):
    if x > 1 and y > 0:
        return x + changes_type(x - y, y)
    return y


def _fib(n):
    return n if n < 2 else _fib(n - 1) + _fib(n - 2)


def _kernel(fn):
    @cuda.jit
    def kernel(r, x):
        i = cuda.grid(1)
        if i < x.size:
            r[i] = fn(x[i])

    return kernel


FIBS = [fib_eager, fib_inner, fib_lazy]
ARGS = (types.int64[::1], types.int64[::1])


def _own_calls(ptx: str, symbol: str) -> int:
    """How many calls of *symbol* the PTX function *symbol* makes (its own body)."""
    lines = ptx.splitlines()
    # the definition: the last .func line of the symbol (a declaration may come first)
    start = max(i for i, line in enumerate(lines)
                if ".func" in line and line.split("(")[0].split()[-1:] == [symbol])
    calls, depth, opened = 0, 0, False
    for line in lines[start:]:
        depth += line.count("{") - line.count("}")
        opened = opened or "{" in line
        if line.strip().startswith("call") and f" {symbol}," in line:
            calls += 1
        if opened and depth == 0:
            break
    return calls


@pytest.mark.parametrize("fn", FIBS, ids=lambda f: f.__name__)
def test_self_recursion_assembles_for_cuda(ptxas, fn):
    from numba_gpux.targets.cuda.toolkit import ptxas_check

    ptx, _ = cuda.compile_ptx(_kernel(fn).py_func, ARGS, cc=(8, 0))
    ok, log = ptxas_check(ptx, (8, 0))
    assert ok, log
    symbol = next(line.split("(")[0].split()[-1] for line in ptx.splitlines()
                  if ".func" in line and fn.__name__ in line)
    assert _own_calls(ptx, symbol) == 2  # fib(n - 1) + fib(n - 2), calls of itself


def test_inferred_return_type():
    assert fib_lazy.compile("int64(int64)").signature.return_type == types.int64
    assert fib_eager.nopython_signatures[0].return_type == types.int64


@pytest.mark.parametrize("fn", FIBS, ids=lambda f: f.__name__)
def test_self_recursion_runs_on_cuda(cuda_device, fn):
    # depth 10 at most: each level takes a stack frame (64 bytes in ptxas's report) of
    # the thread's stack, 1 KiB unless the context's limit is raised
    x = np.arange(11, dtype=np.int64)
    r = np.zeros_like(x)
    _kernel(fn)[1, 32](r, x)
    assert r.tolist() == [_fib(int(n)) for n in x]


def test_opencl_refuses_recursion_naming_target_and_function(opencl_device):
    x = np.arange(4, dtype=np.int64)
    with pytest.raises(ValidationError) as ei:
        _kernel(fib_lazy)[1, 4](np.zeros_like(x), x)
    msg = str(ei.value)
    assert "recursion is not supported on target 'opencl'" in msg
    assert f"{__name__.rpartition('.')[2]}.fib_lazy -> " in msg


def test_runaway_recursion_is_a_typing_error():
    with pytest.raises(TypingError, match="cannot type infer runaway recursion"):
        @cuda.jit("void()")
        def kernel():
            runaway(1)


def test_return_type_that_grows_is_a_typing_error():
    with pytest.raises(TypingError, match="Return type of recursive function does not "
                                          "converge"):
        @cuda.jit("void()")
        def kernel():
            nest(100)


def test_recursion_with_other_argument_types_is_refused_with_the_line():
    from numba.core.errors import UnsupportedError

    @cuda.jit
    def kernel(r, x, y):
        r[0] = changes_type(x[0], y[0])

    with pytest.raises(UnsupportedError, match="only a function calling itself with the "
                                               "same argument types") as ei:
        cuda.compile_ptx(kernel.py_func, (types.float64[::1], types.int64[::1],
                                          types.float64[::1]), cc=(8, 0))
    assert "test_recursion.py" in str(ei.value)
