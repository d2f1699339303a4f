"""The referee's check of executed notebooks (gpudev.exercises.notebook_check) refuses what a
notebook's outputs must not say: a speed conclusion from emulated times, a claim without the
interval that backs it, a conclusion that contradicts the interval printed above it, and an
emulated GPU named without saying so. The notebooks themselves are held to it as the tests
execute them (tests/test_notebooks.py)."""

from __future__ import annotations

import json
import subprocess
import sys

from gpudev.exercises.notebook_check import check_notebook, check_texts, unlabelled

DEVICES = "devices here: [Device('cpu'), Device('cuda:0', emulated)] | sizes of the full measurement: {}"


def notebook(*outputs: str) -> dict:
    """An executed notebook whose code cells displayed `outputs` (printed, then as Markdown)."""
    cells = []
    for i, text in enumerate(outputs):
        out = ({"output_type": "stream", "name": "stdout", "text": text} if i % 2 == 0 else
               {"output_type": "display_data", "data": {"text/markdown": text, "text/plain": "<Markdown>"},
                "metadata": {}})
        cells.append({"cell_type": "code", "source": "", "metadata": {}, "outputs": [out], "execution_count": i})
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def checks(*outputs: str, emulated=None) -> list[str]:
    return [p.check for p in check_notebook(notebook(*outputs), emulated)]


def test_a_speed_conclusion_from_emulated_times_is_refused():
    # notebook 03 on an emulated cuda:0, as it once printed: a claim that names no device
    claim = ("(c) batched is 1.52x faster than (b) on the device (paired: the median of the rounds' ratios, "
             "255 ms vs 327 ms; 95% interval 1.41x to 1.6x)")
    assert checks(DEVICES, claim) == ["claim"]
    # the same claim about the device, named as emulated: no speed conclusion from its times
    assert checks(DEVICES, f"On cuda:0 (emulated), {claim}.") == ["emulated"]
    assert checks(DEVICES, "cuda:0 (emulated) reaches 12.3 GFLOP/s on the product") == ["emulated"]
    # a real GPU's claim, with its interval, passes
    assert checks("On cuda:0, " + claim, emulated=set()) == []


def test_a_claim_needs_an_interval_that_backs_it():
    assert checks("On cpu, (b) is 1.2x faster than (a).") == ["claim"]
    assert checks("On cpu, (b) is 1.2x faster than (a) (95% interval 0.9x to 1.5x).") == ["claim"]
    assert checks("On cpu, 36% hidden.") == ["claim"]
    # each claim is held to its own interval, the first after it
    two = ("For the big product, cuda:0 is 30x faster than the CPU (95% interval 28x to 33x); for the 4x4 sum, "
           "the CPU is 1.1x faster than cuda:0 (95% interval {}).")
    assert checks(two.format("1.05x to 1.2x"), emulated=set()) == []
    assert checks(two.format("0.9x to 1.3x"), emulated=set()) == ["claim"]
    assert checks("On cpu, 3% of the shorter one was hidden (95% interval -92% to 349%).") == ["claim"]
    # an estimate with an interval that includes nothing-at-all, and the verdict that says so
    assert checks("On cpu, 3% of the shorter one was hidden (95% interval -92% to 349%). No measurable "
                  "overlap: on the CPU a product runs before its call returns.") == []


def test_a_conclusion_that_contradicts_the_interval_printed_above_it_is_refused():
    # notebook 04 on the CPU, as it once printed: "36% hidden" under its own "no measurable overlap"
    conclusion = ("On cpu, two 384x384 products took 1.3 ms, the host work 1.29 ms, and both together 2.55 ms: "
                  "3% of the shorter one was hidden (95% interval -92% to 349%). No measurable overlap: on the "
                  "CPU a product runs before its call returns, so the host work can only start afterwards.")
    later = ("- **cpu**: products and host work together took 2.55 ms; no overlap would be 2.59 ms, full overlap "
             "1.3 ms: 36% hidden (95% interval 20% to 40%).")
    found = check_texts([conclusion, later])
    assert [p.check for p in found] == ["contradiction"] and "cpu" in found[0].what
    assert {p.check for p in check_texts([conclusion, later.replace(" (95% interval 20% to 40%)", "")])} == {
        "contradiction", "claim"}
    # another device's overlap is no contradiction of this one's interval
    assert check_texts([conclusion, later.replace("**cpu**", "**cuda:0**")]) == []


def test_an_emulated_gpu_named_without_saying_so_is_refused():
    assert checks(DEVICES, "cpu: 9.6 ms; cuda:0: 243 ms") == ["emulated"]
    assert checks("cuda:0: 243 ms", emulated={"cuda:0"}) == ["emulated"]
    # a fix to type in keeps the identifier, and a real GPU is named by it
    assert checks(DEVICES, "add: operands are on different devices, cuda:0 (emulated) and cpu; copy one of "
                           "them first, e.g. b.to('cuda:0')") == []
    assert checks("cuda:0: 243 ms", emulated=set()) == []
    assert unlabelled("Array([1.], device='cuda:0')", {"cuda:0"}) == ["device='cuda:0')"]


def test_a_table_header_is_no_claim():
    table = ("device             task        time/call  GFLOP/s\n"
             "-----------------  ----------  ---------  -------\n"
             "cuda:0 (emulated)  matmul 256  19 ms      -")
    assert checks(DEVICES, table) == []


def test_the_referee_command_reads_a_notebook(tmp_path):
    bad, good = tmp_path / "bad.ipynb", tmp_path / "good.ipynb"
    bad.write_text(json.dumps(notebook(DEVICES, "(c) batched is 1.52x faster than (b) (95% interval 1.4x to 1.6x)")))
    good.write_text(json.dumps(notebook(DEVICES, "cuda:0 (emulated) is an emulated GPU: its times are CPU times")))
    run = [sys.executable, "-m", "gpudev", "referee"]
    refused = subprocess.run(run + [str(bad)], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "referee FAILED: claim: cell 2: '1.52x faster' names no device" in refused.stderr
    passed = subprocess.run(run + [str(good)], capture_output=True, text=True, timeout=120)
    assert passed.returncode == 0 and "say only what they print" in passed.stdout
