# gpudev: `make demo` runs the chapter's exercises, `make test` runs the tests.
# Both create .venv and build the extension first.

PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PY      := $(BIN)/python
DEPS    := $(VENV)/.deps-installed
LOCK    := flock $(VENV)/.build.lock
# `make build` after editing C code; the CUDA backend is rebuilt only when csrc/cuda or the
# shared headers in csrc/ change. The build also writes gpudev/_C.pyi (tools/make_stubs.py).
SOURCES := $(wildcard csrc/*.h csrc/core/* csrc/cpu/* csrc/cuda/* tools/cuda_emu/*.* tools/cuda_emu/inc/*) setup.py pyproject.toml \
           tools/make_stubs.py
BUILT   := $(VENV)/.built
INSTALLED := $(VENV)/.installed

.PHONY: all build demo test test-gpu-emu install-check wheels fuzz sanitize sanitize-gpu-emu tsan cuda-emu gpu-check gpu-wheels bench lab clean
.PHONY: test-pool test-pool-tsan test-pool-asan bench-pool check-aarch64 docs docs-open

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Build requirements come from pyproject.toml (one list); the build runs without isolation so
# rebuilds are quick and work on machines without a package registry.
$(DEPS): pyproject.toml | $(PY)
	$(PY) -m pip install -q $$($(PY) -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml','rb'))['build-system']['requires']))")
	touch $@

# The editable install (metadata, runtime and test dependencies) happens when the packaging
# files change. It compiles nothing (GPUDEV_EXTENSIONS=0): pip would hide the compilers'
# progress, so the extensions are built by the in-place build below, which shows it.
$(INSTALLED): $(DEPS) setup.py pyproject.toml
	@echo "installing gpudev in editable mode with its test dependencies into $(VENV)"
	$(LOCK) env GPUDEV_EXTENSIONS=0 $(PY) -m pip install -q --no-build-isolation -e ".[test]"
	touch $@

# the stamp's time is taken before building, so an edit made during a build is rebuilt next time
$(BUILT): $(INSTALLED) $(SOURCES)
	@echo "building gpudev in place: the C core, then the CUDA backend where a toolkit is found"
	@echo "(about 1 minute each on 2 cores; GPUDEV_CUDA=0 skips CUDA; see docs/guides/install.md)"
	touch $@.new
	$(LOCK) $(PY) setup.py -q build_ext --inplace
	mv $@.new $@

build: $(BUILT)

test: $(BUILT)
	$(PY) -m pytest -q tests; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

# The whole suite again on two emulated GPUs (GPUDEV_EMULATE_GPUS=2, gpudev._cuda_emu: the CUDA
# backend compiled for the CPU; docs/guides/emulated-gpus.md): every GPU variant runs, except
# tests marked `hardware`. The CPU tests run a second time too (the emulation changes nothing
# for them), which costs a minute and keeps the command simple. Each launch's blocks run in a
# shuffled order, from a seed drawn per run; a failed run ends with the setting that repeats
# it, e.g. `make test-gpu-emu EMU_BLOCK_ORDER=shuffle:1234` (`index`: no shuffle).
EMU_BLOCK_ORDER ?= shuffle
test-gpu-emu: $(BUILT)
	GPUDEV_EMULATE_GPUS=2 GPUDEV_EMULATE_GPU_MEMORY=8GiB GPUDEV_EMULATE_BLOCK_ORDER=$(EMU_BLOCK_ORDER) \
	  $(PY) -m pytest -q tests

# A repaired wheel for this machine's Python into wheelhouse/ (cibuildwheel builds the others:
# pyproject.toml's [tool.cibuildwheel]). The CUDA backend is compiled for every target
# (WHEEL_CUDA_ARCH; "all": 9 minutes on 2 busy cores, most of it elementwise.cu and reduce.cu;
# docs/guides/gpu.md has the measured build and wheel) and auditwheel vendors no CUDA
# library (CUDA_EXCLUDES): gpudev/_cuda_libs.py finds them at run time. `auditwheel show`
# then names the manylinux policy the wheel's symbols reach.
WHEEL_CUDA_ARCH ?= all
CUDA_EXCLUDES := --exclude 'libcudart.so.*' --exclude 'libcublas.so.*' --exclude 'libcublasLt.so.*' --exclude 'libcuda.so.*'
# nor OpenBLAS: gpudev imports scipy-openblas32 (a dependency) first, whose library _C's SONAME
# binds to; a vendored, renamed copy would be a second OpenBLAS in the process
BLAS_EXCLUDES := --exclude 'libscipy_openblas*.so'
WHEEL_TOOLS := $(VENV)/.wheel-tools
$(WHEEL_TOOLS): pyproject.toml | $(PY)
	$(PY) -m pip install -q $$($(PY) -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml','rb'))['project']['optional-dependencies']['wheels']))")
	touch $@
wheels: $(DEPS) $(WHEEL_TOOLS)
	rm -rf build/wheel-dist && $(LOCK) env GPUDEV_CUDA_ARCH=$(WHEEL_CUDA_ARCH) \
	  $(PY) -m build --wheel --no-isolation --outdir build/wheel-dist .
	PATH=$(CURDIR)/$(BIN):$$PATH $(PY) -m auditwheel repair $(CUDA_EXCLUDES) $(BLAS_EXCLUDES) --strip -w wheelhouse build/wheel-dist/*.whl
	$(PY) -m auditwheel show wheelhouse/$$(ls -t wheelhouse | head -1)
	@ls -l wheelhouse

# The wheel and the sdist built, installed into fresh venvs and used from outside the tree, as
# users install gpudev (tools/install_check.sh; a few minutes: the sdist compiles everything).
# The wheel is repaired as above and installed with no compiler and no CUDA toolkit in sight.
install-check: $(BUILT) $(WHEEL_TOOLS)
	REPAIR_EXCLUDES="$(CUDA_EXCLUDES) $(BLAS_EXCLUDES)" bash tools/install_check.sh $(CURDIR)/$(PY)

# the referee then checks that report.md says only what results.json's tables say
demo: $(BUILT)
	$(PY) -m gpudev exercises --out results
	$(PY) -m gpudev referee results

bench: $(BUILT)
	$(PY) -m gpudev bench

# JupyterLab on notebooks/: the `notebooks` extra of pyproject.toml installed into .venv (its
# packages only, so the extension is not rebuilt), a kernel named gpudev that runs .venv's
# Python, registered inside .venv, then the server. LAB_DRY_RUN=1 does the installing and
# prints the command instead of starting the server.
LAB_EXTRA = $$($(PY) -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml','rb'))['project']['optional-dependencies']['notebooks']))")
lab: $(BUILT)
	$(PY) -m pip install -q $(LAB_EXTRA)
	$(PY) -m ipykernel install --sys-prefix --name gpudev --display-name "Python (gpudev .venv)"
	$(if $(LAB_DRY_RUN),@echo "would run:" )$(BIN)/jupyter lab --notebook-dir=notebooks

# The manual (docs/: Sphinx, MyST Markdown) into build/docs/html: the `docs` extra of
# pyproject.toml installed into .venv (its packages only, once per change of pyproject.toml),
# the build with warnings as errors, then every internal link and anchor of the built pages
# checked (docs/_ext/check_links.py; links out of the manual are not followed). `make
# docs-open` prints the local address and opens it where a browser is found.
DOCS_TOOLS := $(VENV)/.docs-tools
DOCS_HTML  := build/docs/html
$(DOCS_TOOLS): pyproject.toml | $(PY)
	$(PY) -m pip install -q $$($(PY) -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml','rb'))['project']['optional-dependencies']['docs']))")
	touch $@
docs: $(BUILT) $(DOCS_TOOLS)
	$(BIN)/sphinx-build -W --keep-going -q -b html docs $(DOCS_HTML)
	$(PY) docs/_ext/check_links.py $(DOCS_HTML)
docs-open: docs
	@echo "the manual: file://$(CURDIR)/$(DOCS_HTML)/index.html"
	-$(PY) -m webbrowser -t file://$(CURDIR)/$(DOCS_HTML)/index.html >/dev/null 2>&1

# The long fuzz profile (docs/contributing/fuzzing.md): tens of thousands of hostile files against the
# normal build, then against the sanitizer build. GPUDEV_FUZZ_FILES sets the files per
# mutation kind, GPUDEV_FUZZ_SEED the random seed.
fuzz: $(BUILT)
	GPUDEV_FUZZ=long $(PY) -m pytest -q -p no:cacheprovider -m fuzz tests
	GPUDEV_FUZZ=long $(MAKE) sanitize SANITIZE_TESTS='$(CURDIR)/tests -m fuzz'

# The C core built with AddressSanitizer + UndefinedBehaviorSanitizer into build/asan (next to
# a copy of the package's Python files, subpackages included), then the test suite run against
# that build (the test dependencies come with the editable install). Python's own allocations are
# not leak-checked.
ASAN_LIB = $(shell gcc -print-file-name=libasan.so)
UBSAN_LIB = $(shell gcc -print-file-name=libubsan.so)
SANITIZE_TESTS = $(CURDIR)/tests -m "not slow"
sanitize: $(INSTALLED)
	rm -rf build/asan && mkdir -p build/asan/gpudev
	cd gpudev && cp --parents $$(find . -name '*.py' -not -path '*/__pycache__/*') $(CURDIR)/build/asan/gpudev/
	$(LOCK) env GPUDEV_SANITIZE=1 GPUDEV_CUDA=0 GPUDEV_CUDA_EMU=0 $(PY) setup.py -q build_ext --build-lib build/asan --build-temp build/asan-tmp --force
	cd build/asan && LD_PRELOAD="$(ASAN_LIB) $(UBSAN_LIB)" \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  PYTHONPATH=$(CURDIR)/build/asan GPUDEV_SANITIZE_RUN=1 \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider $(SANITIZE_TESTS)

# The same with emulated GPUs: the C core and gpudev._cuda_emu both built with AddressSanitizer +
# UBSan into build/asan-emu, then the GPU tests on two emulated GPUs, so a kernel that reads or
# writes past its allocation (below 64 MiB, where the emulation uses the heap) is reported.
SANITIZE_EMU_TESTS = $(CURDIR)/tests -m "gpu and not slow"
sanitize-gpu-emu: $(INSTALLED)
	rm -rf build/asan-emu && mkdir -p build/asan-emu/gpudev
	cd gpudev && cp --parents $$(find . -name '*.py' -not -path '*/__pycache__/*') $(CURDIR)/build/asan-emu/gpudev/
	$(LOCK) env GPUDEV_SANITIZE=1 GPUDEV_CUDA=0 $(PY) setup.py -q build_ext --build-lib build/asan-emu --build-temp build/asan-emu-tmp --force
	cd build/asan-emu && LD_PRELOAD="$(ASAN_LIB) $(UBSAN_LIB)" \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1:detect_stack_use_after_return=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 GPUDEV_EMULATE_GPUS=2 \
	  PYTHONPATH=$(CURDIR)/build/asan-emu GPUDEV_SANITIZE_RUN=1 \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider $(SANITIZE_EMU_TESTS)

# The C core built with ThreadSanitizer into build/tsan, then the tests that run gpudev from
# several Python threads and change the thread count under them, with CPython and OpenBLAS
# uninstrumented (TSan still sees their locks: its interceptors are in libc's pthread calls).
# Suppressions: tools/tsan.supp. Not in .ci/run: it took 6 minutes on a 2-core machine shared
# with other builds (5 of them in the tests, which run under TSan's 5-15x slowdown). The
# pool alone runs under TSan in seconds: `make test-pool-tsan`.
TSAN_LIB = $(shell gcc -print-file-name=libtsan.so)
TSAN_TESTS = tests/test_threads.py tests/test_cpu_threads.py
tsan: $(INSTALLED)
	rm -rf build/tsan && mkdir -p build/tsan/gpudev
	cd gpudev && cp --parents $$(find . -name '*.py' -not -path '*/__pycache__/*') $(CURDIR)/build/tsan/gpudev/
	$(LOCK) env GPUDEV_SANITIZE=thread GPUDEV_CUDA=0 GPUDEV_CUDA_EMU=0 $(PY) setup.py -q build_ext --build-lib build/tsan --build-temp build/tsan-tmp --force
	cd build/tsan && LD_PRELOAD="$(TSAN_LIB)" \
	  TSAN_OPTIONS="halt_on_error=1 die_after_fork=0 suppressions=$(CURDIR)/tools/tsan.supp" \
	  PYTHONPATH=$(CURDIR)/build/tsan GPUDEV_SANITIZE_RUN=1 \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider $(addprefix $(CURDIR)/,$(TSAN_TESTS))

# Compile-only check that the C core (csrc/core and csrc/cpu, not CUDA) builds for 64-bit
# Arm Linux: setup.py's own compile of gpudev._C (its sources and flags) with Debian's cross
# compiler (package gcc-aarch64-linux-gnu) and warnings as errors, into build/aarch64. The
# link is left out (LDSHARED=true): there is no arm64 OpenBLAS or libpython here (nor type
# stubs, GPUDEV_STUBS=0: they are read from a loaded module). Python's
# and NumPy's headers are this machine's, which describe the same LP64 Linux. Without the
# cross compiler it says so and is skipped.
AARCH64_CC ?= aarch64-linux-gnu-gcc
check-aarch64: $(DEPS)
	@if ! command -v $(AARCH64_CC) >/dev/null 2>&1; then \
	  echo "check-aarch64: SKIPPED: $(AARCH64_CC) not found (Debian/Ubuntu: apt-get install gcc-aarch64-linux-gnu)"; \
	  exit 0; fi; \
	set -e; rm -rf build/aarch64 build/aarch64-tmp; \
	$(LOCK) env CC=$(AARCH64_CC) CFLAGS=-Werror LDSHARED=true GPUDEV_CUDA=0 GPUDEV_CUDA_EMU=0 GPUDEV_STUBS=0 \
	  $(PY) setup.py -q build_ext --build-lib build/aarch64 --build-temp build/aarch64-tmp --force; \
	objs=$$(find build/aarch64-tmp -name '*.o' | sort); \
	n=$$(echo "$$objs" | grep -c .); srcs=$$(ls csrc/core/*.c csrc/cpu/*.c | wc -l); \
	arm=$$(for o in $$objs; do readelf -h $$o; done | grep -c 'Machine:.*AArch64'); \
	if [ "$$n" -ne "$$srcs" ] || [ "$$arm" -ne "$$srcs" ]; then \
	  echo "check-aarch64: FAILED: $$srcs C sources, $$n objects, $$arm of them for AArch64"; exit 1; fi; \
	echo "check-aarch64: OK: $$srcs C sources of the core compile for aarch64 with $(AARCH64_CC), no warnings"

# check-posix, check-windows and check-wine build with csrc/compiler.h's portable branch
# forced, in MSVC's subset of C: ISO C11, no GNU extension, no variable-length array (MSVC
# itself is not run); Wine then runs its kernels. The Linux build keeps the GNU branch.
PORTABLE_C := -DGD_COMPILER_PORTABLE -std=c11 -pedantic-errors -Werror=vla
check-windows check-wine: export MINGW_CFLAGS := $(PORTABLE_C)

empty :=
space := $(empty) $(empty)
# Off Linux (csrc/cpu/port.h). check-posix: the C core's POSIX side forced on Linux
# (-DGD_PORT_POSIX_ONLY: no Linux-only call compiled, as on macOS), its conformance test and
# the pool's tests run with it (its condition-variable build: no futex there), into build/posix; port_posix.o is checked to call none of
# LINUX_ONLY. check-windows: the CPU backend and its conformance test cross-compiled for
# Windows with mingw-w64, warnings as errors (tools/check_windows.sh installs Debian's
# gcc-mingw-w64-x86-64 as root, fails without it under CI, else says SKIPPED);
# `make check-windows WINDOWS_RUN=--run` then runs the whole test under Wine; `make check-wine` a part of it.
LINUX_ONLY := syscall sched_getaffinity sched_setaffinity sched_getcpu pthread_setname_np madvise
WINDOWS_RUN ?=
.PHONY: check-posix check-windows
check-posix: $(DEPS)
	@mkdir -p build/posix
	$(CC) $(PORTABLE_C) -Wall -Wextra -Werror -O2 -DGD_PORT_POSIX_ONLY -Icsrc/cpu -c csrc/cpu/port_posix.c -o build/posix/port_posix.o
	@bad=$$(nm -u build/posix/port_posix.o | awk '{print $$2}' | grep -xE '$(subst $(space),|,$(LINUX_ONLY))' || true); \
	  if [ -n "$$bad" ]; then echo "check-posix: FAILED: the POSIX-only build calls" $$bad; exit 1; fi
	$(MAKE) -C tests/c test BUILD=$(CURDIR)/build/posix CC="$(CC) -DGD_PORT_POSIX_ONLY $(PORTABLE_C) -Werror" PYTHON=$(CURDIR)/$(PY)
	$(MAKE) build/posix/pool/test_pool POOL_DIR=build/posix/pool POOL_CFLAGS="$(POOL_CFLAGS) -DGD_PORT_POSIX_ONLY $(PORTABLE_C)"
	build/posix/pool/test_pool
	@echo "check-posix: OK: the C core's POSIX side, no Linux-only call, in MSVC's subset of C (csrc/compiler.h's portable branch), passes the conformance and pool tests"

check-windows: $(DEPS)
	PY=$(PY) bash tools/check_windows.sh $(WINDOWS_RUN)

# check-wine: check-windows' build, then a part of its conformance test under Wine (Debian's
# wine64, which the script installs as root like mingw-w64; the whole test takes over 10
# minutes there, most of it in elementwise and the sections rerun on 1 and 3 threads): the
# Win32 side of port.h (threads, the pool and its waits, CPU count, aligned allocation, memory
# size, the clock) and every operation, as a sample of elementwise's layouts
# and its special values, plus the other entries of the table.
WINE_SECTIONS := --only 'fresh device' --only table --only memory --only copies \
  --only 'elementwise sample' --only 'elementwise values' --only astype --only reduce --only gemm \
  --only permute --only arange --only random --only philox.h --only refusals --only 'device services' \
  --only 'gather and nonzero' --only selection --only axpby --only 'sliding windows' \
  --only 'cpu: threads' --only 'cpu: memory' --only 'cpu: messages' --only 'cpu: normals exact' \
  --only 'cpu: concurrency' --only 'cpu: BLAS buffers primed' --only 'cpu: clock'
.PHONY: check-wine
check-wine: $(DEPS)
	PY=$(PY) bash tools/check_windows.sh --run $(WINE_SECTIONS)

# The backend conformance test (tests/c) with the real CUDA backend (csrc/cuda) compiled for
# the CPU against the emulation of CUDA and cuBLAS in tools/cuda_emu, then run: the kernels'
# logic is checked without a GPU (not their speed), with 2 multiprocessors per GPU (long
# grid-stride loops) and then 132 (launch plans as on an H200). Fails if any check fails.
cuda-emu:
	bash tools/cuda_emu/build.sh
	build/cuda_emu/conformance_cuda
	@echo "== again with an H200's 132 multiprocessors: grids and reduction splits as sized there"
	GD_EMU_MULTIPROCESSORS=132 build/cuda_emu/conformance_cuda

# The same conformance test on the CPU backend (built natively into build/ctest, with
# OpenBLAS from the wheel in .venv), under AddressSanitizer + UBSan, its timings, and on this
# machine's GPU (built with nvcc; it prints "skipped" where there is no GPU).
.PHONY: ctest ctest-sanitize ctest-bench ctest-cuda
ctest: $(DEPS)
	$(MAKE) -C tests/c test PYTHON=$(CURDIR)/$(PY)

ctest-sanitize: $(DEPS)
	$(MAKE) -C tests/c sanitize PYTHON=$(CURDIR)/$(PY)

ctest-bench: $(DEPS)
	$(MAKE) -C tests/c bench PYTHON=$(CURDIR)/$(PY)

ctest-cuda:
	$(MAKE) -C tests/c cuda

# On a machine with a GPU and perhaps no package registry (see tools/gpu_check.sh): build for
# the local GPU and check it. GPU_CHECK=quick (within 5 minutes of an H200, the build included:
# the C conformance test on the GPU, the newest kernels' GPU tests, the GPU bench rows and the
# hardware checks of tools/gpu_hw_check.py, the sanitizers if time is left), full (everything,
# the whole suite too) or emulated (the quick steps on one emulated GPU, in seconds).
# `tools/gpu_check.sh --dry-run` prints the steps' budgets. It leaves summary.txt and
# gpu-check-logs.tar.gz (every log and figure) in $(GPU_LOG_DIR): $(OUT) when that is set,
# else a folder outside the build tree.
GPU_CHECK ?= quick
GPU_LOG_DIR ?= $(if $(OUT),$(OUT),/tmp/gpudev-gpu-check)
gpu-check:
	bash tools/gpu_check.sh --$(GPU_CHECK) $(GPU_LOG_DIR)

# The wheels such a machine lacks, for its Python (3.12, x86-64), into .whl/ (ignored by git),
# where gpu_check.sh installs them from: scipy-openblas32 at the version pyproject.toml pins,
# plus any named in GPU_WHEELS (e.g. GPU_WHEELS="hypothesis==6.100.0").
GPU_PYTHON_VERSION ?= 3.12
GPU_WHEELS ?=
gpu-wheels: | $(PY)
	$(PY) -m pip download -q --no-deps --only-binary=:all: --python-version $(GPU_PYTHON_VERSION) \
	  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
	  --platform manylinux2014_x86_64 -d .whl \
	  $$($(PY) -c "import tomllib; print(*[r for r in tomllib.load(open('pyproject.toml','rb'))['project']['dependencies'] if r.startswith('scipy-openblas32')])") \
	  $(GPU_WHEELS)
	@ls -l .whl

# The CPU worker pool (csrc/cpu/pool.c) checked on its own, built into build/pool: the
# futex and the condition-variable builds, then each under ThreadSanitizer and under
# AddressSanitizer + UndefinedBehaviorSanitizer. `make bench-pool` times it against a
# serial loop, quiet and with busy processes (it starts them).
POOL_DIR    := build/pool
POOL_DEPS   := csrc/cpu/pool.c csrc/cpu/pool.h csrc/cpu/port.h csrc/compiler.h csrc/cpu/port_posix.c tests/c/test_pool.c tests/c/busy_procs.h
POOL_CFLAGS := -std=c11 -Wall -Wextra -Werror -g -pthread -Icsrc/cpu -DGD_POOL_TEST_HOOKS
POOL_SAN    := -O1 -fno-omit-frame-pointer
POOL_BUILD   = @mkdir -p $(POOL_DIR) && $(CC) $(POOL_CFLAGS) $(1) csrc/cpu/pool.c csrc/cpu/port_posix.c tests/c/test_pool.c -o $@

$(POOL_DIR)/test_pool: $(POOL_DEPS)
	$(call POOL_BUILD,-O2)
$(POOL_DIR)/test_pool_condvar: $(POOL_DEPS)
	$(call POOL_BUILD,-O2 -DGD_POOL_NO_FUTEX)
$(POOL_DIR)/test_pool_tsan: $(POOL_DEPS)
	$(call POOL_BUILD,$(POOL_SAN) -fsanitize=thread)
$(POOL_DIR)/test_pool_condvar_tsan: $(POOL_DEPS)
	$(call POOL_BUILD,$(POOL_SAN) -fsanitize=thread -DGD_POOL_NO_FUTEX)
$(POOL_DIR)/test_pool_asan: $(POOL_DEPS)
	$(call POOL_BUILD,$(POOL_SAN) -fsanitize=address,undefined -fno-sanitize-recover=all)
$(POOL_DIR)/bench_pool: csrc/cpu/pool.c csrc/cpu/pool.h csrc/cpu/port.h csrc/cpu/port_posix.c tests/c/bench_pool.c tests/c/busy_procs.h csrc/philox.h
	@mkdir -p $(POOL_DIR)
	$(CC) -std=c11 -Wall -Wextra -Werror -O3 -fno-math-errno -pthread -Icsrc/cpu -Icsrc \
	  csrc/cpu/pool.c csrc/cpu/port_posix.c tests/c/bench_pool.c -o $@ -lm

test-pool: $(POOL_DIR)/test_pool $(POOL_DIR)/test_pool_condvar
	$(POOL_DIR)/test_pool
	$(POOL_DIR)/test_pool_condvar

# die_after_fork=0: the fork checks start threads in a child of a threaded process.
test-pool-tsan: $(POOL_DIR)/test_pool_tsan $(POOL_DIR)/test_pool_condvar_tsan
	TSAN_OPTIONS="halt_on_error=1 die_after_fork=0" $(POOL_DIR)/test_pool_tsan
	TSAN_OPTIONS="halt_on_error=1 die_after_fork=0" $(POOL_DIR)/test_pool_condvar_tsan

test-pool-asan: $(POOL_DIR)/test_pool_asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(POOL_DIR)/test_pool_asan

bench-pool: $(POOL_DIR)/bench_pool
	$(POOL_DIR)/bench_pool

clean:
	rm -rf build $(VENV) gpudev/*.so gpudev/_build_info.py gpudev/_C.pyi *.egg-info results

# The array API standard's own test suite (data-apis/array-api-tests at a pinned commit,
# cloned into build/array-api-tests) against gpudev and NumPy with the same settings, and both
# counts (tools/array_api.py; docs/guides/array-api.md). ARRAY_API_TESTS_URL and
# ARRAY_API_SPEC_URL may point at local mirrors; ARRAY_API_ARGS goes to the script, e.g.
# ARRAY_API_ARGS="--only gpudev array_api_tests/test_creation_functions.py".
.PHONY: array-api
array-api: $(BUILT)
	$(PY) tools/array_api.py $(ARRAY_API_ARGS)
