"""tools/gpu_check.sh and tools/gpu_hw_check.py, the checks for a machine with a GPU, as far as a
machine without one can try them: the shell script parses, refuses clearly where there is no
GPU or no log folder, leaves its summary and one archive of logs (in $OUT by default), names
only test files that exist; the hardware checks import, parse their arguments and skip (not
fail) without a GPU.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from conftest import NUM_GPUS

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "gpu_check.sh"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "OUT"}  # OUT would be the log folder
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                          env={**base, **(env or {})}, cwd=ROOT)


def _left_in(folder: Path) -> tuple[list[str], str, list[str]]:
    """What a run left in its log folder: the file names, the summary, the archive's names."""
    with tarfile.open(folder / "gpu-check-logs.tar.gz") as t:
        names = sorted(n.removeprefix("./") for n in t.getnames() if n != ".")
    return sorted(p.name for p in folder.iterdir()), (folder / "summary.txt").read_text(), names


def test_gpu_check_parses():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True, timeout=30)


def test_gpu_check_needs_a_log_folder():
    for args in ((), ("--quick",), ("--full", "a", "b")):
        p = _run(*args)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert "usage: tools/gpu_check.sh [--quick | --full] [LOG_DIR]" in p.stderr
        assert "defaults to $OUT when set" in p.stderr


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_gpu_check_without_a_gpu_says_so_and_writes_its_summary(tmp_path):
    p = _run("--quick", str(tmp_path / "logs"), env={"GPU_CHECK_NO_GPU": "0"})
    files, summary, archived = _left_in(tmp_path / "logs")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "CANNOT RUN: no NVIDIA GPU or driver here (nvidia-smi: not found)" in summary
    assert "GPU_CHECK_NO_GPU=1" in summary and summary in p.stdout
    assert files == ["gpu-check-logs.tar.gz", "summary.txt"] and archived == ["summary.txt"]


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_gpu_check_logs_go_to_OUT_by_default_and_a_named_folder_wins(tmp_path):
    out, named = tmp_path / "out", tmp_path / "named"
    out.mkdir()
    p = _run(env={"OUT": str(out)})
    files, summary, _ = _left_in(out)
    assert p.returncode == 2 and "CANNOT RUN: no NVIDIA GPU" in summary, p.stdout + p.stderr
    assert files == ["gpu-check-logs.tar.gz", "summary.txt"]
    p = _run("--full", str(named), env={"OUT": str(out)})
    assert p.returncode == 2 and "gpu_check --full" in _left_in(named)[1], p.stdout + p.stderr
    assert "gpu_check --quick" in _left_in(out)[1]  # untouched by the second run


def test_gpu_check_names_test_files_that_exist():
    text = SCRIPT.read_text()
    listed = re.search(r"^first_tests=\(([^)]*)\)", text, re.M)
    assert listed, "first_tests=(...) not found in tools/gpu_check.sh"
    files = listed.group(1).split()
    assert files[0] == "tests/test_cuda_runtime.py" and len(files) >= 8, files
    missing = [f for f in files if not (ROOT / f).is_file()]
    assert not missing, f"tools/gpu_check.sh runs first test files that do not exist: {missing}"


@pytest.mark.skipif(NUM_GPUS > 0, reason="a GPU is here: the checks run for real in make gpu-check")
def test_hw_checks_skip_without_a_gpu():
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_hw_check.py")], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("SKIP every check: no GPU:")


def test_hw_checks_take_arguments_without_a_gpu():
    hw = [sys.executable, str(ROOT / "tools" / "gpu_hw_check.py")]
    names = subprocess.run([*hw, "--list"], capture_output=True, text=True, timeout=120, cwd=ROOT, check=True)
    listed = names.stdout.splitlines()
    assert len(listed) >= 20 and listed[0].startswith("gather, scatter and scatter-add"), listed
    only = subprocess.run([*hw, "--list", "--only", "ARGMAX"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert only.returncode == 0 and only.stdout.splitlines() == [n for n in listed if "argmax" in n.lower()]
    none = subprocess.run([*hw, "--only", "no such check"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert none.returncode == 2 and "no check's name contains 'no such check'" in none.stderr


def test_the_newest_kernels_hw_checks_hold_on_the_cpu_at_small_sizes(monkeypatch, tmp_path):
    """Their expected values and their gpudev calls, checked where they can be: on the CPU, with
    sizes small enough for it (the GPU run uses 2**31 elements and more)."""
    spec = importlib.util.spec_from_file_location("gpu_hw_check", ROOT / "tools" / "gpu_hw_check.py")
    hw = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hw)
    sizes = {"DEV": "cpu", "BIG": 1000, "R": 8191, "C": 16, "N": 1000 + 2**10 + 3, "MASK_N": 2**13 + 5,
             "ARG_ROWS": 10**5, "MIN_ARGMAX_GBS": 0.0, "RANDOM_N": 10**4}
    for name, value in sizes.items():
        monkeypatch.setattr(hw, name, value)
    monkeypatch.setenv("GPU_LOG_DIR", str(tmp_path))
    for section in (hw.indexing, hw.argreduce, hw.foreign_bools, hw.random_numbers):
        section()
    assert len(hw.CHECKS) == 8
    for name, fn in hw.CHECKS:
        hw.run_check(name, fn)
    results = json.loads((tmp_path / "hw.json").read_text())
    assert list(results) == [n for n, _ in hw.CHECKS]
    for name, r in results.items():
        foreign = "viewed as bool" in name
        assert r["status"] == "PASS" or (foreign and r["status"] == "SKIP"), (name, r)

