"""Exercise 8 (training on k devices): the recipe's rows on the CPU and on two emulated GPUs,
k devices reaching one device's losses in float64, conclusions from injected samples (never
from measured times), emulated GPUs labelled and making no speed claim, the referee passing,
and bad arguments."""

from __future__ import annotations

import json

import numpy as np
import pytest

import gpudev as gd
from gpudev.exercises import catalog, ex8_k_devices
from gpudev.exercises.cli import run_cli
from gpudev.exercises.ex8_k_devices import (PHASES, allreduce, conclusion, conclusion_of, k_devices, make_data,
                                            split_batch, train_on)
from gpudev.exercises.measure import stats
from gpudev.exercises.referee import referee
from gpudev.exercises.result import Result

EMULATED = [d for d in (gd.gpu(i) for i in range(gd.num_gpus())) if d.emulated]
TINY = {"epochs": 1, "train": 48, "test": 16, "batch_size": 16}
needs_two = pytest.mark.skipif(len(EMULATED) < 2, reason="needs two emulated GPUs (GPUDEV_EMULATE_GPUS=2)")


def test_rows_on_the_cpu():
    res = k_devices(devices=["cpu"], **TINY)
    assert [r["phase"] for r in res.rows] == ["epoch", "step", *PHASES]
    epoch, step_row = res.rows[:2]
    assert {r["k"] for r in res.rows} == {1} and {r["device"] for r in res.rows} == {"cpu"}
    assert step_row["repeats"] == 3 and len(epoch["losses"]) == 3 and len(epoch["curve"]) == 2 and epoch["curve"][0][0] == 0.0
    assert 0.0 <= epoch["accuracy"] <= 1.0 and np.isfinite(epoch["loss"])
    # a step is the sum of its phases, round by round
    parts = np.array([r["times"] for r in res.rows[2:]])
    np.testing.assert_allclose(parts.sum(axis=0), step_row["times"], rtol=1e-12)
    assert step_row["speedup"] is None and res.checks == []
    assert res.skipped.startswith("training on several devices needs GPUs")
    assert res.conclusion == conclusion_of(Result(**res.to_dict()))
    assert "the split took" in res.conclusion and "the allreduce" in res.conclusion
    res.table()


def test_split_and_allreduce_on_one_device():
    x, y = gd.arange(10.0).reshape(5, 2), gd.arange(5)
    shards = split_batch(x, y, [gd.cpu(), gd.cpu()])
    assert [s[0].shape[0] for s in shards] == [2, 3]  # as even as can be
    assert np.concatenate([s[1].numpy() for s in shards]).tolist() == [0, 1, 2, 3, 4]
    data = [gd.ones(3), gd.full((3,), 2.0), gd.full((3,), 4.0)]
    allreduce(data)
    assert [a.tolist() for a in data] == [[7.0, 7.0, 7.0]] * 3


def test_two_replicas_on_the_cpu_reach_the_one_device_losses_in_float64():
    """The recipe's logic without GPUs: two replicas on the same device."""
    data = make_data(48, 16, "float64")
    one = train_on([gd.cpu()], data, 2, 16, "float64")
    two = train_on([gd.cpu(), gd.cpu()], data, 2, 16, "float64")
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=1e-5)
    assert one["losses"][-1] < one["losses"][0]  # it learns


@needs_two
def test_two_emulated_gpus_reach_the_one_device_losses_in_float64():
    res = k_devices(devices=EMULATED[:2], dtype="float64", **{**TINY, "epochs": 2}, emulated_epochs=2)
    assert sorted({r["k"] for r in res.rows}) == [1, 2] and res.meta["epochs"] == 2
    one, two = (next(r for r in res.rows if r["k"] == k and r["phase"] == "epoch") for k in (1, 2))
    np.testing.assert_allclose(two["losses"], one["losses"], rtol=1e-5)
    assert res.ok and len(res.checks) == 2 and res.checks[0]["tolerance"] == 1e-5
    assert two["device"] == f"{EMULATED[0]}+{EMULATED[1]}"


@needs_two
def test_emulated_gpus_are_labelled_and_claim_no_speed():
    res = k_devices(devices=EMULATED[:2], **TINY)
    assert all(r["speedup"] is None and r["efficiency"] is None for r in res.rows)
    for para in res.conclusion.split("\n\n")[:2]:
        assert "(emulated)" in para and "no speed conclusion" in para
        for word in ("faster", "slower", "speedup"):
            assert word not in para
    assert "reached the same losses as one device" in res.conclusion


def test_emulated_epochs_cap_only_emulated_runs():
    res = k_devices(devices=["cpu"], **{**TINY, "epochs": 2}, emulated_epochs=1)
    assert res.meta["epochs"] == 2


def _injected(k_times: dict[int, list[float]], device: dict[int, str]) -> list[dict]:
    rows = []
    for k, times in k_times.items():
        base = {"device": device[k], "k": k}
        rows += [{**base, "phase": "epoch", **stats([sum(times)], "host"), "accuracy": 0.5, "loss": 1.25,
                  "curve": [[sum(times), 0.5]], "losses": [1.25] * len(times)},
                 {**base, "phase": "step", **stats(times, "host")}]
        rows += [{**base, "phase": p, **stats([t / 4 for t in times], "host")} for p in PHASES]
    return rows


STEPS = [1.0, 1.05, 0.95, 1.1, 0.9, 1.02]


def test_speedup_conclusions_from_injected_samples():
    devices = {1: "cuda:0", 2: "cuda:0+cuda:1"}
    fast = conclusion(_injected({1: STEPS, 2: [t / 1.9 for t in STEPS]}, devices), set())
    assert "A step's speedup against one device is 1.9x, 95% of the ideal 2x" in fast
    same = conclusion(_injected({1: STEPS, 2: STEPS[::-1]}, devices), set())
    assert "No measurable speedup against one device" in same and "includes 1" in same
    few = conclusion(_injected({1: STEPS[:2], 2: STEPS[:2]}, devices), set())
    assert "Too few steps for an interval" in few
    fake = conclusion(_injected({1: STEPS, 2: [t / 1.9 for t in STEPS]}, devices), {"cuda:0", "cuda:1"})
    assert "speedup" not in fake and fake.count("(emulated)") >= 3


def test_same_loss_check_in_the_conclusion():
    rows = _injected({1: STEPS, 2: STEPS}, {1: "cpu", 2: "cpu+cpu"})
    bad = {"check": "the same losses on 2 devices as on one", "passed": False, "worst": 0.25,
           "tolerance": 1e-4, "steps": 6, "k": 2}
    text = conclusion(rows, set(), [bad])
    assert "2 devices did NOT reach the same losses" in text and "the test accuracy was 50% against 50%" in text
    assert "bookkeeping" in conclusion(rows[:6], set(), [])


def test_the_referee_passes(tmp_path, monkeypatch):
    small = {8: dict(TINY)}
    monkeypatch.setattr("gpudev.exercises.cli.settings", lambda quick: small)
    assert run_cli(["--quick", "--only", "8", "--out", str(tmp_path),
                    # the CPU named: no note on why GPUs are missing, whose prose is not this test's
                    "--device", "all" if gd.num_gpus() else "cpu"]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert [r["number"] for r in data["results"]] == [8]
    assert referee(str(tmp_path)) == []


def test_catalog_runs_it():
    assert catalog.EXERCISES[8] is k_devices and catalog.MODULES[8] is ex8_k_devices
    assert catalog.settings(quick=True)[8]["epochs"] == 1


@pytest.mark.parametrize("kwargs, words", [
    ({"epochs": 0}, "k_devices: epochs must be an int >= 1, got 0"),
    ({"train": -3}, "k_devices: train must be an int >= 1, got -3"),
    ({"batch_size": 2.0}, "k_devices: batch_size must be an int >= 1, got 2.0"),
    ({"dtype": "int32"}, "k_devices: dtype must be one of ['float32', 'float64'], got 'int32'"),
])
def test_bad_sizes(kwargs, words):
    with pytest.raises(ValueError) as info:
        k_devices(devices=["cpu"], **kwargs)
    assert words in str(info.value)


@needs_two
def test_one_gpu_says_why_it_trained_alone():
    res = k_devices(devices=EMULATED[:1], **TINY)
    assert {r["k"] for r in res.rows} == {1} and res.checks == []
    assert res.skipped == f"training on several devices needs a second GPU: trained on {EMULATED[0]} (emulated) alone"


@needs_two
def test_a_batch_smaller_than_the_devices():
    with pytest.raises(ValueError, match="k_devices: batch_size 1 cannot be split across 2 devices"):
        k_devices(devices=EMULATED[:2], **{**TINY, "batch_size": 1})


def test_bad_devices():
    with pytest.raises(gd.DeviceUnavailableError, match="k_devices: none of the devices"):
        k_devices(devices=["cuda:63"], **TINY)
