"""The example course assignment (examples/assignment): its autograder, run as course staff run
it (grade.py from another folder, with the upload's absolute path as on Gradescope, or pytest
in the assignment's folder), grades the template and the reference solution as documented, in
Gradescope's results.json format, and gives nothing for the ways a student could game it: one
test per attack, on this machine's devices (the CPU, and the emulated GPUs of
GPUDEV_EMULATE_GPUS=2 under `make test-gpu-emu`).

Whether a speed comparison passes depends on the machine; no test here depends on that verdict,
only on what the grader does around it (a "fail" verdict is allowed for where it is the
machine's to give, and costs exactly the speed points).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ASSIGNMENT = pathlib.Path(__file__).resolve().parent.parent / "examples" / "assignment"
TEMPLATE = (ASSIGNMENT / "template.py").read_text()
SOLUTION = (ASSIGNMENT / "solution.py").read_text()
SPEED_POINTS = 3


def grade(tmp_path: pathlib.Path, submission: str | pathlib.Path, *args: str, spelling: str = "grade.py") -> dict:
    """Grade `submission` as staff do, and return results.json with the run's exit code
    ("returncode"). spelling: 'grade.py' (run from `tmp_path`, a folder
    apart from the grader's, ``--submission PATH``), 'grade.py=' (``--submission=PATH``) or
    'pytest' (``python -m pytest --submission=PATH`` in the assignment's folder)."""
    results = tmp_path / "results.json"
    if spelling == "pytest":
        command, cwd = [sys.executable, "-m", "pytest", f"--submission={submission}"], ASSIGNMENT
    else:
        option = [f"--submission={submission}"] if spelling == "grade.py=" else ["--submission", str(submission)]
        command, cwd = [sys.executable, str(ASSIGNMENT / "grade.py"), *option], tmp_path
    # a short budget for the speed comparison: its verdict is not what these tests check
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "GRADER_ATTACK_LOG": str(tmp_path / "attack.log")}
    run = subprocess.run([*command, "-q", "--results", str(results), "--speed-seconds=1", *args], cwd=cwd,
                         capture_output=True, text=True, timeout=600, env=env)
    assert results.exists(), run.stdout + run.stderr
    doc = json.loads(results.read_text())
    check_format(doc)
    return {**doc, "returncode": run.returncode}


def check_format(doc: dict) -> None:
    """Gradescope's autograder results: a score, and per test a name, score, max_score, status."""
    assert set(doc) >= {"score", "max_score", "tests"} and doc["max_score"] == pytest.approx(10)
    for t in doc["tests"]:
        assert set(t) >= {"name", "score", "max_score", "status", "output"} and t["status"] in ("passed", "failed")
    assert doc["score"] == pytest.approx(sum(t["score"] for t in doc["tests"]), abs=0.05)


def entries(doc: dict, name: str) -> list[dict]:
    found = [t for t in doc["tests"] if t["name"].split("[")[0] == name]
    assert found, f"no {name} in {[t['name'] for t in doc['tests']]}"
    return found


def full(tests: list[dict]) -> bool:
    return all(t["score"] == t["max_score"] and t["status"] == "passed" for t in tests)


def zero(tests: list[dict], why: str) -> bool:
    return all(t["score"] == 0 and t["status"] == "failed" and why in t["output"] for t in tests)


def speed_points(doc: dict) -> float:
    """The speed test's points, checked: full when it passed or was undecided, 0 only for the
    machine's "fail" verdict."""
    (speed,) = entries(doc, "test_speed")
    assert "submission vs reference: " in speed["output"], speed
    if speed["score"] == 0:
        assert "needed at most 1.2x slower: fail" in speed["output"], speed
    return speed["score"]


def write(tmp_path: pathlib.Path, source: str) -> pathlib.Path:
    """The upload, in a folder of its own (as Gradescope puts it, apart from the grader)."""
    folder = tmp_path / "upload"
    folder.mkdir()
    path = folder / "submission.py"
    path.write_text(source)
    return path


# ---------------------------------------------------------------------------------------------
# the template and the reference solution, as documented
# ---------------------------------------------------------------------------------------------


def test_the_template_loses_the_structure_points(tmp_path):
    # as a student grades themself: pytest in the assignment's folder, a relative path
    doc = grade(tmp_path, "template.py", spelling="pytest")
    assert zero(entries(doc, "test_structure"), "template.py:") and all(
        "item x20" in t["output"] for t in entries(doc, "test_structure"))
    assert full(entries(doc, "test_correctness"))
    assert doc["score"] == pytest.approx(7 - SPEED_POINTS + speed_points(doc), abs=0.05)
    assert doc["returncode"] != 0


def test_the_reference_solution_gets_full_marks(tmp_path):
    doc = grade(tmp_path, ASSIGNMENT / "solution.py", spelling="grade.py=")
    assert full(entries(doc, "test_correctness")) and full(entries(doc, "test_structure"))
    assert doc["score"] == pytest.approx(10 - SPEED_POINTS + speed_points(doc), abs=0.05)


def test_a_missing_submission_scores_zero_and_says_why(tmp_path):
    doc = grade(tmp_path, tmp_path / "nothere.py")
    assert doc["score"] == 0 and zero(doc["tests"], f"no file at {tmp_path / 'nothere.py'}")
    assert doc["returncode"] != 0


# ---------------------------------------------------------------------------------------------
# the attacks: one test each
# ---------------------------------------------------------------------------------------------


def test_a_submission_that_skips_scores_zero(tmp_path):
    path = write(tmp_path, 'import pytest\npytest.skip("machine too noisy", allow_module_level=True)\n')
    doc = grade(tmp_path, path.relative_to(tmp_path))  # relative to the folder grade.py runs in
    assert doc["score"] == 0 and zero(doc["tests"], "raised Skipped: machine too noisy (at submission.py:2)")
    assert doc["returncode"] != 0


MEMOIZED = TEMPLATE + '''

_answered = {}
_template_train = train


def train(model, X, Y, steps=20, lr=0.05):
    """The template's train, giving its first answer again (for the same model or any other)."""
    key = (X.shape, steps, lr)
    if key not in _answered:
        _answered[key] = _template_train(model, X, Y, steps, lr)
    return _answered[key]
'''


def test_a_memoized_train_gains_nothing(tmp_path):
    doc = grade(tmp_path, write(tmp_path, MEMOIZED))
    # every call is a new problem: a kept answer is a wrong one, and a wrong one scores nothing
    (speed,) = entries(doc, "test_speed")
    assert zero([speed], "wrong losses") and zero(entries(doc, "test_structure"), "wrong losses")
    correctness = entries(doc, "test_correctness")
    assert full(correctness[:1]) and zero(correctness[1:], "wrong losses")  # the first answer only
    assert doc["score"] <= 7  # the template's most, on any machine


PATCHES_THE_REFERENCE = SOLUTION + '''

import os
import sys
import time

_step = gd.optim.SGD.step


def _slowed_step(self, *args, **kwargs):
    """SGD.step, slowed for any caller but this file (the reference, were it in this process)."""
    if sys._getframe(1).f_globals.get("__name__") != __name__:
        with open(os.environ["GRADER_ATTACK_LOG"], "a") as log:
            log.write("slowed a step of the reference\\n")
        time.sleep(0.01)
    return _step(self, *args, **kwargs)


gd.optim.SGD.step = _slowed_step
'''


def test_a_submission_cannot_patch_the_reference(tmp_path):
    doc = grade(tmp_path, write(tmp_path, PATCHES_THE_REFERENCE))
    assert not (tmp_path / "attack.log").exists()  # the patch never ran where the reference trains
    assert full(entries(doc, "test_correctness")) and full(entries(doc, "test_structure"))
    speed_points(doc)  # timed against the reference, whatever the verdict


EXITS_ONCE = SOLUTION + '''

import os
import pathlib

_train = train


def train(*args, **kwargs):
    log = pathlib.Path(os.environ["GRADER_ATTACK_LOG"])
    if not log.exists():  # the first call only
        log.write_text("os._exit\\n")
        os._exit(0)
    return _train(*args, **kwargs)
'''


def test_os_exit_scores_zero_for_that_test_and_the_grade_is_written(tmp_path):
    doc = grade(tmp_path, write(tmp_path, EXITS_ONCE), spelling="grade.py=")
    first, *others = entries(doc, "test_correctness")
    assert zero([first], "the submission's process exited with code 0 during train")
    assert full(others) and full(entries(doc, "test_structure"))  # a new process for the next test
    speed_points(doc)
    assert doc["returncode"] != 0


CRASHES_THEN_HANGS = SOLUTION + '''

import os
import pathlib
import signal
import time

_train = train


def train(*args, **kwargs):
    log = pathlib.Path(os.environ["GRADER_ATTACK_LOG"])
    calls = log.read_text().count("\\n") if log.exists() else 0
    with log.open("a") as f:
        f.write("call\\n")
    if calls == 0:
        os.kill(os.getpid(), signal.SIGSEGV)
    if calls == 1:
        time.sleep(3600)
    return _train(*args, **kwargs)
'''


# Under `make sanitize`, AddressSanitizer (preloaded into every child) catches the SIGSEGV,
# reports it and aborts, so the grader sees SIGABRT there.
CRASH_SIGNAL = "SIGABRT" if os.environ.get("GPUDEV_SANITIZE_RUN") else "SIGSEGV"


def test_a_crash_and_a_timeout_score_zero_for_their_tests(tmp_path):
    doc = grade(tmp_path, write(tmp_path, CRASHES_THEN_HANGS), "--call-timeout=2")
    tests = doc["tests"]
    assert zero(tests[:1], f"the submission's process was killed by {CRASH_SIGNAL} during train")
    assert zero(tests[1:2], "the submission did not answer within 2 s during train: stopped")
    assert full([t for t in tests[2:] if t["name"] != "test_speed"])
    speed_points(doc)
    assert doc["returncode"] != 0


READS_THROUGH_NUMPY = TEMPLATE.replace("losses.append(loss.item())",
                                       "losses.append(float(loss.detach().cpu().numpy()))")


def test_per_step_reads_through_numpy_lose_the_structure_points(tmp_path):
    assert READS_THROUGH_NUMPY != TEMPLATE
    doc = grade(tmp_path, write(tmp_path, READS_THROUGH_NUMPY))
    assert zero(entries(doc, "test_structure"), "submission.py:")
    assert full(entries(doc, "test_correctness"))
    assert doc["score"] == pytest.approx(7 - SPEED_POINTS + speed_points(doc), abs=0.05)  # 7/10 on a CPU grader
