"""Run the Python array API standard's own test suite (data-apis/array-api-tests) against
gpudev and against NumPy with the same settings, and print both counts.

    python tools/array_api.py [--only gpudev|numpy] [--tests-url URL] [--spec-url URL] [PYTEST_ARGS...]

`make array-api` runs it. The suite is cloned at a pinned commit (with the standard's text, its
`array-api` submodule, at the commit the suite pins) into build/array-api-tests; the URLs can
point at local mirrors. The settings are those docs/guides/array-api.md states:
API version 2024.12, 20 examples per test, Hypothesis derandomized (each test draws the same
examples every run, so two runs give the same counts) and without its deadline (a busy machine
would fail tests on time alone), the fft and linalg extensions off for both libraries (so the
two counts compare the same tests; ``--extensions linalg`` runs gpudev.linalg's tests too),
and the dtypes that gpudev does not have skipped. Extra arguments go to pytest, e.g.
``array_api_tests/test_creation_functions.py`` to run one file.

The failures of each run are written to build/array-api/<module>-failures.txt, grouped by
test function, with the first line of each error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUITE = ROOT / "build" / "array-api-tests"
OUT = ROOT / "build" / "array-api"
# The suite at this commit cannot load with the complex dtypes skipped (two lines take the
# widest complex dtype unconditionally); the patch makes those two lines accept none.
PATCH = ROOT / "tools" / "array_api_tests.patch"
TESTS_URL = "https://github.com/data-apis/array-api-tests"
SPEC_URL = "https://github.com/data-apis/array-api"
# the suite's commit; the standard's commit is the one its array-api submodule records
TESTS_COMMIT = "55fcc60179efa2680ddd6cd926ddf17b83530e2b"
API_VERSION = "2024.12"
MAX_EXAMPLES = 20
# The standard's dtypes that gpudev lacks, the complex ones included (the patch lets the suite
# skip those): gpudev has bool, int32, int64, float32 and float64.
SKIP_DTYPES = "int8,int16,uint8,uint16,uint32,uint64,complex64,complex128"
MODULES = {"gpudev": "gpudev", "numpy": "numpy"}


def git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def checkout(tests_url: str, spec_url: str) -> None:
    """The suite at TESTS_COMMIT and its submodule at the commit it records, reused when there."""
    if not (SUITE / ".git").exists():
        SUITE.parent.mkdir(parents=True, exist_ok=True)
        print(f"cloning {tests_url} into {SUITE.relative_to(ROOT)}", flush=True)
        git("clone", "-q", "--no-checkout", tests_url, str(SUITE))
    # a fresh checkout each time, so the patch below applies to the pinned files only
    git("checkout", "-q", "--force", TESTS_COMMIT, cwd=SUITE)
    git("apply", str(PATCH), cwd=SUITE)
    spec_commit = git("rev-parse", f"{TESTS_COMMIT}:array-api", cwd=SUITE)
    spec = SUITE / "array-api"
    if not (spec / ".git").exists():
        if spec.exists():
            spec.rmdir()  # the empty folder the suite's checkout leaves for its submodule
        print(f"cloning {spec_url} into {spec.relative_to(ROOT)}", flush=True)
        git("clone", "-q", "--no-checkout", spec_url, str(spec))
    if git("rev-parse", "HEAD", cwd=spec) != spec_commit:
        git("checkout", "-q", "--force", spec_commit, cwd=spec)
    # the suite's own requirements (pytest-json-report, hypothesis, ndindex), into this venv
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "-r", str(SUITE / "requirements.txt")],
                   check=True)


def run(name: str, pytest_args: list[str], extensions: list[str]) -> dict[str, int]:
    """One run of the suite on one module; returns its outcome counts."""
    OUT.mkdir(parents=True, exist_ok=True)
    report = OUT / f"{name}.json"
    env = dict(os.environ, ARRAY_API_TESTS_MODULE=MODULES[name], ARRAY_API_TESTS_VERSION=API_VERSION,
               ARRAY_API_TESTS_SKIP_DTYPES=SKIP_DTYPES, PYTHONHASHSEED="0")
    disabled = [e for e in ("linalg", "fft") if e not in extensions]
    # the tests to run come first: --disable-extension takes every word after it
    cmd = [sys.executable, "-m", "pytest", *(pytest_args or ["array_api_tests"]), "-q",
           "-p", "no:cacheprovider", "--tb=line", f"--max-examples={MAX_EXAMPLES}", "--derandomize",
           "--disable-deadline", "--json-report", f"--json-report-file={report}",
           "--json-report-omit", "keywords", "log", *(["--disable-extension", *disabled] if disabled else [])]
    print(f"== {name}: {' '.join(cmd[1:])}", flush=True)
    subprocess.run(cmd, cwd=SUITE, env=env, stdout=subprocess.DEVNULL)
    data = json.loads(report.read_text())
    write_failures(name, data["tests"])
    counts = defaultdict(int, data["summary"])
    counts["collection errors"] = sum(1 for c in data.get("collectors", []) if c["outcome"] == "failed")
    return counts


def first_error_line(test: dict) -> str:
    for stage in ("setup", "call", "teardown"):
        crash = test.get(stage, {}).get("crash")
        if crash and test[stage].get("outcome") == "failed":
            text = crash.get("message", "").strip().splitlines()
            return text[0][:160] if text else ""
    return ""


MISSING = re.compile(r"has no attribute '(\w+)'")


def write_failures(name: str, tests: list[dict]) -> None:
    """Failed tests grouped by test function, each group headed by the missing names its
    errors mention (an AttributeError), so what is left to build reads at a glance."""
    groups: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for t in tests:
        if t["outcome"] in ("failed", "error"):
            func = t["nodeid"].split("[")[0]
            groups[func].append((t["nodeid"], first_error_line(t)))
    lines = [f"# {name}: {sum(len(v) for v in groups.values())} failing tests in {len(groups)} test functions"]
    for func in sorted(groups):
        missing = sorted({m for _, err in groups[func] for m in MISSING.findall(err)})
        head = f"{func} ({len(groups[func])})" + (f"  missing: {', '.join(missing)}" if missing else "")
        lines.append(head)
        for nodeid, err in groups[func][:5]:
            lines.append(f"    {nodeid.removeprefix(func)}  {err}")
        if len(groups[func]) > 5:
            lines.append(f"    ... {len(groups[func]) - 5} more")
    (OUT / f"{name}-failures.txt").write_text("\n".join(lines) + "\n")


def summary(counts: dict[str, int]) -> str:
    keys = ("passed", "failed", "error", "skipped", "xfailed", "xpassed", "collection errors")
    return ", ".join(f"{counts[k]} {k}" for k in keys if counts.get(k)) + f" of {counts.get('total', 0)}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(MODULES))
    parser.add_argument("--tests-url", default=os.environ.get("ARRAY_API_TESTS_URL", TESTS_URL))
    parser.add_argument("--spec-url", default=os.environ.get("ARRAY_API_SPEC_URL", SPEC_URL))
    parser.add_argument("--extensions", nargs="*", default=[], choices=["linalg", "fft"])
    args, pytest_args = parser.parse_known_args()
    checkout(args.tests_url, args.spec_url)
    results = {name: run(name, pytest_args, args.extensions)
               for name in ([args.only] if args.only else ["gpudev", "numpy"])}
    print()
    for name, counts in results.items():
        print(f"{name:7s} {summary(counts)}   (failures: {(OUT / f'{name}-failures.txt').relative_to(ROOT)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
