"""Each workaround of an LLVM, driver or llvmlite fault is tied to the version it was
seen with, and comes up for review once the project requires a newer one.

The table below names every such workaround in the code, the component and version
whose fault (or missing feature) it works around, and the upstream report where one
exists.  Two checks keep it honest:

- the workaround's own docstring or comments name that version (a reader of the code
  sees why it is there and when it can go);
- once ``setup.cfg`` requires a version of the component at or past the one named in
  ``recheck``, the test fails: the workaround may have become dead code, so check it
  against the newly required version (the regression test named in its docstring shows
  the fault) and remove it, or move ``recheck`` on with a note of the version that
  still shows it.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
from dataclasses import dataclass

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ("numba_gpux", "targets")


@dataclass(frozen=True)
class Workaround:
    #: a function, class or module-level name defined in numba_gpux/ or targets/, or
    #: "module:<dotted tail>" for a module whose docstring describes the workaround
    symbol: str
    #: the distribution whose version decides whether the fault is still there
    package: str
    #: how the workaround's docstring or comments name the version it was seen with
    marker: str
    #: the version at which to check the workaround again
    recheck: str
    what: str
    upstream: str | None = None


_LLVMLITE_NEXT = "0.51"   # llvmlite 0.50 carries LLVM 22
_INTEL_NEXT = "2026.3"    # intel-opencl-rt 2026.2 is the driver the faults were seen with

WORKAROUNDS: tuple[Workaround, ...] = (
    # -- llvmlite 0.50's binding layer: what it cannot express, done on the IR's tokens
    Workaround("infer_address_spaces", "llvmlite", "llvmlite 0.50", _LLVMLITE_NEXT,
               "InferAddressSpaces is not in llvmlite's pass builder: the project infers "
               "address spaces itself"),
    Workaround("narrow_shared_atomics", "llvmlite", "llvmlite 0.50", _LLVMLITE_NEXT,
               "no setter for an instruction's sync scope"),
    Workaround("remap_address_spaces", "llvmlite", "llvmlite 0.50", _LLVMLITE_NEXT,
               "no way to change a value's address space in place"),
    Workaround("mark_kernels", "llvmlite", "llvmlite 0.50", _LLVMLITE_NEXT,
               "no calling-convention setter on ValueRef"),
    Workaround("index_ranges", "llvmlite", "llvmlite 0.50", _LLVMLITE_NEXT,
               "no return attribute with an argument (range) on a call"),
    Workaround("_drop_lifetime_markers", "llvmlite", "llvmlite 0.50", _LLVMLITE_NEXT,
               "no way to erase an instruction"),
    # -- LLVM 22 (llvmlite 0.50): back-end faults
    Workaround("sitofp_i1", "llvmlite", "LLVM 22", _LLVMLITE_NEXT,
               "SPIR-V back end: sitofp i1 gives +1.0 for true"),
    Workaround("split_aggregate_phis", "llvmlite", "LLVM 22", _LLVMLITE_NEXT,
               "SPIR-V back end aborts on a phi of a struct or array"),
    Workaround("emit_machine", "llvmlite", "LLVM 22", _LLVMLITE_NEXT,
               "SPIR-V back end keeps state in a target machine between modules"),
    Workaround("module:opencl.spirv_ids", "llvmlite", "LLVM 22", _LLVMLITE_NEXT,
               "SPIR-V back end reuses result ids across modules (static module analysis)",
               "https://github.com/llvm/llvm-project/issues/160613"),
    Workaround("module:opencl.spirv_widths", "llvmlite", "LLVM 22", _LLVMLITE_NEXT,
               "SPIR-V back end loses a truncation under loop strength reduction"),
    Workaround("module:opencl.backend_guard", "llvmlite", "LLVM 22", _LLVMLITE_NEXT,
               "IR shapes the SPIR-V back end aborts the process on"),
    Workaround("prefer_ieee_sqrt", "llvmlite", "LLVM 22", _LLVMLITE_NEXT,
               "NVVMReflect ignores the nvvm-reflect-prec-sqrt module flag: libdevice's "
               "square roots were approximate where NVVM's are IEEE-rounded"),
    Workaround("_replace_intrinsics", "llvmlite", "LLVM 22", _LLVMLITE_NEXT,
               "SPIR-V back end has no llvm.bitreverse for OpenCL"),
    Workaround("_read_inst", "llvmlite", "LLVM 22", _LLVMLITE_NEXT,
               "switch case values are not in the operand list llvmlite shows"),
    # -- Intel's OpenCL CPU runtime 2026.2
    Workaround("byte_allocas", "intel-opencl-rt", "2026.2", _INTEL_NEXT,
               "a typed private array written through byte offsets: stores land in "
               "another work-item's array"),
    Workaround("rematerialize_index_math", "intel-opencl-rt", "2026.2", _INTEL_NEXT,
               "values live across a barrier become gathers (speed)"),
    Workaround("module:opencl.pointer_phis", "intel-opencl-rt", "2026.2", _INTEL_NEXT,
               "loads through a phi of work-group pointers after a switch read 0"),
    Workaround("OPENCL_C", "intel-opencl-rt", "2026.2", _INTEL_NEXT,
               "the OpenCL C compiler: ?: selects in unrolled loops crash SimplifyCFG; "
               "word-typed private arrays lose stores (select(), byte arrays)"),
)


def _definitions() -> dict[str, list[str]]:
    """name -> the source text of each definition of it (with the comments just above)."""
    out: dict[str, list[str]] = {}
    for top in SOURCES:
        for dirpath, _dirs, files in os.walk(os.path.join(ROOT, top)):
            if os.path.islink(dirpath):
                continue
            for fn in files:
                if not fn.endswith(".py"):
                    continue
                path = os.path.join(dirpath, fn)
                with open(path, encoding="utf-8") as f:
                    src = f.read()
                lines = src.splitlines()
                tree = ast.parse(src)
                rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                doc = ast.get_docstring(tree) or ""
                out.setdefault("module:" + rel.split(".", 1)[-1], []).append(doc)
                for node in ast.walk(tree):
                    names = []
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        names = [node.name]
                    elif isinstance(node, ast.Assign) and node.col_offset == 0:
                        names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                    if not names:
                        continue
                    first = node.lineno - 1
                    while first > 0 and lines[first - 1].lstrip().startswith("#"):
                        first -= 1
                    text = "\n".join(lines[first:node.end_lineno])
                    for name in names:
                        out.setdefault(name, []).append(text)
    return out


@pytest.fixture(scope="module")
def definitions():
    return _definitions()


def _required_minimum(package: str) -> Version | None:
    """The lowest version of *package* that setup.cfg's requirements allow (None: unnamed)."""
    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    lines = cfg["options"].get("install_requires", "").splitlines()
    for extra in cfg["options.extras_require"].values():
        lines += extra.splitlines()
    found = None
    for line in lines:
        line = line.strip()
        if not line:
            continue
        req = Requirement(line)
        if req.name.lower() != package.lower():
            continue
        for spec in req.specifier:
            if spec.operator in (">=", "==", "~=", ">"):
                v = Version(spec.version)
                found = v if found is None else max(found, v)
    return found


@pytest.mark.parametrize("w", WORKAROUNDS, ids=lambda w: w.symbol)
def test_workaround_names_its_version(w, definitions):
    texts = definitions.get(w.symbol)
    assert texts, f"the workaround {w.symbol!r} ({w.what}) is no longer in the code: " \
                  f"remove its entry here if it was removed on purpose"
    assert any(w.marker in t for t in texts), (
        f"{w.symbol}: its docstring or comments should name {w.marker!r}, the version "
        f"whose fault it works around ({w.what})")


@pytest.mark.parametrize("w", WORKAROUNDS, ids=lambda w: w.symbol)
def test_workaround_recheck_when_newer_version_required(w):
    required = _required_minimum(w.package)
    assert required is not None, f"setup.cfg names no version of {w.package}"
    assert required < Version(w.recheck), (
        f"setup.cfg now requires {w.package}>={required}: check whether {w.symbol} "
        f"({w.what}, seen with {w.marker}) is still needed and remove it, or move its "
        f"recheck version on")


def test_upstream_links_are_reports():
    for w in WORKAROUNDS:
        if w.upstream is not None:
            assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+",
                                w.upstream), w.upstream
