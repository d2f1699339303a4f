#!/usr/bin/env bash
# The CPU backend (csrc/cpu, with port_win32.c) and the backend conformance test (tests/c)
# cross-compiled for 64-bit Windows with mingw-w64, warnings as errors, linked against the
# Windows build of scipy-openblas32 (its wheel, at the version this venv has, fetched by pip
# into build/windows). With --run, the test then runs under Wine, given the arguments that
# follow (--only SECTION..., as `make check-wine` selects; none: every section).
#
# Not built: csrc/core, which needs a Windows Python's headers and libraries (a Windows
# wheel build, cibuildwheel's job). MSVC is not run: the Makefile's targets pass MSVC's subset
# of C (csrc/compiler.h's portable branch, -pedantic-errors, no VLA) in MINGW_CFLAGS instead.
#
# The cross compiler is Debian's gcc-mingw-w64-x86-64. Where it is missing: as root with
# apt-get it is installed (saying so); under CI (CI set) otherwise a failure; elsewhere the
# check says SKIPPED with the command that installs it. Wine (package wine64) likewise, for
# --run only.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
CC=${MINGW_CC:-x86_64-w64-mingw32-gcc}
BUILD=build/windows
RUN=0
if [ "${1:-}" = "--run" ]; then RUN=1; shift; fi

# need <command> <package>: installs the package when missing and possible
need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "check-windows: $1 not found: installing Debian's $2 (apt-get install $2)"
        { apt-get install -y -q --no-install-recommends "$2" || { apt-get update -q && apt-get install -y -q --no-install-recommends "$2"; }; } >"$BUILD/apt-$2.log" 2>&1 \
            || { echo "check-windows: FAILED: apt-get install $2 (log: $BUILD/apt-$2.log)"; exit 1; }
        command -v "$1" >/dev/null 2>&1 && return 0
    fi
    if [ -n "${CI:-}" ]; then echo "check-windows: FAILED: $1 not found and not installable (package $2)"; exit 1; fi
    echo "check-windows: SKIPPED: $1 not found (Debian/Ubuntu: apt-get install $2)"
    exit 0
}

mkdir -p "$BUILD"
need "$CC" gcc-mingw-w64-x86-64

# Windows' OpenBLAS: the wheel of the version this venv builds against
version=$("$PY" -c "import importlib.metadata as m; print(m.version('scipy-openblas32'))")
blas="$BUILD/openblas-$version"
if [ ! -f "$blas/scipy_openblas32/lib/libscipy_openblas.dll" ]; then
    rm -rf "$blas" && mkdir -p "$blas"
    "$PY" -m pip download -q --no-deps --only-binary=:all: --platform win_amd64 --python-version 3.11 \
        "scipy-openblas32==$version" -d "$blas"
    "$PY" -m zipfile -e "$blas"/scipy_openblas32-*.whl "$blas"
fi

# setup.py's C flags, less -pthread (Win32 threads); C99 printf formats from mingw-w64's stdio;
# MINGW_CFLAGS: more (the Makefile's: csrc/compiler.h's portable branch, MSVC's subset of C;
# MSVC itself is not run)
flags=(-std=c11 -Wall -Wextra -Werror -O2 -fno-strict-aliasing -fno-math-errno -ffp-contract=off
       -D__USE_MINGW_ANSI_STDIO=1 -Icsrc -Icsrc/cpu -Itests/c -I"$blas/scipy_openblas32/include" ${MINGW_CFLAGS:-})
srcs=(csrc/cpu/*.c tests/c/conformance*.c tests/c/target_cpu.c)
rm -f "$BUILD"/obj/*.o && mkdir -p "$BUILD/obj"
printf '%s\n' "${srcs[@]}" | xargs -P "$(nproc)" -I{} sh -c '"$0" "$@" -c {} -o '"$BUILD"'/obj/$(basename {} .c).o' "$CC" "${flags[@]}"
"$CC" "$BUILD"/obj/*.o -o "$BUILD/conformance_cpu.exe" "$blas/scipy_openblas32/lib/libscipy_openblas.dll" -lsynchronization
cp "$blas/scipy_openblas32/lib/libscipy_openblas.dll" "$BUILD/"
"${CC%gcc}objdump" -f "$BUILD/conformance_cpu.exe" | grep -q "pei-x86-64" \
    || { echo "check-windows: FAILED: $BUILD/conformance_cpu.exe is not a 64-bit Windows executable"; exit 1; }
echo "check-windows: OK: ${#srcs[@]} C sources (the CPU backend and its conformance test) compile for Windows with $CC, no warnings; $BUILD/conformance_cpu.exe linked"

[ "$RUN" = 1 ] || exit 0
PATH=$PATH:/usr/lib/wine # where Debian's wine64 package puts it
need wine64 wine64
# The prefix lives outside the checkout: its dosdevices/z: is a link to /, which tools that walk
# the tree and follow links (setuptools' package search, grep -r) would follow into the disk.
export WINEPREFIX=${WINEPREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/gpudev/wineprefix} WINEDEBUG=-all
mkdir -p "$(dirname "$WINEPREFIX")"
(cd "$BUILD" && wine64 conformance_cpu.exe "$@")
