"""``python -m numba_gpux.alias``: run a program with the import alias on.

    python -m numba_gpux.alias script.py [args]   # as `python script.py [args]`
    python -m numba_gpux.alias -m module [args]   # as `python -m module [args]`
    python -m numba_gpux.alias -c code [args]     # as `python -c code [args]`

Interpreter options may come first, as for python (`-W ignore`, `-X dev`, `-O`, `-u`,
`-B`, `-b`, `-bb`, `-q`, `-v`, `-d`, `-R`): the interpreter then starts again with
them, the alias on.  The program runs as ``__main__`` with ``sys.argv`` as Python
would set it, and the Python processes it starts get the alias too
(:func:`numba_gpux.alias.install`).
"""

from __future__ import annotations

import os
import runpy
import sys
import types

from . import install

USAGE = __doc__.split("\n\n")[1]

#: python's options that take a value (as the next argument, or joined: ``-Wignore``)
_WITH_VALUE = ("-W", "-X")
#: python's options without one that only change how the interpreter runs
_FLAGS = frozenset({"-O", "-OO", "-u", "-B", "-b", "-bb", "-q", "-v", "-vv", "-d", "-R"})


def _interpreter_options(argv: list[str]) -> tuple[list[str], list[str]]:
    """The interpreter options that lead *argv*, and the rest."""
    opts, k = [], 0
    while k < len(argv):
        a = argv[k]
        if a in _WITH_VALUE and k + 1 < len(argv):
            opts += argv[k:k + 2]
            k += 2
        elif a[:2] in _WITH_VALUE and len(a) > 2 or a in _FLAGS:
            opts.append(a)
            k += 1
        else:
            break
    return opts, argv[k:]


def _restart(opts: list[str], rest: list[str]) -> None:
    """Run the interpreter again with *opts*, then the alias on *rest*."""
    args = [sys.executable, *opts, "-m", "numba_gpux.alias", *rest]
    sys.stdout.flush()
    sys.stderr.flush()
    if os.name == "posix":
        os.execv(sys.executable, args)
    import subprocess

    raise SystemExit(subprocess.call(args))


def main(argv: list[str]) -> None:
    opts, rest = _interpreter_options(argv)
    if opts:
        _restart(opts, rest)
    if not argv or argv[0] in ("-h", "--help") or (argv[0] in ("-m", "-c") and len(argv) < 2):
        print("usage:\n" + USAGE, file=sys.stderr if not argv or argv[0] not in ("-h", "--help")
              else sys.stdout)
        raise SystemExit(0 if argv and argv[0] in ("-h", "--help") else 2)
    install()
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]  # runpy puts the module's file in sys.argv[0]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        sys.path[0] = ""
        main_module = types.ModuleType("__main__")
        sys.modules["__main__"] = main_module
        exec(compile(argv[1], "<string>", "exec"), main_module.__dict__)
    else:
        if not os.path.exists(argv[0]):
            print(f"python -m numba_gpux.alias: can't open file {argv[0]!r}", file=sys.stderr)
            raise SystemExit(2)
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
        runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
