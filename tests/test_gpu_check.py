"""tools/gpu_check.sh and tools/gpu_hw_check.py, the check for a machine with a GPU, tried where
there is none: the script parses, refuses clearly where there is no GPU or no log folder, names
only test files that exist, and its dry run's budgets fit 5 minutes of an H200; the hardware
items import, take their arguments and skip (not fail) without a GPU, and the newest kernels'
checks hold on the CPU at small sizes. On emulated GPUs (`make test-gpu-emu`) the whole quick
check runs end to end (--emulated: cut sizes, seconds) and leaves its archive, and a run killed
at a step or item drawn at random keeps every step and item that finished before it.
"""

from __future__ import annotations

import json
import os
import random
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
HW = [sys.executable, str(ROOT / "tools" / "gpu_hw_check.py")]


def _run(*args: str, env: dict[str, str] | None = None, timeout: int = 60,
         new_session: bool = False) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OUT", "GPUDEV_EMULATE", "GPU_CHECK"))}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout,
                          env={**base, "PYTHON": sys.executable, **(env or {})}, cwd=ROOT,
                          start_new_session=new_session)


def _left_in(folder: Path) -> tuple[list[str], str, dict[str, bytes]]:
    """What a run left in its log folder: the file names, the summary, the archive's files."""
    with tarfile.open(folder / "gpu-check-logs.tar.gz") as t:
        files = {m.name.removeprefix("./"): t.extractfile(m).read() for m in t.getmembers() if m.isfile()}
    return sorted(p.name for p in folder.iterdir()), (folder / "summary.txt").read_text(), files


def _steps(mode: str = "quick") -> list[tuple[str, str]]:
    """(step, budget) of the dry run, in order; the budget 'rest' for those run if time is left."""
    p = _run(f"--{mode}", "--dry-run")
    assert p.returncode == 0, p.stdout + p.stderr
    return re.findall(r"^  (\S+) +(\d+|rest) s  ", p.stdout, re.M)


def test_gpu_check_parses():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True, timeout=30)


def test_gpu_check_needs_a_log_folder():
    for args in ((), ("--quick",), ("--full", "a", "b"), ("--fast", "a")):
        p = _run(*args)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert "usage: tools/gpu_check.sh [--quick | --full | --emulated] [--dry-run] [LOG_DIR]" in p.stderr
        assert "defaults to $OUT when set" in p.stderr


def test_the_quick_check_fits_five_minutes_of_an_h200_by_its_budgets():
    steps = _steps()
    names = [name for name, _ in steps]
    assert names == ["prelude", "build", "info", "ctest-cuda", "first-tests", "bench", "hw-checks", "memcheck",
                     "racecheck"], names
    fixed = sum(int(b) for _, b in steps if b != "rest")
    assert fixed <= 300 and dict(steps)["bench"] == "60", steps
    assert [n for n, _ in steps if _ == "rest"] == ["memcheck", "racecheck"]
    assert _steps("emulated") == steps  # the emulated run is the quick check's steps
    assert {"all-tests", "gpu-bench", "synccheck"} <= {n for n, _ in _steps("full")}


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_gpu_check_without_a_gpu_says_so_and_writes_its_summary(tmp_path):
    p = _run("--quick", str(tmp_path / "logs"))
    files, summary, archived = _left_in(tmp_path / "logs")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "CANNOT RUN: no NVIDIA GPU or driver here (nvidia-smi: not found)" in summary
    assert "--emulated" in summary and summary in p.stdout
    assert files == ["gpu-check-logs.tar.gz", "summary.txt"] and list(archived) == ["summary.txt"]


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
    newest = {"tests/test_matmul.py", "tests/test_axpby.py", "tests/test_elementwise_accuracy.py", "tests/test_threads.py"}
    assert newest <= set(files), files
    missing = [f for f in files if not (ROOT / f).is_file()]
    assert not missing, f"tools/gpu_check.sh runs first test files that do not exist: {missing}"


def test_the_sanitized_sections_are_sections_of_the_conformance_test():
    listed = re.search(r"^SANITIZED=\(([^)]*)\)", SCRIPT.read_text(), re.M)
    assert listed, "SANITIZED=(...) not found in tools/gpu_check.sh"
    names = re.findall(r'"([^"]+)"', listed.group(1))
    sources = "".join(p.read_text() for p in (ROOT / "tests" / "c").glob("*.c"))
    assert len(names) >= 3 and all(f'"{n}"' in sources for n in names), names


@pytest.mark.skipif(NUM_GPUS > 0, reason="a GPU is here: the checks run for real in make gpu-check")
def test_hw_checks_skip_without_a_gpu():
    for part in ("checks", "bench"):
        p = subprocess.run([*HW, "--part", part], capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert p.returncode == 0, p.stdout + p.stderr
        assert p.stdout.startswith("SKIP every item: no GPU:")


def test_hw_checks_take_arguments_without_a_gpu():
    names = subprocess.run([*HW, "--list"], capture_output=True, text=True, timeout=120, cwd=ROOT, check=True)
    listed = names.stdout.splitlines()
    assert len(listed) >= 25 and listed[0].startswith("bits: every float function"), listed
    quick = subprocess.run([*HW, "--list", "--quick"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert set(quick.stdout.splitlines()) < set(listed)
    only = subprocess.run([*HW, "--list", "--only", "ARGMAX"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert only.returncode == 0 and only.stdout.splitlines() == [n for n in listed if "argmax" in n.lower()]
    rows = subprocess.run([*HW, "--list", "--part", "bench"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert any(r.startswith("SGEMM 8192") for r in rows.stdout.splitlines()), rows.stdout
    none = subprocess.run([*HW, "--only", "no such check"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert none.returncode == 2 and "no checks item's name contains 'no such check'" in none.stderr


def test_the_newest_kernels_hw_checks_hold_on_the_cpu_at_small_sizes(tmp_path):
    """Their expected values and their gpudev calls, checked where they can be: on the CPU, with
    sizes small enough for it (the GPU run uses 2**31 elements and more)."""
    words = ["gather, scatter", "masks, nonzero", "bad index", "argmax", "seed", "viewed as bool", "bits:",
             "2**31 bytes", "scatter-add's"]
    p = subprocess.run([*HW, "--small", "--device", "cpu", *[a for w in words for a in ("--only", w)]],
                       capture_output=True, text=True, timeout=300, cwd=ROOT,
                       env={**os.environ, "GPU_LOG_DIR": str(tmp_path)})
    assert p.returncode == 0, p.stdout + p.stderr
    results = json.loads((tmp_path / "checks.json").read_text())
    assert len(results) == 12, list(results)
    for name, r in results.items():
        assert r["status"] == "PASS" or ("viewed as bool" in name and r["status"] == "SKIP"), (name, r)


# ---------------------------------------------------------------------------------------------
# the whole check on an emulated GPU
# ---------------------------------------------------------------------------------------------


def test_the_quick_check_runs_end_to_end_on_an_emulated_gpu(cuda0, tmp_path):
    p = _run("--emulated", str(tmp_path), timeout=300)
    files, summary, archived = _left_in(tmp_path)
    assert p.returncode == 0, summary + p.stdout[-3000:] + p.stderr[-2000:]
    assert files == ["gpu-check-logs.tar.gz", "summary.txt"]  # what comes back from $OUT: two files
    for step in ("build", "info", "first-tests", "bench", "hw-checks"):
        assert re.search(rf"^PASS +{step} \(", summary, re.M), (step, summary)
        assert f"{step}.log" in archived
    for step in ("ctest-cuda", "memcheck", "racecheck"):
        assert re.search(rf"^SKIP +{step}: ", summary, re.M), (step, summary)
    bench = json.loads(archived["bench.json"])
    rows = [n for n, r in bench.items() if r["status"] == "PASS"]
    assert any(n.startswith("SGEMM 8192") for n in rows) and "figures" in bench[rows[1]], bench
    assert "emulated GPU: CPU times, no GPU figure" in bench[rows[1]]["message"]
    checks = json.loads(archived["checks.json"])
    assert not [n for n, r in checks.items() if r["status"] == "FAIL"], checks
    assert archived["summary.txt"].decode() == summary


RUN_STEPS = ["build", "info", "first-tests", "bench", "hw-checks"]  # those the emulated run runs


def _kill_points() -> list[tuple[str, str, list[str]]]:
    """Every place a run can be cut, as (GPU_CHECK_INJECT_KILL, the step it cuts, the items of
    that step that finish before it): each step the emulated run runs, each item of its Python
    steps."""
    points = [(f"step:{s}", s, []) for s in RUN_STEPS]
    for part, step in (("bench", "bench"), ("checks", "hw-checks")):
        names = subprocess.run([*HW, "--list", "--quick", "--part", part], capture_output=True, text=True,
                               timeout=120, cwd=ROOT, check=True).stdout.splitlines()
        points += [(f"item:{n}", step, names[:i]) for i, n in enumerate(names)]
    return points


def test_a_run_killed_at_a_random_step_keeps_every_step_that_finished(cuda0, tmp_path, tmp_path_factory):
    """The machine taken away mid-run, at a place drawn at random (GPU_CHECK_KILL_SEED repeats
    a draw): an injected step kills the run there, deterministically, and the archive still
    holds each finished step's log and each finished item's result."""
    seed = int(os.environ.get("GPU_CHECK_KILL_SEED", random.randrange(1 << 30)))
    at, step, before = random.Random(seed).choice(_kill_points())
    why = f"killed at {at!r} (GPU_CHECK_KILL_SEED={seed})"
    # a killed run cannot remove its scratch folder: it goes to pytest's temporary folders, not /tmp
    scratch = str(tmp_path_factory.mktemp("scratch"))
    p = _run("--emulated", str(tmp_path), env={"GPU_CHECK_INJECT_KILL": at, "TMPDIR": scratch}, timeout=300,
             new_session=True)
    assert p.returncode == -9, (why, p.returncode, p.stdout[-2000:], p.stderr[-2000:])
    _, summary, archived = _left_in(tmp_path)
    assert "RESULT" not in summary and archived["summary.txt"].decode() == summary, why
    for done in RUN_STEPS[: RUN_STEPS.index(step)]:
        assert re.search(rf"^PASS +{done} \(", summary, re.M) and f"{done}.log" in archived, (why, done, summary)
    assert not re.search(rf"^\S+ +{step}\b", summary, re.M), (why, summary)
    if at.startswith("item:"):
        part = "bench.json" if step == "bench" else "checks.json"
        kept = json.loads(archived[part]) if part in archived else {}
        assert list(kept) == before, (why, list(kept))
        assert f"{step}.log" in archived, why  # the log so far, packed with the last item


def test_nothing_here_needs_a_registry_or_a_gpu_of_its_own():
    """The hardware items import nothing the GPU machine lacks (Python 3.12 with numpy, torch,
    cupy, pytest): the standard library, numpy and gpudev, torch and cupy only inside items."""
    allowed = {"__future__", "argparse", "dataclasses", "functools", "json", "os", "shutil", "signal", "subprocess",
               "sys", "tarfile", "textwrap", "threading", "time", "traceback", "collections", "numpy", "gpudev",
               "gpu_hw"}
    for path in [ROOT / "tools" / "gpu_hw_check.py", *(ROOT / "tools" / "gpu_hw").glob("*.py")]:
        top = re.findall(r"^(?:from|import) ([\w.]+)", path.read_text(), re.M)
        outside = {m.split(".")[0] for m in top} - allowed - {""}
        assert not outside, (path.name, outside)
