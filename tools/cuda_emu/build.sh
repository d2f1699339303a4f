#!/usr/bin/env bash
# build.sh - builds build/cuda_emu/conformance_cuda: the backend conformance test
# (tests/c/conformance*.c with tests/c/target_cuda.c, plain C11) linked against gpudev's real
# CUDA backend (every csrc/cuda/*.cu that does not include Python.h), compiled as plain C++
# for the CPU against tools/cuda_emu: a CPU emulation of just enough of CUDA and cuBLAS to run
# gpudev's kernels for their logic (index math, broadcasting, reductions, barriers, the gemm
# operand swap) and the order of work between streams (each stream a queue that runs only when
# waited for); not timing or memory-model semantics. No GPU or CUDA toolkit is needed.
# `make cuda-emu` builds and runs it.
#
# Usage: tools/cuda_emu/build.sh   (from any directory; paths are relative to the repository)
# Environment: CXX (default g++), CC (default gcc), CUDA_EMU_JOBS (parallel compiles, default 2).
# Warnings are shown (there should be none); any compile error fails the build.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root" # relative paths from here on, so messages name csrc/cuda/x.cu

emu=tools/cuda_emu
out=build/cuda_emu
cxx="${CXX:-g++}"
cc="${CC:-gcc}"
jobs="${CUDA_EMU_JOBS:-2}"
python="${PYTHON:-python3}"

# -ffp-contract=off: no fused multiply-adds the host reference loops would not also get.
# -fno-strict-aliasing: kernels reinterpret memory as vector types, which nvcc allows.
# The kernels' .cu files get __CUDACC__, as from nvcc.
flags=(-std=c++17 -O2 -g -Wall -Wextra -ffp-contract=off -fno-strict-aliasing
       -I "$emu/inc" -I csrc -I csrc/cuda -I tests/c)

rm -rf "$out"
mkdir -p "$out/src"

# The backend's sources (a file that needs Python, the extension module, is not part of it)
# and the test's CUDA helpers (tests/c/*.cu).
units=()
for cu in csrc/cuda/*.cu tests/c/*.cu; do
    if grep -q '^#include <Python.h>' "$cu"; then continue; fi
    name="$(basename "$cu" .cu)"
    "$python" "$emu/transform.py" "$cu" "$out/src/$name.cpp"
    units+=("$out/src/$name.cpp -D__CUDACC__ -o $out/src/$name.o")
done
if [ ${#units[@]} -eq 0 ]; then
    echo "build.sh: no CUDA sources found in csrc/cuda" >&2
    exit 1
fi
for cpp in "$emu"/*.cpp; do
    units+=("$cpp -o $out/$(basename "$cpp" .cpp).o")
done

# The test is C: compiled by the C compiler, linked by the C++ one (gd_cuda_backend has C
# linkage). GDT_EMULATED makes it say so, and refuse --bench.
tests=()
for c in tests/c/conformance*.c tests/c/target_cuda.c; do
    tests+=("$c -o $out/$(basename "$c" .c).o")
done

# One compile per line, $jobs at a time; xargs fails (123) if any of them does.
started=$SECONDS
printf '%s\n' "${units[@]}" | xargs -P "$jobs" -L 1 "$cxx" "${flags[@]}" -c
printf '%s\n' "${tests[@]}" | xargs -P "$jobs" -L 1 "$cc" -std=c11 -O2 -g -Wall -Wextra -ffp-contract=off \
    -DGDT_EMULATED -I csrc -I csrc/cpu -I tests/c -I "$emu/inc" -c
objects=()
for unit in "${units[@]}" "${tests[@]}"; do objects+=("${unit##* }"); done
"$cxx" "${flags[@]}" -o "$out/conformance_cuda" "${objects[@]}"
echo "build.sh: built $out/conformance_cuda from $((${#units[@]} + ${#tests[@]})) sources in $((SECONDS - started)) s"
