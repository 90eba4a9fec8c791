#!/usr/bin/env bash
# Run a library's own GPU tests, unchanged, with numba.cuda played by numba_gpux.cuda
# (default), or on numba-cuda's simulator for the reference count (--sim).
#
#   benchmarks/library_tests.sh [--sim] [--python PY] [--out DIR] SRC_DIR TEST_FILE... [-- PYTEST_ARGS...]
#
# SRC_DIR is the library's source tree (an sdist unpacked, or a checkout); TEST_FILEs are
# relative to it. Its package is imported from SRC_DIR (or SRC_DIR/src for a src layout)
# unless it is installed; its runtime dependencies must be installed in PY's environment.
#
# facade mode: PY's environment has numba-gpux; pytest runs under `python -m numba_gpux.alias`,
#   so `from numba import cuda` yields numba_gpux.cuda in the pytest process and in any
#   Python process it starts. NUMBA_ENABLE_CUDASIM is unset. The device is numba-gpux's
#   default one; NUMBA_GPUX_DEVICE=opencl:cpu:0 pins Intel's OpenCL CPU driver.
# --sim: PY's environment has numba-cuda (not aliased); NUMBA_ENABLE_CUDASIM=1.
#
# Prints pytest's report, then one line `LABEL: N passed, N failed, N skipped` (errors
# count as failed, xfails as skipped). Exit 0: nothing failed; 1: some failure;
# 2: the run could not be made (bad arguments, the alias not in effect, no test collected).
# LIBTEST_TIMEOUT (seconds, default 3600) bounds the whole pytest run.
set -u
MODE=facade
PY="${PYTHON:-python3}"
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --sim) MODE=sim; shift ;;
        --python) PY="$2"; shift 2 ;;
        --out) OUT="$2"; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) break ;;
    esac
done
SRC="${1:?usage: library_tests.sh [--sim] [--python PY] [--out DIR] SRC_DIR TEST_FILE... [-- PYTEST_ARGS]}"
shift
SRC="$(cd "$SRC" && pwd)" || exit 2
TESTS=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do TESTS+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
[ ${#TESTS[@]} -gt 0 ] || { echo "library_tests: no test file given" >&2; exit 2; }
if [ -z "$OUT" ]; then OUT="$(mktemp -d "${TMPDIR:-/tmp}/library_tests.XXXXXX")"; fi
mkdir -p "$OUT" && OUT="$(cd "$OUT" && pwd)"
NAME="$(basename "$SRC")"
LABEL="$NAME ($MODE)"

LIBPATH="$SRC"
[ -d "$SRC/src" ] && LIBPATH="$SRC/src:$SRC"
if [ "$MODE" = facade ]; then
    unset NUMBA_ENABLE_CUDASIM
    export PYTHONPATH="$LIBPATH${PYTHONPATH:+:$PYTHONPATH}"
    RUN=("$PY" -m numba_gpux.alias)
    CHECK='import numba, numba.cuda, numba_gpux.cuda as f
assert numba.cuda is f, "numba.cuda is not numba_gpux.cuda"
print("numba.cuda -> numba_gpux.cuda; numba", numba.__version__, "; device:", f.get_current_device().name)'
else
    export NUMBA_ENABLE_CUDASIM=1
    export PYTHONPATH="$LIBPATH${PYTHONPATH:+:$PYTHONPATH}"
    RUN=("$PY")
    CHECK='import importlib.metadata as md, numba, numba.cuda as c
assert c.config.ENABLE_CUDASIM, "the simulator is not enabled"
assert "numba_gpux" not in c.__name__
print("numba.cuda simulator: numba-cuda", md.version("numba-cuda"), "; numba", numba.__version__)'
fi

cd "$SRC" || exit 2
if ! timeout 300 "${RUN[@]}" -c "$CHECK" > "$OUT/check.txt" 2>&1; then
    cat "$OUT/check.txt"
    echo "$LABEL: the implementation check failed; nothing was run" >&2
    exit 2
fi
echo "$LABEL: $(tail -1 "$OUT/check.txt")"

JUNIT="$OUT/$NAME-$MODE.xml"
timeout "${LIBTEST_TIMEOUT:-3600}" "${RUN[@]}" -m pytest -q -rfEs -p no:cacheprovider \
    --junitxml="$JUNIT" "${TESTS[@]}" "$@" 2>&1 | tee "$OUT/$NAME-$MODE.txt"
rc=${PIPESTATUS[0]}
[ "$rc" = 124 ] && echo "$LABEL: pytest ran past LIBTEST_TIMEOUT=${LIBTEST_TIMEOUT:-3600}s"

"$PY" - "$JUNIT" "$LABEL" "$rc" <<'PYEOF'
import sys
import xml.etree.ElementTree as ET

path, label, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
try:
    root = ET.parse(path).getroot()
except (OSError, ET.ParseError) as exc:
    print(f"{label}: no JUnit report ({exc}); pytest exit status {rc}")
    sys.exit(2)
passed = failed = skipped = 0
for case in root.iter("testcase"):
    kinds = {child.tag for child in case}
    if kinds & {"failure", "error"}:
        failed += 1
    elif "skipped" in kinds:
        skipped += 1
    else:
        passed += 1
if rc == 5:
    print(f"{label}: pytest collected no test")
    sys.exit(2)
if rc not in (0, 1) and failed == 0:
    failed = 1  # pytest died or timed out: never report a clean run
print(f"{label}: {passed} passed, {failed} failed, {skipped} skipped")
sys.exit(0 if failed == 0 and passed + skipped > 0 else (1 if failed else 2))
PYEOF
