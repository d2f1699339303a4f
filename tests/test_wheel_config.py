"""pyproject.toml's [tool.cibuildwheel] parses and selects the wheels gpudev ships, without
building any (a build takes many minutes per wheel: `cibuildwheel --platform linux` does it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CUDA_LIBRARIES = ("libcudart.so.*", "libcublas.so.*", "libcublasLt.so.*", "libcuda.so.*")


def _cibuildwheel() -> str:
    exe = shutil.which("cibuildwheel", path=str(Path(sys.executable).parent)) or shutil.which("cibuildwheel")
    if exe is None:
        pytest.skip("cibuildwheel is not installed (it comes with the test extra: pip install -e '.[test]')")
    return exe


def test_cibuildwheel_selects_cpython_311_to_314_on_manylinux_x86_64_and_aarch64():
    run = subprocess.run([_cibuildwheel(), "--print-build-identifiers", "--platform", "linux"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    wanted = {f"cp3{minor}-manylinux_{arch}" for minor in (11, 12, 13, 14) for arch in ("x86_64", "aarch64")}
    assert set(run.stdout.split()) == wanted


def test_repair_vendors_no_cuda_library():
    """auditwheel leaves every CUDA library out of the wheel: gpudev/_cuda_libs.py finds them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]["linux"]
    command = config["repair-wheel-command"]
    for lib in CUDA_LIBRARIES:
        assert f"--exclude '{lib}'" in command
    makefile = (ROOT / "Makefile").read_text()
    for lib in CUDA_LIBRARIES:
        assert lib in makefile.split("CUDA_EXCLUDES :=")[1].splitlines()[0], lib
