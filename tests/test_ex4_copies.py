"""Exercise 4's 'copies' part: products on a GPU with their results copied to the CPU, blocking
after all of them against non-blocking behind each. No test here decides by measured times: the
real-GPU wording is checked on injected rows."""

from __future__ import annotations

import numpy as np
import pytest

import gpudev as gd
from gpudev import exercises as ex
from gpudev.exercises import ex4_two_devices, referee
from gpudev.exercises.cli import run_cli

from conftest import EMULATED, NUM_GPUS
from test_conclusions import _overlap_rows, spread, timed
from test_exercises import check_plot, check_rows


def _copies_rows(device: str, compute: list[float], copy: list[float], both: list[float]) -> list[dict]:
    base = {"device": device, "n": 8192, "part": "copies", "products": 50, "copies_match": True,
            "flops": 2.0 * 50 * 8192**3}
    overlap, _ = ex4_two_devices.overlap_of(compute, copy, both)
    t_compute, t_copy = float(np.median(compute)), float(np.median(copy))
    return [{**base, "scenario": "50 products, then 50 blocking copies",
             **timed([c + k for c, k in zip(compute, copy)]), "compute_s": t_compute, "copy_s": t_copy,
             "compute_times": compute, "copy_times": copy},
            {**base, "scenario": "each product, then a non-blocking copy", **timed(both),
             "overlap": min(max(overlap, 0), 1), "overlap_raw": overlap,
             "no_overlap_s": t_compute + t_copy, "full_overlap_s": max(t_compute, t_copy)}]


def _result(rows: list[dict], text: str) -> ex.Result:
    return ex.Result(number=4, name="two_devices", title="t", question="q", fields=ex4_two_devices.FIELDS,
                     columns=ex4_two_devices.COLUMNS, rows=rows, conclusion=text)


def test_copies_overlap_measured_is_stated_from_the_numbers(tmp_path):
    g0 = gd.Device("cuda:0")
    rows = _overlap_rows("cuda:0", spread(0.04), spread(0.04), spread(0.045))
    rows += _copies_rows("cuda:0", spread(0.4), spread(0.2), spread(0.42))
    text = ex4_two_devices.conclusion(rows, [g0], [g0], "needs 2 GPUs, found 1")
    assert ("On cuda:0, 50 8192x8192 products took 400 ms and their blocking copies to the CPU 200 ms "
            "(600 ms in sequence)") in text
    assert "took 420 ms (every copy equals its product): 90% of the shorter one was hidden (95% interval" in text
    assert "The copy engine moved each result while the next product computed" in text
    assert "no overlap is claimed" not in text and "The CPU has no rows" not in text
    res = _result(rows, text)
    marks = [t.get_text() for t in res.plot().axes[0].texts]
    assert any("90% overlap" in m for m in marks)
    assert res.plot().axes[0].get_title().endswith("; products copied to the CPU (median, whiskers min-max)")
    check_plot(res, tmp_path)


def test_copies_without_measurable_overlap_say_so():
    g0 = gd.Device("cuda:0")
    rows = _overlap_rows("cuda:0", spread(0.04), spread(0.04), spread(0.045))
    rows += _copies_rows("cuda:0", spread(0.4, rel=0.2), spread(0.2, rel=0.2), spread(0.6, rel=0.2))
    text = ex4_two_devices.conclusion(rows, [g0], [g0], "needs 2 GPUs, found 1")
    assert "No measurable overlap: the copies waited for the products" in text
    assert "The copy engine moved" not in text
    rows[-1]["copies_match"] = False
    assert "(some non-blocking copy differs from the blocking copy of its product)" in \
        ex4_two_devices.conclusion(rows, [g0], [g0], "needs 2 GPUs, found 1")


def test_no_copies_rows_on_the_cpu_and_the_conclusion_says_why():
    res = ex.two_devices(n=64, devices=["cpu"], repeats=2)
    check_rows(res)
    assert not [r for r in res.rows if r["part"] == "copies"]
    assert ("The CPU has no rows of products copied to the host: its results already lie in host memory, "
            "so there is no copy to overlap.") in res.conclusion


@pytest.mark.skipif(not EMULATED or NUM_GPUS < 2, reason="runs on two emulated GPUs (make test-gpu-emu)")
def test_copies_rows_on_emulated_gpus_run_and_claim_no_overlap(tmp_path):
    res = ex.two_devices(n={"cpu": 64, "cuda": 128}, devices=["cpu", "cuda:0", "cuda:1"], repeats=2)
    check_rows(res)
    copies = [r for r in res.rows if r["part"] == "copies"]
    assert [(r["device"], r["scenario"]) for r in copies] == [
        (g, s) for g in ("cuda:0", "cuda:1")
        for s in ("50 products, then 50 blocking copies", "each product, then a non-blocking copy")]
    assert all(r["products"] == 50 and r["n"] == 64 and r["copies_match"] is True for r in copies)
    assert all(r["overlap"] is None and r["overlap_raw"] is None for r in copies)
    assert all(len(r["compute_times"]) == len(r["copy_times"]) == 2 for r in copies[::2])
    assert res.rows[-1]["part"] == res.rows[-2]["part"] == "two GPUs"  # the copies come before them
    for g in ("cuda:0", "cuda:1"):
        assert (f"On {g} (emulated), 50 64x64 products copied to the CPU after them (blocking) and behind each "
                f"(non-blocking) ran, and every copy equals its product;") in res.conclusion
    assert res.conclusion.count("no overlap is claimed") == 2
    assert ex4_two_devices.conclusion_of(res) == res.conclusion
    check_plot(res, tmp_path)


@pytest.mark.skipif(not EMULATED or NUM_GPUS < 2, reason="runs on two emulated GPUs (make test-gpu-emu)")
def test_referee_passes_a_quick_run_with_copies(tmp_path):
    assert run_cli(["--quick", "--only", "4", "--out", str(tmp_path)]) == 0
    assert referee.referee(str(tmp_path)) == []
