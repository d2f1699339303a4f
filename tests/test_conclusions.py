"""The exercises' conclusions follow from their numbers: each conclusion writer is fed
synthetic measurements (noisy equal pairs, clear wins, cache-resident small sizes, points
near a roof, GPU rows this machine cannot produce) and its words and numbers are checked.
Nothing here is timed, so nothing depends on how busy the machine is.
"""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

import gpudev as gd
from gpudev import exercises as ex
from gpudev.exercises import compare, referee, ex1_matmul, ex3_norm, ex4_two_devices, ex5_sweep, measure, roofline_chart

from conftest import EMULATED
from test_exercises import check_plot

NOISY_A = [0.175, 0.180, 0.810, 0.170, 0.172]  # one descheduled repeat, 4.6x the median
NOISY_B = [0.168, 0.176, 0.171, 0.590, 0.174]


def timed(times: list[float], clock: str = "host", calls: int = 1) -> dict:
    return measure.stats(times, clock, calls=calls, overhead=2e-8)


def spread(seconds: float, n: int = 5, rel: float = 0.02) -> list[float]:
    """`n` repeats within +-rel of `seconds`, deterministic."""
    return list(seconds * (1 + rel * np.linspace(-1, 1, n)))


# ---------------------------------------------------------------------------------------------
# the statistics
# ---------------------------------------------------------------------------------------------


def test_compare_module_examples_hold():
    assert doctest.testmod(compare, optionflags=doctest.ELLIPSIS).failed == 0


def test_noisy_equal_pairs_are_no_measurable_difference():
    for paired in (False, True):
        text = compare.compare("variant b", NOISY_B, "variant a", NOISY_A, paired=paired)
        assert "no measurable difference" in text and "faster" not in text
        assert "includes 1" in text
    r = compare.ratio(NOISY_A, NOISY_B)
    assert r.known and not r.differs and r.lo < 1 < r.hi


def test_clear_wins_give_the_ratio_and_its_interval():
    fast, slow = spread(0.010), spread(0.032)
    text = compare.compare("the GPU", fast, "the CPU", slow)
    r = compare.ratio(slow, fast)
    assert r.differs and r.ratio == pytest.approx(3.2)
    assert text.startswith("the GPU is 3.2x faster than the CPU (ratio of medians, 10 ms vs 32 ms; 95% interval ")
    lo, hi = (float(x.rstrip("x)")) for x in text.split("interval ")[1].split(" to "))
    assert lo <= 3.2 <= hi and hi / lo < 1.2
    # the same words with the names swapped
    assert compare.compare("the CPU", slow, "the GPU", fast).startswith("the GPU is 3.2x faster than the CPU")


@pytest.mark.parametrize("a_first", [True, False], ids=["faster-named-first", "faster-named-second"])
def test_a_win_whose_interval_just_excludes_1_never_prints_a_bound_of_1x(monkeypatch, a_first):
    # slow / fast from 1.0004 to 1.39: a win, for the thing named first or second
    win = compare.Ratio(1.3, 1.0, 1.26, 1.0004, 1.39, True, 20, 20)  # of variant b / variant c
    monkeypatch.setattr(compare, "ratio", lambda a, b, paired=False: win.inverse() if a_first else win)
    text = compare.compare("variant b", [1.0] * 20, "variant c", [1.3] * 20, paired=True)
    fast, slow = ("variant b", "variant c") if a_first else ("variant c", "variant b")
    assert f"{fast} is 1.26x faster than {slow}" in text, text
    assert "1x to" not in text and "to 1x" not in text, text
    assert referee._check_claims(text, "x", []) == [], text


def test_the_interval_is_reproducible_and_pairing_cancels_a_shared_drift():
    assert compare.ratio(NOISY_A, NOISY_B) == compare.ratio(NOISY_A, NOISY_B)  # fixed seed
    # the load doubles half-way: A is 10% slower than B in every round, which only the pairs show
    load = np.array([1, 1, 1, 2, 2, 2.0])
    a, b = list(1.1 * load), list(load)
    assert compare.ratio(a, b, paired=True).differs
    assert compare.ratio(a, b, paired=True).ratio == pytest.approx(1.1)
    assert not compare.ratio(a, b, paired=False).differs
    with pytest.raises(ValueError, match="ratio: paired samples need as many repeats each, got 2 and 3"):
        compare.ratio([1, 2], [1, 2, 3], paired=True)


def test_a_single_repeat_gives_no_verdict():
    text = compare.compare("a", [1.0], "b", spread(2.0))
    assert "too few for an interval, so no verdict" in text and "faster" not in text
    assert not compare.ratio([1.0], [2.0, 2.1]).known


def test_noisy_repeats_are_flagged_with_their_figures():
    assert compare.noisy(NOISY_A) == pytest.approx(0.810 / 0.175)
    assert compare.noisy(spread(1.0)) is None
    row = {"variant": "a", "label": ".item() every step", "device": "cpu", **timed(NOISY_A)}
    res = ex.Result(number=3, name="norm_logging", title="t", question="q", fields=ex3_norm.FIELDS,
                    columns=ex3_norm.COLUMNS, rows=[row], conclusion="c")
    (note,) = [n for n in res.notes if n.startswith("noisy repeats")]
    assert "a .item() every step (slowest 810 ms, 4.6x the median 175 ms)" in note
    assert note in str(res) and note in res._repr_markdown_()


# ---------------------------------------------------------------------------------------------
# exercise 3: noisy equal variants, and a clear win
# ---------------------------------------------------------------------------------------------


def _ex3_rows(a: list[float], b: list[float], c: list[float]) -> list[dict]:
    rows = []
    for key, times, syncs, ops in (("a", a, 1000, 2000), ("b", b, 1, 3001), ("c", c, 1, 2)):
        rows.append({"variant": key, "label": key, "device": "cpu", **timed(times), "syncs": syncs,
                     "copies": 0, "ops": ops, "per_step_s": float(np.median(times)) / 1000})
    return rows


def test_ex3_noise_is_not_reported_as_a_speedup():
    text = ex3_norm.conclusion(_ex3_rows(NOISY_A, NOISY_B, spread(0.150)), gd.cpu(), 1000, 100)
    assert "variant b and variant a show no measurable difference" in text
    assert "this run could not tell the two loops apart from the noise" in text
    assert "7.88x" not in text and "b is" not in text


def test_ex3_clear_wins_are_reported_with_their_interval():
    text = ex3_norm.conclusion(_ex3_rows(spread(0.300), spread(0.100), spread(0.020)), gd.cpu(), 1000, 100)
    assert ("variant b is 3x faster than variant a (median of paired ratios, 100 ms vs 300 ms; 95% interval"
            in text)
    assert "variant c is 5x faster than variant b" in text and "Batching wins here" in text
    assert "Each of a's 999 extra synchronizations cost 200 us" in text
    cheap = ex3_norm.conclusion(_ex3_rows(spread(0.110), spread(0.100), spread(0.020)), gd.cpu(), 1000, 100)
    assert "the 10 us per step between a and b is the cost of reading one value back" in cheap


# ---------------------------------------------------------------------------------------------
# exercise 5: cache-resident small sizes, the break-even and the model's residuals
# ---------------------------------------------------------------------------------------------

CACHES = [{"level": "L1d", "bytes": 32 * 2**10}, {"level": "L2", "bytes": 512 * 2**10},
          {"level": "L3", "bytes": 32 * 2**20}]


def _sweep_rows(device: str, per_op: dict[int, float]) -> list[dict]:
    """Rows whose fastest repeat is `per_op` (the others up to 4% slower)."""
    rows = []
    for s, t in per_op.items():
        e = s * s
        rows.append({"device": device, "size": s, "elements": e, "footprint": 4.0 * e,
                     "level": ex.peaks.level_of(4.0 * e, CACHES), **timed([t * (1 + 0.01 * k) for k in range(5)], calls=100),
                     "flops": float(e), "bytes": 8.0 * e, "gbps": 8 * e / t / 1e9, "ns_per_element": t / e * 1e9,
                     "workload": "b += b"})
    return rows


def _cached_then_memory(s: int) -> float:
    """29 ns + 8 bytes per element at 200 GB/s in cache, 20 GB/s beyond 512 KiB."""
    e = s * s
    return 29e-9 + 8 * e / (200e9 if 4 * e <= 512 * 2**10 else 20e9)


def test_break_even_comes_from_the_measured_points():
    # the figures of a run whose model line sat 10x above its points: 29 ns at 4x4, 60 ns at 40x40
    rows = _sweep_rows("cpu", {4: 29e-9, 40: 60e-9, 400: 20e-6, 4000: 13e-3})
    even = ex5_sweep.break_even(rows)
    assert even["status"] == "found" and even["between"] == [16, 1600]
    assert 1200 < even["elements"] < 1600  # near 1,500 elements, not the 86 of a model read off the ends
    text = ex5_sweep.conclusion(rows, [gd.cpu()], {"cpu": ex5_sweep.fit_cost(rows, CACHES)}, {}, {"cpu": even})
    assert f"at about {even['elements']:,.0f} elements" in text
    assert "fastest 29 ns at 16 and 60 ns at 1,600" in text
    flat = _sweep_rows("cpu", {4: 29e-9, 8: 31e-9, 16: 33e-9})
    assert ex5_sweep.break_even(flat)["status"] == "not reached"


def test_the_model_passes_through_the_cache_resident_points():
    sizes = (4, 8, 16, 32, 64, 128, 256, 512, 1024)
    rows = _sweep_rows("cpu", {s: _cached_then_memory(s) for s in sizes})
    fit = ex5_sweep.fit_cost(rows, CACHES)
    assert fit["fitted_on"] == "the sizes that fit in L2 on one thread" and fit["drawn"]
    assert fit["fitted_elements"] == [s * s for s in sizes if 4 * s * s <= 512 * 2**10]
    assert fit["t0_s"] == pytest.approx(29e-9, rel=1e-6) and fit["bandwidth_gbps"] == pytest.approx(200, rel=1e-6)
    assert all(abs(fit["residuals"][e]) < 1e-6 for e in fit["fitted_elements"])
    assert fit["residuals"][1024 * 1024] > 5  # main memory is ten times slower than the model's cache
    text = ex5_sweep._model_text(rows, fit)
    assert "t0 = 29 ns and 200 GB/s, with residuals of +0% on those 7 sizes." in text
    assert "The larger sizes sit at 9.98x to 9.99x the model: their data no longer fits in that cache" in text


def test_a_jump_the_data_cannot_explain_is_named():
    # 4x the elements, 7,000x the time: a stalled thread, not a slower memory
    rows = _sweep_rows("cpu", {64: 250e-9, 128: 1.1e-6, 256: 7.7e-3, 512: 9e-3})
    text = ex5_sweep._jumps_text(rows)
    assert text.startswith("From 128x128 to 256x256 the fastest repeat grew 7,000x for 4x the elements")
    assert ex5_sweep._jumps_text(_sweep_rows("cpu", {s: _cached_then_memory(s) for s in (64, 256, 1024)})) == ""


def test_ex3_a_costly_synchronization_on_the_cpu_is_named():
    text = ex3_norm.conclusion(_ex3_rows(spread(13.7), spread(0.625), spread(0.354)), gd.cpu(), 1000, 100)
    assert "Each of a's 999 extra synchronizations cost 13.1 ms: far more than reading one value" in text
    assert "waits for nothing" not in text


def test_a_model_that_misses_its_points_is_not_drawn(tmp_path):
    per_op = {4: 29e-9, 8: 200e-9, 16: 31e-9, 32: 300e-9, 64: 40e-9}  # zig-zag: no straight line
    rows = _sweep_rows("cpu", per_op)
    fit = ex5_sweep.fit_cost(rows, CACHES)
    assert not fit["drawn"] or fit["t0_s"] is None
    res = ex.Result(number=5, name="small_op_sweep", title="t", question="q", fields=ex5_sweep.FIELDS,
                    columns=ex5_sweep.COLUMNS, rows=rows, conclusion="c",
                    meta={"fits": {"cpu": fit}, "caches": {"cpu": CACHES}, "crossovers": {},
                          "break_even": {"cpu": ex5_sweep.break_even(rows)}})
    fig = res.plot(tmp_path / "zigzag.png")
    assert not any("model" in (line.get_label() or "") for line in fig.axes[0].get_lines())


def test_crossover_with_ties_and_its_report(tmp_path):
    sizes = [4, 40, 400, 4000]
    cpu = _sweep_rows("cpu", {s: 1e-7 + 8 * s * s / 20e9 for s in sizes})
    gpu = _sweep_rows("cuda:0", {s: 5e-6 + 8 * s * s / 2000e9 for s in sizes})
    c = ex5_sweep.crossover(cpu, gpu)
    assert c["status"] == "crossover" and c["between"] == [1600, 160000]
    exact = (5e-6 - 1e-7) / (8 / 20e9 - 8 / 2000e9)
    assert 0.3 * exact < c["elements"] < 3 * exact
    assert c["winners"] == {16: "cpu", 1600: "cpu", 160000: "gpu", 16000000: "gpu"}
    assert ex5_sweep.crossover(cpu, _sweep_rows("cuda:0", {s: 2 * r["seconds"] for s, r in zip(sizes, cpu)})
                               )["status"] == "cpu wins at every size"
    assert ex5_sweep.crossover(cpu, _sweep_rows("cuda:0", {s: r["seconds"] / 2 for s, r in zip(sizes, cpu)})
                               )["status"] == "gpu wins at every size"
    # noisy equal times at one size: a tie, named in the report
    tied = [dict(r) for r in gpu]
    tied[1] = {**tied[1], **timed(NOISY_A)}
    tied_cpu = [dict(r) for r in cpu]
    tied_cpu[1] = {**tied_cpu[1], **timed(NOISY_B)}
    ct = ex5_sweep.crossover(tied_cpu, tied)
    assert ct["winners"][1600] == "tie"
    assert "At 1,600 elements there is no measurable difference." in ex5_sweep._crossover_text("cuda:0", ct)
    rows = cpu + gpu
    devs = [gd.cpu(), gd.Device("cuda:0")]
    fits = {d: ex5_sweep.fit_cost([r for r in rows if r["device"] == d], CACHES) for d in ("cpu", "cuda:0")}
    evens = {d: ex5_sweep.break_even([r for r in rows if r["device"] == d]) for d in ("cpu", "cuda:0")}
    text = ex5_sweep.conclusion(rows, devs, fits, {"cuda:0": c}, evens)
    assert f"cuda:0 is faster than the CPU from about {c['size']:.0f}x{c['size']:.0f}" in text
    res = ex.Result(number=5, name="small_op_sweep", title="t", question="q", fields=ex5_sweep.FIELDS,
                    columns=ex5_sweep.COLUMNS, rows=rows, conclusion=text,
                    meta={"fits": fits, "crossovers": {"cuda:0": c}, "break_even": evens,
                          "caches": {"cpu": CACHES, "cuda:0": [{"level": "L2", "bytes": 50 * 2**20}]}})
    fig = res.plot(tmp_path / "cross.png")
    marks = [t.get_text() for t in fig.axes[0].texts]
    assert "cpu L2 512.0 KiB" in marks and "cuda:0 L2 50.0 MiB" in marks
    assert any(m.startswith("cuda:0 wins from ~") for m in marks)
    check_plot(res, tmp_path)


# ---------------------------------------------------------------------------------------------
# the roofline: points near a roof never plot above it
# ---------------------------------------------------------------------------------------------


def _peaks(gflops: float, memory: float, caches: list[tuple[str, int, float]]) -> dict:
    return {"gflops": gflops, "gflops_source": "best of 5 products 2048x2048", "gbps": memory,
            "gbps_source": "best x += y on 2 x 128 MiB",
            "caches": [{"level": lv, "bytes": b, "gbps": g, "source": f"add in {lv}"} for lv, b, g in caches]}


def _result(number: int, rows: list[dict], peaks: dict | None = None) -> ex.Result:
    module = {1: ex1_matmul, 3: ex3_norm, 5: ex5_sweep}[number]
    return ex.Result(number=number, name="x", title="t", question="q", fields=module.FIELDS,
                     columns=module.COLUMNS, rows=rows, conclusion="c", meta={"peaks": peaks or {}})


def test_no_point_plots_above_its_roof(tmp_path):
    peaks = {"cpu": _peaks(200.0, 20.0, [("L1d", 32 * 2**10, 150.0), ("L2", 512 * 2**10, 90.0),
                                         ("L3", 32 * 2**20, 5.0)])}
    dev = gd.cpu()
    ex1_rows = [ex1_matmul.row(dev, "peak sgemm", "peak: matmul 2048x2048", "best of 5", timed(spread(0.0859)),
                               2.0 * 2048**3, 12.0 * 2048**2, 12.0 * 2048**2),  # 200 GFLOP/s
                ex1_matmul.row(dev, "matmul", "matmul 10000x10000", "synchronized", timed(spread(9.5)),
                               2e12, 1.2e9, 1.2e9),  # 211 GFLOP/s: above the 200 measured at n=2048
                ex1_matmul.row(dev, "bandwidth", "sum of 2^26 floats", "synchronized", timed(spread(0.010)),
                               2.0**26, 4 * 2.0**26, 4 * 2.0**26)]  # a reduction: no roof of its kind
    ex3_row = {"variant": "c", "label": "batched", "device": "cpu", **timed(spread(0.0101)), "flops": 2e9,
               "bytes": 1.2e8, "footprint": 1.2e5, "workload": "matmul"}  # 198 GFLOP/s
    ex5_rows = _sweep_rows("cpu", {64: 0.2e-6, 256: 4e-6})  # 164 and 131 GB/s in L1d and L2
    results = [_result(1, ex1_rows, peaks), _result(3, [ex3_row]), _result(5, ex5_rows)]
    pts = roofline_chart.points(results)
    assert [p["label"] for p in pts] == ["matmul 10000x10000", "batched", "b += b 64x64", "b += b 256x256"]
    rf = roofline_chart.roofs(results)["cpu"]
    for p in pts:
        assert p["gflops"] <= roof_at_or_fail(rf, p), p
    # the compute roof is the best product rate of the run, wherever it was measured
    assert rf["gflops"] == pytest.approx(2e12 / min(spread(9.5)) / 1e9)
    assert rf["gflops_source"] == "exercise 1: matmul 10000x10000, best repeat"
    # one bandwidth roof per level and threading, each from the same add, none lifted to another
    names = [b["name"] for b in rf["bandwidths"]]
    assert names == ["b += b in L2 (512.0 KiB), one thread", "b += b in L1d (32.0 KiB), one thread"]
    l2, l1 = rf["bandwidths"]
    assert l1["gbps"] == pytest.approx(8 * 64 * 64 / ex5_rows[0]["min_s"] / 1e9) and "b += b 64x64" in l1["source"]
    assert l2["gbps"] == pytest.approx(8 * 256 * 256 / ex5_rows[1]["min_s"] / 1e9)
    fig = roofline_chart.roofline(results)
    labels = [line.get_label() for line in fig.axes[0].get_lines()]
    assert any(label.startswith("cpu b += b in L2 (512.0 KiB), one thread: ") for label in labels)
    fig.savefig(tmp_path / "roofline.png")


def roof_at_or_fail(roof: dict, p: dict) -> float:
    value = roofline_chart.roof_at(roof, p)
    assert math.isfinite(value) and value > 0
    return value * (1 + 1e-12)


def test_a_measured_run_has_no_point_above_its_roof():
    results = [ex.matmul_vs_small(n=256, devices=["cpu"], repeats=3, bandwidth_elements=2**16, peak_n=256),
               ex.norm_logging(n=50, size=16, device="cpu", repeats=3),
               ex.small_op_sweep(sizes=(4, 64, 256), devices=["cpu"], repeats=3)]
    rf = roofline_chart.roofs(results)
    pts = roofline_chart.points(results)
    assert {p["exercise"] for p in pts} == {1, 3, 5}
    assert all(p["gflops"] <= roof_at_or_fail(rf[p["device"]], p) for p in pts)


# ---------------------------------------------------------------------------------------------
# exercise 1: the timer lesson by arithmetic on the CPU, measured on a GPU (synthetic rows)
# ---------------------------------------------------------------------------------------------


def _ex1_rows(device: str, scale: float) -> list[dict]:
    dev = gd.Device(device)
    n = 4096
    rows = [ex1_matmul.row(dev, "setup", "first allocation on the device", "first call", timed([0.2 * scale]), 0, 0)]
    rows.append(ex1_matmul.row(dev, "matmul", f"matmul {n}x{n}", "first call", timed([2.0 * scale]),
                               2.0 * n**3, 12.0 * n**2, 12.0 * n**2))
    rows.append(ex1_matmul.row(dev, "matmul", f"matmul {n}x{n}", "synchronized", timed(spread(1.0 * scale)),
                               2.0 * n**3, 12.0 * n**2, 12.0 * n**2))
    if dev.type == "cuda":
        rows.append(ex1_matmul.row(dev, "matmul", f"matmul {n}x{n}", "unsynchronized (wrong)",
                                   timed(spread(1e-5), "host, unsynchronized"), 2.0 * n**3, 12.0 * n**2))
    for task in ("sum", "sum+item", "add1"):
        rows.append(ex1_matmul.row(dev, task, task, "first call", timed([1e-6 / scale]), 16, 68.0, 68.0))
        rows.append(ex1_matmul.row(dev, task, task, "synchronized", timed(spread(1e-7 / scale), calls=1000),
                                   16, 68.0, 68.0))
    rows.append(ex1_matmul.row(dev, "bandwidth", "sum of 1,000,000 floats", "synchronized", timed(spread(1e-3 * scale)),
                               1e6, 4e6, 4e6))
    return rows


CPU_PEAK = _peaks(200.0, 20.0, [])
GPU_PEAK = _peaks(50e3, 4e3, [])


def test_ex1_cpu_only_shows_the_timer_lesson_by_arithmetic():
    rows = _ex1_rows("cpu", 1.0)
    text = ex1_matmul.conclusion(rows, [gd.cpu()], 4096, 4, {"cpu": CPU_PEAK})
    best = 2.0 * 4096**3 / 0.98 / 1e9  # the warm product's fastest repeat: the run's compute roof
    assert ("A timer that does not wait for the GPU can read 16 ms for a 10000x10000 product. That would be "
            f"2e12 FLOP in 16 ms, 125 TFLOP/s: {125e3 / best:,.0f}x the {best:.3g} GFLOP/s cpu reached at best.") in text
    assert "cannot be the product: it timed the launch, not the work" in text
    assert "The first product took 2 s, more than the 5 warm ones (980 ms to 1.02 s): one-time costs" in text
    assert f"137 GFLOP/s; its fastest repeat, {best:.3g} GFLOP/s, is the best rate of any product in this run" in text
    assert "no measurable" not in text.split("A timer")[0]  # the tiny sum is far below the big one's GB/s


def test_ex1_first_call_needs_warm_repeats_to_be_judged():
    first = timed([9.74])
    assert "too few warm repeats to tell a one-time cost from the noise" in ex1_matmul._first_call_text(
        first, timed([8.41]))
    assert "as long as the 5 warm ones" in ex1_matmul._first_call_text(first, timed(spread(9.5, rel=0.05)))
    assert "less than the 5 warm ones" in ex1_matmul._first_call_text(timed([5.0]), timed(spread(9.5)))


@pytest.mark.skipif(EMULATED, reason="builds a real GPU's rows; with emulated GPUs, cuda:0 is not one")
def test_ex1_gpu_reports_read_their_numbers(tmp_path):
    rows = _ex1_rows("cpu", 1.0) + _ex1_rows("cuda:0", 0.01)
    peaks = {"cpu": CPU_PEAK, "cuda:0": GPU_PEAK}
    # a real GPU's rows (in a run on emulated GPUs, cuda:0 would be one of those)
    text = ex1_matmul.conclusion(rows, [gd.cpu(), gd.Device("cuda:0")], 4096, 4, peaks, emulated=set())
    assert "For the big product, cuda:0 is 100x faster than the CPU (ratio of medians, 10 ms vs 1 s; 95% interval" in text
    assert "for the 4x4 sum, the CPU is 100x faster than cuda:0 (ratio of medians, 100 ns vs 10 us; 95% interval" in text
    assert "seems to take 10 us, 1,000x less than its real 10 ms" in text
    best = 2.0 * 4096**3 / 0.0098 / 1e3 / 1e9  # TFLOP/s: the GPU product's fastest repeat
    implied = 2.0 * 4096**3 / 1e-5 / 1e12  # TFLOP/s of the unsynchronized reading
    assert f"an implied 13.7 PFLOP/s, {implied / best:.3g}x the {best:.3g} TFLOP/s that cuda:0 reached at best" in text
    assert f"{125 / best:.3g}x the {best:.3g} TFLOP/s cuda:0 reached at best" in text  # the 0.016 s reading
    res = ex.Result(number=1, name="matmul_vs_small", title="t", question="q", fields=ex1_matmul.FIELDS,
                    columns=ex1_matmul.COLUMNS, rows=rows, conclusion=text, meta={"peaks": peaks})
    fig = res.plot(tmp_path / "ex1.png")
    assert "crossed: unsynchronized" in fig.axes[0].get_title()
    check_plot(res, tmp_path)


def test_ex1_cpu_figure_title_names_only_the_bars_it_has(tmp_path):
    res = ex.Result(number=1, name="matmul_vs_small", title="t", question="q", fields=ex1_matmul.FIELDS,
                    columns=ex1_matmul.COLUMNS, rows=_ex1_rows("cpu", 1.0), conclusion="c",
                    meta={"peaks": {"cpu": CPU_PEAK}})
    title = res.plot(tmp_path / "cpu.png").axes[0].get_title()
    assert "hatched: first call" in title and "unsynchronized" not in title


# ---------------------------------------------------------------------------------------------
# exercise 4: overlap with its interval, and the two-GPU speedup
# ---------------------------------------------------------------------------------------------


def _overlap_rows(device: str, prod: list[float], host: list[float], both: list[float]) -> list[dict]:
    base = {"device": device, "n": 8192, "part": "overlap"}
    overlap, _ = ex4_two_devices.overlap_of(prod, host, both)
    return [{**base, "scenario": "two products", **timed(prod)},
            {**base, "scenario": "host work alone (NumPy)", **timed(host)},
            {**base, "scenario": "both", **timed(both), "overlap": min(max(overlap, 0), 1), "overlap_raw": overlap,
             "no_overlap_s": float(np.median(prod) + np.median(host)),
             "full_overlap_s": float(max(np.median(prod), np.median(host)))}]


def test_two_gpu_report_from_synthetic_rows(tmp_path):
    g0, g1 = gd.Device("cuda:0"), gd.Device("cuda:1")
    rows = _overlap_rows("cuda:0", spread(0.04), spread(0.04), spread(0.045))
    rows += _overlap_rows("cuda:1", spread(0.04), spread(0.04), spread(0.045))
    rows += [{"device": "cuda:0", "n": 8192, "part": "two GPUs", "scenario": "in sequence", **timed(spread(0.08))},
             {"device": "cuda:0+cuda:1", "n": 8192, "part": "two GPUs", "scenario": "concurrently",
              **timed(spread(0.042)), "speedup": 0.08 / 0.042, "efficiency": 0.04 / 0.042}]
    text = ex4_two_devices.conclusion(rows, [g0, g1], [g0, g1], None)
    assert "88% of the shorter one was hidden (95% interval" in text
    assert "a 1.90x speedup, 95% of the ideal 2x (95% interval" in text
    assert "Both GPUs worked at the same time" in text
    res = ex.Result(number=4, name="two_devices", title="t", question="q", fields=ex4_two_devices.FIELDS,
                    columns=ex4_two_devices.COLUMNS, rows=rows, conclusion=text)
    assert res.plot().axes[0].get_title().startswith("Exercise 4: two products with host work, and on two GPUs")
    one = ex.Result(number=4, name="two_devices", title="t", question="q", fields=ex4_two_devices.FIELDS,
                    columns=ex4_two_devices.COLUMNS, rows=rows[:3], conclusion=text)
    assert "two GPUs" not in one.plot().axes[0].get_title()  # no bars for them, no word of them
    check_plot(res, tmp_path)


def test_cpu_overlap_noise_is_not_overlap():
    rows = _overlap_rows("cpu", NOISY_A, NOISY_B, [0.35, 0.36, 0.9, 0.34, 0.35])
    text = ex4_two_devices.conclusion(rows, [gd.cpu()], [], "needs 2 GPUs, found 0")
    assert "No measurable overlap" in text
    rows = _overlap_rows("cpu", spread(0.1), spread(0.1), spread(0.3))
    assert "took measurably longer than one after the other" in ex4_two_devices.conclusion(
        rows, [gd.cpu()], [], "needs 2 GPUs, found 0")
