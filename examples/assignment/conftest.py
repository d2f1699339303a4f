"""The autograder's machinery: which file is graded (``--submission``, default submission.py,
Gradescope's name for the student's upload), each graded file in a process of its own
(sandbox.py), the problems' seeds, the points of each test, and ``results.json`` in
Gradescope's autograder format (``--results``).

results.json is written once the tests are collected, every test at 0 points ("not run"),
and again after each test, so a run that ends early still leaves a grade. A test scores its
points when it passes, and when its speed comparison is undecided (the machine's noise left it
open); any other outcome (a failure, an error, a skip, a test that did not run or was not
collected) scores 0, and its "output" says why.
"""

from __future__ import annotations

import itertools
import json
import pathlib
import secrets
from collections import Counter
from collections.abc import Iterator

import pytest
from sandbox import Graded

HERE = pathlib.Path(__file__).resolve().parent
TOTAL = 10  # the assignment's points: a test that was not collected still counts, at 0


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--submission", default="submission.py",
                     help="the file to grade, relative to the current folder or absolute")
    parser.addoption("--results", default="results.json", help="where to write Gradescope's results.json")
    parser.addoption("--call-timeout", type=float, default=60.0, help="seconds each call of train may take")
    parser.addoption("--speed-seconds", type=float, default=3.0, help="the speed comparison's time budget")


# ---------------------------------------------------------------------------------------------
# the graded files, each in its own process, and the problems they are given
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def processes(request: pytest.FixtureRequest) -> Iterator[tuple[Graded, Graded]]:
    config = request.config
    path = pathlib.Path(config.getoption("--submission"))
    timeout = config.getoption("--call-timeout")
    student = Graded(path if path.is_absolute() else config.invocation_params.dir / path, "the submission", timeout)
    reference = Graded(HERE / "solution.py", "the reference", timeout)
    student.start()
    reference.start()  # both import at once
    yield student, reference
    student.close()
    reference.close()


@pytest.fixture
def student(processes: tuple[Graded, Graded]) -> Graded:
    return processes[0]


@pytest.fixture
def reference(processes: tuple[Graded, Graded]) -> Graded:
    return processes[1]


@pytest.fixture(scope="session")
def seeds() -> Iterator[int]:
    """A new problem for every call: seeds that no call shares, from a first one drawn at
    random for each grading, so that no answer can be prepared or kept for later."""
    return itertools.count(secrets.randbits(48))


# ---------------------------------------------------------------------------------------------
# points and results.json
# ---------------------------------------------------------------------------------------------

_config: pytest.Config
_results: dict[str, dict] = {}
_problems: list[str] = []  # what kept tests from being collected
NOT_RUN = "not run: the grading stopped before this test, or left it out"


def pytest_collectreport(report: pytest.CollectReport) -> None:
    if report.failed:
        last = str(report.longrepr).strip().splitlines()[-1:]
        _problems.append(f"{report.nodeid or 'the tests'} could not be collected: {' '.join(last)}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # a test's points are split between its devices, so the total is the same on any machine
    per_function = Counter(item.originalname for item in items)
    for item in items:
        mark = item.get_closest_marker("points")
        max_score = (mark.args[0] if mark else 0) / per_function[item.originalname]
        _results[item.nodeid] = {"name": item.nodeid.split("::")[-1], "max_score": max_score, "score": 0,
                                 "status": "failed", "output": NOT_RUN}
    _write(config)


def _message(report: pytest.TestReport) -> str:
    if report.skipped and isinstance(report.longrepr, tuple):
        return report.longrepr[2]
    crash = getattr(report.longrepr, "reprcrash", None)
    message = crash.message if crash is not None else str(report.longrepr)
    for prefix in ("sandbox.SubmissionError: ", "AssertionError: "):  # the message says enough
        message = message.removeprefix(prefix)
    return message


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    entry = _results.get(report.nodeid)
    if entry is None:
        return
    if report.when == "call" and report.passed:
        output = "\n".join(s for _, s in report.sections if s) or "passed"
        entry.update(score=entry["max_score"], status="passed", output=output)
    elif report.when == "call" and report.skipped and dict(report.user_properties).get("undecided"):
        # the machine's noise left the speed comparison open: no student is graded on the load
        entry.update(score=entry["max_score"], status="passed", output=f"not graded, full points: {_message(report)}")
    elif report.failed or report.skipped:
        what = {"setup": "error before the test", "call": "failed", "teardown": "error after the test"}[report.when]
        if report.skipped:
            what = "skipped, which scores no points"
        entry.update(score=0, status="failed", output=f"{what}: {_message(report)}")
    _write(_config)


def _tests() -> list[dict]:
    tests = list(_results.values())
    missing = TOTAL - sum(t["max_score"] for t in tests)
    if missing > 0.005:
        why = "; ".join(_problems) or "fewer tests were collected than the assignment has"
        tests.append({"name": "tests not collected", "score": 0, "max_score": missing, "status": "failed",
                      "output": why})
    return tests


def _write(config: pytest.Config) -> None:
    tests = _tests()
    results = {
        "score": round(sum(t["score"] for t in tests), 2),
        "max_score": round(sum(t["max_score"] for t in tests), 2),
        "output": f"graded {config.getoption('--submission')}",
        "visibility": "visible",
        "tests": [{**t, "score": round(t["score"], 2), "max_score": round(t["max_score"], 2)} for t in tests],
    }
    path = pathlib.Path(config.getoption("--results"))
    path = path if path.is_absolute() else config.invocation_params.dir / path
    path.write_text(json.dumps(results, indent=2))


def pytest_configure(config: pytest.Config) -> None:
    global _config
    _config = config


def pytest_sessionfinish(session: pytest.Session) -> None:
    _write(session.config)  # also when nothing was collected
