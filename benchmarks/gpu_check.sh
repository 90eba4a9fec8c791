#!/usr/bin/env bash
# The one prepared script for a machine with an NVIDIA GPU (H200, Python 3.12,
# no package index).  Usage:  benchmarks/gpu_check.sh OUTDIR
#
# Installs numba-gpux from the working tree plus the wheels carried in .whl/
# (see benchmarks/README.md), runs the CUDA tests and the CUDA benchmarks, and
# writes everything to OUTDIR.  Each step has its own time limit so the whole
# run ends in about five minutes even when a step hangs.
set -u
OUT="${1:?usage: benchmarks/gpu_check.sh OUTDIR}"
mkdir -p "$OUT"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
SITE="${GPUX_SITE:-/tmp/gpux-site}"
SRC=/tmp/gpux-src
export PYTHONUNBUFFERED=1
log() { echo "[gpu_check $(date +%H:%M:%S)] $*" | tee -a "$OUT/summary.txt"; }

log "host: $(uname -m), $($PY --version 2>&1)"
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv \
    > "$OUT/nvidia-smi.txt" 2>&1 || log "nvidia-smi failed"

# 1. install: carried wheels (numba/llvmlite of the versions we need), then the project
if ls .whl/*.whl >/dev/null 2>&1; then
    timeout 120 $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
        --upgrade --target "$SITE" .whl/*.whl > "$OUT/install.txt" 2>&1 \
        || log "wheel install failed (see install.txt)"
fi
export PYTHONPATH="$SITE:$SRC${PYTHONPATH:+:$PYTHONPATH}"
# the project itself without building anything: a source tree laid out as the package
rm -rf "$SRC" && mkdir -p "$SRC/numba_gpux"
cp -r "$ROOT/numba_gpux/." "$SRC/numba_gpux/"
rm -rf "$SRC/numba_gpux/targets" && cp -r "$ROOT/targets" "$SRC/numba_gpux/targets"
# entry points: a minimal dist-info so importlib.metadata finds the built-in targets
DI="$SRC/numba_gpux-0.0.0.dist-info"
mkdir -p "$DI"
printf 'Metadata-Version: 2.1\nName: numba-gpux\nVersion: 0.0.0\n' > "$DI/METADATA"
sed -n '/^numba_gpux.targets =/,/^[a-z_]* =$/p' setup.cfg | grep ' = numba_gpux' \
    | sed 's/^ *//' | { echo "[numba_gpux.targets]"; cat; } > "$DI/entry_points.txt"
$PY - > "$OUT/versions.txt" 2>&1 <<'PYEOF'
import numba, llvmlite, numpy, numba_gpux as gpux
print("numba", numba.__version__, "llvmlite", llvmlite.__version__, "numpy", numpy.__version__)
try:
    import cuda.bindings; print("cuda-bindings", cuda.bindings.__version__)
except Exception as e:
    print("cuda-bindings missing:", e)
from numba_gpux.targets.cuda import libdevice, toolkit
print("libdevice", libdevice.find_libdevice(), "ptxas", toolkit.find_ptxas())
for d in gpux.devices():
    print("device", d.spec, d.name, d.limits.get("compute_capability"), d.limits.get("driver_version"))
PYEOF
cat "$OUT/versions.txt" | tee -a "$OUT/summary.txt"

# 2. numba-cuda's own suite through the facade (the peer harness), in the background
#    while the CUDA tests run: it needs the harness and a numba-cuda git directory,
#    PEER_DIR and PEER_GIT (carried beside the tree; see benchmarks/README.md)
export NUMBA_GPUX_DEVICE=cuda:0
PEER_PID=
if [ -n "${PEER_DIR:-}" ] && [ -d "${PEER_DIR:-}" ] && [ -n "${PEER_GIT:-}" ]; then
    ( PEER_CANDIDATES="${PEER_CANDIDATES:-$PEER_DIR/candidates-all.txt}" \
      PEER_JOBS="${PEER_JOBS:-8}" PEER_FILE_TIMEOUT="${PEER_FILE_TIMEOUT:-150}" \
      PEER_JUNIT="$OUT/peer-junit.xml" \
      timeout "${PEER_LIMIT:-230}" bash "$PEER_DIR/run_peer.sh" numba_gpux.cuda "$PY" "$PEER_GIT" \
      > "$OUT/peer.txt" 2>&1 ) &
    PEER_PID=$!
    log "peer harness started (candidates $(basename "${PEER_CANDIDATES:-candidates-all.txt}"))"
fi

# 3. CUDA tests: the CUDA target's own, then the conformance suite on the CUDA device
timeout 150 $PY -m pytest -q -rs -p no:cacheprovider tests/targets/cuda \
    --junitxml="$OUT/cuda_tests.xml" > "$OUT/cuda_tests.txt" 2>&1
log "cuda tests: rc=$? $(tail -1 "$OUT/cuda_tests.txt")"
XDIST=
if $PY -c "import xdist" >/dev/null 2>&1; then XDIST="-n 6"; fi
if [ -d tests/conformance ]; then
    timeout 120 $PY -m pytest -q -rs -p no:cacheprovider $XDIST tests/conformance tests/cuda_compat \
        -k "cuda" --junitxml="$OUT/conformance.xml" > "$OUT/conformance.txt" 2>&1
    log "conformance and numba.cuda programs on cuda: rc=$? $(tail -1 "$OUT/conformance.txt")"
fi

# 4. CUDA benchmarks: PTX quality on this GPU's cc (needs ptxas; numba-cuda optional)
CC=$($PY -c "import numba_gpux as g; d=[x for x in g.devices() if x.target_name=='cuda']; print('%d.%d' % d[0].limits['compute_capability'] if d else '9.0')" 2>/dev/null || echo 9.0)
for b in benchmarks/cuda_*.py; do
    [ -e "$b" ] || continue
    name=$(basename "$b" .py)
    extra=; [ "$name" = cuda_algorithms ] && extra="--sweep 40"
    timeout 75 $PY "$b" --out "$OUT/$name.json" $extra > "$OUT/$name.txt" 2>&1
    log "$name: rc=$?"
done
# the device runtime on CUDA: a per-thread np.zeros(n) (device malloc) against local.array
timeout 45 $PY benchmarks/device_heap.py --device cuda:0 --out "$OUT/device_heap.json" \
    > "$OUT/device_heap.txt" 2>&1
log "device_heap on cuda: rc=$? $(grep -m1 'ratio' "$OUT/device_heap.txt")"
# PTX quality needs ptxas, not the GPU (run it anywhere); here only when asked
if [ "${PTX_QUALITY:-0}" = 1 ]; then
    timeout 30 $PY benchmarks/ptx_quality.py --cc "$CC" --out "$OUT/ptx_quality.json" \
        > "$OUT/ptx_quality.txt" 2>&1
    log "ptx_quality (cc $CC): rc=$? $(grep -m1 'kernels compared' "$OUT/ptx_quality.txt")"
fi
if [ -n "$PEER_PID" ]; then
    wait "$PEER_PID"
    log "peer harness: $(tail -1 "$OUT/peer.txt")"
fi
log "done"
