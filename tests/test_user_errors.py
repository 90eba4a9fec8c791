"""Bad input gets a clear Python exception, raised before anything runs."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from numba.core.errors import TypingError, UnsupportedError

import numba_gpux as gpux
from numba_gpux.errors import UndefinedNameError
from numba_gpux.errors import UnsupportedError as GpuxUnsupportedError


@gpux.jit
def add_one(a):
    i = gpux.grid(1)
    if i < a.size:
        a[i] += 1


def test_unsupported_construct_names_file_line_and_construct():
    @gpux.jit
    def uses_try(a):
        try:
            a[0] = 1
        except Exception:
            a[0] = 2

    with pytest.raises((UnsupportedError, TypingError, gpux.GpuxUserError)) as ei:
        gpux.compile(uses_try, "void(int32[::1])")
    msg = str(ei.value)
    assert __file__.split("/")[-1] in msg
    assert "try" in msg.lower() or "exception" in msg.lower()


def _line_of(fn, marker):
    import inspect
    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, text in enumerate(lines) if marker in text)


def _with_try(a):
    a[0] = 0
    try:   # <- try
        a[0] = 1
    except Exception:
        a[0] = 2


def _with_with(a):
    a[0] = 0
    with open("x"):   # <- with
        a[0] = 1


def _generator(a):
    a[0] = 0
    yield 1   # <- yield


def _undefined(a):
    a[0] = 0
    a[1] = no_such_name_here   # noqa: F821  <- name


def _f_string(a):
    a[0] = 0
    s = f"value {a[0]:.3f}"   # <- f-string
    a[1] = len(s)


def _raise_f_string(a):
    if a[0] < 0:
        raise ValueError(f"negative: {a[0]}")   # <- raise


@pytest.mark.quick
@pytest.mark.parametrize("fn, marker, error, words", [
    (_with_try, "<- try", GpuxUnsupportedError, "try/except"),
    (_with_with, "<- with", GpuxUnsupportedError, "with-blocks"),
    (_generator, "<- yield", GpuxUnsupportedError, "generator"),
    (_undefined, "<- name", UndefinedNameError, "'no_such_name_here' is not defined"),
    # (typing one compiled Numba's str() of the value, which failed inside Numba)
    (_f_string, "<- f-string", GpuxUnsupportedError, "an f-string makes a new string"),
    (_raise_f_string, "<- raise", GpuxUnsupportedError, "an f-string makes a new string"),
], ids=["try", "with", "generator", "undefined", "f-string", "raise-f-string"])
def test_constructs_rejected_before_typing_name_their_own_line(fn, marker, error, words):
    """The check before typing reads the line of each instruction on every Python: from
    ``positions`` on 3.11 and newer, from the line table before (where the protected
    ranges are SETUP_* instructions, not an exception table)."""
    from numba_gpux.language.checks import reject_unsupported_constructs

    with pytest.raises(error) as ei:
        reject_unsupported_constructs(fn)
    msg = str(ei.value)
    assert words in msg
    assert f"line {_line_of(fn, marker)}" in msg, msg


def test_typing_error_names_line_and_operation():
    @gpux.jit
    def bad_types(a):
        i = gpux.grid(1)
        a[i] = "text" + 1  # the line the error must point at

    with pytest.raises(TypingError) as ei:
        gpux.compile(bad_types, "void(int32[::1])")
    msg = str(ei.value)
    assert 'a[i] = "text" + 1' in msg and "test_user_errors.py" in msg


def _misspelt_module_attributes(a):
    i = gpux.gridd(1)  # <- gpux
    a[i] = math.sqr(a[i])  # <- math


def _misspelt_in_device_function(x):
    return math.sqr(x)  # <- device


def test_a_module_attribute_that_does_not_exist_names_the_line():
    """``cuda.gridd(1)`` or ``math.sqr(x)`` in GPU code: Numba's typing let out a bare
    AttributeError naming no line.  Now it is still an AttributeError (numba.cuda's
    type for it), at the statement, with the module's closest names."""
    from numba_gpux.errors import UnknownAttributeError

    with pytest.raises(AttributeError) as ei:
        gpux.compile(gpux.jit(_misspelt_module_attributes), "void(float32[::1])")
    assert isinstance(ei.value, UnknownAttributeError)
    msg = str(ei.value)
    assert "module 'numba_gpux' has no attribute 'gridd'" in msg and "'grid'" in msg
    assert f"line {_line_of(_misspelt_module_attributes, '<- gpux')}" in msg, msg

    dev = gpux.jit(device=True)(_misspelt_in_device_function)

    def calls_it(a):
        a[0] = dev(a[0])

    with pytest.raises(UnknownAttributeError) as ei:
        gpux.compile(gpux.jit(calls_it), "void(float32[::1])")
    msg = str(ei.value)
    assert "module 'math' has no attribute 'sqr'" in msg and "'sqrt'" in msg
    assert f"line {_line_of(_misspelt_in_device_function, '<- device')}" in msg, msg


def test_a_missing_module_attribute_in_a_pruned_branch_compiles():
    """Numba removes a branch on a constant before typing: an attribute that a module
    lacks there is never looked up (as in numba.cuda)."""
    def guarded(a):
        if _HAS_NEWER_API:
            a[0] = math.not_in_this_python(a[0])
        else:
            a[0] = a[0] + 1

    k = gpux.jit(guarded)
    a = gpux.to_device(np.zeros(1, np.float32))
    k[1, 1](a)
    assert a.copy_to_host()[0] == 1


_HAS_NEWER_API = False


def test_a_call_whose_implementation_needs_a_host_library_names_the_line(monkeypatch):
    # Numba's np.linalg asks for SciPy's LAPACK while typing: without SciPy, a bare
    # ImportError ("scipy 0.16+ is required") named no line and suggested an install
    # that could not make the call work in a kernel
    import numba.np.linalg as nb_linalg

    def no_lapack():
        raise ImportError("scipy 0.16+ is required for linear algebra")

    monkeypatch.setattr(nb_linalg, "ensure_blas", no_lapack)

    def products(a):
        m = a @ a  # the line (np.dot and np.linalg.* are refused before typing)
        a[0, 0] = m[0, 0]

    with pytest.raises(GpuxUnsupportedError, match="needs a host library") as ei:
        gpux.compile(products, "void(float64[:, ::1])")
    assert "m = a @ a" in str(ei.value)
    assert isinstance(ei.value.__cause__, ImportError)


def test_a_lowering_that_fails_is_reported_with_the_line_and_the_operation():
    """A lowering function that raises something other than a Numba error (a library's
    intrinsic here) is reported naming the kernel's line and the operation, not as the
    bare exception from inside the code generator; the original is kept as the cause."""
    from numba.core import types
    from numba.extending import intrinsic

    @intrinsic(target="gpux")
    def broken(typingctx, x):
        def codegen(context, builder, sig, args):
            raise ValueError("no code for this")
        return types.int64(x), codegen

    @gpux.jit
    def k(a):
        a[0] = broken(a[1])  # the line the error must point at

    with pytest.raises(gpux.UnsupportedError) as ei:
        gpux.compile(k, "void(int64[::1])")
    msg = str(ei.value)
    assert "generating code for the call of Function(<intrinsic broken>) with (int64) " \
           "failed: ValueError: no code for this" in msg
    assert "a[0] = broken(a[1])" in msg and "test_user_errors.py" in msg
    assert isinstance(ei.value.__cause__, ValueError)


def test_an_undefined_name_is_also_numbas_typing_error(opencl_device):
    """As numba.cuda reports it, also from a device function the kernel calls."""
    @gpux.jit(device=True)
    def uses_floor(x):
        return floor(x)  # noqa: F821 - the undefined name

    @gpux.jit
    def k(a):
        a[0] = uses_floor(1.5)

    with pytest.raises(TypingError, match="NameError: name 'floor' is not defined"):
        k[1, 1](gpux.to_device(np.zeros(1)))
    with pytest.raises(gpux.UnsupportedError) as ei:
        gpux.compile(uses_floor, "float64(float64)", device=True)
    assert isinstance(ei.value, TypingError) and "return floor(x)" in str(ei.value)


def test_views_are_not_allocations(opencl_device):
    @gpux.jit
    def views(a, out):
        q = a.reshape(2, 2)
        out[0] = q[1, 1] + a.T[0] + a[::2][1]

    out = gpux.to_device(np.zeros(1))
    views[1, 1](gpux.to_device(np.arange(4.0)), out)
    assert out.copy_to_host()[0] == 3.0 + 0.0 + 2.0


def test_python_objects_in_kernels_are_rejected_with_the_construct():
    @gpux.jit
    def uses_dict(a):
        d = {}
        d[1] = 2
        a[0] = d[1]

    with pytest.raises(gpux.UnsupportedError) as ei:
        gpux.compile(uses_dict, "void(int64[::1])")
    msg = str(ei.value)
    assert "uses_dict: a dict {...} is made here" in msg and "no dicts or sets" in msg
    assert "test_user_errors.py" in msg and "d = {}" in msg


def _refused_message(name: str, stmt: str, sig: str = "void(float64[::1])") -> str:
    """The UnsupportedError of compiling a kernel *name* (of signature *sig*) whose line
    2 is *stmt*, which must name that line."""
    ns = {"np": np, "gpux": gpux}
    exec(compile(f"def {name}(a):\n    {stmt}\n    a[0] = 1\n", "<kernel source>",
                 "exec"), ns)
    with pytest.raises(gpux.UnsupportedError) as ei:
        gpux.compile(gpux.jit(ns[name]), sig)
    msg = str(ei.value)
    assert 'File "<kernel source>", line 2' in msg
    return msg


@pytest.mark.parametrize("stmt, what", [
    # (a comprehension is its own code object before Python 3.12, a display after it)
    ("d = {i: i for i in range(3)}", ("a dict comprehension", "a dict {...}")),
    ("d = {k for k in range(3)}", ("a set comprehension", "a set {...}")),
    ("d = {1, 2}", ("a set {...}",)), ("d = set()", ("set()",)), ("d = dict(a=1)", ("dict()",))])
def test_dicts_and_sets_made_in_kernels_name_the_line_and_construct(stmt, what):
    msg = _refused_message("containers", stmt)
    assert any(f"containers: {w} is made here" in msg for w in what), msg


@pytest.mark.parametrize("stmt, words", [
    ("s = 'v' + str(a[0])", "str() makes a new string here"),
    ("s = repr(a[0])", "repr() makes a new string here"),
    ("s = hex(7)", "hex() makes a new string here"),
    ("a[0] = np.dot(a, a)", "np.dot() is called here: Numba computes it with BLAS/LAPACK"),
    ("a[0] = np.vdot(a, a)", "np.vdot() is called here"),
    ("a[0] = np.linalg.norm(a)", "np.linalg.norm() is called here"),
    ("a[0] = np.linalg.det(a.reshape(1, 1))", "np.linalg.det() is called here"),
    ("a[0] = np.cov(a).sum()", "np.cov() is called here"),
    ("a[0] = np.corrcoef(a, a)[0, 1]", "np.corrcoef() is called here"),
    ("a[0] = np.random.random()", "np.random.random() is called here: Numba's NumPy random"),
    ("a[0] = np.split(a, 1)[0][0]", "np.split() is called here: Numba's implementation "
                                    "returns a list of arrays"),
    ("a[0] = np.broadcast_arrays(a, a)[0][0]", "np.broadcast_arrays() is called here"),
    ("a[0] = np.extract(a > 0, a).sum()", "np.extract() is called here: Numba's "
                                          "implementation gathers its result in a Python list"),
    ("a[0] = np.moveaxis(a.reshape(1, 1), 0, 1)[0, 0]", "np.moveaxis() is called here"),
    ("a[0] = np.trim_zeros(a).sum()", "np.trim_zeros() is called here")])
def test_new_strings_and_host_library_calls_name_the_line(stmt, words):
    """``str(x)`` (which typing used to compile Numba's implementation of, failing inside
    Numba's files), NumPy's BLAS/LAPACK functions (a symbol missing when the module
    was checked, naming no line) and NumPy functions whose Numba implementations make
    lists (a TypingError deep in Numba's code) are refused before typing, at their line."""
    msg = _refused_message("host_calls", stmt)
    assert f"host_calls: {words}" in msg, msg


@pytest.mark.parametrize("stmt, words", [("a[0] = a @ a", "a @ b on arrays (a matrix product)"),
                                         ("a[0] = a.dot(a)", "a.dot(b) (a matrix product)")])
def test_matrix_products_name_the_line(stmt, words):
    """Where SciPy is installed Numba types them (with BLAS) and the check after typing
    refuses them; without it their typing asks for SciPy's BLAS, and that import's
    failure is refused: an error at the line either way."""
    msg = _refused_message("host_calls", stmt)
    assert (f"host_calls: {words} is computed here: Numba computes it with BLAS" in msg
            or "host_calls: this statement calls an implementation that needs a host "
               "library" in msg), msg


def test_a_matrix_product_without_scipy_names_the_line(monkeypatch):
    """Without SciPy, typing ``a @ b`` raises Numba's ImportError; the kernel's function
    here is made by exec without a module name (``__module__`` None, as kernels built
    from strings are), which the error path must take too."""
    from numba.np import linalg

    def no_scipy():
        raise ImportError("scipy 0.16+ is required for linear algebra")

    monkeypatch.setattr(linalg, "ensure_blas", no_scipy)
    # (types no other test gives a @ a: where SciPy is installed, Numba keeps what it
    # typed, and would not ask for BLAS again)
    msg = _refused_message("host_calls", "a[0] = (a @ a) + 1.0", "void(complex64[::1])")
    assert "host_calls: this statement calls an implementation that needs a host " \
           "library (ImportError: scipy 0.16+ is required" in msg, msg


def test_a_dict_in_a_device_function_names_its_line():
    @gpux.jit(device=True)
    def lookup(x):
        table = {1: 2.0}  # the line the error must point at
        return table[x]

    @gpux.jit
    def k(a):
        a[0] = lookup(1)

    with pytest.raises(gpux.UnsupportedError) as ei:
        gpux.compile(k, "void(float64[::1])")
    assert "lookup: a dict {...} is made here" in str(ei.value)
    assert "table = {1: 2.0}" in str(ei.value)


def test_a_dict_argument_names_the_parameter_kernel_and_call(opencl_device):
    from numba_gpux import cuda

    @cuda.jit
    def scale(out, params):
        out[0] = 1.0

    out = gpux.to_device(np.zeros(2))
    with pytest.raises(gpux.LaunchTypeError) as ei:
        scale[1, 1](out, {"gain": 2.0})  # the line the error must point at
    msg = str(ei.value)
    assert "kernel scale: argument 1 (params) is a dict" in msg
    assert 'scale[1, 1](out, {"gain": 2.0})' in msg and "test_user_errors.py" in msg
    assert isinstance(ei.value, TypeError)
    with pytest.raises(gpux.GpuxUserError, match=r"argument 0 \(out\) is a dict"):
        scale.specialize({"a": 1}, 1.0)


def test_shared_arrays_too_large_name_each_declaration_and_device_function(opencl_device):
    limit = opencl_device.limits["max_shared_bytes"]
    n = limit // 8 + 1

    @gpux.jit(device=True)
    def scratch(x):
        t = gpux.shared.array(n, np.float64)  # the line the error must point at
        t[0] = x
        return t[0]

    @gpux.jit
    def k(a):
        small = gpux.shared.array(4, np.int32)
        small[0] = 1
        a[0] = scratch(a[1]) + small[0]

    d = gpux.to_device(np.zeros(2))
    with pytest.raises(gpux.LaunchError) as ei:
        k[1, 1](d)
    msg = str(ei.value)
    assert "its shared arrays are declared at:" in msg and str(limit) in msg
    assert "t = gpux.shared.array(n, np.float64)" in msg and f"({n * 8} bytes)" in msg
    assert "small = gpux.shared.array(4, np.int32)" in msg and "(16 bytes)" in msg


def test_kernel_without_launch_configuration(opencl_device):
    with pytest.raises(gpux.LaunchError, match=r"add_one\[griddim, blockdim\]"):
        add_one(gpux.device_array(4, np.int32))


@pytest.mark.parametrize("config", [(1.0, 4), (1, (2, 2.5)), (1, 4, 0, 16.0)], ids=repr)
def test_launch_values_of_the_wrong_type_are_type_errors(opencl_device, config):
    # a TypeError, as numba.cuda's, and still a LaunchError
    # numba.cuda's wording for the dimensions ("griddim must be a sequence of integers")
    with pytest.raises(gpux.LaunchTypeError,
                       match="must (be a sequence of integers, got|be an int of bytes)") as ei:
        add_one[config](gpux.device_array(4, np.int32))
    assert isinstance(ei.value, TypeError) and isinstance(ei.value, gpux.LaunchError)
    with pytest.raises(gpux.LaunchError, match="must be positive"):
        add_one[0, 4]
    with pytest.raises(gpux.LaunchError, match=r"griddim must be a sequence of 1, 2 or 3 "
                                               r"integers, got \[1, 2, 3, 4\]"):
        add_one[(1, 2, 3, 4), 4]


def test_wrong_number_of_arguments_before_anything_runs(opencl_device):
    d = gpux.to_device(np.zeros(4, np.int32))
    with pytest.raises(gpux.LaunchError, match="takes 1 argument"):
        add_one[1, 4](d, d)
    np.testing.assert_array_equal(d.copy_to_host(), 0)


@pytest.mark.parametrize("bad", ["a string", {"a": 1}, object(), [1, 2, 3]], ids=repr)
def test_wrong_argument_type(opencl_device, bad):
    with pytest.raises((gpux.GpuxUserError, TypingError)):
        add_one[1, 4](bad)


@pytest.mark.parametrize("bad", [[1.0, 2.0], "hello", {1, 2}, b"abc",
                                 np.array([1, "x"], dtype=object)],
                         ids=["list", "str", "set", "bytes", "object-array"])
def test_argument_types_no_kernel_takes_are_launch_type_errors(opencl_device, bad):
    # (a LaunchError and a TypeError, raised before anything runs, as a dict's)
    with pytest.raises(gpux.LaunchTypeError, match="cannot be passed to a kernel"):
        add_one[1, 4](bad)


def test_argument_type_the_kernel_cannot_use(opencl_device):
    with pytest.raises(TypingError, match="a.size|getattr|size"):
        add_one[1, 4](3.0)  # a float has no .size and cannot be indexed


def test_block_larger_than_the_device_allows(opencl_device):
    d = gpux.to_device(np.zeros(4, np.int32))
    too_many = opencl_device.max_threads_per_block * 2
    with pytest.raises(gpux.LaunchError, match="threads per block"):
        add_one[1, too_many](d)
    np.testing.assert_array_equal(d.copy_to_host(), 0)


@pytest.mark.parametrize("cfg", [(0, 4), (1, -2), ((1, 2, 3, 4), 1), ("a", 1), (1.5, 2)])
def test_bad_launch_configuration(cfg):
    with pytest.raises(gpux.LaunchError):
        add_one[cfg]


def test_float_dimensions_rejected_even_after_a_cached_int_launch():
    cfg = add_one[1, 16]
    assert add_one[1, 16] is cfg  # cached
    with pytest.raises(gpux.LaunchError):
        add_one[1.0, 16]
    with pytest.raises(gpux.LaunchError):
        add_one[(1, 1), (16.0, 1)]


def test_launch_configuration_needs_a_tuple():
    with pytest.raises(gpux.LaunchError):
        add_one[4]


def test_device_function_cannot_be_launched_or_called_on_host():
    @gpux.jit(device=True)
    def f(x):
        return x + 1

    with pytest.raises(gpux.GpuxUserError):
        f[1, 1]
    with pytest.raises(gpux.GpuxUserError):
        f(1)


def test_kernel_returning_a_value_is_rejected():
    @gpux.jit
    def returns(a):
        return a[0]

    with pytest.raises(gpux.GpuxUserError, match="must return void"):
        gpux.compile(returns, "int32(int32[::1])")
    with pytest.raises(gpux.GpuxUserError, match="must not return"):
        gpux.compile(returns, "void(int32[::1])")


def test_unknown_jit_option_and_target():
    with pytest.raises(gpux.GpuxUserError, match="unexpected options"):
        gpux.jit(blocksize=3)
    with pytest.raises(gpux.GpuxUserError, match="unknown target"):
        gpux.compile(add_one, "void(int32[::1])", target="no-such-target")
    with pytest.raises(gpux.GpuxUserError):
        gpux.jit(opt=7)


def _run(code, **env):
    e = dict(os.environ)
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=e,
                          timeout=120)


def test_no_usable_device_says_what_was_looked_for_and_how_to_install(monkeypatch):
    import sys as _sys

    devmod = _sys.modules["numba_gpux.devices"]
    monkeypatch.setattr(devmod, "_devices", [])  # as discovery reports on a machine with none
    monkeypatch.setattr(devmod, "_selected", None)
    monkeypatch.delenv("NUMBA_GPUX_DEVICE", raising=False)
    with pytest.raises(gpux.DeviceNotFoundError) as ei:
        gpux.default_device()
    msg = str(ei.value)
    assert "no usable GPU device" in msg and "pip install 'numba-gpux[cpu]'" in msg
    assert "opencl" in msg and "python -m numba_gpux info" in msg


def test_environment_variable_selects_the_device():
    res = _run("import numba_gpux as g; print(g.default_device().spec)",
               NUMBA_GPUX_DEVICE="opencl:cpu:0")
    assert res.stdout.strip() == "opencl:cpu:0", res.stderr
    res = _run("import numba_gpux as g\ntry:\n    g.default_device()\n"
               "except g.DeviceNotFoundError as e:\n    print('ERR', e)\n",
               NUMBA_GPUX_DEVICE="opencl:gpu:3")
    assert "ERR" in res.stdout and "opencl:gpu:3" in res.stdout


def test_device_spec_that_matches_nothing():
    res = _run("import numba_gpux as g\ntry:\n    g.select_device('opencl:gpu:7')\n"
               "except g.DeviceNotFoundError as e:\n    print('ERR', e)\n")
    assert "ERR" in res.stdout and "opencl:gpu:7" in res.stdout
    with pytest.raises(gpux.DeviceNotFoundError):
        gpux.select_device("nosuchtarget:0")


SPACE_NAME = "local"


def test_builtin_getattr_of_a_module_is_a_typing_error_not_a_crash():
    from numba.core.errors import TypingError

    from numba_gpux import cuda

    def k(x):
        arr = getattr(cuda, SPACE_NAME).array(4, dtype=np.float64)
        arr[0] = x[0]

    with pytest.raises(TypingError, match="getattr"):
        gpux.compile(k, "void(float64[::1])", target="opencl")


def test_another_librarys_device_array_the_device_cannot_read_is_named(opencl_device):
    class OnAnotherDevice:  # memory the OpenCL device cannot share (a CUDA pointer)
        __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "strides": None,
                                    "data": (0x7F0000000000, False), "version": 3}

    table = OnAnotherDevice()

    @gpux.jit
    def k(out):
        i = gpux.grid(1)
        if i < out.size:
            out[i] = table[i]

    out = gpux.to_device(np.zeros(4, np.float32), device=opencl_device)
    with pytest.raises(gpux.GpuxUserError) as e:
        k[1, 4](out)
    assert "the global 'table' is another library's device array" in str(e.value)
    assert "out[i] = table[i]" in str(e.value)  # the user's line
