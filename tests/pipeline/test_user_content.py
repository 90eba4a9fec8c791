"""User content cannot change what the compiler does.

What a user writes inside a kernel's strings (print arguments, string constants
compared with ``==`` or passed to device functions), its function, closure-variable
and module names, and the field names of its record arguments are data: spelled
like LLVM IR (``ptr``, ``addrspace(1)``, ``double``, ``i24``, ``define``, ``!dbg``,
``@``, ``%``, quotes, backslashes, Unicode, empty strings), they must compile on
every route exactly as plain words do, and mean the same:

- the OpenCL routes that run here (SPIR-V and OpenCL C, on the Intel OpenCL CPU
  driver) print exactly the given text and compute the expected values;
- the CUDA route's PTX is accepted by ptxas and holds the text's bytes unchanged;
- the Metal route's MSL passes the C++ syntax check of tests/targets/metal.

Each case is written as Python source into a module file of its own (for the name
cases, a module named like IR) and imported, as a user's module would be.  Cases of
non-ASCII content on the compile-only routes (CUDA, Metal) compile in a child process,
so that a compiler that aborts the process fails the case, not the session.  The texts
are a fixed list (each spelling alone and inside a sentence, and the kernels of the
report that started this file) and a few seeded random combinations.  Every kind of
case first compiles a plain control text on each route: a route that cannot compile
the kind at all (Metal has no print) skips it with the control's error as reason.
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import warnings

import numpy as np
import pytest

import numba_gpux as gpux

SEED = 20261204
ROUTES = ("spirv", "opencl-c", "cuda-ptx", "metal")

#: LLVM keyword and type spellings, and characters IR text gives meaning to
SPELLINGS = ("ptr", "addrspace(1)", "double", "half", "i24", "i128", "define", "declare",
             "!dbg", "@", "%", "#0", '"', "\\", 'c"..."', "ünï ✓ λ→∞", "")

#: the texts of the report that started this file, each of which once broke a route
REPORTED = ("pass a ptr here", "pack as i24 please", "double check", "call @sin(x) now",
            "half time", "tail call @llvm.memcpy.p0.p0.i64")


def _random_texts(n: int, seed: int = SEED) -> list[str]:
    """*n* seeded texts mixing spellings, IR fragments and separators."""
    rng = random.Random(seed)
    pieces = [s for s in SPELLINGS if s] + [
        "ptr addrspace(4)", "%x = load i24, ptr %p", "@llvm.memcpy.p0.p0.i64", "!0 = !{}",
        "attributes #0 = { nounwind }", "\\00", "\\0A", "c\"\\22\"", "{", "}", ";", "x86",
        "@\"quoted name\"", "\t", "é", "日本", "float", "i1", "i64 %.1"]
    out = []
    for _ in range(n):
        k = rng.randint(2, 5)
        out.append(rng.choice(["", " ", ", ", "-"]).join(rng.choice(pieces) for _ in range(k)))
    return out


def context(text: str) -> str:
    """*text* inside a sentence (a spelling the text-matching code would see as a word)."""
    return f"a {text} b"


#: the texts of the cases, each also checked inside a sentence (``context``)
TEXTS = list(dict.fromkeys((*SPELLINGS, *REPORTED, *_random_texts(2))))

#: identifiers spelled like IR (function, closure-variable and module names)
NAMES = ("ptr", "addrspace", "double", "half", "i24", "i128", "define", "declare", "dbg",
         "c", "_0", "spir_kernel", "ptr_addrspace_1_", "ünï_ptr", "函数", "λ_double",
         "llvm_memcpy_p0_p0_i64")

CONTROL_TEXT = "plain words"
CONTROL_NAMES = ("plain_function", "plain_value", "plain_kernel", "plain_module")


# -- the cases: Python source written into a module file and imported --

_HEAD = "import numpy as np\nimport numba_gpux as gpux\n\n"


def _other(text: str) -> str:
    return text[::-1] if text[::-1] != text else text + "!"


def text_source(text: str, prints: bool) -> str:
    """A kernel that prints *text* and *text* in a sentence (where the route has print),
    compares both with themselves and with other strings, in the kernel and in device
    functions, and measures them."""
    lines = []
    for k, t in enumerate((text, context(text))):
        o = 6 * k
        lines += [f"    s = {t!r}",
                  *([f"    print({t!r})"] if prints else []),
                  f"    out[{o}] = np.int32(same(s, {t!r}))",
                  f"    out[{o + 1}] = np.int32(same(s, {_other(t)!r}))",
                  f"    out[{o + 2}] = np.int32(s == {t!r})",
                  f"    out[{o + 3}] = np.int32(length(s))",
                  f"    out[{o + 4}] = np.int32(s != {_other(t)!r})",
                  f"    out[{o + 5}] = np.int32(len({t!r}))"]
    return _HEAD + (
        "@gpux.jit(device=True)\n"
        "def same(s, t):\n"
        "    return s == t\n\n"
        "@gpux.jit(device=True)\n"
        "def length(s):\n"
        "    return len(s)\n\n"
        "@gpux.jit\n"
        "def kernel(out):\n" + "\n".join(lines) + "\n")


def text_expected(text: str) -> list[int]:
    out = []
    for t in (text, context(text)):
        o = _other(t)
        out += [1, int(t == o), 1, len(t), int(t != o), len(t)]
    return out


def record_fields(text: str) -> tuple[str, str]:
    """The record's two field names: *text* (NumPy renames an empty one, so the empty
    text is used in a sentence only) and *text* in a sentence."""
    return (text or "empty", context(text))


def record_dtype(text: str) -> np.dtype:
    a, b = record_fields(text)
    return np.dtype([(a, np.float32), (b, np.int32)])


def record_source(text: str) -> str:
    a, b = record_fields(text)
    return _HEAD + (
        "@gpux.jit\n"
        "def kernel(r, out):\n"
        "    i = gpux.grid(1)\n"
        "    if i < r.shape[0]:\n"
        f"        r[i][{a!r}] = np.float32(r[i][{b!r}]) * np.float32(2.0) + np.float32(i)\n"
        f"        out[i] = np.int32(r[i][{a!r}]) + r[i][{b!r}]\n")


def record_inputs(text: str):
    a, b = record_fields(text)
    r = np.zeros(4, record_dtype(text))
    r[b] = np.arange(4, dtype=np.int32) + 3
    want_r = r.copy()
    want_r[a] = want_r[b].astype(np.float32) * 2 + np.arange(4, dtype=np.float32)
    want_out = want_r[a].astype(np.int32) + want_r[b]
    return r, want_r, want_out


def names_source(fn: str, value: str, kern: str) -> str:
    return _HEAD + (
        "@gpux.jit(device=True)\n"
        f"def {fn}(x):\n"
        "    return x * np.float32(2.0) + np.float32(1.0)\n\n"
        "def make():\n"
        f"    {value} = np.float32(1.5)\n\n"
        "    @gpux.jit\n"
        f"    def {kern}(out):\n"
        f"        out[0] = np.int32({fn}({value}))\n"
        f"        out[1] = np.int32({value} * np.float32(2.0))\n"
        f"    return {kern}\n\n"
        "kernel = make()\n")


NAMES_EXPECTED = [4, 3]


def name_triples():
    """(device function, closure variable, kernel, module) names per case: every name of
    NAMES in some role."""
    n = len(NAMES)
    return [(NAMES[k], NAMES[(k + 1) % n], NAMES[(k + 2) % n], NAMES[(k + 3) % n])
            for k in range(0, n, 3)]


@functools.lru_cache(maxsize=None)
def _tmpdir() -> str:
    import tempfile

    d = tempfile.mkdtemp(prefix="gpux_user_content_")
    atexit.register(shutil.rmtree, d, True)  # the test process's own scratch: not left behind
    return d


_loaded: dict = {}


def load(source: str, module: str):
    """The module *module* written with *source* in a temporary folder and imported
    (once per name and source)."""
    key = (module, source)
    if key in _loaded:
        return _loaded[key]
    folder = os.path.join(_tmpdir(), str(len(_loaded)))
    os.makedirs(folder)
    path = os.path.join(folder, f"{module}.py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    spec = importlib.util.spec_from_file_location(module, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.modules.pop(module, None)
    _loaded[key] = mod
    return mod


# -- the routes --

@functools.lru_cache(maxsize=None)
def _opencl_devices():
    spirv = [d for d in gpux.devices() if d.target_name == "opencl"]
    if not spirv:
        return None
    from numba_gpux.targets.opencl_c.target import source_device

    return {"spirv": spirv[0], "opencl-c": source_device(spirv[0])}


@functools.lru_cache(maxsize=None)
def _gxx_include():
    gxx = shutil.which("g++")
    if gxx is None:
        return None
    import tempfile

    inc = tempfile.mkdtemp(prefix="gpux_metal_inc_")
    atexit.register(shutil.rmtree, inc, True)
    stub = os.path.join(os.path.dirname(__file__), "..", "targets", "metal", "metal_stub.h")
    with open(os.path.join(inc, "metal_stdlib"), "w") as f:
        f.write(f'#include "{os.path.abspath(stub)}"\n')
    return gxx, inc


def route_unavailable(route: str) -> str | None:
    """Why *route* cannot be checked on this machine, or None."""
    if route in ("spirv", "opencl-c"):
        return None if _opencl_devices() else "no SPIR-V capable OpenCL device"
    if route == "cuda-ptx":
        from numba_gpux.targets.cuda import toolkit

        return None if toolkit.find_ptxas() else "ptxas is not installed"
    if route == "metal":
        return None if _gxx_include() else "g++ is not installed (the MSL syntax check)"
    raise ValueError(route)


def run_opencl(route: str, kernel, args, capfd, items: int = 1):
    """Launch *kernel* on *items* work-items on *route*: (the arrays after the run, what
    the device printed)."""
    from gpux_testing import selected

    capfd.readouterr()
    with selected(_opencl_devices()[route]):
        dev = [gpux.to_device(a) for a in args]
        kernel[1, items](*dev)
        host = [d.copy_to_host() for d in dev]
    return host, capfd.readouterr().out


_B8 = re.compile(r"\.b8\s+[^\[\s]+\[(\d+)\]\s*=\s*\{([^}]*)\}")


def ptx_constants(ptx: str) -> list[bytes]:
    """The byte-array constants of a PTX module (string constants, format strings)."""
    return [bytes(int(v) for v in m.group(2).split(",")) for m in _B8.finditer(ptx)]


def compile_cuda(kernel, sig) -> str:
    """The PTX of *kernel*, after ptxas accepted it for sm_80."""
    from numba_gpux.targets.cuda import toolkit

    art = gpux.compile(kernel, sig, target="cuda", cc=(8, 0), cubin=False)
    ok, messages = toolkit.ptxas_check(art.text, (8, 0))
    assert ok, f"ptxas rejected the PTX: {messages}\n{art.text}"
    return art.text


def compile_metal(kernel, sig) -> str:
    """The MSL of *kernel*, after the C++17 syntax check against metal_stub.h."""
    import tempfile

    text = gpux.compile(kernel, sig, target="metal").text
    gxx, inc = _gxx_include()
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.metal.cpp")
        with open(src, "w", encoding="utf-8") as f:
            f.write(re.sub(r"\s*\[\[[^\]]*\]\]", "", text))
        r = subprocess.run([gxx, "-fsyntax-only", "-std=c++17", "-Wno-attributes", "-I", inc,
                            "-x", "c++", src], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + "\n" + text
    return text


# -- the checks, one per kind of content --

def _module_name(kind: str, text: str) -> str:
    return f"gpux_uc_{kind}_{TEXTS.index(text) if text in TEXTS else 'control'}"


def check_text(route, text, capfd):
    prints = route != "metal"  # Metal has no print
    mod = load(text_source(text, prints), _module_name(f"text{int(prints)}", text))
    sig = "void(int32[::1])"
    if route == "cuda-ptx":
        ptx = compile_cuda(mod.kernel, sig)
        consts = ptx_constants(ptx)
        for t in (text, context(text)):
            fmt = (t.replace("%", "%%") + "\n").encode()
            assert any(fmt in c for c in consts), (
                f"the PTX holds no format string with the bytes of {t!r}")
        return
    if route == "metal":
        compile_metal(mod.kernel, sig)
        return
    (out,), printed = run_opencl(route, mod.kernel, [np.zeros(12, np.int32)], capfd)
    assert printed == text + "\n" + context(text) + "\n"
    assert out.tolist() == text_expected(text)


def check_record(route, text, capfd):
    from numba import typeof

    mod = load(record_source(text), _module_name("record", text))
    r, want_r, want_out = record_inputs(text)
    sig = (typeof(r), typeof(np.zeros(4, np.int32)))
    if route == "cuda-ptx":
        compile_cuda(mod.kernel, sig)
        return
    if route == "metal":
        compile_metal(mod.kernel, sig)
        return
    (got_r, out), _ = run_opencl(route, mod.kernel, [r, np.zeros(4, np.int32)], capfd, 4)
    assert out.tolist() == want_out.tolist()
    assert got_r.tobytes() == want_r.tobytes()


def check_names(route, names, capfd):
    fn, value, kern, module = names
    mod = load(names_source(fn, value, kern), module)
    sig = "void(int32[::1])"
    if route == "cuda-ptx":
        compile_cuda(mod.kernel, sig)
        return
    if route == "metal":
        compile_metal(mod.kernel, sig)
        return
    (out,), _ = run_opencl(route, mod.kernel, [np.zeros(2, np.int32)], capfd)
    assert out.tolist() == NAMES_EXPECTED


CHECKS = {"text": check_text, "record": check_record, "names": check_names}
CONTROLS = {"text": CONTROL_TEXT, "record": CONTROL_TEXT, "names": CONTROL_NAMES}


_control_errors: dict = {}


def control_error(kind: str, route: str, capfd) -> str | None:
    """Why *route* cannot compile the *kind* of case even with plain content, or None."""
    key = (kind, route)
    if key not in _control_errors:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                CHECKS[kind](route, CONTROLS[kind], capfd)
            _control_errors[key] = None
        except (gpux.errors.ValidationError, gpux.errors.UnsupportedError) as e:
            _control_errors[key] = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        except Exception as e:  # noqa: BLE001 - reported as the route's inability
            try:
                from numba_gpux.targets.cfamily import SourceEmitError
            except ImportError:  # pragma: no cover
                SourceEmitError = ()
            if SourceEmitError and isinstance(e, SourceEmitError):
                _control_errors[key] = f"SourceEmitError: {str(e).splitlines()[0]}"
            else:
                raise
    return _control_errors[key]


# -- cases that fail, and why (none known: a defect found adds its reason here) --

#: (kind, route, content) -> the defect that makes the case fail
KNOWN_FAILURES: dict = {}


def _param(kind, route, content, ident):
    reason = KNOWN_FAILURES.get((kind, route, content))
    marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
    return pytest.param(kind, route, content, id=f"{kind}-{route}-{ident}", marks=marks)


def _ident(k: int, text) -> str:
    if isinstance(text, tuple):
        return ".".join(text).encode("ascii", "backslashreplace").decode()
    short = text.encode("ascii", "backslashreplace").decode()[:24]
    return f"{k}:{short!r}" if text else f"{k}:empty"


def cases():
    out = []
    for route in ROUTES:
        for kind in ("text", "record"):
            for k, t in enumerate(TEXTS):
                out.append(_param(kind, route, t, _ident(k, t)))
        for k, names in enumerate(name_triples()):
            out.append(_param("names", route, names, _ident(k, names)))
    return out


_CHILD = """
import json, sys, warnings
warnings.simplefilter("ignore")
sys.path[:0] = json.loads(sys.argv[1])
import test_user_content as T
kind, route, content = json.loads(sys.stdin.read())
T.CHECKS[kind](route, tuple(content) if kind == "names" else content, None)
"""


def check_in_child(kind, route, content):
    """The check of a compile-only route in a fresh process: a compiler that aborts the
    process (LLVM's report_fatal_error on a symbol it cannot write) fails this case
    instead of ending the test session."""
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([sys.executable, "-c", _CHILD, json.dumps([here, os.path.dirname(here)])],
                       input=json.dumps([kind, route, content]), capture_output=True,
                       text=True, timeout=600)
    if p.returncode != 0:
        how = "aborted the process" if p.returncode < 0 or "LLVM ERROR" in p.stderr else "failed"
        raise AssertionError(f"the compile {how} (exit status {p.returncode}):\n"
                             + "\n".join(p.stderr.strip().splitlines()[-12:]))


def _non_ascii(content) -> bool:
    return not "".join(content if isinstance(content, tuple) else (content,)).isascii()


@pytest.mark.parametrize("kind, route, content", cases())
def test_user_content_compiles_and_means_what_it_says(kind, route, content, capfd):
    why = route_unavailable(route)
    if why:
        pytest.skip(why)
    bad = control_error(kind, route, capfd)
    if bad:
        pytest.skip(f"{route} cannot compile {kind} cases even with plain content: {bad}")
    if route in ("cuda-ptx", "metal") and _non_ascii(content):
        check_in_child(kind, route, content)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        CHECKS[kind](route, content, capfd)


def test_texts_cover_every_spelling():
    """The fixed texts hold each spelling alone and inside a sentence, and the reported
    texts; the random ones are seeded (the same on every run)."""
    assert set(SPELLINGS) | set(REPORTED) <= set(TEXTS)
    assert _random_texts(4) == _random_texts(4)
    assert len(set(_random_texts(4))) == 4
    for t in TEXTS:
        a, b = record_fields(t)
        assert a and b and a != b
    for fn, value, kern, module in name_triples():
        assert fn.isidentifier() and value.isidentifier() and kern.isidentifier()
        assert module.isidentifier() and len({fn, value, kern}) == 3
