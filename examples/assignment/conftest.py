"""The autograder's machinery: which file is graded (``--submission``, default
submission.py, Gradescope's name for the student's upload), the points of each test, and
``results.json`` in Gradescope's autograder format (``--results``)."""

from __future__ import annotations

import importlib.util
import json
import pathlib
from collections import Counter

import pytest

HERE = pathlib.Path(__file__).parent


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--submission", default="submission.py", help="the student's file to grade")
    parser.addoption("--results", default="results.json", help="where to write Gradescope's results.json")


def load(path: pathlib.Path, name: str):
    if not path.exists():
        raise pytest.UsageError(f"no submission at {path}; pass --submission FILE (e.g. --submission template.py)")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def student(request: pytest.FixtureRequest):
    path = pathlib.Path(request.config.getoption("--submission"))
    return load(path if path.is_absolute() else pathlib.Path.cwd() / path, "submission")


@pytest.fixture(scope="session")
def reference():
    return load(HERE / "solution.py", "reference_solution")


# ---------------------------------------------------------------------------------------------
# points and results.json
# ---------------------------------------------------------------------------------------------

_results: dict[str, dict] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # a test's points are split between its devices, so the total is the same on any machine
    per_function = Counter(item.originalname for item in items)
    for item in items:
        mark = item.get_closest_marker("points")
        item.user_properties.append(("max_score", (mark.args[0] if mark else 0) / per_function[item.originalname]))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    max_score = dict(report.user_properties).get("max_score", 0)
    entry = _results.setdefault(report.nodeid, {"name": report.nodeid.split("::")[-1], "max_score": max_score,
                                                "score": max_score, "status": "passed", "output": ""})
    if report.failed:
        entry.update(score=0, status="failed", output=str(report.longrepr.reprcrash.message
                                                          if hasattr(report.longrepr, "reprcrash") else report.longrepr))
    elif report.skipped and report.when in ("setup", "call"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        # an undecided speed comparison: the machine was too noisy to tell, so no points are lost
        entry["output"] = f"not graded, full points: {reason}"
    elif report.when == "call" and report.passed:
        entry["output"] = "\n".join(s for _, s in report.sections if s) or "passed"


def pytest_sessionfinish(session: pytest.Session) -> None:
    tests = list(_results.values())
    results = {
        "score": round(sum(t["score"] for t in tests), 2),
        "max_score": round(sum(t["max_score"] for t in tests), 2),
        "output": f"graded {session.config.getoption('--submission')}",
        "visibility": "visible",
        "tests": [{**t, "score": round(t["score"], 2), "max_score": round(t["max_score"], 2)} for t in tests],
    }
    pathlib.Path(session.config.getoption("--results")).write_text(json.dumps(results, indent=2))
