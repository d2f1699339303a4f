"""Fuzz profiles, seed files and the tally printed after a fuzz run.

GPUDEV_FUZZ=short (the default, inside `make test`) or long (`make fuzz`) sets the number of
files per mutation kind, hypothesis examples per property and hostile calls per argument
sweep (under the sanitizer build, a fifth of the calls: it runs about ten times slower) and
seconds per callable of the thread-mutation harness (GPUDEV_FUZZ_RACE_SECONDS overrides it);
GPUDEV_FUZZ_FILES, GPUDEV_FUZZ_EXAMPLES and GPUDEV_FUZZ_SEED override the file count, the
examples and the random seed; GPUDEV_FUZZ_FAILURES names a
folder that keeps every file that broke the contract (default: pytest's temporary folder).
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from .oracle import SANITIZED, Verdict
from .seeds import Seed, make_seeds

_FILES = {"short": 40, "long": 5000}
_EXAMPLES = {"short": 40, "long": 2000}
_BOMB_LOG2 = {"short": 23, "long": 26}  # honest zip bombs hold up to 8 MiB, 64 MiB
_CALLS = {"short": 3000, "long": 10**9}  # long: every hostile case, and random pairs
_RACE_SECONDS = {"short": 0.15, "long": 5.0}  # per callable, while another thread rewrites it


@dataclass(frozen=True)
class Profile:
    name: str
    files: int  # per mutation kind
    examples: int  # per hypothesis property
    calls: int  # hostile calls per argument sweep, at most
    bomb_log2: int
    seed: int
    race_seconds: float  # per callable of the thread-mutation harness


def _profile() -> Profile:
    name = os.environ.get("GPUDEV_FUZZ", "short")
    if name not in _FILES:
        raise pytest.UsageError(f"GPUDEV_FUZZ must be one of {sorted(_FILES)}, got {name!r}")
    files = int(os.environ.get("GPUDEV_FUZZ_FILES", _FILES[name]))
    examples = int(os.environ.get("GPUDEV_FUZZ_EXAMPLES", _EXAMPLES[name]))
    seed = int(os.environ.get("GPUDEV_FUZZ_SEED", "0"))
    calls = _CALLS[name] // (5 if SANITIZED else 1)
    race = float(os.environ.get("GPUDEV_FUZZ_RACE_SECONDS", _RACE_SECONDS[name]))
    return Profile(name, files, examples, calls, _BOMB_LOG2[name], seed, race)


PROFILE = _profile()


class Tally:
    """Files judged per mutation kind: outcomes, NumPy's view, failures, time, memory; and
    the calls each hostile-argument sweep made."""

    def __init__(self) -> None:
        self.calls: Counter = Counter()
        self.outcomes: dict[str, Counter] = defaultdict(Counter)
        self.seconds: Counter = Counter()
        self.peak: Counter = Counter()
        self.wall = 0.0  # seconds the fuzz tests ran, mutating and judging included

    def add(self, kind: str, verdict: Verdict) -> None:
        counts = self.outcomes[kind]
        counts["files"] += 1
        counts[verdict.outcome] += 1
        counts[f"numpy {verdict.numpy}"] += 1
        counts["failures"] += verdict.failure is not None
        self.seconds[kind] += verdict.seconds
        self.peak[kind] = max(self.peak[kind], verdict.allocated, verdict.resident)

    def lines(self) -> list[str]:
        columns = ["files", "loaded", "ValueError", "OSError", "numpy accepts", "failures"]
        others = sorted({k for c in self.outcomes.values() for k in c} - set(columns)
                        - {"numpy refuses"})
        head = f"{'kind':<12}" + "".join(f"{c:>14}" for c in columns + others)
        rows = [head + f"{'gd.load s':>11}{'peak MiB':>10}"]
        total: Counter = Counter()
        for kind, counts in sorted(self.outcomes.items()):
            total.update(counts)
            rows.append(f"{kind:<12}" + "".join(f"{counts[c]:>14}" for c in columns + others)
                        + f"{self.seconds[kind]:>11.1f}{self.peak[kind] / 2**20:>10.1f}")
        rows.append(f"{'total':<12}" + "".join(f"{total[c]:>14}" for c in columns + others)
                    + f"{sum(self.seconds.values()):>11.1f}")
        return rows


TALLY = Tally()


@pytest.fixture(scope="session")
def fuzz_profile() -> Profile:
    return PROFILE


@pytest.fixture(scope="session")
def fuzz_tally() -> Tally:
    return TALLY


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" and "fuzz" in report.keywords:
        TALLY.wall += report.duration


@pytest.fixture(scope="session")
def seeds(tmp_path_factory: pytest.TempPathFactory) -> list[Seed]:
    return make_seeds(str(tmp_path_factory.mktemp("fuzz-seeds")))


class Scratch:
    """One file rewritten in place for every fuzzed file. Opening with O_TRUNC, or cutting
    to zero, makes ext4 flush the file on close (auto_da_alloc): milliseconds per file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)

    def write(self, raw: bytes) -> str:
        os.pwrite(self._fd, raw, 0)
        os.ftruncate(self._fd, len(raw))
        return self.path

    def close(self) -> None:
        os.close(self._fd)


@pytest.fixture
def scratch(tmp_path) -> Iterator[Scratch]:
    file = Scratch(str(tmp_path / "fuzzed.bin"))
    yield file
    file.close()


@pytest.fixture(scope="session")
def keep_failure(tmp_path_factory: pytest.TempPathFactory):
    """keep_failure(raw, name) saves a file that broke the contract; returns its path."""
    folder = os.environ.get("GPUDEV_FUZZ_FAILURES") or str(tmp_path_factory.mktemp("fuzz-failures"))
    os.makedirs(folder, exist_ok=True)

    def keep(raw: bytes, name: str) -> str:
        path = os.path.join(folder, name)
        with open(path, "wb") as f:
            f.write(raw)
        return path

    return keep


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not TALLY.outcomes and not TALLY.calls:
        return
    terminalreporter.section(f"fuzz: profile {PROFILE.name}, seed {PROFILE.seed}")
    for line in TALLY.lines() if TALLY.outcomes else []:
        terminalreporter.write_line(line)
    for sweep, n in sorted(TALLY.calls.items()):
        terminalreporter.write_line(f"hostile calls, {sweep}: {n}")
    terminalreporter.write_line(f"wall time of the tests that fuzzed: {TALLY.wall:.0f} s")
