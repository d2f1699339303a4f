"""pyproject.toml's [tool.cibuildwheel] parses and selects the wheels gpudev ships, without
building any (a build takes many minutes per wheel: `cibuildwheel --platform linux` does it)."""

from __future__ import annotations

import ast
import re
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


def test_cibuildwheel_selects_cpython_311_to_314_on_macos_arm64_and_x86_64():
    """macOS is built by configuration (untested until a Mac runs it): both architectures, no
    CUDA, no emulated GPUs, a deployment target, and the test suite as the test command."""
    run = subprocess.run([_cibuildwheel(), "--print-build-identifiers", "--platform", "macos"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    wanted = {f"cp3{minor}-macosx_{arch}" for minor in (11, 12, 13, 14) for arch in ("arm64", "x86_64")}
    assert set(run.stdout.split()) == wanted
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]["macos"]
    env = config["environment"]
    assert env["GPUDEV_CUDA"] == "0" and env["GPUDEV_CUDA_EMU"] == "0"
    assert tuple(int(part) for part in env["MACOSX_DEPLOYMENT_TARGET"].split(".")) >= (11, 0)
    assert "pytest" in config["test-command"] and "{project}/tests" in config["test-command"]


def test_cibuildwheel_builds_no_windows_wheel_until_msvc_has_built_the_core():
    """Windows wheels are not configured (MSVC has never compiled the C core): cibuildwheel
    selects none there, rather than building with flags nobody has tried."""
    run = subprocess.run([_cibuildwheel(), "--print-build-identifiers", "--platform", "windows"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == []


def test_repair_vendors_no_cuda_library():
    """auditwheel leaves every CUDA library out of the wheel: gpudev/_cuda_libs.py finds them."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]["linux"]
    command = config["repair-wheel-command"]
    for lib in CUDA_LIBRARIES:
        assert f"--exclude '{lib}'" in command
    makefile = (ROOT / "Makefile").read_text()
    for lib in CUDA_LIBRARIES:
        assert lib in makefile.split("CUDA_EXCLUDES :=")[1].splitlines()[0], lib


def _setup_constant(name: str) -> object:
    """A module-level constant of setup.py, read without running setup.py (which builds)."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"setup.py defines no {name}")


def test_every_wheel_build_compiles_the_targets_the_manual_names():
    """`make wheels` and cibuildwheel both ask for GPUDEV_CUDA_ARCH=all, and the targets "all"
    means in setup.py are the ones docs/guides/gpu.md lists (and measured the wheel with)."""
    archs, ptx = _setup_constant("DEFAULT_ARCHS"), _setup_constant("DEFAULT_PTX")
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^WHEEL_CUDA_ARCH \?= all$", makefile, re.M), "the Makefile's wheels build not for all targets"
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["cibuildwheel"]["linux"]
    assert config["environment"]["GPUDEV_CUDA_ARCH"] == "all"
    guide = (ROOT / "docs" / "guides" / "gpu.md").read_text()
    sections = {part.splitlines()[0]: " ".join(part.split()) for part in re.split(r"^#+ ", guide, flags=re.M)[1:]}
    listed = f"{', '.join(archs[:-1])} and {archs[-1]} plus {ptx} PTX"
    for heading in ("How CUDA is found", "The full-architecture wheel, measured"):
        assert listed in sections[heading], f"docs/guides/gpu.md's '{heading}' should list setup.py's targets: {listed}"
