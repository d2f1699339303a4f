# gpudev: `make demo` runs the chapter's exercises, `make test` runs the tests.
# Both create .venv and build the extension first.

PYTHON  ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
PY      := $(BIN)/python
DEPS    := $(VENV)/.deps-installed
LOCK    := flock $(VENV)/.build.lock
# `make build` after editing C code; the CUDA backend is rebuilt only when csrc/cuda changes.
SOURCES := $(wildcard csrc/*.c csrc/*.h csrc/cuda/*) setup.py pyproject.toml
BUILT   := $(VENV)/.built
INSTALLED := $(VENV)/.installed

.PHONY: all build demo test sanitize cuda-emu gpu-check bench lab clean

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Build requirements come from pyproject.toml (one list); the build runs without isolation so
# rebuilds are quick and work on machines without a package registry.
$(DEPS): pyproject.toml | $(PY)
	$(PY) -m pip install -q $$($(PY) -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml','rb'))['build-system']['requires']))")
	touch $@

# The editable install (metadata, runtime and test dependencies, a first build) happens when
# the packaging files change; C edits then only need the incremental in-place build.
$(INSTALLED): $(DEPS) setup.py
	$(LOCK) $(PY) -m pip install -q --no-build-isolation -e ".[test]"
	touch $@

# the stamp's time is taken before building, so an edit made during a build is rebuilt next time
$(BUILT): $(INSTALLED) $(SOURCES)
	touch $@.new
	$(LOCK) $(PY) setup.py -q build_ext --inplace
	mv $@.new $@

build: $(BUILT)

test: $(BUILT)
	$(PY) -m pytest -q tests; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

demo: $(BUILT)
	$(PY) -m gpudev exercises --out results

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

# The C core built with AddressSanitizer + UndefinedBehaviorSanitizer into build/asan, then
# the test suite run against that build. Python's own allocations are not leak-checked.
ASAN_LIB = $(shell gcc -print-file-name=libasan.so)
UBSAN_LIB = $(shell gcc -print-file-name=libubsan.so)
sanitize: $(DEPS)
	rm -rf build/asan && mkdir -p build/asan/gpudev
	cd gpudev && cp --parents $$(find . -name '*.py' -not -path '*/__pycache__/*') $(CURDIR)/build/asan/gpudev/
	$(LOCK) env GPUDEV_SANITIZE=1 GPUDEV_CUDA=0 $(PY) setup.py -q build_ext --build-lib build/asan --build-temp build/asan-tmp --force
	cd build/asan && LD_PRELOAD="$(ASAN_LIB) $(UBSAN_LIB)" \
	  ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:allocator_may_return_null=1 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  PYTHONPATH=$(CURDIR)/build/asan GPUDEV_SANITIZE_RUN=1 \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider $(CURDIR)/tests -m "not slow"

# tests/cuda_smoke.cpp and the real CUDA backend (csrc/cuda) compiled for the CPU against the
# emulation of CUDA and cuBLAS in tools/cuda_emu, then run: the kernels' logic is checked
# without a GPU (not their speed). Fails if any check fails.
cuda-emu:
	bash tools/cuda_emu/build.sh
	build/cuda_emu/cuda_smoke

# On a machine with a GPU and no package registry: build for the local GPU and run the GPU
# tests and benchmarks. Logs go to $(GPU_LOG_DIR).
GPU_LOG_DIR ?= build/gpu-check
gpu-check:
	bash tools/gpu_check.sh $(GPU_LOG_DIR)

clean:
	rm -rf build $(VENV) gpudev/*.so gpudev/_build_info.py *.egg-info results
