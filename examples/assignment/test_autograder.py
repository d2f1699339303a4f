"""The autograder of template.py, on top of gpudev's pytest plugin. The graded file and the
reference solution each run in a process of their own (conftest.py, sandbox.py, runner.py);
every call gets a problem of its own (new random weights and data), and every call is traced.

- correctness (4 points): the losses match a NumPy implementation of the same training, on
  every device present (``gd_device``), within gpudev's documented tolerance;
- structure (3 points): ``train`` synchronizes and copies to the host at most once, and its
  answer is right; this holds on the CPU too, where the same lines are the ones that would
  stall a GPU;
- speed (3 points): at most 1.2x slower than the reference solution, each call timed from
  this process around its request and its reply, in alternation on the same machine (on the
  GPU, where there is one), the reference given the same problems; every timed answer must be
  right. When the machine's noise leaves the comparison open the test is skipped and keeps
  its points (conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from runner import arrays
from sandbox import Graded, SubmissionError

import gpudev as gd
from gpudev.testing import assert_allclose, check_copies, check_syncs, compare
from gpudev.trace import TraceEvent

STEPS, LR = 20, 0.05


def numpy_losses(seed: int) -> list[float]:
    """The training of `seed`'s problem in NumPy (float64): forward, MSE, gradients by hand, SGD."""
    weights, X, Y = arrays(seed)
    w1, b1, w2, b2 = (w.astype(np.float64) for w in weights)
    losses = []
    for _ in range(STEPS):
        h = X @ w1.T + b1
        a = np.maximum(h, 0)
        out = a @ w2.T + b2
        diff = out - Y
        losses.append(float(np.mean(diff ** 2)))
        g_out = 2 * diff / diff.size
        g_w2, g_b2 = g_out.T @ a, g_out.sum(0)
        g_h = (g_out @ w2) * (h > 0)
        g_w1, g_b1 = g_h.T @ X, g_h.sum(0)
        w1, b1, w2, b2 = w1 - LR * g_w1, b1 - LR * g_b1, w2 - LR * g_w2, b2 - LR * g_b2
    return losses


def check_losses(losses: list[float], desired: list[float], what: str) -> None:
    try:
        assert_allclose(np.array(losses, dtype=np.float32), np.array(desired))
    except AssertionError as e:
        raise SubmissionError(f"wrong losses {what}: {e}") from None


@pytest.mark.points(4)
def test_correctness(student: Graded, seeds, gd_device):
    seed = next(seeds)
    check_losses(student.train(seed, str(gd_device), STEPS, LR)["losses"], numpy_losses(seed), f"(seed {seed})")


@pytest.mark.points(3)
def test_structure(student: Graded, seeds, gd_device):
    seed = next(seeds)
    reply = student.train(seed, str(gd_device), STEPS, LR, events=True)
    check_losses(reply["losses"], numpy_losses(seed), f"(seed {seed}): structure counts for a right answer only")
    events = [TraceEvent(*e) for e in reply["events"]]
    check_syncs(events, max=1)
    check_copies(events, max=1, direction="d2h")


@pytest.mark.points(3)
def test_speed(student: Graded, reference: Graded, seeds, request: pytest.FixtureRequest):
    # on a GPU when there is one; emulated GPUs run on the CPU at no GPU's speed, so the CPU then
    device = "cuda:0" if gd.num_gpus() and not gd.emulation.active() else "cpu"
    seed = next(seeds)  # one right answer first, untimed: a wrong one is not worth timing
    check_losses(student.train(seed, device, STEPS, LR)["losses"], reference.train(seed, device, STEPS, LR)["losses"],
                 f"(seed {seed}, the reference's answer)")
    problems: list[int] = []  # the i-th timed call of each side gets the i-th problem
    answers: dict[str, dict[int, list[float]]] = {"submission": {}, "reference": {}}

    def timed(graded: Graded, name: str):
        def call() -> None:
            i = len(answers[name])
            if i == len(problems):
                problems.append(next(seeds))
            answers[name][problems[i]] = graded.train(problems[i], device, STEPS, LR)["losses"]
        call.__name__ = name
        return call

    comparison = compare(timed(student, "submission"), timed(reference, "reference"), by=1 / 1.2,
                         max_duration=request.config.getoption("--speed-seconds"))
    for seed, losses in answers["submission"].items():
        desired = answers["reference"].get(seed) or reference.train(seed, device, STEPS, LR)["losses"]
        check_losses(losses, desired, f"in a timed call (seed {seed}, the reference's answer): no speed points")
    if comparison.outcome == "undecided":
        request.node.user_properties.append(("undecided", True))
        pytest.skip(str(comparison))
    if comparison.outcome == "fail":
        raise AssertionError(str(comparison))
    print(comparison)
