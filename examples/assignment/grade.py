"""Grade one file: ``python grade.py --submission PATH [--results results.json]``, from any
folder, with PATH relative to it or absolute (on Gradescope: ``--submission
/autograder/submission/submission.py --results /autograder/results/results.json``). Runs this
folder's autograder and exits with pytest's code (0 only when every test passed); other
arguments go to pytest (``-q``, ``--call-timeout=SECONDS``).

In this folder, ``python -m pytest --submission=PATH`` grades as well. pytest alone cannot take
``--submission PATH`` (a space) when PATH lies in another folder: it reads PATH as a test path
before it reads this folder's conftest.py, and then does not read it.
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Grade a submission of this folder's assignment.")
    parser.add_argument("--submission", default="submission.py", help="the file to grade (default submission.py)")
    parser.add_argument("--results", default="results.json", help="where to write Gradescope's results.json")
    args, rest = parser.parse_known_args(argv)
    submission, results = pathlib.Path(args.submission).resolve(), pathlib.Path(args.results).resolve()
    return int(pytest.main([str(HERE / "test_autograder.py"), "-c", str(HERE / "pytest.ini"), "--rootdir", str(HERE),
                            f"--submission={submission}", f"--results={results}", *rest]))


if __name__ == "__main__":
    sys.exit(main())
