"""Type stubs of gpudev._C (PEP 561): the build writes gpudev/_C.pyi next to the extension
(setup.py runs tools/make_stubs.py; the stub is not in git), so a new function cannot be left
without its stub. Here: the stub beside the imported extension is what the generator gives
for it now, mypy's stubtest finds it consistent with that extension, and a type checker reads
the signatures from it.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from gpudev import _C

ROOT = Path(__file__).resolve().parent.parent
# the stub the build wrote beside the extension these tests import (in place for `make build`,
# a build folder for `make sanitize`), and the folder to run mypy from so that it finds both
STUB = Path(_C.__file__).with_name("_C.pyi")
PACKAGE_PARENT = STUB.parent.parent
needs_mypy = pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")


def load_generator():
    spec = importlib.util.spec_from_file_location("make_stubs", ROOT / "tools" / "make_stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_built_stub_is_what_the_declarations_give():
    assert STUB.is_file(), f"{STUB} is missing: the build writes it (make build)"
    assert STUB.read_text() == load_generator().stub(), f"{STUB} is out of date: rebuild (make build)"


def test_the_stub_is_a_build_product_not_a_source():
    ignored = subprocess.run(["git", "check-ignore", "-q", "gpudev/_C.pyi"], cwd=ROOT, capture_output=True)
    if ignored.returncode == 128:
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", "gpudev/_C.pyi"], cwd=ROOT, capture_output=True)
    assert ignored.returncode == 0 and tracked.returncode != 0, "gpudev/_C.pyi belongs in .gitignore, not in git"


def test_the_package_says_it_is_typed():
    assert (ROOT / "gpudev" / "py.typed").is_file()


@pytest.fixture(scope="module")
def mypy_config(tmp_path_factory) -> Path:
    # stubtest checks the stub; the package's own modules are followed silently (they are not
    # what is checked here)
    path = tmp_path_factory.mktemp("mypy") / "mypy.ini"
    path.write_text("[mypy]\nfollow_imports = silent\n")
    return path


@needs_mypy
def test_stubtest_finds_the_stub_consistent_with_the_extension(mypy_config):
    run = subprocess.run([sys.executable, "-m", "mypy.stubtest", "gpudev._C", "--mypy-config-file", str(mypy_config)],
                         capture_output=True, text=True, cwd=PACKAGE_PARENT, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr


@needs_mypy
def test_a_type_checker_reads_the_signatures(mypy_config, tmp_path):
    good = tmp_path / "good.py"
    good.write_text("import gpudev._C as C\n"
                    "a = C.zeros(2, 3, dtype='float64', device=C.cpu())\n"
                    "b: C.Array = C.randn(3, requires_grad=True).sum(axis=0, keepdims=True)\n"
                    "d: C.Device = a.to('cpu').device\n")
    bad = tmp_path / "bad.py"
    bad.write_text("import gpudev._C as C\nC.zeros((2, 3), bogus=1)\nC.exp(a=C.ones(1))\n")
    runs = [subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(mypy_config), str(f)],
                           capture_output=True, text=True, cwd=PACKAGE_PARENT, timeout=600) for f in (good, bad)]
    assert runs[0].returncode == 0, runs[0].stdout
    assert runs[1].returncode == 1 and 'Unexpected keyword argument "bogus"' in runs[1].stdout, runs[1].stdout
    assert 'Unexpected keyword argument "a"' in runs[1].stdout, runs[1].stdout
