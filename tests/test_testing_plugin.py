"""gpudev.testing: the pytest plugin (run through pytester: gd_device, gd_benchmark and its
JSON, assert_faster's pass / fail / undecided and what undecided does), and the structural and
numerical assertions."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

import gpudev as gd
from gpudev.trace import TraceEvent
from gpudev.testing import (TOLERANCES, UndecidedError, assert_allclose, assert_copies, assert_faster,
                            assert_syncs, check_copies, check_syncs, compare)

pytest_plugins = ["pytester"]

# A clock the timed functions move: assert_faster reads time.perf_counter, and here time
# passes only when `takes(seconds)` says so, so no outcome depends on the machine's load or on
# how long a sleep really lasts.
CLOCK = """
import itertools
import time
import pytest
from gpudev.testing import assert_faster

class Clock:
    now = 0.0

    def __call__(self):
        return self.now

clock = Clock()

@pytest.fixture(autouse=True)
def _clock(monkeypatch):
    monkeypatch.setattr(time, "perf_counter", clock)

def takes(seconds):
    clock.now += seconds
"""

CLEAR = CLOCK + """
def takes_1ms():
    takes(0.001)

def takes_6ms():
    takes(0.006)
"""

# Noise that comes and goes, every 3 calls, and slows only `slow` while it lasts, so the
# per-round ratios fall half at 0.5x and half at 4.5x (each call lasts over a millisecond, so a
# round is one call and sees one state): no number of rounds can tell whether `fast` is 1.5x
# faster.
NOISY = CLOCK + """
calls = itertools.count()

def fast():
    takes(0.003)

def slow():
    loaded = next(calls) // 3 % 2
    takes(0.0135 if loaded else 0.0015)
"""


def test_gd_device_runs_on_each_device_with_clear_ids(pytester):
    pytester.makepyfile("def test_here(gd_device):\n    assert gd_device.type in ('cpu', 'cuda')\n")
    result = pytester.runpytest("-v")
    ids = ["cpu"] + [f"cuda:{i}-emulated" if gd.emulation.active() else f"cuda:{i}" for i in range(gd.num_gpus())]
    result.assert_outcomes(passed=len(ids))
    for i in ids:
        result.stdout.fnmatch_lines([f"*test_here[[]{i}[]] PASSED*"])


def test_gd_benchmark_writes_pytest_benchmark_json(pytester):
    pytester.makepyfile("""
        import gpudev as gd

        def test_sum(gd_benchmark):
            a = gd.ones(1000)
            r = gd_benchmark(a.sum, n_repeat=7)
            assert r.n == 7 and r.median > 0
    """)
    result = pytester.runpytest("--gd-benchmark-json=bench.json", "--gd-benchmark-max-time=0.5")
    result.assert_outcomes(passed=1)
    doc = json.loads((pytester.path / "bench.json").read_text())
    assert set(doc) >= {"machine_info", "commit_info", "benchmarks", "datetime", "version"}
    (entry,) = doc["benchmarks"]
    assert entry["name"] == "test_sum" and entry["fullname"].endswith("::test_sum")
    st = entry["stats"]
    assert st["rounds"] == 7 and len(st["data"]) == 7
    assert st["min"] <= st["q1"] <= st["median"] <= st["q3"] <= st["max"]
    assert st["iqr"] == pytest.approx(st["q3"] - st["q1"])
    assert st["ops"] == pytest.approx(1 / st["mean"])
    assert entry["options"]["max_time"] == 0.5
    assert entry["extra_info"]["function"] == "sum"


def test_assert_faster_passes_with_a_clear_margin_and_fails_when_slower(pytester):
    pytester.makepyfile(CLEAR + """
def test_clear_margin():
    c = assert_faster(takes_1ms, takes_6ms, by=1.5, max_duration=3)
    assert c.outcome == "pass" and c.speedup.lo >= 1.5 and c.speedup.ratio == pytest.approx(6)
    assert str(c).startswith("takes_1ms vs takes_6ms: 6x faster (median of paired ratios, 95% interval 6x to 6x")
    assert str(c).endswith("needed at least 1.5x faster: pass")

def test_slower():
    assert_faster(takes_6ms, takes_1ms, by=1.5, max_duration=3)

def test_slowdown_bound():
    assert_faster(takes_6ms, takes_1ms, by=1 / 1.2, max_duration=3)
""")
    result = pytester.runpytest("-rf")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*takes_6ms vs takes_1ms: 6x slower (median of paired ratios, 95% interval 6x to 6x, "
                                 "*needed at least 1.5x faster: fail (the whole interval falls short of it)*",
                                 "*takes_6ms vs takes_1ms: 6x slower *needed at most 1.2x slower: fail*"])


def test_undecided_under_injected_noise_skips_xfails_or_fails_as_configured(pytester):
    pytester.makepyfile(NOISY + """
def test_default():
    assert_faster(fast, slow, by=1.5, max_duration=0.8)

def test_skip():
    assert_faster(fast, slow, by=1.5, max_duration=0.8, undecided="skip")

def test_fail():
    assert_faster(fast, slow, by=1.5, max_duration=0.8, undecided="fail")
""")
    result = pytester.runpytest("--gd-undecided=xfail", "-rsxf")
    result.assert_outcomes(xfailed=1, skipped=1, failed=1)
    result.stdout.fnmatch_lines(["*fast vs slow: *needed at least 1.5x faster: undecided (the interval straddles it*"])


def test_undecided_policy_from_the_ini_file_and_bad_values(pytester):
    pytester.makeini("[pytest]\ngd_undecided = fail\n")
    pytester.makepyfile(NOISY + "\ndef test_it():\n    assert_faster(fast, slow, by=1.5, max_duration=0.5)\n")
    pytester.runpytest().assert_outcomes(failed=1)
    pytester.makeini("[pytest]\ngd_undecided = maybe\n")
    result = pytester.runpytest()
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*gd_undecided must be skip, xfail or fail, got 'maybe'*"])


def test_outside_pytest_undecided_raises_its_own_error(monkeypatch):
    import _gpudev_pytest

    monkeypatch.setattr(_gpudev_pytest, "undecided_policy", None)  # as outside pytest
    now = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])

    def takes_200us() -> None:
        now[0] += 2e-4

    with pytest.raises(UndecidedError, match="no interval with 1 rounds"):
        # a budget shorter than one call: one round, no interval, so no verdict
        assert_faster(takes_200us, takes_200us, by=1.5, max_duration=1e-4, n_warmup=0)


def test_compare_refuses_bad_arguments():
    with pytest.raises(TypeError, match="assert_faster: fast must be callable, got int"):
        compare(1, lambda: None)
    with pytest.raises(ValueError, match=r"assert_faster: by must be a speedup > 0.*got -1"):
        compare(lambda: None, lambda: None, by=-1)
    with pytest.raises(ValueError, match="assert_faster: max_duration must be a finite number"):
        compare(lambda: None, lambda: None, max_duration=float("inf"))
    with pytest.raises(ValueError, match="assert_faster: undecided must be 'skip', 'xfail' or 'fail', got 'pass'"):
        assert_faster(lambda: None, lambda: None, undecided="pass")


def test_the_plugin_leaves_a_projects_own_fixtures_alone(pytester):
    # only gd_-prefixed fixtures: a project's `device` or `benchmark` fixture is its own
    pytester.makeconftest("import pytest\n\n@pytest.fixture\ndef device():\n    return 'mine'\n")
    pytester.makepyfile("def test_it(device):\n    assert device == 'mine'\n")
    pytester.runpytest().assert_outcomes(passed=1)
    result = pytester.runpytest("--fixtures")
    fixtures = {line.split()[0] for line in result.stdout.lines if line and not line.startswith((" ", "-", "="))}
    ours = {f for f in fixtures if f.startswith("gd_")}
    assert ours == {"gd_device", "gd_benchmark"}


# ---------------------------------------------------------------------------------------------
# assert_syncs, assert_copies, assert_allclose
# ---------------------------------------------------------------------------------------------


def test_assert_syncs_counts_and_names_the_line(device):
    w = gd.randn(16, device=device)
    losses = gd.zeros(5, device=device)
    with assert_syncs(max=1):
        for step in range(5):
            losses[step] = (w * step).sum()
        losses.tolist()
    with pytest.raises(AssertionError, match=r"assert_syncs: 5 synchronizations, at most 0 allowed; by line: "
                                             r".*test_testing_plugin.py:\d+: item x5"):
        with assert_syncs(max=0):
            for step in range(5):
                (w * step).sum().item()
    with pytest.raises(ValueError, match="assert_syncs: max must be an int >= 0, got -1"):
        with assert_syncs(max=-1):
            pass


def test_assert_copies_by_direction(device):
    a = gd.ones(4, device=device)
    with assert_copies(max=1, direction="d2h"):
        a.tolist()
    with pytest.raises(AssertionError, match="assert_copies: 2 d2h copies, at most 1 allowed"):
        with assert_copies(max=1, direction="d2h"):
            a.tolist()
            a.sum().item()
    with assert_copies(max=0, direction="h2d") as tr:
        a * 2
    assert tr.count("op") == 1
    if device.type == "cuda":
        with pytest.raises(AssertionError, match="assert_copies: 1 h2d copies"):
            with assert_copies(max=0, direction="h2d"):
                gd.array(np.ones(3), device=device)
    with pytest.raises(ValueError, match="assert_copies: direction must be one of 'd2h', 'h2d', 'd2d', 'peer', "
                                         "'any', got 'up'"):
        with assert_copies(direction="up"):
            pass


def test_the_checks_on_events_recorded_elsewhere(device):
    # as an autograder receives them from another process: plain TraceEvents, no live trace
    w = gd.randn(8, device=device)
    with gd.trace() as tr:
        for _ in range(3):
            w.sum().item()
    events = [TraceEvent(*json.loads(json.dumps(e))) for e in tr.events]
    check_syncs(events, max=3)
    check_copies(tr, max=3, direction="d2h")
    check_syncs(events, max=0, device="cuda:7")  # none on that device
    with pytest.raises(AssertionError, match=r"assert_syncs: 3 synchronizations, at most 2 allowed; by line: "
                                             r".*test_testing_plugin.py:\d+: item x3"):
        check_syncs(events, max=2)
    with pytest.raises(AssertionError, match="assert_copies: 3 d2h copies, at most 1 allowed"):
        check_copies(events, max=1)
    with pytest.raises(ValueError, match="check_copies: direction must be one of 'd2h'"):
        check_copies(events, direction="up")
    with pytest.raises(ValueError, match="check_syncs: max must be an int >= 0, got 1.5"):
        check_syncs(events, max=1.5)


def test_assert_allclose_uses_the_documented_tolerances(device):
    x = gd.array(np.linspace(0, 1, 101), dtype=gd.float32, device=device)
    assert_allclose(gd.exp(x), np.exp(np.linspace(0, 1, 101)).astype(np.float32), kind="elementwise")
    rtol, _ = TOLERANCES["reduction"]["float32"]
    assert_allclose(gd.array([1.0], device=device), [1.0 + rtol / 2])
    with pytest.raises(AssertionError, match=r"float32 with gpudev's reduction tolerance \(rtol=0.0001"):
        assert_allclose(gd.array([1.0], device=device), [1.0 + 4 * rtol])
    with pytest.raises(AssertionError, match=r"assert_allclose: shapes differ: \(3,\)"):
        assert_allclose(gd.ones(3, device=device), np.ones((1, 3)))
    with pytest.raises(AssertionError):
        assert_allclose(gd.array([1, 2], device=device), [1, 3])  # integers are exact


@pytest.mark.parametrize("name", ["gpudev.strict", "gpudev.trace", "gpudev.testing", "gpudev.testing.structure",
                                  "gpudev.testing.numerics", "gpudev.testing.speed"])
def test_the_examples_in_the_docstrings_run(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# ---------------------------------------------------------------------------------------------
# gpudev.testing.assert_allclose: integers exactly
# ---------------------------------------------------------------------------------------------


def test_assert_allclose_compares_int64_exactly(device):
    with pytest.raises(AssertionError, match="Arrays are not equal"):
        assert_allclose(gd.asarray([2**62 + 1], device=device), np.array([2**62]))
    with pytest.raises(AssertionError):
        assert_allclose(gd.asarray([2**62 + 2], device=device), [2**62], atol=1)
    assert_allclose(gd.asarray([2**62 + 1, -2**63], device=device), np.array([2**62 + 1, -2**63]))
    assert_allclose(gd.asarray([2**62 + 1], device=device), [2**62], atol=1)
    with pytest.raises(ValueError, match="^assert_allclose: kind must be one of"):
        assert_allclose(gd.asarray([1], device=device), [1], kind="elemntwise")
