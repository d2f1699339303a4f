"""A run of every exercise on two emulated GPUs, as `GPUDEV_EMULATE_GPUS=2 make demo` does it:
no printed table, report line or plot text names an emulated GPU without saying so, the
referee passes the report, no two texts of a plot collide (matplotlib's text extents), and
exercise 5 reads no fixed cost or cache off an emulated GPU's curve, in its report or its plot.

The run is one subprocess with the emulation selected (it is read at import); its results
are checked and drawn again here, in a process without it, as the referee reads a report
(so every label must come from the report, not from the devices of the process that reads).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gpudev as gd
from gpudev.exercises import referee
from gpudev.exercises.notebook_check import unlabelled
from gpudev.exercises.result import Result

pytestmark = pytest.mark.skipif(not gd.build_info()["cuda"]["emulation_built"],
                                reason="built without emulated GPUs (GPUDEV_CUDA_EMU=0)")
plots = pytest.importorskip("gpudev.plots")

FAKE = {"cuda:0", "cuda:1"}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[Path, str, str]:
    """(folder, stdout, stderr) of `python -m gpudev exercises --quick` on two emulated GPUs."""
    out = tmp_path_factory.mktemp("emulated")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUDEV_EMULATE")}
    env.update(GPUDEV_EMULATE_GPUS="2", GPUDEV_EMULATE_GPU_MEMORY="8GiB")
    done = subprocess.run([sys.executable, "-m", "gpudev", "exercises", "--quick", "--out", str(out)], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out, done.stdout, done.stderr


def results(folder: Path) -> list[Result]:
    return [Result(**r) for r in json.loads((folder / "results.json").read_text())["results"]]


def figure_texts(fig) -> str:
    from matplotlib.text import Text

    return "\n".join(t.get_text() for t in fig.findobj(Text))


def test_every_table_and_report_line_names_an_emulated_gpu_as_one(run):
    folder, printed, progress = run
    report = (folder / "report.md").read_text()
    assert "cuda:0 (emulated)" in printed and "cuda:1 (emulated)" in report
    for where, text in (("stdout", printed), ("report.md", report), ("progress", progress)):
        assert unlabelled(text, FAKE) == [], where


def test_the_referee_passes_the_emulated_run(run):
    assert referee.referee(str(run[0])) == []


def test_no_plot_of_the_emulated_run_has_colliding_texts_or_an_unlabelled_gpu(run):
    every = results(run[0])
    figures = {f"exercise {res.number}": res.plot() for res in every}
    from gpudev.exercises.roofline_chart import roofline

    figures["roofline"] = roofline(every)
    for name, fig in figures.items():
        assert plots.label_overlaps(fig) == [], name
        assert unlabelled(figure_texts(fig), FAKE) == [], name
    legend = [t.get_text() for lg in figures["exercise 1"].legends for t in lg.get_texts()]
    assert "cuda:1 (emulated) first call" in legend


def test_exercise_5_reads_no_fixed_cost_or_cache_off_an_emulated_curve(run):
    (res,) = [r for r in results(run[0]) if r.number == 5]
    assert set(res.meta["break_even"]) == set(res.meta["fits"]) == set(res.meta["caches"]) == {"cpu"}
    assert res.meta["crossovers"] == {}
    fig = res.plot()
    texts = figure_texts(fig)
    # the CPU's marks stay; an emulated GPU gets its curve, named as emulated, and nothing more
    assert "cpu: an op takes twice its fixed cost" in texts or res.meta["break_even"]["cpu"]["status"] != "found"
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    for dev in ("cuda:0 (emulated)", "cuda:1 (emulated)"):
        assert dev in legend
        assert f"{dev}: an op takes twice" not in texts and f"{dev} L2" not in texts
        assert f"{dev} is a GPU of the CPU emulation" in res.conclusion
    lines = {line.get_label() for line in fig.axes[0].get_lines()}
    assert not any(label.startswith("cuda:") and "model" in label for label in lines)


def test_exercise_4_marks_no_overlap_on_an_emulated_gpu(run):
    (res,) = [r for r in results(run[0]) if r.number == 4]
    fig = res.plot()
    ax = fig.axes[0]
    marks = [c for c in ax.collections if c.get_label() in ("no overlap (sum of the two)",
                                                            "full overlap (the longer one)")]
    # one pair of marks, over the CPU's bar: an emulated GPU's queue cannot overlap
    assert sum(len(c.get_segments()) for c in marks) == 2
    # and one bar's note reads an overlap (or says none is measurable): the CPU's
    assert len([t for t in ax.texts if "overlap" in t.get_text()]) == 1
