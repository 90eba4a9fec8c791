"""numba_gpux.cuda.mlir_dialect, what ``numba_cuda_mlir.cuda`` is under the import alias:
the facade with numba-cuda-mlir's ``jit`` defaults and spellings, one row of
JIT_DIFFERENCES each, and nothing else different; numba_gpux.cuda keeps numba.cuda's."""

import numpy as np
import pytest
from numba.core import types

import numba_gpux.cuda as facade
from numba_gpux.cuda import mlir_dialect as dialect
from numba_gpux.errors import UnsupportedError

#: fast, and what differs between Pythons (reading annotations): in the quick subset
pytestmark = pytest.mark.quick

ROWS = dialect.JIT_DIFFERENCES


def _kernel(x, out):
    i = facade.grid(1)
    if i < out.shape[0]:
        out[i] = x[i] * 3


def _device(v):
    return v + 1


def _rows(kind):
    return [name for name, row in ROWS.items() if row.kind == kind]


def test_every_other_name_is_the_facades_own():
    assert dialect.__all__ == facade.__all__
    for name in facade.__all__:
        if name != "jit" and name not in dialect.OWN_NAMES:
            assert getattr(dialect, name) is getattr(facade, name), name
    # names served on first use and vector types too
    assert dialect.libdevice is facade.libdevice and dialect.float32x4 is facade.float32x4
    assert dialect.jit is not facade.jit
    namespace = {}
    exec("from numba_gpux.cuda.mlir_dialect import *", namespace)
    assert namespace["jit"] is dialect.jit and namespace["grid"] is facade.grid


def test_the_table_rows_are_of_the_documented_kinds():
    assert {row.kind for row in ROWS.values()} <= {"default", "spelling", "no-op", "only",
                                                   "dialect"}
    # numba-cuda-mlir's documented differences are all there
    assert {"inline", "opt_level", "signature", "chip", "dump", "print_after_all",
            "abi", "capi", "annotations_as_signatures"} <= set(ROWS)
    for name in _rows("spelling"):
        assert ROWS[name].value in ("func_or_sig", *dialect.valid_keywords()), name


def test_inline_defaults_to_always_here_and_to_never_in_the_facade():
    assert ROWS["inline"] == ("default", "always", ROWS["inline"].note, None)
    assert dialect.jit(device=True)(_device).options.inline is True
    assert dialect.jit(device=True, inline="never")(_device).options.inline is False
    assert facade.jit(device=True)(_device).options.inline is False


def test_opt_level_is_numba_cudas_opt():
    assert dialect.jit(opt_level=1)(_kernel).options.opt == 1
    assert dialect.jit(_kernel).options.opt == 3
    with pytest.raises(TypeError, match="both 'opt_level' and numba.cuda's spelling 'opt'"):
        dialect.jit(opt_level=1, opt=2)


def test_signature_keyword_compiles_eagerly(opencl_device):
    k = dialect.jit(signature="void(float32[::1], float32[::1])")(_kernel)
    assert k.signatures == [(types.float32[::1], types.float32[::1])]
    x = np.arange(40, dtype=np.float32)
    out = np.zeros_like(x)
    k[2, 32](x, out)
    np.testing.assert_array_equal(out, 3 * x)
    with pytest.raises(TypeError, match="both by position and as signature="):
        dialect.jit("void(float32[::1], float32[::1])", signature="void(float32[::1])")


def test_signature_infer_reads_the_annotations():
    def kernel(x: types.float32[::1], n: np.int32):
        pass

    assert dialect.jit(signature="infer")(kernel).signatures == [
        (types.float32[::1], types.int32)]

    def device(v: types.float64) -> types.float64:
        return v * 2

    d = dialect.jit(signature="infer", device=True)(device)
    assert [str(s) for s in d.nopython_signatures] == ["(float64,) -> float64"]

    def untyped_return(v: types.int64):
        return v * 2.5

    d = dialect.jit(signature="infer", device=True)(untyped_return)
    assert [str(s) for s in d.nopython_signatures] == ["(int64,) -> float64"]

    def bare(v):
        return v

    with pytest.raises(TypeError, match="parameter 'v' of .*bare has no annotation"):
        dialect.jit(signature="infer")(bare)

    def python_type(v: int):
        pass

    with pytest.raises(TypeError, match="parameter 'v' of .*python_type is annotated "
                                        "<class 'int'>, not a Numba type"):
        dialect.jit(signature="infer")(python_type)

    def kernel_returning(v: types.int32) -> types.int32:
        return v

    with pytest.raises(TypeError, match="return of .*kernel_returning is annotated .*not void"):
        dialect.jit(signature="infer")(kernel_returning)


def _annotated(result: types.int32[::1], x: types.int32):
    result[0] = x * 2


def _partly_annotated(result: types.int32[::1], x):
    result[0] = x * 2


def test_annotations_are_signatures_by_default_here(opencl_device):
    k = dialect.jit(_annotated)
    assert k.signatures == [(types.int32[::1], types.int32)]  # compiled when decorated
    result = np.zeros(1, dtype=np.int32)
    k[1, 1](result, 21)
    assert result[0] == 42
    # not every parameter annotated, or the option off: compiled on the first call
    assert dialect.jit(_partly_annotated).signatures == []
    assert dialect.jit(annotations_as_signatures=False)(_annotated).signatures == []
    # numba.cuda's facade reads no annotations
    assert facade.jit(_annotated).signatures == []


def test_annotations_and_a_signature_together_are_an_error():
    with pytest.raises(TypeError, match="_annotated has both a signature and type "
                                        "annotations on every parameter"):
        dialect.jit("void(int32[::1], int32)")(_annotated)
    k = dialect.jit("void(int32[::1], int64)", annotations_as_signatures=False)(_annotated)
    assert k.signatures == [(types.int32[::1], types.int64)]
    # nothing to annotate: a signature alone

    def empty():
        pass

    assert dialect.jit("void()")(empty).signatures == [()]
    # the same decorator on two functions: each its own signature
    infer = dialect.jit(signature="infer", device=True)

    def one(v: types.int32):
        return v

    def two(v: types.float32):
        return v

    assert infer(one).signatures == [(types.int32,)]
    assert infer(two).signatures == [(types.float32,)]


@pytest.mark.parametrize("name", _rows("no-op"))
def test_no_op_keywords_are_accepted_and_change_nothing(name):
    row = ROWS[name]
    other = {False: True, None: "x", "sm_100": "sm_90"}.get(row.value, row.value)
    assert other != row.value
    made = dialect.jit(**{name: other})(_kernel)
    assert made.options == dialect.jit(_kernel).options


@pytest.mark.parametrize("name", _rows("only"))
def test_only_keywords_take_numba_cuda_mlirs_default_alone(name):
    row = ROWS[name]
    assert dialect.jit(**{name: row.value})(_kernel).options == dialect.jit(_kernel).options
    with pytest.raises(UnsupportedError, match=f"{name}=.*takes only .*{row.note[:20]}"):
        dialect.jit(**{name: "c" if row.value == "numba" else True})


def test_a_kernel_with_numba_cuda_mlirs_options_runs(opencl_device):
    k = dialect.jit(dump=True, print_after_all=True, chip="sm_90", opt_level=2,
                    lineinfo=True)(_kernel)
    x = np.arange(70, dtype=np.float64)
    out = np.zeros_like(x)
    k[3, 32](x, out)
    np.testing.assert_array_equal(out, 3 * x)


def test_an_unknown_keyword_lists_the_valid_ones():
    with pytest.raises(TypeError) as info:
        dialect.jit(optlevel=2)
    message = str(info.value)
    assert "optlevel" in message
    for valid in ("opt_level", "signature", "inline", "cache", "fastmath", "dump_ptx"):
        assert valid in message
    # the facade itself stays numba.cuda's: no numba-cuda-mlir spellings
    with pytest.raises(TypeError, match="opt_level"):
        facade.jit(opt_level=2)


def test_the_migration_guide_shows_the_table_as_it_is():
    import ast
    import pathlib
    import re

    doc = (pathlib.Path(__file__).resolve().parent.parent / "docs" / "migration.md").read_text()
    section = doc.split("## numba-cuda-mlir's dialect", 1)[1].split("\n## ", 1)[0]
    shown = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1] in ("default", "spelling", "no-op", "only", "dialect"):
            for name in re.findall(r"`([^`]+)`", cells[0]):
                shown[name] = (cells[1], cells[2])
    assert set(shown) == set(ROWS)
    for name, (kind, default) in shown.items():
        row = ROWS[name]
        assert kind == row.kind, name
        if row.kind != "spelling":
            value = None if default == "none" else ast.literal_eval(default.strip("`"))
            assert value == row.value, name
