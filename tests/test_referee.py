"""The referee: it passes on a real --quick run, and it catches each kind of inconsistency
injected into a copy of one (a retyped number, a bare number, a point above its roof, a roof
of another workload, a missing row, an interval of another method or level, a claim whose
interval includes 1, a speed claim about an emulated GPU). Also gpudev.stats and the trust
signals of gd.benchmark()."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import gpudev as gd
from gpudev import stats
from gpudev.exercises import ex1_matmul, referee
from gpudev.exercises.cli import run_cli
from gpudev.exercises.result import Result


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory) -> Path:
    """One real `exercises --quick` run on the CPU (exercises 1, 3 and 5: the roofline's)."""
    out = tmp_path_factory.mktemp("quick")
    assert run_cli(["--quick", "--only", "1,3,5", "--device", "cpu", "--out", str(out)]) == 0
    return out


def copy_of(run: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(run, dst)
    return dst


def edit_json(folder: Path, change) -> None:
    path = folder / "results.json"
    payload = json.loads(path.read_text())
    change(payload)
    path.write_text(json.dumps(payload))


def checks_of(folder: Path) -> list[str]:
    return [p.check for p in referee.referee(str(folder))]


def test_a_real_quick_run_passes(quick_run):
    assert referee.referee(str(quick_run)) == []
    done = subprocess.run([sys.executable, "-m", "gpudev", "referee", str(quick_run)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "agrees with its tables" in done.stdout


def test_a_run_on_the_default_devices_passes(tmp_path):
    """As `make demo` runs: the default devices, so on a machine without a GPU the notes say
    why (and quote the build's CUDA facts)."""
    assert run_cli(["--quick", "--only", "3", "--out", str(tmp_path)]) == 0
    assert referee.referee(str(tmp_path)) == []


def test_every_numeral_of_the_report_is_seen(quick_run):
    text = (quick_run / "report.md").read_text()
    found = referee.numerals(text)
    assert len(found) > 100
    assert ("12.3 ms", 0.0123, pytest.approx(0.00005)) == referee.numerals("took 12.3 ms")[0]
    assert [t for t, _, _ in referee.numerals("1,318x the 94.8 GFLOP/s, 43%")] == ["1,318x", "94.8 GFLOP/s", "43%"]


def test_a_retyped_number_fails(quick_run, tmp_path):
    run = copy_of(quick_run, tmp_path)
    report = (run / "report.md").read_text()
    res = json.loads((run / "results.json").read_text())["results"][0]
    mm = next(r for r in res["rows"] if r["task"] == "matmul" and r["timing"] == "synchronized")
    right = f"{mm['gflops']:.3g} GFLOP/s"
    assert right in report
    (run / "report.md").write_text(report.replace(right, f"{mm['gflops'] * 1.5:.3g} GFLOP/s", 1))
    problems = referee.referee(str(run))
    assert [p.check for p in problems] == ["re-derivation"]
    assert f"'{mm['gflops'] * 1.5:.3g} GFLOP/s'" in problems[0].what


def test_a_bare_number_fails(quick_run, tmp_path):
    run = copy_of(quick_run, tmp_path)
    with open(run / "report.md", "a") as f:
        f.write("\nThe product ran 1,318x faster than the peak.\n")
    problems = referee.referee(str(run))
    assert problems and all(p.check == "re-derivation" for p in problems)
    assert any("'1,318x'" in p.what for p in problems)


def test_a_derived_cell_that_disagrees_with_its_row_fails(quick_run, tmp_path):
    run = copy_of(quick_run, tmp_path)

    def median_of_rounds(payload):  # exercise 3's old speedup column: not the medians beside it
        ex3 = next(r for r in payload["results"] if r["number"] == 3)
        a, b = (np.array(r["times"]) for r in ex3["rows"][:2])
        ex3["rows"][1]["speedup"] = float(np.median(a / b)) * 1.2

    edit_json(run, median_of_rounds)
    checks = checks_of(run)
    assert "derived cell" in checks


def test_a_number_in_a_stored_note_must_trace(quick_run, tmp_path):
    run = copy_of(quick_run, tmp_path)

    # numerals with digits enough that no measured figure of the run rounds to them by chance
    # (31.4 s once traced to a figure of the run itself, with PyTorch installed)
    def add_note(payload):
        payload["results"][0]["notes"].append("the product was timed at 7777x7777 for 31.4159 s")

    edit_json(run, add_note)
    problems = [p for p in referee.referee(str(run)) if p.check == "numeral"]
    assert {p.what.split("'")[1] for p in problems} >= {"7777", "31.4159 s"}


def test_a_note_may_quote_the_cuda_version_the_build_needs(quick_run, tmp_path):
    """The no-GPU note quotes the build's CUDA version (`gd.build_info()['cuda']['version']`):
    it traces to that fact of the run; another version does not, nor does the reason's own
    prose vouch for itself."""
    run = copy_of(quick_run, tmp_path)

    def add_notes(payload):
        cuda = payload["machine"]["build"]["cuda"]
        cuda["version"] = "12.8"
        cuda["reason"] = "no NVIDIA driver was found; this build needs one for CUDA 12.8 or 11.7"
        notes = payload["results"][0]["notes"]
        notes.append("GPU rows skipped: no NVIDIA driver was found; this build needs one for CUDA 12.8 or newer")
        notes.append("GPU rows skipped: this build needs CUDA 11.7")

    edit_json(run, add_notes)
    problems = [p for p in referee.referee(str(run)) if p.check == "numeral"]
    assert [p.what.split("'")[1] for p in problems] == ["11.7"]


def test_a_point_above_its_roof_fails(quick_run, tmp_path):
    run = copy_of(quick_run, tmp_path)

    def lift(payload):
        point = payload["plot_data"]["roofline"]["points"][0]
        point["gflops"] *= 100

    edit_json(run, lift)
    checks = checks_of(run)
    assert "under the roof" in checks and "plot data" in checks


def test_a_roof_of_another_workload_fails(quick_run, tmp_path):
    run = copy_of(quick_run, tmp_path)

    def rename(payload):
        for roof in payload["plot_data"]["roofline"]["roofs"].values():
            for b in roof["bandwidths"]:
                b["key"][0] = "x += y"  # the add of two arrays, not the points' b += b

    edit_json(run, rename)
    assert "same workload" in checks_of(run)


def test_a_missing_row_fails(quick_run, tmp_path):
    run = copy_of(quick_run, tmp_path)

    def drop_warm(payload):
        rows = payload["results"][0]["rows"]
        payload["results"][0]["rows"] = [r for r in rows if not (r["task"] == "matmul" and
                                                                 r["timing"] == "synchronized")]

    edit_json(run, drop_warm)
    with pytest.raises(TypeError):  # the conclusion cannot even be written without the row
        referee.referee(str(run))
    res = Result(**json.loads((run / "results.json").read_text())["results"][0])
    assert referee._required(res) == ["the synchronized matmul row on cpu"]


def test_an_interval_of_another_level_or_method_fails():
    assert [p.check for p in referee._check_claims("(90% interval 1.2x to 1.5x)", "x", [])] == ["interval method"]
    few = stats.Ratio(a=1.0, b=2.0, ratio=0.5, lo=0.4, hi=0.6, paired=False, n_a=3, n_b=3)
    other = stats.Ratio(a=1.0, b=2.0, ratio=0.5, lo=0.4, hi=0.6, paired=False, n_a=9, n_b=9, method="t-test")
    problems = referee._check_intervals([few, other], "exercise 9")
    assert ["fewer than 5" in p.what for p in problems] == [True, False]
    assert "t-test" in problems[1].what


def test_a_claim_whose_interval_includes_1_fails():
    ok = "the batch is 2x faster than the loop (ratio of medians, 1 s vs 2 s; 95% interval 1.9x to 2.1x)"
    assert referee._check_claims(ok, "x", []) == []
    bad = "the batch is 1.2x faster than the loop (ratio of medians, 1 s vs 1.2 s; 95% interval 0.9x to 1.6x)"
    assert [p.check for p in referee._check_claims(bad, "x", [])] == ["claim"]
    bare = "the batch is 1.2x faster than the loop (ratio of medians, 1 s vs 1.2 s)"
    assert [p.check for p in referee._check_claims(bare, "x", [])] == ["claim"]


def test_the_referee_fails_a_quoted_interval_that_is_not_in_the_tables(quick_run, tmp_path):
    run = copy_of(quick_run, tmp_path)
    report = (run / "report.md").read_text()
    assert "95% interval" in report
    (run / "report.md").write_text(report.replace("95% interval", "90% interval", 1))
    assert set(checks_of(run)) == {"re-derivation"}


# ---------------------------------------------------------------------------------------------
# emulated GPUs: no roofs, no points, no speed claims (synthetic results)
# ---------------------------------------------------------------------------------------------


def _emulated_ex1(tmp_path: Path, claim: str | None) -> Path:
    """A results folder whose exercise 1 ran on the CPU and an emulated cuda:0."""
    sys.path.insert(0, str(Path(__file__).parent))  # the tests folder, wherever pytest runs from
    from test_conclusions import _ex1_rows

    peak = ex1_matmul.row(gd.cpu(), "peak sgemm", "peak: matmul 2048x2048", "best of 5",
                          {"seconds": 0.1, "min_s": 0.1, "max_s": 0.11, "times": [0.1, 0.11], "repeats": 2},
                          2.0 * 2048**3, 12.0 * 2048**2, 12.0 * 2048**2)
    rows = [peak] + _ex1_rows("cpu", 1.0) + [r for r in _ex1_rows("cuda:0", 1.0)
                                             if r["timing"] != "unsynchronized (wrong)"]
    for r in rows:  # an emulated GPU's rows carry no rates
        if r["device"] == "cuda:0":
            r["gflops"] = r["gbps"] = None
    devices = {"cpu": {"emulated": False}, "cuda:0": {"emulated": True}}
    meta = {"n": 4096, "small": 4, "devices": devices, "peaks": {}}
    text = ex1_matmul.conclusion(rows, [gd.cpu(), gd.Device("cuda:0")], 4096, 4, emulated={"cuda:0"})
    assert "cuda:0 (emulated) is a GPU of the CPU emulation" in text and "faster" not in text
    res = Result(number=1, name="matmul_vs_small", title="t", question="q", fields=ex1_matmul.FIELDS,
                 columns=ex1_matmul.COLUMNS, rows=rows, conclusion=text + (claim or ""), meta=meta)
    from gpudev.exercises.report import report_text
    from gpudev.exercises.roofline_chart import plot_data

    payload = {"machine": gd.exercises.report.machine(), "quick": True, "seconds": 1.0, "run_at": "now",
               "results": [res.to_dict()], "errors": {}, "plots": {}, "extra_plots": {},
               "plot_data": {"roofline": json.loads(json.dumps(plot_data([res])))}}
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "results.json").write_text(json.dumps(payload))
    (tmp_path / "report.md").write_text(report_text([res], {}, {}, payload["machine"], True, {}, 1.0, "now"))
    return tmp_path


def test_an_emulated_gpu_gets_no_roofs_and_no_claims(tmp_path):
    clean = _emulated_ex1(tmp_path / "clean", None)
    data = json.loads((clean / "results.json").read_text())["plot_data"]["roofline"]
    assert "cuda:0" not in data["roofs"] and all(p["device"] == "cpu" for p in data["points"])
    assert referee.referee(str(clean)) == []
    claimed = _emulated_ex1(tmp_path / "claimed", " Here cuda:0 is 3x faster than the CPU.")
    checks = checks_of(claimed)
    assert "emulated" in checks and "re-derivation" in checks


def test_a_demonstration_row_is_no_point_and_no_roof():
    rows = [ex1_matmul.row(gd.Device("cuda:0"), "matmul", "matmul 4096x4096", "unsynchronized (wrong)",
                           {"seconds": 1e-5, "min_s": 1e-5, "max_s": 1e-5, "times": [1e-5], "repeats": 1},
                           2.0 * 4096**3, 12.0 * 4096**2, 12.0 * 4096**2, demonstration=True)]
    res = Result(number=1, name="m", title="t", question="q", fields=ex1_matmul.FIELDS, columns=ex1_matmul.COLUMNS,
                 rows=rows, conclusion="c", meta={"devices": {"cuda:0": {}}})
    from gpudev.exercises import roofline_chart

    assert roofline_chart.points([res]) == [] and roofline_chart.roofs([res]) == {}
    assert ex1_matmul.compute_roof(rows, "cuda:0") is None


# ---------------------------------------------------------------------------------------------
# gpudev.stats and the trust signals of benchmark()
# ---------------------------------------------------------------------------------------------


def test_intervals_need_enough_repeats_and_say_how_they_are_formed():
    few = stats.ratio([1.0, 1.1, 0.9, 1.0], [2.0, 2.1, 1.9, 2.0])
    assert not few.known and not few.differs and few.n_a == 4
    enough = stats.ratio([1.0, 1.1, 0.9, 1.0, 1.0], [2.0, 2.1, 1.9, 2.0, 2.0], paired=True)
    assert enough.known and enough.differs and enough.how == "median of paired ratios"
    assert enough.method == stats.METHOD
    with pytest.raises(ValueError, match="ratio: each sample needs at least one repeat, got 0 and 2"):
        stats.ratio([], [1.0, 2.0])


def test_one_outlier_does_not_make_a_thirty_fold_interval():
    # the shape that gave "13.5x (13x to 373x)": 7 repeats, one of them 10x slow
    slow = [13.5, 13.4, 13.6, 135.0, 13.5, 13.3, 13.7]
    r = stats.ratio(slow, [1.0] * 7)
    assert r.known and r.hi / r.lo < 1.2


@pytest.fixture
def taking(monkeypatch):
    """`taking(s)`: a function that lasts `s` seconds on a clock that moves only when such
    functions run (gd.benchmark's time.perf_counter), so no outcome depends on the machine."""
    now = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])

    def make(seconds: float):
        def call() -> None:
            now[0] += seconds
        return call

    return make


def test_the_noise_stop_says_what_ended_the_repeats(taking):
    quiet = gd.benchmark(taking(1e-6), n_warmup=0, n_repeat=1000, max_duration=30.0, target_spread=0.5, n_calls=1000)
    assert quiet.stop_reason == "spread 0.0% below the 50.0% target" and quiet.n == stats.MIN_REPEATS
    counted = gd.benchmark(taking(1e-6), n_warmup=0, n_repeat=3)
    assert counted.stop_reason == "n_repeat=3 repeats reached"
    timed_out = gd.benchmark(taking(1e-3), n_warmup=0, n_repeat=None, max_duration=0.01)
    assert timed_out.stop_reason == "max_duration=0.01 s spent"
    for bad in (0, 1.5, True, "2%"):
        with pytest.raises(ValueError, match="benchmark: target_spread must be a fraction between 0 and 1"):
            gd.benchmark(lambda: None, target_spread=bad)


def test_a_tiny_call_is_marked_launch_dominated(taking):
    r = gd.benchmark(taking(stats.LAUNCH_DOMINATED_S / 8), n_repeat=5)
    assert r.median < stats.LAUNCH_DOMINATED_S and r.notes and r.notes[0].startswith("launch-dominated")
    assert "note: launch-dominated" in str(r)
    big = gd.benchmark(taking(stats.LAUNCH_DOMINATED_S * 8), n_repeat=3)
    assert big.median > stats.LAUNCH_DOMINATED_S and big.notes == []


def test_faster_than_the_device_names_the_launch():
    # the book's 0.016 s for a 10000x10000 product, against a measured 200 GFLOP/s
    said = stats.faster_than_device(0.016, flops=2e12, roof_gflops=200.0)
    assert said is not None and "you timed the launch, not the work" in said and "625x" in said
    assert stats.faster_than_device(10.0, flops=2e12, roof_gflops=200.0) is None
    assert "GB/s" in stats.faster_than_device(1e-6, nbytes=1e6, roof_gbps=20.0)


def test_relative_spread_ignores_one_descheduled_repeat():
    assert stats.relative_spread([1.0] * 6 + [50.0]) == 0.0
    assert stats.relative_spread([1.0]) is None
    assert np.isclose(stats.relative_spread([0.9, 1.0, 1.1]), 0.14826)
