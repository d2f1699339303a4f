#!/usr/bin/env bash
# Build gpudev for this machine's GPU and check it: the test suite (GPU tests included), the
# GPU rows of the benchmark, and a short summary. Works without a package registry when numpy,
# setuptools and pytest are installed; wheels placed in .whl/ (e.g. scipy-openblas32) are
# installed from there first.
#   usage: tools/gpu_check.sh [LOG_DIR]
set -uo pipefail
LOG=${1:-build/gpu-check}
mkdir -p "$LOG"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1

if compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/gpudev-site .whl/*.whl \
        || { echo "installing .whl/ failed"; exit 1; }
    export PYTHONPATH=/tmp/gpudev-site${PYTHONPATH:+:$PYTHONPATH}
fi

cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. ')
export GPUDEV_CUDA_ARCH=${GPUDEV_CUDA_ARCH:-sm_${cap:-90}}
echo "== build for $GPUDEV_CUDA_ARCH"
if ! "$PY" setup.py -q build_ext --inplace >"$LOG/build.log" 2>&1; then
    tail -n 40 "$LOG/build.log"; echo "BUILD FAILED"; exit 1
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

echo "== info"
"$PY" -m gpudev info 2>&1 | tee "$LOG/info.txt"

echo "== tests"
"$PY" -m pytest -q --no-header -p no:cacheprovider tests -m "not slow" >"$LOG/tests.log" 2>&1
test_rc=$?
tail -n 25 "$LOG/tests.log"

echo "== bench (GPU rows, side by side with torch and cupy where installed)"
"$PY" -m gpudev bench --device cuda:0 --json "$LOG/bench.json" 2>"$LOG/bench.err" | tee "$LOG/bench.txt"
bench_rc=${PIPESTATUS[0]}

echo "== summary"
echo "tests: $(grep -E '^[0-9]+ (passed|failed)|passed|failed' "$LOG/tests.log" | tail -n 1) (exit $test_rc)"
echo "bench: exit $bench_rc"
[ "$test_rc" -eq 0 ] && [ "$bench_rc" -eq 0 ]
