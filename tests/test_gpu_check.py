"""tools/gpu_check.sh and tools/gpu_hw_check.py, the checks for a machine with a GPU, as far as a
machine without one can try them: the shell script parses, refuses clearly where there is no
GPU or no log folder, and the hardware checks skip (not fail) without a GPU.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NUM_GPUS

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "gpu_check.sh"


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})}, cwd=ROOT)


def test_gpu_check_parses():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True, timeout=30)


def test_gpu_check_needs_a_log_folder():
    p = _run()
    assert p.returncode == 2 and "usage: tools/gpu_check.sh [--quick | --full] LOG_DIR" in p.stderr


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_gpu_check_without_a_gpu_says_so_and_writes_its_summary(tmp_path):
    p = _run("--quick", str(tmp_path / "logs"), env={"GPU_CHECK_NO_GPU": "0"})
    summary = (tmp_path / "logs" / "summary.txt").read_text()
    assert p.returncode == 2, p.stdout + p.stderr
    assert "CANNOT RUN: no NVIDIA GPU or driver here (nvidia-smi: not found)" in summary
    assert "GPU_CHECK_NO_GPU=1" in summary and summary in p.stdout


@pytest.mark.skipif(NUM_GPUS > 0, reason="a GPU is here: the checks run for real in make gpu-check")
def test_hw_checks_skip_without_a_gpu():
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "gpu_hw_check.py")], capture_output=True, text=True,
                       timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.startswith("SKIP every check: no GPU:")
