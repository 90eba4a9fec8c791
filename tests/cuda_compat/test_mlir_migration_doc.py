"""docs/migration.md's table of numba-cuda-mlir's ``cuda`` module covers every name of
the list enumerated from numba-cuda-mlir's sources (data/numba_cuda_mlir_names.txt, with
where each name comes from), and each of its rows has a known status.  That each name
marked supported exists in numba_gpux.cuda is test_migration_doc.py's check, which
reads every table of the page, this one included."""

import pathlib
import re

HERE = pathlib.Path(__file__).resolve().parent
DOC = HERE.parents[1] / "docs" / "migration.md"
NAMES = HERE / "data" / "numba_cuda_mlir_names.txt"
TITLE = "## Every public name of numba-cuda-mlir's `cuda` module"

#: the statuses of the table: numba.cuda's, and those of names other modules deliver
STATUSES = {"supported", "supported with a difference", "not supported",
            "supported on CUDA; an error elsewhere",
            "supported on CUDA sm_90+/sm_100a; an error elsewhere",
            "delivered with `cuda.experimental`"}


def _enumerated() -> dict[str, str]:
    out = {}
    for line in NAMES.read_text().splitlines():
        if line and not line.startswith("#"):
            name, where = line.split("\t")
            assert name not in out, f"{name} listed twice"
            out[name] = where
    return out


def _section() -> str:
    text = DOC.read_text()
    assert TITLE in text
    return text.split(TITLE, 1)[1].split("\n## ", 1)[0]


def _rows() -> list[list[str]]:
    rows = []
    for line in _section().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and "`" in cells[0] and not set(cells[1]) <= {"-"}:
            rows.append(cells)
    return rows


def test_the_enumerated_list_says_where_it_comes_from():
    head = "\n".join(line for line in NAMES.read_text().splitlines() if line.startswith("#"))
    assert "10ece76b48edd680c2b9bad05a8081921b46f6fc" in head
    for stub in ("__init__.py", "__init__.pyi", "intrin.pyi", "jit.pyi", "libdevice.pyi"):
        assert stub in head
    names = _enumerated()
    assert len(names) > 150
    # what the issue names, and the stubs' kinds of names
    for name in ("local_array", "shared_array", "compile_for", "compile_cubin", "compile_mlir",
                 "inline_ptx", "consteval", "half2", "float16x4", "intrin.cp_async_bulk_load",
                 "intrin.tcgen05_mma", "intrin.elect_sync", "jit", "experimental.struct"):
        assert name in names, name


def test_every_enumerated_name_has_a_row():
    shown = set()
    for cells in _rows():
        shown.update(re.findall(r"`([^`]+)`", cells[0]))
    missing = sorted(set(_enumerated()) - shown)
    assert not missing, f"numba-cuda-mlir names without a row in {DOC.name}: {missing}"


def test_every_row_has_a_known_status_and_says_what_it_is_there():
    rows = _rows()
    assert len(rows) >= 20
    for name, status, there, here in rows:
        assert status in STATUSES, (name[:60], status)
        assert there and here, name[:60]


#: the keywords of numba-cuda-mlir's ``jit`` (jit.pyi at the commit of the name list)
JIT_KEYWORDS = (
    "abi", "capi", "chip", "debug", "device", "dump", "dump_ast", "dump_ast_after_all",
    "dump_cubin", "dump_llvmir", "dump_mlir", "dump_numba_ir", "dump_ptx",
    "experimental_ast_transforms", "extensions", "fastmath", "features", "inline",
    "launch_bounds", "lineinfo", "link", "lto", "max_registers", "opt_level",
    "print_after_all", "print_before_all", "ptxas_options", "shared_memory_carveout",
    "signature",
)


def test_every_jit_keyword_is_taken_by_the_dialect_and_the_facade_or_its_table():
    from numba_gpux.cuda import decorators, mlir_dialect

    facade = set(decorators.valid_keywords())
    table = set(mlir_dialect.JIT_DIFFERENCES)
    for name in JIT_KEYWORDS:
        assert name in mlir_dialect.valid_keywords(), name
        # each is the facade's own keyword or a row of the table (or both: a default)
        assert name in facade or name in table, name
    # the dump options numba-gpux carries out are the facade's, not the dialect's alone
    assert {"dump", "dump_numba_ir", "dump_llvmir", "dump_ptx", "dump_cubin"} <= facade
