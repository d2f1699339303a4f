"""The example course assignment (examples/assignment): its autograder, run as a course would
run it, takes the structure points from the template (a sync per step) and gives the reference
solution full marks, in Gradescope's results.json format, on this machine's devices."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ASSIGNMENT = pathlib.Path(__file__).resolve().parent.parent / "examples" / "assignment"


def grade(submission: str, tmp_path: pathlib.Path) -> dict:
    results = tmp_path / f"{submission}.json"
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--submission", submission,
                          "--results", str(results)], cwd=ASSIGNMENT, capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert results.exists(), run.stdout + run.stderr
    return json.loads(results.read_text())


def check_format(doc: dict) -> None:
    """Gradescope's autograder results: a score, and per test a name, score, max_score, status."""
    assert set(doc) >= {"score", "tests"}
    for t in doc["tests"]:
        assert set(t) >= {"name", "score", "max_score", "status", "output"} and t["status"] in ("passed", "failed")
    assert doc["score"] == pytest.approx(sum(t["score"] for t in doc["tests"]), abs=0.05)


def test_the_template_loses_the_structure_points(tmp_path):
    doc = grade("template.py", tmp_path)
    check_format(doc)
    assert doc["max_score"] == pytest.approx(10)
    structure = [t for t in doc["tests"] if t["name"].startswith("test_structure")]
    correctness = [t for t in doc["tests"] if t["name"].startswith("test_correctness")]
    assert structure and all(t["score"] == 0 and "template.py:" in t["output"] and "item x20" in t["output"]
                             for t in structure)
    assert correctness and all(t["score"] == t["max_score"] for t in correctness)
    assert doc["score"] <= doc["max_score"] - 3 + 0.05  # and the speed points too on a GPU, where it stalls


def test_the_reference_solution_gets_full_marks(tmp_path):
    doc = grade("solution.py", tmp_path)
    check_format(doc)
    assert doc["score"] == pytest.approx(doc["max_score"]) and doc["max_score"] == pytest.approx(10)
    assert all(t["status"] == "passed" for t in doc["tests"])


def test_a_missing_submission_is_named(tmp_path):
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--submission",
                          "nothere.py", "--results", str(tmp_path / "r.json")], cwd=ASSIGNMENT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode != 0 and "no submission at" in run.stdout + run.stderr
