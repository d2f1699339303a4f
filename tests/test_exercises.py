"""The chapter's exercises (gpudev.exercises), their plots and `python -m gpudev exercises`.

Each exercise runs on the CPU with small sizes; the tests check the rows' documented fields,
that timings are positive and consistent, that the exercise's own checks hold, and that the
conclusion quotes the measured numbers. GPU variants run when a GPU is present.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import gpudev as gd
from gpudev import exercises as ex
from gpudev.exercises import ex1_matmul
from gpudev.exercises.ex2_params import same_predictions
from gpudev._format import format_seconds

from conftest import EMULATED, NUM_GPUS

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _reject_constant(name: str) -> None:
    raise ValueError(f"results.json holds {name}, which is not valid JSON")


def check_rows(res: ex.Result) -> None:
    """Every row has exactly the documented fields and sane, positive timings."""
    assert res.rows, f"exercise {res.number} produced no rows"
    for row in res.rows:
        assert set(row) == set(res.fields), f"row fields differ from the documented ones: {row}"
        assert row["seconds"] > 0 and row["min_s"] > 0
        assert row["min_s"] <= row["seconds"] <= row["max_s"]
        assert row["repeats"] == len(row["times"]) >= 1
        assert all(t > 0 for t in row["times"])
        assert row["std_s"] >= 0
        assert row["clock"] in ("gpu", "host", "host, unsynchronized")
    for key, _, _ in res.columns:
        assert key in res.fields, f"column {key!r} is not a documented field"
    json.dumps(res.to_dict(), allow_nan=False)


def _has_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


HAS_MATPLOTLIB = _has_matplotlib()


def check_plot(res: ex.Result, tmp_path) -> None:
    path = tmp_path / f"ex{res.number}.png"
    if not HAS_MATPLOTLIB:  # the measurements work without it; plotting says what is missing
        with pytest.raises(ImportError, match=r"plot: matplotlib is not installed.*gpudev\[plots\]"):
            res.plot(path)
        return
    fig = res.plot(path)
    assert fig.axes, "the figure has no axes"
    assert all(ax.get_title() or ax.get_xlabel() for ax in fig.axes)
    from gpudev import plots

    assert plots.label_overlaps(fig) == [], f"exercise {res.number}'s figure has texts that collide"
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 5000


# ---------------------------------------------------------------------------------------------
# exercise 1
# ---------------------------------------------------------------------------------------------


def test_matmul_vs_small_cpu(tmp_path):
    n = 192
    res = ex.matmul_vs_small(n=n, devices=["cpu"], repeats=3, bandwidth_elements=1 << 16, peak_n=256)
    check_rows(res)
    tasks = {(r["task"], r["timing"].split(" of ")[0]) for r in res.rows}
    assert tasks == {("setup", "first call"), ("peak sgemm", "best"), ("stream add", "best"),
                     ("matmul", "first call"), ("matmul", "synchronized"),
                     ("sum", "first call"), ("sum", "synchronized"), ("sum+item", "first call"),
                     ("sum+item", "synchronized"), ("add1", "first call"), ("add1", "synchronized"),
                     ("bandwidth", "synchronized")}
    mm = next(r for r in res.rows if r["task"] == "matmul" and r["timing"] == "synchronized")
    assert mm["flops"] == 2.0 * n**3 and mm["gbps"] is None  # a product is rated in GFLOP/s only
    assert mm["gflops"] == pytest.approx(mm["flops"] / mm["seconds"] / 1e9)
    assert all(r["repeats"] == 1 for r in res.rows if r["timing"] == "first call")
    tiny = next(r for r in res.rows if r["task"] == "sum" and r["timing"] == "synchronized")
    assert tiny["gflops"] is None and tiny["gbps"] > 0 and tiny["overhead_s"] > 0 and tiny["calls"] >= 1
    # the CPU has nothing to show for the unsynchronized timer: no such row; arithmetic instead
    assert not any(r["timing"] == "unsynchronized (wrong)" for r in res.rows)
    peak = res.meta["peaks"]["cpu"]
    sgemm = next(r for r in res.rows if r["task"] == "peak sgemm")
    assert peak["gflops"] == pytest.approx(sgemm["flops"] / sgemm["min_s"] / 1e9)
    assert sgemm["seconds"] == sgemm["min_s"]  # a roof is the best repeat
    memory = next(r for r in res.rows if r["task"] == "stream add" and "main memory" in r["label"])
    assert peak["gbps"] == pytest.approx(memory["bytes"] / memory["min_s"] / 1e9)
    assert [c["level"] for c in peak["caches"]] == [c["level"] for c in ex.peaks.cache_levels(gd.cpu())]
    roof = ex1_matmul.compute_roof(res.rows, "cpu")
    assert roof["gflops"] >= peak["gflops"]  # the best product of the run, the peak's included
    assert "125 TFLOP/s" in res.conclusion and f"{roof['gflops']:.3g} GFLOP/s cpu reached at best" in res.conclusion
    # the conclusion quotes this run's numbers, not canned text
    assert format_seconds(mm["seconds"]) in res.conclusion
    assert f"{mm['gflops']:.3g} GFLOP/s" in res.conclusion
    check_plot(res, tmp_path)


def test_matmul_vs_small_always_gets_a_warm_repeat():
    # a budget no product fits: the product shrinks to the smallest size, and its warm repeat
    # still runs (the text relies on a steady timing)
    res = ex.matmul_vs_small(n=1000, devices=["cpu"], repeats=2, bandwidth_elements=1 << 12, peak_n=64,
                             budget_s=1e-9)
    warm = [r for r in res.rows if r["task"] == "matmul" and r["timing"] == "synchronized"]
    # WARM_MIN warm repeats (fewer only when fewer were asked for), even past the budget
    assert len(warm) == 1 and warm[0]["repeats"] == min(2, ex1_matmul.WARM_MIN) and res.meta["n"] == 500
    assert any("the product was timed at 500x500, not 1000x1000" in n_ for n_ in res.notes)
    assert "the 500x500 product takes" in res.conclusion


def test_the_product_is_sized_so_its_warm_repeats_fit_the_budget():
    # 1 + WARM_MIN products of the chosen size fit the budget at the slowest device's peak
    for gflops, budget in ((200.0, 40.0), (100.0, 40.0), (20.0, 25.0), (1e4, 1.0)):
        n = ex1_matmul.product_size(10000, {"cpu": {"gflops": gflops}}, budget)
        assert n == 500 or (1 + ex1_matmul.WARM_MIN) * 2.0 * n**3 / (gflops * 1e9) <= budget
        assert n == 10000 or (1 + ex1_matmul.WARM_MIN) * 2.0 * (n + 500) ** 3 / (gflops * 1e9) > budget


@pytest.mark.gpu
def test_matmul_vs_small_gpu_shows_the_wrong_timing(cuda0):
    res = ex.matmul_vs_small(n=2048, devices=["cpu", cuda0], repeats=3, bandwidth_elements=1 << 22,
                             peak_n=1024)
    check_rows(res)
    right = next(r for r in res.rows if r["device"] == str(cuda0) and r["task"] == "matmul"
                 and r["timing"] == "synchronized")
    wrong = next(r for r in res.rows if r["timing"] == "unsynchronized (wrong)")
    # which clock each row read, not which was faster (no outcome on the clock)
    assert right["clock"] == "gpu" and wrong["clock"] == "host, unsynchronized"
    assert wrong["demonstration"] and not right["demonstration"]
    if cuda0.emulated:  # no rates: the launch lesson alone, said to be the emulation's
        assert "cuda:0 (emulated) is a GPU of the CPU emulation" in res.conclusion \
            and "a clock read right after queueing" in res.conclusion
        assert right["gflops"] is None and "FLOP/s that cuda:0" not in res.conclusion
    else:
        assert "seems to take" in res.conclusion and "TFLOP/s that cuda:0 reached at best" in res.conclusion


# ---------------------------------------------------------------------------------------------
# exercise 2
# ---------------------------------------------------------------------------------------------


def test_params_on_device_cpu(tmp_path):
    res = ex.params_on_device("cpu", steps=5, repeats=3)
    check_rows(res)
    # on the CPU, loading onto the device is loading onto the CPU: one check, said once
    assert len(res.checks) == 1 and res.ok, res.checks
    assert all(c["detail"] == "identical" for c in res.checks)
    assert all(r["copies"] == 0 for r in res.rows)  # everything already lives on the host
    assert res.meta["file_bytes"] > res.meta["parameter_bytes"] == 4 * (10 * 512 + 512 + 512 * 10 + 10)
    assert res.meta["loss_after_steps"] < res.meta["loss_first"]
    save = next(r for r in res.rows if r["action"].startswith("gd.save"))
    assert save["bytes"] == res.meta["file_bytes"]
    # on the CPU, loading onto the device is loading onto the CPU: one row, and .cpu() of host
    # memory copies nothing, so it has no bytes moved and no MB/s
    assert [r["action"] for r in res.rows].count("gd.load onto the CPU") == 1
    assert not any(r["action"] == "gd.load onto cpu" for r in res.rows)
    to_host = next(r for r in res.rows if r["action"].startswith("parameters to the host"))
    assert to_host["bytes"] is None and to_host["mbps"] is None
    assert f"{res.meta['file_bytes']:,}-byte" in res.conclusion
    check_plot(res, tmp_path)


@pytest.mark.gpu
def test_params_on_device_gpu(cuda0):
    res = ex.params_on_device(cuda0, steps=5, repeats=3)
    check_rows(res)
    assert res.ok, res.checks
    to_host = next(r for r in res.rows if r["action"].startswith("parameters to the host"))
    assert to_host["copies"] == 4  # two weights and two biases


def test_prediction_check_can_fail():
    want = np.ones((4, 10), dtype=np.float32)
    got = want.copy()
    got[2, 3] += 1e-3
    assert not same_predictions("x", got, want, exact=True)["passed"]
    assert not same_predictions("x", got * 2, want, exact=False)["passed"]
    rounded = want * np.float32(1 + 2e-6)  # a float32 rounding difference, as across devices
    assert not same_predictions("x", rounded, want, exact=True)["passed"]
    assert same_predictions("x", rounded, want, exact=False)["passed"]


def test_a_rounding_check_names_its_tolerance_as_a_value():
    """The detail of a check to float rounding quotes its rtol; the referee traces every numeral
    of a detail to a value, so the tolerance is kept in the check (else only a timing that
    happened to round to 1e-4 would make it trace)."""
    from gpudev.exercises.referee import _check_numerals
    want = np.ones((4, 10), dtype=np.float32)
    check = same_predictions("x", want * np.float32(1 + 2e-6), want, exact=False)
    assert "rtol 1e-4" in check["detail"] and check["rtol"] == 1e-4
    res = ex.Result(number=2, name="n", title="t", question="q", fields=[], columns=[], rows=[],
                    conclusion="", notes=[], checks=[check], meta={})
    assert _check_numerals(res, {}) == []
    del check["rtol"]
    assert [p.check for p in _check_numerals(res, {})] == ["numeral"]


# ---------------------------------------------------------------------------------------------
# exercise 3
# ---------------------------------------------------------------------------------------------


def test_norm_logging_cpu(tmp_path):
    n = 40
    res = ex.norm_logging(n=n, size=12, device="cpu", repeats=3)
    check_rows(res)
    assert [r["variant"] for r in res.rows] == ["a", "b", "c"]
    assert [r["syncs"] for r in res.rows] == [n, 1, 1]  # one per .item(), then one .tolist()
    # the CPU copies nothing to itself; the column counts its host reads, each a copy on a GPU
    assert [r["copies"] for r in res.rows] == [n, 1, 1]
    assert res.rows[0]["speedup"] == 1.0
    # the column is a ratio of the medians shown beside it, so it re-derives from them
    a, b = (np.array(r["times"]) for r in res.rows[:2])
    assert res.rows[1]["speedup"] == pytest.approx(float(np.median(a) / np.median(b)))
    assert len(a) == len(b) == 3
    assert res.ok and len(res.checks) == 2, res.checks
    # the logged norms are those of the products, computed independently with NumPy
    gd.manual_seed(0)
    xs = gd.randn(n, 12, 12).numpy()
    w = (gd.randn(12, 12) * (1.0 / math.sqrt(12))).numpy()
    want = np.linalg.norm(xs.astype(np.float64) @ w.astype(np.float64), axis=(1, 2))
    np.testing.assert_allclose(res.meta["first_norms"], want[:5], rtol=1e-5)
    assert f"{n} synchronizations" in res.conclusion
    check_plot(res, tmp_path)


@pytest.mark.gpu
def test_norm_logging_gpu_counts_copies(cuda0):
    res = ex.norm_logging(n=30, size=16, device=cuda0, repeats=2)
    assert res.ok, res.checks
    assert [r["copies"] for r in res.rows] == [30, 1, 1]
    assert [r["syncs"] for r in res.rows] == [30, 1, 1]


# ---------------------------------------------------------------------------------------------
# exercise 4
# ---------------------------------------------------------------------------------------------


def test_two_devices_cpu(tmp_path):
    res = ex.two_devices(n=96, devices=["cpu"], repeats=3)
    check_rows(res)
    assert res.skipped == "needs 2 GPUs, found 0"
    assert [r["scenario"] for r in res.rows] == [
        "two products", "host work alone (NumPy)", "both: queue the products, then host work"]
    both = res.rows[2]
    assert 0.0 <= both["overlap"] <= 1.0
    assert both["no_overlap_s"] == pytest.approx(res.rows[0]["seconds"] + res.rows[1]["seconds"])
    # said once, as the skip reason: not again in the conclusion or the notes
    assert "needs 2 GPUs" not in res.conclusion and not any("needs 2 GPUs" in n_ for n_ in res.notes)
    check_plot(res, tmp_path)


@pytest.mark.skipif(NUM_GPUS != 0, reason="checks the message of a machine without GPUs")
def test_two_devices_default_without_gpu_says_why():
    res = ex.two_devices(n={"cpu": 64}, repeats=2)
    assert res.skipped == "needs 2 GPUs, found 0"
    assert any("GPU rows skipped" in note for note in res.notes)
    assert {r["device"] for r in res.rows} == {"cpu"}


@pytest.mark.skipif(not EMULATED or NUM_GPUS < 2, reason="runs on two emulated GPUs (make test-gpu-emu)")
def test_two_devices_on_emulated_gpus_run_every_path_and_claim_nothing(tmp_path):
    res = ex.two_devices(n={"cpu": 64, "cuda": 128}, devices=["cpu", "cuda:0", "cuda:1"], repeats=3)
    assert res.skipped is None and {r["device"] for r in res.rows} >= {"cuda:0", "cuda:1", "cuda:0+cuda:1"}
    fake = [r for r in res.rows if r["device"].startswith("cuda")]
    assert all(r.get("overlap") is None and r.get("speedup") is None for r in fake)
    assert "no speedup" not in res.conclusion and "this report compares no times of theirs" in res.conclusion
    check_plot(res, tmp_path)


@pytest.mark.gpu
@pytest.mark.hardware("a GPU computes while the host works; an emulated one runs its queue only when waited for")
def test_two_devices_one_gpu_overlaps(cuda0):
    res = ex.two_devices(n={"cpu": 64, "cuda": 2048}, devices=[cuda0], repeats=3)
    check_rows(res)
    if NUM_GPUS == 1:
        assert res.skipped == "needs 2 GPUs, found 1"
    both = next(r for r in res.rows if r["scenario"].startswith("both"))
    assert both["overlap"] > 0.3  # queued GPU work runs while the host works


# ---------------------------------------------------------------------------------------------
# exercise 5
# ---------------------------------------------------------------------------------------------


def test_small_op_sweep_cpu(tmp_path):
    res = ex.small_op_sweep(sizes=(64, 4, 16), iters=50, devices=["cpu"], repeats=3)
    check_rows(res)
    assert [r["size"] for r in res.rows] == [4, 16, 64]  # sorted
    levels = ex.peaks.cache_levels(gd.cpu())
    for r in res.rows:
        assert r["calls"] == 50 and r["elements"] == r["size"] ** 2
        assert r["footprint"] == 4 * r["elements"] and r["bytes"] == 8 * r["elements"]
        assert r["level"] == ex.peaks.level_of(r["footprint"], levels)
        assert r["ns_per_element"] == pytest.approx(r["seconds"] / r["elements"] * 1e9)
    assert res.meta["crossovers"] == {}
    assert res.meta["caches"]["cpu"] == levels
    assert res.meta["break_even"]["cpu"]["t0_s"] == min(r["min_s"] for r in res.rows)  # the fastest op
    assert "no GPU to compare with" in res.conclusion or NUM_GPUS
    check_plot(res, tmp_path)


def test_small_op_sweep_sizes_its_batches():
    res = ex.small_op_sweep(sizes=(4, 512), devices=["cpu"], repeats=2)
    small, big = res.rows
    assert small["calls"] > 1  # a 4x4 op is timed in batches, as timeit would
    # the batch's size comes from its first repeat, which lasted at least a millisecond
    assert small["max_s"] * small["calls"] >= 1e-3 * (1 - 1e-9)


# ---------------------------------------------------------------------------------------------
# Result, settings and bad input
# ---------------------------------------------------------------------------------------------


def test_result_table_and_markdown():
    res = ex.small_op_sweep(sizes=(4, 8), iters=10, devices="cpu", repeats=2)
    assert res.columns[0][0] == "device"
    text = res.table()
    assert text.splitlines()[0].split()[:3] == ["device", "size", "elements"]
    assert len(text.splitlines()) == 2 + len(res.rows)
    md = res.table(markdown=True).splitlines()
    assert all(line.startswith("|") for line in md) and len(md) == 2 + len(res.rows)
    assert res.conclusion in str(res) and res.conclusion in res._repr_markdown_()


def test_settings_quick_from_environment(monkeypatch):
    monkeypatch.setenv("GPUDEV_QUICK", "1")
    quick = ex.settings()
    monkeypatch.setenv("GPUDEV_QUICK", "0")
    full = ex.settings()
    assert quick == ex.settings(quick=True) and full == ex.settings(quick=False)
    assert full[1]["n"] == 10000 and quick[1]["n"] < full[1]["n"]
    assert sorted(quick) == sorted(full) == sorted(ex.EXERCISES)


@pytest.mark.parametrize("call, error, words", [
    (lambda: ex.matmul_vs_small(n=0), ValueError, "matmul_vs_small: n must be an int >= 1, got 0"),
    (lambda: ex.small_op_sweep(sizes=()), ValueError, "small_op_sweep: sizes is empty"),
    (lambda: ex.small_op_sweep(sizes=(4, -1)), ValueError, "each size must be an int >= 1, got -1"),
    (lambda: ex.norm_logging(n=2.5), ValueError, "norm_logging: n must be an int"),
    (lambda: ex.two_devices(n={"tpu": 8}), ValueError, "two_devices: n has keys ['tpu']"),
    (lambda: ex.norm_logging(device="gpu:0"), ValueError, "norm_logging: bad device 'gpu:0'"),
])
def test_bad_input_names_the_exercise(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)


@pytest.mark.skipif(NUM_GPUS > 7, reason="needs cuda:7 to be missing")
def test_unavailable_gpu():
    with pytest.raises(gd.DeviceUnavailableError, match="params_on_device: cuda:7 is not available"):
        ex.params_on_device("cuda:7")
    with pytest.raises(gd.DeviceUnavailableError, match="small_op_sweep: none of the devices"):
        ex.small_op_sweep(sizes=(4,), devices=["cuda:7"])
    res = ex.small_op_sweep(sizes=(4,), iters=5, devices=["cpu", "cuda:7"], repeats=1)
    assert {r["device"] for r in res.rows} == {"cpu"}
    assert any(n.startswith("cuda:7 skipped") for n in res.notes)


# ---------------------------------------------------------------------------------------------
# the command line
# ---------------------------------------------------------------------------------------------


def test_cli_quick_writes_json_report_and_plots(tmp_path, capsys):
    out = tmp_path / "res"
    assert ex.run_cli(["--quick", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    data = json.loads((out / "results.json").read_text(), parse_constant=_reject_constant)
    assert [r["number"] for r in data["results"]] == sorted(ex.EXERCISES) and data["errors"] == {}
    assert data["quick"] is True and data["machine"]["build"]["version"] == gd.__version__
    for res in data["results"]:
        assert res["rows"] and all(len(row["times"]) == row["repeats"] for row in res["rows"])
        assert res["conclusion"] in printed
        assert f"Exercise {res['number']}: {res['title']}" in printed
    report = (out / "report.md").read_text()
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert len(pngs) == (len(ex.EXERCISES) + 1 if HAS_MATPLOTLIB else 0)  # one per exercise and the roofline
    for name in pngs:
        assert (out / name).read_bytes().startswith(PNG_MAGIC)
        assert f"]({name})" in report
    for k in ex.EXERCISES:
        assert f"## Exercise {k}:" in report
    assert "## Machine" in report
    if NUM_GPUS == 0:  # every GPU part says it was skipped, and why
        assert printed.count("note: GPU rows skipped: this machine has no usable GPU") == 6  # 1, 4, 5, 6, 7, 8
        assert printed.count("note: ran on the CPU: this machine has no usable GPU") == 2
        assert "skipped: needs 2 GPUs, found 0" in printed


def test_cli_through_python_m(tmp_path):
    env = {**os.environ, "GPUDEV_QUICK": "1"}
    proc = subprocess.run([sys.executable, "-m", "gpudev", "exercises", "--only", "5", "--device", "cpu",
                           "--out", str(tmp_path)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "Exercise 5: b += b" in proc.stdout and "exercise 1" not in proc.stdout.lower()
    data = json.loads((tmp_path / "results.json").read_text(), parse_constant=_reject_constant)
    assert data["quick"] is True and [r["number"] for r in data["results"]] == [5]
    if HAS_MATPLOTLIB:
        assert (tmp_path / "exercise5_small_op_sweep.png").stat().st_size > 0
    else:
        assert "note: no plots: matplotlib is not installed" in proc.stderr
    assert not (tmp_path / "roofline.png").exists()  # no peaks without exercise 1


@pytest.mark.parametrize("argv, words", [
    (["--only", "9"], f"--only '9': exercises are numbered 1 to {max(ex.EXERCISES)}"),
    (["--only", "a,b"], "expected exercise numbers separated by commas"),
    (["--device", "cuda:63"], "--device cuda:63: cuda:63 is not available"),
    (["--device", "tpu"], "--device 'tpu'"),
])
def test_cli_bad_arguments(argv, words, capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        ex.run_cli(argv + ["--out", str(tmp_path)])
    assert info.value.code == 2
    assert words in capsys.readouterr().err


def test_run_picks_exercises_and_devices():
    (res,) = ex.run(only=[5], devices=[gd.cpu()], quick=True)
    assert res.number == 5 and {r["device"] for r in res.rows} == {"cpu"}
    assert res.meta["sizes"] == list(ex.settings(quick=True)[5]["sizes"])
    with pytest.raises(ValueError, match=r"run: no exercise \[9\]"):
        ex.run(only=[9])


def test_the_report_names_the_load_its_figures_were_measured_under():
    from gpudev.exercises.report import machine, machine_text
    here = machine()
    assert here["load"]["start"] is None or here["load"]["start"] >= 0
    here["load"] = {"start": 1.5, "end": 2.25}
    assert "- load average (1 min): 1.50 when the run began, 2.25 when it ended" in machine_text(here)
    del here["load"]  # a results.json written before the report named the load
    assert "load average" not in machine_text(here)
