#!/usr/bin/env bash
# gpu_check.sh - gpudev built and checked on this machine's GPU, where there may be no package
# registry (numpy, setuptools and pytest installed; wheels placed in .whl/ by `make gpu-wheels`
# are installed from there first). `make gpu-check` runs it.
#
#   usage: tools/gpu_check.sh [--quick | --full] [LOG_DIR]
#
#   --quick (default) about 4 minutes on an H200, the build included: the build for the local
#           GPU only; the backend's C conformance test on the real GPU (tests/c); the GPU
#           tests of the hardware and of the newest kernels (first_tests below); the checks
#           only a GPU can make (tools/gpu_hw_check.py); the other GPU tests (pytest -m gpu),
#           each with a time limit.
#   --full  the same with the whole test suite instead of its GPU tests, then
#           `python -m gpudev bench --device cuda:0` (gpudev side by side with PyTorch and
#           CuPy where installed; its targets are checked there).
#
# LOG_DIR defaults to $OUT when that is set. The check leaves two files there, kept up to date
# after every step, so that a run cut short still leaves what it saw: summary.txt, one line
# per step (PASS, FAIL or TIMEOUT, its time, the last line of its log), and
# gpu-check-logs.tar.gz, every step's log (<step>.log), hw.json and bench.json and a copy of
# the summary (`tar -xzf gpu-check-logs.tar.gz build.log`). A step that fails does not stop
# the next. Each step has a time limit, and all of them together at most GPU_CHECK_BUDGET
# seconds (quick: 240, full: 2400); the last step gets what is left. GPU_CHECK_SCALE=2 doubles
# every limit (a slow machine). Run it with an outer limit of budget + 60 s or more. Exit
# status: 0 when every step passed, 1 when one failed, 2 when this machine cannot run the
# check (no driver or GPU, a missing tool); GPU_CHECK_NO_GPU=1 runs the steps anyway (they
# then skip their GPU parts), to try the script on a machine without one.
set -uo pipefail

mode=quick
case "${1:-}" in
--quick | --full) mode=${1#--}; shift ;;
esac
dir=${1:-${OUT:-}}
if [ $# -gt 1 ] || [ -z "$dir" ]; then
    echo "usage: tools/gpu_check.sh [--quick | --full] [LOG_DIR]   (LOG_DIR defaults to \$OUT when set;" \
        "e.g. make gpu-check GPU_LOG_DIR=/tmp/gpu)" >&2
    exit 2
fi
mkdir -p "$dir" || exit 2
DEST=$(cd "$dir" && pwd)
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
ROOT=$PWD
PY=${PYTHON:-python3}
SCALE=${GPU_CHECK_SCALE:-1}
JOBS=$(nproc 2>/dev/null || echo 4)
ARCHIVE=gpu-check-logs.tar.gz
# The steps write their logs to LOG, a private folder that `keep` packs into DEST/$ARCHIVE.
LOG=$(mktemp -d "${TMPDIR:-/tmp}/gpudev-gpu-check.XXXXXX") || exit 2
trap 'rm -rf "$LOG"' EXIT
SUMMARY=$DEST/summary.txt
budget=${GPU_CHECK_BUDGET:-$([ "$mode" = full ] && echo 2400 || echo 240)}
export PYTHONUNBUFFERED=1 GPU_LOG_DIR=$LOG
: >"$SUMMARY"
started=$SECONDS
deadline=$((SECONDS + budget * SCALE))
failed=0

# DEST/$ARCHIVE from what LOG holds now (replaced whole, never left half written).
keep() {
    cp "$SUMMARY" "$LOG/summary.txt" &&
        tar -czf "$DEST/.$ARCHIVE.new" -C "$LOG" . &&
        mv -f "$DEST/.$ARCHIVE.new" "$DEST/$ARCHIVE"
}

note() {
    echo "$*" | tee -a "$SUMMARY"
    keep
}

# step NAME SECONDS COMMAND...: run COMMAND with a time limit (SECONDS, or what is left of the
# budget; SIGINT first, so pytest still prints what it saw), its output to NAME.log and the
# end of it here.
step() {
    local name=$1 limit=$(($2 * SCALE)) t0=$SECONDS rc
    shift 2
    if [ $((deadline - SECONDS)) -lt "$limit" ]; then limit=$((deadline - SECONDS)); fi
    if [ "$limit" -lt 10 ]; then limit=10; fi
    echo "== $name (limit ${limit} s)"
    timeout -s INT -k 15 "$limit" "$@" >"$LOG/$name.log" 2>&1
    rc=$?
    tail -n 30 "$LOG/$name.log"
    local last
    last=$(grep -v '^[[:space:]]*$' "$LOG/$name.log" | tail -n 1 | cut -c 1-160)
    if [ $rc -eq 0 ]; then
        note "PASS    $name ($((SECONDS - t0)) s): $last"
    elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        note "TIMEOUT $name (over ${limit} s; see $name.log in $ARCHIVE): $last"
        failed=1
    else
        note "FAIL    $name (exit $rc, $((SECONDS - t0)) s; see $name.log in $ARCHIVE): $last"
        failed=1
    fi
    return $rc
}

# ---------------------------------------------------------------------------------------------
# what this machine is
# ---------------------------------------------------------------------------------------------

note "gpu_check --$mode: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname)"
note "source: $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo 'not a git checkout')"
if ! command -v "$PY" >/dev/null; then
    note "CANNOT RUN: no $PY (set PYTHON=...)"
    exit 2
fi
note "python: $("$PY" -c 'import sys; print(sys.version.split()[0], sys.executable)')"
if command -v nvidia-smi >/dev/null; then
    gpu=$(nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)
else
    gpu="not found"
fi
if [ "$gpu" = "not found" ] || [ -z "$gpu" ] || ! nvidia-smi -L >/dev/null 2>&1; then
    if [ "${GPU_CHECK_NO_GPU:-0}" != 1 ]; then
        note "CANNOT RUN: no NVIDIA GPU or driver here (nvidia-smi: ${gpu:-not found}); run this on a machine"
        note "with a GPU, or set GPU_CHECK_NO_GPU=1 to try the steps without one"
        exit 2
    fi
    gpu="none (GPU_CHECK_NO_GPU=1)"
fi
note "gpu: $gpu"
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. ')
export GPUDEV_CUDA_ARCH=${GPUDEV_CUDA_ARCH:-sm_${cap:-90}}
export PATH=$PATH:/usr/local/cuda/bin
if ! command -v nvcc >/dev/null; then
    note "CANNOT RUN: no nvcc on PATH or in /usr/local/cuda/bin (set CUDA_HOME and PATH)"
    exit 2
fi
note "nvcc: $(nvcc --version | tail -n 2 | head -n 1)"

# Wheels this machine lacks (make gpu-wheels puts them in .whl/), then what the build needs.
if compgen -G "$ROOT/.whl/*.whl" >/dev/null; then
    site=${TMPDIR:-/tmp}/gpudev-gpu-check-site
    if ! "$PY" -m pip install -q --no-index --no-deps --no-compile --upgrade --target "$site" "$ROOT"/.whl/*.whl \
        >"$LOG/wheels.log" 2>&1; then
        cat "$LOG/wheels.log"
        note "CANNOT RUN: installing .whl/*.whl failed (see wheels.log in $ARCHIVE)"
        exit 2
    fi
    export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
    note "wheels: $(cd "$ROOT/.whl" && ls -- *.whl | tr '\n' ' ')"
fi
missing=$("$PY" -c '
import importlib.util as u
need = ["numpy", "setuptools", "pytest", "scipy_openblas32"]
print(" ".join(m for m in need if u.find_spec(m) is None))')
if [ -n "$missing" ]; then
    note "CANNOT RUN: Python modules missing: $missing; fetch their wheels with \`make gpu-wheels\` on a machine"
    note "with a package registry (they go to .whl/), then bring .whl/ along"
    exit 2
fi
"$PY" - <<'EOF' 2>&1 | tee -a "$SUMMARY"
import importlib
for name in ("numpy", "torch", "cupy", "pytest_timeout"):
    try:
        print(f"{name}: {importlib.import_module(name).__version__}")
    except Exception as e:  # any failure to import is worth a line, never a stop
        print(f"{name}: not usable ({type(e).__name__}: {e})")
EOF

# ---------------------------------------------------------------------------------------------
# build: the extension and the C conformance test at once, for this GPU only
# ---------------------------------------------------------------------------------------------

export ctest=$ROOT/build/gpu-check-ctest LOG PY JOBS ARCHIVE
build_all() {
    make -s -C tests/c cuda-bin BUILD="$ctest" -j "$JOBS" >"$LOG/build-ctest.log" 2>&1 &
    local ctest_pid=$!
    "$PY" setup.py -q build_ext --inplace -j "$JOBS"
    local rc=$?
    wait "$ctest_pid" || { echo "the C conformance test did not build: see build-ctest.log in $ARCHIVE"; tail -n 20 "$LOG/build-ctest.log"; }
    return $rc
}
export -f build_all
if ! step build 150 bash -c build_all; then
    note "the build failed: nothing else can run"
    exit 1
fi
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
step info 20 "$PY" -m gpudev info

# ---------------------------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------------------------

if [ -x "$ctest/conformance_cuda" ]; then
    step ctest-cuda 40 "$ctest/conformance_cuda"
else
    note "FAIL    ctest-cuda (not built; see build-ctest.log in $ARCHIVE)"
    failed=1
fi
# The tests that run before the others, so that a time-out still leaves their results: those
# written for real hardware, then the newest kernels' (gather.cu: index arrays, masks,
# nonzero; bool bytes from other libraries; argreduce.cu; where; the newest elementwise
# operations), newest first. A new kernel's tests go at the front.
first_tests=(tests/test_cuda_runtime.py tests/test_index_alias.py tests/fuzz/test_fuzz_alias.py
             tests/test_ingest.py tests/fuzz/test_fuzz_bool_bytes.py tests/test_fancy_index.py
             tests/test_argminmax.py tests/test_where.py tests/test_where_props.py
             tests/test_elementwise_functions.py tests/test_softmax.py)
rest=()
for f in "${first_tests[@]}"; do
    if [ ! -f "$f" ]; then
        note "FAIL    first-tests: $f is listed in tools/gpu_check.sh but does not exist"
        failed=1
    fi
    rest+=("--ignore=$f")
done

# A hung CUDA call cannot be interrupted: each test gets a time limit that dumps every
# thread's stack and ends the run (pytest-timeout's thread method, else the conftest's own).
limit=(--timeout=$((45 * SCALE)) --timeout-method=thread)
if ! "$PY" -c "import pytest_timeout" 2>/dev/null; then
    limit=()
    export GPUDEV_TEST_TIMEOUT=$((45 * SCALE)) GPUDEV_TEST_TIMEOUT_LOG=$LOG/test-timeout.txt
fi
pytest=("$PY" -m pytest -q -p no:cacheprovider -rfEs --durations=15 "${limit[@]}")
# pytest collects a folder once, in its own order, even when some of its files are named
# before it: the first tests are a step of their own, and the rest ignores them.
if [ "$mode" = quick ]; then
    step first-tests 90 "${pytest[@]}" -m "gpu and not slow" "${first_tests[@]}"
    step hw-checks 100 "$PY" tools/gpu_hw_check.py
    step gpu-tests 600 "${pytest[@]}" -m "gpu and not slow" "${rest[@]}" tests
else
    step first-tests 300 "${pytest[@]}" -m "not slow" "${first_tests[@]}"
    step hw-checks 100 "$PY" tools/gpu_hw_check.py
    step all-tests 1200 "${pytest[@]}" -m "not slow" "${rest[@]}" tests
    step bench 1200 "$PY" -m gpudev bench --device cuda:0 --json "$LOG/bench.json"
fi

note "total: $((SECONDS - started)) s; logs in $DEST/$ARCHIVE"
if [ $failed -ne 0 ]; then
    note "RESULT: FAILED (lines above)"
    exit 1
fi
note "RESULT: every step passed"
