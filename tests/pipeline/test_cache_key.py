"""The pre-typing key (numba_gpux/cachekey.py) in one process: what changes it, what
does not, and what it refuses to key.  (Across processes: test_disk_cache.py.)"""

from __future__ import annotations

import enum

import numpy as np
import pytest
from numba.core import types

import numba_gpux as gpux
from numba_gpux import cachekey
from numba_gpux.devices import resolve_target

ARGS = (types.float32[::1],)


@pytest.fixture(scope="module")
def target():
    return resolve_target("opencl")


def _kernel(body_globals: dict, src: str = "a[0] = VALUE"):
    """A kernel whose globals are *body_globals* (a fresh namespace per call)."""
    ns = {"gpux": gpux, **body_globals}
    exec(f"def k(a):\n    {src}\n", ns)  # noqa: S102 - test source
    return gpux.jit(cache=True)(ns["k"])


def test_same_program_same_key_and_values_change_it(target):
    k1 = _kernel({"VALUE": 3})
    k2 = _kernel({"VALUE": 3})
    assert cachekey.kernel_key(k1, ARGS, target) == cachekey.kernel_key(k2, ARGS, target)
    assert cachekey.kernel_key(_kernel({"VALUE": 4}), ARGS, target) != \
        cachekey.kernel_key(k1, ARGS, target)
    assert cachekey.kernel_key(_kernel({"VALUE": 3.0}), ARGS, target) != \
        cachekey.kernel_key(k1, ARGS, target)  # 3 and 3.0 are typed differently
    assert cachekey.kernel_key(k1, (types.float64[::1],), target) != \
        cachekey.kernel_key(k1, ARGS, target)
    opt0 = gpux.jit(cache=True, opt=0)(k1.py_func)
    assert cachekey.kernel_key(opt0, ARGS, target) != cachekey.kernel_key(k1, ARGS, target)
    cuda = resolve_target("cuda")
    assert cachekey.kernel_key(k1, ARGS, cuda) != cachekey.kernel_key(k1, ARGS, target)


def test_global_arrays_are_keyed_by_content(target):
    src = "a[0] = TABLE[1]"
    base = cachekey.kernel_key(_kernel({"TABLE": np.arange(4.0)}, src), ARGS, target)
    assert cachekey.kernel_key(_kernel({"TABLE": np.arange(4.0)}, src), ARGS, target) == base
    changed = np.arange(4.0)
    changed[3] = 9
    assert cachekey.kernel_key(_kernel({"TABLE": changed}, src), ARGS, target) != base
    assert cachekey.kernel_key(_kernel({"TABLE": np.arange(4.0, dtype=np.float32)}, src),
                               ARGS, target) != base


def test_device_functions_are_keyed_through_their_globals(target):
    def make_dev(step):
        ns = {"STEP": step}
        exec("def helper(x):\n    return x + STEP\n", ns)  # noqa: S102
        return gpux.jit(device=True)(ns["helper"])

    src = "a[0] = helper(1.0)"
    one = cachekey.kernel_key(_kernel({"helper": make_dev(1)}, src), ARGS, target)
    assert cachekey.kernel_key(_kernel({"helper": make_dev(1)}, src), ARGS, target) == one
    assert cachekey.kernel_key(_kernel({"helper": make_dev(2)}, src), ARGS, target) != one


def test_enum_members_and_tuples(target):
    class Mode(enum.IntEnum):
        A = 1
        B = 2

    src = "a[0] = MODE + PAIR[1]"
    a = cachekey.kernel_key(_kernel({"MODE": Mode.A, "PAIR": (1, 2)}, src), ARGS, target)
    assert a is not None
    assert cachekey.kernel_key(_kernel({"MODE": Mode.B, "PAIR": (1, 2)}, src), ARGS, target) != a
    assert cachekey.kernel_key(_kernel({"MODE": Mode.A, "PAIR": (1, 3)}, src), ARGS, target) != a


def test_what_the_key_cannot_see_makes_the_kernel_unkeyed(target):
    class Scale(float):
        pass

    class Opaque:
        pass

    for value in (Scale(2.0), Opaque()):
        assert cachekey.kernel_key(_kernel({"VALUE": value}), ARGS, target) is None
    # argument types outside numbers, datetimes, arrays of those and tuples of those
    k = _kernel({"VALUE": 1})
    assert cachekey.kernel_key(k, (types.CPointer(types.float32),), target) is None


def test_overlays_enter_the_key(target):
    from numba_gpux import overlays

    k = _kernel({"VALUE": 1})
    before = cachekey.kernel_key(k, ARGS, target)
    reg = overlays.registry(target.name)
    name = "__gpux_test_cache_key_overlay"
    reg.define(name, "define i32 @__gpux_test_cache_key_overlay() { ret i32 1 }")
    try:
        assert cachekey.kernel_key(k, ARGS, target) != before
    finally:
        reg.remove([name])
    assert cachekey.kernel_key(k, ARGS, target) == before


def test_datetime_arguments_and_constants_are_keyed_with_their_units(target):
    day, hour = types.NPDatetime("D"), types.NPDatetime("h")
    src = "a[0] = (a[1] - EPOCH) // STEP"
    k = _kernel({"EPOCH": np.datetime64("2000-01-01"), "STEP": np.timedelta64(1, "D")}, src)
    keys = {cachekey.kernel_key(k, args, target)
            for args in [(day[::1],), (hour[::1],), (day[:, ::1],), (day, day[::1])]}
    assert None not in keys and len(keys) == 4
    base = cachekey.kernel_key(k, (day[::1],), target)
    for change in [{"EPOCH": np.datetime64("2000-01-02")},
                   {"EPOCH": np.datetime64("2000-01-01T00", "h")},
                   {"STEP": np.timedelta64(2, "D")}]:
        env = {"EPOCH": np.datetime64("2000-01-01"), "STEP": np.timedelta64(1, "D"), **change}
        assert cachekey.kernel_key(_kernel(env, src), (day[::1],), target) != base


# ------------------------------------------------ the key of finished code (cache.cache_key)
def _printing(text: str):
    ns = {"gpux": gpux}
    exec(f"def k(a):\n    print({text!r})\n    a[0] = 1\n", ns)  # noqa: S102 - test source
    return gpux.jit(ns["k"])


def test_code_key_keeps_string_constants_that_look_like_numba_uid_tags(target):
    """Numba's per-process function numbers (``B2v7`` in mangled names) are renumbered
    for the key, but a printed string that spells one is the user's and stays: two
    kernels printing different such strings never share finished code."""
    from numba_gpux.cache import cache_key
    from numba_gpux.compiler import Options

    texts = [_printing(s).kernel_ir(ARGS)[1] for s in ("B2v7", "B2v9")]
    assert 'c"B2v7' in texts[0] and 'c"B2v9' in texts[1]
    keys = {cache_key(t, target, Options()) for t in texts}
    assert len(keys) == 2


def test_code_key_ignores_numba_function_numbers(target):
    """The same function compiled as the 3rd or the 7th of its process has one key."""
    from numba_gpux.cache import cache_key
    from numba_gpux.compiler import Options

    text = ('@.const = internal constant [5 x i8] c"B2v1\\00"\n'
            "define void @_ZN8__main__1kB2v{n}E5ArrayIfLi1E1C7mutable7alignedE(ptr %a) {{\n"
            "  ret void\n}}\n")
    a, b = (cache_key(text.format(n=n), target, Options()) for n in (3, 7))
    assert a == b
    other = text.replace('c"B2v1', 'c"B2v2')
    assert cache_key(other.format(n=3), target, Options()) != a


class _LibraryType(types.Type):
    """A library's extension type (as an intrinsic returns one)."""

    def __init__(self, n):
        super().__init__(name=f"LibraryType{n}")


def test_a_librarys_numba_type_is_keyed_by_name_and_files():
    """A Numba type of a library's own class, read by an intrinsic's typer, is keyed (its
    name, its class's and data model's files) instead of making every kernel of the
    process unkeyed (the disk cache keys all libraries' templates)."""
    from numba.core.extending import intrinsic

    a, b = _LibraryType(3), _LibraryType(4)
    k = cachekey._Keyer(lines=False)
    ka, kb = k.value(a), k.value(b)
    assert ka.startswith("ntype:") and "LibraryType3" in ka and ka != kb
    assert k.value(_LibraryType(3)) == ka

    @intrinsic
    def make(typingctx, x):
        def codegen(context, builder, sig, args):
            return context.get_dummy_value()
        return a(x), codegen

    make  # (registered: its typer's closure reads the type)
    assert cachekey._attributes_key()


def _cast_helper(context, builder, v, ty):
    return context.cast(builder, v, ty, types.int32)


def _other_helper(context, builder, v, ty):
    return context.cast(builder, v, ty, types.int64)


def test_plain_python_helpers_of_code_generators_are_keyed_by_their_code():
    """A plain Python function an intrinsic's code generator calls is keyed by its code
    (as a kernel's function is), so a library with such helpers keeps the disk cache;
    another helper gives another key."""
    k = cachekey._Keyer(lines=False)
    assert k.value(_cast_helper).startswith("pyfn:")
    assert k.value(_cast_helper) != cachekey._Keyer(lines=False).value(_other_helper)
