"""Type stubs of gpudev._C (PEP 561): gpudev/_C.pyi is what tools/make_stubs.py writes from the
declared signatures now, so a new function cannot be left without its stub; mypy's stubtest
finds it consistent with the built extension; and a type checker reads the signatures.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
needs_mypy = pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")


def load_generator():
    spec = importlib.util.spec_from_file_location("make_stubs", ROOT / "tools" / "make_stubs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_stub_is_what_the_declarations_give():
    generated = load_generator().stub()
    committed = (ROOT / "gpudev" / "_C.pyi").read_text()
    assert committed == generated, "gpudev/_C.pyi is out of date: run python tools/make_stubs.py and commit it"


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
                         capture_output=True, text=True, cwd=ROOT, timeout=600)
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
                           capture_output=True, text=True, cwd=ROOT, timeout=600) for f in (good, bad)]
    assert runs[0].returncode == 0, runs[0].stdout
    assert runs[1].returncode == 1 and 'Unexpected keyword argument "bogus"' in runs[1].stdout, runs[1].stdout
    assert 'Unexpected keyword argument "a"' in runs[1].stdout, runs[1].stdout
