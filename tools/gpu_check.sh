#!/usr/bin/env bash
# gpu_check.sh - gpudev built and checked on this machine's GPU, where there may be no package
# registry (numpy, setuptools and pytest installed; wheels placed in .whl/ by `make gpu-wheels`
# are installed from there first). `make gpu-check` runs it.
#
#   usage: tools/gpu_check.sh [--quick | --full | --emulated] [--dry-run] [LOG_DIR]
#
#   --quick (default) within 5 minutes of one H200, the build included (--dry-run prints each
#           step's budget): the build for this GPU only (no emulated GPUs); the C conformance
#           test on the GPU; the GPU tests of the newest kernels (first_tests below); the GPU
#           bench rows beside their datasheet figures (tools/gpu_hw_check.py --part bench);
#           the checks only a GPU can make (tools/gpu_hw_check.py --quick); then, if time is
#           left, compute-sanitizer's memcheck and racecheck over the conformance test's
#           sections of the kernels with shared memory, atomics or index math (SANITIZED).
#   --full  the same with every check, the whole test suite, `python -m gpudev bench`, and the
#           sanitizers (synccheck too) with time of their own.
#   --emulated  the quick check's steps end to end on one emulated GPU (GPUDEV_EMULATE_GPUS=1)
#           at cut sizes, in seconds, with the in-place build: what `make test-gpu-emu` runs
#           (tests/test_gpu_check.py) to try this script where there is no GPU. Its pytest
#           steps only collect their tests (the suite runs them on emulated GPUs itself); the
#           conformance test (`make cuda-emu`) and the sanitizers are skipped, saying so.
#
# LOG_DIR defaults to $OUT when that is set. The check leaves two files there, brought up to
# date after every step and every item of tools/gpu_hw_check.py, so that a run cut short still
# leaves what it finished: summary.txt, one line per step (PASS, FAIL, TIMEOUT or SKIP, its
# time, the last line of its log), and gpu-check-logs.tar.gz: every step's log (<step>.log),
# checks.json and bench.json (each item's result and figures) and a copy of the summary
# (`tar -xzf gpu-check-logs.tar.gz bench.log`). The archive is replaced whole, never left half
# written. A step that fails does not stop the next. Each step's time limit is its budget (the
# build's twice its budget: nothing runs without it); the steps marked "if time is left" run
# only when the budget of the whole mode has at least their minimum left, and get what is left.
# A step run if time is left that runs out of it is PARTIAL, not a failure. GPU_CHECK_SCALE=2
# doubles every limit (a slow machine). Exit status: 0 when every step passed, 1 when one
# failed, 2 when this machine cannot run the check (no driver or GPU, a missing tool).
#
# GPU_CHECK_INJECT_KILL=step:NAME (or item:NAME, an item of tools/gpu_hw_check.py) kills the
# whole run when it reaches NAME, as a machine taken away would: tests/test_gpu_check.py's way
# to show what the archive keeps.
set -uo pipefail

usage() {
    echo "usage: tools/gpu_check.sh [--quick | --full | --emulated] [--dry-run] [LOG_DIR]   (LOG_DIR defaults to" \
        "\$OUT when set; e.g. make gpu-check GPU_LOG_DIR=/tmp/gpu)" >&2
    exit 2
}
mode=quick dry=0 dir=
for arg in "$@"; do
    case "$arg" in
    --quick | --full | --emulated) mode=${arg#--} ;;
    --dry-run) dry=1 ;;
    -*) usage ;;
    *) if [ -n "$dir" ]; then usage; fi; dir=$arg ;;
    esac
done
dir=${dir:-${OUT:-}}

# The steps in the order they run, with their budgets in seconds of one H200 (0: not in that
# mode; a leading + : only if time is left, this many seconds at least). The estimates: the
# build from each file's nvcc time for sm_90 measured on a 2-core machine (argreduce.cu 94 s,
# elementwise.cu 86 s, the 13 others 4-26 s; gcc for the C core 97 s in all), on 16 cores where
# the two longest files run side by side; the others from what each step runs (about 2 s of
# imports and CUDA start per Python process, then the work).
STEPS=(
    # name       quick full  what (--emulated runs the quick steps, with the same limits)
    "build       110   110   the C core, the CUDA backend for this GPU and the conformance test"
    "info        5     5     python -m gpudev info"
    "ctest-cuda  15    60    the CUDA backend's C conformance test on the GPU"
    "first-tests 45    300   the GPU tests of the newest kernels"
    "bench       60    60    the GPU bench rows beside their datasheet figures"
    "hw-checks   50    400   the checks only a GPU can make"
    "memcheck    +30   600   compute-sanitizer memcheck over the conformance test"
    "racecheck   +30   600   compute-sanitizer racecheck over the conformance test"
    "synccheck   0     300   compute-sanitizer synccheck over the conformance test"
    "all-tests   0     1200  the whole test suite (not slow)"
    "gpu-bench   0     900   python -m gpudev bench --device cuda:0"
)
PRELUDE=5 # the checks of the machine and the tools before the first step
column() { [ "$mode" = full ] && echo 2 || echo 1; }
budget_of() { local -a f; for s in "${STEPS[@]}"; do read -r -a f <<<"$s"; [ "${f[0]}" = "$1" ] && echo "${f[$(column)]}"; done; }
# The whole mode's budget: 5 minutes for the quick check (and its emulated run), the sum of
# the budgets for the full one. The steps run if time is left measure what remains of it.
total_budget() {
    local -a f
    local sum=$PRELUDE
    [ "$mode" != full ] && { echo 300; return; }
    for s in "${STEPS[@]}"; do read -r -a f <<<"$s"; sum=$((sum + ${f[$(column)]#+})); done
    echo $sum
}

if [ "$dry" = 1 ]; then
    total=$PRELUDE
    echo "gpu_check --$mode: steps and their budgets (seconds of one H200, by estimate)"
    printf '  %-12s %5s s  %s\n' prelude "$PRELUDE" "what this machine is: GPU, driver, nvcc, Python modules"
    for s in "${STEPS[@]}"; do
        read -r -a f <<<"$s"
        b=${f[$(column)]}
        [ "$b" = 0 ] && continue
        if [ "${b#+}" != "$b" ]; then
            printf '  %-12s %5s s  %s (if at least %s s are left)\n' "${f[0]}" rest "${f[*]:3}" "${b#+}"
        else
            printf '  %-12s %5s s  %s\n' "${f[0]}" "$b" "${f[*]:3}"
            total=$((total + b))
        fi
    done
    echo "total: $total s of a budget of $(total_budget) s; the steps run if time is left take what remains"
    exit 0
fi

[ -n "$dir" ] || usage
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
read -r -a _stat </proc/$$/stat 2>/dev/null && PGID=${_stat[4]} || PGID=$$
export PYTHONUNBUFFERED=1 GPU_LOG_DIR=$LOG GPU_CHECK_ARCHIVE=$DEST/$ARCHIVE GPU_CHECK_SUMMARY=$SUMMARY \
    GPU_CHECK_PGID=$PGID
: >"$SUMMARY"
started=$SECONDS
deadline=$((SECONDS + $(total_budget) * SCALE))
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

# step NAME COMMAND...: run COMMAND with NAME's time limit (SIGINT first, so pytest still
# prints what it saw), its output to NAME.log and the end of it here. A step marked "if time
# is left" runs only when the mode's budget has its minimum left, and gets the rest.
step() {
    local name=$1 budget t0=$SECONDS rc limit last
    shift
    budget=$(budget_of "$name")
    if [ "${GPU_CHECK_INJECT_KILL:-}" = "step:$name" ]; then
        echo "GPU_CHECK_INJECT_KILL: killing the run at step $name"
        kill -KILL -- "-$PGID"
    fi
    if [ "${budget#+}" != "$budget" ]; then
        limit=$((deadline - SECONDS))
        if [ "$limit" -lt $((${budget#+} * SCALE)) ]; then
            note "SKIP    $name: ${limit} s left of the budget, it needs ${budget#+} s (GPU_CHECK=full gives it time)"
            return 0
        fi
    else
        limit=$((budget * SCALE * ($([ "$name" = build ] && echo 2 || echo 1))))
    fi
    echo "== $name (limit ${limit} s)"
    timeout -s INT -k 15 "$limit" "$@" >"$LOG/$name.log" 2>&1
    rc=$?
    tail -n 30 "$LOG/$name.log"
    last=$(grep -v '^[[:space:]]*$' "$LOG/$name.log" | tail -n 1 | cut -c 1-160)
    if [ $rc -eq 0 ]; then
        note "PASS    $name ($((SECONDS - t0)) s of ${budget#+}): $last"
    elif { [ $rc -eq 124 ] || [ $rc -eq 137 ]; } && [ "${budget#+}" != "$budget" ]; then
        note "PARTIAL $name (the ${limit} s left ran out, no error before; see $name.log in $ARCHIVE): $last"
    elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        note "TIMEOUT $name (over ${limit} s; see $name.log in $ARCHIVE): $last"
        failed=1
    else
        note "FAIL    $name (exit $rc, $((SECONDS - t0)) s; see $name.log in $ARCHIVE): $last"
        failed=1
    fi
    return $rc
}

skip() {
    note "SKIP    $1: $2"
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
if [ "$mode" = emulated ]; then
    export GPUDEV_EMULATE_GPUS=1 GPUDEV_EMULATE_GPU_MEMORY=${GPUDEV_EMULATE_GPU_MEMORY:-2GiB}
    note "gpu: one emulated GPU (GPUDEV_EMULATE_GPUS=1): the steps at cut sizes, no GPU figure"
else
    if command -v nvidia-smi >/dev/null; then
        gpu=$(nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total,power.max_limit --format=csv,noheader 2>&1 | head -n 1)
    else
        gpu="not found"
    fi
    if [ "$gpu" = "not found" ] || [ -z "$gpu" ] || ! nvidia-smi -L >/dev/null 2>&1; then
        note "CANNOT RUN: no NVIDIA GPU or driver here (nvidia-smi: ${gpu:-not found}); run this on a machine"
        note "with a GPU, or --emulated to try the steps on an emulated one"
        exit 2
    fi
    note "gpu: $gpu"
    cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. ')
    export GPUDEV_CUDA_ARCH=${GPUDEV_CUDA_ARCH:-sm_${cap:-90}} GPUDEV_CUDA_EMU=0
    export PATH=$PATH:/usr/local/cuda/bin
    if ! command -v nvcc >/dev/null; then
        note "CANNOT RUN: no nvcc on PATH or in /usr/local/cuda/bin (set CUDA_HOME and PATH)"
        exit 2
    fi
    note "nvcc: $(nvcc --version | tail -n 2 | head -n 1); building for $GPUDEV_CUDA_ARCH only"
fi

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
"$PY" - "$mode" <<'EOF' 2>&1 | tee -a "$SUMMARY"
import importlib, sys
# torch and cupy cannot use an emulated GPU, and importing torch takes seconds
peers = () if sys.argv[1] == "emulated" else ("torch", "cupy")
for name in ("numpy", *peers, "pytest_timeout"):
    try:
        print(f"{name}: {importlib.import_module(name).__version__}")
    except Exception as e:  # any failure to import is worth a line, never a stop
        print(f"{name}: not usable ({type(e).__name__}: {e})")
EOF
if command -v compute-sanitizer >/dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
    SANITIZER=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
else
    SANITIZER=
fi

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
if [ "$mode" = emulated ]; then
    step build "$PY" -c "import gpudev, gpudev._cuda_emu; print('the in-place build, with the emulated GPUs:', gpudev.__file__)"
else
    step build bash -c build_all
fi || {
    note "the build failed: nothing else can run"
    exit 1
}
export PYTHONPATH=$ROOT${PYTHONPATH:+:$PYTHONPATH}
step info "$PY" -m gpudev info

# ---------------------------------------------------------------------------------------------
# checks
# ---------------------------------------------------------------------------------------------

if [ "$mode" = emulated ]; then
    skip ctest-cuda "the conformance test on an emulated GPU is \`make cuda-emu\` (minutes)"
elif [ -x "$ctest/conformance_cuda" ]; then
    step ctest-cuda "$ctest/conformance_cuda"
else
    note "FAIL    ctest-cuda (not built; see build-ctest.log in $ARCHIVE)"
    failed=1
fi
# The tests that run before the others, so that a time-out still leaves their results: those
# written for real hardware, then the newest kernels' (window.cu: convolution, pooling and
# batch norm's layers; int32 products, axpby, exp and log, threads;
# gather.cu: index arrays, masks, nonzero; bool bytes from other libraries; argreduce.cu;
# where; the newest elementwise operations), newest first. A new kernel's tests go at the front.
first_tests=(tests/test_cuda_runtime.py tests/test_conv.py tests/test_pool.py tests/test_batchnorm.py tests/test_matmul.py tests/test_axpby.py tests/test_elementwise_accuracy.py
             tests/test_threads.py tests/test_index_alias.py tests/fuzz/test_fuzz_alias.py tests/test_ingest.py
             tests/fuzz/test_fuzz_bool_bytes.py tests/test_fancy_index.py tests/test_argminmax.py
             tests/test_where.py tests/test_where_props.py tests/test_elementwise_functions.py tests/test_softmax.py)
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
hw=("$PY" tools/gpu_hw_check.py)
# The conformance test's sections the quick check's sanitizer runs cover, the kernels with
# shared memory, atomics or hand-made index math (the full check runs every section).
SANITIZED=("gather and nonzero" "reduce" "selection" "sliding windows")
sanitize_sections() { # TOOL SECTION...: each section under the tool; fails if any fails
    local tool=$1 rc=0
    shift
    for s in "$@"; do
        echo "== $tool: $s"
        "$SANITIZER" --tool "$tool" --error-exitcode 1 "$ctest/conformance_cuda" --only "$s" || rc=1
    done
    return $rc
}
export -f sanitize_sections
export SANITIZER
sanitize() { # TOOL: compute-sanitizer over the conformance test
    if [ "$mode" = emulated ]; then
        skip "$1" "compute-sanitizer needs a real GPU"
    elif [ -z "$SANITIZER" ]; then
        skip "$1" "no compute-sanitizer here (it comes with the CUDA toolkit)"
    elif [ ! -x "$ctest/conformance_cuda" ]; then
        skip "$1" "the conformance test was not built"
    elif [ "$mode" = full ]; then
        step "$1" "$SANITIZER" --tool "$1" --error-exitcode 1 "$ctest/conformance_cuda"
    else
        step "$1" bash -c 'sanitize_sections "$@"' _ "$1" "${SANITIZED[@]}"
    fi
}
case $mode in
quick)
    step first-tests "${pytest[@]}" -m "gpu and not slow" "${first_tests[@]}"
    step bench "${hw[@]}" --part bench
    step hw-checks "${hw[@]}" --quick
    sanitize memcheck
    sanitize racecheck
    ;;
emulated)
    step first-tests "${pytest[@]}" --collect-only -m "gpu and not slow" "${first_tests[@]}"
    step bench "${hw[@]}" --part bench --small
    step hw-checks "${hw[@]}" --quick --small
    sanitize memcheck
    sanitize racecheck
    ;;
full)
    step first-tests "${pytest[@]}" -m "not slow" "${first_tests[@]}"
    step bench "${hw[@]}" --part bench
    step hw-checks "${hw[@]}"
    sanitize memcheck
    sanitize racecheck
    sanitize synccheck
    step all-tests "${pytest[@]}" -m "not slow" "${rest[@]}" tests
    step gpu-bench "$PY" -m gpudev bench --device cuda:0 --json "$LOG/gpu-bench.json"
    ;;
esac

note "total: $((SECONDS - started)) s; logs in $DEST/$ARCHIVE"
if [ $failed -ne 0 ]; then
    note "RESULT: FAILED (lines above)"
    exit 1
fi
note "RESULT: every step passed"
