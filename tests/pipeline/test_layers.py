"""The package stands in layers: no import circle, and every module imports only
from its own layer or below (docs/pipeline.md, "Layers").

Imports are read from the source with ``ast``, at module level and inside
functions alike; ``from . import x`` counts as importing module ``x`` where ``x``
is a module, else as importing the package.  Importing a submodule is not
counted as importing its parent packages (Python runs their ``__init__`` first,
but the package's ``__init__`` is the top of the stack by design).
"""

from __future__ import annotations

import ast
import configparser
import os
from dataclasses import dataclass

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: The layers, from the bottom.  Names are relative to ``numba_gpux``; a name
#: stands for the module and, for a package, every module below it; ``""`` is the
#: package's own ``__init__``.  A module may import modules of its own layer and
#: of the layers below (without a circle), never of a layer above.  Where a lower
#: module needs something from above, the upper one registers itself with it
#: (docs/pipeline.md, "Registration points").  Every module must have a layer.
LAYERS: tuple[tuple[str, ...], ...] = (
    # 1: data and text, nothing of the pipeline
    ("_version", "errors", "config", "irlex", "irverify", "irinfer", "irtext", "divergence", "lockstep", "reducible", "converge", "legalize", "legalize_bits", "legalize_fma", "legalize_fneg", "legalize_logic", "legalize_pairs", "legalize_sizes", "legalize_stack", "overlays", "cai",
     "runtime", "interface", "abi", "lanes", "linking",
     "serialize", "limits", "passes"),
    # 2: the kernel language (typing, lowering) and the one shared context
    ("language", "neutrallib", "context"),
    # 3: the stages
    ("compiler", "stages", "validation", "machines"),
    # 4: keys and stores of compiled code
    ("cache", "cachekey", "cachefile", "cachesource"),
    # 5: the runtime side
    ("devices", "allocation", "memory", "argtypes", "flatten", "launchkeys", "launch", "hooks",
     "lanelaunch", "waiting"),
    # 6: the kernel object (what drivers report of its compiled code, its inspection)
    ("dispatcher", "attributes", "inspection"),
    # 7: the public API
    ("api", "probe", "autotuning", ""),
    # 8: facades, libraries, tools and the built-in targets, on the public contract
    ("cuda", "alias", "algorithms", "random", "extending", "dask", "demo", "__main__",
     "targets"),
)


@dataclass(frozen=True)
class Arrow:
    """One import: *src* imports *dst*, at *path*:*line*."""

    src: str
    dst: str
    path: str
    line: int

    def __str__(self):
        return f"{self.src} -> {self.dst} ({self.path}:{self.line})"


def find_modules(root: str, tops=("numba_gpux", "targets")) -> dict[str, str]:
    """Dotted module name -> file, for every ``.py`` under *tops* of *root*.  The
    top-level ``targets/`` folder is installed as ``numba_gpux.targets`` (setup.cfg's
    ``package_dir``); a linked folder, if any, is skipped."""
    mods = {}
    for top in tops:
        base = os.path.join(root, top)
        for d, dirs, files in os.walk(base):
            dirs[:] = sorted(x for x in dirs if not os.path.islink(os.path.join(d, x))
                             and x != "__pycache__")
            for f in sorted(files):
                if not f.endswith(".py"):
                    continue
                parts = os.path.relpath(os.path.join(d, f), root)[:-3].split(os.sep)
                if parts[0] == "targets":
                    parts.insert(0, "numba_gpux")
                if parts[-1] == "__init__":
                    parts.pop()
                mods[".".join(parts)] = os.path.join(d, f)
    return mods


def import_arrows(mods: dict[str, str], root: str = ROOT) -> list[Arrow]:
    """Every import of one module of *mods* by another, module level and in functions."""
    arrows = []
    for mod, path in sorted(mods.items()):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        pkg = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
        rel = os.path.relpath(path, root)
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = pkg.split(".")
                    parts = parts[:len(parts) - node.level + 1]
                    base = ".".join(parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    targets.append(sub if sub in mods else base)
            for t in targets:
                if t in mods and t != mod:
                    arrows.append(Arrow(mod, t, rel, node.lineno))
    return arrows


def find_circles(arrows: list[Arrow]) -> list[list[Arrow]]:
    """One circle (as its arrows, in order) per group of modules that import each
    other (each strongly connected component of more than one module)."""
    graph: dict[str, dict[str, Arrow]] = {}
    for a in arrows:
        graph.setdefault(a.src, {}).setdefault(a.dst, a)
        graph.setdefault(a.dst, {})
    # Tarjan's algorithm, iterative
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.add(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    comps.append(comp)
    circles = []
    for comp in comps:
        # a shortest way back to the smallest member: a readable circle
        first = min(comp)
        prev = {first: None}
        frontier = [first]
        end = None
        while frontier and end is None:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v]):
                    if w == first:
                        end = v
                        break
                    if w in comp and w not in prev:
                        prev[w] = v
                        nxt.append(w)
                if end is not None:
                    break
            frontier = nxt
        path = [end]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        path.reverse()
        path.append(first)
        circles.append([graph[a][b] for a, b in zip(path, path[1:])])
    return circles


def layer_of(mod: str, layers=LAYERS) -> int | None:
    """The layer (1 = bottom) of dotted module *mod*, or None where it has none."""
    table = {name: i + 1 for i, names in enumerate(layers) for name in names}
    rel = mod.removeprefix("numba_gpux").removeprefix(".")
    if not rel:
        return table.get("")
    while rel:  # the module, else the nearest package above it that has a layer
        if rel in table:
            return table[rel]
        rel = rel.rpartition(".")[0]
    return None


def unplaced(mods, layers=LAYERS) -> list[str]:
    """Modules that have no layer: a new top-level module must be given its room."""
    return [m for m in sorted(mods) if layer_of(m, layers) is None]


def upward_arrows(arrows: list[Arrow], layers=LAYERS) -> list[tuple[Arrow, int, int]]:
    """Imports of a module in a higher layer than the importer's."""
    out = []
    for a in arrows:
        lo, hi = layer_of(a.src, layers), layer_of(a.dst, layers)
        if lo is not None and hi is not None and hi > lo:
            out.append((a, lo, hi))
    return out


def _describe(circle: list[Arrow]) -> str:
    names = " -> ".join([circle[0].src] + [a.dst for a in circle])
    return names + "\n" + "\n".join(f"    {a}" for a in circle)


# -- the project -------------------------------------------------------------------

@pytest.fixture(scope="module")
def project():
    mods = find_modules(ROOT)
    return mods, import_arrows(mods)


def test_modules_found(project):
    mods, arrows = project
    # the reading itself: the core modules and their known imports are seen
    for m in ("numba_gpux", "numba_gpux.compiler", "numba_gpux.language.debug",
              "numba_gpux.targets.cuda.target", "numba_gpux.targets.opencl.overlays.core"):
        assert m in mods
    pairs = {(a.src, a.dst) for a in arrows}
    assert ("numba_gpux.dispatcher", "numba_gpux.compiler") in pairs           # module level
    assert ("numba_gpux.compiler", "numba_gpux.context") in pairs              # in a function
    assert ("numba_gpux.targets.cuda.target", "numba_gpux.targets.cuda.overlays") in pairs


def test_no_import_circle(project):
    _, arrows = project
    circles = find_circles(arrows)
    assert not circles, "import circles:\n" + "\n".join(map(_describe, circles))


def test_every_module_has_a_layer(project):
    mods, _ = project
    missing = unplaced(mods)
    assert not missing, (f"modules without a layer: {', '.join(missing)}; give each one its "
                         f"place in LAYERS (tests/pipeline/test_layers.py) and docs/pipeline.md")


def test_imports_go_down_the_layers(project):
    _, arrows = project
    bad = upward_arrows(arrows)
    assert not bad, "imports of a higher layer:\n" + "\n".join(
        f"    {a} (layer {lo} imports layer {hi})" for a, lo, hi in bad)


def test_version_in_one_place():
    import numba_gpux
    from numba_gpux import _version

    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(ROOT, "setup.cfg"))
    assert numba_gpux.__version__ == _version.__version__ == cfg["metadata"]["version"]


# -- the registration points that stand in for imports of a higher layer ------------

_FINGERPRINT_PURE = """
import sys
import numba_gpux as gpux
from numba_gpux import cachekey
from numba_gpux.devices import resolve_target

assert "numba_gpux.context" not in sys.modules  # nothing built at import
t = resolve_target("cuda", cc=(9, 0))
before = t.fingerprint
untouched = "numba_gpux.context" not in sys.modules
first = cachekey.overlaid_fingerprint(t)
k = gpux.jit(lambda x: None)
gpux.compile(k, "void(float32[::1])", target=t)
print(untouched, before == t.fingerprint, first == cachekey.overlaid_fingerprint(t))
"""


def test_fingerprint_is_pure_and_the_first_code_key_is_the_one_used():
    # a fingerprint reads the description only (no context is imported or built); the
    # overlays' part of the key, read before anything is compiled in a fresh process, is
    # already the one compiled code is keyed on
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-c", _FINGERPRINT_PURE], capture_output=True,
                         text=True, timeout=300, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["True", "True", "True"]


def test_default_emit_is_the_compilers():
    from numba_gpux import interface, machines

    assert interface._provided["emit"] is machines.default_emit
    assert set(interface._provided) == {"emit"}


def test_kernel_objects_are_registered_with_the_language():
    import numba_gpux as gpux
    from numba_gpux.dispatcher import GpuxFunction
    from numba_gpux.language import functions

    def f(x):
        return x + 1

    k = gpux.jit(f, device=True)
    assert functions.is_device_function(k) and not functions.is_device_function(f)
    assert isinstance(k._numba_type_, functions.GpuxFunctionType)
    made = functions.make_device_function(f, inline=True)
    assert type(made) is GpuxFunction and made.is_device and made.options.inline
    assert not functions.make_device_function(f).options.inline


# -- the checker, on made-up packages: it must see what it is meant to find ----------

def _tree(tmp_path, files: dict[str, str]) -> dict[str, str]:
    for rel, src in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(src)
    return find_modules(str(tmp_path))


def test_checker_names_a_circle_through_function_level_imports(tmp_path):
    mods = _tree(tmp_path, {
        "numba_gpux/__init__.py": "from .dispatcher import jit\n",
        "numba_gpux/compiler.py": "def f():\n    from .context import target_context\n",
        "numba_gpux/context.py": "from . import compiler\n",
        "numba_gpux/dispatcher.py": "from .compiler import f\n",
        "targets/cuda/__init__.py": "",
        "targets/cuda/target.py": "from numba_gpux.targets.cuda import toolkit\n",
        "targets/cuda/toolkit.py": "def g():\n    from .target import x\n",
    })
    circles = find_circles(import_arrows(mods, str(tmp_path)))
    named = sorted(_describe(c).splitlines()[0] for c in circles)
    assert named == [
        "numba_gpux.compiler -> numba_gpux.context -> numba_gpux.compiler",
        "numba_gpux.targets.cuda.target -> numba_gpux.targets.cuda.toolkit "
        "-> numba_gpux.targets.cuda.target",
    ]
    fn_arrow = [a for c in circles for a in c if a.src == "numba_gpux.compiler"][0]
    assert (fn_arrow.path, fn_arrow.line) == (os.path.join("numba_gpux", "compiler.py"), 2)


def test_checker_sees_an_upward_import_and_a_module_without_a_layer(tmp_path):
    mods = _tree(tmp_path, {
        "numba_gpux/__init__.py": "from .dispatcher import jit\n",
        "numba_gpux/dispatcher.py": "from .language import types\n",
        "numba_gpux/language/__init__.py": "",
        "numba_gpux/language/types.py": "",
        "numba_gpux/language/debug.py": "def buf():\n    from ..memory import device_array\n",
        "numba_gpux/memory.py": "from . import devices\n",
        "numba_gpux/devices.py": "",
        "numba_gpux/newthing.py": "from . import dispatcher\n",
    })
    arrows = import_arrows(mods, str(tmp_path))
    bad = [(a.src, a.dst, lo, hi) for a, lo, hi in upward_arrows(arrows)]
    assert bad == [("numba_gpux.language.debug", "numba_gpux.memory", 2, 5)]
    assert unplaced(mods) == ["numba_gpux.newthing"]
    assert layer_of("numba_gpux.language.types") == 2
    assert layer_of("numba_gpux") == 7
    assert layer_of("numba_gpux.targets.opencl.overlays.core") == 8
